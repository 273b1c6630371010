/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "core/bandwidth.h"
#include "cgroup.h"
#include "core/duration.h"
#include "log.h"
#include "basic/macro.h"
#include "manager.h"
#include "shared/protocol.h"
#include "sched-dl.h"

extern const char edfd_default_config[];

#define DEFAULT_STATE_DIR "/run/edfd"
#define RESYNC_INTERVAL_USEC (10 * UINT64_C(1000000))
/* How long an EBUSY from the kernel is retried when the books say the request fits: bandwidth of
 * an exited or demoted task comes back at its 0-lag time, within its period. */
#define EBUSY_RETRY_NSEC (100 * NSEC_PER_MSEC)
/* See Manager.recount_unsafe_until_ns: past a 0-lag time by this much (also covers exit events not
 * read yet), and read at least this often. */
#define RECOUNT_SLACK_NSEC (100 * NSEC_PER_MSEC)
#define RT_REREAD_MAX_NSEC (300 * NSEC_PER_SEC)

_printf_(3, 4) static int op_fail(OpError *e, OpFailure kind, const char *fmt, ...) {
        va_list ap;

        e->kind = kind;
        va_start(ap, fmt);
        vsnprintf(e->message, sizeof e->message, fmt, ap);
        va_end(ap);
        return -1;
}

static int op_refused(OpError *e, const Refusal *r) {
        e->kind = OP_REFUSED;
        e->refusal = *r;
        refusal_format(r, e->message, sizeof e->message);
        return -1;
}

static int op_errno(OpError *e, int err, const char *what) {
        e->kind = OP_ERRNO;
        e->err = err;
        snprintf(e->message, sizeof e->message, "%s: %s", what, strerror(-err));
        return -1;
}

/* --- targets: the pinned threads of reservations --- */

static SchedTarget *target_get(Manager *m, uint64_t id) {
        return hashmap_get(&m->targets, id);
}

static int target_put(Manager *m, uint64_t id, const SchedTarget *t) {
        SchedTarget *copy = malloc(sizeof *copy);
        int r;

        if (!copy)
                return -ENOMEM;
        *copy = *t;
        r = hashmap_put(&m->targets, id, copy);
        if (r < 0)
                free(copy);
        return r;
}

static void target_drop(Manager *m, uint64_t id) {
        SchedTarget *t = hashmap_remove(&m->targets, id);

        if (t) {
                sched_target_done(t);
                free(t);
        }
}

static uint64_t sched_flags_of(uint64_t admit_flags) {
        return ((admit_flags & EDFD_ADMIT_RECLAIM) ? SCHED_FLAG_RECLAIM : 0) |
               ((admit_flags & EDFD_ADMIT_OVERRUN_SIGNAL) ? SCHED_FLAG_DL_OVERRUN : 0);
}

#define OVERCOMMIT_LOG_INTERVAL_NSEC (60 * NSEC_PER_SEC)

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

/* sched_apply_deadline, retrying EBUSY briefly: the books say it fits, so the kernel is still
 * holding bandwidth that is on its way back. */
static int apply_with_retry(const SchedTarget *t, const DlParams *p, uint64_t flags) {
        uint64_t until = now_ns() + EBUSY_RETRY_NSEC;
        int r;

        for (unsigned i = 0;; i++) {
                r = sched_apply_deadline(t, p->runtime, p->deadline, p->period, sched_flags_of(flags));
                if (r != -EBUSY || now_ns() >= until)
                        return r;
                /* 50 us, doubling up to 5 ms. */
                struct timespec ts = { 0, (long) MIN(50000UL << MIN(i, 7u), 5000000UL) };
                nanosleep(&ts, NULL);
        }
}

static int kernel_failure(OpError *e, int r, const char *what) {
        switch (r) {
        case -EBUSY:
                return op_fail(e, OP_KERNEL_REFUSED,
                               "%s: the kernel refused the bandwidth (EBUSY) although edfd's books have room: a "
                               "deadline thread edfd does not manage may hold it",
                               what);
        case -EPERM:
                return op_fail(e, OP_KERNEL_REFUSED,
                               "%s: the kernel refused (EPERM): the thread's CPU affinity must span its whole root "
                               "domain, and edfd needs CAP_SYS_NICE",
                               what);
        case -ESRCH:
        case -ENOENT:
                return op_fail(e, OP_NO_SUCH_THREAD, "%s: the thread is gone", what);
        case -EINVAL:
                return op_fail(e, OP_KERNEL_REFUSED, "%s: the kernel refused the parameters (EINVAL)", what);
        default:
                return op_errno(e, r, what);
        }
}

/* --- state --- */

static int record(Manager *m, bool intent, const Reservation *r) {
        StateRecord rec;

        state_record_from(&rec, r);
        return state_write_reservation(m->state, intent, &rec);
}

static void maybe_compact(Manager *m);

static void log_state_failure(int r) {
        log_error("Failed to record a change in the state directory: %s", strerror(-r));
}

/* --- status --- */

static void send_status(Manager *m) {
        char a[DURATION_MAX], b[DURATION_MAX];
        size_t n_groups = m->tree->n_groups - 1;

        sd_notifyf(false,
                   "STATUS=%zu reservations in %zu groups, %s of %s allocated%s%s%s; events %" PRIu64 " seen, %" PRIu64
                   " lost, %" PRIu64 " resyncs, %" PRIu64 " unseen children",
                   m->tree->n_reservations, n_groups, bw_format(m->tree->root->allocated, a),
                   bw_format(m->tree->root->bw, b),
                   tree_overcommitted(m->tree) ? " (OVERCOMMITTED: admissions refused)" : "",
                   m->kcap.admission_off ? " (kernel admission OFF)" : "",
                   m->count_negative ? " (the kernel's deadline count is below zero: it refuses every admission)" : "",
                   m->events_seen,
                   m->events_lost, m->resyncs, m->unseen_children);
}

static int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        send_status(userdata);
        return 0;
}

/* Tell systemd the new STATUS=, at most every STATUS_INTERVAL_USEC: a burst of admissions or a
 * fork storm should not cost systemd a message each. */
#define STATUS_INTERVAL_USEC (250 * UINT64_C(1000))
static void notify_status(Manager *m) {
        uint64_t now;
        int r;

        if (!m->event) {
                send_status(m);
                return;
        }
        if (m->status_timer) {
                int enabled = SD_EVENT_OFF;
                (void) sd_event_source_get_enabled(m->status_timer, &enabled);
                if (enabled != SD_EVENT_OFF)
                        return; /* one is due already */
        }
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        if (!m->status_timer) {
                r = sd_event_add_time(m->event, &m->status_timer, CLOCK_MONOTONIC, now + STATUS_INTERVAL_USEC, 0,
                                      on_status_timer, m);
                if (r < 0)
                        send_status(m);
                else
                        (void) sd_event_source_set_enabled(m->status_timer, SD_EVENT_ONESHOT);
                return;
        }
        (void) sd_event_source_set_time(m->status_timer, now + STATUS_INTERVAL_USEC);
        (void) sd_event_source_set_enabled(m->status_timer, SD_EVENT_ONESHOT);
}

/* --- operations --- */

bool manager_may_touch(const Manager *m, const Caller *c, const Reservation *r) {
        return c->uid == 0 || c->uid == r->uid;
}

/* The configuration's limits for uid (its own entry, else "default", else none). */
static UserLimits limits_of(Manager *m, uid_t uid, const ConfLimit **ret_conf) {
        const ConfLimit *l;

        l = conf_find_limit(m->config, authz_user_name(&m->names, uid));
        if (ret_conf)
                *ret_conf = l;
        return l ? (UserLimits) { .bandwidth = l->bandwidth, .reservations = l->reservations } : USER_LIMITS_NONE;
}

static int op_limit(Manager *m, OpError *e, uid_t owner, const Refusal *rf) {
        char why[256];

        e->kind = OP_LIMIT_EXCEEDED;
        e->refusal = *rf;
        snprintf(e->message, sizeof e->message, "user %s: %s", authz_user_name(&m->names, owner),
                 refusal_format(rf, why, sizeof why));
        return -1;
}

int manager_rate_check(Manager *m, const Caller *c, OpError *error) {
        const ConfLimit *l = NULL;
        RateWindow *w;

        if (c->uid == 0)
                return 0;
        (void) limits_of(m, c->uid, &l);
        if (!l || l->rate_count == 0 || l->rate_window_ns == 0)
                return 0;
        w = hashmap_get(&m->rates, (uint64_t) c->uid + 1);
        if (!w) {
                w = calloc(1, sizeof(RateWindow));
                if (!w || hashmap_put(&m->rates, (uint64_t) c->uid + 1, w) < 0) {
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
                r = cgroup_move_process(m->cgroup_root, g->cgroup, (pid_t) pid);
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

static bool admit_pending(const Manager *m, uint64_t id) {
        for (const PendingAdmit *p = m->pending_admits; p; p = p->next)
                if (p->id == id)
                        return true;
        return false;
}

/* Unlink p, tell its caller, free it. */
static void pending_end(PendingAdmit *p, uint64_t id, const OpError *error) {
        Manager *m = p->m;

        for (PendingAdmit **q = &m->pending_admits; *q; q = &(*q)->next)
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
        m->defer_signals = true; /* the reply first (the bus half's done callback sends them) */
        if (r < 0) {
                uint64_t rid = res->id;
                reservation_release(m->tree, res, NULL);
                (void) state_write_release(m->state, rid);
                (void) kernel_failure(&e, r, "admission");
                pending_end(p, 0, &e);
                return 0;
        }
        if (admit_finish(m, res, &p->t, p->caller_uid, p->owner, &id, &e) < 0)
                pending_end(p, 0, &e);
        else
                pending_end(p, id, NULL);
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
        p->next = m->pending_admits;
        m->pending_admits = p;
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
        if ((req->flags & EDFD_ADMIT_MOVE) && (!g->cgroup || !m->cgroups_usable)) {
                sched_target_done(&t);
                return op_fail(error, OP_INVALID, "group %s has no cgroup to move into%s", g->path,
                               m->cgroups_usable ? "" : " (the cgroup root is not usable)");
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

/* --- returns to a donor that the kernel refused for the moment --- */

/* A child that exits gives its bandwidth back to the kernel only at its 0-lag time when it was not
 * running (up to one period later), so in a fork storm the kernel's pool fills with children that
 * have ended, and giving their runtime back to the donor gets EBUSY although the books balance.
 * edfd does not wait for that in the event loop: the runtime stays with the group, and a timer gives
 * it back as soon as the kernel has the room (first after RETURN_RETRY_MIN_USEC, backing off to
 * RETURN_RETRY_MAX_USEC while the kernel keeps refusing), for as long as the donor lives with the
 * same deadline and period. The donor may change meanwhile (split again by another fork, or given
 * another child's runtime): what comes back is the runtime the child held, added to what the donor
 * has then. */
#define RETURN_RETRY_MIN_USEC (50 * UINT64_C(1000))
#define RETURN_RETRY_MAX_USEC (2 * UINT64_C(1000000))

typedef struct PendingReturn {
        uint64_t donor_id;
        uint64_t runtime;          /* what goes back */
        uint64_t deadline, period; /* the donor's when it was refused */
        struct PendingReturn *next;
} PendingReturn;

/* One attempt: 1 done (returned, or no longer possible: the donor is gone, its deadline or period
 * changed, or its group gave the room away), 0 to try again. */
static int return_try(Manager *m, PendingReturn *p) {
        Reservation *donor = tree_find_reservation(m->tree, p->donor_id);
        SchedTarget *dt = donor ? target_get(m, donor->id) : NULL;
        DlParams from, to;
        Refusal rf;
        int r;

        if (!donor || !dt || donor->params.deadline != p->deadline || donor->params.period != p->period)
                return 1;
        from = to = donor->params;
        if (__builtin_add_overflow(from.runtime, p->runtime, &to.runtime) || to.runtime > to.deadline ||
            reservation_update(m->tree, donor, &to, &rf) != 0) {
                log_notice("Reservation %" PRIu64 " does not get %" PRIu64 " ns of runtime back: group %s has given the "
                           "room away, or the donor changed",
                           donor->id, p->runtime, donor->group->path);
                return 1;
        }
        (void) record(m, true, donor);
        r = sched_apply_deadline(dt, to.runtime, to.deadline, to.period, sched_flags_of(donor->flags));
        if (r < 0) {
                (void) reservation_update(m->tree, donor, &from, NULL);
                (void) record(m, false, donor);
                if (r == -EBUSY)
                        return 0;
                log_notice("The kernel would not give reservation %" PRIu64 " back its runtime (%s): it stays with "
                           "group %s",
                           donor->id, strerror(-r), donor->group->path);
                return 1;
        }
        (void) record(m, false, donor);
        log_debug("Reservation %" PRIu64 " has %" PRIu64 " ns of runtime back: the kernel had room again", donor->id,
                  p->runtime);
        manager_bus_emit_changed(m, donor, "returned");
        notify_status(m);
        return 1;
}

static int on_return_timer(sd_event_source *s, uint64_t usec, void *userdata);

static void return_timer_arm(Manager *m, uint64_t delay_usec) {
        uint64_t now;

        if (!m->event || sd_event_now(m->event, CLOCK_MONOTONIC, &now) < 0)
                return;
        m->return_delay_usec = delay_usec;
        if (!m->return_timer) {
                if (sd_event_add_time(m->event, &m->return_timer, CLOCK_MONOTONIC, now + delay_usec, 0,
                                      on_return_timer, m) < 0)
                        log_warning("Cannot arm the timer that gives donors their runtime back");
                return;
        }
        (void) sd_event_source_set_time(m->return_timer, now + delay_usec);
        (void) sd_event_source_set_enabled(m->return_timer, SD_EVENT_ONESHOT);
}

static int on_return_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        bool progress = false;

        for (PendingReturn **q = &m->pending_returns; *q;) {
                PendingReturn *p = *q;
                if (return_try(m, p) == 0) {
                        q = &p->next;
                        continue;
                }
                progress = true;
                *q = p->next;
                free(p);
        }
        if (m->pending_returns)
                return_timer_arm(m, progress ? RETURN_RETRY_MIN_USEC
                                             : MIN(m->return_delay_usec * 2, RETURN_RETRY_MAX_USEC));
        return 0;
}

static void return_later(Manager *m, const Reservation *donor, uint64_t runtime) {
        PendingReturn *p = calloc(1, sizeof *p);

        if (!p) {
                (void) log_oom();
                return;
        }
        *p = (PendingReturn) { .donor_id = donor->id, .runtime = runtime, .deadline = donor->params.deadline,
                               .period = donor->params.period, .next = m->pending_returns };
        m->pending_returns = p;
        return_timer_arm(m, RETURN_RETRY_MIN_USEC);
}

/* The core's donor rule has given a child's runtime back to its donor in the books (e): give it in
 * the kernel too. One try: on EBUSY the kernel still holds the child's bandwidth (until its 0-lag
 * time), so the books go back to e->donor_old and return_later() waits for the room from a timer, not
 * here; on another error the runtime stays with the group. Returns true when the donor has it now. */
static bool donor_give_back(Manager *m, const ReleaseEffect *e, uint64_t child_id) {
        SchedTarget *dt = target_get(m, e->donor->id);
        uint64_t back = e->donor->params.runtime - e->donor_old.runtime;
        int r;

        (void) record(m, true, e->donor);
        r = dt ? sched_apply_deadline(dt, e->donor->params.runtime, e->donor->params.deadline, e->donor->params.period,
                                      sched_flags_of(e->donor->flags))
               : -ESRCH;
        if (r < 0) {
                if (r == -EBUSY)
                        log_debug("The kernel has no room yet to give reservation %" PRIu64 " back the runtime of %" PRIu64
                                  ": it waits with group %s",
                                  e->donor->id, child_id, e->donor->group->path);
                else
                        log_notice("The kernel would not give reservation %" PRIu64 " back the runtime of %" PRIu64
                                   " (%s): it stays with group %s",
                                   e->donor->id, child_id, strerror(-r), e->donor->group->path);
                (void) reservation_update(m->tree, e->donor, &e->donor_old, NULL);
                (void) record(m, false, e->donor);
                if (r == -EBUSY)
                        return_later(m, e->donor, back);
                return false;
        }
        (void) record(m, false, e->donor);
        return true;
}

static void capacity_refresh(Manager *m);

/* capacity_read(), which has the kernel recount (see capacity.h); remembers when, and what debugfs
 * showed as dl_bw->bw then (read without side effects: while it shows the same, the sysctls have
 * not changed and need no reading). */
static int rt_read(Manager *m, KernelCapacity *ret) {
        int r = capacity_read(ret);

        if (r < 0)
                return r;
        m->rt_read_ns = now_ns();
        m->dl_bw_known = capacity_read_dl_bw(&m->dl_bw_at_read) == 0;
        return 0;
}

/* Once none of edfd's ended deadline threads can be waiting for its 0-lag time: the capacity is
 * read, which has the kernel recount (see capacity.h), and so give back what it kept for children
 * raised after they had ended. Until then the timer only moves on. */
static int on_recount_timer(sd_event_source *s, uint64_t usec, void *userdata);

static void recount_arm(Manager *m) {
        int r;

        if (!m->event || m->recount_timer)
                return;
        r = sd_event_add_time(m->event, &m->recount_timer, CLOCK_MONOTONIC, m->recount_unsafe_until_ns / 1000, 0,
                              on_recount_timer, m);
        if (r < 0)
                log_debug("Cannot arm the timer to read the kernel's capacity later: %s", strerror(-r));
}

static int on_recount_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        KernelCapacity kc;

        (void) usec;
        m->recount_timer = sd_event_source_disable_unref(s);
        if (now_ns() < m->recount_unsafe_until_ns) {
                recount_arm(m);
                return 0;
        }
        /* Only the read: the rest of a capacity refresh (the scan for unmanaged threads) waits for
         * the periodic look, unless the sysctls changed meanwhile. */
        log_debug("No deadline thread of edfd's is ending: reading the capacity (the kernel recounts)");
        if (rt_read(m, &kc) < 0)
                return 0;
        if (kc.rt_runtime_us != m->kcap.rt_runtime_us || kc.rt_period_us != m->kcap.rt_period_us)
                capacity_refresh(m);
        return 0;
}

/* A deadline thread of edfd's ended (or may have, unseen): the kernel may hold its bandwidth until
 * its 0-lag time, at most a period away, and a recount before then would count too little. */
static void recount_unsafe_for(Manager *m, uint64_t period_ns) {
        uint64_t until;

        if (__builtin_add_overflow(now_ns(), period_ns, &until) ||
            __builtin_add_overflow(until, RECOUNT_SLACK_NSEC, &until))
                until = UINT64_MAX;
        m->recount_unsafe_until_ns = MAX(m->recount_unsafe_until_ns, until);
        recount_arm(m);
}

/* Release from the books (the thread was already put back, or is gone), give runtime back to the
 * donor where the rule says so, record and signal. */
static void release_books(Manager *m, Reservation *res, const char *reason) {
        uint64_t id = res->id;
        uint32_t pid = res->pid, tid = res->tid;
        char group[GROUP_PATH_MAX + 1];
        ReleaseEffect e;
        int r;

        snprintf(group, sizeof group, "%s", res->group->path);
        if (strcmp(reason, "requested") != 0) /* else manager_release() parked it: nothing is left to come back */
                recount_unsafe_for(m, res->params.period);
        reservation_release(m->tree, res, &e);
        target_drop(m, id);
        r = state_write_release(m->state, id);
        if (r < 0)
                log_state_failure(r);

        if (e.donor && donor_give_back(m, &e, id))
                manager_bus_emit_changed(m, e.donor, "returned");
        if (!admit_pending(m, id)) /* one never announced ends unannounced */
                manager_bus_emit_removed(m, id, pid, tid, group, reason);
        notify_status(m);
        maybe_compact(m);
}

int manager_release(Manager *m, const Caller *c, Reservation *res, const char *reason, OpError *error) {
        SchedTarget *t;
        bool parked = false;
        int r;

        if (c && !manager_may_touch(m, c, res))
                return op_fail(error, OP_PERMISSION_DENIED, "reservation %" PRIu64 " is not yours", res->id);
        t = target_get(m, res->id);
        if (t) {
                SchedInfo had = { .policy = SCHED_DEADLINE, .flags = sched_flags_of(res->flags) | SCHED_FLAG_RESET_ON_FORK,
                                  .runtime = res->params.runtime, .deadline = res->params.deadline,
                                  .period = res->params.period };
                r = sched_release_known(t, &had);
                if (r < 0 && r != -ESRCH) {
                        log_warning("Failed to put thread %" PRIu32 " back to SCHED_OTHER: %s", res->tid, strerror(-r));
                        if (error)
                                return kernel_failure(error, r, "release");
                        return -1;
                }
                parked = r == 0;
                if (parked) {
                        /* Alive and released: its pin is kept for an Admit of the same thread. */
                        t = hashmap_remove(&m->targets, res->id);
                        sched_pin_cache_put(&m->pins, t);
                        free(t);
                }
        }
        if (!parked) /* it has ended, or may have (see release_books()) */
                recount_unsafe_for(m, res->params.period);
        release_books(m, res, reason);
        return 0;
}

/* --- groups --- */

static void group_apply_cgroup(Manager *m, const Group *g) {
        int r;

        if (!g->cgroup || !m->cgroups_usable)
                return;
        r = cgroup_ensure(m->cgroup_root, g->cgroup);
        if (r < 0) {
                log_warning("Failed to create cgroup %s/%s: %s", m->cgroup_root, g->cgroup, strerror(-r));
                return;
        }
        r = cgroup_set_cpu_max(m->cgroup_root, g->cgroup, g->runtime, g->period);
        if (r == -ENOENT) {
                if (!m->cpu_max_missing_reported)
                        log_notice("No cpu.max under %s (the cpu controller is not available in this cgroup v2 "
                                   "hierarchy): groups' normal tasks are not capped",
                                   m->cgroup_root);
                m->cpu_max_missing_reported = true;
        } else if (r < 0)
                log_warning("Failed to write %s/%s/cpu.max: %s", m->cgroup_root, g->cgroup, strerror(-r));
}

int manager_group_create(Manager *m, const char *path, uint64_t runtime, uint64_t period, OpError *error) {
        GroupSpec spec = { .runtime = runtime, .period = period, .fork = _FORK_POLICY_UNSET,
                           .threads = _FORK_POLICY_UNSET, .dynamic = true };
        Refusal rf;
        Group *g;
        int r;

        r = group_create(m->tree, path, &spec, &g, &rf);
        if (r < 0)
                return op_errno(error, r, "creating the group");
        if (r > 0)
                return op_refused(error, &rf);
        r = state_write_group(m->state, false, path, runtime, period);
        if (r < 0) {
                log_state_failure(r);
                (void) group_remove(m->tree, g, NULL);
                return op_errno(error, r, "recording the group");
        }
        manager_bus_emit_groups_changed(m);
        notify_status(m);
        return 0;
}

int manager_group_set(Manager *m, const char *path, uint64_t runtime, uint64_t period, OpError *error) {
        Group *g = tree_find_group(m->tree, path);
        uint64_t old_runtime, old_period;
        Refusal rf;
        int r;

        if (!g) {
                rf = (Refusal) { .outcome = ADMIT_NO_SUCH_GROUP, .name = path };
                return op_refused(error, &rf);
        }
        old_runtime = g->runtime;
        old_period = g->period;
        r = group_set_bandwidth(m->tree, g, runtime, period, &rf);
        if (r > 0)
                return op_refused(error, &rf);
        r = state_write_group(m->state, !g->dynamic, path, runtime, period);
        if (r < 0) {
                log_state_failure(r);
                (void) group_set_bandwidth(m->tree, g, old_runtime, old_period, NULL);
                return op_errno(error, r, "recording the group");
        }
        if (!g->dynamic)
                g->overridden = true;
        group_apply_cgroup(m, g);
        manager_bus_emit_groups_changed(m);
        notify_status(m);
        return 0;
}

int manager_group_remove(Manager *m, const char *path, OpError *error) {
        Group *g = tree_find_group(m->tree, path);
        _cleanup_free_ char *cg = NULL;
        Refusal rf;
        bool dynamic;
        int r;

        if (!g) {
                rf = (Refusal) { .outcome = ADMIT_NO_SUCH_GROUP, .name = path };
                return op_refused(error, &rf);
        }
        if (!g->dynamic)
                return op_fail(error, OP_PERMISSION_DENIED,
                               "group %s comes from the configuration: remove it there and reload", path);
        dynamic = g->dynamic;
        cg = g->cgroup ? strdup(g->cgroup) : NULL;
        r = group_remove(m->tree, g, &rf);
        if (r > 0)
                return op_refused(error, &rf);
        if (dynamic) {
                r = state_write_group_removed(m->state, path);
                if (r < 0)
                        log_state_failure(r);
        }
        if (cg && m->cgroups_usable)
                (void) cgroup_remove(m->cgroup_root, cg);
        manager_bus_emit_groups_changed(m);
        notify_status(m);
        return 0;
}

/* --- configuration --- */

/* The configuration's error lines as one message (NULL without memory); frees the errors. */
static char *errors_join(ConfErrors *errors) {
        size_t len = 1;
        char *msg;

        for (size_t i = 0; i < errors->n; i++)
                len += strlen(errors->lines[i]) + 1;
        msg = calloc(1, len);
        for (size_t i = 0; msg && i < errors->n; i++) {
                strcat(msg, errors->lines[i]);
                if (i + 1 < errors->n)
                        strcat(msg, "\n");
        }
        conf_errors_done(errors);
        return msg;
}

static int config_load(const char *path, Config **ret, char **ret_errors) {
        ConfErrors errors = {};
        Config *c = NULL;
        int r;

        if (path) {
                FILE *f = fopen(path, "re");
                if (!f)
                        return -errno;
                r = conf_parse_file(f, path, &c, &errors);
                fclose(f);
        } else
                r = conf_parse_buffer(edfd_default_config, strlen(edfd_default_config), "(embedded edfd.yaml)", &c,
                                      &errors);
        if (r < 0) {
                *ret_errors = errors_join(&errors);
                return r;
        }
        conf_errors_done(&errors);
        *ret = c;
        return 0;
}

static int kcap_read(Manager *m, KernelCapacity *ret);

/* The root's bandwidth: what the kernel admits, or the configuration's cap on what edfd hands out.
 * Unmanaged threads are charged to the root's allocation, so a cap counts on top of them (never
 * above what the kernel admits): "capacity: 50%" means edfd hands out at most 50%. */
static uint64_t root_capacity(const Manager *m) {
        uint64_t cap = m->kcap.usable, capped;

        if (m->config && !m->config->capacity_auto) {
                if (__builtin_add_overflow(m->config->capacity, m->unmanaged, &capped))
                        capped = UINT64_MAX;
                cap = MIN(cap, capped);
        }
        return cap;
}

/* Build a tree from c with the dynamic groups and overrides of `extra` (a StateLoaded's groups, or
 * the live tree's dynamic groups); NULL error string on success.
 *
 * The root of the tree returned has no limit yet: what was admitted is re-admitted into it, and only
 * then does the caller set the kernel's capacity (tree_set_capacity). When the kernel admits less than
 * it did (CPUs offline, sched_rt_runtime_us lowered), the tree is then overcommitted: it refuses every
 * admission until the capacity is back and evicts nobody. Failing instead would leave a restarted edfd
 * unable to re-adopt what it admitted (and systemd restarting it in a loop). With allow_short, the
 * configuration's top-level groups may need more than the kernel admits; every group below the root
 * must still fit its parent. */
static int tree_build(Manager *m, const Config *c, const char *filename, const StateGroup *extra, size_t n_extra,
                      bool strict, bool allow_short, Tree **ret, char **ret_errors) {
        ConfErrors errors = {};
        Tree *t = NULL;
        int r;

        r = conf_build_tree(c, filename, m->kcap.usable, &m->kcap.limits, &t, &errors);
        if (r == -EINVAL && allow_short && m->kcap.usable != UINT64_MAX) {
                /* Does it fit a root with no limit? Then only the kernel's capacity is short. */
                ConfErrors unbounded = {};

                if (conf_build_tree(c, filename, UINT64_MAX, &m->kcap.limits, &t, &unbounded) == 0) {
                        conf_errors_done(&errors);
                        r = 0;
                }
                conf_errors_done(&unbounded);
        }
        if (r < 0) {
                *ret_errors = errors_join(&errors);
                return r;
        }
        conf_errors_done(&errors);
        tree_set_capacity(t, UINT64_MAX, m->unmanaged);

        for (size_t i = 0; i < n_extra; i++) {
                Refusal rf;
                char buf[256];
                int k;
                if (extra[i].override) {
                        Group *g = tree_find_group(t, extra[i].path);
                        if (!g)
                                continue; /* the configured group is gone: the override with it */
                        k = group_set_bandwidth(t, g, extra[i].runtime, extra[i].period, &rf);
                        if (k == 0)
                                g->overridden = true;
                } else {
                        GroupSpec spec = { .runtime = extra[i].runtime, .period = extra[i].period,
                                           .fork = _FORK_POLICY_UNSET, .threads = _FORK_POLICY_UNSET,
                                           .dynamic = true };
                        k = group_create(t, extra[i].path, &spec, NULL, &rf);
                }
                if (k < 0) {
                        tree_free(t);
                        return k;
                }
                if (k > 0 && strict) {
                        /* A reload must keep every group created at run time, or fail. */
                        if (asprintf(ret_errors, "group %s (created at run time) does not fit the new configuration: %s",
                                     extra[i].path, refusal_format(&rf, buf, sizeof buf)) < 0)
                                *ret_errors = NULL;
                        tree_free(t);
                        return -EINVAL;
                }
                if (k > 0)
                        log_warning("Group %s from the state directory does not fit: %s", extra[i].path,
                                    refusal_format(&rf, buf, sizeof buf));
        }
        *ret = t;
        return 0;
}

/* The dynamic groups (and, if with_overrides, the configured groups whose bandwidth was changed at
 * run time) of the live tree, parents first. */
static int collect_groups(const Tree *t, bool with_overrides, StateGroup **ret, size_t *ret_n) {
        StateGroup *v = calloc(t->n_groups, sizeof(StateGroup));
        size_t n = 0;

        if (!v)
                return -ENOMEM;
        for (const Group *g = t->root->first_child; g; g = group_next_preorder(g))
                if (g->dynamic || (with_overrides && g->overridden)) {
                        v[n] = (StateGroup) { .runtime = g->runtime, .period = g->period, .override = !g->dynamic };
                        snprintf(v[n].path, sizeof v[n].path, "%s", g->path);
                        n++;
                }
        *ret = v;
        *ret_n = n;
        return 0;
}

static int collect_records(const Tree *t, StateRecord **ret, size_t *ret_n) {
        StateRecord *v = calloc(t->n_reservations ? t->n_reservations : 1, sizeof(StateRecord));
        size_t n = 0;

        if (!v)
                return -ENOMEM;
        for (const Reservation *r = reservation_next(t, NULL); r; r = reservation_next(t, r))
                state_record_from(&v[n++], r);
        *ret = v;
        *ret_n = n;
        return 0;
}

static int snapshot(Manager *m, bool with_overrides) {
        _cleanup_free_ StateRecord *recs = NULL;
        _cleanup_free_ StateGroup *groups = NULL;
        size_t nr, ng;
        int r;

        r = collect_records(m->tree, &recs, &nr);
        if (r < 0)
                return r;
        r = collect_groups(m->tree, with_overrides, &groups, &ng);
        if (r < 0)
                return r;
        return state_rewrite(m->state, recs, nr, groups, ng, m->tree->next_id);
}

static void maybe_compact(Manager *m) {
        int r;

        if (!state_wants_rewrite(m->state, m->tree->n_reservations + m->tree->n_groups))
                return;
        r = snapshot(m, true);
        if (r < 0)
                log_warning("Failed to compact the state file: %s", strerror(-r));
}

int manager_reload(Manager *m, OpError *error) {
        _cleanup_free_ char *errors = NULL;
        _cleanup_free_ StateGroup *dyn = NULL;
        Config *c = NULL;
        Tree *t = NULL;
        bool capacity_short;
        size_t n_dyn;
        int r;

        sd_notify(false, "RELOADING=1");
        authz_names_flush(&m->names);
        r = config_load(m->config_path, &c, &errors);
        if (r < 0) {
                sd_notify(false, "READY=1");
                return op_fail(error, OP_INVALID_CONFIG, "%s", errors ? errors : strerror(-r));
        }
        m->rt_read_ns = 0; /* asked for: read the sysctls now */
        (void) kcap_read(m, &m->kcap);
        /* Has the kernel's capacity fallen below what is allocated? Then the new tree may be short too. */
        capacity_short = m->tree->root->allocated > root_capacity(m);
        r = collect_groups(m->tree, false, &dyn, &n_dyn);
        if (r >= 0)
                r = tree_build(m, c, m->config_path ? m->config_path : "(embedded edfd.yaml)", dyn, n_dyn, true,
                               capacity_short, &t, &errors);
        if (r < 0) {
                conf_free(c);
                sd_notify(false, "READY=1");
                return op_fail(error, OP_INVALID_CONFIG, "%s", errors ? errors : strerror(-r));
        }

        /* Every live reservation must find its group, and fit, in the new tree. */
        for (const Reservation *res = reservation_next(m->tree, NULL); res; res = reservation_next(m->tree, res)) {
                Group *g = tree_find_group(t, res->group->path);
                ReservationSpec spec = { .id = res->id, .pid = res->pid, .tid = res->tid, .uid = res->uid,
                                         .identity = res->identity, .params = res->params, .flags = res->flags,
                                         .donor = res->donor, .donated = res->donated };
                Refusal rf;
                char buf[256];

                if (!g) {
                        op_fail(error, OP_INVALID_CONFIG,
                                "the new configuration has no group %s, which holds reservation %" PRIu64, res->group->path,
                                res->id);
                        goto fail;
                }
                r = reservation_admit(t, g, &spec, NULL, &rf);
                if (r != 0) {
                        op_fail(error, OP_INVALID_CONFIG, "reservation %" PRIu64 " does not fit the new configuration: %s",
                                res->id, r > 0 ? refusal_format(&rf, buf, sizeof buf) : strerror(-r));
                        goto fail;
                }
        }
        t->next_id = MAX(t->next_id, m->tree->next_id);
        /* While the kernel's capacity is short, a reload may keep or shrink the overcommit, never grow
         * it: the same file reloads, a larger tree waits until the capacity is back. */
        if (tree_set_capacity(t, root_capacity(m), m->unmanaged) && t->root->allocated > m->tree->root->allocated) {
                char a[DURATION_MAX], b[DURATION_MAX], d[DURATION_MAX];
                op_fail(error, OP_INVALID_CONFIG,
                        "the new configuration needs %s at the root, the kernel admits only %s now, and the running "
                        "one needs %s: while the capacity is short a reload may not ask for more",
                        bw_format(t->root->allocated, a), bw_format(t->root->bw, b),
                        bw_format(m->tree->root->allocated, d));
                goto fail;
        }

        tree_free(m->tree);
        m->tree = t;
        conf_free(m->config);
        m->config = c;
        for (const Group *g = t->root; g; g = group_next_preorder(g))
                group_apply_cgroup(m, g);
        r = snapshot(m, false);
        if (r < 0)
                log_state_failure(r);
        log_info("Configuration reloaded: %zu groups", t->n_groups - 1);
        manager_bus_emit_groups_changed(m);
        notify_status(m);
        sd_notify(false, "READY=1");
        return 0;
fail:
        tree_free(t);
        conf_free(c);
        sd_notify(false, "READY=1");
        return -1;
}

/* --- kernel truth --- */

/* capacity_read(), or capacity_read_reusing() the sysctls read last while a recount would miscount;
 * then a timer reads them once it would not. */
static int kcap_read_raw(Manager *m, KernelCapacity *ret) {
        uint64_t now = now_ns();
        int64_t dl_bw;

        /* Where debugfs shows dl_bw->bw unchanged, so are the sysctls: no recount at all. */
        if (m->rt_read_ns != 0 && m->dl_bw_known && capacity_read_dl_bw(&dl_bw) == 0 && dl_bw == m->dl_bw_at_read)
                return capacity_read_reusing(&m->kcap, ret);
        if (m->rt_read_ns == 0 || now >= m->recount_unsafe_until_ns || now - m->rt_read_ns >= RT_REREAD_MAX_NSEC) {
                /* (Has the kernel recount its deadline bandwidth: see capacity.h.) */
                log_debug("Reading sched_rt_runtime_us and sched_rt_period_us");
                return rt_read(m, ret);
        }
        recount_arm(m);
        return capacity_read_reusing(&m->kcap, ret);
}

/* capacity_read(), with the fair servers' reserve measured lately in place of the one the kernel
 * version implies. */
static int kcap_read(Manager *m, KernelCapacity *ret) {
        KernelCapacity kc;
        uint64_t fair = UINT64_MAX;
        int r;

        r = kcap_read_raw(m, &kc);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < m->n_fair_samples; i++)
                fair = MIN(fair, m->fair_samples[i]);
        if (m->n_fair_samples == ELEMENTSOF(m->fair_samples)) {
                kc.fair_server = fair;
                kc.fair_server_measured = true;
                if (!kc.admission_off)
                        kc.usable = kc.raw > fair ? kc.raw - fair : 0;
        }
        *ret = kc;
        return 0;
}

/* One measurement of the fair servers' reserve: the root domain's dl_bw->total_bw (read before and
 * after the scan of /proc, and only kept when both agree) less what the scan found every deadline
 * thread to hold. Bandwidth the kernel still holds for a thread that just left SCHED_DEADLINE (until
 * its 0-lag time) makes one measurement too large, never too small, so the reserve is the smallest of
 * the last three, and is used only once there are three (20 s after start): bandwidth the kernel
 * keeps for that long is lost to everyone, and edfd must not promise it. Without a readable debugfs,
 * or with several root domains, the reserve stays what the kernel version implies. */
static void fair_server_sample(Manager *m, bool have_before, uint64_t before, uint64_t all_dl) {
        uint64_t after;
        char a[DURATION_MAX], b[DURATION_MAX];

        if (!have_before || capacity_read_total_bw(&after) < 0 || after != before || before < all_dl)
                return;
        memmove(m->fair_samples + 1, m->fair_samples, sizeof m->fair_samples - sizeof m->fair_samples[0]);
        m->fair_samples[0] = before - all_dl;
        if (m->n_fair_samples < ELEMENTSOF(m->fair_samples))
                m->n_fair_samples++;
        if (!m->fair_reported) {
                KernelCapacity implied;
                if (capacity_read(&implied) == 0)
                        log_info("The kernel's fair servers hold %s (measured in debugfs; the kernel version implies %s)",
                                 bw_format(before - all_dl, a), bw_format(implied.fair_server, b));
                m->fair_reported = true;
        }
}

static void capacity_refresh(Manager *m) {
        uint64_t unmanaged = 0, all_dl = 0, cap, total_before = 0;
        bool have_total;
        int r;
        unsigned n = 0;
        KernelCapacity kc;
        char a[DURATION_MAX], b[DURATION_MAX];

        r = capacity_read_total_bw(&total_before);
        have_total = r == 0;
        if (r == -ERANGE && !m->count_negative)
                log_error("The kernel's count of deadline bandwidth (dl_bw->total_bw in debugfs) is below zero: it "
                          "subtracted more than it added, and refuses every SCHED_DEADLINE change that needs "
                          "bandwidth (edfd answers KernelRefused) until it recounts, which edfd has it do as soon as "
                          "none of its deadline threads is ending (reading sched_rt_runtime_us; see design.md, "
                          "\"What the kernel does\")");
        else if (r != -ERANGE && m->count_negative)
                log_notice("The kernel's count of deadline bandwidth is above zero again");
        if ((r == -ERANGE) != m->count_negative) {
                m->count_negative = r == -ERANGE;
                notify_status(m);
        }
        if (capacity_scan_unmanaged(m->tree, &unmanaged, &n, &all_dl) == 0) {
                if (n != m->unmanaged_threads)
                        log_info("%u deadline threads not managed by edfd hold %s", n, bw_format(unmanaged, a));
                m->unmanaged = unmanaged;
                m->unmanaged_threads = n;
                fair_server_sample(m, have_total, total_before, all_dl);
        }
        if (kcap_read(m, &kc) == 0)
                m->kcap = kc;
        cap = root_capacity(m);
        if (m->kcap.admission_off && !m->admission_off_reported) {
                log_warning("Kernel deadline admission is OFF (sched_rt_runtime_us = -1): edfd's books are the only "
                            "protection against overload");
                m->admission_off_reported = true;
        } else if (!m->kcap.admission_off && m->admission_off_reported) {
                log_notice("Kernel deadline admission is on again (sched_rt_runtime_us = %" PRId64 ")",
                           m->kcap.rt_runtime_us);
                m->admission_off_reported = false;
        }
        if (tree_set_capacity(m->tree, cap, m->unmanaged)) {
                /* Loud until it fits again: an error at once, then again every minute. */
                uint64_t now = now_ns();
                if (!m->overcommit_reported || now - m->overcommit_logged_ns >= OVERCOMMIT_LOG_INTERVAL_NSEC) {
                        log_error("Capacity is below what is allocated: %s allocated (%s of it unmanaged) of %s that "
                                  "the kernel admits on %u CPUs (sched_rt_runtime_us %" PRId64 "); admissions are "
                                  "refused until it fits again, nobody is evicted",
                                  bw_format(m->tree->root->allocated, a), bw_format(m->unmanaged, b),
                                  bw_format(cap, (char[DURATION_MAX]) {}), m->kcap.ncpus, m->kcap.rt_runtime_us);
                        m->overcommit_logged_ns = now;
                }
                m->overcommit_reported = true;
        } else if (m->overcommit_reported) {
                log_notice("Capacity covers the allocation again: admissions are accepted");
                m->overcommit_reported = false;
        }
}

/* Does the kernel show what edfd gave: the parameters, and the flags of admit_flags plus
 * RESET_ON_FORK? A thread that cleared RECLAIM or RESET_ON_FORK changed its scheduling too. */
static bool same_params(const SchedInfo *si, const DlParams *p, uint64_t admit_flags) {
        return si->policy == SCHED_DEADLINE && si->runtime == p->runtime && si->deadline == p->deadline &&
               si->period == p->period &&
               (si->flags & SCHED_APPLY_FLAGS) == (sched_flags_of(admit_flags) | SCHED_FLAG_RESET_ON_FORK);
}

/* Clock ticks since boot, the unit of /proc start times. */
static uint64_t boot_ticks(void) {
        struct timespec ts;
        long hz = sysconf(_SC_CLK_TCK);

        clock_gettime(CLOCK_BOOTTIME, &ts);
        return (uint64_t) ts.tv_sec * (uint64_t) (hz > 0 ? hz : 100) +
               (uint64_t) ts.tv_nsec / (NSEC_PER_SEC / (uint64_t) (hz > 0 ? hz : 100));
}

/* A child edfd saw and decided to leave SCHED_OTHER: not "unseen" at the next look. */
static void note_unraised(Manager *m, pid_t pid) {
        (void) hashmap_put(&m->unraised, (uint64_t) pid + 1, (void *) (uintptr_t) 1);
}

static bool read_stat(const char *path, char *buf, size_t size, ssize_t *ret_n) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return false;
        n = read(fd, buf, size - 1);
        close(fd);
        if (n <= 0)
                return false;
        buf[n] = '\0';
        *ret_n = n;
        return true;
}

/* One candidate: born since `since`, holds no reservation, was not seen and left alone. */
static void count_if_unseen(Manager *m, const char *buf, ssize_t n, pid_t tid, uint64_t since) {
        uint64_t start;

        if (tree_find_thread(m->tree, (uint32_t) tid) || hashmap_get(&m->unraised, (uint64_t) tid + 1))
                return;
        if (sched_parse_start_time(buf, (size_t) n, &start) == 0 && start >= since)
                m->unseen_children++;
}

/* After lost events, or a restart: children of admitted threads born since the last look (new
 * processes whose parent is admitted, new threads of admitted processes) that hold no reservation
 * although their group's policy would have raised them, and that edfd did not see and refuse. They
 * stay SCHED_OTHER (edfd cannot know what the donor looked like when they were born) and are
 * counted. */
static void count_unseen_children(Manager *m, uint64_t since) {
        DIR *proc;
        struct dirent *de;

        m->last_look_ticks = boot_ticks();
        if (m->tree->n_reservations > 0 && (proc = opendir("/proc"))) {
                while ((de = readdir(proc))) {
                        char path[300], buf[1024];
                        const Reservation *parent;
                        int ppid = 0;
                        ssize_t n;
                        char *p;
                        pid_t pid;

                        if (de->d_name[0] < '0' || de->d_name[0] > '9')
                                continue;
                        pid = (pid_t) atoi(de->d_name);
                        snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
                        if (!read_stat(path, buf, sizeof buf, &n))
                                continue;
                        p = strrchr(buf, ')');
                        if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1 || ppid <= 0)
                                continue;

                        /* New threads of an admitted process. */
                        parent = tree_find_process(m->tree, (uint32_t) pid);
                        if (parent && parent->group->threads != FORK_NONE) {
                                DIR *task;
                                struct dirent *te;
                                snprintf(path, sizeof path, "/proc/%s/task", de->d_name);
                                if ((task = opendir(path))) {
                                        while ((te = readdir(task))) {
                                                char tpath[600], tbuf[1024];
                                                ssize_t tn;
                                                if (te->d_name[0] < '0' || te->d_name[0] > '9' ||
                                                    atoi(te->d_name) == pid)
                                                        continue;
                                                snprintf(tpath, sizeof tpath, "%s/%s/stat", path, te->d_name);
                                                if (read_stat(tpath, tbuf, sizeof tbuf, &tn))
                                                        count_if_unseen(m, tbuf, tn, (pid_t) atoi(te->d_name), since);
                                        }
                                        closedir(task);
                                }
                        }
                        /* A new process whose parent is admitted. */
                        parent = tree_find_process(m->tree, (uint32_t) ppid);
                        if (parent && parent->group->fork != FORK_NONE && !tree_find_process(m->tree, (uint32_t) pid))
                                count_if_unseen(m, buf, n, pid, since);
                }
                closedir(proc);
        }
        hashmap_done(&m->unraised);
}

int manager_resync(Manager *m, const char *why) {
        Reservation *res, *next;
        char buf[512];

        m->resyncs++;
        log_debug("Resync (%s)", why);
        authz_names_flush(&m->names);
        sched_pin_cache_prune(&m->pins, false);
        for (res = reservation_next(m->tree, NULL); res; res = next) {
                SchedTarget *t = target_get(m, res->id);
                SchedInfo si;

                next = reservation_next(m->tree, res);
                if (!t && admit_pending(m, res->id))
                        continue; /* not applied yet: the retry timer settles it */
                if (!t || sched_target_verify(t) < 0) {
                        /* next may be a split child whose donor this is; that is fine: only res goes. */
                        release_books(m, res, "vanished");
                        continue;
                }
                if (sched_get(res->tid, &si) < 0) {
                        release_books(m, res, "vanished");
                        continue;
                }
                if (!same_params(&si, &res->params, res->flags)) {
                        /* Changed by itself or someone else: the books follow the kernel. If it is still
                         * SCHED_DEADLINE its bandwidth is now unmanaged (counted below). */
                        log_notice("Thread %" PRIu32 " changed its scheduling outside edfd: reservation %" PRIu64
                                   " released",
                                   res->tid, res->id);
                        release_books(m, res, "changed");
                        continue;
                }
        }
        capacity_refresh(m);
        if (tree_check(m->tree, buf, sizeof buf) < 0)
                log_error("Books inconsistent after resync: %s", buf);
        notify_status(m);
        return 0;
}

/* --- fork and exit --- */

static void handle_exit(Manager *m, const ProcEvent *ev) {
        Reservation *res = tree_find_thread(m->tree, (uint32_t) ev->pid);

        if (!res || res->pid != (uint32_t) ev->tgid)
                return;
        release_books(m, res, "exited");
}

static void handle_fork(Manager *m, const ProcEvent *ev) {
        bool is_thread = ev->pid != ev->tgid;
        Reservation *donor, *child;
        SchedTarget t = SCHED_TARGET_NULL, *dt;
        DlParams old;
        Refusal rf;
        int r;

        if (is_thread)
                /* The kernel does not say which thread created it (parent_pid names the process's
                 * parent): the donor is chosen by tree_thread_donor()'s rule. */
                donor = tree_thread_donor(m->tree, (uint32_t) ev->tgid);
        else {
                donor = tree_find_thread(m->tree, (uint32_t) ev->parent_pid);
                if (donor && donor->pid != (uint32_t) ev->parent_tgid)
                        donor = NULL;
        }
        if (!donor)
                return;
        ForkPolicy policy = is_thread ? donor->group->threads : donor->group->fork;
        if (policy == FORK_NONE)
                return;
        /* The owner's limits apply to children too: a full copy (inherit) only within them, and a
         * split only within the owner's number of reservations. */
        /* Root's threads are not limited, as root's requests are not. */
        UserLimits lim = donor->uid == 0 ? USER_LIMITS_NONE : limits_of(m, donor->uid, NULL);
        if (policy == FORK_INHERIT && user_limits_check(m->tree, donor->uid, &lim, donor->bw, 1, NULL) != 0)
                policy = FORK_SPLIT;
        if (user_limits_check(m->tree, donor->uid, &lim, 0, 1, &rf) != 0) {
                log_debug("New %s %d stays SCHED_OTHER: its owner's reservation limit is reached",
                          is_thread ? "thread" : "process", ev->pid);
                note_unraised(m, ev->pid);
                return;
        }
        dt = target_get(m, donor->id);
        if (!dt)
                return;
        r = sched_target_pin(ev->tgid, ev->pid, &t);
        if (r < 0)
                return; /* the child is gone already: the donor keeps everything */

        r = reservation_split_as(m->tree, donor, policy, (uint32_t) ev->tgid, (uint32_t) ev->pid, t.identity,
                                 &child, &old, &rf);
        if (r != 0) {
                char buf[256];
                log_debug("No reservation for new %s %d: %s", is_thread ? "thread" : "process", ev->pid,
                          r > 0 ? refusal_format(&rf, buf, sizeof buf) : strerror(-r));
                note_unraised(m, ev->pid);
                sched_target_done(&t);
                return;
        }
        (void) record(m, true, donor);
        (void) record(m, true, child);

        /* Shrink the donor first, raise the child second: the kernel's total never exceeds what was
         * granted. */
        if (donor->params.runtime != old.runtime) {
                r = apply_with_retry(dt, &donor->params, donor->flags);
                if (r < 0) {
                        /* The kernel still has the donor whole: so must the books. */
                        uint64_t cid = child->id;
                        reservation_release(m->tree, child, NULL);
                        (void) state_write_release(m->state, cid);
                        if (donor->params.runtime != old.runtime)
                                (void) reservation_update(m->tree, donor, &old, NULL);
                        (void) record(m, false, donor);
                        note_unraised(m, ev->pid);
                        sched_target_done(&t);
                        return;
                }
        }
        /* A child raised in a storm may end before its exit event is read: whatever ends meanwhile
         * is covered from here (see Manager.recount_unsafe_until_ns). */
        recount_unsafe_for(m, child->params.period);
        r = apply_with_retry(&t, &child->params, child->flags);
        if (r < 0) {
                uint64_t cid = child->id;
                ReleaseEffect e;
                log_debug("Could not raise new %s %d: %s", is_thread ? "thread" : "process", ev->pid, strerror(-r));
                reservation_release(m->tree, child, &e);
                (void) state_write_release(m->state, cid);
                if (e.donor)
                        (void) donor_give_back(m, &e, cid);
                (void) record(m, false, donor);
                note_unraised(m, ev->pid);
                sched_target_done(&t);
                return;
        }
        (void) record(m, false, donor);
        (void) record(m, false, child);
        if (target_put(m, child->id, &t) < 0)
                sched_target_done(&t);
        if (donor->params.runtime != old.runtime)
                manager_bus_emit_changed(m, donor, "split");
        manager_bus_emit_added(m, child, child->donor ? "split" : "inherited");
        if (child->donor)
                manager_bus_emit_split(m, donor->id, child->id);
        notify_status(m);
        maybe_compact(m);
}

static int on_procmon(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        ProcEvent ev[8];
        size_t n;
        bool overflow = false;

        for (unsigned rounds = 0; rounds < 4096; rounds++) {
                int r = procmon_receive_full(fd, ev, ELEMENTSOF(ev), &n, &m->pstats);
                if (r == -EAGAIN)
                        break;
                if (r == -ENOBUFS) {
                        m->events_lost++;
                        overflow = true;
                        continue;
                }
                if (r < 0)
                        continue;
                for (size_t i = 0; i < n; i++) {
                        m->events_seen++;
                        if (ev[i].type == PROCMON_FORK)
                                handle_fork(m, &ev[i]);
                        else if (ev[i].type == PROCMON_EXIT)
                                handle_exit(m, &ev[i]);
                }
        }
        if (overflow) {
                /* Children of any of them may have ended unseen, with the parent's period. */
                for (Reservation *res = reservation_next(m->tree, NULL); res; res = reservation_next(m->tree, res))
                        recount_unsafe_for(m, res->params.period);
                count_unseen_children(m, m->last_look_ticks);
                manager_resync(m, "events lost");
        }
        return 0;
}

static int on_resync_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        manager_resync(m, "periodic");
        sd_event_source_set_time(s, usec + RESYNC_INTERVAL_USEC);
        sd_event_source_set_enabled(s, SD_EVENT_ON);
        return 0;
}

/* --- adoption after a restart --- */

static bool record_matches(const StateRecord *rec, bool same_thread, const SchedInfo *si) {
        return same_thread && same_params(si, &rec->params, rec->flags);
}

/* A split child that ended while edfd was down: give its runtime back to its re-adopted donor, as
 * the donor rule would have had edfd seen the exit (books first, through the core's rule, then the
 * kernel). Donors have lower ids than their children, so they are adopted first. */
static void return_to_donor(Manager *m, const StateRecord *rec) {
        Reservation *d = rec->donor ? tree_find_reservation(m->tree, rec->donor) : NULL, *tmp;
        Group *g = tree_find_group(m->tree, rec->group);
        ReleaseEffect e;
        SchedTarget *dt;

        if (!d || !g)
                return;
        ReservationSpec spec = { .id = rec->id, .pid = rec->pid, .tid = rec->tid, .uid = rec->uid,
                                 .identity = rec->identity, .params = rec->params, .flags = rec->flags,
                                 .donor = rec->donor, .donated = rec->donated };
        if (reservation_admit(m->tree, g, &spec, &tmp, NULL) != 0)
                return;
        reservation_release(m->tree, tmp, &e);
        if (!e.donor)
                return;
        dt = target_get(m, e.donor->id);
        if (!dt || apply_with_retry(dt, &e.donor->params, e.donor->flags) < 0) {
                (void) reservation_update(m->tree, e.donor, &e.donor_old, NULL);
                return;
        }
        log_info("Reservation %" PRIu64 " ended while edfd was down: its runtime went back to %" PRIu64, rec->id,
                 e.donor->id);
}

static void adopt(Manager *m, const StateLoaded *l) {
        unsigned adopted = 0, gone = 0;

        for (size_t i = 0; i < l->n_entries; i++) {
                const StateEntry *e = &l->entries[i];
                const StateRecord *rec = e->has_intent ? &e->intent : &e->committed;
                SchedTarget t = SCHED_TARGET_NULL;
                SchedInfo si;
                Group *g;
                Refusal rf;
                char buf[256];
                int r, same = 0;

                r = sched_target_pin((pid_t) rec->pid, (pid_t) rec->tid, &t);
                if (r < 0 || sched_get((pid_t) rec->tid, &si) < 0 || (same = sched_target_is(&t, rec->identity)) < 0) {
                        sched_target_done(&t);
                        return_to_donor(m, rec);
                        gone++;
                        continue;
                }
                /* Parked at the zero-rounding bandwidth: edfd died in the middle of a release. Finish
                 * it, or the thread would crawl at 1024 ns every 4.19 s. */
                if (same && si.policy == SCHED_DEADLINE && si.runtime == SCHED_PARK_RUNTIME &&
                    si.period == SCHED_PARK_PERIOD) {
                        log_notice("Thread %" PRIu32 " was being released when edfd stopped: release finished", rec->tid);
                        (void) sched_release(&t);
                        sched_target_done(&t);
                        return_to_donor(m, rec);
                        gone++;
                        continue;
                }
                /* An unsettled intent: the kernel shows either it or the last committed record. */
                if (!record_matches(rec, same, &si)) {
                        if (e->has_intent && e->has_committed && record_matches(&e->committed, same, &si))
                                rec = &e->committed;
                        else {
                                if (same && si.policy == SCHED_DEADLINE)
                                        log_notice("Thread %" PRIu32 " has parameters edfd did not give it: not "
                                                   "re-adopted (counted as unmanaged)",
                                                   rec->tid);
                                sched_target_done(&t);
                                return_to_donor(m, rec);
                                gone++;
                                continue;
                        }
                }
                g = tree_find_group(m->tree, rec->group);
                /* The thread's identity as this kernel gives it (a record may hold a start time). */
                ReservationSpec spec = { .id = rec->id, .pid = rec->pid, .tid = rec->tid, .uid = rec->uid,
                                         .identity = t.identity, .params = rec->params, .flags = rec->flags,
                                         .donor = rec->donor, .donated = rec->donated };
                r = g ? reservation_admit(m->tree, g, &spec, NULL, &rf) : -1;
                if (r != 0) {
                        log_warning("Thread %" PRIu32 " (reservation %" PRIu64 ") cannot be re-adopted into %s: %s; "
                                    "putting it back to SCHED_OTHER",
                                    rec->tid, rec->id, rec->group,
                                    !g ? "the group no longer exists" : r > 0 ? refusal_format(&rf, buf, sizeof buf) : strerror(-r));
                        (void) sched_release(&t);
                        sched_target_done(&t);
                        return_to_donor(m, rec);
                        gone++;
                        continue;
                }
                if (target_put(m, rec->id, &t) < 0)
                        sched_target_done(&t);
                adopted++;
        }
        m->tree->next_id = MAX(m->tree->next_id, l->next_id);
        if (adopted || gone)
                log_info("Re-adopted %u reservations from %s; %u were gone", adopted, m->state_dir, gone);
}

/* --- lifecycle --- */

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        if (si->ssi_signo == SIGHUP) {
                OpError e = {};
                if (manager_reload(m, &e) < 0)
                        log_error("Reload failed, keeping the old configuration: %s", e.message);
                return 0;
        }
        sd_notify(false, "STOPPING=1");
        m->stopping = true;
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

int manager_new(Manager **ret, const ManagerOptions *opts) {
        _cleanup_free_ char *errors = NULL;
        StateLoaded loaded = {};
        Manager *m;
        struct rlimit rl;
        int r;

        m = calloc(1, sizeof(Manager));
        if (!m)
                return log_oom();
        m->procmon_fd = -1;
        sched_pin_cache_init(&m->pins);

        /* One pidfd per admitted thread: lift the soft fd limit. */
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }

        if (opts->config_path)
                m->config_path = strdup(opts->config_path);
        else if (!opts->embedded_config && access(EDFD_CONFIG_PATH, F_OK) == 0)
                m->config_path = strdup(EDFD_CONFIG_PATH);
        m->state_dir = strdup(opts->state_dir ? opts->state_dir : DEFAULT_STATE_DIR);
        if (!m->state_dir || ((opts->config_path || m->config_path) && !m->config_path)) {
                manager_free(m);
                return log_oom();
        }

        r = config_load(m->config_path, &m->config, &errors);
        if (r < 0) {
                log_error("Invalid configuration %s:\n%s", m->config_path ? m->config_path : "(embedded)",
                          errors ? errors : strerror(-r));
                manager_free(m);
                return r;
        }
        if (!m->config_path)
                log_info("Using the embedded default configuration%s",
                         opts->embedded_config ? "" : " (there is no " EDFD_CONFIG_PATH ")");

        m->cgroup_root = strdup(opts->cgroup_root ? opts->cgroup_root : m->config->cgroup_root);
        m->cgroup_root_forced = opts->cgroup_root;
        if (!m->cgroup_root) {
                manager_free(m);
                return log_oom();
        }

        r = rt_read(m, &m->kcap);
        if (r < 0) {
                log_error("Cannot read the kernel's deadline capacity: %s", strerror(-r));
                manager_free(m);
                return r;
        }

        r = state_open(&m->state, m->state_dir);
        if (r == -EBUSY) {
                log_error("Another edfd holds %s/lock", m->state_dir);
                manager_free(m);
                return r;
        }
        if (r < 0) {
                log_error("Cannot open the state directory %s: %s", m->state_dir, strerror(-r));
                manager_free(m);
                return r;
        }
        /* When edfd last wrote its state, in /proc's clock (ticks since boot): the journal's mtime,
         * which state.c sets to within a second of its last record. */
        uint64_t down_since = boot_ticks();
        {
                _cleanup_free_ char *path = NULL;
                struct stat st;
                long hz = sysconf(_SC_CLK_TCK);
                time_t now = time(NULL);
                if (asprintf(&path, "%s/state", m->state_dir) >= 0 && stat(path, &st) == 0 && now >= st.st_mtime) {
                        uint64_t ago = (uint64_t) (now - st.st_mtime + 2) * (uint64_t) (hz > 0 ? hz : 100);
                        down_since = down_since > ago ? down_since - ago : 0;
                }
        }
        r = state_load(m->state, &loaded);
        if (r < 0) {
                log_error("Cannot read the state in %s: %s", m->state_dir, strerror(-r));
                manager_free(m);
                return r;
        }
        if (loaded.corrupt_path)
                log_error("The state file was corrupt (%s): kept as %s; starting from what the kernel shows",
                          loaded.corrupt_reason ? loaded.corrupt_reason : "unreadable", loaded.corrupt_path);
        if (loaded.torn_tail)
                log_notice("The last state record was torn by a crash; the change it began was never answered");

        /* With reservations to re-adopt, a capacity that fell while edfd was down must not stop it: it
         * starts over-committed. Without, a configuration too large for this machine is an error. */
        r = tree_build(m, m->config, m->config_path ? m->config_path : "(embedded edfd.yaml)", loaded.groups,
                       loaded.n_groups, false, loaded.n_entries > 0, &m->tree, &errors);
        if (r < 0) {
                log_error("The configuration does not fit this machine:\n%s", errors ? errors : strerror(-r));
                state_loaded_done(&loaded);
                manager_free(m);
                return r;
        }

        m->cgroups_usable = cgroup_root_usable(m->cgroup_root);
        if (!m->cgroups_usable) {
                /* The root may not exist yet: create it where its parent is cgroup v2. */
                _cleanup_free_ char *parent = strdup(m->cgroup_root);
                char *slash = parent ? strrchr(parent, '/') : NULL;
                if (slash && slash != parent) {
                        *slash = '\0';
                        if (cgroup_root_usable(parent) && mkdir(m->cgroup_root, 0755) == 0)
                                m->cgroups_usable = true;
                }
        }
        if (!m->cgroups_usable)
                log_notice("%s is not a cgroup v2 directory: groups are not bound to cgroups", m->cgroup_root);

        /* Listen before looking, so that no fork between the scan and the first event is missed. */
        r = procmon_open(&m->procmon_fd, 0);
        if (r < 0)
                log_warning("Cannot listen to the proc connector (%s): forks and exits are seen only by the "
                            "periodic resync",
                            strerror(-r));
        adopt(m, &loaded);
        state_loaded_done(&loaded);
        /* Children born while edfd was down (since the state was last written) were not raised. */
        count_unseen_children(m, down_since);
        capacity_refresh(m);
        r = snapshot(m, true);
        if (r < 0)
                log_warning("Failed to rewrite the state file: %s", strerror(-r));
        for (const Group *g = m->tree->root; g; g = group_next_preorder(g))
                group_apply_cgroup(m, g);

        *ret = m;
        return 0;
}

int manager_start(Manager *m) {
        int r;

        r = sd_event_default(&m->event);
        if (r < 0)
                return r;
        sigset_t ss;
        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGHUP);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        (void) sd_event_add_signal(m->event, &m->sigterm, SIGTERM, on_signal, m);
        (void) sd_event_add_signal(m->event, &m->sigint, SIGINT, on_signal, m);
        (void) sd_event_add_signal(m->event, &m->sighup, SIGHUP, on_signal, m);
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                log_warning("Failed to enable the watchdog: %s", strerror(-r));

        if (m->procmon_fd >= 0) {
                r = sd_event_add_io(m->event, &m->procmon_source, m->procmon_fd, EPOLLIN, on_procmon, m);
                if (r < 0)
                        return r;
                /* Forks and exits first: a late exit event makes admissions fail for no reason. */
                (void) sd_event_source_set_priority(m->procmon_source, SD_EVENT_PRIORITY_IMPORTANT);
        }
        uint64_t now;
        sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        r = sd_event_add_time(m->event, &m->resync_timer, CLOCK_MONOTONIC, now + RESYNC_INTERVAL_USEC, 0,
                              on_resync_timer, m);
        if (r < 0)
                return r;

        r = sd_bus_open_system(&m->bus);
        if (r < 0) {
                log_error("Cannot connect to the system bus: %s", strerror(-r));
                return r;
        }
        r = manager_bus_register(m);
        if (r < 0)
                return r;
        r = manager_bus_attach(m);
        if (r < 0)
                return r;
        r = sd_bus_request_name(m->bus, EDFD_BUS_NAME, 0);
        if (r < 0) {
                log_error("Cannot own %s on the bus: %s", EDFD_BUS_NAME, strerror(-r));
                return r;
        }
        /* Drain anything that happened while the state was read. */
        manager_resync(m, "start");
        sd_notify(false, "READY=1");
        send_status(m);
        log_info("edfd " EDFD_VERSION " ready: %zu groups, %zu reservations", m->tree->n_groups - 1,
                 m->tree->n_reservations);
        return 0;
}

int manager_run(Manager *m) {
        return sd_event_loop(m->event);
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        sd_event_source_unref(m->sigterm);
        sd_event_source_unref(m->sigint);
        sd_event_source_unref(m->sighup);
        sd_event_source_unref(m->procmon_source);
        sd_event_source_unref(m->resync_timer);
        sd_event_source_disable_unref(m->recount_timer);
        sd_event_source_disable_unref(m->bus_drain);
        sd_event_source_unref(m->status_timer);
        sd_event_source_unref(m->return_timer);
        while (m->pending_returns) {
                PendingReturn *p = m->pending_returns;
                m->pending_returns = p->next;
                free(p);
        }
        while (m->pending_admits) {
                OpError e = {};
                op_fail(&e, OP_KERNEL_REFUSED, "admission: edfd is stopping while the kernel still refused the "
                        "bandwidth (EBUSY)");
                pending_end(m->pending_admits, 0, &e);
        }
        sd_bus_flush_close_unref(m->bus);
        sd_event_unref(m->event);
        if (m->procmon_fd >= 0)
                close(m->procmon_fd);
        for (size_t i = 0; i < m->targets.n_slots; i++)
                if (m->targets.slots[i].key) {
                        SchedTarget *t = m->targets.slots[i].value;
                        sched_target_done(t);
                        free(t);
                }
        hashmap_done(&m->targets);
        sched_pin_cache_prune(&m->pins, true);
        for (size_t i = 0; i < m->rates.n_slots; i++)
                if (m->rates.slots[i].key)
                        free(m->rates.slots[i].value);
        hashmap_done(&m->rates);
        hashmap_done(&m->unraised);
        authz_polkit_done(&m->polkit);
        authz_cache_done(&m->creds);
        authz_names_flush(&m->names);
        for (size_t i = 0; i < m->n_subscribers; i++)
                free(m->subscribers[i]);
        free(m->subscribers);
        tree_free(m->tree);
        conf_free(m->config);
        state_free(m->state);
        free(m->config_path);
        free(m->state_dir);
        free(m->cgroup_root);
        free(m);
        return NULL;
}
