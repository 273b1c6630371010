/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The YAML reader (see yaml-tree.h). One pass over libyaml's events with a stack of the open
 * mappings and sequences; the stack is as deep as the limit allows and no deeper, so nothing after
 * the limit is ever parsed. The key path of a problem is read off that stack. */

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "basic/macro.h"
#include "yaml/yaml-tree.h"

typedef struct Loader {
        const char *buf;
        size_t len;
        YamlLimits limits;
        YamlReportFn report;
        void *userdata;
        YNode **stack; /* the open mappings and sequences, outermost first */
        size_t depth;
        size_t n_nodes;
} Loader;

const char *ytree_show(const char *s, size_t len, char buf[static YTREE_SHOW_BUF]) {
        size_t cut = len, o = 0;

        if (cut > YTREE_SHOW_MAX) {
                cut = YTREE_SHOW_MAX;
                while (cut > 0 && ((unsigned char) s[cut] & 0xC0) == 0x80)
                        cut--; /* do not split a UTF-8 sequence */
        }
        for (size_t i = 0; i < cut; i++) {
                unsigned char ch = (unsigned char) s[i];
                if (ch < 0x20 || ch == 0x7f || ch == '"' || ch == '\\') {
                        if (ch == '\n')
                                o += (size_t) sprintf(buf + o, "\\n");
                        else if (ch == '\t')
                                o += (size_t) sprintf(buf + o, "\\t");
                        else if (ch == '"' || ch == '\\')
                                o += (size_t) sprintf(buf + o, "\\%c", ch);
                        else
                                o += (size_t) sprintf(buf + o, "\\x%02x", ch);
                } else
                        buf[o++] = (char) ch;
        }
        if (cut < len)
                o += (size_t) sprintf(buf + o, "...");
        buf[o] = '\0';
        return buf;
}

void ytree_keypath(const char *const *parts, size_t n, char *buf, size_t size) {
        char part[YTREE_SHOW_BUF];
        size_t o = 0;

        if (size == 0)
                return;
        buf[0] = '\0';
        for (size_t i = 0; i < n && o < size; i++)
                o += (size_t) snprintf(buf + o, size - o, "%s%s", i > 0 ? "." : "",
                                       ytree_show(parts[i], strlen(parts[i]), part));
}

const char *ytree_kind(const YNode *n) {
        switch (n->type) {
        case YNODE_MAP:
                return "a mapping";
        case YNODE_SEQ:
                return "a sequence";
        default:
                return "a single value";
        }
}

bool ytree_is_null(const YNode *n) {
        return n->type == YNODE_SCALAR && n->plain &&
               (n->len == 0 || strcmp(n->value, "~") == 0 || strcmp(n->value, "null") == 0 ||
                strcmp(n->value, "Null") == 0 || strcmp(n->value, "NULL") == 0);
}

const char *ytree_text(const YNode *n) {
        if (n->type != YNODE_SCALAR || n->broken || strlen(n->value) != n->len)
                return NULL;
        return n->value;
}

/* --- reporting --- */

/* The keys that lead to the innermost open node (the key waiting for its value included), as
 * parts for ytree_keypath(). Returns how many. */
static size_t path_from_stack(const Loader *l, const char **parts) {
        size_t n = 0;

        for (size_t i = 0; i < l->depth; i++) {
                const YNode *m = l->stack[i], *k;

                if (m->type != YNODE_MAP)
                        continue;
                if (i + 1 < l->depth) {
                        /* the open child is the last item: a value when n is even */
                        if (m->n < 2 || m->n % 2 != 0)
                                break;
                        k = m->items[m->n - 2];
                } else {
                        /* innermost: a key waiting for its value */
                        if (m->n % 2 == 0)
                                break;
                        k = m->items[m->n - 1];
                }
                parts[n++] = k->type == YNODE_SCALAR && !k->broken ? k->value : "?";
        }
        return n;
}

/* Report a problem at (line, column) under the key path of the open nodes (none when at_top).
 * Returns -ENOMEM when there is no memory to say it, else 0. */
_printf_(6, 7) static int problem(Loader *l, YamlProblem kind, bool at_top, unsigned line, unsigned column,
                                  const char *fmt, ...) {
        _cleanup_free_ const char **parts = NULL;
        _cleanup_free_ char *msg = NULL, *keypath = NULL;
        size_t n = 0, size = 1;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0) {
                msg = NULL;
                return -ENOMEM;
        }
        if (!at_top && l->depth > 0) {
                parts = calloc(l->depth, sizeof(char *));
                if (!parts)
                        return -ENOMEM;
                n = path_from_stack(l, parts);
                size = n * (YTREE_SHOW_BUF + 1) + 1;
        }
        keypath = malloc(size);
        if (!keypath)
                return -ENOMEM;
        ytree_keypath(parts, n, keypath, size);
        l->report(l->userdata, kind, line, column, keypath, msg);
        return 0;
}

/* --- positions in the buffer --- */

/* Length of the line break at p (CR LF, CR, LF, NEL, LS, PS, as libyaml counts them), or 0. */
static size_t break_len(const unsigned char *p, size_t left) {
        if (left >= 2 && p[0] == '\r' && p[1] == '\n')
                return 2;
        if (p[0] == '\r' || p[0] == '\n')
                return 1;
        if (left >= 2 && p[0] == 0xC2 && p[1] == 0x85)
                return 2;
        if (left >= 3 && p[0] == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9))
                return 3;
        return 0;
}

static size_t bom_len(const char *buf, size_t len) {
        return len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
}

/* The byte offset of libyaml's 0-based (line, column in characters), or len. */
static size_t offset_of(const char *buf, size_t len, size_t line, size_t column) {
        const unsigned char *p = (const unsigned char *) buf;
        size_t i = bom_len(buf, len), b;

        while (line > 0 && i < len) {
                b = break_len(p + i, len - i);
                i += b ?: 1;
                if (b)
                        line--;
        }
        while (column > 0 && i < len && !break_len(p + i, len - i)) {
                i++;
                while (i < len && (p[i] & 0xC0) == 0x80)
                        i++;
                column--;
        }
        return i;
}

/* 1-based line and column of a byte offset. */
static void position_of(const char *buf, size_t len, size_t offset, unsigned *ret_line, unsigned *ret_column) {
        const unsigned char *p = (const unsigned char *) buf;
        unsigned line = 1, column = 1;
        size_t b;

        for (size_t i = bom_len(buf, len); i < offset && i < len; i += b ?: 1) {
                b = break_len(p + i, len - i);
                if (b) {
                        line++;
                        column = 1;
                } else if ((p[i] & 0xC0) != 0x80)
                        column++;
        }
        *ret_line = line;
        *ret_column = column;
}

/* libyaml's error in a user's words. Returns -EINVAL, or -ENOMEM. */
static int syntax_error(Loader *l, const yaml_parser_t *p) {
        unsigned line, column;
        size_t off;
        int r;

        if (p->error == YAML_MEMORY_ERROR)
                return -ENOMEM;
        if (p->error == YAML_READER_ERROR) {
                position_of(l->buf, l->len, p->problem_offset, &line, &column);
                if (p->problem_value >= 0)
                        r = problem(l, YAML_PROBLEM_SYNTAX, false, line, column,
                                    "%s (byte 0x%02x): the file must be UTF-8 text", p->problem ?: "unreadable",
                                    (unsigned) p->problem_value);
                else
                        r = problem(l, YAML_PROBLEM_SYNTAX, false, line, column, "%s: the file must be UTF-8 text",
                                    p->problem ?: "unreadable");
                return r < 0 ? r : -EINVAL;
        }

        line = (unsigned) p->problem_mark.line + 1;
        column = (unsigned) p->problem_mark.column + 1;
        off = offset_of(l->buf, l->len, p->problem_mark.line, p->problem_mark.column);
        if (p->context && strstr(p->context, "quoted scalar") && p->problem && strstr(p->problem, "end of stream"))
                r = problem(l, YAML_PROBLEM_SYNTAX, false, (unsigned) p->context_mark.line + 1,
                            (unsigned) p->context_mark.column + 1,
                            "unterminated quoted string: the file ends before its closing quote");
        else if ((off < l->len && l->buf[off] == '\t') || (p->problem && strstr(p->problem, "tab")))
                r = problem(l, YAML_PROBLEM_SYNTAX, false, line, column, "a tab character: YAML indents with spaces only");
        else if (p->context)
                r = problem(l, YAML_PROBLEM_SYNTAX, false, line, column, "%s, %s at %u:%u",
                            p->problem ?: "syntax error", p->context, (unsigned) p->context_mark.line + 1,
                            (unsigned) p->context_mark.column + 1);
        else
                r = problem(l, YAML_PROBLEM_SYNTAX, false, line, column, "%s", p->problem ?: "syntax error");
        return r < 0 ? r : -EINVAL;
}

/* Report anchors and tags on a node. */
static int check_properties(Loader *l, const yaml_event_t *e, unsigned line, unsigned column) {
        const yaml_char_t *anchor = NULL, *tag = NULL;
        char buf[YTREE_SHOW_BUF];
        int r = 0;

        if (e->type == YAML_SCALAR_EVENT) {
                anchor = e->data.scalar.anchor;
                tag = e->data.scalar.tag;
        } else if (e->type == YAML_MAPPING_START_EVENT) {
                anchor = e->data.mapping_start.anchor;
                tag = e->data.mapping_start.tag;
        } else if (e->type == YAML_SEQUENCE_START_EVENT) {
                anchor = e->data.sequence_start.anchor;
                tag = e->data.sequence_start.tag;
        }
        if (anchor)
                r = problem(l, YAML_PROBLEM_REFUSED, false, line, column,
                            "anchors (&%s) are not supported: write each value out in full",
                            ytree_show((const char *) anchor, strlen((const char *) anchor), buf));
        if (tag && r == 0)
                r = problem(l, YAML_PROBLEM_REFUSED, false, line, column,
                            "tags (%s) are not supported: quote a value to make it a string",
                            ytree_show((const char *) tag, strlen((const char *) tag), buf));
        return r;
}

/* --- the tree --- */

void ytree_free(YNode *n) {
        if (!n)
                return;
        for (size_t i = 0; i < n->n; i++)
                ytree_free(n->items[i]);
        free(n->items);
        free(n);
}

static YNode *node_new(YNodeType type, const yaml_mark_t *mark, const char *value, size_t len) {
        YNode *n;

        if (len > SIZE_MAX - sizeof(YNode) - 1)
                return NULL;
        n = calloc(1, sizeof(YNode) + len + 1);
        if (!n)
                return NULL;
        n->type = type;
        n->line = (unsigned) MIN(mark->line + 1, (size_t) UINT32_MAX);
        n->column = (unsigned) MIN(mark->column + 1, (size_t) UINT32_MAX);
        if (value)
                memcpy(n->value, value, len);
        n->len = len;
        return n;
}

static int node_append(YNode *parent, YNode *child) {
        if (parent->n == parent->allocated) {
                size_t a = parent->allocated ? parent->allocated * 2 : 8;
                YNode **items;

                if (a > SIZE_MAX / sizeof(YNode *))
                        return -ENOMEM;
                items = realloc(parent->items, a * sizeof(YNode *));
                if (!items)
                        return -ENOMEM;
                parent->items = items;
                parent->allocated = a;
        }
        parent->items[parent->n++] = child;
        return 0;
}

/* The node event e starts, or NULL (0 in *ret: the event starts none; -EINVAL after reporting a
 * limit; -ENOMEM). */
static YNode *node_of(Loader *l, const yaml_event_t *e, unsigned line, unsigned column, int *ret) {
        YNode *n = NULL;
        char buf[YTREE_SHOW_BUF];
        int r = 0;

        *ret = 0;
        switch (e->type) {
        case YAML_ALIAS_EVENT: {
                const char *a = (const char *) e->data.alias.anchor;

                r = problem(l, YAML_PROBLEM_REFUSED, false, line, column,
                            "aliases (*%s) are not supported: write the value out in full", ytree_show(a, strlen(a), buf));
                n = r < 0 ? NULL : node_new(YNODE_SCALAR, &e->start_mark, NULL, 0);
                if (n)
                        n->broken = true;
                break;
        }
        case YAML_SCALAR_EVENT:
                n = node_new(YNODE_SCALAR, &e->start_mark, (const char *) e->data.scalar.value, e->data.scalar.length);
                if (n)
                        n->plain = e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
                break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
                if (l->depth >= l->limits.nesting_max) {
                        r = problem(l, YAML_PROBLEM_LIMIT, false, line, column, "nested deeper than %zu levels",
                                    l->limits.nesting_max);
                        *ret = r < 0 ? r : -EINVAL;
                        return NULL;
                }
                n = node_new(e->type == YAML_MAPPING_START_EVENT ? YNODE_MAP : YNODE_SEQ, &e->start_mark, NULL, 0);
                break;
        default:
                return NULL;
        }
        if (!n) {
                *ret = -ENOMEM;
                return NULL;
        }
        if (l->limits.nodes_max > 0 && ++l->n_nodes > l->limits.nodes_max) {
                r = problem(l, YAML_PROBLEM_LIMIT, false, line, column, "holds more than %zu values",
                            l->limits.nodes_max);
                ytree_free(n);
                *ret = r < 0 ? r : -EINVAL;
                return NULL;
        }
        return n;
}

/* One event. Returns 1 at the end of the stream, 0 to go on, or a negative errno. */
static int load_event(Loader *l, const yaml_event_t *e, unsigned *n_docs, YNode **root) {
        unsigned line = (unsigned) e->start_mark.line + 1, column = (unsigned) e->start_mark.column + 1;
        YNode *n;
        int r;

        switch (e->type) {
        case YAML_STREAM_START_EVENT:
                if (e->data.stream_start.encoding == YAML_UTF8_ENCODING)
                        return 0;
                r = problem(l, YAML_PROBLEM_FORMAT, true, 0, 0, "the file must be UTF-8 text, not UTF-16");
                return r < 0 ? r : -EINVAL;
        case YAML_DOCUMENT_START_EVENT:
                if ((*n_docs)++ == 0)
                        return 0;
                r = problem(l, YAML_PROBLEM_FORMAT, true, line, column,
                            "a second YAML document: only one is read; remove this \"---\" and merge what follows "
                            "into the first");
                return r < 0 ? r : -EINVAL;
        case YAML_STREAM_END_EVENT:
                return 1;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
                if (l->depth > 0)
                        l->depth--;
                return 0;
        default:
                break;
        }

        n = node_of(l, e, line, column, &r);
        if (!n)
                return r;
        r = check_properties(l, e, line, column);
        if (r < 0) {
                ytree_free(n);
                return r;
        }
        if (l->depth == 0) {
                ytree_free(*root); /* libyaml gives one root per document */
                *root = n;
        } else if (node_append(l->stack[l->depth - 1], n) < 0) {
                ytree_free(n);
                return -ENOMEM;
        }
        if (n->type != YNODE_SCALAR)
                l->stack[l->depth++] = n;
        return 0;
}

int ytree_load(const char *buf, size_t len, const YamlLimits *limits, YamlReportFn report, void *userdata,
               YNode **ret_root) {
        Loader l = {
                .buf = buf ?: "",
                .len = buf ? len : 0,
                .limits = *limits,
                .report = report,
                .userdata = userdata,
        };
        YNode *root = NULL;
        yaml_parser_t p;
        unsigned n_docs = 0;
        int r = 0;

        if (l.limits.nesting_max == 0)
                l.limits.nesting_max = 1;
        l.stack = calloc(l.limits.nesting_max, sizeof(YNode *));
        if (!l.stack)
                return -ENOMEM;
        if (!yaml_parser_initialize(&p)) {
                free(l.stack);
                return -ENOMEM;
        }
        yaml_parser_set_input_string(&p, (const unsigned char *) l.buf, l.len);
        while (r == 0) {
                yaml_event_t e;

                if (!yaml_parser_parse(&p, &e)) {
                        r = syntax_error(&l, &p);
                        break;
                }
                r = load_event(&l, &e, &n_docs, &root);
                yaml_event_delete(&e);
        }
        yaml_parser_delete(&p);
        free(l.stack);
        if (r < 0) {
                ytree_free(root);
                return r;
        }
        *ret_root = root;
        return 0;
}
