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
 * One timer serves every watch: every millisecond while one is within a minute of its call or
 * after its exec, every 100 ms otherwise (created and never started). A watch ends when its
 * process is admitted, ends, or is replaced (another start time under the pid), and at exit. It is
 * not recorded in the state journal: an edfd that restarts meanwhile forgets it, and the caller's
 * booking (edfd-oci-hook's per-container group) stays until the caller removes it. The request is
 * decided at the call as Admit would decide it (a refusal is the caller's answer), but nothing is
 * booked: it is decided again when the program starts, and a caller that must not be refused then
 * books the room first (a group of its own, as edfd-oci-hook does as root). */

#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/macro.h"
#include "basic/proc.h"
#include "core/duration.h"
#include "log.h"
#include "manager-bus.h"
#include "manager-internal.h"

#define STARTUP_WATCHES_MAX 4096
#define STARTUP_BOUND_MAX (3600 * NSEC_PER_SEC)
#define STARTUP_FAST_NSEC (60 * NSEC_PER_SEC) /* before the exec: polled every ms for a minute */

typedef struct StartupWatch {
        AdmitRequest req;          /* req.group points to group */
        char *group;
        uint64_t start_time;       /* /proc start time: a reused pid is another process */
        uint64_t exe_dev, exe_ino; /* /proc/PID/exe at the call */
        uint64_t called_ns, exec_ns, bound_ns; /* exec_ns: 0 until the exec is seen */
        long long base_switches;   /* voluntary switches at the exec */
        struct StartupWatch *next;
} StartupWatch;

static int exe_of(pid_t pid, struct stat *ret) {
        char path[64];

        snprintf(path, sizeof path, "/proc/%d/exe", (int) pid);
        return stat(path, ret) < 0 ? -errno : 0;
}

static void watch_free(StartupWatch *w) {
        free(w->group);
        free(w);
}

static void unlink_watch(Manager *m, StartupWatch *w) {
        for (StartupWatch **q = &m->startup.watches; *q; q = &(*q)->next)
                if (*q == w) {
                        *q = w->next;
                        m->startup.n--;
                        return;
                }
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

/* One look at w: true when the watch is over (admitted, or nothing left to admit). */
static bool look(Manager *m, StartupWatch *w, uint64_t now) {
        pid_t pid = (pid_t) w->req.pid;
        struct stat exe;
        ProcStat st;

        if (proc_read_stat(pid, pid, PROC_STAT_STATE | PROC_STAT_START_TIME, &st) < 0 ||
            st.start_time != w->start_time || st.state == 'Z' || st.state == 'X')
                return true; /* ended, or another process under the pid */
        if (w->exec_ns == 0) {
                if (exe_of(pid, &exe) < 0 || ((uint64_t) exe.st_dev == w->exe_dev && (uint64_t) exe.st_ino == w->exe_ino))
                        return false;
                w->exec_ns = now;
                w->base_switches = proc_voluntary_switches(pid);
                return false; /* its first sleep is looked for from the next tick on */
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
        return false;
}

static uint64_t next_interval_usec(const Manager *m, uint64_t now) {
        for (const StartupWatch *w = m->startup.watches; w; w = w->next)
                if (w->exec_ns != 0 || now - w->called_ns < STARTUP_FAST_NSEC)
                        return 1000;
        return 100000;
}

static int on_startup_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        uint64_t now = now_ns();

        for (StartupWatch *w = m->startup.watches, *next; w; w = next) {
                next = w->next;
                if (look(m, w, now)) {
                        unlink_watch(m, w);
                        watch_free(w);
                }
        }
        if (!m->startup.watches) {
                (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
                return 0;
        }
        (void) sd_event_source_set_time_relative(s, next_interval_usec(m, now));
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

static int arm(Manager *m) {
        int r;

        if (!m->startup.timer) {
                r = sd_event_add_time_relative(m->event, &m->startup.timer, CLOCK_MONOTONIC, 1000, 0, on_startup_tick, m);
                if (r < 0)
                        return r;
                return 0;
        }
        if (sd_event_source_get_enabled(m->startup.timer, NULL) > 0)
                return 0; /* armed: a new watch is looked at within the next interval */
        r = sd_event_source_set_time_relative(m->startup.timer, 1000);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->startup.timer, SD_EVENT_ONESHOT);
        return r;
}

int manager_admit_at_start(Manager *m, const AdmitRequest *req, uint64_t bound_ns, OpError *error) {
        const char *path = req->group && *req->group ? req->group : m->config ? m->config->default_group : NULL;
        StartupWatch *w;
        struct stat exe;
        ProcStat st;
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
        for (const StartupWatch *v = m->startup.watches; v; v = v->next)
                if (v->req.pid == req->pid)
                        return op_fail(error, OP_INVALID, "process %" PRIu64 " already waits for its start", req->pid);
        if (m->startup.n >= STARTUP_WATCHES_MAX)
                return op_fail(error, OP_LIMIT_EXCEEDED, "%d admissions already wait for their programs' start",
                               STARTUP_WATCHES_MAX);
        /* As it would be decided now: the process, its owner, the group, the room, the limits. */
        if (manager_admit_decide(m, req, error) < 0)
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
        w->req = *req;
        w->req.group = w->group;
        w->req.done = NULL;
        w->start_time = st.start_time;
        w->exe_dev = (uint64_t) exe.st_dev;
        w->exe_ino = (uint64_t) exe.st_ino;
        w->called_ns = now_ns();
        w->bound_ns = bound_ns;
        w->base_switches = -1;
        r = arm(m);
        if (r < 0) {
                watch_free(w);
                return op_errno(error, r, "arming the start-up timer");
        }
        w->next = m->startup.watches;
        m->startup.watches = w;
        m->startup.n++;
        log_debug("Process %" PRIu64 " waits for its start (bound %" PRIu64 " ns) to be admitted into %s", req->pid,
                  bound_ns, path ? path : "/");
        return 0;
}

void startup_stop(Manager *m) {
        while (m->startup.watches) {
                StartupWatch *w = m->startup.watches;
                m->startup.watches = w->next;
                watch_free(w);
        }
        m->startup.n = 0;
        m->startup.timer = sd_event_source_disable_unref(m->startup.timer);
}
