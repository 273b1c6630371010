/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* edfctl admit --startup BOUND -- COMMAND: start-up is not charged to the first jobs.
 *
 * Without --startup, edfctl admits itself and execs COMMAND in its place, so the exec, the dynamic
 * loader, the first page faults and whatever the program initializes run on the reservation's
 * first budgets, and its first jobs miss (measured: 1.7 ms in the first period of a 1 ms budget).
 * With it, edfctl forks; the child execs COMMAND as SCHED_OTHER; edfctl admits the child (by pid,
 * its main thread) when it first sleeps (its state is S, or it has switched out voluntarily since
 * its exec), which for a periodic program is the end of its initialization and the wait for its
 * first release, or when BOUND has passed since the exec, whichever comes first. edfctl stays the
 * command's parent: it forwards SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 to it (SIGINT and SIGQUIT
 * from a terminal reach both already), waits, and ends as the command ended (its exit status, or
 * the same signal). A refused admission kills the command (it ran its start-up only) and exits 1. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/proc.h"
#include "edfctl.h"

static uint64_t mono_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

/* Wait until pid first sleeps or bound_us passes; false when it ended meanwhile. */
static bool wait_first_sleep(pid_t pid, uint64_t bound_us) {
        uint64_t until = mono_us() + bound_us;
        long long base = proc_voluntary_switches(pid);
        ProcStat st;

        for (;;) {
                int status;
                if (waitpid(pid, &status, WNOHANG | WNOWAIT) == pid || proc_read_stat(pid, pid, PROC_STAT_STATE, &st) < 0)
                        return false;
                if (st.state == 'S' || (base >= 0 && proc_voluntary_switches(pid) > base))
                        return true;
                if (st.state == 'Z' || st.state == 'X')
                        return false;
                if (mono_us() >= until)
                        return true;
                (void) nanosleep(&(struct timespec) { .tv_nsec = 100 * 1000 }, NULL);
        }
}

int admit_command_after_startup(char **command, uint64_t bound_ns, const char *group, const DlParams *p, uint64_t flags) {
        int status = 0, ex;
        pid_t pid;

        ex = command_spawn(command, NULL, NULL, NULL, &pid);
        if (ex != EDFCTL_EXIT_OK)
                return ex;

        if (wait_first_sleep(pid, bound_ns / 1000)) {
                ex = admit_one((uint32_t) pid, (uint32_t) pid, group, p, flags, NULL);
                if (ex != EDFCTL_EXIT_OK) {
                        /* Refused: the command ran its start-up only. */
                        (void) kill(pid, SIGKILL);
                        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                                ;
                        command_ended();
                        return ex;
                }
        }
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR) {
                        fprintf(stderr, "edfctl: cannot wait for %s: %s\n", tty(command[0]), strerror(errno));
                        return EDFCTL_EXIT_FAILED;
                }
        command_ended();
        return command_end_as(status);
}
