/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Logging to stderr with <N> priority prefixes, which journald reads as the priority. Only
 * main.c and manager.c log above debug level. */

#include <errno.h>
#include <syslog.h>

#include "basic/macro.h"

extern int log_max_level;

/* Print one line at priority prio (LOG_ERR ... LOG_DEBUG) if it is within log_max_level. */
_printf_(2, 3) void log_full(int prio, const char *fmt, ...);
/* Parse "err", "warning", "notice", "info", "debug" (or 3..7); negative errno if unknown. */
int log_level_from_string(const char *s);

#define log_error(...) log_full(LOG_ERR, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_full(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_full(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_full(LOG_DEBUG, __VA_ARGS__)
#define log_oom() (log_error("Out of memory."), -ENOMEM)
