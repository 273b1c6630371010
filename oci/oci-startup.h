/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* edfd-oci-hook's start-up rule (oci-startup.c): a detached watcher admits the container's process
 * into its group when the program first sleeps after the runtime's exec, or when the bound has
 * passed. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct StartupWatch {
        pid_t pid;
        uint64_t start_time;          /* /proc/PID/stat field 22: tells a reused pid */
        uint64_t exe_dev, exe_ino;    /* /proc/PID/exe before the exec (the runtime's init) */
        const char *id;               /* for messages */
        const char *group;            /* GROUP/ID, made by the hook */
        uint64_t runtime, deadline, period, bound_ns;
} StartupWatch;

/* What the process is now (the runtime's init). Returns 0 or negative errno (-ENOENT: gone). */
int startup_watch_prepare(pid_t pid, StartupWatch *w);

/* Start the watcher, detached (its own session, standard streams on /dev/null; reparented when
 * the hook exits, which the caller does next). Returns 0 in the hook, or negative errno. */
int startup_watch_start(const StartupWatch *w);
