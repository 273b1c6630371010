/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Option values: pids. Integers are basic/parse.h's, durations and
 * percentages the core's duration_parse() and percent_parse(); this file adds only what the client
 * needs besides. */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "basic/parse.h"
#include "core/duration.h"
#include "edfctl.h"

int parse_pid(const char *s, uint32_t *ret, const char **ret_reason) {
        uint64_t v;
        int r;

        r = parse_u64(s, &v, ret_reason);
        if (r < 0)
                return r;
        if (v == 0)
                return *ret_reason = "is 0, which names no process or thread", -EINVAL;
        if (v > INT32_MAX)
                return *ret_reason = "is above the largest possible id (2147483647)", -ERANGE;
        *ret = (uint32_t) v;
        return 0;
}

int parse_duration_arg(const char *what, const char *s, uint64_t *ret) {
        const char *reason = NULL;

        if (duration_parse(s, ret, &reason) < 0)
                return usage_invalid(what, s, reason);
        return EDFCTL_EXIT_OK;
}

int usage_invalid(const char *what, const char *value, const char *reason) {
        fprintf(stderr, "edfctl: invalid %s \"%s\": %s\n", what, tty(value), reason);
        return EDFCTL_EXIT_USAGE;
}

int usage_error(const Args *a, const char *fmt, ...) {
        va_list ap;

        fputs("edfctl: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        if (a && a->verb)
                fprintf(stderr, " (see edfctl %s%s%s --help)\n", a->verb, a->subverb ? " " : "", a->subverb ?: "");
        else
                fputs(" (see edfctl --help)\n", stderr);
        return EDFCTL_EXIT_USAGE;
}
