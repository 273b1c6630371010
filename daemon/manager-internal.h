/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the manager's rooms (manager-*.c) share: only the functions one room calls in another.
 * Everything else of a room is static in its file. */

#include <stdbool.h>
#include <stdint.h>

#include "basic/macro.h"
#include "core/admission.h"
#include "manager.h"

/* How long an EBUSY from the kernel is retried when the books say the request fits: bandwidth of
 * an exited or demoted task comes back at its 0-lag time, within its period. */
#define EBUSY_RETRY_NSEC (100 * NSEC_PER_MSEC)

/* manager.c: failures, the books' plumbing, the status. */
/* Fill *e; each returns -1 (the operations' failure). */
_printf_(3, 4) int op_fail(OpError *e, OpFailure kind, const char *fmt, ...);
/* A refusal of the core (a positive AdmitOutcome with its numbers): the OpFailure kind its outcome
 * maps to (see core/admission.h's table) and refusal_format()'s sentence. Returns -1. */
int op_refused(OpError *e, const Refusal *r);
int op_errno(OpError *e, int err, const char *what);
/* What the kernel's error r means for the caller of what. */
int kernel_failure(OpError *e, int r, const char *what);
/* The per-user limit refusal rf, for owner. */
/* The caller as core/admission.h sees it: uid, pid, user name, and (not for root) the limits and
 * request rate of the configuration. */
AdmissionCaller manager_admission_caller(Manager *m, const Caller *c);
/* The configuration's limits for uid (its own entry, else "default", else none). */
UserLimits limits_of(Manager *m, uid_t uid, const ConfLimit **ret_conf);
uint64_t now_ns(void);
uint64_t sched_flags_of(uint64_t admit_flags);
/* sched_apply_deadline, retrying EBUSY briefly (sleeping in place). */
int apply_with_retry(const SchedTarget *t, const DlParams *p, uint64_t flags);
/* Does the kernel show what edfd gave (the parameters, the flags plus RESET_ON_FORK)? */
bool same_params(const SchedInfo *si, const DlParams *p, uint64_t admit_flags);
/* The pinned threads of reservations (m->targets): the map owns what it holds. */
SchedTarget *target_get(Manager *m, uint64_t id);
int target_put(Manager *m, uint64_t id, const SchedTarget *t);
void target_drop(Manager *m, uint64_t id);
/* Write r's record (an intent, or the result) to the state journal. */
int record(Manager *m, bool intent, const Reservation *r);
void log_state_failure(int r);
/* Tell systemd the new STATUS=, throttled. */
void notify_status(Manager *m);
/* The root's bandwidth under the configuration's cap (capacity_root()). */
uint64_t root_capacity(const Manager *m);
/* Measure the capacity again (capacity_refresh()), tell what changed, set the root's capacity. */
void capacity_refresh_all(Manager *m);

/* manager-admit.c */
/* Whether reservation id waits for the kernel in the background (not applied, never announced). */
bool admit_pending(const Manager *m, uint64_t id);
/* At exit: answer every waiting admission with KernelRefused. */
void admit_stop(Manager *m);

/* manager-startup.c */
/* At exit: forget the admissions that wait for their program's start. */
void startup_stop(Manager *m);
/* The proc connector's EXEC and EXIT events (pid, tgid as they came), and a loss of events: the
 * watched processes concerned are looked at. */
void startup_on_exec(Manager *m, pid_t pid, pid_t tgid);
void startup_on_exit(Manager *m, pid_t pid, pid_t tgid);
void startup_events_lost(Manager *m);
/* The watches as the journal keeps them, for its rewrite (to be freed). 0 or -ENOMEM. */
int startup_watches(const Manager *m, StateWatch **ret, size_t *ret_n);
/* A reload: hold each watch's bandwidth in its group of the new tree t. 0, or -1 with *error (a group
 * gone or too small: the reload is refused, nothing held in t is given back: t is dropped). */
int startup_hold_in(Manager *m, Tree *t, OpError *error);
/* g is being removed, its watches with it (their holds given back, their end journaled). */
void startup_group_removed(Manager *m, const Group *g);
/* At start, after adopt(): the watches of the journal that still have a process to wait for, their
 * bandwidth held again, looked at soon (admitted at once when the program has slept, or its bound
 * passed, while edfd was down). */
void startup_restore(Manager *m, const StateWatch *watches, size_t n);
/* Once m->event exists: the first look at each watch startup_restore() took up. */
void startup_start(Manager *m);

/* manager-release.c */
/* Release res from the books (the thread was put back, or is gone), give the donor its runtime,
 * record and signal. */
void release_books(Manager *m, Reservation *res, const char *reason);
/* The core gave a child's runtime back to its donor in the books (e): give it in the kernel too,
 * once (later from a timer on EBUSY). Whether the donor has it now. */
bool donor_give_back(Manager *m, const ReleaseEffect *e, uint64_t child_id);
/* At exit: drop the returns still waiting. */
void release_stop(Manager *m);

/* manager-groups.c */
/* Find or make the cgroup root usable (at start). */
void groups_setup(Manager *m);
/* Create g's cgroup and write its cpu.max, where cgroups are usable. */
void group_apply_cgroup(Manager *m, const Group *g);

/* manager-config.c */
/* Parse path (NULL: the embedded default). 0 with *ret, or negative errno with *ret_errors (may be
 * NULL; to be freed). */
int config_load(const char *path, Config **ret, char **ret_errors);
/* Build a tree from c with the groups of extra (see the comment in manager-config.c), each dynamic
 * one with its own users: list when extra has one. */
int tree_build(Manager *m, const Config *c, const char *filename, const StateGroup *extra, size_t n_extra,
               bool strict, bool allow_short, Tree **ret, char **ret_errors);
/* Rewrite the state journal from the books. 0, or negative errno. */
int snapshot(Manager *m, bool with_overrides);
/* Compact the state journal when it has grown enough. */
void maybe_compact(Manager *m);

/* manager-place.c */
/* Make the configuration's partitions (at start), or repair what an earlier edfd left when there
 * are none; a failure is logged and leaves partitioned placement refused with the reason. */
void place_setup(Manager *m);
/* Start polling the partitions (once m->event exists): one that turns invalid or disappears gets
 * no new reservation, and each of its reservations is moved to another CPU where the exact test
 * passes or released with the reason "partition". */
void place_start(Manager *m);
void place_free(Manager *m);
/* The partition of cpu, or NULL. */
const char *place_cpu_name(const Manager *m, uint32_t cpu);
/* For a partitioned g: the CPU for p (the core's exact test, best fit), or a refusal naming every
 * CPU's state ("no CPU can take 58%: cpu0 32% left, cpu1 32% left"); with forced_cpu, that CPU
 * (a split's stage) if it still passes. For a global g: not partitioned. Returns 0 or -1 with *e. */
int place_decide(Manager *m, const Group *g, const DlParams *p, const uint32_t *forced_cpu, bool *ret_partitioned,
                 uint32_t *ret_cpu, OpError *e);
/* Move the thread (v2: its process, then the thread) into cpu's partition. Returns 0 or -1 with *e. */
int place_move_in(Manager *m, uint32_t cpu, uint32_t pid, uint32_t tid, OpError *e);
/* After EPERM from sched_setattr of a thread just moved to cpu: wait (up to 200 ms) until it has
 * run there. True if it has (worth asking the kernel again). */
bool place_wait_ran(uint32_t cpu, uint32_t pid, uint32_t tid);
/* v2: where the processes the partitions hold came from (the adapter remembers them), for the
 * state's rewrite; paths too long for the journal are left out. Returns 0 or -ENOMEM. */
int place_origins(const Manager *m, StateOrigin **ret, size_t *ret_n);
/* v2, at start after adopt(): remember again where each process that holds a partitioned
 * reservation came from (the state's origins). */
void place_restore_origins(Manager *m, const StateOrigin *origins, size_t n);
/* Move a released thread (v2: its process) back out of the partitions; a failure is logged. */
void place_move_out(Manager *m, uint32_t pid, uint32_t tid);


/* manager-procs.c */
/* Start listening to the proc connector (at start; a failure is logged). */
void procs_open(Manager *m);
/* Watch the proc connector and arm the resync timer on m->event. 0, or negative errno. */
int procs_start(Manager *m);
void procs_free(Manager *m);
/* Count the children of admitted threads born since `since` that nobody raised. */
void count_unseen_children(Manager *m, uint64_t since);
/* Clock ticks since boot, the unit of /proc start times. */
uint64_t boot_ticks(void);
/* manager-adopt.c */
/* Open and read the state directory, and build the tree from the configuration and its groups.
 * 0 with *ret (for manager_adopt()) and *ret_down_since (boot ticks), or negative errno (logged). */
int adopt_load(Manager *m, StateLoaded *ret, uint64_t *ret_down_since);
/* Re-adopt the reservations of l that the kernel still shows as edfd left them. */
void adopt(Manager *m, const StateLoaded *l);
