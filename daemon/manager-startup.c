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
 * the exec-timeout, or its group is removed (a container removed before it started).
 *
 * The request is decided at the call as Admit would decide it (a refusal is the caller's answer),
 * and its bandwidth is held in the group it was decided for from then on (group_hold(): the group's
 * room shrinks as for a reservation), so that what was decided stays true: two containers created
 * at once into a group with room for one get their answers at creation, the second a refusal. The
 * hold is given back when the watch ends; at the start, it is given back and the admission made in
 * the same turn of the event loop, so nobody can take the room in between. (In a group of
 * partitioned placement the group's bandwidth is held, not a CPU's: the CPU is chosen at the
 * start.)
 *
 * A watch is recorded in the state journal (a W record at the call and when the exec is seen, an X
 * when it ends; state.h), and an edfd restarted meanwhile (or killed) takes it up again: its
 * bandwidth held again, the process looked at once. A program that exec'd while edfd was down has
 * its exec taken as seen at the restart (its bound counts from then); one that exec'd before keeps
 * its exec time and its bound, both CLOCK_MONOTONIC. A process that ended or was admitted
 * meanwhile ends its watch. At a clean stop the watches stay in the journal for the next edfd. */

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
        char *group;               /* the group decided at the call (its path) */
        bool held;                 /* req's bandwidth held in group (group_hold()) */
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

/* Give w's held bandwidth back to its group. */
static void watch_unhold(Manager *m, StartupWatch *w) {
        Group *g;

        if (!w->held)
                return;
        g = tree_find_group(m->tree, w->group);
        if (g)
                group_unhold(m->tree, g, w->bw);
        w->held = false;
}

static void watch_to_state(const StartupWatch *w, StateWatch *ret) {
        *ret = (StateWatch) {
                .pid = (uint32_t) w->req.pid, .start_time = w->start_time, .exe_dev = w->exe_dev,
                .exe_ino = w->exe_ino, .uid = (uint32_t) w->req.caller.uid, .caller_pid = (uint32_t) w->req.caller.pid,
                .may_move = w->req.may_move, .flags = w->req.flags, .params = w->req.params,
                .bound_ns = w->bound_ns, .called_ns = w->called_ns, .expire_ns = w->expire_ns,
                .exec_ns = w->exec_ns, .base_switches = w->base_switches,
        };
        snprintf(ret->group, sizeof ret->group, "%s", w->group);
}

/* w as it is now into the journal (a W record). */
static int watch_record(Manager *m, const StartupWatch *w) {
        StateWatch sw;

        watch_to_state(w, &sw);
        return state_write_watch(m->state, &sw);
}

/* Out of the table, its count given back. */
static void watch_unlink(Manager *m, StartupWatch *w) {
        if (hashmap_remove(&m->startup.watches, watch_key(w->req.pid)) == w) {
                m->startup.n--;
                if (w->req.caller.uid != 0)
                        m->startup.n_users--;
        }
}

/* End w: out of the table, its hold given back, its end journaled. */
static void watch_end(Manager *m, StartupWatch *w) {
        int r;

        watch_unlink(m, w);
        watch_unhold(m, w);
        r = state_write_watch_end(m->state, (uint32_t) w->req.pid);
        if (r < 0)
                log_state_failure(r);
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

        /* The room held since the call, given back for the admission to take in this same turn. */
        watch_unhold(m, w);
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
                        int r;

                        w->exec_ns = now;
                        w->base_switches = proc_voluntary_switches(pid);
                        w->interval_ns = STARTUP_LOOK_MIN_NSEC;
                        /* A restart from here on keeps the exec's time, and so the bound. */
                        r = watch_record(m, w);
                        if (r < 0)
                                log_state_failure(r);
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
        const Group *g = NULL;
        StartupWatch *w;
        Refusal rf;
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
        if (manager_admit_decide(m, req, &g, error) < 0)
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
        if (!w || !(w->group = strdup(g->path))) {
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
        /* Decided above in this same turn: the room is there (a refusal here is a bug's). */
        r = group_hold(m->tree, tree_find_group(m->tree, w->group), bw, &rf);
        if (r != 0) {
                watch_unlink(m, w);
                watch_free(w);
                return op_refused(error, &rf);
        }
        w->held = true;
        r = watch_record(m, w);
        if (r < 0) {
                log_state_failure(r);
                watch_unlink(m, w);
                watch_unhold(m, w);
                watch_free(w);
                return op_errno(error, r, "recording the admission at start");
        }
        log_debug("Process %" PRIu64 " waits for its start (bound %" PRIu64 " ns) to be admitted into %s, %s held",
                  req->pid, bound_ns, w->group, bw_format_up(bw, (char[DURATION_MAX]) {}));
        return 0;
}

int startup_watches(const Manager *m, StateWatch **ret, size_t *ret_n) {
        StateWatch *v = calloc(m->startup.n ? m->startup.n : 1, sizeof(StateWatch));
        const StartupWatch *w;
        size_t n = 0;

        if (!v)
                return -ENOMEM;
        HASHMAP_FOREACH(w, &m->startup.watches, i)
                if (n < m->startup.n)
                        watch_to_state(w, &v[n++]);
        *ret = v;
        *ret_n = n;
        return 0;
}

int startup_hold_in(Manager *m, Tree *t, OpError *error) {
        const StartupWatch *w;

        HASHMAP_FOREACH(w, &m->startup.watches, i) {
                Group *g;
                Refusal rf;
                char buf[256];
                int r;

                if (!w->held)
                        continue;
                g = tree_find_group(t, w->group);
                if (!g)
                        return op_fail(error, OP_INVALID_CONFIG,
                                       "the new configuration has no group %s, where process %" PRIu64 " waits for its "
                                       "start to be admitted", w->group, w->req.pid);
                r = group_hold(t, g, w->bw, &rf);
                if (r != 0)
                        return op_fail(error, OP_INVALID_CONFIG,
                                       "the admission of process %" PRIu64 " waiting for its start does not fit the "
                                       "new configuration: %s", w->req.pid, refusal_format(&rf, buf, sizeof buf));
        }
        return 0;
}

void startup_group_removed(Manager *m, const Group *g) {
        StartupWatch *w;
        bool again = true;

        /* One at a time: ending a watch changes the table under the walk. */
        while (again) {
                again = false;
                HASHMAP_FOREACH(w, &m->startup.watches, i)
                        if (strcmp(w->group, g->path) == 0) {
                                log_debug("Process %" PRIu64 " waited for its start in %s, which is removed: dropped",
                                          w->req.pid, g->path);
                                watch_end(m, w);
                                again = true;
                                break;
                        }
        }
}

/* The first look at a restored watch, at once: it may have exec'd, slept, passed its bound or its
 * exec-timeout while edfd was down. */
static int watch_arm(Manager *m, StartupWatch *w) {
        uint64_t now = now_ns();
        int r;

        r = sd_event_add_time(m->event, &w->timer, CLOCK_MONOTONIC, now / 1000, accuracy_usec(now, now), on_watch_timer,
                              w);
        if (r >= 0)
                r = sd_event_source_set_enabled(w->timer, SD_EVENT_ONESHOT);
        return r;
}

void startup_restore(Manager *m, const StateWatch *watches, size_t n) {
        unsigned restored = 0, gone = 0;

        for (size_t i = 0; i < n; i++) {
                const StateWatch *sw = &watches[i];
                pid_t pid = (pid_t) sw->pid;
                StartupWatch *w;
                ProcStat st;
                Group *g = NULL;
                Refusal rf;
                uint64_t bw = 0;
                char buf[256];
                const char *why = NULL;

                if (sw->pid > INT32_MAX || proc_read_stat(pid, pid, PROC_STAT_START_TIME, &st) < 0 ||
                    st.start_time != sw->start_time)
                        why = "its process ended while edfd was down";
                else if (tree_find_thread(m->tree, sw->pid))
                        why = "it was admitted before edfd stopped";
                else if (!(g = tree_find_group(m->tree, sw->group)))
                        why = "its group no longer exists";
                else if (bw_of(sw->params.runtime, sw->params.period, &bw) < 0)
                        why = "its parameters have no bandwidth";
                else if (hashmap_get(&m->startup.watches, watch_key(sw->pid)) || m->startup.n >= STARTUP_WATCHES_MAX)
                        why = "the table of watches is full";
                if (why) {
                        int r = state_write_watch_end(m->state, sw->pid);
                        if (r < 0)
                                log_state_failure(r);
                        log_info("Process %" PRIu32 " waited for its start to be admitted into %s: dropped, %s",
                                 sw->pid, sw->group, why);
                        gone++;
                        continue;
                }
                w = calloc(1, sizeof *w);
                if (!w || !(w->group = strdup(sw->group)) ||
                    hashmap_put(&m->startup.watches, watch_key(sw->pid), w) < 0) {
                        if (w)
                                free(w->group);
                        free(w);
                        (void) log_oom();
                        return;
                }
                w->m = m;
                w->req = (AdmitRequest) { .pid = sw->pid, .tid = sw->pid, .group = w->group, .params = sw->params,
                                          .flags = sw->flags, .caller = { .uid = (uid_t) sw->uid, .pid = (pid_t) sw->caller_pid },
                                          .may_move = sw->may_move };
                w->bw = bw;
                w->start_time = sw->start_time;
                w->exe_dev = sw->exe_dev;
                w->exe_ino = sw->exe_ino;
                w->called_ns = sw->called_ns;
                w->expire_ns = sw->expire_ns;
                w->bound_ns = sw->bound_ns;
                w->exec_ns = sw->exec_ns;
                w->base_switches = sw->base_switches;
                w->interval_ns = sw->exec_ns ? STARTUP_LOOK_MIN_NSEC : STARTUP_LOOK_MIN_NSEC / 2;
                m->startup.n++;
                if (sw->uid != 0)
                        m->startup.n_users++;
                if (group_hold(m->tree, g, bw, &rf) == 0)
                        w->held = true;
                else
                        log_warning("Process %" PRIu32 " waits for its start to be admitted into %s, but its bandwidth "
                                    "cannot be held there again: %s; it is decided again at its start",
                                    sw->pid, sw->group, refusal_format(&rf, buf, sizeof buf));
                restored++;
        }
        if (restored || gone)
                log_info("Took up %u admissions waiting for their programs' start from %s; %u were dropped", restored,
                         m->state_dir, gone);
}

void startup_start(Manager *m) {
        StartupWatch *w;
        bool again = true;

        while (again) {
                again = false;
                HASHMAP_FOREACH(w, &m->startup.watches, i)
                        if (!w->timer) {
                                int r = watch_arm(m, w);
                                if (r < 0) {
                                        log_warning("Process %" PRIu64 " waits for its start, but its timer cannot be "
                                                    "armed: %s; dropped", w->req.pid, strerror(-r));
                                        watch_end(m, w);
                                        again = true;
                                        break;
                                }
                        }
        }
}

void startup_stop(Manager *m) {
        StartupWatch *w;

        /* Their W records stay: the next edfd takes them up. */
        HASHMAP_FOREACH(w, &m->startup.watches, i)
                watch_free(w);
        hashmap_done(&m->startup.watches);
        m->startup.n = 0;
        m->startup.n_users = 0;
}
