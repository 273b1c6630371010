/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* What waiting admissions at start cost edfd (issue 41): nobody asks AdmitAtStart for N of its own
 * processes that never exec (they sleep), then edfd's CPU time is read over a window in which
 * nobody calls anything and root calls Echo once a millisecond (what wakes a daemon on a busy
 * machine: bus calls, the proc connector's events), with the Echo latency beside it.
 *
 *   bench-startup [--watches 150] [--seconds 5] [--runs 3]
 *
 * Per run: edfd's CPU (its main thread's run time from /proc/PID/schedstat) over the window as a
 * share of one CPU, first with no watch (the baseline), then with N; Echo's p50 and p99 in each.
 * Printed as the median of the runs and their spread. Before the fix every watch was looked at
 * (two /proc reads) at every wake-up of the loop at least 1 ms after the last look, for its first
 * minute; after it a watch before its exec costs one timer, at its exec-timeout. Compare the two
 * with bench-edfd's --edfd (an older build).
 *
 * Runs under bench-edfd (root; bench.yaml gives nobody no limits, and 150 watches are within one
 * user's share of 256), whose directory it opens to nobody (mode 0711) so that nobody reaches the
 * bus socket. Prints figures and a table row; asserts nothing. */

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench-lib.h"
#include "shared/protocol.h"

#define NOBODY 65534
#define MAX_WATCHES 256

static pid_t sleeper_nobody(void) {
        pid_t pid;

        fflush(stdout);
        fflush(stderr);
        pid = fork();

        if (pid < 0)
                return -errno;
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
                    setresuid(NOBODY, NOBODY, NOBODY) < 0)
                        _exit(112);
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                for (;;)
                        pause();
        }
        for (unsigned i = 0; i < 2000; i++) {
                char path[32];
                struct stat st;

                snprintf(path, sizeof path, "/proc/%d", (int) pid);
                if (stat(path, &st) == 0 && st.st_uid == (uid_t) NOBODY)
                        return pid;
                usleep(1000);
        }
        kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
        return -ETIMEDOUT;
}

/* As nobody, in a child of its own: AdmitAtStart of each pid (1024 ns per 100 ms: next to no room needed
 * in a machine-wide pool that other users fill now and then; bound 1 s). Returns
 * how many were accepted (the child's exit status), or a negative errno. */
static int watch_as_nobody(const pid_t *pids, unsigned n) {
        pid_t pid;
        int status;

        fflush(stdout);
        fflush(stderr);
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                sd_bus *bus = NULL;
                unsigned ok = 0;
                int r;

                if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
                    setresuid(NOBODY, NOBODY, NOBODY) < 0)
                        _exit(255);
                r = sd_bus_open_system(&bus);
                if (r < 0) {
                        fprintf(stderr, "bench-startup: nobody cannot connect to the bus: %s\n", strerror(-r));
                        _exit(255);
                }
                for (unsigned i = 0; i < n; i++) {
                        sd_bus_error e = SD_BUS_ERROR_NULL;
                        int k = sd_bus_call_method(bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE,
                                                   "AdmitAtStart", &e, NULL, "usttttt", (uint32_t) pids[i], "",
                                                   UINT64_C(1024), UINT64_C(0), 100 * NSEC_PER_MSEC, UINT64_C(0),
                                                   NSEC_PER_SEC);
                        if (k >= 0)
                                ok++;
                        else if (i == ok) /* the first refusal only */
                                fprintf(stderr, "bench-startup: nobody: AdmitAtStart(%d): %s\n", (int) pids[i],
                                        e.message ? e.message : strerror(-k));
                        sd_bus_error_free(&e);
                }
                if (ok < n)
                        fprintf(stderr, "bench-startup: %u of %u watches refused\n", n - ok, n);
                sd_bus_flush_close_unref(bus);
                _exit(ok > 254 ? 254 : (int) ok);
        }
        if (waitpid(pid, &status, 0) != pid)
                return -errno;
        return WIFEXITED(status) && WEXITSTATUS(status) != 255 ? WEXITSTATUS(status) : -EPERM;
}

typedef struct Window {
        double cpu;         /* edfd's CPU over the window, share of one CPU */
        uint64_t echo_p50;  /* ns */
        uint64_t echo_p99;
} Window;

#define ECHO_PACE_NSEC NSEC_PER_MSEC
#define ECHO_MAX 60000

/* One window: root calls Echo once every millisecond (a daemon on a busy machine is woken all the
 * time: bus calls, the proc connector's events), and edfd's CPU time is read at both ends. */
static int measure(sd_bus *bus, pid_t edfd, double seconds, Window *ret) {
        static uint64_t echo[ECHO_MAX];
        uint64_t t0, t1, end, next;
        size_t n = 0;
        int64_t c0, c1;

        t0 = bench_now_ns();
        c0 = bench_cpu_ns(edfd);
        end = t0 + (uint64_t) (seconds * 1e9);
        for (next = t0; next < end && n < ECHO_MAX; next += ECHO_PACE_NSEC) {
                bench_sleep_until(next);
                echo[n++] = bench_echo(bus);
        }
        c1 = bench_cpu_ns(edfd);
        t1 = bench_now_ns();
        if (c0 < 0 || c1 < 0)
                return -EIO;
        bench_sort_u64(echo, n);
        *ret = (Window) {
                .cpu = (double) (c1 - c0) / (double) (t1 - t0),
                .echo_p50 = bench_quantile(echo, n, 0.5),
                .echo_p99 = bench_quantile(echo, n, 0.99),
        };
        return 0;
}

int main(int argc, char **argv) {
        unsigned n = 150, runs = bench_runs(argc, argv, 3);
        double seconds = 5, base_cpu[16], cpu[16], base_echo[16], echo[16];
        pid_t edfd = bench_edfd_pid(), pids[MAX_WATCHES];
        sd_bus *bus = bench_bus_open();
        char a[64], b[64], c[64], d[64];
        BenchSpread s_cpu;
        int accepted = 0;
        unsigned retries = 0;

        for (int i = 1; i + 1 < argc; i++)
                if (strcmp(argv[i], "--watches") == 0)
                        n = (unsigned) strtoul(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--seconds") == 0)
                        seconds = strtod(argv[++i], NULL);
        if (n == 0 || n > MAX_WATCHES || seconds <= 0 || seconds > 600) {
                fprintf(stderr, "bench-startup: --watches 1..%d, --seconds above 0 and at most 600\n", MAX_WATCHES);
                return 2;
        }
        if (runs > ELEMENTSOF(cpu))
                runs = ELEMENTSOF(cpu);
        /* bench-edfd's directory (the bus socket's) is root's alone: nobody must reach the socket. */
        if (!getenv("EDFD_BENCH_DIR") || chmod(getenv("EDFD_BENCH_DIR"), 0711) < 0) {
                fprintf(stderr, "bench-startup: cannot open $EDFD_BENCH_DIR to nobody: %m\n");
                return 1;
        }

        for (unsigned run = 0; run < runs; run++) {
                Window w0, w1;
                int r;

                if (measure(bus, edfd, seconds, &w0) < 0) {
                        fprintf(stderr, "bench-startup: cannot read edfd's CPU time\n");
                        return 1;
                }
                for (unsigned i = 0; i < n; i++) {
                        pids[i] = sleeper_nobody();
                        if (pids[i] < 0) {
                                fprintf(stderr, "bench-startup: cannot make a process of nobody: %s\n",
                                        strerror((int) -pids[i]));
                                return 1;
                        }
                }
                accepted = watch_as_nobody(pids, n);
                if (accepted < 0) {
                        fprintf(stderr, "bench-startup: the caller as nobody failed: %s\n", strerror(-accepted));
                        return 1;
                }
                r = accepted == (int) n ? measure(bus, edfd, seconds, &w1) : 0;
                for (unsigned i = 0; i < n; i++) {
                        kill(pids[i], SIGKILL);
                        (void) waitpid(pids[i], NULL, 0);
                }
                if (r < 0)
                        return 1;
                if (accepted != (int) n) {
                        /* Refused for want of room (the kernel's pool is machine-wide: someone else's
                         * deadline tasks filled it): that run measures nothing; again, a few times. */
                        if (++retries > 30) {
                                fprintf(stderr, "bench-startup: the watches were refused 31 times: no figure\n");
                                return 1;
                        }
                        fprintf(stderr, "bench-startup: run %u again in 2 s\n", run + 1);
                        run--;
                        sleep(2);
                        continue;
                }
                base_cpu[run] = w0.cpu * 100;
                cpu[run] = w1.cpu * 100;
                base_echo[run] = (double) w0.echo_p50;
                echo[run] = (double) w1.echo_p50;
                printf("run %u: %d of %u watches accepted; edfd CPU %.1f%% without, %.1f%% with them; Echo p50 "
                       "%.0f us -> %.0f us, p99 %.0f us -> %.0f us\n",
                       run + 1, accepted, n, base_cpu[run], cpu[run], base_echo[run] / 1e3, echo[run] / 1e3,
                       (double) w0.echo_p99 / 1e3, (double) w1.echo_p99 / 1e3);
                /* The watches end with their processes: let edfd see the exits before the next run. */
                usleep(200 * 1000);
        }
        s_cpu = bench_spread(cpu, runs);
        printf("edfd CPU over %.0f s of root's Echo every 1 ms with %d idle watches of nobody: %s (without: %s); "
               "root's Echo p50 %s (without: %s)\n",
               seconds, accepted, bench_fmt(a, sizeof a, s_cpu, 1, "%", 1),
               bench_fmt(b, sizeof b, bench_spread(base_cpu, runs), 1, "%", 1),
               bench_fmt(c, sizeof c, bench_spread(echo, runs), 1e3, "us", 0),
               bench_fmt(d, sizeof d, bench_spread(base_echo, runs), 1e3, "us", 0));
        /* The watches' own cost: what they add to serving the Echo calls, in points of one CPU. */
        for (unsigned run = 0; run < runs; run++)
                cpu[run] -= base_cpu[run];
        s_cpu = bench_spread(cpu, runs);
        snprintf(d, sizeof d, "%u idle watches", n);
        bench_row("edfd CPU added by idle AdmitAtStart watches of nobody", bench_fmt(c, sizeof c, s_cpu, 1, "%", 1), d,
                  "", "< 1% of a CPU", bench_verdict(s_cpu.median < 1.0));
        sd_bus_flush_close_unref(bus);
        return 0;
}
