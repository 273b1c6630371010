/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the files of the configuration share (conf.c the schema, conf-values.c the values, conf-tree.c
 * the tree and its print, conf-file.c the file): the state of one parse or build and its errors,
 * "FILE:LINE:COLUMN: KEY.PATH: message", collected up to CONF_ERRORS_MAX. Not for anything outside
 * daemon/conf*.c. */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"
#include "conf.h"
#include "yaml/yaml-tree.h"

#define CONF_PATH_PARTS_MAX (CONF_NESTING_MAX + 2)

/* State of one parse or build. */
typedef struct Ctx {
        const char *filename;
        ConfErrors *errors;      /* may be NULL: count only */
        size_t n_errors;         /* errors of this run, up to CONF_ERRORS_MAX (+1 for "too many") */
        bool oom;
        const char *path[CONF_PATH_PARTS_MAX]; /* the key path of what is being looked at */
        size_t n_path;
        size_t n_groups;
        bool groups_full;
        size_t n_users;          /* user names in all groups' effective lists */
        bool users_full;
} Ctx;

/* Add "FILE:LINE:COLUMN: KEYPATH: message"; line 0 leaves the position out, an empty keypath the
 * key path. Counts toward CONF_ERRORS_MAX; out of memory sets c->oom. */
_printf_(5, 6) void conf_error_path(Ctx *c, unsigned line, unsigned column, const char *keypath, const char *fmt,
                                    ...);
/* The same under the current key path (c->path). */
_printf_(4, 5) void conf_error_at(Ctx *c, unsigned line, unsigned column, const char *fmt, ...);
#define error_node(c, node, ...) conf_error_at(c, (node)->line, (node)->column, __VA_ARGS__)

static inline void path_push(Ctx *c, const char *part) {
        if (c->n_path < CONF_PATH_PARTS_MAX)
                c->path[c->n_path] = part;
        c->n_path++;
}

static inline void path_pop(Ctx *c) {
        c->n_path--;
}

static inline void conf_freep(Config **c) {
        conf_free(*c);
}

/* The text of scalar v, or NULL after reporting why there is none. what: "a duration (10ms)". */
const char *conf_scalar(Ctx *c, const YNode *v, const char *what);

/* Mark every scalar of items (stride 2 for a mapping's keys, 1 for a sequence) that repeats an
 * earlier one (its `skip`), reporting it as a duplicate `what` with the first one's position. */
void conf_mark_duplicates(Ctx *c, YNode **items, size_t n, size_t stride, const char *what);

/* --- values (conf-values.c) --- */

/* A value's reader: checks v, reports what is wrong under the current key path and returns false,
 * or stores the value in *ret (of the type named) and returns true. The simple keys of the schema
 * (conf.c's key tables) are read through these alone. */
typedef bool (*ConfGetFn)(Ctx *c, const YNode *v, void *ret);

bool conf_get_duration(Ctx *c, const YNode *v, void *ret);      /* uint64_t ns */
bool conf_get_runtime(Ctx *c, const YNode *v, void *ret);       /* uint64_t ns, at least DL_RUNTIME_MIN */
bool conf_get_percent(Ctx *c, const YNode *v, void *ret);       /* uint64_t runtime of PERCENT_PERIOD_NS */
bool conf_get_fork_policy(Ctx *c, const YNode *v, void *ret);   /* ForkPolicy */
bool conf_get_on_off(Ctx *c, const YNode *v, void *ret);        /* bool */
bool conf_get_reclaim(Ctx *c, const YNode *v, void *ret);       /* ReclaimPolicy from on/off */
bool conf_get_placement(Ctx *c, const YNode *v, void *ret);     /* ConfPlacement */
bool conf_get_exec_timeout(Ctx *c, const YNode *v, void *ret);  /* uint64_t ns, in its range */
bool conf_get_polkit(Ctx *c, const YNode *v, void *ret);        /* PolkitMode */
bool conf_get_cgroup_root(Ctx *c, const YNode *v, void *ret);   /* char *, the old one freed */
bool conf_get_users(Ctx *c, const YNode *v, void *ret);         /* char **, the old list freed */
bool conf_get_cpus(Ctx *c, const YNode *v, void *ret);          /* CpuMask, not empty */
/* A percentage in BW units, or CONF_UNLIMITED for "unlimited" when unlimited_ok. */
bool conf_get_bandwidth(Ctx *c, const YNode *v, bool unlimited_ok, uint64_t *ret_bw);
/* A whole number, or CONF_UNLIMITED for "unlimited" when unlimited_ok. */
bool conf_get_count(Ctx *c, const YNode *v, bool unlimited_ok, uint64_t *ret);
/* "20/10s": 20 requests per 10 s; "unlimited" is 0/0. */
bool conf_get_rate(Ctx *c, const YNode *v, uint64_t *ret_count, uint64_t *ret_window);
/* A group's `cgroup:` (true: group_path, false: none, or a relative path) into *ret, freeing the old. */
void conf_get_cgroup(Ctx *c, const YNode *v, const char *group_path, char **ret);
/* Why s[0..len) is not a partition name, or NULL. */
const char *conf_partition_name_problem(const char *s, size_t len);
