/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `edfctl monitor`: one line per signal from edfd, with a local timestamp, until SIGINT or
 * SIGTERM. It also says when edfd leaves or joins the bus (NameOwnerChanged), so a restart shows
 * in the log instead of silence. Every line is flushed at once: the output is often a pipe. */

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "core/duration.h"
#include "edfctl.h"
#include "shared/protocol.h"

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
                snprintf(buf, size, " (%s)", comm);
        else
                buf[0] = '\0';
}

static int print_signal(sd_bus_message *m) {
        const char *member = sd_bus_message_get_member(m);
        char a[DURATION_MAX], b[DURATION_MAX], c[DURATION_MAX], comm[32];
        const char *group, *reason;
        uint64_t id, id2, runtime, deadline, period;
        uint32_t pid, tid;
        int r;

        if (!member)
                return 0;
        if (strcmp(member, "ReservationAdded") == 0 || strcmp(member, "ReservationRemoved") == 0) {
                bool added = member[11] == 'A';
                r = sd_bus_message_read(m, "tuuss", &id, &pid, &tid, &group, &reason);
                if (r < 0)
                        return r;
                comm_suffix(pid, tid, comm, sizeof comm);
                stamp();
                printf("%-8s #%" PRIu64 " pid %" PRIu32 " tid %" PRIu32 "%s %s %s (%s)\n", added ? "added" : "removed",
                       id, pid, tid, added ? comm : "", added ? "in" : "from", group, reason);
        } else if (strcmp(member, "ReservationChanged") == 0) {
                r = sd_bus_message_read(m, "tttts", &id, &runtime, &deadline, &period, &reason);
                if (r < 0)
                        return r;
                stamp();
                printf("%-8s #%" PRIu64 " now %s/%s/%s (%s)\n", "changed", id, duration_format(runtime, a),
                       duration_format(deadline, b), duration_format(period, c), reason);
        } else if (strcmp(member, "Split") == 0) {
                r = sd_bus_message_read(m, "tt", &id, &id2);
                if (r < 0)
                        return r;
                stamp();
                printf("%-8s #%" PRIu64 " gave half its runtime to #%" PRIu64 "\n", "split", id, id2);
        } else if (strcmp(member, "GroupsChanged") == 0) {
                stamp();
                printf("%-8s the group tree changed\n", "groups");
        } else
                return 0;
        fflush(stdout);
        return 0;
}

static int on_signal(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        int r = print_signal(m);

        if (r < 0)
                fprintf(stderr, "edfctl: cannot parse signal %s: %s\n", sd_bus_message_get_member(m) ?: "?",
                        strerror(-r));
        return 0;
}

static int on_subscribed(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        if (e)
                fprintf(stderr, "edfctl: Subscribe failed: %s\n", e->message ?: e->name);
        return 0;
}

static int on_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        const char *name, *old_owner, *new_owner;
        int r;

        if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0)
                return 0;
        stamp();
        if (*new_owner) {
                printf("%-8s edfd is on the bus (%s)\n", "started", new_owner);
                /* A new edfd knows no subscribers. */
                r = sd_bus_call_method_async(sd_bus_message_get_bus(m), NULL, EDFD_BUS_NAME, EDFD_BUS_PATH,
                                             EDFD_BUS_INTERFACE, "Subscribe", on_subscribed, NULL, "");
                if (r < 0)
                        fprintf(stderr, "edfctl: cannot subscribe to the new edfd: %s\n", strerror(-r));
        } else
                printf("%-8s edfd left the bus\n", "stopped");
        fflush(stdout);
        return 0;
}

static int on_disconnected(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        fprintf(stderr, "edfctl: lost the connection to the system bus\n");
        sd_event_exit(sd_bus_get_event(sd_bus_message_get_bus(m)), EDFCTL_EXIT_UNREACHABLE);
        return 0;
}

static int on_exit_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        sd_event_exit(sd_event_source_get_event(s), EDFCTL_EXIT_OK);
        return 0;
}

int verb_monitor(const Args *a) {
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        sigset_t mask;
        int r, ex;

        ex = bus_connect(&bus);
        if (ex != EDFCTL_EXIT_OK)
                return ex;

        /* Match first, then Subscribe (edfd sends signals only while someone subscribed; the call
         * also starts edfd when the bus can activate it), so that nothing between the two is
         * missed. */
        r = sd_bus_match_signal(bus, NULL, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, NULL, on_signal, NULL);
        if (r < 0)
                return bus_call_failed(NULL, r, "AddMatch");
        r = sd_bus_add_match(bus, NULL,
                             "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                             "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='" EDFD_BUS_NAME "'",
                             on_owner_changed, NULL);
        if (r < 0)
                return bus_call_failed(NULL, r, "AddMatch");
        r = sd_bus_match_signal(bus, NULL, NULL, "/org/freedesktop/DBus/Local", "org.freedesktop.DBus.Local",
                                "Disconnected", on_disconnected, NULL);
        if (r < 0)
                return bus_call_failed(NULL, r, "AddMatch");
        r = sd_bus_call_method(bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "Subscribe", &error, NULL,
                               NULL);
        if (r < 0)
                return bus_call_failed(&error, r, "Subscribe");

        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) {
                fprintf(stderr, "edfctl: cannot block SIGINT and SIGTERM: %s\n", strerror(errno));
                return EDFCTL_EXIT_FAILED;
        }
        r = sd_event_default(&event);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGINT, on_exit_signal, NULL);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGTERM, on_exit_signal, NULL);
        if (r >= 0)
                r = sd_bus_attach_event(bus, event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0) {
                fprintf(stderr, "edfctl: cannot set up the event loop: %s\n", strerror(-r));
                return EDFCTL_EXIT_FAILED;
        }
        if (isatty(STDOUT_FILENO))
                fprintf(stderr, "Monitoring edfd; press Ctrl-C to stop.\n");
        r = sd_event_loop(event);
        if (r < 0) {
                fprintf(stderr, "edfctl: event loop failed: %s\n", strerror(-r));
                return EDFCTL_EXIT_FAILED;
        }
        return r;
}
