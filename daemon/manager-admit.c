/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The admission room: Admit (the checks, the decision in the core, record, apply, record) with its
 * queue of admissions that wait for the kernel to take the bandwidth (EBUSY although the books have
 * room), Update, and the callers' rate limits. */

#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bandwidth.h"
#include "cgroup.h"
#include "core/duration.h"
#include "core/holders.h"
#include "log.h"
#include "basic/macro.h"
#include "manager-bus.h"
#include "manager-internal.h"
#include "shared/protocol.h"
#include "sched-dl.h"

int manager_rate_check(Manager *m, const Caller *c, OpError *error) {
        AdmissionCaller ac;
        RateWindow *w;
        Refusal rf;

        if (c->uid == 0)
                return 0;
        ac = manager_admission_caller(m, c);
        if (!admission_rate_applies(&ac))
                return 0;
        w = hashmap_get(&m->admit.rates, (uint64_t) c->uid + 1);
        if (!w) {
                w = calloc(1, sizeof(RateWindow));
                if (!w || hashmap_put(&m->admit.rates, (uint64_t) c->uid + 1, w) < 0) {
                        free(w);
                        return op_errno(error, -ENOMEM, "rate limit");
                }
        }
        if (admission_rate_check(&ac, w, now_ns(), &rf) != 0)
                return op_refused(error, &rf);
        return 0;
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
                if (res->partitioned)
                        place_move_out(m, res->pid, res->tid);
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
                        if (res->partitioned)
                                place_move_out(m, res->pid, res->tid);
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
                if (res->partitioned)
                        place_move_out(m, res->pid, res->tid);
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

/* --- EBUSY although the books have room: who holds it --- */

/* A scan this recent (of another admission that waited) is reused. */
#define BUSY_RESCAN_REUSE_NSEC (10 * NSEC_PER_MSEC)

/* The kernel refused res with EBUSY to the end of the retry window although the books have room.
 * res leaves the books and the journal; then edfd looks at once for deadline threads it does not
 * manage, as its periodic look does (the Unmanaged property, the root's books, the status), and
 * answers: the books' own refusal when the request no longer fits them (naming the strangers), else
 * KernelRefused naming them, or saying that the bandwidth is most likely still held for deadline
 * threads that ended and when it comes back. Returns -1 with *e. The scan walks /proc (see
 * capacity_scan_unmanaged()); it runs only here, never for an admission the kernel takes, and a
 * scan less than BUSY_RESCAN_REUSE_NSEC old (another admission that waited) is reused. */
static int admit_busy(Manager *m, Reservation *res, const char *what, OpError *e) {
        char strangers[384] = "", ended[192];
        const Group *g = res->group;
        uint64_t need = res->bw, id = res->id, scanned;
        size_t len;

        reservation_release(m->tree, res, NULL);
        (void) state_write_release(m->state, id);
        scanned = capacity_scanned_ns(m->capacity);
        if (scanned == 0 || now_ns() - scanned >= BUSY_RESCAN_REUSE_NSEC) {
                log_debug("Admission %" PRIu64 ": the kernel said EBUSY for %" PRIu64 " ms although the books have "
                          "room: looking for deadline threads edfd does not manage", id,
                          (uint64_t) (EBUSY_RETRY_NSEC / NSEC_PER_MSEC));
                capacity_refresh_all(m);
        }
        (void) holders_format(capacity_unmanaged_holders(m->capacity), strangers, sizeof strangers);
        if (!group_has_room(m->tree, g, 0, need)) {
                Refusal rf;
                (void) group_refuse_budget(m->tree, g, need, &rf);
                op_refused(e, &rf);
                len = strlen(e->message);
                if (strangers[0])
                        snprintf(e->message + len, sizeof e->message - len, " (%s)", strangers);
                return -1;
        }
        (void) holders_format_ended(capacity_ended_back_in(m->capacity), ended, sizeof ended);
        return op_fail(e, OP_KERNEL_REFUSED,
                       "%s: the kernel refused the bandwidth (EBUSY) although edfd's books have room: %s%s%s", what,
                       strangers, strangers[0] ? "; the rest is " : "", ended);
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
        if (r == -EBUSY) {
                (void) admit_busy(m, res, "admission", &e);
                pending_end(p, 0, &e);
        } else if (r < 0) {
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

/* What the admission module asks about the thread, answered from the kernel: the pin (kept in
 * probe->t for the apply), whether it is a kernel thread, its owner, its policy. */
typedef struct AdmitProbe {
        Manager *m;
        SchedTarget t;
        SchedInfo si;
        int pin_error;             /* the pin's own error, for its message */
} AdmitProbe;

static int admit_probe(void *userdata, uint32_t pid, uint32_t tid, ThreadFacts *ret) {
        AdmitProbe *p = userdata;
        uid_t owner = 0;
        int r;

        r = sched_pin_cached(&p->m->pins, (pid_t) pid, (pid_t) tid, &p->t);
        if (r < 0) {
                p->pin_error = r;
                return r;
        }
        *ret = (ThreadFacts) { .kernel_thread = p->t.kernel_thread };
        if (p->t.kernel_thread)
                return 0;
        ret->owner_error = authz_process_owner((pid_t) pid, &owner);
        ret->owner = (uint32_t) owner;
        if (ret->owner_error < 0)
                return 0;
        ret->sched_error = sched_get((pid_t) tid, &p->si);
        if (ret->sched_error == 0 && p->si.policy == SCHED_DEADLINE) {
                ret->deadline = true;
                ret->current = (DlParams) { p->si.runtime, p->si.deadline, p->si.period };
        }
        return 0;
}

/* The caller as the admission module sees it: its name, and for callers other than root its
 * per-user limits and request rate. */
AdmissionCaller manager_admission_caller(Manager *m, const Caller *c) {
        AdmissionCaller ac = { .uid = c->uid, .pid = (uint32_t) c->pid, .user = authz_user_name(&m->names, c->uid),
                               .limits = USER_LIMITS_NONE };
        const ConfLimit *l = NULL;

        if (c->uid != 0) {
                ac.limits = limits_of(m, c->uid, &l);
                if (l)
                        ac.rate = (RateLimit) { l->rate_count, l->rate_window_ns };
        }
        return ac;
}

int manager_admit_check_args(const AdmitRequest *req, OpError *error) {
        AdmissionRequest areq = { .pid = req->pid, .tid = req->tid, .group = req->group, .flags = req->flags };
        Refusal rf;

        if (admission_check_args(&areq, &rf) != 0)
                return op_refused(error, &rf);
        return 0;
}

/* Decide req in the core (every rule of core/admission.h, in its order), then where it goes. 0 with
 * *ret, *ret_partitioned, *ret_cpu and the thread pinned in probe->t (the caller's to keep or
 * drop), or -1 with *error and nothing pinned. */
static int decide(Manager *m, const AdmitRequest *req, AdmitProbe *probe, AdmissionDecision *ret,
                  bool *ret_partitioned, uint32_t *ret_cpu, OpError *error) {
        AdmissionRequest areq = {
                .pid = req->pid, .tid = req->tid, .group = req->group,
                .default_group = m->config ? m->config->default_group : NULL,
                .params = req->params, .flags = req->flags,
                .caller = manager_admission_caller(m, &req->caller),
                .may_move = req->may_move, .moves_process = manager_admission_moves_process(m, req->group),
                .cgroups_usable = m->groups.usable, .probe = admit_probe, .probe_userdata = probe,
        };
        Refusal rf;
        int r;

        r = admission_decide(m->tree, &areq, ret, &rf);
        if (r != 0) {
                sched_target_done(&probe->t);
                if (r > 0)
                        return op_refused(error, &rf);
                if (r == -EMFILE || r == -ENFILE)
                        return op_errno(error, r,
                                        "holding the thread (edfd keeps a pidfd per reservation: raise its LimitNOFILE=)");
                return op_errno(error, r, probe->pin_error ? "pinning the thread" : "admission");
        }
        /* Where: globally, or on the CPU of a partition that the exact test chose (manager-place.c). */
        if (place_decide(m, ret->group, &ret->params, req->forced_cpu, ret_partitioned, ret_cpu, error) < 0) {
                sched_target_done(&probe->t);
                return -1;
        }
        return 0;
}

int manager_admit_decide(Manager *m, const AdmitRequest *req, const Group **ret_group, OpError *error) {
        AdmitProbe probe = { .m = m, .t = SCHED_TARGET_NULL };
        AdmissionDecision d;
        bool partitioned;
        uint32_t cpu;

        if (decide(m, req, &probe, &d, &partitioned, &cpu, error) < 0)
                return -1;
        sched_target_done(&probe.t);
        if (ret_group)
                *ret_group = d.group;
        return 0;
}

int manager_admit(Manager *m, const AdmitRequest *req, uint64_t *ret_id, OpError *error) {
        AdmitProbe probe = { .m = m, .t = SCHED_TARGET_NULL };
        SchedTarget t;
        AdmissionDecision d;
        ReservationSpec spec;
        Reservation *res;
        SchedInfo si;
        Refusal rf;
        uid_t owner;
        bool partitioned;
        uint32_t cpu;
        int r;

        if (decide(m, req, &probe, &d, &partitioned, &cpu, error) < 0)
                return -1;
        t = probe.t;
        si = probe.si;
        owner = d.owner;

        /* Apply the decision to the books. */
        spec = (ReservationSpec) {
                .pid = d.pid, .tid = d.tid, .uid = d.owner, .identity = t.identity, .params = d.params, .flags = d.flags,
                .partitioned = partitioned, .cpu = cpu,
        };
        r = reservation_admit(m->tree, d.group, &spec, &res, &rf);
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
        if (partitioned) {
                /* Into its CPU's partition first: the kernel admits it there, or not at all. */
                r = place_move_in(m, cpu, res->pid, res->tid, error);
                if (r < 0) {
                        uint64_t id = res->id;
                        place_move_out(m, res->pid, res->tid);
                        reservation_release(m->tree, res, NULL);
                        (void) state_write_release(m->state, id);
                        sched_target_done(&t);
                        return -1;
                }
                r = req->done ? sched_apply_deadline_known(&t, &si, res->params.runtime, res->params.deadline,
                                                           res->params.period, sched_flags_of(res->flags))
                              : sched_apply_deadline(&t, res->params.runtime, res->params.deadline,
                                                     res->params.period, sched_flags_of(res->flags));
                if (r == -EPERM && place_wait_ran(cpu, res->pid, res->tid))
                        r = sched_apply_deadline(&t, res->params.runtime, res->params.deadline, res->params.period,
                                                 sched_flags_of(res->flags));
                if (r == -EBUSY)
                        r = apply_with_retry(&t, &res->params, res->flags);
                if (r < 0)
                        place_move_out(m, res->pid, res->tid);
                if (r == -EPERM) {
                        uint64_t id = res->id;
                        reservation_release(m->tree, res, NULL);
                        (void) state_write_release(m->state, id);
                        sched_target_done(&t);
                        return op_fail(error, OP_KERNEL_REFUSED,
                                       "admission: the kernel refused thread %" PRIu32 " on cpu%" PRIu32 " (EPERM): it has "
                                       "not run there since it was moved (a sleeping thread moves when it wakes)",
                                       d.tid, cpu);
                }
        } else if (req->done) {
                /* Pinned (or found alive) and read above: no second verify and read before the change. */
                r = sched_apply_deadline_known(&t, &si, res->params.runtime, res->params.deadline, res->params.period,
                                               sched_flags_of(res->flags));
                if (r == -EBUSY && admit_wait(m, res, &t, req, owner) == 0)
                        return 1;
        } else
                r = apply_with_retry(&t, &res->params, res->flags);
        if (r == -EBUSY) {
                sched_target_done(&t);
                return admit_busy(m, res, "admission", error);
        }
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
        AdmissionUpdate req = { .id = id, .params = *params, .caller = manager_admission_caller(m, c) };
        AdmissionUpdateDecision d;
        Reservation *res;
        SchedTarget *t;
        DlParams old;
        Refusal rf;
        int r;

        r = admission_update_decide(m->tree, &req, &d, &rf);
        if (r > 0)
                return op_refused(error, &rf);
        if (r < 0)
                return op_errno(error, r, "update");
        res = d.reservation;
        t = target_get(m, id);
        old = res->params;
        r = reservation_update(m->tree, res, &d.params, &rf);
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
