/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The manager owns the event loop, the bus connection and the books, and wires the adapters: every
 * change to a reservation goes through one of the manager_* operations below, whether it came from
 * a bus call (manager-bus.c) or from the kernel (a fork or an exit seen by procmon). Each
 * operation is: decide in the core, record the intent, apply to the kernel, record the result, and
 * undo the books when the kernel says no. */

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
#include "core/tree.h"

typedef struct ManagerOptions {
        const char *config_path;   /* NULL: /etc/edfd/edfd.yaml, or the embedded default if absent */
        const char *state_dir;     /* NULL: /run/edfd */
        const char *cgroup_root;   /* NULL: from the configuration */
        bool embedded_config;      /* use the embedded default even if /etc/edfd/edfd.yaml exists */
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

typedef struct Manager {
        sd_event *event;
        sd_bus *bus;
        sd_event_source *sigterm, *sigint, *sighup, *procmon_source, *resync_timer, *status_timer;

        Tree *tree;
        Config *config;
        char *config_path;         /* what we loaded, or NULL for the embedded default */
        char *state_dir;
        char *cgroup_root;         /* effective */
        bool cgroup_root_forced;   /* given on the command line */
        bool cgroups_usable;
        bool cpu_max_missing_reported;
        State *state;

        KernelCapacity kcap;
        uint64_t unmanaged;
        unsigned unmanaged_threads;
        bool overcommit_reported, admission_off_reported;
        uint64_t fair_samples[3];  /* the fair servers' reserve as last measured, newest first */
        unsigned n_fair_samples;
        bool fair_reported;
        bool count_negative;       /* debugfs shows the kernel's deadline count below zero */
        /* Reading sched_rt_{runtime,period}_us makes the kernel recount its deadline bandwidth (see
         * capacity.h), which miscounts while an ended deadline task waits for its 0-lag time: the
         * sysctls are read again only once none of edfd's can be waiting (CLOCK_MONOTONIC ns), or
         * after RT_REREAD_MAX_NSEC regardless. */
        uint64_t recount_unsafe_until_ns, rt_read_ns;
        int64_t dl_bw_at_read;     /* debugfs's dl_bw->bw at that read, if dl_bw_known */
        bool dl_bw_known;
        sd_event_source *recount_timer;
        sd_event_source *bus_drain;     /* see manager-bus.c, on_bus_drain */
        uint64_t overcommit_logged_ns; /* CLOCK_MONOTONIC of the last overcommit error, 0 for none */

        Hashmap targets;           /* reservation id -> SchedTarget * */
        SchedPinCache pins;        /* of threads released by request, for their next Admit */
        CredsCache creds;
        UserNames names;           /* flushed at every reload and resync */
        PolkitRegistry polkit;
        Hashmap rates;             /* caller uid + 1 -> RateWindow * */

        int procmon_fd;
        ProcmonStats pstats;
        uint64_t events_seen, events_lost, resyncs, unseen_children;
        uint64_t last_look_ticks;  /* boot time (clock ticks) of the last look for unseen children */
        Hashmap unraised;          /* pid + 1 of children seen and left SCHED_OTHER since that look */

        bool stopping;

        /* Admissions waiting for the kernel to take the bandwidth (manager_admit()). */
        struct PendingAdmit *pending_admits;

        /* Runtime a child's end gives back to its donor, which the kernel refused (EBUSY) for the
         * moment: retried from return_timer while the group keeps the room (release_books()). */
        struct PendingReturn *pending_returns;
        sd_event_source *return_timer;
        uint64_t return_delay_usec; /* its current interval: backs off while the kernel refuses */

        /* The unique bus names that called Subscribe(): signals go out only while there is one. */
        char **subscribers;
        size_t n_subscribers;

        /* Signals emitted while a method call is handled go out after its reply. */
        bool defer_signals;
        sd_bus_message *deferred[8];
        size_t n_deferred;
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
        uint32_t pid, tid;
        const char *group;         /* "" = default group */
        DlParams params;
        uint64_t flags;
        Caller caller;
        bool may_move;             /* root, or polkit's manage action allowed it */
        AdmitDone done;            /* see manager_admit(); NULL: never wait in the background */
        void *done_userdata;
} AdmitRequest;

/* Admit a thread. Returns 0 with *ret_id, or -1 with *error. When the kernel refuses the bandwidth
 * with EBUSY although the books have room (bandwidth on its way back at a 0-lag time, or taken by a
 * thread edfd does not manage), the admission is retried from a timer (50 us doubling to 5 ms, for
 * EBUSY_RETRY_NSEC) while the event loop serves everyone else: then, if req->done is set, 1 is
 * returned and req->done is called exactly once later, with the id or the error (KernelRefused at
 * the end of the window; also when edfd stops first). Without req->done the retry sleeps in place. */
int manager_admit(Manager *m, const AdmitRequest *req, uint64_t *ret_id, OpError *error);
int manager_update(Manager *m, const Caller *c, uint64_t id, const DlParams *p, OpError *error);
/* reason is what the ReservationRemoved signal says. */
int manager_release(Manager *m, const Caller *c, Reservation *r, const char *reason, OpError *error);
int manager_group_create(Manager *m, const char *path, uint64_t runtime, uint64_t period, OpError *error);
int manager_group_set(Manager *m, const char *path, uint64_t runtime, uint64_t period, OpError *error);
int manager_group_remove(Manager *m, const char *path, OpError *error);
int manager_reload(Manager *m, OpError *error);
/* Check every reservation against the kernel and re-measure capacity. */
int manager_resync(Manager *m, const char *why);

/* Whether caller may act on r (root, or the owner). */
bool manager_may_touch(const Manager *m, const Caller *c, const Reservation *r);
/* Count a request of a non-root caller against its rate limit: 0, or -1 with *error filled. */
int manager_rate_check(Manager *m, const Caller *c, OpError *error);

/* Bus side (manager-bus.c). */
int manager_bus_register(Manager *m);
int manager_bus_attach(Manager *m);
void manager_bus_emit_added(Manager *m, const Reservation *r, const char *reason);
void manager_bus_emit_removed(Manager *m, uint64_t id, uint32_t pid, uint32_t tid, const char *group,
                              const char *reason);
void manager_bus_emit_changed(Manager *m, const Reservation *r, const char *reason);
void manager_bus_emit_split(Manager *m, uint64_t donor, uint64_t child);
void manager_bus_emit_groups_changed(Manager *m);
