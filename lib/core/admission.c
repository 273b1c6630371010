/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Every admission rule, in the order that decides which refusal a client sees. The order is
 * today's daemon's (manager-bus.c's method handlers, then manager.c), check for check:
 *
 * Admit (admission_check_args() is steps 1-3; the bus runs them, then the rate limit 4, then
 * polkit; admission_decide() is 1-3 and 5-22):
 *    1. pid or tid as asked above ADMISSION_PID_MAX            ADMIT_BAD_PID
 *    2. a group named, and not a valid group path              ADMIT_BAD_GROUP_NAME
 *    3. unknown flags                                          ADMIT_BAD_FLAGS
 *    4. the caller's request rate (admission_rate_check())     ADMIT_RATE_LIMITED
 *    5. the group (or the default group) does not exist        ADMIT_NO_SUCH_GROUP
 *    6. pid 0 becomes the caller's pid, tid 0 the pid; either above ADMISSION_PID_MAX
 *                                                              ADMIT_BAD_PID
 *    7. the parameters (dl_params_check())                     ADMIT_BAD_PARAMS
 *    8. the thread holds a reservation                         ADMIT_ALREADY_ADMITTED
 *    9. pid 1                                                  ADMIT_PID_ONE
 *   10. the probe: no such thread                              ADMIT_NO_SUCH_THREAD
 *       (any other error of the probe is returned as it is)
 *   11. a kernel thread                                        ADMIT_KERNEL_THREAD
 *   12. its owner could not be read                            ADMIT_PROCESS_GONE
 *   13. a caller other than root, and not the owner            ADMIT_NOT_OWNER
 *   14. the group's users: list leaves the caller out          ADMIT_NOT_ALLOWED
 *   15. flag move, or a placement that moves the whole process (moves_process), a caller other
 *       than root, no polkit manage                           ADMIT_MOVE_NOT_ALLOWED
 *   16. flag move, and the group has no cgroup, or the cgroup root is unusable
 *                                                              ADMIT_NO_CGROUP
 *   17. the thread's policy could not be read                  ADMIT_THREAD_GONE
 *   18. the thread is SCHED_DEADLINE already                   ADMIT_FOREIGN_DEADLINE
 *   19. a caller other than root: the owner's (= the caller's, by 13) limits, first the number of
 *       reservations, then the bandwidth (0 if it is not a number, see 20)
 *                                                              ADMIT_LIMIT_EXCEEDED
 *   20. the bandwidth is not a number (PARAMS_BIT63), or above one CPU
 *                                                              ADMIT_BAD_PARAMS, ADMIT_ABOVE_ONE_CPU
 *   21. reservation ids are exhausted                          -EOVERFLOW
 *   22. no room in the group (or the root is over-committed)   ADMIT_OVER_BUDGET
 * Admitted: the flags as asked, with RECLAIM added where the group's reclaim policy is on (the
 * request cannot take it away: reclaiming uses only what no reservation holds, see tree.h).
 *
 * Update (the bus counts the rate first, then polkit): the reservation exists
 * (ADMIT_NO_SUCH_RESERVATION), is the caller's or the caller is root (ADMIT_NOT_YOURS); for a
 * caller other than root, parameters that pass dl_params_check() and whose bandwidth is a number
 * above what the reservation holds: the owner's bandwidth limit for the difference
 * (ADMIT_LIMIT_EXCEEDED); then the parameters (ADMIT_BAD_PARAMS, ADMIT_ABOVE_ONE_CPU), the room
 * (ADMIT_OVER_BUDGET).
 *
 * Fork: the group's policy (ADMIT_FORK_NONE), FORK_INHERIT becomes FORK_SPLIT when a full copy
 * breaks the owner's limits, the owner's number of reservations (ADMIT_LIMIT_EXCEEDED); root's
 * are never limited. The rest is reservation_split_as()'s.
 *
 * CreateGroup, SetGroup (before polkit): the path (ADMIT_BAD_GROUP_NAME), the bandwidth
 * (ADMIT_BAD_GROUP_BANDWIDTH); then group_create() or group_set_bandwidth() decide in the books.
 * RemoveGroup: the path only. */

#include <errno.h>
#include <string.h>

#include "basic/macro.h"
#include "core/admission.h"
#include "core/bandwidth.h"

/* --- the small rules --- */

static bool is_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

#define STR_(x) #x
#define STR(x) STR_(x)

const char *admission_group_name_problem(const char *name, size_t len) {
        if (len == 0)
                return "is empty";
        if (len > GROUP_NAME_MAX)
                return "is longer than " STR(GROUP_NAME_MAX) " bytes";
        /* A letter or a digit first keeps ".", "..", hidden names, the kernel's "cgroup.*" files and
         * edfd's own "_leaf" cgroup out of the group namespace. */
        if (!is_alnum(name[0]))
                return "must start with a letter or a digit";
        if (len >= 7 && memcmp(name, "cgroup.", 7) == 0)
                return "must not start with \"cgroup.\" (the kernel's own files)";
        for (size_t i = 0; i < len; i++)
                if (!is_alnum(name[i]) && name[i] != '_' && name[i] != '-' && name[i] != '.')
                        return "may hold only letters, digits, _ . and - (no / or spaces)";
        return NULL;
}

static int refuse_params(Refusal *ret, AdmitOutcome o, ParamsOutcome p) {
        if (ret)
                *ret = (Refusal) { .outcome = o, .params = p };
        return (int) o;
}

int admission_params(const DlLimits *limits, DlParams *p, uint64_t *ret_bw, Refusal *ret_refusal) {
        DlParams q = *p;
        ParamsOutcome o;
        uint64_t bw;

        o = dl_params_check(&q, limits);
        if (o != PARAMS_OK)
                return refuse_params(ret_refusal, ADMIT_BAD_PARAMS, o);
        if (bw_of(q.runtime, q.period, &bw) < 0)
                return refuse_params(ret_refusal, ADMIT_BAD_PARAMS, PARAMS_BIT63);
        if (bw > BW_UNIT) { /* cannot happen with runtime <= period; kept as the rule it is */
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_ABOVE_ONE_CPU, .need_bw = bw };
                return ADMIT_ABOVE_ONE_CPU;
        }
        *p = q;
        if (ret_bw)
                *ret_bw = bw;
        return 0;
}

int admission_group_bandwidth(uint64_t runtime, uint64_t period, uint64_t *ret_bw, Refusal *ret_refusal) {
        uint64_t bw;

        if (period == 0)
                return refuse_params(ret_refusal, ADMIT_BAD_PARAMS, PARAMS_PERIOD_ZERO);
        if (runtime < DL_RUNTIME_MIN)
                return refuse_params(ret_refusal, ADMIT_BAD_PARAMS, PARAMS_RUNTIME_TOO_SMALL);
        /* runtime << BW_SHIFT must fit: runtime below 2^(64 - BW_SHIFT). */
        if (bw_of(runtime, period, &bw) < 0)
                return refuse_params(ret_refusal, ADMIT_BAD_PARAMS, PARAMS_BIT63);
        if (ret_bw)
                *ret_bw = bw;
        return 0;
}

int admission_group_path_arg(const char *path, Refusal *ret_refusal) {
        if (!group_path_valid(path) || strcmp(path, "/") == 0) {
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_BAD_GROUP_NAME, .name = path };
                return ADMIT_BAD_GROUP_NAME;
        }
        return 0;
}

int admission_group_args(const char *path, uint64_t runtime, uint64_t period, Refusal *ret_refusal) {
        Refusal rf;
        int k;

        k = admission_group_path_arg(path, ret_refusal);
        if (k != 0)
                return k;
        k = admission_group_bandwidth(runtime, period, NULL, &rf);
        if (k != 0) {
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_BAD_GROUP_BANDWIDTH, .name = path,
                                                   .params = rf.params };
                return ADMIT_BAD_GROUP_BANDWIDTH;
        }
        return 0;
}

bool admission_may_touch(uint32_t caller_uid, const Reservation *r) {
        return caller_uid == 0 || caller_uid == r->uid;
}

bool admission_group_allows(const Group *g, uint32_t uid, const char *user) {
        if (uid == 0 || !g->users)
                return true;
        for (char **u = g->users; *u; u++)
                if (user && strcmp(*u, user) == 0)
                        return true;
        return false;
}

/* --- rate --- */

bool admission_rate_applies(const AdmissionCaller *c) {
        return c->uid != 0 && c->rate.count != 0 && c->rate.window != 0;
}

int admission_rate_check(const AdmissionCaller *c, RateWindow *w, uint64_t now, Refusal *ret_refusal) {
        if (!admission_rate_applies(c) || !w)
                return 0;
        if (rate_window_allow(w, now, c->rate.count, c->rate.window))
                return 0;
        if (ret_refusal)
                *ret_refusal = (Refusal) { .outcome = ADMIT_RATE_LIMITED, .user = c->user,
                                           .limit_count = c->rate.count, .window = c->rate.window };
        return ADMIT_RATE_LIMITED;
}

/* --- Admit --- */

static int refuse_thread(Refusal *ret, AdmitOutcome o, uint64_t pid, uint64_t tid) {
        if (ret)
                *ret = (Refusal) { .outcome = o, .pid = pid, .tid = tid };
        return (int) o;
}

static int refuse_group(Refusal *ret, AdmitOutcome o, const Group *g, uint32_t uid) {
        if (ret)
                *ret = (Refusal) { .outcome = o, .name = g->path, .uid = uid };
        return (int) o;
}

/* The owner's limits, with the owner's name in the message. */
static int check_limits(const Tree *t, const AdmissionCaller *c, uint32_t owner, uint64_t add_bw, size_t add_n,
                        Refusal *ret_refusal) {
        Refusal rf;

        if (user_limits_check(t, owner, &c->limits, add_bw, add_n, &rf) == 0)
                return 0;
        rf.user = c->user;
        if (ret_refusal)
                *ret_refusal = rf;
        return ADMIT_LIMIT_EXCEEDED;
}

int admission_check_args(const AdmissionRequest *req, Refusal *ret_refusal) {
        if (req->pid > ADMISSION_PID_MAX || req->tid > ADMISSION_PID_MAX)
                return refuse_thread(ret_refusal, ADMIT_BAD_PID, req->pid, req->tid);
        if (req->group && *req->group && !group_path_valid(req->group)) {
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_BAD_GROUP_NAME, .name = req->group };
                return ADMIT_BAD_GROUP_NAME;
        }
        if (req->flags & ~ADMISSION_FLAGS_KNOWN) {
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_BAD_FLAGS,
                                                   .flags = req->flags & ~ADMISSION_FLAGS_KNOWN };
                return ADMIT_BAD_FLAGS;
        }
        return 0;
}

int admission_decide(const Tree *t, const AdmissionRequest *req, AdmissionDecision *ret, Refusal *ret_refusal) {
        const AdmissionCaller *c = &req->caller;
        const Reservation *other;
        ThreadFacts facts = {};
        uint64_t pid, tid, bw = 0;
        DlParams p = req->params;
        const char *path;
        bool move = req->flags & ADMISSION_FLAG_MOVE;
        Group *g;
        int k;

        /* 1-3 */
        k = admission_check_args(req, ret_refusal);
        if (k != 0)
                return k;

        /* 5 */
        path = req->group && *req->group ? req->group : req->default_group ? req->default_group : "/";
        g = tree_find_group(t, path);
        if (!g) {
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_NO_SUCH_GROUP,
                                                   .name = req->group && *req->group ? req->group : "(default group)" };
                return ADMIT_NO_SUCH_GROUP;
        }

        /* 6 */
        pid = req->pid != 0 ? req->pid : c->pid;
        tid = req->tid != 0 ? req->tid : pid;
        if (pid > ADMISSION_PID_MAX || tid > ADMISSION_PID_MAX)
                return refuse_thread(ret_refusal, ADMIT_BAD_PID, pid, tid);

        /* 7: the parameter rules only; their bandwidth is 20's */
        ParamsOutcome po = dl_params_check(&p, &t->limits);
        if (po != PARAMS_OK)
                return refuse_params(ret_refusal, ADMIT_BAD_PARAMS, po);

        /* 8 */
        other = tree_find_thread(t, (uint32_t) tid);
        if (other) {
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_ALREADY_ADMITTED, .name = g->path, .id = other->id };
                return ADMIT_ALREADY_ADMITTED;
        }

        /* 9: under a fork policy every process it starts would be split */
        if (pid == 1)
                return refuse_thread(ret_refusal, ADMIT_PID_ONE, pid, tid);

        /* 10-12 */
        if (!req->probe)
                return -EINVAL;
        k = req->probe(req->probe_userdata, (uint32_t) pid, (uint32_t) tid, &facts);
        if (k == -ESRCH || k == -ENOENT)
                return refuse_thread(ret_refusal, ADMIT_NO_SUCH_THREAD, pid, tid);
        if (k < 0)
                return k;
        if (facts.kernel_thread)
                return refuse_thread(ret_refusal, ADMIT_KERNEL_THREAD, pid, tid);
        if (facts.owner_error < 0)
                return refuse_thread(ret_refusal, ADMIT_PROCESS_GONE, pid, tid);

        /* 13 */
        if (c->uid != 0 && facts.owner != c->uid) {
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_NOT_OWNER, .pid = pid, .tid = tid, .uid = c->uid,
                                                   .owner = facts.owner };
                return ADMIT_NOT_OWNER;
        }
        /* 14 */
        if (!admission_group_allows(g, c->uid, c->user))
                return refuse_group(ret_refusal, ADMIT_NOT_ALLOWED, g, c->uid);
        /* 15: a move leaves the user slice's limits, whether asked for or the placement's */
        if ((move || req->moves_process) && c->uid != 0 && !req->may_move) {
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_MOVE_NOT_ALLOWED, .name = g->path, .uid = c->uid,
                                                   .flags = move ? ADMISSION_FLAG_MOVE : 0 };
                return ADMIT_MOVE_NOT_ALLOWED;
        }
        /* 16 */
        if (move && (!g->cgroup || !req->cgroups_usable)) {
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_NO_CGROUP, .name = g->path,
                                                   .cgroup_root_unusable = !req->cgroups_usable };
                return ADMIT_NO_CGROUP;
        }
        /* 17, 18 */
        if (facts.sched_error < 0)
                return refuse_thread(ret_refusal, ADMIT_THREAD_GONE, pid, tid);
        if (facts.deadline) {
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_FOREIGN_DEADLINE, .pid = pid, .tid = tid,
                                                   .foreign = facts.current };
                return ADMIT_FOREIGN_DEADLINE;
        }

        /* 19: a bandwidth that is not a number counts as 0 here and is refused by 20 */
        if (bw_of(p.runtime, p.period, &bw) < 0)
                bw = 0;
        if (c->uid != 0) {
                k = check_limits(t, c, facts.owner, bw, 1, ret_refusal);
                if (k != 0)
                        return k;
        }

        /* 20 */
        k = admission_params(&t->limits, &p, &bw, ret_refusal);
        if (k != 0)
                return k;
        /* 21, 22 */
        if (t->next_id == UINT64_MAX)
                return -EOVERFLOW;
        if (!group_has_room(t, g, 0, bw))
                return group_refuse_budget(t, g, bw, ret_refusal);

        if (ret)
                *ret = (AdmissionDecision) {
                        .group = g,
                        .pid = (uint32_t) pid,
                        .tid = (uint32_t) tid,
                        .owner = facts.owner,
                        .params = p,
                        .bw = bw,
                        .flags = req->flags | (g->reclaim ? ADMISSION_FLAG_RECLAIM : 0),
                        .move = move,
                };
        return 0;
}

/* --- Update --- */

int admission_update_decide(const Tree *t, const AdmissionUpdate *req, AdmissionUpdateDecision *ret,
                            Refusal *ret_refusal) {
        Reservation *r = tree_find_reservation(t, req->id);
        DlParams p = req->params;
        uint64_t bw;
        int k;

        if (!r) {
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_NO_SUCH_RESERVATION, .id = req->id };
                return ADMIT_NO_SUCH_RESERVATION;
        }
        if (!admission_may_touch(req->caller.uid, r)) {
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_NOT_YOURS, .id = req->id };
                return ADMIT_NOT_YOURS;
        }
        /* The limits only for parameters that pass the rules and only for more bandwidth; the owner
         * is the caller here (admission_may_touch), so the caller's limits are the owner's. */
        DlParams q = p;
        if (req->caller.uid != 0 && dl_params_check(&q, &t->limits) == PARAMS_OK && bw_of(q.runtime, q.period, &bw) == 0 &&
            bw > r->bw) {
                k = check_limits(t, &req->caller, r->uid, bw - r->bw, 0, ret_refusal);
                if (k != 0)
                        return k;
        }
        k = admission_params(&t->limits, &p, &bw, ret_refusal);
        if (k != 0)
                return k;
        if (bw > r->bw && !group_has_room(t, r->group, r->bw, bw))
                return group_refuse_budget(t, r->group, bw, ret_refusal);

        if (ret)
                *ret = (AdmissionUpdateDecision) { .reservation = r, .params = p, .bw = bw };
        return 0;
}

/* --- fork --- */

int admission_fork_decide(const Tree *t, const Reservation *donor, bool is_thread, const UserLimits *owner_limits,
                          ForkPolicy *ret_policy, Refusal *ret_refusal) {
        ForkPolicy policy = is_thread ? donor->group->threads : donor->group->fork;
        UserLimits lim = donor->uid == 0 || !owner_limits ? USER_LIMITS_NONE : *owner_limits;

        if (policy == FORK_NONE) {
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_FORK_NONE, .name = donor->group->path };
                return ADMIT_FORK_NONE;
        }
        /* A full copy only within the owner's limits; a split only within its number of reservations. */
        if (policy == FORK_INHERIT && user_limits_check(t, donor->uid, &lim, donor->bw, 1, NULL) != 0)
                policy = FORK_SPLIT;
        if (user_limits_check(t, donor->uid, &lim, 0, 1, ret_refusal) != 0)
                return ADMIT_LIMIT_EXCEEDED;
        if (ret_policy)
                *ret_policy = policy;
        return 0;
}
