/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The configuration parser; see conf.h for the idea. Two passes:
 *
 * 1. load(): libyaml events -> a Node tree. Nesting is bounded (CONF_NESTING_MAX) as the tree is
 *    built, so the later walk and node_free() recurse at most that deep, and libyaml, which scans
 *    lazily, never gets to see the rest of a pathological "[[[[..." input. Anchors, aliases, tags
 *    and a second document are refused here; syntax errors stop the load (libyaml cannot go on).
 * 2. walk_*(): the schema. Each mapping's keys are checked for duplicates by sorting them once
 *    (O(n log n), so a 10 MB mapping costs no more than its size), then each key is handled or
 *    reported as unknown. The walk reports and goes on, so every error is collected. */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "core/admission.h"
#include "core/bandwidth.h"
#include "conf.h"
#include "core/duration.h"
#include "basic/macro.h"
#include "basic/parse.h"
#include "basic/strv.h"

#define STR_(x) #x
#define STR(x) STR_(x)

#define SHOW_MAX 64      /* bytes of a user's text quoted in a message */
#define PATH_PARTS_MAX (CONF_NESTING_MAX + 2)
#define USER_NAME_MAX 256
#define CGROUP_ROOT_MAX 3840 /* leaves room for a GROUP_PATH_MAX relative path within PATH_MAX */

static const char *const polkit_mode_table[_POLKIT_MODE_MAX] = {
        [POLKIT_AUTO] = "auto",
        [POLKIT_REQUIRED] = "required",
        [POLKIT_OFF] = "off",
};

const char *polkit_mode_to_string(PolkitMode m) {
        if (m < 0 || m >= _POLKIT_MODE_MAX)
                return NULL;
        return polkit_mode_table[m];
}

PolkitMode polkit_mode_from_string(const char *s) {
        for (int i = 0; s && i < _POLKIT_MODE_MAX; i++)
                if (strcmp(s, polkit_mode_table[i]) == 0)
                        return (PolkitMode) i;
        return _POLKIT_MODE_INVALID;
}

/* --- errors --- */

void conf_errors_done(ConfErrors *e) {
        if (!e)
                return;
        for (size_t i = 0; i < e->n; i++)
                free(e->lines[i]);
        free(e->lines);
        *e = (ConfErrors) {};
}

typedef enum NodeType {
        NODE_SCALAR,
        NODE_MAP,
        NODE_SEQ,
} NodeType;

typedef struct Node Node;
struct Node {
        NodeType type;
        bool plain;            /* a scalar written without quotes: may be a null or a boolean */
        bool broken;           /* already reported (an alias): the walk skips it silently */
        bool skip;             /* a key already reported (duplicate, not a scalar): its pair is skipped */
        unsigned line, column; /* 1-based */
        Node **items;          /* mapping: key, value, key, value...; sequence: the items */
        size_t n, allocated;
        size_t len;            /* scalar */
        char value[];          /* scalar, NUL-terminated (may hold NULs of its own: checked on use) */
};

/* State of one parse or build. */
typedef struct Ctx {
        const char *filename;
        const char *buf;
        size_t len;
        ConfErrors *errors;      /* may be NULL: count only */
        size_t n_errors;         /* errors of this run, up to CONF_ERRORS_MAX (+1 for "too many") */
        bool oom;
        const char *path[PATH_PARTS_MAX]; /* the key path of what is being looked at */
        size_t n_path;
        size_t n_groups;
        bool groups_full;
        size_t n_users;          /* user names in all groups' effective lists */
        bool users_full;
} Ctx;

/* Copy at most SHOW_MAX bytes of s for a message, escaping control characters and marking a cut
 * with "...". buf must hold SHOW_MAX * 4 + 4 bytes. */
#define SHOW_BUF (SHOW_MAX * 4 + 4)
static const char *show(const char *s, size_t len, char buf[static SHOW_BUF]) {
        size_t cut = len, o = 0;

        if (cut > SHOW_MAX) {
                cut = SHOW_MAX;
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

static void errors_append(Ctx *c, char *line) {
        char **l;

        if (!line) {
                c->oom = true;
                return;
        }
        if (!c->errors) {
                free(line);
                return;
        }
        l = realloc(c->errors->lines, (c->errors->n + 1) * sizeof(char *));
        if (!l) {
                free(line);
                c->oom = true;
                return;
        }
        c->errors->lines = l;
        l[c->errors->n++] = line;
}

/* Add "FILE:LINE:COLUMN: KEYPATH: message"; line 0 leaves the position out, an empty keypath the
 * key path. */
_printf_(5, 0) static void error_va(Ctx *c, unsigned line, unsigned column, const char *keypath, const char *fmt,
                                    va_list ap) {
        _cleanup_free_ char *msg = NULL;
        char *s = NULL, pos[32] = "";
        const char *fn = c->filename ?: "<input>";

        if (c->n_errors > CONF_ERRORS_MAX)
                return;
        if (c->n_errors++ == CONF_ERRORS_MAX) {
                if (asprintf(&s, "%s: too many errors, stopping after the first %d", fn, CONF_ERRORS_MAX) < 0)
                        s = NULL;
                errors_append(c, s);
                return;
        }
        if (!c->errors)
                return;
        if (vasprintf(&msg, fmt, ap) < 0) {
                c->oom = true;
                return;
        }
        if (line > 0)
                snprintf(pos, sizeof pos, ":%u:%u", line, column);
        if (asprintf(&s, "%s%s: %s%s%s", fn, pos, keypath ?: "", keypath && *keypath ? ": " : "", msg) < 0)
                s = NULL;
        errors_append(c, s);
}

_printf_(5, 6) static void error_path(Ctx *c, unsigned line, unsigned column, const char *keypath, const char *fmt,
                                      ...) {
        va_list ap;

        va_start(ap, fmt);
        error_va(c, line, column, keypath, fmt, ap);
        va_end(ap);
}

/* An error at (line, column) under the current key path. */
_printf_(4, 5) static void error_at(Ctx *c, unsigned line, unsigned column, const char *fmt, ...) {
        char keypath[PATH_PARTS_MAX * (SHOW_BUF + 1)], part[SHOW_BUF];
        size_t o = 0;
        va_list ap;

        if (c->n_errors > CONF_ERRORS_MAX)
                return;
        keypath[0] = '\0';
        for (size_t i = 0; i < MIN(c->n_path, (size_t) PATH_PARTS_MAX) && o < sizeof keypath; i++)
                o += (size_t) snprintf(keypath + o, sizeof keypath - o, "%s%s", i > 0 ? "." : "",
                                       show(c->path[i], strlen(c->path[i]), part));
        va_start(ap, fmt);
        error_va(c, line, column, keypath, fmt, ap);
        va_end(ap);
}

#define error_node(c, node, ...) error_at(c, (node)->line, (node)->column, __VA_ARGS__)

static void path_push(Ctx *c, const char *part) {
        if (c->n_path < PATH_PARTS_MAX)
                c->path[c->n_path] = part;
        c->n_path++;
}

static void path_pop(Ctx *c) {
        c->n_path--;
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

/* --- pass 1: events -> nodes --- */

static void node_free(Node *n) {
        if (!n)
                return;
        for (size_t i = 0; i < n->n; i++)
                node_free(n->items[i]);
        free(n->items);
        free(n);
}

static Node *node_new(NodeType type, const yaml_mark_t *mark, const char *value, size_t len) {
        Node *n;

        if (len > SIZE_MAX - sizeof(Node) - 1)
                return NULL;
        n = calloc(1, sizeof(Node) + len + 1);
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

static int node_append(Node *parent, Node *child) {
        if (parent->n == parent->allocated) {
                size_t a = parent->allocated ? parent->allocated * 2 : 8;
                Node **items;

                if (a > SIZE_MAX / sizeof(Node *))
                        return -ENOMEM;
                items = realloc(parent->items, a * sizeof(Node *));
                if (!items)
                        return -ENOMEM;
                parent->items = items;
                parent->allocated = a;
        }
        parent->items[parent->n++] = child;
        return 0;
}

/* Refuse anchors and tags on a node. */
static void check_properties(Ctx *c, const yaml_event_t *e, unsigned line, unsigned column) {
        const yaml_char_t *anchor = NULL, *tag = NULL;
        char buf[SHOW_BUF];

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
                error_at(c, line, column, "anchors (&%s) are not supported: write each value out in full",
                         show((const char *) anchor, strlen((const char *) anchor), buf));
        if (tag)
                error_at(c, line, column, "tags (%s) are not supported: quote a value to make it a string",
                         show((const char *) tag, strlen((const char *) tag), buf));
}

/* Point c->path at the keys that lead to the innermost open node, for syntax errors. */
static void path_from_stack(Ctx *c, Node *const *stack, size_t depth) {
        c->n_path = 0;
        for (size_t i = 0; i < depth; i++) {
                const Node *m = stack[i], *k;

                if (m->type != NODE_MAP)
                        continue;
                if (i + 1 < depth) {
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
                path_push(c, k->type == NODE_SCALAR && !k->broken ? k->value : "?");
        }
}

static int report_yaml_error(Ctx *c, const yaml_parser_t *p, Node *const *stack, size_t depth) {
        size_t off;
        unsigned line, column;

        if (p->error == YAML_MEMORY_ERROR)
                return -ENOMEM;
        path_from_stack(c, stack, depth);
        if (p->error == YAML_READER_ERROR) {
                position_of(c->buf, c->len, p->problem_offset, &line, &column);
                if (p->problem_value >= 0)
                        error_at(c, line, column, "%s (byte 0x%02x): the file must be UTF-8 text",
                                 p->problem ?: "unreadable", (unsigned) p->problem_value);
                else
                        error_at(c, line, column, "%s: the file must be UTF-8 text", p->problem ?: "unreadable");
                c->n_path = 0;
                return -EINVAL;
        }

        line = (unsigned) p->problem_mark.line + 1;
        column = (unsigned) p->problem_mark.column + 1;
        off = offset_of(c->buf, c->len, p->problem_mark.line, p->problem_mark.column);
        if (p->context && strstr(p->context, "quoted scalar") && p->problem && strstr(p->problem, "end of stream"))
                error_at(c, (unsigned) p->context_mark.line + 1, (unsigned) p->context_mark.column + 1,
                         "unterminated quoted string: the file ends before its closing quote");
        else if ((off < c->len && c->buf[off] == '\t') || (p->problem && strstr(p->problem, "tab")))
                error_at(c, line, column, "a tab character: YAML indents with spaces only");
        else if (p->context)
                error_at(c, line, column, "%s, %s at %u:%u", p->problem ?: "syntax error", p->context,
                         (unsigned) p->context_mark.line + 1, (unsigned) p->context_mark.column + 1);
        else
                error_at(c, line, column, "%s", p->problem ?: "syntax error");
        c->n_path = 0;
        return -EINVAL;
}

/* Load the one document of c->buf. Returns 0 with the root node (NULL for an empty stream), -EINVAL
 * after reporting why the YAML cannot be read at all, or -ENOMEM. Anchors, aliases and tags are
 * reported but do not stop the load (*ret_root is still set, the caller checks c->n_errors). */
static int load(Ctx *c, Node **ret_root) {
        Node *stack[CONF_NESTING_MAX], *root = NULL;
        yaml_parser_t p;
        size_t depth = 0;
        unsigned n_docs = 0;
        int r = 0;

        if (!yaml_parser_initialize(&p))
                return -ENOMEM;
        yaml_parser_set_input_string(&p, (const unsigned char *) (c->buf ?: ""), c->len);

        for (bool done = false; !done && r == 0;) {
                yaml_event_t e;
                Node *n = NULL;
                unsigned line, column;

                if (!yaml_parser_parse(&p, &e)) {
                        r = report_yaml_error(c, &p, stack, depth);
                        break;
                }
                line = (unsigned) e.start_mark.line + 1;
                column = (unsigned) e.start_mark.column + 1;

                switch (e.type) {
                case YAML_STREAM_START_EVENT:
                        if (e.data.stream_start.encoding != YAML_UTF8_ENCODING) {
                                error_at(c, 0, 0, "the file must be UTF-8 text, not UTF-16");
                                r = -EINVAL;
                        }
                        break;
                case YAML_DOCUMENT_START_EVENT:
                        if (n_docs++ > 0) {
                                error_at(c, line, column,
                                         "a second YAML document: edfd reads one, remove this \"---\" "
                                         "and merge what follows into the first");
                                r = -EINVAL;
                        }
                        break;
                case YAML_STREAM_END_EVENT:
                        done = true;
                        break;
                case YAML_ALIAS_EVENT: {
                        char buf[SHOW_BUF];
                        const char *a = (const char *) e.data.alias.anchor;

                        path_from_stack(c, stack, depth);
                        error_at(c, line, column, "aliases (*%s) are not supported: write the value out in full",
                                 show(a, strlen(a), buf));
                        c->n_path = 0;
                        n = node_new(NODE_SCALAR, &e.start_mark, NULL, 0);
                        if (n)
                                n->broken = true;
                        break;
                }
                case YAML_SCALAR_EVENT:
                        n = node_new(NODE_SCALAR, &e.start_mark, (const char *) e.data.scalar.value,
                                     e.data.scalar.length);
                        if (n)
                                n->plain = e.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
                        break;
                case YAML_SEQUENCE_START_EVENT:
                case YAML_MAPPING_START_EVENT:
                        if (depth >= CONF_NESTING_MAX) {
                                path_from_stack(c, stack, depth);
                                error_at(c, line, column, "nested deeper than %d levels", CONF_NESTING_MAX);
                                c->n_path = 0;
                                r = -EINVAL;
                                break;
                        }
                        n = node_new(e.type == YAML_MAPPING_START_EVENT ? NODE_MAP : NODE_SEQ, &e.start_mark,
                                     NULL, 0);
                        break;
                case YAML_SEQUENCE_END_EVENT:
                case YAML_MAPPING_END_EVENT:
                        if (depth > 0)
                                depth--;
                        break;
                default:
                        break;
                }

                if (r == 0 && (e.type == YAML_ALIAS_EVENT || e.type == YAML_SCALAR_EVENT ||
                               e.type == YAML_SEQUENCE_START_EVENT || e.type == YAML_MAPPING_START_EVENT)) {
                        if (!n)
                                r = -ENOMEM;
                        else {
                                path_from_stack(c, stack, depth);
                                check_properties(c, &e, line, column);
                                c->n_path = 0;
                                if (depth == 0) {
                                        node_free(root); /* libyaml gives one root per document */
                                        root = n;
                                } else if (node_append(stack[depth - 1], n) < 0) {
                                        node_free(n);
                                        r = -ENOMEM;
                                }
                                if (r == 0 && n->type != NODE_SCALAR)
                                        stack[depth++] = n;
                        }
                }
                yaml_event_delete(&e);
        }
        yaml_parser_delete(&p);

        if (r < 0) {
                node_free(root);
                return r;
        }
        *ret_root = root;
        return 0;
}

/* --- pass 2: the schema --- */

static const char *node_kind(const Node *n) {
        switch (n->type) {
        case NODE_MAP:
                return "a mapping";
        case NODE_SEQ:
                return "a sequence";
        default:
                return "a single value";
        }
}

static bool node_is_null(const Node *n) {
        return n->type == NODE_SCALAR && n->plain &&
               (n->len == 0 || strcmp(n->value, "~") == 0 || strcmp(n->value, "null") == 0 ||
                strcmp(n->value, "Null") == 0 || strcmp(n->value, "NULL") == 0);
}

/* The text of scalar v, or NULL after reporting why there is none. what: "a duration (10ms)". */
static const char *scalar(Ctx *c, const Node *v, const char *what) {
        if (v->broken)
                return NULL;
        if (v->type != NODE_SCALAR) {
                error_node(c, v, "expected %s, not %s", what, node_kind(v));
                return NULL;
        }
        if (node_is_null(v)) {
                error_node(c, v, "has no value (expected %s)", what);
                return NULL;
        }
        if (strlen(v->value) != v->len) {
                error_node(c, v, "contains a NUL character");
                return NULL;
        }
        return v->value;
}

static int key_compare(const void *a, const void *b) {
        const Node *x = *(Node *const *) a, *y = *(Node *const *) b;
        int r = strcmp(x->value, y->value);

        if (r != 0)
                return r;
        if (x->line != y->line)
                return x->line < y->line ? -1 : 1;
        return x->column < y->column ? -1 : x->column > y->column;
}

/* Mark every scalar of items (stride 2 for a mapping's keys, 1 for a sequence) that repeats an
 * earlier one, reporting it. Sorting makes this O(n log n). */
static void mark_duplicates(Ctx *c, Node **items, size_t n, size_t stride, const char *what) {
        _cleanup_free_ Node **sorted = NULL;
        char buf[SHOW_BUF];
        size_t m = 0;

        if (n / stride < 2)
                return;
        sorted = malloc((n / stride) * sizeof(Node *));
        if (!sorted) {
                c->oom = true;
                return;
        }
        for (size_t i = 0; i < n; i += stride)
                if (!items[i]->skip && !items[i]->broken && items[i]->type == NODE_SCALAR)
                        sorted[m++] = items[i];
        qsort(sorted, m, sizeof(Node *), key_compare);
        for (size_t i = 1, first = 0; i < m; i++) {
                if (strcmp(sorted[i]->value, sorted[first]->value) != 0) {
                        first = i;
                        continue;
                }
                sorted[i]->skip = true;
                if (stride == 2)
                        path_push(c, sorted[i]->value);
                error_node(c, sorted[i], "duplicate %s \"%s\" (first given at %u:%u)", what,
                           show(sorted[i]->value, sorted[i]->len, buf), sorted[first]->line, sorted[first]->column);
                if (stride == 2)
                        path_pop(c);
        }
}

/* Check that v is a mapping (null counts as an empty one when null_ok) with scalar keys, marking
 * duplicate and unusable keys. Returns false (after reporting) when it is not a mapping. */
static bool map_begin(Ctx *c, Node *v, const char *what, bool null_ok, bool *ret_empty) {
        *ret_empty = false;
        if (v->broken)
                return false;
        if (null_ok && node_is_null(v)) {
                *ret_empty = true;
                return true;
        }
        if (v->type != NODE_MAP) {
                if (node_is_null(v))
                        error_node(c, v, "has no value (expected %s)", what);
                else
                        error_node(c, v, "expected %s, not %s", what, node_kind(v));
                return false;
        }
        for (size_t i = 0; i + 1 < v->n; i += 2) {
                Node *k = v->items[i];

                if (k->broken)
                        k->skip = true;
                else if (k->type != NODE_SCALAR) {
                        error_node(c, k, "a key must be a name, not %s", node_kind(k));
                        k->skip = true;
                } else if (strlen(k->value) != k->len) {
                        error_node(c, k, "a key contains a NUL character");
                        k->skip = true;
                }
        }
        mark_duplicates(c, v->items, v->n, 2, "key");
        return true;
}

static void unknown_key(Ctx *c, const Node *k, const char *known) {
        error_node(c, k, "unknown key (expected one of: %s)", known);
}

static bool is_digit(char ch) {
        return ch >= '0' && ch <= '9';
}

static bool get_duration(Ctx *c, const Node *v, uint64_t *ret) {
        const char *s = scalar(c, v, "a duration such as 10ms"), *reason = NULL;
        char buf[SHOW_BUF];
        uint64_t ns;

        if (!s)
                return false;
        if (duration_parse(s, &ns, &reason) < 0) {
                if (!is_digit(s[0]) && s[0] != '-' && s[0] != '+')
                        reason = "is not a duration (write it as 10ms, 250us, 1.5s)";
                error_node(c, v, "\"%s\" %s", show(s, v->len, buf), reason ?: "is not a duration");
                return false;
        }
        *ret = ns;
        return true;
}

/* A duration of at least DL_RUNTIME_MIN. */
static bool get_runtime(Ctx *c, const Node *v, uint64_t *ret) {
        char buf[DURATION_MAX];
        uint64_t ns;

        if (!get_duration(c, v, &ns))
                return false;
        if (ns < DL_RUNTIME_MIN) {
                error_node(c, v, "must be at least %s (the kernel's smallest runtime)",
                           duration_format(DL_RUNTIME_MIN, buf));
                return false;
        }
        *ret = ns;
        return true;
}

/* A percentage as a runtime over PERCENT_PERIOD_NS. */
static bool get_percent(Ctx *c, const Node *v, uint64_t *ret_runtime) {
        const char *s = scalar(c, v, "a percentage such as 20%"), *reason = NULL;
        char buf[SHOW_BUF];
        uint64_t rt, bw;

        if (!s)
                return false;
        if (percent_parse(s, &rt, &reason) < 0) {
                if (!is_digit(s[0]) && s[0] != '-' && s[0] != '+')
                        reason = "is not a percentage (write it as 20%)";
                error_node(c, v, "\"%s\" %s", show(s, v->len, buf), reason ?: "is not a percentage");
                return false;
        }
        if (bw_of(rt, PERCENT_PERIOD_NS, &bw) < 0) {
                error_node(c, v, "\"%s\" is too large", show(s, v->len, buf));
                return false;
        }
        *ret_runtime = rt;
        return true;
}

/* A percentage in BW units, or CONF_UNLIMITED for "unlimited" when unlimited_ok. */
static bool get_bandwidth(Ctx *c, const Node *v, bool unlimited_ok, uint64_t *ret_bw) {
        uint64_t rt, bw;

        if (unlimited_ok && v->type == NODE_SCALAR && strcmp(v->value, "unlimited") == 0) {
                *ret_bw = CONF_UNLIMITED;
                return true;
        }
        if (!get_percent(c, v, &rt))
                return false;
        (void) bw_of(rt, PERCENT_PERIOD_NS, &bw); /* checked by get_percent() */
        *ret_bw = bw;
        return true;
}

static bool get_count(Ctx *c, const Node *v, bool unlimited_ok, uint64_t *ret) {
        const char *s, *reason = NULL;
        char buf[SHOW_BUF];
        uint64_t n;

        if (unlimited_ok && v->type == NODE_SCALAR && strcmp(v->value, "unlimited") == 0) {
                *ret = CONF_UNLIMITED;
                return true;
        }
        s = scalar(c, v, unlimited_ok ? "a whole number or unlimited" : "a whole number");
        if (!s)
                return false;
        if (parse_u64_slice(s, v->len, &n, &reason) < 0) {
                error_node(c, v, "\"%s\" %s", show(s, v->len, buf), reason);
                return false;
        }
        *ret = n;
        return true;
}

/* "20/10s": 20 requests per 10 s; "unlimited" is 0/0. */
static bool get_rate(Ctx *c, const Node *v, uint64_t *ret_count, uint64_t *ret_window) {
        const char *s, *slash, *reason = NULL;
        char buf[SHOW_BUF];
        uint64_t n, w;

        if (v->type == NODE_SCALAR && strcmp(v->value, "unlimited") == 0) {
                *ret_count = *ret_window = 0;
                return true;
        }
        s = scalar(c, v, "a rate such as 20/10s, or unlimited");
        if (!s)
                return false;
        slash = strchr(s, '/');
        if (!slash) {
                error_node(c, v, "\"%s\" is not a rate (write it as 20/10s: 20 requests every 10 seconds)",
                           show(s, v->len, buf));
                return false;
        }
        if (parse_u64_slice(s, (size_t) (slash - s), &n, &reason) < 0) {
                error_node(c, v, "\"%s\": the count %s", show(s, v->len, buf), reason);
                return false;
        }
        if (n == 0) {
                error_node(c, v, "\"%s\" allows no request at all (to forbid reservations write reservations: 0)",
                           show(s, v->len, buf));
                return false;
        }
        if (duration_parse(slash + 1, &w, &reason) < 0) {
                error_node(c, v, "\"%s\": the window %s", show(s, v->len, buf), reason ?: "is not a duration");
                return false;
        }
        if (w == 0) {
                error_node(c, v, "\"%s\": the window must not be zero", show(s, v->len, buf));
                return false;
        }
        *ret_count = n;
        *ret_window = w;
        return true;
}

static bool get_fork_policy(Ctx *c, const Node *v, ForkPolicy *ret) {
        const char *s = scalar(c, v, "split, inherit or none");
        char buf[SHOW_BUF];
        ForkPolicy p;

        if (!s)
                return false;
        p = fork_policy_from_string(s);
        if (p == _FORK_POLICY_UNSET) {
                error_node(c, v, "\"%s\" is not a fork policy (expected split, inherit or none)",
                           show(s, v->len, buf));
                return false;
        }
        *ret = p;
        return true;
}

static bool is_ambiguous_boolean(const char *s) {
        static const char *const words[] = { "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off",
                                             "Off", "OFF", "y", "Y", "n", "N", "True", "TRUE", "False", "FALSE" };

        for (size_t i = 0; i < ELEMENTSOF(words); i++)
                if (strcmp(s, words[i]) == 0)
                        return true;
        return false;
}

static bool is_alnum(char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

/* Explain why s is not a user name, or NULL. Names as in /etc/passwd: letters, digits, _ . -,
 * not starting with -, an optional final $ (machine accounts), not all digits (that is a uid). */
const char *conf_user_name_problem(const char *s, size_t len) {
        bool digits = true;

        if (len == 0)
                return "is empty";
        if (len > USER_NAME_MAX)
                return "is longer than 256 bytes";
        if (s[0] == '-')
                return "must not start with -";
        for (size_t i = 0; i < len; i++) {
                char ch = s[i];

                if (ch == '$' && i == len - 1 && i > 0)
                        continue;
                if (!is_alnum(ch) && ch != '_' && ch != '.' && ch != '-')
                        return "is not a user name (letters, digits, _ . - only)";
                if (ch < '0' || ch > '9')
                        digits = false;
        }
        if (digits)
                return "is a number: write the user's name, not a uid";
        return NULL;
}

/* The groups `users:` list; NULL-terminated. */
static void walk_users(Ctx *c, Node *v, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        size_t m = 0;

        if (v->broken)
                return;
        if (node_is_null(v)) {
                error_node(c, v, "has no value (list user names such as [alice, bob], write [] for nobody, or "
                           "leave the key out for anyone)");
                return;
        }
        if (v->type != NODE_SEQ) {
                error_node(c, v, "expected a sequence of user names such as [alice, bob], not %s", node_kind(v));
                return;
        }
        mark_duplicates(c, v->items, v->n, 1, "user");
        l = calloc(v->n + 1, sizeof(char *));
        if (!l) {
                c->oom = true;
                return;
        }
        for (size_t i = 0; i < v->n; i++) {
                const Node *u = v->items[i];
                const char *s = scalar(c, u, "a user name"), *why;
                char buf[SHOW_BUF];

                if (!s || u->skip)
                        continue;
                why = conf_user_name_problem(s, u->len);
                if (why) {
                        error_node(c, u, "\"%s\" %s", show(s, u->len, buf), why);
                        continue;
                }
                l[m] = strdup(s);
                if (!l[m]) {
                        c->oom = true;
                        return;
                }
                m++;
        }
        strv_free(*ret);
        *ret = TAKE_PTR(l);
}

static void walk_cgroup(Ctx *c, const Node *v, const char *group_path, char **ret) {
        const char *s = scalar(c, v, "true, false or a cgroup path relative to cgroup-root");
        char buf[SHOW_BUF];
        char *p;

        if (!s)
                return;
        if (v->plain && strcmp(s, "false") == 0) {
                free(*ret);
                *ret = NULL;
                return;
        }
        if (v->plain && strcmp(s, "true") == 0)
                s = group_path;
        else if (v->plain && is_ambiguous_boolean(s)) {
                error_node(c, v, "\"%s\" is ambiguous: write true, false, or a quoted path", s);
                return;
        } else if (s[0] == '/') {
                error_node(c, v, "\"%s\" must be relative to cgroup-root (no leading /)", show(s, v->len, buf));
                return;
        } else if (!group_path_valid(s)) {
                error_node(c, v,
                           "\"%s\" is not a valid cgroup path (names of letters, digits, _ . - separated by /, "
                           "at most %d deep and %d bytes)",
                           show(s, v->len, buf), GROUP_DEPTH_MAX, GROUP_PATH_MAX);
                return;
        }
        p = strdup(s);
        if (!p) {
                c->oom = true;
                return;
        }
        free(*ret);
        *ret = p;
}

/* --- partitions and placement (issue 21): the keys `placement:` (top level and per group) and
 * `partitions:` --- */

const char *conf_placement_to_string(ConfPlacement p) {
        switch (p) {
        case CONF_PLACEMENT_GLOBAL:
                return "global";
        case CONF_PLACEMENT_PARTITIONED:
                return "partitioned";
        default:
                return NULL;
        }
}

/* `reclaim:` takes on or off (YAML's true and false too). */
static bool get_on_off(Ctx *c, const Node *v, bool *ret) {
        const char *s = scalar(c, v, "on or off");
        char buf[SHOW_BUF];

        if (!s)
                return false;
        if (strcmp(s, "on") == 0 || strcmp(s, "true") == 0)
                *ret = true;
        else if (strcmp(s, "off") == 0 || strcmp(s, "false") == 0)
                *ret = false;
        else {
                error_node(c, v, "\"%s\" is neither on nor off", show(s, v->len, buf));
                return false;
        }
        return true;
}

static bool get_placement(Ctx *c, const Node *v, ConfPlacement *ret) {
        const char *s = scalar(c, v, "global or partitioned");
        char buf[SHOW_BUF];

        if (!s)
                return false;
        if (strcmp(s, "global") == 0)
                *ret = CONF_PLACEMENT_GLOBAL;
        else if (strcmp(s, "partitioned") == 0)
                *ret = CONF_PLACEMENT_PARTITIONED;
        else {
                error_node(c, v, "\"%s\" is not a placement (expected global or partitioned)", show(s, v->len, buf));
                return false;
        }
        return true;
}

/* A partition's name becomes a cpuset directory (and a word in `edfctl status`): letters, digits,
 * _ . -, not starting with _ . or - (edfd's own directories start with _). */
static const char *partition_name_problem(const char *s, size_t len) {
        if (len == 0)
                return "is empty";
        if (len > CONF_PARTITION_NAME_MAX)
                return "is longer than 32 bytes";
        if (s[0] == '_' || s[0] == '.' || s[0] == '-')
                return "must start with a letter or a digit";
        for (size_t i = 0; i < len; i++)
                if (!is_alnum(s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
                        return "may hold only letters, digits, _ . and -";
        return NULL;
}

static void conf_partitions_free(ConfPartition *ps, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(ps[i].name);
        free(ps);
}

/* `partitions: {NAME: {cpus: LIST}, ...}`: each partition's CPUs parsed, none empty, no CPU in
 * two partitions (both named). */
static void walk_partitions(Ctx *c, Node *v, Config *cfg) {
        ConfPartition *ps;
        size_t n = 0;
        bool empty;

        if (!map_begin(c, v, "a mapping of partition names", true, &empty) || empty)
                return;
        ps = calloc(MAX(v->n / 2, (size_t) 1), sizeof(ConfPartition));
        if (!ps) {
                c->oom = true;
                return;
        }
        for (size_t i = 0; i + 1 < v->n && !c->oom; i += 2) {
                Node *k = v->items[i], *val = v->items[i + 1];
                const Node *k_cpus = NULL;
                const char *why;
                char buf[SHOW_BUF];
                bool ok = false;
                CpuMask cpus = {};

                if (k->skip)
                        continue;
                path_push(c, k->value);
                why = partition_name_problem(k->value, k->len);
                if (why)
                        error_node(c, k, "the partition name \"%s\" %s", show(k->value, k->len, buf), why);
                else if (n >= CONF_PARTITIONS_MAX)
                        error_node(c, k, "more than %d partitions", CONF_PARTITIONS_MAX);
                else if (map_begin(c, val, "a mapping with cpus: (such as cpus: \"1\")", false, &empty)) {
                        for (size_t j = 0; j + 1 < val->n; j += 2) {
                                Node *pk = val->items[j], *pv = val->items[j + 1];
                                const char *s;

                                if (pk->skip)
                                        continue;
                                path_push(c, pk->value);
                                if (strcmp(pk->value, "cpus") == 0) {
                                        k_cpus = pk;
                                        s = scalar(c, pv, "a CPU list such as \"1\" or \"2-3\"");
                                        if (s && cpu_mask_parse(s, pv->len, &cpus, &why) < 0)
                                                error_node(c, pv, "\"%s\" %s", show(s, pv->len, buf), why);
                                        else if (s && cpu_mask_empty(&cpus))
                                                error_node(c, pv, "names no CPU");
                                        else if (s)
                                                ok = true;
                                } else
                                        unknown_key(c, pk, "cpus");
                                path_pop(c);
                        }
                        if (!k_cpus)
                                error_node(c, k, "a partition needs cpus: (such as cpus: \"1\")");
                }
                if (ok) {
                        for (size_t j = 0; j < n; j++) {
                                unsigned cpu;

                                if (!cpu_mask_overlap(&ps[j].cpus, &cpus, &cpu))
                                        continue;
                                error_node(c, k, "CPU %u is in partition \"%s\" (%u:%u) too: partitions cannot share a CPU",
                                           cpu, ps[j].name, ps[j].line, ps[j].column);
                                ok = false;
                                break;
                        }
                }
                if (ok) {
                        ps[n] = (ConfPartition) { .cpus = cpus, .line = k->line, .column = k->column };
                        ps[n].name = strdup(k->value);
                        if (!ps[n].name)
                                c->oom = true;
                        else
                                n++;
                }
                path_pop(c);
        }
        conf_partitions_free(cfg->partitions, cfg->n_partitions);
        cfg->partitions = ps;
        cfg->n_partitions = n;
}

/* --- end of partitions and placement --- */

static void walk_groups(Ctx *c, Node *v, const char *parent_path, unsigned depth, size_t inherited_users,
                        ConfGroup **ret, size_t *ret_n);

static void conf_group_done(ConfGroup *g) {
        free(g->name);
        strv_free(g->users);
        free(g->cgroup);
        for (size_t i = 0; i < g->n_children; i++)
                conf_group_done(&g->children[i]);
        free(g->children);
}

#define GROUP_KEYS "runtime, period, bandwidth, fork, threads, min-split-runtime, reclaim, users, cgroup, placement, groups"

static void walk_group(Ctx *c, const Node *key, Node *v, const char *path, unsigned depth, size_t inherited_users,
                       ConfGroup *g) {
        const Node *k_runtime = NULL, *k_period = NULL, *k_bw = NULL;
        const Node *k_groups = NULL;
        Node *v_groups = NULL;
        bool ok_runtime = false, ok_period = false, ok_bw = false, empty;
        size_t effective;

        if (!map_begin(c, v, "a mapping with bandwidth: (or runtime: and period:)", false, &empty))
                return;

        for (size_t i = 0; i + 1 < v->n; i += 2) {
                Node *k = v->items[i], *val = v->items[i + 1];
                const char *name = k->value;

                if (k->skip)
                        continue;
                path_push(c, name);
                if (strcmp(name, "runtime") == 0) {
                        k_runtime = k;
                        ok_runtime = get_runtime(c, val, &g->runtime);
                } else if (strcmp(name, "period") == 0) {
                        k_period = k;
                        ok_period = get_duration(c, val, &g->period);
                        if (ok_period && g->period == 0) {
                                error_node(c, val, "must not be zero");
                                ok_period = false;
                        }
                } else if (strcmp(name, "bandwidth") == 0) {
                        uint64_t rt;

                        k_bw = k;
                        ok_bw = get_percent(c, val, &rt);
                        if (ok_bw && rt < DL_RUNTIME_MIN) {
                                error_node(c, val, "must be at least 0.001024%% (1.024us of every 100ms, the "
                                           "kernel's smallest runtime)");
                                ok_bw = false;
                        }
                        if (ok_bw) {
                                g->runtime = rt;
                                g->period = PERCENT_PERIOD_NS;
                        }
                } else if (strcmp(name, "fork") == 0)
                        (void) get_fork_policy(c, val, &g->fork);
                else if (strcmp(name, "threads") == 0)
                        (void) get_fork_policy(c, val, &g->threads);
                else if (strcmp(name, "min-split-runtime") == 0)
                        (void) get_runtime(c, val, &g->min_split_runtime);
                else if (strcmp(name, "users") == 0)
                        walk_users(c, val, &g->users);
                else if (strcmp(name, "cgroup") == 0)
                        walk_cgroup(c, val, path, &g->cgroup);
                else if (strcmp(name, "placement") == 0)
                        (void) get_placement(c, val, &g->placement);
                else if (strcmp(name, "reclaim") == 0) {
                        bool on;
                        if (get_on_off(c, val, &on))
                                g->reclaim = on ? RECLAIM_ON : RECLAIM_OFF;
                }
                else if (strcmp(name, "groups") == 0) {
                        k_groups = k;
                        v_groups = val;
                } else
                        unknown_key(c, k, GROUP_KEYS);
                path_pop(c);
        }

        if (k_bw && (k_runtime || k_period)) {
                path_push(c, "bandwidth");
                error_node(c, k_bw, "give either bandwidth or runtime and period, not both");
                path_pop(c);
        } else if (k_runtime && !k_period) {
                path_push(c, "runtime");
                error_node(c, k_runtime, "runtime needs a period (or write bandwidth: 20%% instead)");
                path_pop(c);
        } else if (k_period && !k_runtime) {
                path_push(c, "period");
                error_node(c, k_period, "period needs a runtime (or write bandwidth: 20%% instead)");
                path_pop(c);
        } else if (!k_bw && !k_runtime)
                error_node(c, key, "no bandwidth: give bandwidth: (a percentage such as 20%%) or runtime: and "
                           "period:");
        else if (k_runtime && ok_runtime && ok_period) {
                uint64_t bw;

                path_push(c, "runtime");
                if (bw_of(g->runtime, g->period, &bw) < 0)
                        error_node(c, k_runtime, "is too large (the largest is 2^44 ns, about 4.9 hours)");
                else if (bw == 0)
                        error_node(c, k_runtime, "runtime/period is too small: it rounds to no bandwidth at all");
                path_pop(c);
        }

        /* The children last, once this group's users are known: each group without users: gets a
         * copy of its parent's list in the tree, so the copies are counted here. */
        effective = g->users ? strv_length(g->users) : inherited_users;
        if (!c->users_full &&
            (effective > CONF_USERS_MAX - c->n_users || (c->n_users += effective) > CONF_USERS_MAX)) {
                error_node(c, key, "the groups' user lists add up to more than %d names (a group without users: "
                           "repeats its parent's list)", CONF_USERS_MAX);
                c->users_full = true;
        }
        if (k_groups) {
                path_push(c, "groups");
                walk_groups(c, v_groups, path, depth + 1, effective, &g->children, &g->n_children);
                path_pop(c);
        }
}

static void walk_groups(Ctx *c, Node *v, const char *parent_path, unsigned depth, size_t inherited_users,
                        ConfGroup **ret, size_t *ret_n) {
        ConfGroup *gs;
        size_t n = 0;
        bool empty;

        if (!map_begin(c, v, "a mapping of group names", true, &empty) || empty)
                return;
        gs = calloc(MAX(v->n / 2, (size_t) 1), sizeof(ConfGroup));
        if (!gs) {
                c->oom = true;
                return;
        }

        for (size_t i = 0; i + 1 < v->n && !c->groups_full && !c->oom; i += 2) {
                Node *k = v->items[i], *val = v->items[i + 1];
                const char *why;
                char buf[SHOW_BUF];
                _cleanup_free_ char *path = NULL;
                ConfGroup *g;

                if (k->skip)
                        continue;
                path_push(c, k->value);
                why = admission_group_name_problem(k->value, k->len);
                if (why)
                        error_node(c, k, "the group name \"%s\" %s", show(k->value, k->len, buf), why);
                else if (depth > GROUP_DEPTH_MAX)
                        error_node(c, k, "groups are nested deeper than %d levels", GROUP_DEPTH_MAX);
                else if (asprintf(&path, "%s%s%s", parent_path ?: "", parent_path ? "/" : "", k->value) < 0) {
                        path = NULL;
                        c->oom = true;
                } else if (strlen(path) > GROUP_PATH_MAX)
                        error_node(c, k, "the group path is longer than %d bytes", GROUP_PATH_MAX);
                else if (++c->n_groups > CONF_GROUPS_MAX) {
                        error_node(c, k, "more than %d groups", CONF_GROUPS_MAX);
                        c->groups_full = true;
                } else {
                        g = &gs[n++];
                        *g = (ConfGroup) {
                                .fork = _FORK_POLICY_UNSET,
                                .threads = _FORK_POLICY_UNSET,
                                .line = k->line,
                                .column = k->column,
                        };
                        g->name = strdup(k->value);
                        if (!g->name)
                                c->oom = true;
                        else
                                walk_group(c, k, val, path, depth, inherited_users, g);
                }
                path_pop(c);
        }
        for (size_t i = 0; i < *ret_n; i++)
                conf_group_done(&(*ret)[i]);
        free(*ret);
        *ret = gs;
        *ret_n = n;
}

static void walk_limit(Ctx *c, Node *v, ConfLimit *l, uint8_t *set) {
        bool empty;

        if (!map_begin(c, v, "a mapping of bandwidth, reservations and rate", false, &empty))
                return;
        for (size_t i = 0; i + 1 < v->n; i += 2) {
                Node *k = v->items[i], *val = v->items[i + 1];

                if (k->skip)
                        continue;
                path_push(c, k->value);
                if (strcmp(k->value, "bandwidth") == 0) {
                        if (get_bandwidth(c, val, true, &l->bandwidth))
                                *set |= 1;
                } else if (strcmp(k->value, "reservations") == 0) {
                        if (get_count(c, val, true, &l->reservations))
                                *set |= 2;
                } else if (strcmp(k->value, "rate") == 0) {
                        if (get_rate(c, val, &l->rate_count, &l->rate_window_ns))
                                *set |= 4;
                } else
                        unknown_key(c, k, "bandwidth, reservations, rate");
                path_pop(c);
        }
}

static void walk_limits(Ctx *c, Node *v, Config *cfg) {
        _cleanup_free_ uint8_t *set = NULL;
        const ConfLimit *def = NULL;
        ConfLimit *ls;
        size_t n = 0, def_i = SIZE_MAX;
        bool empty;

        if (!map_begin(c, v, "a mapping of user names", true, &empty) || empty)
                return;
        ls = calloc(MAX(v->n / 2, (size_t) 1), sizeof(ConfLimit));
        set = calloc(MAX(v->n / 2, (size_t) 1), 1);
        if (!ls || !set) {
                free(ls);
                c->oom = true;
                return;
        }
        for (size_t i = 0; i + 1 < v->n && !c->oom; i += 2) {
                Node *k = v->items[i], *val = v->items[i + 1];
                const char *why;
                char buf[SHOW_BUF];

                if (k->skip)
                        continue;
                path_push(c, k->value);
                why = strcmp(k->value, "default") == 0 ? NULL : conf_user_name_problem(k->value, k->len);
                if (why)
                        error_node(c, k, "\"%s\" %s", show(k->value, k->len, buf), why);
                else {
                        ConfLimit *l = &ls[n];

                        *l = (ConfLimit) {
                                .bandwidth = CONF_UNLIMITED,
                                .reservations = CONF_UNLIMITED,
                                .line = k->line,
                                .column = k->column,
                        };
                        l->user = strdup(k->value);
                        if (!l->user)
                                c->oom = true;
                        else {
                                walk_limit(c, val, l, &set[n]);
                                if (strcmp(l->user, "default") == 0)
                                        def_i = n;
                                n++;
                        }
                }
                path_pop(c);
        }

        /* What a user's entry leaves out comes from "default". */
        if (def_i != SIZE_MAX)
                def = &ls[def_i];
        for (size_t i = 0; def && i < n; i++) {
                if (!(set[i] & 1))
                        ls[i].bandwidth = def->bandwidth;
                if (!(set[i] & 2))
                        ls[i].reservations = def->reservations;
                if (!(set[i] & 4)) {
                        ls[i].rate_count = def->rate_count;
                        ls[i].rate_window_ns = def->rate_window_ns;
                }
        }

        for (size_t i = 0; i < cfg->n_limits; i++)
                free(cfg->limits[i].user);
        free(cfg->limits);
        cfg->limits = ls;
        cfg->n_limits = n;
}

static const char *cgroup_root_problem(const char *s, size_t len) {
        if (s[0] != '/')
                return "must be an absolute path such as " CONF_CGROUP_ROOT_DEFAULT;
        if (len > CGROUP_ROOT_MAX)
                return "is too long";
        if (len == 1)
                return "must not be / itself";
        if (s[len - 1] == '/')
                return "must not end with /";
        for (const char *p = s; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        return "contains a control character";
        for (const char *p = s + 1;;) {
                const char *slash = strchr(p, '/');
                size_t n = slash ? (size_t) (slash - p) : strlen(p);

                if (n == 0)
                        return "contains an empty component (//)";
                if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return "must not contain . or .. components";
                if (!slash)
                        return NULL;
                p = slash + 1;
        }
}

static const ConfGroup *conf_find_group(const ConfGroup *gs, size_t n, const char *path) {
        const char *slash = strchr(path, '/');
        size_t len = slash ? (size_t) (slash - path) : strlen(path);

        for (size_t i = 0; i < n; i++)
                if (strlen(gs[i].name) == len && memcmp(gs[i].name, path, len) == 0)
                        return slash ? conf_find_group(gs[i].children, gs[i].n_children, slash + 1) : &gs[i];
        return NULL;
}

#define TOP_KEYS "capacity, fork, threads, min-split-runtime, reclaim, exec-timeout, default-group, cgroup-root, polkit, limits, placement, partitions, partition-shared-cpus, groups"

static void walk_config(Ctx *c, Node *root, Config *cfg) {
        const Node *dg = NULL, *shared = NULL;
        size_t group_errors = 0;
        bool empty;

        if (!root || root->broken || node_is_null(root))
                return;
        if (root->type != NODE_MAP) {
                error_node(c, root, "the configuration must be a mapping of keys (%s), not %s", TOP_KEYS,
                           node_kind(root));
                return;
        }
        (void) map_begin(c, root, "a mapping", false, &empty);

        for (size_t i = 0; i + 1 < root->n; i += 2) {
                Node *k = root->items[i], *v = root->items[i + 1];
                const char *name = k->value, *s, *why;
                char buf[SHOW_BUF];

                if (k->skip)
                        continue;
                path_push(c, name);
                if (strcmp(name, "capacity") == 0) {
                        if (v->type == NODE_SCALAR && strcmp(v->value, "auto") == 0) {
                                cfg->capacity_auto = true;
                                cfg->capacity = CONF_UNLIMITED;
                        } else if (get_bandwidth(c, v, false, &cfg->capacity)) {
                                if (cfg->capacity == 0)
                                        error_node(c, v, "must be above 0%% (or auto)");
                                cfg->capacity_auto = false;
                        }
                } else if (strcmp(name, "fork") == 0)
                        (void) get_fork_policy(c, v, &cfg->fork);
                else if (strcmp(name, "threads") == 0)
                        (void) get_fork_policy(c, v, &cfg->threads);
                else if (strcmp(name, "min-split-runtime") == 0)
                        (void) get_runtime(c, v, &cfg->min_split_runtime);
                else if (strcmp(name, "exec-timeout") == 0) {
                        uint64_t ns;
                        char lo[DURATION_MAX], hi[DURATION_MAX];

                        if (get_duration(c, v, &ns)) {
                                if (ns < CONF_EXEC_TIMEOUT_MIN || ns > CONF_EXEC_TIMEOUT_MAX)
                                        error_node(c, v, "must be from %s to %s",
                                                   duration_format(CONF_EXEC_TIMEOUT_MIN, lo),
                                                   duration_format(CONF_EXEC_TIMEOUT_MAX, hi));
                                else
                                        cfg->exec_timeout = ns;
                        }
                } else if (strcmp(name, "default-group") == 0) {
                        s = scalar(c, v, "a group path such as audio/pipewire");
                        if (s && !group_path_valid(s))
                                error_node(c, v, "\"%s\" is not a valid group path", show(s, v->len, buf));
                        else if (s) {
                                dg = v;
                                free(cfg->default_group);
                                cfg->default_group = strdup(s);
                                if (!cfg->default_group)
                                        c->oom = true;
                                cfg->default_group_line = v->line;
                                cfg->default_group_column = v->column;
                        }
                } else if (strcmp(name, "cgroup-root") == 0) {
                        s = scalar(c, v, "an absolute path such as " CONF_CGROUP_ROOT_DEFAULT);
                        why = s ? cgroup_root_problem(s, v->len) : NULL;
                        if (why)
                                error_node(c, v, "\"%s\" %s", show(s, v->len, buf), why);
                        else if (s) {
                                free(cfg->cgroup_root);
                                cfg->cgroup_root = strdup(s);
                                if (!cfg->cgroup_root)
                                        c->oom = true;
                        }
                } else if (strcmp(name, "polkit") == 0) {
                        s = scalar(c, v, "auto, required or off");
                        if (s && polkit_mode_from_string(s) == _POLKIT_MODE_INVALID)
                                error_node(c, v, "\"%s\" is not a polkit mode (expected auto, required or off)",
                                           show(s, v->len, buf));
                        else if (s)
                                cfg->polkit = polkit_mode_from_string(s);
                } else if (strcmp(name, "limits") == 0)
                        walk_limits(c, v, cfg);
                else if (strcmp(name, "placement") == 0)
                        (void) get_placement(c, v, &cfg->placement);
                else if (strcmp(name, "reclaim") == 0)
                        (void) get_on_off(c, v, &cfg->reclaim);
                else if (strcmp(name, "partitions") == 0)
                        walk_partitions(c, v, cfg);
                else if (strcmp(name, "partition-shared-cpus") == 0) {
                        s = scalar(c, v, "a CPU list such as \"1\"");
                        if (s && cpu_mask_parse(s, v->len, &cfg->partition_shared, &why) < 0)
                                error_node(c, v, "\"%s\" %s", show(s, v->len, buf), why);
                        else if (s && cpu_mask_empty(&cfg->partition_shared))
                                error_node(c, v, "names no CPU");
                        else if (s)
                                shared = v;
                        if (!shared)
                                cfg->partition_shared = (CpuMask) {};
                } else if (strcmp(name, "groups") == 0) {
                        size_t before = c->n_errors;

                        cfg->groups_line = k->line;
                        cfg->groups_column = k->column;
                        walk_groups(c, v, NULL, 1, 0, &cfg->groups, &cfg->n_groups);
                        group_errors += c->n_errors - before;
                } else
                        unknown_key(c, k, TOP_KEYS);
                path_pop(c);
        }

        /* The shared CPUs are edfd-partitions' own: in no partition (whichever key came first). */
        for (size_t i = 0; shared && i < cfg->n_partitions; i++) {
                unsigned cpu;

                if (!cpu_mask_overlap(&cfg->partitions[i].cpus, &cfg->partition_shared, &cpu))
                        continue;
                path_push(c, "partition-shared-cpus");
                error_node(c, shared, "CPU %u is in partition \"%s\" (%u:%u) too: the shared CPUs are in no partition", cpu,
                           cfg->partitions[i].name, cfg->partitions[i].line, cfg->partitions[i].column);
                path_pop(c);
                break;
        }

        /* Only when the groups parsed: a group with an error may be the one named. */
        if (dg && group_errors == 0 && strcmp(cfg->default_group, "/") != 0 &&
            !conf_find_group(cfg->groups, cfg->n_groups, cfg->default_group)) {
                char buf[SHOW_BUF];

                path_push(c, "default-group");
                error_node(c, dg, "no group \"%s\" under groups:", show(dg->value, dg->len, buf));
                path_pop(c);
        }
}

Config *conf_free(Config *c) {
        if (!c)
                return NULL;
        free(c->default_group);
        free(c->cgroup_root);
        for (size_t i = 0; i < c->n_limits; i++)
                free(c->limits[i].user);
        free(c->limits);
        for (size_t i = 0; i < c->n_groups; i++)
                conf_group_done(&c->groups[i]);
        free(c->groups);
        conf_partitions_free(c->partitions, c->n_partitions);
        free(c);
        return NULL;
}

static inline void conf_freep(Config **c) {
        conf_free(*c);
}

int conf_parse_buffer(const char *buf, size_t len, const char *filename, Config **ret, ConfErrors *errors) {
        _cleanup_(conf_freep) Config *cfg = NULL;
        Ctx c = { .filename = filename, .buf = buf ?: "", .len = buf ? len : 0, .errors = errors };
        Node *root = NULL;
        int r;

        if (c.len > CONF_SIZE_MAX) {
                error_at(&c, 0, 0, "is larger than %u MiB", CONF_SIZE_MAX >> 20);
                return c.oom ? -ENOMEM : -EINVAL;
        }

        cfg = calloc(1, sizeof(Config));
        if (!cfg)
                return -ENOMEM;
        *cfg = (Config) {
                .capacity_auto = true,
                .capacity = CONF_UNLIMITED,
                .fork = FORK_SPLIT,
                .threads = FORK_NONE,
                .min_split_runtime = CONF_MIN_SPLIT_RUNTIME_DEFAULT,
                .exec_timeout = CONF_EXEC_TIMEOUT_DEFAULT,
                .polkit = POLKIT_AUTO,
                .placement = CONF_PLACEMENT_GLOBAL,
                .reclaim = CONF_RECLAIM_DEFAULT,
        };

        r = load(&c, &root);
        if (r < 0)
                return c.oom ? -ENOMEM : r;
        walk_config(&c, root, cfg);
        node_free(root);

        if (!cfg->cgroup_root) {
                cfg->cgroup_root = strdup(CONF_CGROUP_ROOT_DEFAULT);
                if (!cfg->cgroup_root)
                        return -ENOMEM;
        }
        if (c.oom)
                return -ENOMEM;
        if (c.n_errors > 0)
                return -EINVAL;
        *ret = TAKE_PTR(cfg);
        return 0;
}

int conf_parse_file(FILE *f, const char *filename, Config **ret, ConfErrors *errors) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, size = 0;

        for (;;) {
                size_t n;

                if (len == size) {
                        size_t a = size ? size * 2 : 64 * 1024;
                        char *b;

                        if (size > CONF_SIZE_MAX) {
                                Ctx c = { .filename = filename, .errors = errors };

                                error_at(&c, 0, 0, "is larger than %u MiB", CONF_SIZE_MAX >> 20);
                                return c.oom ? -ENOMEM : -EINVAL;
                        }
                        a = MIN(a, (size_t) CONF_SIZE_MAX + 1);
                        b = realloc(buf, a);
                        if (!b)
                                return -ENOMEM;
                        buf = b;
                        size = a;
                }
                n = fread(buf + len, 1, size - len, f);
                len += n;
                if (n == 0) {
                        if (ferror(f)) {
                                Ctx c = { .filename = filename, .errors = errors };
                                int e = errno ?: EIO;

                                error_at(&c, 0, 0, "cannot read: %s", strerror(e));
                                return c.oom ? -ENOMEM : -EIO;
                        }
                        break;
                }
        }
        return conf_parse_buffer(buf, len, filename, ret, errors);
}

ConfPlacement conf_placement_of(const Config *c, const char *group_path) {
        ConfPlacement p = c->placement;
        const ConfGroup *gs = c->groups;
        size_t n = c->n_groups;

        while (group_path && *group_path && strcmp(group_path, "/") != 0) {
                const char *slash = strchr(group_path, '/');
                size_t len = slash ? (size_t) (slash - group_path) : strlen(group_path);
                const ConfGroup *g = NULL;

                for (size_t i = 0; i < n && !g; i++)
                        if (strlen(gs[i].name) == len && memcmp(gs[i].name, group_path, len) == 0)
                                g = &gs[i];
                if (!g)
                        return CONF_PLACEMENT_UNSET;
                if (g->placement != CONF_PLACEMENT_UNSET)
                        p = g->placement;
                gs = g->children;
                n = g->n_children;
                group_path = slash ? slash + 1 : NULL;
        }
        return p;
}

const ConfLimit *conf_find_limit(const Config *c, const char *user) {
        const ConfLimit *def = NULL;

        for (size_t i = 0; i < c->n_limits; i++) {
                if (user && strcmp(c->limits[i].user, user) == 0)
                        return &c->limits[i];
                if (strcmp(c->limits[i].user, "default") == 0)
                        def = &c->limits[i];
        }
        return def;
}

/* --- the tree --- */

/* need and have for a message, with enough decimals to tell them apart. */
static void pct_pair(uint64_t need, uint64_t have, char a[static DURATION_MAX], char b[static DURATION_MAX]) {
        for (unsigned d = 1; d <= 4; d++) {
                bw_format_percent(need, d, BW_ROUND_NEAREST, a);
                bw_format_percent(have, d, BW_ROUND_NEAREST, b);
                if (strcmp(a, b) != 0)
                        return;
        }
}

/* The bandwidth of a configured group (0 when it has none: group_create() refuses it). */
static uint64_t conf_group_bw(const ConfGroup *g) {
        uint64_t bw;

        if (g->period == 0 || bw_of(g->runtime, g->period, &bw) < 0)
                return 0;
        return bw;
}

static char *group_keypath(const char *parent_keypath, const char *name) {
        char *s;

        if (asprintf(&s, "%s%sgroups.%s", parent_keypath ?: "", parent_keypath ? "." : "", name) < 0)
                return NULL;
        return s;
}

/* Report every group (and the root, as `groups`) whose children need more than it has. */
static void fit_check(Ctx *c, const ConfGroup *gs, size_t n, uint64_t have, const char *keypath, unsigned line,
                      unsigned column, const char *root_note, unsigned depth) {
        bool root = root_note != NULL;
        char a[DURATION_MAX], b[DURATION_MAX];
        uint64_t need = 0;
        bool overflow = false;

        for (size_t i = 0; i < n; i++)
                if (bw_add(need, conf_group_bw(&gs[i]), &need) < 0)
                        overflow = true;
        if (overflow)
                error_path(c, line, column, keypath, "%s add up to more than can be counted",
                           root ? "the top-level groups" : "children");
        else if (need > have) {
                pct_pair(need, have, a, b);
                if (root)
                        error_path(c, line, column, keypath, "top-level groups need %s, the root has %s (%s)", a, b,
                                   root_note);
                else
                        error_path(c, line, column, keypath, "children need %s, group has %s", a, b);
        }
        if (depth >= GROUP_DEPTH_MAX)
                return;
        for (size_t i = 0; i < n && !c->oom; i++) {
                _cleanup_free_ char *kp = NULL;

                if (gs[i].n_children == 0)
                        continue;
                kp = group_keypath(root ? NULL : keypath, gs[i].name);
                if (!kp) {
                        c->oom = true;
                        return;
                }
                fit_check(c, gs[i].children, gs[i].n_children, conf_group_bw(&gs[i]), kp, gs[i].line,
                          gs[i].column, NULL, depth + 1);
        }
}

static int create_groups(Ctx *c, Tree *t, const ConfGroup *gs, size_t n, const char *parent_path,
                         const char *parent_keypath, unsigned depth) {
        for (size_t i = 0; i < n; i++) {
                const ConfGroup *g = &gs[i];
                _cleanup_free_ char *path = NULL, *kp = NULL;
                char buf[512];
                GroupSpec spec = {
                        .runtime = g->runtime,
                        .period = g->period,
                        .fork = g->fork,
                        .threads = g->threads,
                        .min_split_runtime = g->min_split_runtime,
                        .reclaim = g->reclaim,
                        .users = g->users,
                        .cgroup = g->cgroup,
                };
                Refusal refusal = {};
                int r;

                kp = group_keypath(parent_keypath, g->name ?: "?");
                if (!kp || asprintf(&path, "%s%s%s", parent_path ?: "", parent_path ? "/" : "", g->name ?: "") < 0)
                        return -ENOMEM;
                r = group_create(t, path, &spec, NULL, &refusal);
                if (r < 0)
                        return r;
                if (r > 0) {
                        error_path(c, g->line, g->column, kp, "%s", refusal_format(&refusal, buf, sizeof buf));
                        continue;
                }
                if (depth < GROUP_DEPTH_MAX) {
                        r = create_groups(c, t, g->children, g->n_children, path, kp, depth + 1);
                        if (r < 0)
                                return r;
                } else if (g->n_children > 0)
                        error_path(c, g->line, g->column, kp, "groups are nested deeper than %d levels",
                                   GROUP_DEPTH_MAX);
        }
        return 0;
}

int conf_build_tree(const Config *c, const char *filename, uint64_t kernel_capacity, const DlLimits *limits,
                    Tree **ret, ConfErrors *errors) {
        Ctx ctx = { .filename = filename, .errors = errors };
        DlLimits l = limits ? *limits : DL_LIMITS_DEFAULT;
        uint64_t capacity = c->capacity_auto ? kernel_capacity : MIN(kernel_capacity, c->capacity);
        char note[3 * DURATION_MAX + 64], a[DURATION_MAX];
        Tree *t = NULL;
        int r;

        if (c->capacity_auto || kernel_capacity <= c->capacity)
                snprintf(note, sizeof note, "what the kernel admits on this machine");
        else
                snprintf(note, sizeof note, "capped by capacity:, the kernel admits %s",
                         bw_format(kernel_capacity, a));
        fit_check(&ctx, c->groups, c->n_groups, capacity, "groups", c->groups_line, c->groups_column, note, 1);
        if (ctx.oom || ctx.n_errors > 0)
                return ctx.oom ? -ENOMEM : -EINVAL;

        r = tree_new(&t, capacity, &l, c->fork, c->threads, c->min_split_runtime);
        if (r < 0)
                return r;
        tree_set_root_reclaim(t, c->reclaim);
        r = create_groups(&ctx, t, c->groups, c->n_groups, NULL, NULL, 1);
        if (r < 0) {
                tree_free(t);
                return r;
        }
        if (c->default_group && !tree_find_group(t, c->default_group))
                error_path(&ctx, c->default_group_line, c->default_group_column, "default-group",
                           "no group \"%s\" in the tree", c->default_group);
        if (ctx.oom || ctx.n_errors > 0) {
                tree_free(t);
                return ctx.oom ? -ENOMEM : -EINVAL;
        }
        *ret = t;
        return 0;
}

void conf_print(const Config *c, const Tree *t, FILE *out) {
        char a[DURATION_MAX], b[DURATION_MAX], d[DURATION_MAX];
        int w = 4, wc = 6; /* column widths of PATH and CGROUP */

        fprintf(out, "capacity: %s (%s)\n", bw_format(t->capacity, a),
                c->capacity_auto ? "auto: what the kernel admits" : "capped by capacity:");
        fprintf(out, "fork: %s\n", fork_policy_to_string(c->fork) ?: "?");
        fprintf(out, "threads: %s\n", fork_policy_to_string(c->threads) ?: "?");
        fprintf(out, "min-split-runtime: %s\n", duration_format(c->min_split_runtime, a));
        fprintf(out, "reclaim: %s\n", c->reclaim ? "on" : "off");
        fprintf(out, "exec-timeout: %s\n", duration_format(c->exec_timeout, a));
        fprintf(out, "default-group: %s\n", c->default_group ?: "/");
        fprintf(out, "cgroup-root: %s\n", c->cgroup_root ?: CONF_CGROUP_ROOT_DEFAULT);
        fprintf(out, "polkit: %s\n", polkit_mode_to_string(c->polkit) ?: "?");
        fprintf(out, "placement: %s\n", conf_placement_to_string(c->placement) ?: "?");
        fprintf(out, "partitions:%s\n", c->n_partitions == 0 ? " none" : "");
        for (size_t i = 0; i < c->n_partitions; i++) {
                char cpus[CPU_LIST_MAX];

                fprintf(out, "  %s: cpus %s\n", c->partitions[i].name,
                        cpu_mask_format(&c->partitions[i].cpus, cpus, sizeof cpus) ?: "?");
        }
        fprintf(out, "limits:%s\n", c->n_limits == 0 ? " none" : "");
        for (size_t i = 0; i < c->n_limits; i++) {
                const ConfLimit *l = &c->limits[i];
                char rate[2 * DURATION_MAX + 4];

                if (l->rate_count == 0)
                        snprintf(rate, sizeof rate, "unlimited");
                else
                        snprintf(rate, sizeof rate, "%" PRIu64 "/%s", l->rate_count,
                                 duration_format(l->rate_window_ns, d));
                if (l->reservations == CONF_UNLIMITED)
                        snprintf(b, sizeof b, "unlimited");
                else
                        snprintf(b, sizeof b, "%" PRIu64, l->reservations);
                fprintf(out, "  %s: bandwidth %s, reservations %s, rate %s\n", l->user,
                        bw_format(l->bandwidth, a), b, rate);
        }
        for (const Group *g = t->root; g; g = group_next_preorder(g))
                w = MAX(w, (int) strlen(g->path));
        for (const Group *g = t->root; g; g = group_next_preorder(g))
                wc = MAX(wc, g->cgroup ? (int) strlen(g->cgroup) : 0);
        fprintf(out, "groups:\n");
        fprintf(out, "  %-*s %9s %9s %9s %9s %-7s %-7s %9s %-7s %-*s %s\n", w, "PATH", "RUNTIME", "PERIOD",
                "BANDWIDTH", "CHILDREN", "FORK", "THREADS", "MIN-SPLIT", "RECLAIM", wc, "CGROUP", "USERS");
        for (const Group *g = t->root; g; g = group_next_preorder(g)) {
                char rt[DURATION_MAX] = "-", per[DURATION_MAX] = "-", ms[DURATION_MAX];

                if (g->period > 0) {
                        duration_format(g->runtime, rt);
                        duration_format(g->period, per);
                }
                fprintf(out, "  %-*s %9s %9s %9s %9s %-7s %-7s %9s %-7s %-*s ", w, g->path, rt, per,
                        bw_format(g->bw, a), bw_format(g->allocated, b),
                        fork_policy_to_string(g->fork) ?: "?", fork_policy_to_string(g->threads) ?: "?",
                        duration_format(g->min_split_runtime, ms), g->reclaim ? "on" : "off", wc, g->cgroup ?: "-");
                if (!g->users)
                        fprintf(out, "anyone");
                else if (!g->users[0])
                        fprintf(out, "root-only");
                else
                        for (char **u = g->users; *u; u++)
                                fprintf(out, "%s%s", u == g->users ? "" : ",", *u);
                fputc('\n', out);
        }
}

int conf_check_print(FILE *in, const char *filename, uint64_t kernel_capacity, const DlLimits *limits, FILE *out,
                     FILE *err) {
        _cleanup_(conf_freep) Config *c = NULL;
        ConfErrors e = {};
        Tree *t = NULL;
        int r;

        r = conf_parse_file(in, filename, &c, &e);
        if (r >= 0)
                r = conf_build_tree(c, filename, kernel_capacity, limits, &t, &e);
        if (r < 0) {
                for (size_t i = 0; i < e.n; i++)
                        fprintf(err, "%s\n", e.lines[i]);
                if (e.n == 0)
                        fprintf(err, "%s: %s\n", filename ?: "<input>", strerror(-r));
                conf_errors_done(&e);
                return r;
        }
        conf_print(c, t, out);
        tree_free(t);
        conf_errors_done(&e);
        return 0;
}
