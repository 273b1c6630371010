/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* edfd-oci-hook's start-up rule: admit the container's process when its program first sleeps.
 *
 * At createRuntime the process is the runtime's init, parked until the engine starts the
 * container. The hook has made the container's group by then, so the bandwidth is booked and a
 * refusal has failed the creation already; what is left is the thread's own admission, which the
 * tree is sure to take. A watcher, detached from the hook (the engine waits for the hook's exit
 * and for its standard output and error to close), waits for the process's exec (its
 * /proc/PID/exe changes; its start time must not, or the pid was reused), then for its first
 * sleep after it (state S, or a voluntary switch since the exec) or the bound, and admits it. The
 * runtime's remaining init, the exec, the dynamic loader and the program's initialization so run
 * as SCHED_OTHER, as with `edfctl admit --startup`. A container that ends first, or whose group
 * poststop removed, is left alone. What goes wrong after the hook has returned cannot fail the
 * creation any more: it is logged (syslog, LOG_DAEMON) with the container's id. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <edfd/edfd.h>

#include "basic/proc.h"
#include "oci-startup.h"

static uint64_t mono_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000 + (uint64_t) ts.tv_nsec;
}

static void pause_ns(uint64_t ns) {
        (void) nanosleep(&(struct timespec) { .tv_sec = (time_t) (ns / 1000000000), .tv_nsec = (long) (ns % 1000000000) },
                         NULL);
}

static int exe_of(pid_t pid, struct stat *ret) {
        char path[64];

        snprintf(path, sizeof path, "/proc/%d/exe", (int) pid);
        return stat(path, ret) < 0 ? -errno : 0;
}

/* Still the same process: there, and started when it was. */
static bool same_process(pid_t pid, uint64_t start_time, ProcStat *st) {
        return proc_read_stat(pid, pid, PROC_STAT_STATE | PROC_STAT_START_TIME, st) == 0 &&
               st->start_time == start_time && st->state != 'Z' && st->state != 'X';
}

/* The watcher's whole life; returns its exit status. */
static int watch(const StartupWatch *w) {
        struct stat exe;
        ProcStat st;
        uint64_t t0 = mono_ns(), until;
        long long base;
        edfd *e = NULL;
        edfd_request *q = NULL;
        uint64_t id;
        int r;

        /* Until the exec: every millisecond for a minute (a container is started right after it
         * is created), then every 100 ms (podman create without start). */
        for (;;) {
                if (!same_process(w->pid, w->start_time, &st))
                        return 0; /* it ended (or never started): nothing to admit */
                if (exe_of(w->pid, &exe) == 0 && (exe.st_dev != w->exe_dev || exe.st_ino != w->exe_ino))
                        break;
                pause_ns(mono_ns() - t0 < UINT64_C(60000000000) ? 1000000 : 100000000);
        }
        /* Until its first sleep after the exec, or the bound. */
        base = proc_voluntary_switches(w->pid);
        until = mono_ns() + w->bound_ns;
        for (;;) {
                if (!same_process(w->pid, w->start_time, &st))
                        return 0;
                if (st.state == 'S' || (base >= 0 && proc_voluntary_switches(w->pid) > base) || mono_ns() >= until)
                        break;
                pause_ns(100000);
        }

        r = edfd_open(&e);
        if (r < 0) {
                syslog(LOG_ERR, "container %s: not admitted after its start-up: cannot reach edfd: %s", w->id, strerror(-r));
                return 1;
        }
        r = edfd_request_new(&q);
        if (r >= 0)
                r = edfd_request_set_thread(q, w->pid, w->pid);
        if (r >= 0)
                r = edfd_request_set_group(q, w->group);
        if (r >= 0)
                r = edfd_request_set_runtime(q, w->runtime);
        if (r >= 0)
                r = edfd_request_set_deadline(q, w->deadline);
        if (r >= 0)
                r = edfd_request_set_period(q, w->period);
        if (r >= 0)
                r = edfd_admit(e, q, &id);
        /* Gone meanwhile (ESRCH), or poststop removed the group (ENOENT): nothing to say. */
        if (r < 0 && same_process(w->pid, w->start_time, &st) && r != -ENOENT)
                syslog(LOG_ERR, "container %s: not admitted after its start-up: %s", w->id,
                       *edfd_error_message(e) ? edfd_error_message(e) : strerror(-r));
        edfd_request_free(q);
        edfd_close(e);
        return r < 0 ? 1 : 0;
}

int startup_watch_prepare(pid_t pid, StartupWatch *w) {
        struct stat exe;
        ProcStat st;
        int r;

        r = proc_read_stat(pid, pid, PROC_STAT_START_TIME, &st);
        if (r < 0)
                return r;
        r = exe_of(pid, &exe);
        if (r < 0)
                return r;
        w->pid = pid;
        w->start_time = st.start_time;
        w->exe_dev = exe.st_dev;
        w->exe_ino = exe.st_ino;
        return 0;
}

int startup_watch_start(const StartupWatch *w) {
        pid_t child;
        int fd;

        fflush(NULL);
        child = fork();
        if (child < 0)
                return -errno;
        if (child > 0)
                return 0; /* the hook exits next: the watcher is reparented, never a zombie of ours */
        (void) setsid();
        /* The engine reads the hook's output until it closes: keep none of it. */
        fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (fd >= 0) {
                (void) dup2(fd, STDIN_FILENO);
                (void) dup2(fd, STDOUT_FILENO);
                (void) dup2(fd, STDERR_FILENO);
                if (fd > STDERR_FILENO)
                        close(fd);
        }
        (void) !chdir("/");
        openlog("edfd-oci-hook", LOG_PID, LOG_DAEMON);
        _exit(watch(w));
}
