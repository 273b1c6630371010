/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef EDFD_EDFD_H
#define EDFD_EDFD_H

/* libedfd: guaranteed CPU bandwidth from edfd, for applications.
 *
 *     #include <edfd/edfd.h>      cc ... $(pkg-config --cflags --libs libedfd)
 *
 * One handle (edfd) is one connection to edfd on the system bus (DBUS_SYSTEM_BUS_ADDRESS when
 * set). Every call that can fail returns 0 (or a count) on success and a negative errno on
 * failure; edfd_error_name() and edfd_error_message() then say why: the D-Bus error name and
 * edfd's own message ("audio: 10% free, request needs 20%"). The errno of each
 * edfd error is listed in libedfd(3). Nothing in the library aborts, prints or exits: a NULL
 * pointer or a value out of range is -EINVAL with a message.
 *
 * Requests, snapshots, splits and events are opaque and read with accessors, so that fields can be
 * added without breaking the ABI (libedfd.so.0). Times are nanoseconds; bandwidths are fractions of
 * one CPU in fixed point with EDFD_BW_UNIT as one whole CPU, the kernel's own unit.
 *
 * Threads: a handle is used by one thread at a time (give each thread its own, or lock around
 * one); distinct handles are independent. fork(): a handle belongs to the process that opened it;
 * in the child every call on an inherited handle fails with -ECHILD, and the child opens its own
 * (edfd_close() of the inherited handle is safe in the child and does not touch the parent's
 * connection). */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One whole CPU in the bandwidth unit (runtime / period * EDFD_BW_UNIT). */
#define EDFD_BW_UNIT (UINT64_C(1) << 20)
/* A bandwidth that is not bounded (a group without a size of its own). */
#define EDFD_BW_UNLIMITED UINT64_MAX

/* Admission flags (edfd_request_set_flags()); the same bits as on the bus. */
#define EDFD_ADMIT_RECLAIM UINT64_C(1)        /* SCHED_FLAG_RECLAIM */
#define EDFD_ADMIT_OVERRUN_SIGNAL UINT64_C(2) /* SCHED_FLAG_DL_OVERRUN: SIGXCPU on overrun */
#define EDFD_ADMIT_MOVE UINT64_C(4)           /* also move the process into the group's cgroup */

/* --- the connection: edfd_open(3) --- */

typedef struct edfd edfd;

/* Connect to the system bus. No round trip happens here: a missing edfd shows at the first call.
 * Returns 0 with the handle in *ret, or negative errno (-ENOMEM, or why the bus is unreachable). */
int edfd_open(edfd **ret);
/* Close and free e; accepts NULL; returns NULL. */
edfd *edfd_close(edfd *e);
/* Why the last failed call on e failed: the D-Bus error name ("org.edfd.Admission1.Error.OverBudget",
 * "org.freedesktop.DBus.Error.ServiceUnknown"), or NULL when the failure was local (bad arguments,
 * no connection). Valid until the next call on e. */
const char *edfd_error_name(const edfd *e);
/* The message of the last failed call on e: edfd's own text, or the library's ("the request has no
 * runtime"). "" when the last call succeeded. Valid until the next call on e. */
const char *edfd_error_message(const edfd *e);

/* --- admission: edfd_admit(3) --- */

typedef struct edfd_request edfd_request;

/* A new request: no times yet, edfd's default group, no flags, for the calling thread. Returns 0
 * with the request in *ret, or -ENOMEM / -EINVAL. */
int edfd_request_new(edfd_request **ret);
/* Free q; accepts NULL; returns NULL. */
edfd_request *edfd_request_free(edfd_request *q);
/* The runtime each period (ns, > 0). Returns 0, or -EINVAL for a NULL request or 0. */
int edfd_request_set_runtime(edfd_request *q, uint64_t runtime);
/* The relative deadline (ns); 0, the default, means equal to the period. Returns 0 or -EINVAL. */
int edfd_request_set_deadline(edfd_request *q, uint64_t deadline);
/* The period (ns, > 0). Returns 0, or -EINVAL for a NULL request or 0. */
int edfd_request_set_period(edfd_request *q, uint64_t period);
/* The group's path ("audio/pipewire"); NULL or "" for edfd's default group. The string is copied.
 * Returns 0, -ENOMEM or -EINVAL. */
int edfd_request_set_group(edfd_request *q, const char *group);
/* EDFD_ADMIT_* bits. Returns 0 or -EINVAL (NULL request); unknown bits are edfd's to refuse. */
int edfd_request_set_flags(edfd_request *q, uint64_t flags);
/* Whom to admit: thread tid of process pid; tid 0 for its main thread (tid = pid). pid 0, the
 * default, means the calling thread (its process and thread id at the time of the call). Returns 0,
 * or -EINVAL for a NULL request or a negative id. */
int edfd_request_set_thread(edfd_request *q, pid_t pid, pid_t tid);

/* Admit as q says. Returns 0 with the reservation's id in *ret_id (may be NULL), or negative
 * errno: -ENOSPC over budget, -EINVAL invalid parameters, -ENOENT no such group, -EACCES not
 * allowed, ... (libedfd(3)). When q is the calling thread, the call waits for edfd's answer without
 * sleeping, so that edfd can move the thread to another CPU (partitioned placement). */
int edfd_admit(edfd *e, const edfd_request *q, uint64_t *ret_id);

/* Admit q's process when its program starts: edfd watches it, and admits its main thread as
 * edfd_admit() would once its executable has changed (its next exec) and it first sleeps after
 * that, or bound_ns (> 0, at most an hour) after the exec, whichever comes first. The exec, the
 * dynamic loader and the program's start-up so run as SCHED_OTHER, not on the first budgets. q's
 * thread is a process's main thread (tid 0 or equal to pid); pid 0 means the calling process, which
 * is to exec next. The request is decided now as edfd_admit() would decide it, but nothing is
 * booked: it is decided again at the start, and a refusal then is in edfd's log; book the room
 * first (a group of its own) where that must not happen. Returns 0 once edfd watches, or
 * edfd_admit()'s negative errno (-ENOSPC, -ENOENT, -ESRCH, -EACCES, ...), or -EINVAL. */
int edfd_admit_at_start(edfd *e, const edfd_request *q, uint64_t bound_ns);

typedef struct edfd_split edfd_split;

/* Admit one job run as two stages by two threads of one process on two CPUs of a partitioned group:
 * stage 1 by q's thread, stage 2 by thread tid2 of the same process. Both or neither. Returns 0
 * with the two reservations in *ret (free with edfd_split_free()), or negative errno. */
int edfd_admit_split(edfd *e, const edfd_request *q, pid_t tid2, edfd_split **ret);
/* Free s; accepts NULL; returns NULL. */
edfd_split *edfd_split_free(edfd_split *s);
/* Stage 1 or 2 of s: its reservation id, its runtime (ns) and its CPU. 0 for another stage. */
uint64_t edfd_split_id(const edfd_split *s, unsigned stage);
uint64_t edfd_split_runtime(const edfd_split *s, unsigned stage);
unsigned edfd_split_cpu(const edfd_split *s, unsigned stage);

/* --- the dry run against the running edfd: edfd_plan(3) --- */

/* A task set decided by edfd now, in order, each task as edfd_admit() (or edfd_admit_split(), when
 * split is allowed and no CPU takes it whole) would decide it, nothing applied. */
typedef struct edfd_plan edfd_plan;
int edfd_plan_new(edfd_plan **ret);
edfd_plan *edfd_plan_free(edfd_plan *p);

/* Add a task: name (for the caller), group ("" or NULL: the default group), times in ns (deadline 0:
 * the period), split: whether it may run as two stages. -E2BIG beyond 1024 tasks. */
int edfd_plan_add(edfd_plan *p, const char *name, const char *group, uint64_t runtime, uint64_t deadline,
                  uint64_t period, int split);
/* Ask edfd (Plan); the answers stay in p until the next run or add. */
int edfd_plan_run(edfd *e, edfd_plan *p);
size_t edfd_plan_size(const edfd_plan *p);
/* Task i's answer (NULL / -1 / 0 before a run): "placed", "split" or "refused"; the group decided
 * for; the CPU of stage 1 or 2 (a placed task is stage 1; -1: global or none); the runtime of each
 * stage (a placed task's whole runtime is stage 1's); the test that decided; why it was refused. */
const char *edfd_plan_result(const edfd_plan *p, size_t i);
const char *edfd_plan_group(const edfd_plan *p, size_t i);
int edfd_plan_cpu(const edfd_plan *p, size_t i, unsigned stage);
uint64_t edfd_plan_runtime(const edfd_plan *p, size_t i, unsigned stage);
const char *edfd_plan_test(const edfd_plan *p, size_t i);
const char *edfd_plan_reason(const edfd_plan *p, size_t i);

/* Change reservation id to new times (deadline 0: equal to the period). Returns 0 or negative errno
 * (-ENXIO: no such reservation). */
int edfd_update(edfd *e, uint64_t id, uint64_t runtime, uint64_t deadline, uint64_t period);
/* Give reservation id back. Returns 0 or negative errno (-ENXIO: no such reservation). */
int edfd_release(edfd *e, uint64_t id);
/* Give back the reservation of thread tid (0: the calling thread). Returns 0 or negative errno
 * (-ENXIO: the thread holds none). */
int edfd_release_thread(edfd *e, pid_t tid);
/* Give back every reservation of process pid (0: the calling process). Returns the number released
 * (at least 1), or negative errno (-ENXIO: the process held none). */
int edfd_release_process(edfd *e, pid_t pid);
/* The end of a job: the rest of this period's runtime is given up and the thread sleeps until its
 * next period (sched_yield() of a SCHED_DEADLINE thread). Returns 0 or negative errno. */
int edfd_job_done(void);

/* --- groups and the daemon: edfd_group_create(3) --- */

/* Create group path (its parent must exist) with runtime per period. Returns 0 or negative errno
 * (-EEXIST, -ENOENT for a missing parent, -ENOSPC when the parent has not that much free). */
int edfd_group_create(edfd *e, const char *path, uint64_t runtime, uint64_t period);
/* The same, the group open only to users (NULL-terminated user names; { NULL }: root only) instead
 * of its parent's users: list (LIBEDFD_0.1). */
int edfd_group_create_with_users(edfd *e, const char *path, uint64_t runtime, uint64_t period,
                                 const char *const *users);
/* Resize group path. Returns 0 or negative errno (-ENOSPC when its children need more). */
int edfd_group_set(edfd *e, const char *path, uint64_t runtime, uint64_t period);
/* Remove group path, which must be empty. Returns 0 or negative errno (-ENOTEMPTY). */
int edfd_group_remove(edfd *e, const char *path);
/* Make edfd read its configuration again. Returns 0 or negative errno (-EBADMSG: invalid, nothing
 * changed). */
int edfd_reload(edfd *e);
/* A round trip with no effect: value comes back in *ret (may be NULL). Returns 0 or negative errno.
 * For probing that edfd answers, and for benchmarks. */
int edfd_echo(edfd *e, uint64_t value, uint64_t *ret);

/* --- what edfd holds: edfd_snapshot_fetch(3) --- */

typedef struct edfd_snapshot edfd_snapshot;
typedef struct edfd_reservation edfd_reservation;
typedef struct edfd_group edfd_group;
typedef struct edfd_partition edfd_partition;

/* What a snapshot asks for (bits; EDFD_SNAPSHOT_ALL for everything). */
#define EDFD_SNAPSHOT_RESERVATIONS 1u
#define EDFD_SNAPSHOT_GROUPS 2u
#define EDFD_SNAPSHOT_STATUS 4u
#define EDFD_SNAPSHOT_PARTITIONS 8u
#define EDFD_SNAPSHOT_ALL 15u

/* Ask edfd for the parts in what, all at once (one round trip; the answers describe one moment
 * unless something changed in the microseconds between them). Returns 0 with the snapshot in *ret
 * (free with edfd_snapshot_free()), or negative errno (-EINVAL for what 0 or unknown bits). */
int edfd_snapshot_fetch(edfd *e, unsigned what, edfd_snapshot **ret);
/* Free s and every string and object read from it; accepts NULL; returns NULL. */
edfd_snapshot *edfd_snapshot_free(edfd_snapshot *s);

/* The reservations (EDFD_SNAPSHOT_RESERVATIONS): n, and the i-th (NULL when i >= n). Owned by s. */
size_t edfd_snapshot_n_reservations(const edfd_snapshot *s);
const edfd_reservation *edfd_snapshot_reservation(const edfd_snapshot *s, size_t i);
uint64_t edfd_reservation_id(const edfd_reservation *v);
pid_t edfd_reservation_pid(const edfd_reservation *v);
pid_t edfd_reservation_tid(const edfd_reservation *v);
const char *edfd_reservation_group(const edfd_reservation *v);
uint64_t edfd_reservation_runtime(const edfd_reservation *v);
uint64_t edfd_reservation_deadline(const edfd_reservation *v);
uint64_t edfd_reservation_period(const edfd_reservation *v);
uint64_t edfd_reservation_bandwidth(const edfd_reservation *v);
uint64_t edfd_reservation_flags(const edfd_reservation *v);
/* The reservation this one was split from at a fork (0: none), and the runtime it gave. */
uint64_t edfd_reservation_split_from(const edfd_reservation *v);
uint64_t edfd_reservation_donated(const edfd_reservation *v);
uid_t edfd_reservation_uid(const edfd_reservation *v);
/* Its CPU under partitioned placement, or -1 under global placement. */
int edfd_reservation_cpu(const edfd_reservation *v);
/* How often its thread was throttled since it was admitted (left the CPU with its runtime used up
 * before its period ended; ending a job with edfd_job_done() is not counted), or -1 when edfd does
 * not count (edfd_status_throttle_counting() says why) or is older. Since 0.1. */
int64_t edfd_reservation_throttles(const edfd_reservation *v);
/* Its thread's possible lock waits since it was admitted: how often it was woken from a futex wait
 * that does not inherit priority (a default mutex, a condition variable, a semaphore) by a thread
 * without a deadline, which the scheduler runs after it however urgent its deadline (a possible
 * priority inversion; a PTHREAD_PRIO_INHERIT mutex lends the holder the waiter's deadline:
 * libedfd(3)). -1 when edfd does not count them (edfd_status_lock_wait_counting() says why) or is
 * older. Since 0.2. */
int64_t edfd_reservation_lock_waits(const edfd_reservation *v);

/* The groups (EDFD_SNAPSHOT_GROUPS), in edfd's order. */
size_t edfd_snapshot_n_groups(const edfd_snapshot *s);
const edfd_group *edfd_snapshot_group(const edfd_snapshot *s, size_t i);
const char *edfd_group_path(const edfd_group *g);
uint64_t edfd_group_runtime(const edfd_group *g);
uint64_t edfd_group_period(const edfd_group *g);
uint64_t edfd_group_bandwidth(const edfd_group *g);     /* EDFD_BW_UNLIMITED: not bounded */
uint64_t edfd_group_allocated(const edfd_group *g);
unsigned edfd_group_n_reservations(const edfd_group *g);
unsigned edfd_group_n_groups(const edfd_group *g);
const char *edfd_group_cgroup(const edfd_group *g);     /* "" when none */
const char *edfd_group_fork(const edfd_group *g);       /* the fork policy: "split", ... */
const char *edfd_group_threads(const edfd_group *g);    /* the thread policy */
/* Who may use the group: 1 for anyone; else 0 and the users (a NULL-terminated array, empty:
 * nobody but root). */
int edfd_group_anyone(const edfd_group *g);
const char *const *edfd_group_users(const edfd_group *g);
int edfd_group_dynamic(const edfd_group *g);            /* made at run time (CreateGroup) */
int edfd_group_overridden(const edfd_group *g);         /* configured, resized at run time */
uint64_t edfd_group_min_split_runtime(const edfd_group *g);
/* Whether its reservations reclaim unused bandwidth (SCHED_FLAG_RECLAIM by the group's `reclaim:`):
 * 1 or 0; -1 when edfd is older than the key. Since 0.2. */
int edfd_group_reclaim(const edfd_group *g);
/* Its placement, "global" or "partitioned"; "" when edfd is older than this field. Since 0.2. */
const char *edfd_group_placement(const edfd_group *g);

/* The partitions (EDFD_SNAPSHOT_PARTITIONS): none under global placement. has_partitions is 0 when
 * the snapshot did not ask, or edfd is older than partitions. The note says why placement is
 * refused here ("" when nothing is). */
int edfd_snapshot_has_partitions(const edfd_snapshot *s);
const char *edfd_snapshot_placement_note(const edfd_snapshot *s);
size_t edfd_snapshot_n_partitions(const edfd_snapshot *s);
const edfd_partition *edfd_snapshot_partition(const edfd_snapshot *s, size_t i);
const char *edfd_partition_name(const edfd_partition *p);
unsigned edfd_partition_cpu(const edfd_partition *p);
uint64_t edfd_partition_capacity(const edfd_partition *p);
uint64_t edfd_partition_allocated(const edfd_partition *p);
unsigned edfd_partition_n_reservations(const edfd_partition *p);

/* The daemon's properties (EDFD_SNAPSHOT_STATUS); 0 or "" when the snapshot did not ask. */
const char *edfd_status_version(const edfd_snapshot *s);
uint64_t edfd_status_capacity(const edfd_snapshot *s);
uint64_t edfd_status_allocated(const edfd_snapshot *s);
uint64_t edfd_status_unmanaged(const edfd_snapshot *s);
uint64_t edfd_status_kernel_capacity(const edfd_snapshot *s);
int edfd_status_kernel_admission(const edfd_snapshot *s);
int edfd_status_overcommitted(const edfd_snapshot *s);
unsigned edfd_status_n_reservations(const edfd_snapshot *s);
unsigned edfd_status_n_groups(const edfd_snapshot *s);
uint64_t edfd_status_events_seen(const edfd_snapshot *s);
uint64_t edfd_status_events_lost(const edfd_snapshot *s);
uint64_t edfd_status_resyncs(const edfd_snapshot *s);
uint64_t edfd_status_unseen_children(const edfd_snapshot *s);
/* Processes edfd watches to admit at their program's start (edfd_admit_at_start()). Since 0.1;
 * 0 from an older edfd. */
unsigned edfd_status_waiting_at_start(const edfd_snapshot *s);
/* Whether edfd counts throttles: "on", or why not ("the kernel refused the BPF program: ...");
 * "" from an older edfd or when the snapshot did not ask. Since 0.1. */
const char *edfd_status_throttle_counting(const edfd_snapshot *s);
/* Whether edfd counts possible lock waits: "on", or why not; "" from an older edfd or when the
 * snapshot did not ask. Since 0.2. */
const char *edfd_status_lock_wait_counting(const edfd_snapshot *s);

/* --- events: edfd_subscribe(3) --- */

typedef struct edfd_event edfd_event;

typedef enum edfd_event_type {
        EDFD_EVENT_ADDED = 1,         /* a reservation was made: id, pid, tid, group, reason */
        EDFD_EVENT_REMOVED = 2,       /* a reservation ended: id, pid, tid, group, reason */
        EDFD_EVENT_CHANGED = 3,       /* new times: id, runtime, deadline, period, reason */
        EDFD_EVENT_SPLIT = 4,         /* a fork split a budget: id (the donor), child_id */
        EDFD_EVENT_GROUPS_CHANGED = 5, /* the group tree changed */
        EDFD_EVENT_DAEMON_STARTED = 6, /* edfd joined the bus (subscribed again by the library) */
        EDFD_EVENT_DAEMON_STOPPED = 7, /* edfd left the bus */
        EDFD_EVENT_DISCONNECTED = 8,  /* the bus connection is lost; nothing more comes */
        EDFD_EVENT_THROTTLED = 9,     /* a thread's throttles grew (looked at once a second): id, pid,
                                       * tid, throttles (the total since its admission). Since 0.1. */
        EDFD_EVENT_LOCK_WAITS = 10,   /* a thread's possible lock waits grew (looked at once a second):
                                       * id, pid, tid, lock_waits (the total since its admission).
                                       * Since 0.2. */
} edfd_event_type;

/* Called for each event, from edfd_process(); ev is valid during the call only. A negative return
 * ends edfd_process() with that value. */
typedef int (*edfd_event_handler)(edfd *e, const edfd_event *ev, void *userdata);

/* Deliver edfd's events to handler (one handler per handle; a second call replaces it). The
 * library asks edfd for its signals, and asks again when a new edfd joins the bus. Returns 0 or
 * negative errno. */
int edfd_subscribe(edfd *e, edfd_event_handler handler, void *userdata);
/* Stop the events. Returns 0 or negative errno. */
int edfd_unsubscribe(edfd *e);
/* For the caller's event loop: poll the fd for edfd_get_events() (POLLIN, POLLOUT bits) and call
 * edfd_process() when it is ready or when the timeout of edfd_get_timeout() (absolute
 * CLOCK_MONOTONIC microseconds; UINT64_MAX: none) has passed. Negative errno on failure. */
int edfd_get_fd(edfd *e);
int edfd_get_events(edfd *e);
int edfd_get_timeout(edfd *e, uint64_t *ret_usec);
/* Dispatch everything that has arrived, calling the handler. Returns the number of events
 * delivered (0: nothing), or negative errno (-ECONNRESET after the connection was lost). */
int edfd_process(edfd *e);
/* Wait up to timeout_usec (UINT64_MAX: forever) for something to process. Returns > 0 when there
 * is, 0 on timeout, negative errno (-EINTR when a signal came). */
int edfd_wait(edfd *e, uint64_t timeout_usec);

edfd_event_type edfd_event_get_type(const edfd_event *ev);
uint64_t edfd_event_id(const edfd_event *ev);
uint64_t edfd_event_child_id(const edfd_event *ev);
pid_t edfd_event_pid(const edfd_event *ev);
pid_t edfd_event_tid(const edfd_event *ev);
const char *edfd_event_group(const edfd_event *ev);     /* "" when the event has none */
/* Why: "requested", "split", "inherited", "exited", "vanished", "changed", "returned",
 * "partition"; for DAEMON_STARTED the daemon's unique bus name. "" when none. */
const char *edfd_event_reason(const edfd_event *ev);
uint64_t edfd_event_runtime(const edfd_event *ev);
uint64_t edfd_event_deadline(const edfd_event *ev);
uint64_t edfd_event_period(const edfd_event *ev);
/* ADDED and CHANGED of a reservation of partitioned placement: its CPU (after a move by the
 * partition's reaction, the new one). -1 for global placement and other events. Since 0.1. */
int edfd_event_cpu(const edfd_event *ev);
/* THROTTLED: the reservation's throttles since its admission. 0 for other events. Since 0.1. */
uint64_t edfd_event_throttles(const edfd_event *ev);
/* LOCK_WAITS: the reservation's possible lock waits since its admission. 0 for other events.
 * Since 0.2. */
uint64_t edfd_event_lock_waits(const edfd_event *ev);

/* For __attribute__((cleanup)): edfd *e __attribute__((cleanup(edfd_closep))) = NULL; */
static inline void edfd_closep(edfd **e) {
        edfd_close(*e);
}
static inline void edfd_request_freep(edfd_request **q) {
        edfd_request_free(*q);
}
static inline void edfd_split_freep(edfd_split **s) {
        edfd_split_free(*s);
}
static inline void edfd_plan_freep(edfd_plan **p) {
        edfd_plan_free(*p);
}
static inline void edfd_snapshot_freep(edfd_snapshot **s) {
        edfd_snapshot_free(*s);
}

#ifdef __cplusplus
}
#endif

#endif
