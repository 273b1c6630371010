/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The manager owns the event loop, the bus connection and the books, and wires the adapters: every
 * change to a reservation goes through one of the manager_* operations below, whether it came from
 * a bus call (manager-bus.c) or from the kernel (a fork or an exit seen by procmon). Each
 * operation is: decide in the core, record the intent, apply to the kernel, record the result, and
 * undo the books when the kernel says no. The operations live in rooms, one file each (manager-
 * admit.c, -release.c, -groups.c, -config.c, -procs.c, -adopt.c); manager.c keeps the lifecycle and
 * the status. This header is the face main.c and manager-bus.c see. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "authz.h"
#include "capacity.h"
#include "conf.h"
#include "basic/hashmap.h"
#include "procmon.h"
#include "core/rate.h"
#include "sched-dl.h"
#include "state.h"
#include "throttle.h"
#include "core/tree.h"

typedef struct ManagerOptions {
        const char *config_path;   /* NULL: /etc/edfd/edfd.yaml, or the embedded default if absent */
        const char *state_dir;     /* NULL: /run/edfd */
        const char *cgroup_root;   /* NULL: from the configuration */
        bool embedded_config;      /* use the embedded default even if /etc/edfd/edfd.yaml exists */
        bool no_throttle_count;    /* do not load the throttle counter (throttle.h) */
} ManagerOptions;

/* Why an operation did not happen. manager-bus.c maps kinds to D-Bus errors. */
typedef enum OpFailure {
        OP_REFUSED = 1,            /* the core said no: see refusal */
        OP_INVALID,                /* bad arguments */
        OP_NO_SUCH_THREAD,
        OP_NO_SUCH_RESERVATION,
        OP_FOREIGN_DEADLINE,
        OP_KERNEL_REFUSED,
        OP_PERMISSION_DENIED,
        OP_LIMIT_EXCEEDED,
        OP_INVALID_CONFIG,
        OP_ERRNO,                  /* see err */
} OpFailure;

typedef struct OpError {
        OpFailure kind;
        Refusal refusal;
        int err;
        char message[512];
} OpError;

typedef struct ManagerBus ManagerBus;   /* the bus half's own state, see manager-bus.h */
struct PendingAdmit;
struct PendingReturn;

/* The rooms' state (manager-*.c); each is touched by its room, and read elsewhere only where said. */

/* manager-admit.c: admissions waiting for the kernel to take the bandwidth (manager_admit()), and
 * the callers' rate windows. */
typedef struct AdmitRoom {
        struct PendingAdmit *pending;
        Hashmap rates;             /* caller uid + 1 -> RateWindow * */
} AdmitRoom;

/* manager-release.c: runtime a child's end gives back to its donor, which the kernel refused (EBUSY)
 * for the moment: retried from the timer while the group keeps the room. */
typedef struct ReleaseRoom {
        struct PendingReturn *pending;
        sd_event_source *timer;
        uint64_t delay_usec;       /* its current interval: backs off while the kernel refuses */
} ReleaseRoom;

/* manager-groups.c: the cgroup v2 directories of groups (root and usable are read by admissions). */
typedef struct GroupsRoom {
        char *root;                /* effective */
        bool root_forced;          /* given on the command line */
        bool usable;
        bool cpu_max_missing_reported;
} GroupsRoom;

/* manager-place.c: the partitions edfd made at start and the CPU of each (read by the status). */
typedef struct PlaceCpuInfo {
        uint32_t cpu;
        char name[33];             /* the partition's name (CPUSET_NAME_MAX + 1) */
        bool invalid;              /* the poll found it invalid or gone: nothing is placed there */
} PlaceCpuInfo;
typedef struct PlaceRoom {
        struct Cpusets *cpusets;   /* the adapter (cpuset.h), NULL before place_setup() */
        const char *v1_mount, *v2_mount; /* NULL: the machine's */
        bool active;               /* the configuration's partitions are made */
        bool global_none;          /* ...and they take every online CPU: none is left for global placement */
        char *unavailable;         /* why partitioned placement is refused here, or NULL */
        PlaceCpuInfo *cpus;        /* one per partition, in the configuration's order */
        size_t n_cpus;
        sd_event_source *poll_timer; /* cpusets_poll(): a partition can turn invalid unannounced */
        uint64_t *repin_warned;    /* the reservations whose thread could not be pinned again, said once */
        size_t n_repin_warned;
        struct PlaceUndo { uint64_t id; uint32_t cpu; } *plan_moves; /* a dry run's moves for room, undone */
        size_t n_plan_moves;       /* ...by place_plan_undo() before the Plan returns */
} PlaceRoom;

/* manager-procs.c: the proc connector, the resync timer and what they counted (read by the bus
 * half's properties and by the status). */
typedef struct ProcsRoom {
        int fd;
        sd_event_source *source, *resync_timer;
        ProcmonStats stats;
        uint64_t events_seen, events_lost, resyncs, unseen_children;
        uint64_t last_look_ticks;  /* boot time (clock ticks) of the last look for unseen children */
        Hashmap unraised;          /* pid + 1 of children seen and left SCHED_OTHER since that look */
} ProcsRoom;

/* manager-startup.c: admissions that wait for their program's start (AdmitAtStart). */
typedef struct StartupRoom {
        Hashmap watches;           /* pid -> struct StartupWatch, each with its own timer */
        size_t n;                  /* watches */
        size_t n_users;            /* ...of callers other than root */
} StartupRoom;

/* manager-plan.c: what each user's Plan calls used of their work budget (manager-plan.h). */
typedef struct PlanRoom {
        Hashmap budgets;           /* caller uid + 1 -> PlanBudgetWindow * */
} PlanRoom;

typedef struct Manager {
        sd_event *event;
        sd_bus *bus;
        sd_event_source *sigterm, *sigint, *sighup, *status_timer;

        Tree *tree;
        Config *config;
        char *config_path;         /* what we loaded, or NULL for the embedded default */
        char *state_dir;
        State *state;
        Capacity *capacity;        /* what the kernel can give: see capacity.h */
        Throttles *throttles;      /* the throttle counter, on or off with the reason: see throttle.h */
        sd_event_source *throttle_timer; /* looks at the counts once a second while someone subscribed */
        bool overcommit_reported;
        uint64_t overcommit_logged_ns; /* CLOCK_MONOTONIC of the last overcommit error, 0 for none */

        Hashmap targets;           /* reservation id -> SchedTarget * */
        SchedPinCache pins;        /* of threads released by request, for their next Admit */
        UserNames names;           /* flushed at every reload and resync */

        bool stopping;

        AdmitRoom admit;
        ReleaseRoom release;
        GroupsRoom groups;
        ProcsRoom procs;
        PlaceRoom place;
        PlanRoom plan;
        StartupRoom startup;
        ManagerBus *bus_half;      /* owned; only manager-bus.c looks inside */
} Manager;

/* Create the manager: read the configuration, open the state directory, measure the kernel. Logs
 * and returns negative errno on failure. */
int manager_new(Manager **ret, const ManagerOptions *opts);
/* Free everything; admitted threads keep their parameters (that is the point). NULL-safe. */
Manager *manager_free(Manager *m);
/* Connect to the bus, re-adopt what the state describes, start listening, take the name and tell
 * systemd READY=1. */
int manager_start(Manager *m);
/* Run the loop until SIGTERM/SIGINT. */
int manager_run(Manager *m);

/* The operations. Each returns 0, or -1 with *error filled. */
/* The outcome of an Admit that had to wait: the id, or error (then id is 0). */
typedef void (*AdmitDone)(Manager *m, void *userdata, uint64_t id, const OpError *error);

typedef struct AdmitRequest {
        uint64_t pid, tid;         /* as asked; 0: the caller's process, its main thread */
        const char *group;         /* "" = default group */
        DlParams params;
        uint64_t flags;
        Caller caller;
        bool may_move;             /* root, or polkit's manage action allowed it */
        AdmitDone done;            /* see manager_admit(); NULL: never wait in the background */
        void *done_userdata;
        const uint32_t *forced_cpu; /* a split's stage: this CPU of a partitioned group, or refused */
} AdmitRequest;

/* A split reservation (manager-place.c): the job (C, D, T) of one process run by two of its threads
 * as stage 1 (C1, C1, T) on one CPU and stage 2 (C - C1, D - C1, T) on another, released C1 after
 * stage 1 (core/placement.h computes C1). Both stages or neither. */
typedef struct SplitRequest {
        uint64_t pid, tid1, tid2;
        const char *group;         /* "" = default group; must be of partitioned placement */
        DlParams params;
        uint64_t flags;
        Caller caller;
        bool may_move;
} SplitRequest;
typedef struct SplitResult {
        uint64_t id1, id2;
        DlParams stage1, stage2;
        uint32_t cpu1, cpu2;
} SplitResult;
/* Each partition's CPU, capacity and what its reservations hold (BW units), for ListPartitions: a
 * new array (the caller frees it; NULL with 0 when none is made), or negative errno. */
typedef struct PlaceLoad {
        const char *name;          /* valid until the next place_setup() */
        uint32_t cpu;
        uint64_t capacity, allocated;
        uint32_t reservations;
} PlaceLoad;
int place_loads(Manager *m, PlaceLoad **ret, size_t *ret_n);
/* Why partitioned (or global) placement is refused here, or "": for ListPartitions. */
const char *place_note(const Manager *m);
/* Whether g's placement is partitioned (its configuration's `placement:`, inherited). */
bool place_partitioned(const Manager *m, const Group *g);

/* Admit a split. Returns 0 with *ret, or -1 with *error (nothing admitted). */
int manager_admit_split(Manager *m, const SplitRequest *req, SplitResult *ret, OpError *error);

/* Admit a thread. Returns 0 with *ret_id, or -1 with *error. When the kernel refuses the bandwidth
 * with EBUSY although the books have room (bandwidth on its way back at a 0-lag time, or taken by a
 * thread edfd does not manage), the admission is retried from a timer (50 us doubling to 5 ms, for
 * EBUSY_RETRY_NSEC) while the event loop serves everyone else: then, if req->done is set, 1 is
 * returned and req->done is called exactly once later, with the id or the error (KernelRefused at
 * the end of the window; also when edfd stops first). Without req->done the retry sleeps in place. */
int manager_admit(Manager *m, const AdmitRequest *req, uint64_t *ret_id, OpError *error);
/* The checks of an Admit's arguments alone (ids, group path, flags), for the bus before rate limits
 * and polkit: 0, or -1 with *error. manager_admit() makes them again. */
int manager_admit_check_args(const AdmitRequest *req, OpError *error);
/* Every check and decision of manager_admit() (the core's rules, the room, the placement), and
 * nothing applied or recorded: 0 with the group it would go into (*ret_group, may be NULL) when it
 * would be admitted now, or -1 with *error. */
int manager_admit_decide(Manager *m, const AdmitRequest *req, const Group **ret_group, OpError *error);
/* Admit req's process (pid = tid, its main thread) when its program starts: after its next exec,
 * at its first sleep, or bound_ns after the exec (manager-startup.c). Decided now as
 * manager_admit_decide() decides (the room, the limits, the placement), with the caller's watches
 * counted as its reservations, its bandwidth held in that group from now on, and decided again at
 * the start, where a refusal is logged. Journaled: a restarted edfd takes it up. A process that
 * does not exec within the configuration's exec-timeout is dropped. Returns 0, or -1 with *error. */
int manager_admit_at_start(Manager *m, const AdmitRequest *req, uint64_t bound_ns, OpError *error);
int manager_update(Manager *m, const Caller *c, uint64_t id, const DlParams *p, OpError *error);
/* reason is what the ReservationRemoved signal says. */
int manager_release(Manager *m, const Caller *c, Reservation *r, const char *reason, OpError *error);
/* Release every reservation of process pid, all or nothing on permission (the caller's own, or root):
 * 0 with *ret_n, or -1 with *error (a release that failed leaves the ones before it released). */
int manager_release_process(Manager *m, const Caller *c, uint32_t pid, uint32_t *ret_n, OpError *error);
/* The checks of CreateGroup's and SetGroup's arguments alone (a path other than the root, a group
 * bandwidth), and of RemoveGroup's path, for the bus before polkit: 0, or -1 with *error. */
int manager_group_check_args(const char *path, uint64_t runtime, uint64_t period, OpError *error);
int manager_group_check_path(const char *path, OpError *error);
/* users: the new group's users: list, NULL-terminated ({ NULL }: root only), or NULL to inherit
 * its parent's (CreateGroup); CreateGroupWithUsers checks it with manager_group_check_users(). */
#define MANAGER_GROUP_USERS_MAX 64
int manager_group_check_users(char *const *users, OpError *error);
int manager_group_create(Manager *m, const char *path, uint64_t runtime, uint64_t period, char *const *users,
                         OpError *error);
int manager_group_set(Manager *m, const char *path, uint64_t runtime, uint64_t period, OpError *error);
int manager_group_remove(Manager *m, const char *path, OpError *error);
int manager_reload(Manager *m, OpError *error);
/* Check every reservation against the kernel and re-measure capacity. */
int manager_resync(Manager *m, const char *why);

/* Whether an admission into group (NULL or "": the default group) moves the whole process into
 * edfd's cgroups: partitioned placement on cgroup v2 (v1 moves the thread alone, in the cpuset
 * hierarchy only). Such an admission needs what the move flag needs (manager-place.c). */
bool manager_admission_moves_process(Manager *m, const char *group);

/* Count a request of a non-root caller against its rate limit: 0, or -1 with *error filled. */
int manager_rate_check(Manager *m, const Caller *c, OpError *error);
