/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Admission: every rule that decides whether a request is granted, in one place.
 *
 * The caller (the manager) gathers what only it can know (who is calling, their user name and
 * limits, whether polkit allowed a move, whether the cgroup root is usable) into a request, asks
 * once, and applies the answer: a decision (the group, the thread, the owner, the checked
 * parameters and their bandwidth, what to do besides) or a positive, named AdmitOutcome with the
 * numbers in a Refusal. Nothing here does I/O. What the kernel knows about the thread (is it a
 * kernel thread, who owns it, is it SCHED_DEADLINE already) comes through a probe the caller
 * provides: the module calls it once, at the point of the order where today's daemon first
 * touches the thread, so requests refused before that point never cost a syscall, and the tests
 * feed it from a table.
 *
 * The decisions change nothing: the books are changed afterwards by reservation_admit(),
 * reservation_update(), reservation_split_as(), group_create() and group_set_bandwidth(), which
 * check the same rules again (they are all-or-nothing on their own) and cannot refuse a request
 * that a decision admitted, short of -ENOMEM.
 *
 * The order of the checks is the contract: a request that breaks two rules gets the first one's
 * outcome. admission.c lists it at the top; the tests (tests/unit/test-admission.c) pin it.
 *
 * Outcomes and what today's daemon makes of them (OpFailure kind in daemon/manager.h, D-Bus
 * error in shared/protocol.h; the message is refusal_format()'s unless said otherwise):
 *
 *   outcome                    OpFailure             D-Bus error (EDFD_ERROR_*)
 *   ADMIT_BAD_PID              OP_NO_SUCH_THREAD     NO_SUCH_THREAD
 *   ADMIT_BAD_GROUP_NAME       OP_INVALID            INVALID_PARAMETERS (the bus's own message today)
 *   ADMIT_BAD_FLAGS            OP_INVALID            INVALID_PARAMETERS
 *   ADMIT_RATE_LIMITED         OP_LIMIT_EXCEEDED     LIMIT_EXCEEDED
 *   ADMIT_NO_SUCH_GROUP        OP_REFUSED            NO_SUCH_GROUP
 *   ADMIT_BAD_PARAMS           OP_REFUSED            INVALID_PARAMETERS
 *   ADMIT_ALREADY_ADMITTED     OP_REFUSED            ALREADY_ADMITTED
 *   ADMIT_PID_ONE              OP_PERMISSION_DENIED  PERMISSION_DENIED
 *   ADMIT_NO_SUCH_THREAD       OP_NO_SUCH_THREAD     NO_SUCH_THREAD
 *   ADMIT_KERNEL_THREAD        OP_PERMISSION_DENIED  PERMISSION_DENIED
 *   ADMIT_PROCESS_GONE         OP_NO_SUCH_THREAD     NO_SUCH_THREAD
 *   ADMIT_NOT_OWNER            OP_PERMISSION_DENIED  PERMISSION_DENIED
 *   ADMIT_NOT_ALLOWED          OP_PERMISSION_DENIED  PERMISSION_DENIED
 *   ADMIT_MOVE_NOT_ALLOWED     OP_PERMISSION_DENIED  PERMISSION_DENIED
 *   ADMIT_NO_CGROUP            OP_INVALID            INVALID_PARAMETERS
 *   ADMIT_THREAD_GONE          OP_NO_SUCH_THREAD     NO_SUCH_THREAD
 *   ADMIT_FOREIGN_DEADLINE     OP_FOREIGN_DEADLINE   FOREIGN_DEADLINE
 *   ADMIT_LIMIT_EXCEEDED       OP_LIMIT_EXCEEDED     LIMIT_EXCEEDED ("user NAME: " + the sentence)
 *   ADMIT_ABOVE_ONE_CPU        OP_REFUSED            INVALID_PARAMETERS
 *   ADMIT_OVER_BUDGET          OP_REFUSED            OVER_BUDGET
 *   ADMIT_NO_SUCH_RESERVATION  OP_NO_SUCH_RESERVATION NO_SUCH_RESERVATION ("no reservation ID")
 *   ADMIT_NOT_YOURS            OP_PERMISSION_DENIED  PERMISSION_DENIED
 *   ADMIT_BAD_GROUP_BANDWIDTH  (bus only today)      INVALID_PARAMETERS
 *   ADMIT_GROUP_EXISTS, ADMIT_BELOW_ALLOCATED, ADMIT_IS_ROOT, ADMIT_GROUP_NOT_EMPTY, ADMIT_FORK_NONE,
 *   ADMIT_SPLIT_TOO_SMALL, ADMIT_ID_IN_USE: OP_REFUSED, mapped by manager-bus.c's reply_error() as
 *   today (GROUP_EXISTS, OVER_BUDGET, INVALID_PARAMETERS, GROUP_NOT_EMPTY, INVALID_PARAMETERS,
 *   INVALID_PARAMETERS, ALREADY_ADMITTED).
 * A negative return is an error (OP_ERRNO), not a refusal. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/params.h"
#include "core/rate.h"
#include "core/tree.h"

/* Admit flags: the bits of the bus's EDFD_ADMIT_* (the unit test asserts that they agree). */
#define ADMISSION_FLAG_RECLAIM UINT64_C(1)
#define ADMISSION_FLAG_OVERRUN_SIGNAL UINT64_C(2)
#define ADMISSION_FLAG_MOVE UINT64_C(4)
#define ADMISSION_FLAGS_KNOWN (ADMISSION_FLAG_RECLAIM | ADMISSION_FLAG_OVERRUN_SIGNAL | ADMISSION_FLAG_MOVE)

/* The largest pid or tid: the kernel's pid_t is a signed 32-bit number. */
#define ADMISSION_PID_MAX UINT64_C(2147483647)

/* A request rate limit: at most count requests per window ns (see core/rate.h); 0 in either: none. */
typedef struct RateLimit {
        uint64_t count;
        uint64_t window;
} RateLimit;

/* Who is asking. */
typedef struct AdmissionCaller {
        uint32_t uid;
        uint32_t pid;                /* the caller's process: what a pid of 0 asks for */
        const char *user;            /* the caller's user name, for users: lists and messages; not NULL */
        UserLimits limits;           /* the caller's per-user limits (USER_LIMITS_NONE: none) */
        RateLimit rate;              /* the caller's request rate limit */
} AdmissionCaller;

/* What the kernel says about the thread asked for. */
typedef struct ThreadFacts {
        bool kernel_thread;
        int owner_error;             /* 0, or negative errno: the process's owner could not be read */
        uint32_t owner;              /* the uid owning the process */
        int sched_error;             /* 0, or negative errno: the thread's policy could not be read */
        bool deadline;               /* the thread is SCHED_DEADLINE already */
        DlParams current;            /* its parameters, when deadline */
} ThreadFacts;

/* Look at thread tid of process pid: 0 with *ret filled, -ESRCH or -ENOENT when there is no such
 * thread, another negative errno when the thread could not be looked at (admission_decide()
 * returns it). Called at most once per decision. */
typedef int (*AdmissionProbe)(void *userdata, uint32_t pid, uint32_t tid, ThreadFacts *ret);

/* An Admit request. */
typedef struct AdmissionRequest {
        uint64_t pid, tid;           /* as asked, 64 bits as on the bus; pid 0: the caller's process, tid 0: pid */
        const char *group;           /* NULL or "": the default group */
        const char *default_group;   /* the configuration's default-group; NULL: the root */
        DlParams params;             /* deadline 0: the period */
        uint64_t flags;              /* ADMISSION_FLAG_* */
        AdmissionCaller caller;
        bool may_move;               /* polkit's manage action allowed a move (root always may) */
        bool moves_process;          /* the group's placement moves the whole process into edfd's
                                      * cgroups (partitioned placement on cgroup v2): as the move
                                      * flag, it needs may_move */
        bool cgroups_usable;         /* the cgroup root can be written */
        AdmissionProbe probe;        /* required */
        void *probe_userdata;
} AdmissionRequest;

/* What to admit. */
typedef struct AdmissionDecision {
        Group *group;
        uint32_t pid, tid;           /* defaults resolved */
        uint32_t owner;              /* the uid the reservation is charged to */
        DlParams params;             /* checked, the deadline filled in */
        uint64_t bw;                 /* their bandwidth */
        uint64_t flags;              /* as asked (known bits only), with RECLAIM where the group reclaims */
        bool move;                   /* move the process into group->cgroup once the kernel took it */
} AdmissionDecision;

/* The checks an Admit's arguments get before anything is looked up: the pid and tid range, the
 * group path, the flags (the first three rules of admission_decide(), which runs them again). For
 * the bus, before rate limits and polkit. Returns 0 or the refusal (*ret_refusal may be NULL). */
int admission_check_args(const AdmissionRequest *req, Refusal *ret_refusal);

/* Decide an Admit (the order is in admission.c). Returns 0 with *ret, a positive AdmitOutcome with
 * *ret_refusal (may be NULL; its strings point into req and t), or a negative errno: the probe's,
 * -EOVERFLOW when reservation ids are exhausted, -EINVAL without a probe. Changes nothing. */
int admission_decide(const Tree *t, const AdmissionRequest *req, AdmissionDecision *ret, Refusal *ret_refusal);

/* An Update request. */
typedef struct AdmissionUpdate {
        uint64_t id;
        DlParams params;             /* deadline 0: the period */
        AdmissionCaller caller;
} AdmissionUpdate;

typedef struct AdmissionUpdateDecision {
        Reservation *reservation;
        DlParams params;             /* checked, the deadline filled in */
        uint64_t bw;
} AdmissionUpdateDecision;

/* Decide an Update: ADMIT_NO_SUCH_RESERVATION, ADMIT_NOT_YOURS, ADMIT_LIMIT_EXCEEDED (only for
 * valid parameters that add bandwidth, not for root), ADMIT_BAD_PARAMS, ADMIT_ABOVE_ONE_CPU,
 * ADMIT_OVER_BUDGET, in that order; 0 with *ret. Changes nothing. */
int admission_update_decide(const Tree *t, const AdmissionUpdate *req, AdmissionUpdateDecision *ret,
                            Refusal *ret_refusal);

/* Whether a request of c is counted against its rate limit at all: not root's, and not without a
 * limit (then the caller need not keep a window for it). */
bool admission_rate_applies(const AdmissionCaller *c);
/* Count a request of c at time now (ns) in its window w (the caller keeps one per uid; may be NULL
 * when !admission_rate_applies(c)). Returns 0 (counted, or not limited) or ADMIT_RATE_LIMITED. */
int admission_rate_check(const AdmissionCaller *c, RateWindow *w, uint64_t now, Refusal *ret_refusal);

/* Whether caller_uid may change or release r: root, or r's owner. */
bool admission_may_touch(uint32_t caller_uid, const Reservation *r);
/* Whether the user uid, named user, may use g: root always, anyone when g has no users: list,
 * else the names on it. */
bool admission_group_allows(const Group *g, uint32_t uid, const char *user);

/* A new child of donor (is_thread: a thread, the group's `threads` policy; else `fork`): returns 0
 * with the policy to split it by (FORK_INHERIT falls back to FORK_SPLIT when the owner's limits
 * leave no room for a full copy), ADMIT_FORK_NONE, or ADMIT_LIMIT_EXCEEDED (the owner's number of
 * reservations). owner_limits: the donor owner's (NULL: none); root's children are never limited.
 * The room and the minimum split are reservation_split_as()'s. */
int admission_fork_decide(const Tree *t, const Reservation *donor, bool is_thread, const UserLimits *owner_limits,
                          ForkPolicy *ret_policy, Refusal *ret_refusal);

/* CreateGroup and SetGroup arguments: a valid path other than the root (ADMIT_BAD_GROUP_NAME), then
 * admission_group_bandwidth()'s rule (ADMIT_BAD_GROUP_BANDWIDTH, Refusal.params says which part).
 * Returns 0 or the refusal. */
int admission_group_args(const char *path, uint64_t runtime, uint64_t period, Refusal *ret_refusal);
/* RemoveGroup's: the path only. */
int admission_group_path_arg(const char *path, Refusal *ret_refusal);

/* The rule for a group's bandwidth: a period above 0, a runtime of at least DL_RUNTIME_MIN and
 * below 2^(64 - BW_SHIFT) ns (so that its bandwidth is a number); the runtime may exceed the period
 * (a group may span several CPUs). Returns 0 with *ret_bw (may be NULL), or ADMIT_BAD_PARAMS. */
int admission_group_bandwidth(uint64_t runtime, uint64_t period, uint64_t *ret_bw, Refusal *ret_refusal);

/* The rule for a thread's parameters: dl_params_check() against limits (NULL: none), then a
 * bandwidth that is a number (else PARAMS_BIT63) and at most one CPU (ADMIT_ABOVE_ONE_CPU). Returns
 * 0 with p's deadline filled in and *ret_bw, or ADMIT_BAD_PARAMS / ADMIT_ABOVE_ONE_CPU with p as it
 * was. */
int admission_params(const DlLimits *limits, DlParams *p, uint64_t *ret_bw, Refusal *ret_refusal);

/* The rule for one component of a group path (a group's name): NULL when name[0..len) is one, else
 * why not, as a static fragment that follows the name ("must start with a letter or a digit"). A
 * name is 1 to GROUP_NAME_MAX bytes of A-Z a-z 0-9 _ . -, starts with a letter or a digit (so never
 * "." or "..", hidden names or edfd's "_leaf"), and does not start with "cgroup." (the kernel's
 * files). group_path_valid() applies it to every component. */
const char *admission_group_name_problem(const char *name, size_t len);
