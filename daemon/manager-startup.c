/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The start-up room: admissions that wait for a program to start (AdmitAtStart).
 *
 * A process that has not yet exec'd its program (a container's runtime init, parked until the
 * engine starts it; a launcher about to exec) is watched: when its executable has changed (its
 * exec) and it first sleeps after that (state S, or a voluntary switch since the exec), or when
 * the bound has passed since the exec, its main thread is admitted as Admit would admit it, with
 * the caller and flags of the call. The exec, the dynamic loader, the first page faults and the
 * program's initialization so run as SCHED_OTHER, not on the first budgets.
 *
 * The exec is seen from the proc connector (its EXEC event, delivered by the procs room), not by
 * polling: before its exec a watch costs nothing but one timer, for the configuration's
 * exec-timeout, at which it is dropped (logged). Its exit event, and an overflow of the
 * connector's queue (events lost), make edfd look at once. After the exec, the first sleep has no
 * event: each watch looks 1 ms after the exec, then at intervals doubling up to
 * STARTUP_LOOK_MAX_NSEC, until it sleeps or its bound passes. Only where the proc connector is not
 * available (logged at start) does a watch look for its exec that way too.
 *
 * A watch counts, from the call until it ends, as a reservation of its caller with the request's
 * bandwidth towards the caller's `reservations` and `bandwidth` limits (the call is refused when
 * the caller's reservations and watches with this one would pass them), and the table of
 * STARTUP_WATCHES_MAX watches keeps STARTUP_WATCHES_ROOT for root, with STARTUP_WATCHES_USER for
 * any one other user, so that no user but root can fill it. A watch ends when its process is
 * admitted (or refused: logged), ends, is replaced (another start time under the pid), or passes
 * the exec-timeout, and at exit. It is not recorded in the state journal: an edfd that restarts
 * meanwhile forgets it, and the caller's booking (edfd-oci-hook's per-container group) stays until
 * the caller removes it. The request is decided at the call as Admit would decide it (a refusal is
 * the caller's answer), but nothing is booked: it is decided again when the program starts, and a
 * caller that must not be refused then books the room first (a group of its own, as edfd-oci-hook
 * does as root). */

#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/macro.h"
#include "basic/proc.h"
#include "core/bandwidth.h"
#include "core/duration.h"
#include "log.h"
#include "manager-bus.h"
#include "manager-internal.h"

#define STARTUP_WATCHES_MAX 4096  /* every caller's watches together */
#define STARTUP_WATCHES_ROOT 1024 /* of those, kept for root: other users together hold at most the rest */
#define STARTUP_WATCHES_USER 256  /* what any one user but root may hold, whatever its limits */
#define STARTUP_BOUND_MAX (3600 * NSEC_PER_SEC)
#define STARTUP_LOOK_MIN_NSEC NSEC_PER_MSEC         /* the first look after the exec (or an exit) */
#define STARTUP_LOOK_MAX_NSEC (100 * NSEC_PER_MSEC) /* the longest interval between two looks */
#define STARTUP_ACCURACY_MAX_NSEC (100 * NSEC_PER_MSEC) /* how late the exec-timeout's look may be */
#define STARTUP_ZOMBIE_LOOKS 4    /* looks at a main thread that is a zombie before the watch ends */

typedef struct StartupWatch {
        Manager *m;
        AdmitRequest req;          /* req.group points to group */
        char *group;
        uint64_t bw;               /* the request's bandwidth: counted as the caller's */
        uint64_t start_time;       /* /proc start time: a reused pid is another process */
        uint64_t exe_dev, exe_ino; /* /proc/PID/exe at the call */
        uint64_t called_ns, exec_ns, bound_ns; /* exec_ns: 0 until the exec is seen */
        uint64_t expire_ns;        /* before the exec: dropped then (the call plus the exec-timeout) */
        long long base_switches;   /* voluntary switches at the exec */
        uint64_t interval_ns;      /* the backing-off interval of the looks after the exec */
        unsigned zombie_looks;     /* looks that found the main thread a zombie, in a row */
        sd_event_source *timer;    /* this watch's next look */
} StartupWatch;

static int exe_of(pid_t pid, struct stat *ret) {
        char path[64];

        snprintf(path, sizeof path, "/proc/%d/exe", (int) pid);
        return stat(path, ret) < 0 ? -errno : 0;
}

static uint64_t watch_key(uint64_t pid) {
        return pid; /* above 0: a process's pid */
}

static void watch_free(StartupWatch *w) {
        if (!w)
                return;
        sd_event_source_disable_unref(w->timer);
        free(w->group);
        free(w);
}

/* End w: out of the table, its count given back. */
static void watch_end(Manager *m, StartupWatch *w) {
        if (hashmap_remove(&m->startup.watches, watch_key(w->req.pid)) == w) {
                m->startup.n--;
                if (w->req.caller.uid != 0)
                        m->startup.n_users--;
        }
        watch_free(w);
}

/* How late a look at at_ns may come (sd-event coalesces wake-ups within it; its default, for 0, is
 * 250 ms): a quarter of the wait, at least 50 us, at most STARTUP_ACCURACY_MAX_NSEC. */
static uint64_t accuracy_usec(uint64_t now, uint64_t at_ns) {
        uint64_t wait = at_ns > now ? at_ns - now : 0;

        return MAX(MIN(wait / 4, STARTUP_ACCURACY_MAX_NSEC), 50 * NSEC_PER_USEC) / 1000;
}

/* The next look at w at time at_ns (CLOCK_MONOTONIC), or earlier if one is due earlier already. */
static void schedule(StartupWatch *w, uint64_t now, uint64_t at_ns, bool earlier_only) {
        uint64_t usec = at_ns / 1000, cur = 0;

        if (earlier_only && sd_event_source_get_enabled(w->timer, NULL) > 0 &&
            sd_event_source_get_time(w->timer, &cur) >= 0 && cur <= usec)
                return;
        (void) sd_event_source_set_time(w->timer, usec);
        (void) sd_event_source_set_time_accuracy(w->timer, accuracy_usec(now, at_ns));
        (void) sd_event_source_set_enabled(w->timer, SD_EVENT_ONESHOT);
}

/* The outcome of an admission that waited for the kernel: only a failure has something to say. */
static void startup_done(Manager *m, void *userdata, uint64_t id, const OpError *error) {
        uint32_t pid = (uint32_t) (uintptr_t) userdata;

        if (error)
                log_warning("The admission of process %" PRIu32 " at its start failed: %s", pid, error->message);
        else
                log_debug("Process %" PRIu32 " admitted at its start: reservation %" PRIu64, pid, id);
}

static void admit_now(Manager *m, StartupWatch *w, const char *why) {
        OpError e = {};
        uint64_t id = 0;
        int r;

        w->req.done = startup_done;
        w->req.done_userdata = (void *) (uintptr_t) w->req.pid;
        manager_bus_defer_begin(m);
        r = manager_admit(m, &w->req, &id, &e);
        manager_bus_defer_end(m);
        if (r == 0)
                log_debug("Process %" PRIu64 " admitted at its start (%s): reservation %" PRIu64, w->req.pid, why, id);
        else if (r < 0 && !(e.kind == OP_NO_SUCH_THREAD ||
                            (e.kind == OP_REFUSED && e.refusal.outcome == ADMIT_NO_SUCH_GROUP)))
                /* Gone meanwhile, or its group removed (a container stopped first): nothing to say. */
                log_warning("The admission of process %" PRIu64 " at its start was refused: %s", w->req.pid, e.message);
}

/* The exec, if it happened: the executable is another than at the call. */
static bool exec_seen(const StartupWatch *w) {
        struct stat exe;

        if (exe_of((pid_t) w->req.pid, &exe) < 0)
                return false;
        return (uint64_t) exe.st_dev != w->exe_dev || (uint64_t) exe.st_ino != w->exe_ino;
}

/* One look at w: true when the watch is over (admitted, dropped, or nothing left to admit); else the
 * next look is scheduled. */
static bool look(Manager *m, StartupWatch *w, uint64_t now) {
        pid_t pid = (pid_t) w->req.pid;
        ProcStat st;
        char a[DURATION_MAX];

        if (proc_read_stat(pid, pid, PROC_STAT_STATE | PROC_STAT_START_TIME, &st) < 0 ||
            st.start_time != w->start_time) {
                log_debug("Process %d ended before its start", (int) pid);
                return true; /* ended, or another process under the pid */
        }
        if (st.state == 'Z' || st.state == 'X') {
                /* Ended, or its main thread did; or, for a moment, the old main thread of a
                 * process whose other thread execs (the kernel gives that thread the pid once the
                 * old one is a zombie): a few looks more tell them apart. */
                if (++w->zombie_looks >= STARTUP_ZOMBIE_LOOKS) {
                        log_debug("Process %d ended before its start", (int) pid);
                        return true;
                }
                schedule(w, now, now + (STARTUP_LOOK_MIN_NSEC << w->zombie_looks), false);
                return false;
        }
        w->zombie_looks = 0;

        if (w->exec_ns == 0) {
                if (exec_seen(w)) {
                        w->exec_ns = now;
                        w->base_switches = proc_voluntary_switches(pid);
                        w->interval_ns = STARTUP_LOOK_MIN_NSEC;
                        schedule(w, now, now + w->interval_ns, false); /* its first sleep, from then on */
                        return false;
                }
                if (now >= w->expire_ns) {
                        log_notice("Process %d did not exec its program within %s of the call: its "
                                   "admission at start is dropped",
                                   (int) pid, duration_format(w->expire_ns - w->called_ns, a));
                        return true;
                }
                if (m->procs.fd >= 0)
                        schedule(w, now, w->expire_ns, false); /* the exec comes as an event */
                else {
                        /* No proc connector: look for the exec, backing off. */
                        w->interval_ns = MIN(w->interval_ns * 2, STARTUP_LOOK_MAX_NSEC);
                        schedule(w, now, MIN(now + w->interval_ns, w->expire_ns), false);
                }
                return false;
        }
        if (st.state == 'S') {
                admit_now(m, w, "it sleeps");
                return true;
        }
        if (w->base_switches >= 0 && proc_voluntary_switches(pid) > w->base_switches) {
                admit_now(m, w, "it has slept");
                return true;
        }
        if (now - w->exec_ns >= w->bound_ns) {
                admit_now(m, w, "the bound has passed");
                return true;
        }
        w->interval_ns = MIN(w->interval_ns * 2, STARTUP_LOOK_MAX_NSEC);
        schedule(w, now, MIN(now + w->interval_ns, w->exec_ns + w->bound_ns), false);
        return false;
}

static int on_watch_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        StartupWatch *w = userdata;
        Manager *m = w->m;

        if (look(m, w, now_ns()))
                watch_end(m, w);
        return 0;
}

void startup_on_exec(Manager *m, pid_t pid, pid_t tgid) {
        StartupWatch *w;

        if (pid <= 0 || pid != tgid || m->startup.n == 0)
                return;
        w = hashmap_get(&m->startup.watches, watch_key((uint64_t) pid));
        if (!w || w->exec_ns != 0)
                return; /* not watched, or exec'd already: its first sleep is looked for */
        if (look(m, w, now_ns()))
                watch_end(m, w);
}

void startup_on_exit(Manager *m, pid_t pid, pid_t tgid) {
        StartupWatch *w;

        if (pid <= 0 || pid != tgid || m->startup.n == 0)
                return;
        w = hashmap_get(&m->startup.watches, watch_key((uint64_t) pid));
        if (w) { /* its main thread: the process, or the main thread of an exec by another thread */
                uint64_t now = now_ns();
                schedule(w, now, now + STARTUP_LOOK_MIN_NSEC, true);
        }
}

void startup_events_lost(Manager *m) {
        StartupWatch *w;
        uint64_t now = now_ns();

        /* An exec or an exit may be among them: one look at each watch. */
        HASHMAP_FOREACH(w, &m->startup.watches, i)
                schedule(w, now, now + STARTUP_LOOK_MIN_NSEC, true);
}

/* Whether the table and the caller's limits leave room for one more watch of req, bandwidth bw. */
static int check_room(Manager *m, const AdmitRequest *req, uint64_t bw, OpError *error) {
        uint32_t uid = req->caller.uid;
        AdmissionCaller ac;
        UserUsage u;
        uint64_t n = 0, wbw = 0, held, total;
        const StartupWatch *w;
        char a[DURATION_MAX], b[DURATION_MAX], c[DURATION_MAX], d[DURATION_MAX];

        if (m->startup.n >= STARTUP_WATCHES_MAX)
                return op_fail(error, OP_LIMIT_EXCEEDED,
                               "%d admissions already wait for their programs' start", STARTUP_WATCHES_MAX);
        if (uid == 0)
                return 0;
        HASHMAP_FOREACH(w, &m->startup.watches, i)
                if (w->req.caller.uid == uid) {
                        n++;
                        wbw += w->bw; /* each at most one CPU, at most 4096 of them: no overflow */
                }
        ac = manager_admission_caller(m, &req->caller);
        u = tree_user_usage(m->tree, uid);
        /* The caller's limits, with its watches counted as reservations. */
        if (ac.limits.reservations != UINT64_MAX &&
            (__builtin_add_overflow((uint64_t) u.n, n, &held) || held >= ac.limits.reservations))
                return op_fail(error, OP_LIMIT_EXCEEDED,
                               "user %s: per-user limit of %" PRIu64 " reservations reached (%zu held, %"
                               PRIu64 " waiting for their start)",
                               ac.user, ac.limits.reservations, u.n, n);
        if (ac.limits.bandwidth != UINT64_MAX &&
            (__builtin_add_overflow(u.bw, wbw, &held) || __builtin_add_overflow(held, bw, &total) ||
             total > ac.limits.bandwidth))
                return op_fail(error, OP_LIMIT_EXCEEDED,
                               "user %s: per-user bandwidth limit %s: %s held, %s waiting for their start, "
                               "request needs %s",
                               ac.user, bw_format(ac.limits.bandwidth, a), bw_format(u.bw, b),
                               bw_format(wbw, c), bw_format_up(bw, d));
        /* The table: a share per user, and root's part. */
        if (n >= STARTUP_WATCHES_USER)
                return op_fail(error, OP_LIMIT_EXCEEDED,
                               "user %s: %d admissions wait for their start already, the most one user "
                               "but root may have",
                               ac.user, STARTUP_WATCHES_USER);
        if (m->startup.n_users >= STARTUP_WATCHES_MAX - STARTUP_WATCHES_ROOT)
                return op_fail(error, OP_LIMIT_EXCEEDED,
                               "%d admissions of users other than root already wait for their programs' "
                               "start (the rest of %d is kept for root)",
                               STARTUP_WATCHES_MAX - STARTUP_WATCHES_ROOT, STARTUP_WATCHES_MAX);
        return 0;
}

int manager_admit_at_start(Manager *m, const AdmitRequest *req, uint64_t bound_ns, OpError *error) {
        const char *path = req->group && *req->group ? req->group : m->config ? m->config->default_group : NULL;
        StartupWatch *w;
        struct stat exe;
        ProcStat st;
        uint64_t bw, now, timeout, at;
        pid_t pid;
        int r;

        if (manager_admit_check_args(req, error) < 0)
                return -1;
        if (req->pid == 0 || req->tid != req->pid)
                return op_fail(error, OP_INVALID, "an admission at start is of a process's main thread: give its pid "
                               "as both pid and tid");
        if (bound_ns == 0 || bound_ns > STARTUP_BOUND_MAX)
                return op_fail(error, OP_INVALID, "the start-up bound must be above 0 and at most 1h");
        pid = (pid_t) req->pid;
        if (hashmap_get(&m->startup.watches, watch_key(req->pid)))
                return op_fail(error, OP_INVALID, "process %" PRIu64 " already waits for its start",
                               req->pid);
        /* As it would be decided now: the process, its owner, the group, the room, the limits. */
        if (manager_admit_decide(m, req, error) < 0)
                return -1;
        /* Valid parameters (decided above): their bandwidth is a number. */
        if (bw_of(req->params.runtime, req->params.period, &bw) < 0)
                return op_fail(error, OP_INVALID, "the parameters have no bandwidth");
        if (check_room(m, req, bw, error) < 0)
                return -1;
        r = proc_read_stat(pid, pid, PROC_STAT_START_TIME, &st);
        if (r >= 0)
                r = exe_of(pid, &exe);
        if (r < 0)
                return r == -ENOENT || r == -ESRCH
                               ? op_fail(error, OP_NO_SUCH_THREAD, "no process %" PRIu64, req->pid)
                               : op_errno(error, r, "reading the process");

        w = calloc(1, sizeof *w);
        if (!w || !(w->group = strdup(req->group ? req->group : ""))) {
                free(w);
                return op_errno(error, -ENOMEM, "an admission at start");
        }
        now = now_ns();
        timeout = m->config ? m->config->exec_timeout : CONF_EXEC_TIMEOUT_DEFAULT;
        w->m = m;
        w->req = *req;
        w->req.group = w->group;
        w->req.done = NULL;
        w->bw = bw;
        w->start_time = st.start_time;
        w->exe_dev = (uint64_t) exe.st_dev;
        w->exe_ino = (uint64_t) exe.st_ino;
        w->called_ns = now;
        w->expire_ns = now + timeout; /* both below 2^63: CLOCK_MONOTONIC, and at most an hour */
        w->bound_ns = bound_ns;
        w->base_switches = -1;
        w->interval_ns = STARTUP_LOOK_MIN_NSEC / 2; /* doubled before the first look without events */
        /* With the proc connector the first look is at the timeout (the exec and the exit are
         * events); without it, in a millisecond. */
        at = m->procs.fd >= 0 ? w->expire_ns : now + STARTUP_LOOK_MIN_NSEC;
        r = sd_event_add_time(m->event, &w->timer, CLOCK_MONOTONIC, at / 1000, accuracy_usec(now, at),
                              on_watch_timer, w);
        if (r >= 0)
                r = sd_event_source_set_enabled(w->timer, SD_EVENT_ONESHOT);
        if (r >= 0)
                r = hashmap_put(&m->startup.watches, watch_key(req->pid), w);
        if (r < 0) {
                watch_free(w);
                return op_errno(error, r, "arming the start-up timer");
        }
        m->startup.n++;
        if (req->caller.uid != 0)
                m->startup.n_users++;
        log_debug("Process %" PRIu64 " waits for its start (bound %" PRIu64 " ns) to be admitted into %s", req->pid,
                  bound_ns, path ? path : "/");
        return 0;
}

void startup_stop(Manager *m) {
        StartupWatch *w;

        HASHMAP_FOREACH(w, &m->startup.watches, i)
                watch_free(w);
        hashmap_done(&m->startup.watches);
        m->startup.n = 0;
        m->startup.n_users = 0;
}
