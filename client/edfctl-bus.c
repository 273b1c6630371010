/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The connection to edfd and the meaning of its errors.
 *
 * The daemon's error names are registered with sd_bus_error_add_map(), each with its own errno, so
 * that sd-bus turns a reply like org.edfd.Admission1.Error.OverBudget into -ENOSPC; the message is
 * then chosen by that errno. The daemon's own text already names the numbers ("group audio has
 * 12.5% free, the request needs 20%"), so edfctl only puts the kind of refusal in front of it.
 * Errors from the bus itself (no owner for the name, no reply) mean that edfd is not reachable,
 * exit status 3 with a hint. */

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "edfctl.h"
#include "shared/protocol.h"

#define HINT "is edfd running? (systemctl status edfd)"

static const sd_bus_error_map edfd_error_map[] = {
        SD_BUS_ERROR_MAP(EDFD_ERROR_OVER_BUDGET, ENOSPC),
        SD_BUS_ERROR_MAP(EDFD_ERROR_INVALID_PARAMETERS, EINVAL),
        SD_BUS_ERROR_MAP(EDFD_ERROR_NO_SUCH_GROUP, ENOENT),
        SD_BUS_ERROR_MAP(EDFD_ERROR_GROUP_EXISTS, EEXIST),
        SD_BUS_ERROR_MAP(EDFD_ERROR_NO_SUCH_RESERVATION, ENXIO),
        SD_BUS_ERROR_MAP(EDFD_ERROR_NO_SUCH_THREAD, ESRCH),
        SD_BUS_ERROR_MAP(EDFD_ERROR_ALREADY_ADMITTED, EALREADY),
        SD_BUS_ERROR_MAP(EDFD_ERROR_FOREIGN_DEADLINE, EBUSY),
        SD_BUS_ERROR_MAP(EDFD_ERROR_GROUP_NOT_EMPTY, ENOTEMPTY),
        SD_BUS_ERROR_MAP(EDFD_ERROR_KERNEL_REFUSED, EREMOTEIO),
        SD_BUS_ERROR_MAP(EDFD_ERROR_PERMISSION_DENIED, EACCES),
        SD_BUS_ERROR_MAP(EDFD_ERROR_LIMIT_EXCEEDED, EDQUOT),
        SD_BUS_ERROR_MAP(EDFD_ERROR_INVALID_CONFIG, EBADMSG),
        SD_BUS_ERROR_MAP_END,
};

/* What each mapped errno means, and the exit status it gives. */
static const struct {
        int errnum;
        const char *what;
        int exit_status;
} edfd_errors[] = {
        { ENOSPC, "admission refused", EDFCTL_EXIT_FAILED },
        { EINVAL, "invalid parameters", EDFCTL_EXIT_USAGE },
        { ENOENT, "no such group", EDFCTL_EXIT_FAILED },
        { EEXIST, "group exists", EDFCTL_EXIT_FAILED },
        { ENXIO, "no such reservation", EDFCTL_EXIT_FAILED },
        { ESRCH, "no such thread", EDFCTL_EXIT_FAILED },
        { EALREADY, "already admitted", EDFCTL_EXIT_FAILED },
        { EBUSY, "thread already runs SCHED_DEADLINE outside edfd", EDFCTL_EXIT_FAILED },
        { ENOTEMPTY, "group not empty", EDFCTL_EXIT_FAILED },
        { EREMOTEIO, "the kernel refused", EDFCTL_EXIT_FAILED },
        { EACCES, "permission denied", EDFCTL_EXIT_FAILED },
        { EDQUOT, "limit exceeded", EDFCTL_EXIT_FAILED },
        { EBADMSG, "invalid configuration", EDFCTL_EXIT_FAILED },
};

static const char *bus_address(void) {
        const char *e = getenv("DBUS_SYSTEM_BUS_ADDRESS");
        return e && *e ? e : "unix:path=/run/dbus/system_bus_socket";
}

int bus_connect(sd_bus **ret_bus) {
        sd_bus *bus = NULL;
        int r;

        r = sd_bus_error_add_map(edfd_error_map);
        if (r < 0) {
                fprintf(stderr, "edfctl: cannot register the error map: %s\n", strerror(-r));
                return EDFCTL_EXIT_FAILED;
        }
        r = sd_bus_open_system(&bus);
        if (r < 0) {
                fprintf(stderr, "edfctl: cannot connect to the system bus at %s: %s; " HINT "\n", bus_address(),
                        strerror(-r));
                return EDFCTL_EXIT_UNREACHABLE;
        }
        *ret_bus = bus;
        return EDFCTL_EXIT_OK;
}

/* Errors of the connection itself, as sd_bus_call() returns them without an error name. */
static bool is_connection_errno(int e) {
        return e == ECONNREFUSED || e == ECONNRESET || e == ENOTCONN || e == ENOENT || e == EPIPE ||
               e == ESHUTDOWN || e == ETIMEDOUT || e == EHOSTUNREACH || e == ENXIO || e == EACCES;
}

static bool has_prefix(const char *s, const char *prefix) {
        return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

int bus_call_failed(const sd_bus_error *error, int r, const char *what) {
        const char *name = error ? error->name : NULL;
        const char *msg = error && error->message && *error->message ? error->message : NULL;

        if (has_prefix(name, EDFD_ERROR_PREFIX)) {
                int e = sd_bus_error_get_errno(error);
                for (size_t i = 0; i < ELEMENTSOF(edfd_errors); i++)
                        if (edfd_errors[i].errnum == e) {
                                /* The daemon's message may begin with the same words already. */
                                size_t n = strlen(edfd_errors[i].what);
                                if (msg && strncmp(msg, edfd_errors[i].what, n) == 0 && msg[n] == ':')
                                        fprintf(stderr, "edfctl: %s\n", msg);
                                else if (msg)
                                        fprintf(stderr, "edfctl: %s: %s\n", edfd_errors[i].what, msg);
                                else
                                        fprintf(stderr, "edfctl: %s (%s)\n", edfd_errors[i].what, name);
                                return edfd_errors[i].exit_status;
                        }
                /* A newer daemon's error. */
                fprintf(stderr, "edfctl: %s: %s\n", name + strlen(EDFD_ERROR_PREFIX), msg ?: "refused");
                return EDFCTL_EXIT_FAILED;
        }

        if (name) {
                if (sd_bus_error_has_name(error, SD_BUS_ERROR_SERVICE_UNKNOWN) ||
                    sd_bus_error_has_name(error, SD_BUS_ERROR_NAME_HAS_NO_OWNER) ||
                    has_prefix(name, "org.freedesktop.DBus.Error.Spawn.")) {
                        fprintf(stderr, "edfctl: edfd is not on the bus (%s); " HINT "\n", msg ?: name);
                        return EDFCTL_EXIT_UNREACHABLE;
                }
                if (sd_bus_error_has_name(error, SD_BUS_ERROR_NO_REPLY) ||
                    sd_bus_error_has_name(error, SD_BUS_ERROR_TIMEOUT)) {
                        fprintf(stderr, "edfctl: edfd did not answer %s (%s); " HINT "\n", what, msg ?: name);
                        return EDFCTL_EXIT_UNREACHABLE;
                }
                if (sd_bus_error_has_name(error, SD_BUS_ERROR_DISCONNECTED)) {
                        fprintf(stderr, "edfctl: lost the connection to the system bus during %s; " HINT "\n",
                                what);
                        return EDFCTL_EXIT_UNREACHABLE;
                }
                if (sd_bus_error_has_name(error, SD_BUS_ERROR_ACCESS_DENIED)) {
                        fprintf(stderr, "edfctl: permission denied: %s\n", msg ?: "the bus policy refused the call");
                        return EDFCTL_EXIT_FAILED;
                }
                if (sd_bus_error_has_name(error, SD_BUS_ERROR_UNKNOWN_METHOD) ||
                    sd_bus_error_has_name(error, SD_BUS_ERROR_UNKNOWN_OBJECT) ||
                    sd_bus_error_has_name(error, SD_BUS_ERROR_UNKNOWN_INTERFACE)) {
                        fprintf(stderr, "edfctl: edfd does not offer %s (is it older than edfctl?): %s\n", what,
                                msg ?: name);
                        return EDFCTL_EXIT_FAILED;
                }
                fprintf(stderr, "edfctl: %s failed: %s\n", what, msg ?: name);
                return EDFCTL_EXIT_FAILED;
        }

        /* A local failure: the connection broke before or during the call. */
        if (is_connection_errno(-r)) {
                fprintf(stderr, "edfctl: cannot reach edfd on the system bus at %s: %s; " HINT "\n", bus_address(),
                        strerror(-r));
                return EDFCTL_EXIT_UNREACHABLE;
        }
        fprintf(stderr, "edfctl: %s failed: %s\n", what, strerror(-r));
        return EDFCTL_EXIT_FAILED;
}

int bus_parse_failed(int r, const char *what) {
        fprintf(stderr, "edfctl: cannot parse edfd's reply to %s: %s\n", what, strerror(-r));
        return EDFCTL_EXIT_FAILED;
}

int bus_call_edfd(sd_bus *bus, const char *method, sd_bus_message **ret_reply, const char *types, ...) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        va_list ap;
        int r;

        va_start(ap, types);
        r = sd_bus_call_methodv(bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, method, &error,
                                ret_reply ? &reply : NULL, types, ap);
        va_end(ap);
        if (r < 0)
                return bus_call_failed(&error, r, method);
        if (ret_reply)
                *ret_reply = reply;
        return EDFCTL_EXIT_OK;
}

/* The reply of an asynchronous call, for bus_call_edfd_awake(). */
typedef struct AwakeCall {
        bool done;
        sd_bus_message *reply;
        sd_bus_error error;
} AwakeCall;

static int on_awake_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        AwakeCall *c = userdata;

        c->done = true;
        if (sd_bus_message_is_method_error(m, NULL))
                (void) sd_bus_error_copy(&c->error, sd_bus_message_get_error(m));
        else
                c->reply = sd_bus_message_ref(m);
        return 1;
}

int bus_call_edfd_awake(sd_bus *bus, const char *method, sd_bus_message **ret_reply, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
        AwakeCall c = { .error = SD_BUS_ERROR_NULL };
        uint64_t timeout_usec = 0, start;
        struct timespec ts;
        va_list ap;
        int r;

        r = sd_bus_message_new_method_call(bus, &call, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, method);
        if (r >= 0) {
                va_start(ap, types);
                r = sd_bus_message_appendv(call, types, ap);
                va_end(ap);
        }
        if (r >= 0)
                r = sd_bus_call_async(bus, &slot, call, on_awake_reply, &c, 0);
        if (r < 0)
                return bus_call_failed(&c.error, r, method);
        (void) sd_bus_get_method_call_timeout(bus, &timeout_usec);
        clock_gettime(CLOCK_MONOTONIC, &ts);
        start = (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
        /* Never sleep: process what has arrived, else look again at once. */
        while (!c.done) {
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        break;
                if (r > 0)
                        continue;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                if ((uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000 - start > timeout_usec) {
                        r = -ETIMEDOUT;
                        break;
                }
                sched_yield();
        }
        if (!c.done || sd_bus_error_is_set(&c.error)) {
                r = bus_call_failed(&c.error, r < 0 ? r : -sd_bus_error_get_errno(&c.error), method);
                sd_bus_error_free(&c.error);
                return r;
        }
        if (ret_reply)
                *ret_reply = c.reply;
        else
                sd_bus_message_unref(c.reply);
        return EDFCTL_EXIT_OK;
}
