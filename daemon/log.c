/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

int log_max_level = LOG_INFO;

void log_full(int prio, const char *fmt, ...) {
        char buf[2048];
        va_list ap;

        if (prio > log_max_level)
                return;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        /* One prefix per line, so that journald keeps the priority of multi-line messages. */
        for (char *line = buf, *nl;; line = nl + 1) {
                nl = strchr(line, '\n');
                if (nl)
                        *nl = '\0';
                fprintf(stderr, "<%d>%s\n", prio, line);
                if (!nl)
                        break;
        }
}

int log_level_from_string(const char *s) {
        static const char *const names[] = { "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug" };

        for (int i = 0; i < (int) ELEMENTSOF(names); i++)
                if (strcmp(s, names[i]) == 0)
                        return i;
        if (s[0] >= '0' && s[0] <= '7' && s[1] == '\0')
                return s[0] - '0';
        return -EINVAL;
}
