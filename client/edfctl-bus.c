/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* edfctl's words for libedfd's errors.
 *
 * libedfd returns the errno an edfd error means and keeps its D-Bus name and edfd's message; the
 * daemon's text already names the numbers ("group audio has 12.5% free, the request needs 20%"),
 * so edfctl only puts the kind of refusal in front of it. Errors from the bus itself (no owner for
 * the name, no reply, a broken connection) mean that edfd is not reachable: exit status 3 with a
 * hint. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "edfctl.h"
#include "shared/protocol.h"

#define HINT "is edfd running? (systemctl status edfd)"

/* What each edfd error's errno means, and the exit status it gives. */
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

int edfctl_connect(edfd **ret) {
        int r = edfd_open(ret);

        if (r < 0) {
                const char *a = getenv("DBUS_SYSTEM_BUS_ADDRESS");
                fprintf(stderr, "edfctl: cannot connect to the system bus at %s: %s; " HINT "\n",
                        a && *a ? a : "unix:path=/run/dbus/system_bus_socket", strerror(-r));
                return EDFCTL_EXIT_UNREACHABLE;
        }
        return EDFCTL_EXIT_OK;
}

/* Local failures that mean the connection broke before or during the call. */
static bool is_connection_errno(int e) {
        return e == ECONNREFUSED || e == ECONNRESET || e == ENOTCONN || e == ENOENT || e == EPIPE ||
               e == ESHUTDOWN || e == ETIMEDOUT || e == EHOSTUNREACH || e == ENXIO || e == EACCES;
}

static bool has_prefix(const char *s, const char *prefix) {
        return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool is_name(const char *name, const char *a, const char *b, const char *c) {
        return strcmp(name, a) == 0 || (b && strcmp(name, b) == 0) || (c && strcmp(name, c) == 0);
}

int edfctl_failed(edfd *e, int r, const char *what) {
        const char *name = edfd_error_name(e);
        /* The daemon's message quotes names other users gave (groups, commands): escaped. */
        const char *msg = *edfd_error_message(e) ? tty(edfd_error_message(e)) : NULL;

        if (has_prefix(name, EDFD_ERROR_PREFIX)) {
                for (size_t i = 0; i < ELEMENTSOF(edfd_errors); i++)
                        if (edfd_errors[i].errnum == -r) {
                                /* The daemon's message may begin with the same words already. */
                                size_t n = strlen(edfd_errors[i].what);
                                if (msg && strncmp(msg, edfd_errors[i].what, n) == 0 && msg[n] == ':')
                                        fprintf(stderr, "edfctl: %s\n", msg);
                                else if (msg && strcmp(msg, name) != 0)
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
                if (is_name(name, "org.freedesktop.DBus.Error.ServiceUnknown",
                            "org.freedesktop.DBus.Error.NameHasNoOwner", NULL) ||
                    has_prefix(name, "org.freedesktop.DBus.Error.Spawn.")) {
                        fprintf(stderr, "edfctl: edfd is not on the bus (%s); " HINT "\n", msg ?: name);
                        return EDFCTL_EXIT_UNREACHABLE;
                }
                if (is_name(name, "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout", NULL)) {
                        fprintf(stderr, "edfctl: edfd did not answer %s (%s); " HINT "\n", what, msg ?: name);
                        return EDFCTL_EXIT_UNREACHABLE;
                }
                if (is_name(name, "org.freedesktop.DBus.Error.Disconnected", NULL, NULL)) {
                        fprintf(stderr, "edfctl: lost the connection to the system bus during %s; " HINT "\n",
                                what);
                        return EDFCTL_EXIT_UNREACHABLE;
                }
                if (is_name(name, "org.freedesktop.DBus.Error.AccessDenied", NULL, NULL)) {
                        fprintf(stderr, "edfctl: permission denied: %s\n", msg ?: "the bus policy refused the call");
                        return EDFCTL_EXIT_FAILED;
                }
                if (is_name(name, "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownObject",
                            "org.freedesktop.DBus.Error.UnknownInterface")) {
                        fprintf(stderr, "edfctl: edfd does not offer %s (is it older than edfctl?): %s\n", what,
                                msg ?: name);
                        return EDFCTL_EXIT_FAILED;
                }
                fprintf(stderr, "edfctl: %s failed: %s\n", what, msg ?: name);
                return EDFCTL_EXIT_FAILED;
        }

        /* A local failure, in libedfd's words. */
        fprintf(stderr, "edfctl: %s%s\n", msg ?: strerror(-r), is_connection_errno(-r) ? "; " HINT : "");
        return is_connection_errno(-r) ? EDFCTL_EXIT_UNREACHABLE : EDFCTL_EXIT_FAILED;
}
