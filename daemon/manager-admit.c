/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The admission room: Admit (the checks, the decision in the core, record, apply, record) with its
 * queue of admissions that wait for the kernel to take the bandwidth (EBUSY although the books have
 * room), Update, and the callers' rate limits. */

#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/bandwidth.h"
#include "cgroup.h"
#include "core/duration.h"
#include "log.h"
#include "basic/macro.h"
#include "manager-bus.h"
#include "manager-internal.h"
#include "shared/protocol.h"
#include "sched-dl.h"

int manager_rate_check(Manager *m, const Caller *c, OpError *error) {
        const ConfLimit *l = NULL;
        RateWindow *w;

        if (c->uid == 0)
                return 0;
        (void) limits_of(m, c->uid, &l);
        if (!l || l->rate_count == 0 || l->rate_window_ns == 0)
                return 0;
        w = hashmap_get(&m->admit.rates, (uint64_t) c->uid + 1);
        if (!w) {
                w = calloc(1, sizeof(RateWindow));
                if (!w || hashmap_put(&m->admit.rates, (uint64_t) c->uid + 1, w) < 0) {
                        free(w);
                        return op_errno(error, -ENOMEM, "rate limit");
                }
        }
        if (!rate_window_allow(w, now_ns(), l->rate_count, l->rate_window_ns))
                return op_fail(error, OP_LIMIT_EXCEEDED,
                               "user %s: rate limit of %" PRIu64 " requests per %s reached; try again later",
                               authz_user_name(&m->names, c->uid), l->rate_count,
                               duration_format(l->rate_window_ns, (char[DURATION_MAX]) {}));
        return 0;
}

static Group *resolve_group(Manager *m, const char *path) {
        if (!path || !*path)
                path = m->config && m->config->default_group ? m->config->default_group : "/";
        return tree_find_group(m->tree, path);
}

/* After the kernel took the admission: check the owner again, move the process if asked, record the
 * result, keep the target (moved out of *t), announce. On failure everything is rolled back. */
static int admit_finish(Manager *m, Reservation *res, SchedTarget *t, uid_t caller_uid, uid_t owner, uint64_t *ret_id,
                        OpError *error) {
        uint32_t pid = res->pid, tid = res->tid;
        const Group *g = res->group;
        int r;

        /* The owner again, after the change: the process may have been replaced, or changed its
         * credentials, while the syscall ran. */
        uid_t owner_after;
        if (caller_uid != 0 && (authz_process_owner((pid_t) pid, &owner_after) < 0 || owner_after != owner)) {
                uint64_t id = res->id;
                (void) sched_release(t);
                reservation_release(m->tree, res, NULL);
                (void) state_write_release(m->state, id);
                sched_target_done(t);
                return op_fail(error, OP_PERMISSION_DENIED, "process %" PRIu32 " changed its owner during the admission",
                               pid);
        }
        if (res->flags & EDFD_ADMIT_MOVE) {
                r = cgroup_move_process(m->groups.root, g->cgroup, (pid_t) pid);
                if (r < 0) {
                        uint64_t id = res->id;
                        (void) sched_release(t);
                        reservation_release(m->tree, res, NULL);
                        (void) state_write_release(m->state, id);
                        sched_target_done(t);
                        return op_errno(error, r, "moving the process into its group's cgroup");
                }
        }
        /* No A record: the I written before the change stands for it (see state.h). */
        r = target_put(m, res->id, t);
        if (r < 0) {
                uint64_t id = res->id;
                log_state_failure(r);
                (void) sched_release(t);
                reservation_release(m->tree, res, NULL);
                (void) state_write_release(m->state, id);
                sched_target_done(t);
                return op_errno(error, r, "recording the admission");
        }
        *t = SCHED_TARGET_NULL; /* the targets map has it now */

        log_debug("Admitted %" PRIu64 ": thread %" PRIu32 " of %" PRIu32 " in %s", res->id, tid, pid, g->path);
        manager_bus_emit_added(m, res, "requested");
        notify_status(m);
        maybe_compact(m);
        *ret_id = res->id;
        return 0;
}

/* --- admissions waiting for the kernel --- */

typedef struct PendingAdmit {
        Manager *m;
        uint64_t id;
        SchedTarget t;
        uid_t caller_uid, owner;
        uint64_t until, delay_ns;
        sd_event_source *timer;
        AdmitDone done;
        void *userdata;
        struct PendingAdmit *next;
} PendingAdmit;

bool admit_pending(const Manager *m, uint64_t id) {
        for (const PendingAdmit *p = m->admit.pending; p; p = p->next)
                if (p->id == id)
                        return true;
        return false;
}

/* Unlink p, tell its caller, free it. */
static void pending_end(PendingAdmit *p, uint64_t id, const OpError *error) {
        Manager *m = p->m;

        for (PendingAdmit **q = &m->admit.pending; *q; q = &(*q)->next)
                if (*q == p) {
                        *q = p->next;
                        break;
                }
        sd_event_source_disable_unref(p->timer);
        sched_target_done(&p->t);
        p->done(m, p->userdata, id, error);
        free(p);
}

static int on_admit_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        PendingAdmit *p = userdata;
        Manager *m = p->m;
        Reservation *res = tree_find_reservation(m->tree, p->id);
        OpError e = {};
        uint64_t id = 0;
        int r;

        if (!res) {
                /* Released meanwhile: the thread exited, or its process was released. */
                op_fail(&e, OP_NO_SUCH_THREAD, "admission: the thread is gone (or was released) while the kernel "
                        "refused the bandwidth");
                pending_end(p, 0, &e);
                return 0;
        }
        r = sched_apply_deadline(&p->t, res->params.runtime, res->params.deadline, res->params.period,
                                 sched_flags_of(res->flags));
        if (r == -EBUSY && now_ns() < p->until) {
                p->delay_ns = MIN(p->delay_ns * 2, 5 * NSEC_PER_MSEC);
                (void) sd_event_source_set_time_relative(s, p->delay_ns / 1000);
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
                return 0;
        }
        manager_bus_defer_begin(m); /* the reply first (the done callback sends it), then the signals */
        if (r < 0) {
                uint64_t rid = res->id;
                reservation_release(m->tree, res, NULL);
                (void) state_write_release(m->state, rid);
                (void) kernel_failure(&e, r, "admission");
                pending_end(p, 0, &e);
        } else if (admit_finish(m, res, &p->t, p->caller_uid, p->owner, &id, &e) < 0)
                pending_end(p, 0, &e);
        else
                pending_end(p, id, NULL);
        manager_bus_defer_end(m);
        return 0;
}

/* Wait for the kernel in the background; the target moves into the pending admission. */
static int admit_wait(Manager *m, Reservation *res, SchedTarget *t, const AdmitRequest *req, uid_t owner) {
        PendingAdmit *p = calloc(1, sizeof *p);
        int r;

        if (!p)
                return -ENOMEM;
        *p = (PendingAdmit) { .m = m, .id = res->id, .t = *t, .caller_uid = req->caller.uid, .owner = owner,
                              .until = now_ns() + EBUSY_RETRY_NSEC, .delay_ns = 50 * NSEC_PER_USEC,
                              .done = req->done, .userdata = req->done_userdata };
        r = sd_event_add_time_relative(m->event, &p->timer, CLOCK_MONOTONIC, p->delay_ns / 1000, 0, on_admit_retry, p);
        if (r < 0) {
                free(p);
                return r;
        }
        *t = SCHED_TARGET_NULL;
        p->next = m->admit.pending;
        m->admit.pending = p;
        log_debug("Admission %" PRIu64 ": the kernel says EBUSY although the books have room; retrying", res->id);
        return 0;
}

int manager_admit(Manager *m, const AdmitRequest *req, uint64_t *ret_id, OpError *error) {
        SchedTarget t = SCHED_TARGET_NULL;
        ReservationSpec spec = {};
        Reservation *res, *other;
        SchedInfo si;
        Refusal rf;
        Group *g;
        uid_t owner;
        uint32_t pid = req->pid, tid = req->tid;
        int r;

        if (req->flags & ~EDFD_ADMIT_ALL)
                return op_fail(error, OP_INVALID, "unknown flags 0x%" PRIx64 " (known: 1 reclaim, 2 overrun signal, 4 move)",
                               req->flags & ~EDFD_ADMIT_ALL);
        g = resolve_group(m, req->group);
        if (!g) {
                rf = (Refusal) { .outcome = ADMIT_NO_SUCH_GROUP,
                                 .name = req->group && *req->group ? req->group : "(default group)" };
                return op_refused(error, &rf);
        }
        if (pid == 0)
                pid = (uint32_t) req->caller.pid;
        if (tid == 0)
                tid = pid;
        if (pid > INT32_MAX || tid > INT32_MAX)
                return op_fail(error, OP_NO_SUCH_THREAD, "no thread %" PRIu32 " in process %" PRIu32, tid, pid);

        /* Check the parameters before touching anything of the thread. */
        DlParams p = req->params;
        ParamsOutcome po = dl_params_check(&p, &m->tree->limits);
        if (po != PARAMS_OK) {
                rf = (Refusal) { .outcome = ADMIT_BAD_PARAMS, .params = po };
                return op_refused(error, &rf);
        }

        other = tree_find_thread(m->tree, tid);
        if (other) {
                rf = (Refusal) { .outcome = ADMIT_ALREADY_ADMITTED, .name = g->path, .id = other->id };
                return op_refused(error, &rf);
        }

        if (pid == 1)
                return op_fail(error, OP_PERMISSION_DENIED,
                               "pid 1 is never admitted: under a fork policy every process it starts would be split");
        r = sched_pin_cached(&m->pins, (pid_t) pid, (pid_t) tid, &t);
        if (r == -EMFILE || r == -ENFILE)
                return op_errno(error, r, "holding the thread (edfd keeps a pidfd per reservation: raise its LimitNOFILE=)");
        if (r < 0 && r != -ESRCH && r != -ENOENT)
                return op_errno(error, r, "pinning the thread");
        if (r < 0)
                return op_fail(error, OP_NO_SUCH_THREAD, "no thread %" PRIu32 " in process %" PRIu32, tid, pid);
        if (t.kernel_thread) {
                sched_target_done(&t);
                return op_fail(error, OP_PERMISSION_DENIED, "process %" PRIu32 " is a kernel thread: not edfd's to change",
                               pid);
        }

        r = authz_process_owner((pid_t) pid, &owner);
        if (r < 0) {
                sched_target_done(&t);
                return op_fail(error, OP_NO_SUCH_THREAD, "process %" PRIu32 " is gone", pid);
        }
        if (req->caller.uid != 0 && owner != req->caller.uid) {
                sched_target_done(&t);
                return op_fail(error, OP_PERMISSION_DENIED, "thread %" PRIu32 " belongs to uid %u, not to you (uid %u)",
                               tid, (unsigned) owner, (unsigned) req->caller.uid);
        }
        if (!authz_group_allows(g, req->caller.uid, authz_user_name(&m->names, req->caller.uid))) {
                sched_target_done(&t);
                return op_fail(error, OP_PERMISSION_DENIED, "group %s does not allow uid %u (see its users: list)",
                               g->path, (unsigned) req->caller.uid);
        }
        if ((req->flags & EDFD_ADMIT_MOVE) && req->caller.uid != 0 && !req->may_move) {
                sched_target_done(&t);
                return op_fail(error, OP_PERMISSION_DENIED,
                               "moving a process into edfd's cgroups (flag 4) needs root or polkit's "
                               "org.edfd.Admission1.manage: it would leave its user slice's limits");
        }
        if ((req->flags & EDFD_ADMIT_MOVE) && (!g->cgroup || !m->groups.usable)) {
                sched_target_done(&t);
                return op_fail(error, OP_INVALID, "group %s has no cgroup to move into%s", g->path,
                               m->groups.usable ? "" : " (the cgroup root is not usable)");
        }
        r = sched_get((pid_t) tid, &si);
        if (r < 0) {
                sched_target_done(&t);
                return op_fail(error, OP_NO_SUCH_THREAD, "thread %" PRIu32 " is gone", tid);
        }
        if (si.policy == SCHED_DEADLINE) {
                sched_target_done(&t);
                return op_fail(error, OP_FOREIGN_DEADLINE,
                               "thread %" PRIu32 " is SCHED_DEADLINE already (%s/%s), set outside edfd", tid,
                               duration_format(si.runtime, (char[DURATION_MAX]) {}),
                               duration_format(si.period, (char[DURATION_MAX]) {}));
        }

        /* Per-user limits, charged to the thread's owner, for callers other than root. */
        if (req->caller.uid != 0) {
                UserLimits lim = limits_of(m, owner, NULL);
                uint64_t bw = 0;
                (void) bw_of(p.runtime, p.period, &bw);
                if (user_limits_check(m->tree, owner, &lim, bw, 1, &rf) != 0) {
                        sched_target_done(&t);
                        return op_limit(m, error, owner, &rf);
                }
        }

        /* Decide. */
        spec = (ReservationSpec) {
                .pid = pid, .tid = tid, .uid = owner, .identity = t.identity, .params = p, .flags = req->flags,
        };
        r = reservation_admit(m->tree, g, &spec, &res, &rf);
        if (r != 0) {
                sched_target_done(&t);
                if (r < 0)
                        return op_errno(error, r, "admission");
                return op_refused(error, &rf);
        }

        /* Record the intent, apply, record the result. */
        r = record(m, true, res);
        if (r < 0) {
                log_state_failure(r);
                reservation_release(m->tree, res, NULL);
                sched_target_done(&t);
                return op_errno(error, r, "recording the admission");
        }
        if (req->done) {
                /* Pinned (or found alive) and read above: no second verify and read before the change. */
                r = sched_apply_deadline_known(&t, &si, res->params.runtime, res->params.deadline, res->params.period,
                                               sched_flags_of(res->flags));
                if (r == -EBUSY && admit_wait(m, res, &t, req, owner) == 0)
                        return 1;
        } else
                r = apply_with_retry(&t, &res->params, res->flags);
        if (r < 0) {
                uint64_t id = res->id;
                reservation_release(m->tree, res, NULL);
                (void) state_write_release(m->state, id);
                sched_target_done(&t);
                return kernel_failure(error, r, "admission");
        }
        return admit_finish(m, res, &t, req->caller.uid, owner, ret_id, error);
}

int manager_update(Manager *m, const Caller *c, uint64_t id, const DlParams *params, OpError *error) {
        Reservation *res = tree_find_reservation(m->tree, id);
        SchedTarget *t;
        DlParams old;
        Refusal rf;
        int r;

        if (!res)
                return op_fail(error, OP_NO_SUCH_RESERVATION, "no reservation %" PRIu64, id);
        if (!manager_may_touch(m, c, res))
                return op_fail(error, OP_PERMISSION_DENIED, "reservation %" PRIu64 " is not yours", id);
        t = target_get(m, id);
        old = res->params;
        if (c->uid != 0) {
                DlParams np = *params;
                UserLimits lim = limits_of(m, res->uid, NULL);
                uint64_t bw;
                if (dl_params_check(&np, &m->tree->limits) == PARAMS_OK && bw_of(np.runtime, np.period, &bw) == 0 &&
                    bw > res->bw && user_limits_check(m->tree, res->uid, &lim, bw - res->bw, 0, &rf) != 0)
                        return op_limit(m, error, res->uid, &rf);
        }
        r = reservation_update(m->tree, res, params, &rf);
        if (r < 0)
                return op_errno(error, r, "update");
        if (r > 0)
                return op_refused(error, &rf);
        r = record(m, true, res);
        if (r < 0) {
                log_state_failure(r);
                (void) reservation_update(m->tree, res, &old, NULL);
                return op_errno(error, r, "recording the update");
        }
        r = t ? apply_with_retry(t, &res->params, res->flags) : -ESRCH;
        if (r < 0) {
                (void) reservation_update(m->tree, res, &old, NULL); /* shrinking back always fits */
                (void) record(m, false, res);
                return kernel_failure(error, r, "update");
        }
        r = record(m, false, res);
        if (r < 0)
                log_state_failure(r);
        manager_bus_emit_changed(m, res, "requested");
        notify_status(m);
        maybe_compact(m);
        return 0;
}

void admit_stop(Manager *m) {
        while (m->admit.pending) {
                OpError e = {};
                op_fail(&e, OP_KERNEL_REFUSED, "admission: edfd is stopping while the kernel still refused the "
                        "bandwidth (EBUSY)");
                pending_end(m->admit.pending, 0, &e);
        }
        hashmap_done_free(&m->admit.rates, free);
}
