/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libedfd: edfd's signals as events in the caller's own loop.
 *
 * The matches are added before Subscribe() is called (edfd sends its signals only while someone
 * subscribed, and the call also starts edfd where the bus can activate it), so nothing between the
 * two is missed. A new edfd knows no subscribers: when one joins the bus (NameOwnerChanged), the
 * library subscribes again by itself and reports DAEMON_STARTED. The caller polls one fd; sd-bus
 * stays an implementation detail. */

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "edfd/libedfd-internal.h"
#include "shared/protocol.h"

struct edfd_event {
        edfd_event_type type;
        uint64_t id, child_id, runtime, deadline, period, throttles, lock_waits;
        uint32_t pid, tid;
        int cpu;                   /* -1: none said (global placement, or an older edfd) */
        const char *group, *reason;
};

/* The further fields (a{sv}) after a signal's fixed ones, when there are: "cpu" (u). */
typedef struct EventFields {
        uint32_t cpu;
} EventFields;

static void read_fields(sd_bus_message *m, edfd_event *ev) {
        static const edfd_dict_field map[] = { { "cpu", 'u', offsetof(EventFields, cpu) } };
        EventFields f = { .cpu = UINT32_MAX };

        if (edfd_read_dict(m, map, 1, &f) >= 0 && f.cpu <= INT32_MAX)
                ev->cpu = (int) f.cpu;
}

static void deliver(edfd *e, edfd_event *ev) {
        int r;

        if (!e->handler || e->handler_result < 0)
                return;
        if (!ev->group)
                ev->group = "";
        if (!ev->reason)
                ev->reason = "";
        e->delivered++;
        r = e->handler(e, ev, e->userdata);
        if (r < 0)
                e->handler_result = r;
}

static int on_signal(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        edfd *e = userdata;
        const char *member = sd_bus_message_get_member(m);
        edfd_event ev = { .cpu = -1 };
        int r = 0;

        if (!member)
                return 0;
        if (strcmp(member, "ReservationAdded") == 0 || strcmp(member, "ReservationRemoved") == 0) {
                ev.type = member[11] == 'A' ? EDFD_EVENT_ADDED : EDFD_EVENT_REMOVED;
                r = sd_bus_message_read(m, "tuuss", &ev.id, &ev.pid, &ev.tid, &ev.group, &ev.reason);
                if (r > 0)
                        read_fields(m, &ev);
        } else if (strcmp(member, "ReservationChanged") == 0) {
                ev.type = EDFD_EVENT_CHANGED;
                r = sd_bus_message_read(m, "tttts", &ev.id, &ev.runtime, &ev.deadline, &ev.period, &ev.reason);
                if (r > 0)
                        read_fields(m, &ev);
        } else if (strcmp(member, "Split") == 0) {
                ev.type = EDFD_EVENT_SPLIT;
                r = sd_bus_message_read(m, "tt", &ev.id, &ev.child_id);
        } else if (strcmp(member, "ReservationThrottled") == 0) {
                ev.type = EDFD_EVENT_THROTTLED;
                r = sd_bus_message_read(m, "tuut", &ev.id, &ev.pid, &ev.tid, &ev.throttles);
        } else if (strcmp(member, "ReservationLockWaits") == 0) {
                ev.type = EDFD_EVENT_LOCK_WAITS;
                r = sd_bus_message_read(m, "tuut", &ev.id, &ev.pid, &ev.tid, &ev.lock_waits);
        } else if (strcmp(member, "GroupsChanged") == 0)
                ev.type = EDFD_EVENT_GROUPS_CHANGED;
        else
                return 0; /* a signal of a newer edfd */
        if (r < 0)
                return 0; /* a signal that does not parse is not an event */
        deliver(e, &ev);
        return 0;
}

static int on_subscribed(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        return 0; /* a failure shows as the missing events; nothing to undo */
}

static int on_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        edfd *e = userdata;
        const char *name, *old_owner, *new_owner;
        edfd_event ev = { .cpu = -1 };

        if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0 || strcmp(name, EDFD_BUS_NAME) != 0)
                return 0;
        if (*new_owner) {
                (void) sd_bus_call_method_async(e->bus, NULL, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE,
                                                "Subscribe", on_subscribed, NULL, "");
                ev.type = EDFD_EVENT_DAEMON_STARTED;
                ev.reason = new_owner;
        } else
                ev.type = EDFD_EVENT_DAEMON_STOPPED;
        deliver(e, &ev);
        return 0;
}

static int on_disconnected(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        edfd *e = userdata;
        edfd_event ev = { .type = EDFD_EVENT_DISCONNECTED, .cpu = -1 };

        e->disconnected = true;
        deliver(e, &ev);
        return 0;
}

static void matches_drop(edfd *e) {
        e->match_signals = sd_bus_slot_unref(e->match_signals);
        e->match_owner = sd_bus_slot_unref(e->match_owner);
        e->match_disconnected = sd_bus_slot_unref(e->match_disconnected);
}

int edfd_subscribe(edfd *e, edfd_event_handler handler, void *userdata) {
        int r = edfd_begin(e);

        if (r < 0)
                return r;
        if (!handler)
                return edfd_fail(e, -EINVAL, "edfd_subscribe: no handler (NULL)");
        e->handler = handler;
        e->userdata = userdata;
        if (e->match_signals)
                return 0;
        r = sd_bus_match_signal(e->bus, &e->match_signals, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, NULL,
                                on_signal, e);
        if (r >= 0)
                r = sd_bus_add_match(e->bus, &e->match_owner,
                                     "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                                     "interface='org.freedesktop.DBus',member='NameOwnerChanged',"
                                     "arg0='" EDFD_BUS_NAME "'",
                                     on_owner_changed, e);
        if (r >= 0)
                r = sd_bus_match_signal(e->bus, &e->match_disconnected, NULL, "/org/freedesktop/DBus/Local",
                                        "org.freedesktop.DBus.Local", "Disconnected", on_disconnected, e);
        if (r < 0) {
                matches_drop(e);
                return edfd_fail_bus(e, NULL, r, "AddMatch");
        }
        r = edfd_call(e, "Subscribe", false, NULL, NULL);
        if (r < 0)
                matches_drop(e);
        return r;
}

int edfd_unsubscribe(edfd *e) {
        int r = edfd_begin(e);

        if (r < 0)
                return r;
        if (!e->match_signals)
                return 0;
        matches_drop(e);
        e->handler = NULL;
        return edfd_call(e, "Unsubscribe", false, NULL, NULL);
}

int edfd_get_fd(edfd *e) {
        int r = edfd_begin(e);

        if (r < 0)
                return r;
        r = sd_bus_get_fd(e->bus);
        return r < 0 ? edfd_fail_bus(e, NULL, r, "sd_bus_get_fd") : r;
}

int edfd_get_events(edfd *e) {
        int r = edfd_begin(e);

        if (r < 0)
                return r;
        r = sd_bus_get_events(e->bus);
        return r < 0 ? edfd_fail_bus(e, NULL, r, "sd_bus_get_events") : r;
}

int edfd_get_timeout(edfd *e, uint64_t *ret_usec) {
        int r = edfd_begin(e);

        if (r < 0)
                return r;
        if (!ret_usec)
                return edfd_fail(e, -EINVAL, "edfd_get_timeout: no place for the timeout (NULL)");
        r = sd_bus_get_timeout(e->bus, ret_usec);
        return r < 0 ? edfd_fail_bus(e, NULL, r, "sd_bus_get_timeout") : 0;
}

int edfd_process(edfd *e) {
        int r = edfd_begin(e);

        if (r < 0)
                return r;
        e->delivered = 0;
        e->handler_result = 0;
        for (;;) {
                if (e->disconnected)
                        break;
                r = sd_bus_process(e->bus, NULL);
                if (r < 0) {
                        if (e->delivered > 0)
                                break; /* report the events now, the failure at the next call */
                        return edfd_fail_bus(e, NULL, r, "edfd_process");
                }
                if (e->handler_result < 0)
                        return e->handler_result;
                if (r == 0)
                        break;
        }
        if (e->disconnected && e->delivered == 0)
                return edfd_fail(e, -ECONNRESET, "the connection to the system bus is lost");
        return e->delivered;
}

int edfd_wait(edfd *e, uint64_t timeout_usec) {
        int r = edfd_begin(e);

        if (r < 0)
                return r;
        r = sd_bus_wait(e->bus, timeout_usec);
        if (r == -EINTR)
                return edfd_fail(e, r, "interrupted by a signal");
        return r < 0 ? edfd_fail_bus(e, NULL, r, "edfd_wait") : r;
}

/* --- accessors --- */

edfd_event_type edfd_event_get_type(const edfd_event *ev) {
        return ev ? ev->type : 0;
}
uint64_t edfd_event_id(const edfd_event *ev) {
        return ev ? ev->id : 0;
}
uint64_t edfd_event_child_id(const edfd_event *ev) {
        return ev ? ev->child_id : 0;
}
pid_t edfd_event_pid(const edfd_event *ev) {
        return ev ? (pid_t) ev->pid : 0;
}
pid_t edfd_event_tid(const edfd_event *ev) {
        return ev ? (pid_t) ev->tid : 0;
}
const char *edfd_event_group(const edfd_event *ev) {
        return ev ? ev->group : "";
}
const char *edfd_event_reason(const edfd_event *ev) {
        return ev ? ev->reason : "";
}
uint64_t edfd_event_runtime(const edfd_event *ev) {
        return ev ? ev->runtime : 0;
}
uint64_t edfd_event_deadline(const edfd_event *ev) {
        return ev ? ev->deadline : 0;
}
uint64_t edfd_event_period(const edfd_event *ev) {
        return ev ? ev->period : 0;
}
int edfd_event_cpu(const edfd_event *ev) {
        return ev ? ev->cpu : -1;
}
uint64_t edfd_event_throttles(const edfd_event *ev) {
        return ev ? ev->throttles : 0;
}

uint64_t edfd_event_lock_waits(const edfd_event *ev) {
        return ev ? ev->lock_waits : 0;
}
