/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The configuration's schema; see conf.h for the idea. Two passes:
 *
 * 1. ytree_load() (lib/yaml): the text -> a tree of nodes with positions, nested at most
 *    CONF_NESTING_MAX deep; anchors, aliases, tags and a second document are refused there, and
 *    its reports become errors here with the key path it names.
 * 2. walk_*(): the schema. Each mapping's keys are checked for duplicates by sorting them once,
 *    then each key is looked up in its mapping's key table: a simple key's value is read by the
 *    reader the table names (conf-values.c) into the field it names; the others (bandwidth and
 *    its pair, nested groups, limits, partitions) have a walker of their own. The walk reports
 *    and goes on, so every error is collected. */

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/strv.h"
#include "conf-internal.h"
#include "core/admission.h"
#include "core/bandwidth.h"
#include "core/duration.h"

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

void conf_error_path(Ctx *c, unsigned line, unsigned column, const char *keypath, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        error_va(c, line, column, keypath, fmt, ap);
        va_end(ap);
}

void conf_error_at(Ctx *c, unsigned line, unsigned column, const char *fmt, ...) {
        char keypath[CONF_PATH_PARTS_MAX * (YTREE_SHOW_BUF + 1)];
        va_list ap;

        if (c->n_errors > CONF_ERRORS_MAX)
                return;
        ytree_keypath(c->path, MIN(c->n_path, (size_t) CONF_PATH_PARTS_MAX), keypath, sizeof keypath);
        va_start(ap, fmt);
        error_va(c, line, column, keypath, fmt, ap);
        va_end(ap);
}

/* What the YAML reader reports, as an error of this parse. */
static void report(void *userdata, YamlProblem kind, unsigned line, unsigned column, const char *keypath,
                   const char *message) {
        (void) kind;
        conf_error_path(userdata, line, column, keypath, "%s", message);
}

/* --- the schema --- */

const char *conf_scalar(Ctx *c, const YNode *v, const char *what) {
        if (v->broken)
                return NULL;
        if (v->type != YNODE_SCALAR) {
                error_node(c, v, "expected %s, not %s", what, ytree_kind(v));
                return NULL;
        }
        if (ytree_is_null(v)) {
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
        const YNode *x = *(YNode *const *) a, *y = *(YNode *const *) b;
        int r = strcmp(x->value, y->value);

        if (r != 0)
                return r;
        if (x->line != y->line)
                return x->line < y->line ? -1 : 1;
        return x->column < y->column ? -1 : x->column > y->column;
}

/* Sorting makes this O(n log n): a 10 MB mapping costs no more than its size. */
void conf_mark_duplicates(Ctx *c, YNode **items, size_t n, size_t stride, const char *what) {
        _cleanup_free_ YNode **sorted = NULL;
        char buf[YTREE_SHOW_BUF];
        size_t m = 0;

        if (n / stride < 2)
                return;
        sorted = malloc((n / stride) * sizeof(YNode *));
        if (!sorted) {
                c->oom = true;
                return;
        }
        for (size_t i = 0; i < n; i += stride)
                if (!items[i]->skip && !items[i]->broken && items[i]->type == YNODE_SCALAR)
                        sorted[m++] = items[i];
        qsort(sorted, m, sizeof(YNode *), key_compare);
        for (size_t i = 1, first = 0; i < m; i++) {
                if (strcmp(sorted[i]->value, sorted[first]->value) != 0) {
                        first = i;
                        continue;
                }
                sorted[i]->skip = true;
                if (stride == 2)
                        path_push(c, sorted[i]->value);
                error_node(c, sorted[i], "duplicate %s \"%s\" (first given at %u:%u)", what,
                           ytree_show(sorted[i]->value, sorted[i]->len, buf), sorted[first]->line, sorted[first]->column);
                if (stride == 2)
                        path_pop(c);
        }
}

/* Check that v is a mapping (null counts as an empty one when null_ok) with scalar keys, marking
 * duplicate and unusable keys. Returns false (after reporting) when it is not a mapping. */
static bool map_begin(Ctx *c, YNode *v, const char *what, bool null_ok, bool *ret_empty) {
        *ret_empty = false;
        if (v->broken)
                return false;
        if (null_ok && ytree_is_null(v)) {
                *ret_empty = true;
                return true;
        }
        if (v->type != YNODE_MAP) {
                if (ytree_is_null(v))
                        error_node(c, v, "has no value (expected %s)", what);
                else
                        error_node(c, v, "expected %s, not %s", what, ytree_kind(v));
                return false;
        }
        for (size_t i = 0; i + 1 < v->n; i += 2) {
                YNode *k = v->items[i];

                if (k->broken)
                        k->skip = true;
                else if (k->type != YNODE_SCALAR) {
                        error_node(c, k, "a key must be a name, not %s", ytree_kind(k));
                        k->skip = true;
                } else if (strlen(k->value) != k->len) {
                        error_node(c, k, "a key contains a NUL character");
                        k->skip = true;
                }
        }
        conf_mark_duplicates(c, v->items, v->n, 2, "key");
        return true;
}

static void unknown_key(Ctx *c, const YNode *k, const char *known) {
        error_node(c, k, "unknown key (expected one of: %s)", known);
}

/* One key of a mapping: its name and, for a simple key, the reader of its value and the field
 * (an offset into the Config or ConfGroup) it fills. The tables below are the schema's key lists;
 * the messages name the keys from them. */
typedef struct ConfKey {
        const char *name;
        ConfGetFn get;   /* NULL: the walker handles the key itself */
        size_t offset;
} ConfKey;

#define SIMPLE(n, fn, type, field) { .name = n, .get = fn, .offset = offsetof(type, field) }

static const ConfKey top_keys[] = {
        { .name = "capacity" },
        SIMPLE("fork", conf_get_fork_policy, Config, fork),
        SIMPLE("threads", conf_get_fork_policy, Config, threads),
        SIMPLE("min-split-runtime", conf_get_runtime, Config, min_split_runtime),
        SIMPLE("reclaim", conf_get_on_off, Config, reclaim),
        SIMPLE("exec-timeout", conf_get_exec_timeout, Config, exec_timeout),
        { .name = "default-group" },
        SIMPLE("cgroup-root", conf_get_cgroup_root, Config, cgroup_root),
        SIMPLE("polkit", conf_get_polkit, Config, polkit),
        { .name = "limits" },
        SIMPLE("placement", conf_get_placement, Config, placement),
        { .name = "partitions" },
        { .name = "partition-shared-cpus" },
        { .name = "groups" },
};

static const ConfKey group_keys[] = {
        { .name = "runtime" },
        { .name = "period" },
        { .name = "bandwidth" },
        SIMPLE("fork", conf_get_fork_policy, ConfGroup, fork),
        SIMPLE("threads", conf_get_fork_policy, ConfGroup, threads),
        SIMPLE("min-split-runtime", conf_get_runtime, ConfGroup, min_split_runtime),
        SIMPLE("reclaim", conf_get_reclaim, ConfGroup, reclaim),
        SIMPLE("users", conf_get_users, ConfGroup, users),
        { .name = "cgroup" },
        SIMPLE("placement", conf_get_placement, ConfGroup, placement),
        { .name = "groups" },
};

/* "a, b, c" of a table's names, into buf. */
static const char *key_names(const ConfKey *keys, size_t n, char *buf, size_t size) {
        size_t o = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < n && o < size; i++)
                o += (size_t) snprintf(buf + o, size - o, "%s%s", i > 0 ? ", " : "", keys[i].name);
        return buf;
}

/* The entry for key k of a mapping of obj, whose simple keys it reads: NULL when the key was simple
 * (its value is read) or unknown (reported), else the entry, for the walker. */
static const ConfKey *key_apply(Ctx *c, const YNode *k, const YNode *v, const ConfKey *keys, size_t n, void *obj) {
        char names[512];

        for (size_t i = 0; i < n; i++) {
                if (strcmp(keys[i].name, k->value) != 0)
                        continue;
                if (!keys[i].get)
                        return &keys[i];
                (void) keys[i].get(c, v, (char *) obj + keys[i].offset);
                return NULL;
        }
        unknown_key(c, k, key_names(keys, n, names, sizeof names));
        return NULL;
}

static void conf_partitions_free(ConfPartition *ps, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(ps[i].name);
        free(ps);
}

/* `partitions: {NAME: {cpus: LIST}, ...}`: each partition's CPUs parsed, none empty, no CPU in
 * two partitions (both named). */
static void walk_partitions(Ctx *c, YNode *v, Config *cfg) {
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
                YNode *k = v->items[i], *val = v->items[i + 1];
                const YNode *k_cpus = NULL;
                const char *why;
                char buf[YTREE_SHOW_BUF];
                bool ok = false;
                CpuMask cpus = {};

                if (k->skip)
                        continue;
                path_push(c, k->value);
                why = conf_partition_name_problem(k->value, k->len);
                if (why)
                        error_node(c, k, "the partition name \"%s\" %s", ytree_show(k->value, k->len, buf), why);
                else if (n >= CONF_PARTITIONS_MAX)
                        error_node(c, k, "more than %d partitions", CONF_PARTITIONS_MAX);
                else if (map_begin(c, val, "a mapping with cpus: (such as cpus: \"1\")", false, &empty)) {
                        for (size_t j = 0; j + 1 < val->n; j += 2) {
                                YNode *pk = val->items[j], *pv = val->items[j + 1];

                                if (pk->skip)
                                        continue;
                                path_push(c, pk->value);
                                if (strcmp(pk->value, "cpus") == 0) {
                                        k_cpus = pk;
                                        ok = conf_get_cpus(c, pv, &cpus);
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

static void walk_groups(Ctx *c, YNode *v, const char *parent_path, unsigned depth, size_t inherited_users,
                        ConfGroup **ret, size_t *ret_n);

static void conf_group_done(ConfGroup *g) {
        free(g->name);
        strv_free(g->users);
        free(g->cgroup);
        for (size_t i = 0; i < g->n_children; i++)
                conf_group_done(&g->children[i]);
        free(g->children);
}

static void walk_group(Ctx *c, const YNode *key, YNode *v, const char *path, unsigned depth, size_t inherited_users,
                       ConfGroup *g) {
        const YNode *k_runtime = NULL, *k_period = NULL, *k_bw = NULL;
        const YNode *k_groups = NULL;
        YNode *v_groups = NULL;
        bool ok_runtime = false, ok_period = false, ok_bw = false, empty;
        size_t effective;

        if (!map_begin(c, v, "a mapping with bandwidth: (or runtime: and period:)", false, &empty))
                return;

        for (size_t i = 0; i + 1 < v->n; i += 2) {
                YNode *k = v->items[i], *val = v->items[i + 1];
                const ConfKey *key_of;
                const char *name;

                if (k->skip)
                        continue;
                path_push(c, k->value);
                key_of = key_apply(c, k, val, group_keys, ELEMENTSOF(group_keys), g);
                name = key_of ? key_of->name : "";
                if (strcmp(name, "runtime") == 0) {
                        k_runtime = k;
                        ok_runtime = conf_get_runtime(c, val, &g->runtime);
                } else if (strcmp(name, "period") == 0) {
                        k_period = k;
                        ok_period = conf_get_duration(c, val, &g->period);
                        if (ok_period && g->period == 0) {
                                error_node(c, val, "must not be zero");
                                ok_period = false;
                        }
                } else if (strcmp(name, "bandwidth") == 0) {
                        uint64_t rt;

                        k_bw = k;
                        ok_bw = conf_get_percent(c, val, &rt);
                        if (ok_bw && rt < DL_RUNTIME_MIN) {
                                error_node(c, val, "must be at least 0.001024%% (1.024us of every 100ms, the "
                                           "kernel's smallest runtime)");
                                ok_bw = false;
                        }
                        if (ok_bw) {
                                g->runtime = rt;
                                g->period = PERCENT_PERIOD_NS;
                        }
                } else if (strcmp(name, "cgroup") == 0)
                        conf_get_cgroup(c, val, path, &g->cgroup);
                else if (strcmp(name, "groups") == 0) {
                        k_groups = k;
                        v_groups = val;
                }
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

static void walk_groups(Ctx *c, YNode *v, const char *parent_path, unsigned depth, size_t inherited_users,
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
                YNode *k = v->items[i], *val = v->items[i + 1];
                const char *why;
                char buf[YTREE_SHOW_BUF];
                _cleanup_free_ char *path = NULL;
                ConfGroup *g;

                if (k->skip)
                        continue;
                path_push(c, k->value);
                why = admission_group_name_problem(k->value, k->len);
                if (why)
                        error_node(c, k, "the group name \"%s\" %s", ytree_show(k->value, k->len, buf), why);
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

static void walk_limit(Ctx *c, YNode *v, ConfLimit *l, uint8_t *set) {
        bool empty;

        if (!map_begin(c, v, "a mapping of bandwidth, reservations and rate", false, &empty))
                return;
        for (size_t i = 0; i + 1 < v->n; i += 2) {
                YNode *k = v->items[i], *val = v->items[i + 1];

                if (k->skip)
                        continue;
                path_push(c, k->value);
                if (strcmp(k->value, "bandwidth") == 0) {
                        if (conf_get_bandwidth(c, val, true, &l->bandwidth))
                                *set |= 1;
                } else if (strcmp(k->value, "reservations") == 0) {
                        if (conf_get_count(c, val, true, &l->reservations))
                                *set |= 2;
                } else if (strcmp(k->value, "rate") == 0) {
                        if (conf_get_rate(c, val, &l->rate_count, &l->rate_window_ns))
                                *set |= 4;
                } else
                        unknown_key(c, k, "bandwidth, reservations, rate");
                path_pop(c);
        }
}

static void walk_limits(Ctx *c, YNode *v, Config *cfg) {
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
                YNode *k = v->items[i], *val = v->items[i + 1];
                const char *why;
                char buf[YTREE_SHOW_BUF];

                if (k->skip)
                        continue;
                path_push(c, k->value);
                why = strcmp(k->value, "default") == 0 ? NULL : conf_user_name_problem(k->value, k->len);
                if (why)
                        error_node(c, k, "\"%s\" %s", ytree_show(k->value, k->len, buf), why);
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

static const ConfGroup *conf_find_group(const ConfGroup *gs, size_t n, const char *path) {
        const char *slash = strchr(path, '/');
        size_t len = slash ? (size_t) (slash - path) : strlen(path);

        for (size_t i = 0; i < n; i++)
                if (strlen(gs[i].name) == len && memcmp(gs[i].name, path, len) == 0)
                        return slash ? conf_find_group(gs[i].children, gs[i].n_children, slash + 1) : &gs[i];
        return NULL;
}

static void walk_config(Ctx *c, YNode *root, Config *cfg) {
        const YNode *dg = NULL, *shared = NULL;
        size_t group_errors = 0;
        char names[512];
        bool empty;

        if (!root || root->broken || ytree_is_null(root))
                return;
        if (root->type != YNODE_MAP) {
                error_node(c, root, "the configuration must be a mapping of keys (%s), not %s",
                           key_names(top_keys, ELEMENTSOF(top_keys), names, sizeof names), ytree_kind(root));
                return;
        }
        (void) map_begin(c, root, "a mapping", false, &empty);

        for (size_t i = 0; i + 1 < root->n; i += 2) {
                YNode *k = root->items[i], *v = root->items[i + 1];
                const ConfKey *key_of;
                const char *name, *s;
                char buf[YTREE_SHOW_BUF];

                if (k->skip)
                        continue;
                path_push(c, k->value);
                key_of = key_apply(c, k, v, top_keys, ELEMENTSOF(top_keys), cfg);
                name = key_of ? key_of->name : "";
                if (strcmp(name, "capacity") == 0) {
                        if (v->type == YNODE_SCALAR && strcmp(v->value, "auto") == 0) {
                                cfg->capacity_auto = true;
                                cfg->capacity = CONF_UNLIMITED;
                        } else if (conf_get_bandwidth(c, v, false, &cfg->capacity)) {
                                if (cfg->capacity == 0)
                                        error_node(c, v, "must be above 0%% (or auto)");
                                cfg->capacity_auto = false;
                        }
                } else if (strcmp(name, "default-group") == 0) {
                        s = conf_scalar(c, v, "a group path such as audio/pipewire");
                        if (s && !group_path_valid(s))
                                error_node(c, v, "\"%s\" is not a valid group path", ytree_show(s, v->len, buf));
                        else if (s) {
                                dg = v;
                                free(cfg->default_group);
                                cfg->default_group = strdup(s);
                                if (!cfg->default_group)
                                        c->oom = true;
                                cfg->default_group_line = v->line;
                                cfg->default_group_column = v->column;
                        }
                } else if (strcmp(name, "limits") == 0)
                        walk_limits(c, v, cfg);
                else if (strcmp(name, "partitions") == 0)
                        walk_partitions(c, v, cfg);
                else if (strcmp(name, "partition-shared-cpus") == 0) {
                        if (conf_get_cpus(c, v, &cfg->partition_shared))
                                shared = v;
                        else
                                cfg->partition_shared = (CpuMask) {};
                } else if (strcmp(name, "groups") == 0) {
                        size_t before = c->n_errors;

                        cfg->groups_line = k->line;
                        cfg->groups_column = k->column;
                        walk_groups(c, v, NULL, 1, 0, &cfg->groups, &cfg->n_groups);
                        group_errors += c->n_errors - before;
                }
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
                char buf[YTREE_SHOW_BUF];

                path_push(c, "default-group");
                error_node(c, dg, "no group \"%s\" under groups:", ytree_show(dg->value, dg->len, buf));
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

int conf_parse_buffer(const char *buf, size_t len, const char *filename, Config **ret, ConfErrors *errors) {
        _cleanup_(conf_freep) Config *cfg = NULL;
        Ctx c = { .filename = filename, .errors = errors };
        const YamlLimits limits = { .nesting_max = CONF_NESTING_MAX };
        YNode *root = NULL;
        int r;

        if (!buf)
                len = 0;
        if (len > CONF_SIZE_MAX) {
                conf_error_at(&c, 0, 0, "is larger than %u MiB", CONF_SIZE_MAX >> 20);
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

        r = ytree_load(buf, len, &limits, report, &c, &root);
        if (r < 0)
                return c.oom ? -ENOMEM : r;
        walk_config(&c, root, cfg);
        ytree_free(root);

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
