/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The task-set file of `edfctl plan` (see plan-file.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "plan-file.h"
#include "basic/escape.h"
#include "basic/macro.h"
#include "core/duration.h"
#include "core/params.h"
#include "yaml/yaml-tree.h"

/* A task is one entry of one CPU's test (a split task one on each of two), so no CPU of a plan
 * can exceed what edf_check() takes. */
_Static_assert(PLAN_FILE_TASKS_MAX <= EDF_TASKS_MAX, "a file's tasks must fit one CPU's test");

#define FIELD_MAX 255
#define QUOTE_MAX (FIELD_MAX + 8)

typedef enum Key {
        KEY_NAME,
        KEY_RUNTIME,
        KEY_DEADLINE,
        KEY_PERIOD,
        KEY_GROUP,
        KEY_SPLIT,
        _KEY_MAX,
} Key;

static const char *const key_names[_KEY_MAX] = {
        [KEY_NAME] = "name", [KEY_RUNTIME] = "runtime", [KEY_DEADLINE] = "deadline",
        [KEY_PERIOD] = "period", [KEY_GROUP] = "group", [KEY_SPLIT] = "split",
};
#define KEYS "name, runtime, deadline, period, group, split"

/* One task's fields as written: slices of the input (CSV) or of libyaml's scalars. */
typedef struct Fields {
        const char *v[_KEY_MAX];
        size_t len[_KEY_MAX];
} Fields;

typedef struct Parser {
        const char *filename;
        PlanFile *f;
        char *err;
} Parser;

_printf_(3, 4) static int fail(Parser *p, unsigned line, const char *fmt, ...) {
        char msg[PLAN_FILE_ERROR_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        /* Truncated to the buffer when the file name is long: a message, not data. */
        if (line > 0)
                (void) !snprintf(p->err, PLAN_FILE_ERROR_MAX, "%.200s:%u: %.280s", p->filename, line, msg);
        else
                (void) !snprintf(p->err, PLAN_FILE_ERROR_MAX, "%.200s: %.280s", p->filename, msg);
        return -EINVAL;
}

static int key_from(const char *s, size_t len) {
        for (int k = 0; k < _KEY_MAX; k++)
                if (strlen(key_names[k]) == len && memcmp(s, key_names[k], len) == 0)
                        return k;
        return -1;
}

/* s[0..len) as a short C string for a message: its first QUOTE_BYTES bytes escaped for a terminal
 * (basic/escape.h), "..." when there was more. */
#define QUOTE_BYTES 40
_Static_assert(ESCAPE_MAX(QUOTE_BYTES) + 4 <= QUOTE_MAX, "room for the escaped bytes and ...");
static const char *quote(const char *s, size_t len, char buf[static QUOTE_MAX]) {
        size_t n = MIN(len, (size_t) QUOTE_BYTES), k;

        k = escape_terminal(s, n, buf, QUOTE_MAX);
        strcpy(buf + k, len > n ? "..." : "");
        return buf;
}

static char *keep(Parser *p, const char *s, size_t len) {
        PlanFile *f = p->f;
        char *c;

        if (f->n_strings == f->allocated_strings) {
                size_t m = f->allocated_strings ? f->allocated_strings * 2 : 16;
                char **t = realloc(f->strings, m * sizeof(*t));
                if (!t)
                        return NULL;
                f->strings = t, f->allocated_strings = m;
        }
        c = strndup(s, len);
        if (c)
                f->strings[f->n_strings++] = c;
        return c;
}

static int parse_duration_field(Parser *p, unsigned line, const Fields *fl, Key k, uint64_t *ret) {
        char buf[FIELD_MAX + 8], q[QUOTE_MAX];
        const char *reason = NULL;

        if (fl->len[k] > FIELD_MAX)
                return fail(p, line, "%s \"%s\" is too long", key_names[k], quote(fl->v[k], fl->len[k], q));
        memcpy(buf, fl->v[k], fl->len[k]);
        buf[fl->len[k]] = '\0';
        if (duration_parse(buf, ret, &reason) < 0)
                return fail(p, line, "%s \"%s\" %s", key_names[k], quote(fl->v[k], fl->len[k], q), reason);
        return 0;
}

static int parse_bool_field(Parser *p, unsigned line, const Fields *fl, Key k, bool *ret) {
        static const char *const yes[] = { "yes", "true", "on" }, *const no[] = { "no", "false", "off", "" };
        char q[QUOTE_MAX];

        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (fl->len[k] == strlen(yes[i]) && strncasecmp(fl->v[k], yes[i], fl->len[k]) == 0)
                        return *ret = true, 0;
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (fl->len[k] == strlen(no[i]) && strncasecmp(fl->v[k], no[i], fl->len[k]) == 0)
                        return *ret = false, 0;
        return fail(p, line, "%s \"%s\" is not yes or no", key_names[k], quote(fl->v[k], fl->len[k], q));
}

static int check_text_field(Parser *p, unsigned line, const Fields *fl, Key k) {
        char q[QUOTE_MAX];

        if (fl->len[k] > FIELD_MAX)
                return fail(p, line, "%s \"%s\" is longer than %d bytes", key_names[k], quote(fl->v[k], fl->len[k], q), FIELD_MAX);
        for (size_t i = 0; i < fl->len[k]; i++)
                if ((unsigned char) fl->v[k][i] < 0x20 || fl->v[k][i] == 0x7f)
                        return fail(p, line, "%s \"%s\" holds a control character", key_names[k], quote(fl->v[k], fl->len[k], q));
        return 0;
}

static int add_task(Parser *p, unsigned line, const Fields *fl) {
        PlanFile *f = p->f;
        PlanTask t = {};
        char a[DURATION_MAX], b[DURATION_MAX], name[32], shown[ESCAPE_MAX(FIELD_MAX) + 1];
        ParamsOutcome o;
        int r;

        if (f->n >= PLAN_FILE_TASKS_MAX)
                return fail(p, line, "more than %u tasks, the most a plan takes (one CPU's test takes at most %u)",
                            PLAN_FILE_TASKS_MAX, EDF_TASKS_MAX);
        snprintf(name, sizeof(name), "#%zu", f->n + 1);
        if (!fl->v[KEY_RUNTIME] || fl->len[KEY_RUNTIME] == 0)
                return fail(p, line, "task %s has no runtime", name);
        if (!fl->v[KEY_PERIOD] || fl->len[KEY_PERIOD] == 0)
                return fail(p, line, "task %s has no period", name);
        if ((fl->v[KEY_NAME] && (r = check_text_field(p, line, fl, KEY_NAME)) < 0) ||
            (fl->v[KEY_GROUP] && (r = check_text_field(p, line, fl, KEY_GROUP)) < 0))
                return r;
        if ((r = parse_duration_field(p, line, fl, KEY_RUNTIME, &t.params.runtime)) < 0 ||
            (r = parse_duration_field(p, line, fl, KEY_PERIOD, &t.params.period)) < 0)
                return r;
        if (fl->v[KEY_DEADLINE] && fl->len[KEY_DEADLINE] > 0) {
                if ((r = parse_duration_field(p, line, fl, KEY_DEADLINE, &t.params.deadline)) < 0)
                        return r;
                if (t.params.deadline == 0)
                        return fail(p, line, "deadline is 0 (leave it out for a deadline equal to the period)");
        }
        if (fl->v[KEY_SPLIT] && (r = parse_bool_field(p, line, fl, KEY_SPLIT, &t.split)) < 0)
                return r;
        if (fl->v[KEY_NAME] && fl->len[KEY_NAME] > 0) {
                t.name = keep(p, fl->v[KEY_NAME], fl->len[KEY_NAME]);
                if (!t.name)
                        return -ENOMEM;
        } else if (!(t.name = keep(p, name, strlen(name))))
                return -ENOMEM;
        if (fl->v[KEY_GROUP] && fl->len[KEY_GROUP] > 0 && !(t.group = keep(p, fl->v[KEY_GROUP], fl->len[KEY_GROUP])))
                return -ENOMEM;
        (void) escape_terminal(t.name, strlen(t.name), shown, sizeof(shown));

        o = dl_params_check(&t.params, NULL);
        switch (o) {
        case PARAMS_OK:
                break;
        case PARAMS_RUNTIME_ABOVE_DEADLINE:
                return fail(p, line, "task %s: runtime %s is above the %s %s", shown, duration_format(t.params.runtime, a),
                            t.params.deadline ? "deadline" : "period", duration_format(t.params.deadline ?: t.params.period, b));
        case PARAMS_DEADLINE_ABOVE_PERIOD:
                return fail(p, line, "task %s: deadline %s is above the period %s", shown,
                            duration_format(t.params.deadline, a), duration_format(t.params.period, b));
        default:
                return fail(p, line, "task %s: %s", shown, params_outcome_to_string(o));
        }

        if (f->n == f->allocated) {
                size_t m = f->allocated ? f->allocated * 2 : 16;
                PlanTask *n = realloc(f->tasks, m * sizeof(*n));
                unsigned *l;
                if (!n)
                        return -ENOMEM;
                f->tasks = n;
                l = realloc(f->lines, m * sizeof(*l));
                if (!l)
                        return -ENOMEM;
                f->lines = l, f->allocated = m;
        }
        f->lines[f->n] = line;
        f->tasks[f->n++] = t;
        return 0;
}

static int by_name(const void *a, const void *b, void *userdata) {
        const PlanTask *tasks = userdata;
        size_t i = *(const size_t *) a, j = *(const size_t *) b;
        int c = strcmp(tasks[i].name, tasks[j].name);

        return c != 0 ? c : i < j ? -1 : i > j;
}

/* Two tasks of one name: the first task (in file order) whose name an earlier one has, with the
 * line of that earlier one. Unnamed tasks count with the name they get ("#3"). */
static int check_names(Parser *p) {
        const PlanFile *f = p->f;
        _cleanup_free_ size_t *order = NULL;
        size_t dup = SIZE_MAX, first = 0;
        char q[QUOTE_MAX];

        if (f->n < 2)
                return 0;
        order = malloc(f->n * sizeof(*order));
        if (!order)
                return -ENOMEM;
        for (size_t i = 0; i < f->n; i++)
                order[i] = i;
        qsort_r(order, f->n, sizeof(*order), by_name, f->tasks);
        for (size_t i = 1, head = 0; i < f->n; i++) {
                if (strcmp(f->tasks[order[i]].name, f->tasks[order[head]].name) != 0) {
                        head = i;
                        continue;
                }
                /* order[head] is the first of its name; order[i] a later one. */
                if (dup == SIZE_MAX || order[i] < dup)
                        dup = order[i], first = order[head];
        }
        if (dup == SIZE_MAX)
                return 0;
        return fail(p, f->lines[dup], "task name \"%s\" is already the name of the task at %.200s:%u",
                    quote(f->tasks[dup].name, strlen(f->tasks[dup].name), q), p->filename, f->lines[first]);
}

/* --- CSV --- */

static const char *trim(const char *s, const char *e, size_t *ret_len) {
        while (s < e && (*s == ' ' || *s == '\t'))
                s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
                e--;
        *ret_len = (size_t) (e - s);
        return s;
}

static int parse_csv(Parser *p, const char *buf, size_t len) {
        int columns[_KEY_MAX + 16];
        size_t n_columns = 0;
        bool have_header = false;
        unsigned line = 0;
        const char *s = buf, *end = buf + len;

        while (s < end) {
                const char *eol = memchr(s, '\n', (size_t) (end - s)) ?: end, *c = s;
                size_t l;
                const char *t = trim(s, eol, &l);
                Fields fl = {};
                size_t col = 0;
                int r;

                line++;
                s = eol < end ? eol + 1 : end;
                /* A comment runs from a # at the start of the line or after a blank to the end of
                 * the line, as in YAML. */
                for (const char *h = c; h < eol; h++)
                        if (*h == '#' && (h == c || h[-1] == ' ' || h[-1] == '\t')) {
                                eol = h;
                                break;
                        }
                t = trim(c, eol, &l);
                if (l == 0)
                        continue;
                if (memchr(t, '\0', l))
                        return fail(p, line, "holds a NUL byte");
                for (;;) {
                        const char *comma = memchr(c, ',', (size_t) (eol - c)) ?: eol;
                        size_t fl_len;
                        const char *field = trim(c, comma, &fl_len);
                        char q[QUOTE_MAX];

                        if (!have_header) {
                                int k = key_from(field, fl_len);
                                if (k < 0)
                                        return fail(p, line, "unknown column \"%s\" (expected %s)", quote(field, fl_len, q), KEYS);
                                for (size_t i = 0; i < n_columns; i++)
                                        if (columns[i] == k)
                                                return fail(p, line, "column %s is named twice", key_names[k]);
                                columns[n_columns++] = k;
                        } else {
                                if (col >= n_columns)
                                        return fail(p, line, "more fields than the header's %zu columns", n_columns);
                                fl.v[columns[col]] = field;
                                fl.len[columns[col]] = fl_len;
                        }
                        col++;
                        if (comma == eol)
                                break;
                        c = comma + 1;
                }
                if (!have_header) {
                        bool rt = false, per = false;
                        for (size_t i = 0; i < n_columns; i++)
                                rt = rt || columns[i] == KEY_RUNTIME, per = per || columns[i] == KEY_PERIOD;
                        if (!rt || !per)
                                return fail(p, line, "the header names no %s column (the first line is the header: %s)",
                                            rt ? "period" : "runtime", KEYS);
                        have_header = true;
                        continue;
                }
                if (col < n_columns)
                        return fail(p, line, "%zu fields, the header has %zu columns", col, n_columns);
                r = add_task(p, line, &fl);
                if (r < 0)
                        return r;
        }
        if (!have_header)
                return fail(p, 0, "is empty (a CSV task set starts with a header line: %s)", KEYS);
        return 0;
}

/* --- YAML (the tree of lib/yaml's reader) --- */

/* `tasks: [ {key: value} ]` is three deep; the rest leaves room for a value that is not a scalar
 * to be named as such. */
#define YAML_NESTING_MAX 8
/* A task is at most 13 nodes (its mapping, six keys and six values): the tree of a file with more
 * tasks than a plan takes is cut where the task count is refused, not where memory runs out. */
#define YAML_NODES_MAX ((size_t) (PLAN_FILE_TASKS_MAX + 1) * 13 + 16)

/* The first problem the reader reports is the file's error. */
static void yaml_report(void *userdata, YamlProblem kind, unsigned line, unsigned column, const char *keypath,
                        const char *message) {
        Parser *p = userdata;

        (void) column, (void) keypath;
        if (p->err[0] != '\0')
                return;
        if (kind == YAML_PROBLEM_LIMIT && strncmp(message, "holds more than", 15) == 0)
                (void) fail(p, line, "%s, more than %u tasks of six keys (the most a plan takes)", message,
                            PLAN_FILE_TASKS_MAX);
        else
                (void) fail(p, line, "%s%s", kind == YAML_PROBLEM_SYNTAX ? "not valid YAML: " : "", message);
}

static int yaml_task(Parser *p, const YNode *t) {
        Fields fl = {};
        char q[QUOTE_MAX];

        if (t->type != YNODE_MAP)
                return fail(p, t->line, "each task is a mapping (%s)", KEYS);
        for (size_t i = 0; i + 1 < t->n; i += 2) {
                const YNode *k = t->items[i], *v = t->items[i + 1];
                int key;

                if (k->type != YNODE_SCALAR)
                        return fail(p, k->line, "a task's keys are scalars (%s)", KEYS);
                key = key_from(k->value, k->len);
                if (key < 0)
                        return fail(p, k->line, "unknown key \"%s\" in a task (expected %s)", quote(k->value, k->len, q),
                                    KEYS);
                if (fl.v[key])
                        return fail(p, k->line, "%s given twice", key_names[key]);
                if (v->type != YNODE_SCALAR)
                        return fail(p, v->line, "%s must be a scalar", key_names[key]);
                /* "\0" or "\u0000" in a quoted scalar: the value is longer than its C string. */
                if (!ytree_text(v))
                        return fail(p, v->line, "%s holds a NUL byte", key_names[key]);
                fl.v[key] = v->value;
                fl.len[key] = v->len;
        }
        return add_task(p, t->line, &fl);
}

static int yaml_tasks(Parser *p, const YNode *root) {
        const YNode *tasks = NULL;
        char q[QUOTE_MAX];
        int r;

        if (!root)
                return fail(p, 0, "is empty (expected tasks:)");
        if (root->type != YNODE_MAP)
                return fail(p, root->line, "expected a mapping with tasks:");
        for (size_t i = 0; i + 1 < root->n; i += 2) {
                const YNode *k = root->items[i], *v = root->items[i + 1];

                if (k->type != YNODE_SCALAR || k->len != 5 || memcmp(k->value, "tasks", 5) != 0)
                        return fail(p, k->line, "unknown key \"%s\" (expected tasks)",
                                    k->type == YNODE_SCALAR ? quote(k->value, k->len, q) : "?");
                if (tasks)
                        return fail(p, k->line, "tasks given twice");
                if (v->type != YNODE_SEQ)
                        return fail(p, v->line, "tasks must be a sequence of tasks");
                tasks = v;
                for (size_t j = 0; j < v->n; j++)
                        if ((r = yaml_task(p, v->items[j])) < 0)
                                return r;
        }
        if (!tasks)
                return fail(p, 0, "has no tasks:");
        return 0;
}

static int parse_yaml(Parser *p, const char *buf, size_t len) {
        const YamlLimits limits = { .nesting_max = YAML_NESTING_MAX, .nodes_max = YAML_NODES_MAX };
        YNode *root = NULL;
        int r;

        r = ytree_load(buf, len, &limits, yaml_report, p, &root);
        if (r == 0 && p->err[0] != '\0')
                r = -EINVAL; /* an anchor, alias or tag: reported, the tree is not walked */
        if (r == 0)
                r = yaml_tasks(p, root);
        ytree_free(root);
        return r;
}

/* --- the format --- */

static bool ends_with(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);
        return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

static bool looks_like_yaml(const char *buf, size_t len) {
        const char *s = buf, *end = buf + len;

        while (s < end) {
                const char *eol = memchr(s, '\n', (size_t) (end - s)) ?: end;
                size_t l;
                const char *t = trim(s, eol, &l);

                s = eol < end ? eol + 1 : end;
                if (l == 0 || *t == '#' || (l == 3 && memcmp(t, "---", 3) == 0))
                        continue;
                return l >= 6 && memcmp(t, "tasks:", 6) == 0;
        }
        return false;
}

void plan_file_done(PlanFile *f) {
        if (!f)
                return;
        for (size_t i = 0; i < f->n_strings; i++)
                free(f->strings[i]);
        free(f->strings);
        free(f->tasks);
        free(f->lines);
        *f = (PlanFile) {};
}

int plan_file_parse(const char *filename, const char *buf, size_t len, PlanFile *ret, char err[static PLAN_FILE_ERROR_MAX]) {
        PlanFile f = {};
        Parser p = { .filename = filename, .f = &f, .err = err };
        int r;

        err[0] = '\0';
        if (len > PLAN_FILE_SIZE_MAX)
                r = fail(&p, 0, "is larger than %u MiB", PLAN_FILE_SIZE_MAX >> 20);
        else if (ends_with(filename, ".yaml") || ends_with(filename, ".yml") ||
                 (!ends_with(filename, ".csv") && looks_like_yaml(buf, len)))
                r = parse_yaml(&p, buf, len);
        else
                r = parse_csv(&p, buf, len);
        if (r == 0 && f.n == 0)
                r = fail(&p, 0, "holds no task");
        if (r == 0)
                r = check_names(&p);
        if (r == -ENOMEM)
                snprintf(err, PLAN_FILE_ERROR_MAX, "%s: out of memory", filename);
        if (r < 0) {
                plan_file_done(&f);
                *ret = (PlanFile) {};
                return r;
        }
        *ret = f;
        return 0;
}
