/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The group tree and its reservations: edfd's books.
 *
 * Every group has a bandwidth (runtime/period, see bandwidth.h). A group's bandwidth must cover
 * the sum of its children: the bandwidth of each child group plus the bandwidth of each
 * reservation held directly in it. `allocated` is that sum, kept up to date by every operation,
 * so that every decision is a comparison at one group (and its parent when a group's own size
 * changes): admission costs O(1) after the group is found, never O(reservations). The root's
 * bandwidth is the capacity the kernel gives deadline tasks (less what edfd does not manage,
 * which the root carries as `unmanaged`).
 *
 * Every operation is all-or-nothing: it either changes the books and returns 0, or returns a
 * positive AdmitOutcome (a refusal, with the numbers in a Refusal) or a negative errno (out of
 * memory) and changes nothing.
 *
 * Fork split and the donor rule: when an admitted thread forks, the child's reservation may be
 * split off its donor (the forking thread): the donor keeps runtime - runtime / 2, the child gets
 * runtime / 2 with the same deadline and period. Both stay in the donor's group, whose
 * allocation cannot grow (the two rounded-down halves never add up to more than the rounded-down
 * whole; they may add up to one unit less). The child remembers its donor's id and what it was
 * given. When the child's reservation ends, what it was given (or its runtime, if an update made
 * it smaller) goes back to the donor if the donor still exists, still has the
 * same period, still has room under its deadline and the group can cover the rounding unit that
 * may come back with it; otherwise it simply returns to the group. So a program that forks
 * workers again and again ends each cycle with its full budget.
 *
 * Under `inherit`, the child gets the donor's full parameters if the group has room, and is split
 * as above if not. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/hashmap.h"
#include "core/params.h"

typedef enum ForkPolicy {
        FORK_SPLIT,
        FORK_INHERIT,
        FORK_NONE,
        _FORK_POLICY_MAX,
        _FORK_POLICY_UNSET = -1,
} ForkPolicy;

/* "split", "inherit", "none"; NULL for anything else. */
const char *fork_policy_to_string(ForkPolicy p);
/* The policy named s, or _FORK_POLICY_UNSET. */
ForkPolicy fork_policy_from_string(const char *s);

/* Whether a group's reservations reclaim unused bandwidth (the kernel's GRUB, SCHED_FLAG_RECLAIM):
 * a job that overruns its runtime goes on running on what the CPU's other reservations leave idle
 * instead of being throttled to its next period. INHERIT (0, what a zeroed GroupSpec says): as the
 * parent. */
typedef enum ReclaimPolicy {
        RECLAIM_INHERIT = 0,
        RECLAIM_OFF,
        RECLAIM_ON,
} ReclaimPolicy;

typedef enum AdmitOutcome {
        ADMIT_OK = 0,
        ADMIT_OVER_BUDGET,        /* the group (or its parent) has no room */
        ADMIT_BAD_PARAMS,         /* see Refusal.params */
        ADMIT_ABOVE_ONE_CPU,      /* a reservation (a single thread) above 100% */
        ADMIT_NO_SUCH_GROUP,
        ADMIT_GROUP_EXISTS,
        ADMIT_BAD_GROUP_NAME,
        ADMIT_NO_SUCH_RESERVATION,
        ADMIT_ALREADY_ADMITTED,   /* the thread already holds a reservation */
        ADMIT_ID_IN_USE,          /* re-adoption with an id that is taken */
        ADMIT_GROUP_NOT_EMPTY,
        ADMIT_BELOW_ALLOCATED,    /* a group made smaller than what it holds */
        ADMIT_IS_ROOT,            /* the root cannot be removed or resized */
        ADMIT_FORK_NONE,          /* the group's fork/threads policy is none */
        ADMIT_SPLIT_TOO_SMALL,    /* half the donor's runtime is below the minimum split */
        ADMIT_LIMIT_EXCEEDED,     /* the owner's per-user limit (Refusal.limit names which) */
        /* The admission module's (core/admission.h), for what is decided before the books: */
        ADMIT_BAD_FLAGS,          /* unknown admit flags */
        ADMIT_BAD_PID,            /* a pid or tid beyond the kernel's range */
        ADMIT_PID_ONE,            /* pid 1 is never admitted */
        ADMIT_NO_SUCH_THREAD,     /* no such thread in that process */
        ADMIT_KERNEL_THREAD,      /* a kernel thread */
        ADMIT_PROCESS_GONE,       /* the process ended before its owner was read */
        ADMIT_NOT_OWNER,          /* the thread belongs to another user than the caller */
        ADMIT_NOT_ALLOWED,        /* the group's users: list leaves the caller out */
        ADMIT_MOVE_NOT_ALLOWED,   /* moving into edfd's cgroups needs more than the caller has */
        ADMIT_NO_CGROUP,          /* a move into a group that has no (usable) cgroup */
        ADMIT_THREAD_GONE,        /* the thread ended before its policy was read */
        ADMIT_FOREIGN_DEADLINE,   /* the thread is SCHED_DEADLINE already, set outside edfd */
        ADMIT_RATE_LIMITED,       /* the caller's request rate limit */
        ADMIT_NOT_YOURS,          /* a reservation of another user */
        ADMIT_BAD_GROUP_BANDWIDTH, /* CreateGroup/SetGroup numbers out of bounds (Refusal.params says which) */
        _ADMIT_MAX,
} AdmitOutcome;

/* The upper-case name ("OVER_BUDGET"), static. */
const char *admit_outcome_to_string(AdmitOutcome o);

typedef struct Group Group;
typedef struct Reservation Reservation;

/* Why something was refused, with the numbers a person needs. Filled on refusals only; every
 * field has one meaning, and each outcome fills only the fields named for it (the rest are 0). */
typedef struct Refusal {
        AdmitOutcome outcome;
        ParamsOutcome params;        /* BAD_PARAMS, BAD_GROUP_BANDWIDTH: which parameter rule */
        const char *name;            /* the group's path (or the path asked for), or NULL */
        const char *user;            /* LIMIT_EXCEEDED, RATE_LIMITED: the owner's user name, shown as
                                      * "user NAME: " before the sentence; NULL: not shown */
        uint64_t id;                 /* ALREADY_ADMITTED: the id the thread holds; ID_IN_USE, NOT_YOURS and
                                      * NO_SUCH_RESERVATION: the id asked for */
        uint64_t pid, tid;           /* the process and thread asked for (BAD_PID, NO_SUCH_THREAD, ...) */
        uint32_t uid;                /* NOT_OWNER, NOT_ALLOWED: the caller's uid */
        uint32_t owner;              /* NOT_OWNER: the thread's owner */
        uint64_t flags;              /* BAD_FLAGS: the unknown bits; MOVE_NOT_ALLOWED: the move flag when
                                      * it was asked for, 0 when the group's placement moves */
        uint64_t free_bw;            /* OVER_BUDGET: what the group has free (0 when the root is over-committed) */
        uint64_t need_bw;            /* OVER_BUDGET, ABOVE_ONE_CPU, LIMIT_EXCEEDED ("bandwidth"): what the
                                      * request needs */
        uint64_t allocated_bw;       /* BELOW_ALLOCATED: what the group holds */
        uint64_t size_bw;            /* BELOW_ALLOCATED: the bandwidth the group was to shrink to */
        uint64_t n_groups;           /* GROUP_NOT_EMPTY: the groups it holds */
        uint64_t n_reservations;     /* GROUP_NOT_EMPTY: the reservations it holds */
        uint64_t n_held;             /* GROUP_NOT_EMPTY: the admissions still to come it holds bandwidth for */
        uint64_t split_runtime;      /* SPLIT_TOO_SMALL: the runtime a split would leave */
        uint64_t min_runtime;        /* SPLIT_TOO_SMALL: the group's minimum split runtime */
        const char *limit;           /* LIMIT_EXCEEDED: "bandwidth" or "reservations" */
        uint64_t limit_bw;           /* LIMIT_EXCEEDED ("bandwidth"): the owner's bandwidth limit */
        uint64_t held_bw;            /* LIMIT_EXCEEDED ("bandwidth"): what the owner holds */
        uint64_t limit_count;        /* LIMIT_EXCEEDED ("reservations"): the limit; RATE_LIMITED: requests per window */
        uint64_t held_count;         /* LIMIT_EXCEEDED ("reservations"): the reservations the owner holds */
        uint64_t need_count;         /* LIMIT_EXCEEDED ("reservations"): the reservations asked for */
        uint64_t window;             /* RATE_LIMITED: the window, ns */
        DlParams foreign;            /* FOREIGN_DEADLINE: the thread's parameters (runtime, period) */
        bool cgroup_root_unusable;   /* NO_CGROUP: the cgroup root is not usable at all */
} Refusal;

/* A sentence for a refusal: "audio: 12.5% free, request needs 20.0%". Returns buf. */
char *refusal_format(const Refusal *r, char *buf, size_t size);

/* What a group is made of: from the configuration or from CreateGroup. */
typedef struct GroupSpec {
        uint64_t runtime;
        uint64_t period;
        ForkPolicy fork;             /* _FORK_POLICY_UNSET: inherit from the parent */
        ForkPolicy threads;          /* _FORK_POLICY_UNSET: inherit from the parent */
        uint64_t min_split_runtime;  /* 0: inherit from the parent */
        ReclaimPolicy reclaim;       /* RECLAIM_INHERIT: as the parent */
        char *const *users;          /* NULL: inherit from the parent; copied */
        const char *cgroup;          /* cgroup directory relative to the cgroup root, or NULL; copied */
        bool dynamic;                /* created at run time (over D-Bus), not by the configuration */
} GroupSpec;

struct Group {
        char *path;                  /* "/" for the root, else "audio" or "audio/pipewire" */
        const char *name;            /* last component, points into path */
        Group *parent;
        Group *first_child, *next_sibling; /* children sorted by name */
        unsigned depth;              /* root 0 */

        uint64_t runtime, period;    /* the root's are 0: it has only a bandwidth */
        uint64_t bw;
        uint64_t allocated;          /* sum of children's and reservations' bw and held (+ unmanaged at root) */
        uint64_t held;               /* bandwidth held for admissions still to come (group_hold()) */
        size_t n_held;               /* ...how many */
        unsigned n_children;
        size_t n_reservations;
        Reservation *first_reservation; /* in admission order */
        Reservation *last_reservation;

        ForkPolicy fork, threads;    /* effective (inherited values resolved) */
        uint64_t min_split_runtime;  /* effective */
        bool reclaim;                /* effective: every admission into the group gets the RECLAIM flag */
        char **users;                /* effective, NULL-terminated; NULL: anyone */
        bool own_users;              /* users came with the group (GroupSpec.users), not from its parent */
        char *cgroup;                /* relative cgroup directory or NULL */
        bool dynamic;
        bool overridden;             /* a configured group whose bandwidth was changed at run time */

        Group *hash_next;            /* chain in Tree.groups for equal path hashes */
};

/* Everything the caller says about a thread it wants admitted. */
typedef struct ReservationSpec {
        uint64_t id;                 /* 0: take the next id; else re-adopt with this id (< UINT64_MAX) */
        uint32_t pid, tid;
        uint32_t uid;                /* the owner the limits are charged to */
        uint64_t identity;           /* the thread's identity (sched-dl.h), opaque to the core */
        DlParams params;             /* deadline 0 means the period */
        uint64_t flags;              /* opaque to the core */
        uint64_t donor;              /* re-adoption only: the id this one was split from, or 0 */
        uint64_t donated;            /* re-adoption only: the runtime the donor gave it */
        bool partitioned;            /* placed on one CPU of a partition (cpu), not globally */
        uint32_t cpu;                /* with partitioned: which; opaque to the tree */
} ReservationSpec;

struct Reservation {
        uint64_t id;
        Group *group;
        Reservation *group_prev, *group_next; /* in the group, in admission order */
        Reservation *proc_next;               /* others of the same process */
        uint32_t pid, tid, uid;
        uint64_t identity;
        DlParams params;
        uint64_t bw;
        uint64_t flags;
        uint64_t donor;                       /* id of the donor, or 0 */
        uint64_t donated;                     /* runtime the donor gave at the split: the most that goes back */
        bool partitioned;                     /* on one CPU of a partition, cpu; a split child shares it */
        uint32_t cpu;
};

/* What one owner holds, kept up to date by every operation so that per-user limits cost O(1). */
typedef struct UserUsage {
        uint32_t uid;
        size_t n;                    /* reservations */
        uint64_t bw;                 /* their bandwidth */
} UserUsage;

/* A per-user limit; UINT64_MAX means none. */
typedef struct UserLimits {
        uint64_t bandwidth;
        uint64_t reservations;
} UserLimits;

#define USER_LIMITS_NONE ((UserLimits) { UINT64_MAX, UINT64_MAX })

typedef struct Tree {
        Group *root;
        Hashmap groups;              /* hash_string(path) -> Group chain */
        Hashmap by_id;               /* id -> Reservation */
        Hashmap by_tid;              /* tid -> Reservation */
        Hashmap by_pid;              /* pid -> first Reservation of the process (chained by proc_next) */
        Hashmap by_uid;              /* uid -> UserUsage */
        uint64_t next_id;
        uint64_t capacity;           /* root bandwidth before unmanaged */
        uint64_t unmanaged;          /* bandwidth held by deadline threads edfd does not manage */
        DlLimits limits;
        size_t n_groups;             /* including the root */
        size_t n_reservations;
} Tree;

/* A new tree with an empty root of the given capacity and the root's policies.
 * Returns 0 or -ENOMEM. */
int tree_new(Tree **ret, uint64_t capacity, const DlLimits *limits, ForkPolicy fork, ForkPolicy threads,
             uint64_t min_split_runtime);
/* Frees the tree, its groups and reservations. Accepts NULL, returns NULL. */
Tree *tree_free(Tree *t);
/* The root's reclaim policy (a new tree's is off), which groups created afterwards inherit unless
 * they say otherwise. Call it before creating any group. */
void tree_set_root_reclaim(Tree *t, bool on);

/* Change the root capacity and the unmanaged charge. Never refuses: the kernel's truth is what it
 * is. Returns true when the root is now over-committed (allocated > bandwidth); every admission is
 * then refused until it fits again, nobody is evicted. */
bool tree_set_capacity(Tree *t, uint64_t capacity, uint64_t unmanaged);
/* true when some group's allocation exceeds its bandwidth (only possible at the root, after a
 * capacity drop). */
bool tree_overcommitted(const Tree *t);

/* Whether path is a valid group path: components of [A-Za-z0-9_.-] that start with a letter or a
 * digit (so never "." or ".."), not "cgroup.*", at most
 * GROUP_NAME_MAX bytes each, GROUP_PATH_MAX in all, GROUP_DEPTH_MAX deep. "/" is the root. */
#define GROUP_NAME_MAX 64
#define GROUP_PATH_MAX 255
#define GROUP_DEPTH_MAX 16
bool group_path_valid(const char *path);

/* The group at path ("/" for the root), or NULL. */
Group *tree_find_group(const Tree *t, const char *path);
/* Free bandwidth of g: bw - allocated, 0 when over-committed. */
uint64_t group_free_bw(const Group *g);
/* Whether g has room for `more` once `less` (part of its allocation) is given back; never while the
 * root is over-committed, since then every admission waits until the capacity fits again. */
bool group_has_room(const Tree *t, const Group *g, uint64_t less, uint64_t more);
/* Fill *ret (may be NULL) for "no room in g for need": the root's path and 0 free while the root
 * is over-committed, else g's path and free bandwidth. Returns ADMIT_OVER_BUDGET. */
int group_refuse_budget(const Tree *t, const Group *g, uint64_t need, Refusal *ret);

/* Create the group at path (its parent must exist) from spec. Returns 0 and the group in *ret (may
 * be NULL), a refusal (ADMIT_BAD_GROUP_NAME, ADMIT_NO_SUCH_GROUP for the parent,
 * ADMIT_GROUP_EXISTS, ADMIT_BAD_PARAMS for a zero period or runtime, ADMIT_OVER_BUDGET when the
 * parent lacks room) or -ENOMEM. */
int group_create(Tree *t, const char *path, const GroupSpec *spec, Group **ret, Refusal *ret_refusal);
/* Group runtimes must be at least 1024 ns (like a thread's) and periods non-zero; a group's runtime
 * may exceed its period (a group may span several CPUs). */

/* Change g's bandwidth. Refused below what g holds (ADMIT_BELOW_ALLOCATED), above what the parent
 * can give (ADMIT_OVER_BUDGET), for the root (ADMIT_IS_ROOT), for bad numbers (ADMIT_BAD_PARAMS). */
int group_set_bandwidth(Tree *t, Group *g, uint64_t runtime, uint64_t period, Refusal *ret_refusal);
/* Remove g. Refused while it holds groups, reservations or held bandwidth (ADMIT_GROUP_NOT_EMPTY)
 * and for the root (ADMIT_IS_ROOT). */
int group_remove(Tree *t, Group *g, Refusal *ret_refusal);
/* Hold bw in g for an admission decided now that takes its thread later (an admission at a program's
 * start): g's room shrinks by bw, as for a reservation of that bandwidth, until group_unhold(). 0, or
 * ADMIT_OVER_BUDGET (with *ret_refusal, may be NULL) when g has no room for bw; ADMIT_ABOVE_ONE_CPU
 * for a bw above one CPU. */
int group_hold(Tree *t, Group *g, uint64_t bw, Refusal *ret_refusal);
/* Give back bw held in g by group_hold() (the same number, once). */
void group_unhold(Tree *t, Group *g, uint64_t bw);
/* Pre-order walk: the group after g, or NULL after the last. Start with t->root. */
Group *group_next_preorder(const Group *g);

/* Admit a reservation into g. Checks the parameters (ADMIT_BAD_PARAMS, ADMIT_ABOVE_ONE_CPU), the
 * thread (ADMIT_ALREADY_ADMITTED), the id when given (ADMIT_ID_IN_USE) and g's room
 * (ADMIT_OVER_BUDGET). The reservation is owned by the tree; *ret may be NULL. */
int reservation_admit(Tree *t, Group *g, const ReservationSpec *spec, Reservation **ret, Refusal *ret_refusal);

/* What a release did besides freeing the reservation. */
typedef struct ReleaseEffect {
        Reservation *donor;          /* got the runtime back (its params are already updated), or NULL */
        DlParams donor_old;          /* the donor's parameters before, to roll back if the kernel refuses */
} ReleaseEffect;

/* Release r (the pointer is invalid afterwards). Never fails. Children split off r keep r's id
 * as their donor, but since ids are never reused their runtime will go back to the group. */
void reservation_release(Tree *t, Reservation *r, ReleaseEffect *ret_effect);

/* Change r's parameters, admission-checked like reservation_admit(). */
int reservation_update(Tree *t, Reservation *r, const DlParams *params, Refusal *ret_refusal);

/* Raise a reservation for a new child of donor, by the group's fork policy (is_thread: the
 * `threads` policy, else `fork`). Returns 0 with the child's reservation (the donor's params may be
 * changed: split), ADMIT_FORK_NONE, ADMIT_SPLIT_TOO_SMALL, ADMIT_ALREADY_ADMITTED, or -ENOMEM.
 * *ret_donor_old receives the donor's parameters before the split, for rollback. */
int reservation_split(Tree *t, Reservation *donor, bool is_thread, uint32_t child_pid, uint32_t child_tid,
                      uint64_t child_identity, Reservation **ret_child, DlParams *ret_donor_old,
                      Refusal *ret_refusal);
/* The same with the policy given by the caller (e.g. FORK_SPLIT where the owner's limits leave no
 * room for FORK_INHERIT). */
int reservation_split_as(Tree *t, Reservation *donor, ForkPolicy policy, uint32_t child_pid, uint32_t child_tid,
                         uint64_t child_identity, Reservation **ret_child, DlParams *ret_donor_old,
                         Refusal *ret_refusal);

/* Every reservation: start with reservation_next(t, NULL); group by group in pre-order, each
 * group's in admission order. NULL after the last. */
Reservation *reservation_next(const Tree *t, const Reservation *r);

/* What uid holds now; never NULL (a zero usage for an owner without reservations). */
UserUsage tree_user_usage(const Tree *t, uint32_t uid);
/* Whether uid may take add_bw more bandwidth and add_n more reservations under limits. Returns 0
 * or ADMIT_LIMIT_EXCEEDED with Refusal.limit naming the limit and its numbers (limit_count,
 * held_count, need_count for "reservations"; limit_bw, held_bw, need_bw for "bandwidth"). Changes
 * nothing. */
int user_limits_check(const Tree *t, uint32_t uid, const UserLimits *limits, uint64_t add_bw, size_t add_n,
                      Refusal *ret_refusal);

Reservation *tree_find_reservation(const Tree *t, uint64_t id);
Reservation *tree_find_thread(const Tree *t, uint32_t tid);
/* The first reservation of process pid (follow proc_next), or NULL. */
Reservation *tree_find_process(const Tree *t, uint32_t pid);
/* The donor for a new thread of process pid, whose creator the kernel does not name: the
 * process's reservation with the largest runtime, the lowest id among equals; NULL if none. */
Reservation *tree_thread_donor(const Tree *t, uint32_t pid);

/* Recompute every sum from scratch and compare with the books and the indexes. Returns 0, or
 * -EUCLEAN with a description of the first mismatch in buf. */
int tree_check(const Tree *t, char *buf, size_t size);

/* Bytes the books use for groups, reservations and indexes. */
size_t tree_memory(const Tree *t);
