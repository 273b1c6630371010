/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The configuration: YAML -> core types.
 *
 * The idea: the text is first loaded into a small node tree (scalars, mappings, sequences, each
 * with its line and column) by lib/yaml's reader, bounded in depth while it is built so that no
 * input can make it recurse deeply; then one walk over that tree checks every key against the schema and
 * fills a Config. Every problem becomes one line "FILE:LINE:COLUMN: KEY.PATH: message" and the walk
 * goes on, so a user sees all of them at once (up to CONF_ERRORS_MAX). A Config that parsed is
 * then turned into the core's group tree by conf_build_tree(), which checks that every group's
 * children fit it before it creates anything.
 *
 * Nothing here reads a fixed path, logs or touches the system: input comes from a buffer or a
 * FILE *, errors go to a ConfErrors the caller prints. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "basic/cpulist.h"
#include "core/params.h"
#include "core/placement.h"
#include "core/tree.h"

/* The default of `min-split-runtime`. Without HRTICK (off in every distribution kernel) the kernel
 * enforces runtime only at the scheduler tick (1-4 ms), and a budget is always overrun by the
 * cost of the switch itself: a split that leaves a child less than half a millisecond gives it a
 * reservation that is mostly rounding noise. 500us still lets a 1 ms audio thread split once. */
#define CONF_MIN_SPLIT_RUNTIME_DEFAULT PLACE_SPLIT_MIN_STAGE_DEFAULT
/* `reclaim:` when the configuration does not say: on. Measured on this machine (docs/performance.md,
 * "Reclaim"): with it, partitioned sets met every deadline where the same budgets without it, by hand
 * or through edfd, missed ~0.1% of jobs; what it takes is only bandwidth no reservation holds. */
#define CONF_RECLAIM_DEFAULT true

/* `exec-timeout`: how long an AdmitAtStart watch waits for its process's exec before it is dropped;
 * its default and its range. A container's init waits for its start in the engine's own time, which
 * is immediate for `podman start` and `docker start`; a minute covers a slow engine. */
#define CONF_EXEC_TIMEOUT_DEFAULT (UINT64_C(60) * 1000000000)
#define CONF_EXEC_TIMEOUT_MIN UINT64_C(1000000)
#define CONF_EXEC_TIMEOUT_MAX (UINT64_C(3600) * 1000000000)

/* The default of `cgroup-root`: a direct child of the cgroup v2 root, not anything below
 * system.slice. Under systemd the service's own cgroup (system.slice/edfd.service) is removed
 * whenever the service stops, which would tear down every group's cgroup and move its threads
 * out on a mere restart; a top-level directory that no unit owns survives that, and it is also
 * the only place where cpuset partitions (`cpuset.cpus.partition = root`, separate root domains)
 * can be made (the kernel refuses them below a service's cgroup). No `.slice` suffix, so systemd
 * never takes it for a unit of its own. */
#define CONF_CGROUP_ROOT_DEFAULT "/sys/fs/cgroup/edfd"

/* Limits on what a configuration may hold; beyond them it is refused with a clear error. */
#define CONF_SIZE_MAX (32U << 20)                   /* bytes of YAML */
#define CONF_GROUPS_MAX 4096                        /* groups in the whole tree */
#define CONF_NESTING_MAX (2 * GROUP_DEPTH_MAX + 8) /* mappings and sequences inside each other */
#define CONF_ERRORS_MAX 100                         /* error lines collected, the last says "too many" */
/* user names in all groups' lists together, counting the copy that a group without `users:` gets
 * of its parent's: bounds the tree's memory to the size of the file, not its square */
#define CONF_USERS_MAX 65536

/* The value of a limit that is not limited. */
#define CONF_UNLIMITED UINT64_MAX

typedef enum PolkitMode {
        POLKIT_AUTO,      /* ask polkit when it is on the bus, else allow by the D-Bus policy alone */
        POLKIT_REQUIRED,  /* refuse every request that polkit cannot be asked about */
        POLKIT_OFF,       /* never ask: the D-Bus policy and the limits decide */
        _POLKIT_MODE_MAX,
        _POLKIT_MODE_INVALID = -1,
} PolkitMode;

/* "auto", "required", "off"; NULL for anything else. */
const char *polkit_mode_to_string(PolkitMode m);
/* The mode named s, or _POLKIT_MODE_INVALID. */
PolkitMode polkit_mode_from_string(const char *s);

/* What one user may hold. A key missing from a user's entry takes the value of the `default`
 * entry, or unlimited when there is none; the parsed Config holds the resolved values. */
typedef struct ConfLimit {
        char *user;              /* "default" = every user without an entry of their own */
        uint64_t bandwidth;      /* BW units (bandwidth.h), CONF_UNLIMITED = unlimited */
        uint64_t reservations;   /* count, CONF_UNLIMITED = unlimited */
        uint64_t rate_count;     /* rate "20/10s": 20 requests ... */
        uint64_t rate_window_ns; /* ... per 10 s; both 0 = unlimited */
        unsigned line, column;   /* of the user's key */
} ConfLimit;

/* --- partitions and placement (issue 21) --- */

/* How a group's reservations are placed: on the CPUs outside every partition, where the kernel runs
 * global EDF (bounded tardiness only), or each on one CPU of a partition (its own root domain).
 * Inherited: a group without `placement:` places as its parent; the root's default is global. */
typedef enum ConfPlacement {
        CONF_PLACEMENT_UNSET,
        CONF_PLACEMENT_GLOBAL,
        CONF_PLACEMENT_PARTITIONED,
} ConfPlacement;

/* "global", "partitioned"; NULL for anything else (and for UNSET). */
const char *conf_placement_to_string(ConfPlacement p);

/* Longest partition name: it becomes a cpuset directory's name. */
#define CONF_PARTITION_NAME_MAX 32
#define CONF_PARTITIONS_MAX 256

/* One partition edfd owns: a name and its CPUs (never empty, never shared with another). What
 * the machine says about them (CPUs that exist and are online, foreign cpusets) is checked by the
 * cpuset adapter at start, not here. */
typedef struct ConfPartition {
        char *name;
        CpuMask cpus;
        unsigned line, column; /* of the partition's key */
} ConfPartition;

typedef struct ConfGroup ConfGroup;
struct ConfGroup {
        char *name;                  /* one path component */
        uint64_t runtime, period;    /* ns; `bandwidth: 20%` is 20 ms every 100 ms */
        ForkPolicy fork, threads;    /* _FORK_POLICY_UNSET: as the parent */
        uint64_t min_split_runtime;  /* 0: as the parent */
        char **users;                /* NULL: as the parent; empty (non-NULL): nobody */
        char *cgroup;                /* relative to cgroup-root, or NULL for none */
        ConfPlacement placement;     /* UNSET: as the parent */
        ReclaimPolicy reclaim;       /* RECLAIM_INHERIT: as the parent */
        ConfGroup *children;
        size_t n_children;
        unsigned line, column;       /* of the group's key */
};

typedef struct Config {
        bool capacity_auto;          /* true: all the kernel admits */
        uint64_t capacity;           /* BW units cap when !capacity_auto, else CONF_UNLIMITED */
        ForkPolicy fork, threads;    /* the root's policies: default split and none */
        uint64_t min_split_runtime;  /* ns, default CONF_MIN_SPLIT_RUNTIME_DEFAULT */
        uint64_t exec_timeout;       /* ns, default CONF_EXEC_TIMEOUT_DEFAULT */
        char *default_group;         /* group path for requests that name none; NULL: the root "/" */
        char *cgroup_root;           /* absolute, default CONF_CGROUP_ROOT_DEFAULT */
        PolkitMode polkit;
        ConfLimit *limits;
        size_t n_limits;
        ConfGroup *groups;           /* top-level groups, in file order */
        size_t n_groups;
        unsigned groups_line, groups_column;               /* of the `groups` key, 0 when absent */
        unsigned default_group_line, default_group_column; /* of its value, 0 when absent */
        ConfPlacement placement;     /* the root's: global unless `placement:` says otherwise */
        bool reclaim;                /* the root's `reclaim:`, default on (CONF_RECLAIM_DEFAULT) */
        ConfPartition *partitions;   /* in file order */
        size_t n_partitions;
        /* `partition-shared-cpus:` (cgroup v2): the CPUs edfd-partitions keeps for the other
         * threads of the processes it moves in; empty: none (the partitions take them all). */
        CpuMask partition_shared;
} Config;

/* Collected errors, one line each, without a trailing newline. Start with {} (zeroed). */
typedef struct ConfErrors {
        char **lines;
        size_t n;
} ConfErrors;

/* Parse len bytes of YAML (need not be NUL-terminated). filename is only used in messages (NULL:
 * "<input>"). Returns 0 and a new Config in *ret, or -EINVAL with every problem appended to
 * errors (which may be NULL to discard them), or -ENOMEM. An empty document is all defaults. */
int conf_parse_buffer(const char *buf, size_t len, const char *filename, Config **ret, ConfErrors *errors);
/* Read f to its end (at most CONF_SIZE_MAX bytes) and parse it like conf_parse_buffer(). Read
 * errors return -EIO with a line in errors. f stays open. */
int conf_parse_file(FILE *f, const char *filename, Config **ret, ConfErrors *errors);
/* Free c and everything in it. Accepts NULL, returns NULL. */
Config *conf_free(Config *c);
/* Free the lines of e and zero it. */
void conf_errors_done(ConfErrors *e);

/* The placement of the group at group_path ("a/b"; NULL, "" or "/" is the root): its own
 * `placement:`, else its nearest ancestor's, else the top-level one. CONF_PLACEMENT_UNSET when
 * there is no such group. */
ConfPlacement conf_placement_of(const Config *c, const char *group_path);

/* Why s[0..len) is not a user name (letters, digits, _ . -, not starting with -, an optional final
 * $, not all digits, at most 256 bytes), or NULL: the rule of a group's users: list. */
const char *conf_user_name_problem(const char *s, size_t len);
/* The limit entry that applies to user: their own, else "default", else NULL (unlimited). */
const ConfLimit *conf_find_limit(const Config *c, const char *user);

/* Build the core tree from c. The root gets kernel_capacity (what the daemon measured; UINT64_MAX
 * when kernel admission is off), or the `capacity` cap when that is lower. limits NULL means
 * DL_LIMITS_DEFAULT. Every group goes through group_create(). Returns 0 and the tree in *ret, or
 * -EINVAL with every group whose children do not fit (named with its position and the numbers)
 * and every refusal of the core appended to errors (may be NULL), or -ENOMEM. */
int conf_build_tree(const Config *c, const char *filename, uint64_t kernel_capacity, const DlLimits *limits,
                    Tree **ret, ConfErrors *errors);

/* Print c's settings and every group of t (path, runtime, period, bandwidth, allocated,
 * fork/threads policy, minimum split, cgroup, users) to out, for people. */
void conf_print(const Config *c, const Tree *t, FILE *out);

/* For `edfd --check-config FILE`: parse in, build against kernel_capacity and print the result
 * with conf_print() to out, returning 0; or print every error, one a line, to err and return
 * -EINVAL (or -EIO, -ENOMEM). */
int conf_check_print(FILE *in, const char *filename, uint64_t kernel_capacity, const DlLimits *limits, FILE *out,
                     FILE *err);
