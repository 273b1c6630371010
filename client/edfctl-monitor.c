/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `edfctl monitor`: one line per signal from edfd, with a local timestamp, until SIGINT or
 * SIGTERM. It also says when edfd leaves or joins the bus (NameOwnerChanged), so a restart shows
 * in the log instead of silence. Every line is flushed at once: the output is often a pipe. The
 * events come from libedfd (edfd_subscribe()), polled here beside a signalfd for the end. */

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <poll.h>
#include <sys/signalfd.h>

#include "basic/escape.h"
#include "core/duration.h"
#include "edfctl.h"

static void stamp(void) {
        struct timespec ts;
        struct tm tm;

        clock_gettime(CLOCK_REALTIME, &ts);
        localtime_r(&ts.tv_sec, &tm);
        printf("%02d:%02d:%02d.%03ld ", tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}

static void comm_suffix(uint32_t pid, uint32_t tid, char *buf, size_t size) {
        char comm[17];

        if (proc_thread_comm(pid, tid, comm) >= 0)
                snprintf(buf, size, " (%s)", tty(comm));
        else
                buf[0] = '\0';
}

/* " on cpuN" for a reservation of partitioned placement, else "". */
static void cpu_suffix(const edfd_event *ev, char *buf, size_t size) {
        int cpu = edfd_event_cpu(ev);

        if (cpu >= 0)
                snprintf(buf, size, " on cpu%d", cpu);
        else
                buf[0] = '\0';
}

static int on_event(edfd *e, const edfd_event *ev, void *userdata) {
        char a[DURATION_MAX], b[DURATION_MAX], c[DURATION_MAX], comm[ESCAPE_MAX(16) + 4], where[24];
        edfd_event_type type = edfd_event_get_type(ev);
        uint32_t pid = (uint32_t) edfd_event_pid(ev), tid = (uint32_t) edfd_event_tid(ev);
        int *ex = userdata;

        switch (type) {
        case EDFD_EVENT_ADDED:
        case EDFD_EVENT_REMOVED: {
                bool added = type == EDFD_EVENT_ADDED;
                comm_suffix(pid, tid, comm, sizeof comm);
                cpu_suffix(ev, where, sizeof where);
                stamp();
                printf("%-8s #%" PRIu64 " pid %" PRIu32 " tid %" PRIu32 "%s %s %s%s (%s)\n", added ? "added" : "removed",
                       edfd_event_id(ev), pid, tid, added ? comm : "", added ? "in" : "from", tty(edfd_event_group(ev)),
                       where, tty(edfd_event_reason(ev)));
                break;
        }
        case EDFD_EVENT_CHANGED:
                stamp();
                cpu_suffix(ev, where, sizeof where);
                printf("%-8s #%" PRIu64 " now %s/%s/%s%s (%s)\n", "changed", edfd_event_id(ev),
                       duration_format(edfd_event_runtime(ev), a), duration_format(edfd_event_deadline(ev), b),
                       duration_format(edfd_event_period(ev), c), where, tty(edfd_event_reason(ev)));
                break;
        case EDFD_EVENT_SPLIT:
                stamp();
                printf("%-8s #%" PRIu64 " gave half its runtime to #%" PRIu64 "\n", "split", edfd_event_id(ev),
                       edfd_event_child_id(ev));
                break;
        case EDFD_EVENT_THROTTLED:
                comm_suffix(pid, tid, comm, sizeof comm);
                stamp();
                printf("%-9s #%" PRIu64 " pid %" PRIu32 " tid %" PRIu32 "%s: %" PRIu64 " throttle%s since its admission\n",
                       "throttled", edfd_event_id(ev), pid, tid, comm, edfd_event_throttles(ev),
                       edfd_event_throttles(ev) == 1 ? "" : "s");
                break;
        case EDFD_EVENT_LOCK_WAITS:
                comm_suffix(pid, tid, comm, sizeof comm);
                stamp();
                printf("%-9s #%" PRIu64 " pid %" PRIu32 " tid %" PRIu32 "%s: %" PRIu64 " possible lock wait%s since its "
                       "admission (woken from a futex wait by a thread without a deadline; the fix: a "
                       "PTHREAD_PRIO_INHERIT mutex, libedfd(3))\n", "lockwait", edfd_event_id(ev), pid, tid, comm,
                       edfd_event_lock_waits(ev), edfd_event_lock_waits(ev) == 1 ? "" : "s");
                break;
        case EDFD_EVENT_GROUPS_CHANGED:
                stamp();
                printf("%-8s the group tree changed\n", "groups");
                break;
        case EDFD_EVENT_DAEMON_STARTED:
                stamp();
                printf("%-8s edfd is on the bus (%s)\n", "started", tty(edfd_event_reason(ev)));
                break;
        case EDFD_EVENT_DAEMON_STOPPED:
                stamp();
                printf("%-8s edfd left the bus\n", "stopped");
                break;
        case EDFD_EVENT_DISCONNECTED:
                fprintf(stderr, "edfctl: lost the connection to the system bus\n");
                *ex = EDFCTL_EXIT_UNREACHABLE;
                return 0;
        default:
                return 0;
        }
        fflush(stdout);
        return 0;
}

int verb_monitor(const Args *a) {
        _cleanup_(edfd_closep) edfd *e = NULL;
        int ex = EDFCTL_EXIT_OK, sfd = -1, r;
        sigset_t mask;

        ex = edfctl_connect(&e);
        if (ex != EDFCTL_EXIT_OK)
                return ex;
        r = edfd_subscribe(e, on_event, &ex);
        if (r < 0)
                return edfctl_failed(e, r, "Subscribe");

        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0 || (sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
                fprintf(stderr, "edfctl: cannot catch SIGINT and SIGTERM: %s\n", strerror(errno));
                return EDFCTL_EXIT_FAILED;
        }
        if (isatty(STDOUT_FILENO))
                fprintf(stderr, "Monitoring edfd; press Ctrl-C to stop.\n");
        /* libedfd's events in this loop: its fd, its events and its timeout, then edfd_process(). */
        while (ex == EDFCTL_EXIT_OK) {
                struct pollfd fds[2] = { { .fd = sfd, .events = POLLIN } };
                uint64_t until = UINT64_MAX;
                int timeout_ms = -1;

                r = edfd_process(e);
                if (r < 0) {
                        if (r == -ECONNRESET)
                                break; /* said by the DISCONNECTED event */
                        ex = edfctl_failed(e, r, "the monitor");
                        break;
                }
                if (ex != EDFCTL_EXIT_OK)
                        break;
                fds[1].fd = edfd_get_fd(e);
                fds[1].events = (short) edfd_get_events(e);
                if (fds[1].fd < 0 || fds[1].events < 0 || edfd_get_timeout(e, &until) < 0) {
                        ex = edfctl_failed(e, fds[1].fd < 0 ? fds[1].fd : -EIO, "the monitor");
                        break;
                }
                if (until != UINT64_MAX) {
                        struct timespec ts;
                        uint64_t now;
                        clock_gettime(CLOCK_MONOTONIC, &ts);
                        now = (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
                        timeout_ms = until <= now ? 0 : (int) MIN((until - now + 999) / 1000, (uint64_t) INT32_MAX);
                }
                if (poll(fds, 2, timeout_ms) < 0 && errno != EINTR) {
                        fprintf(stderr, "edfctl: poll failed: %s\n", strerror(errno));
                        ex = EDFCTL_EXIT_FAILED;
                        break;
                }
                if (fds[0].revents & POLLIN)
                        break; /* SIGINT or SIGTERM: the end */
        }
        close(sfd);
        return ex;
}
