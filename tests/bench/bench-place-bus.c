/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Admit over the bus in partitioned placement against its floor (issue 21): edfd's own Echo(t)
 * plus one raw move of a thread into a partition's cpuset, both measured in the same run.
 *
 *   bench-place-bus [--runs 5] [--calls 300] PARTITION-TASKS ROOT-TASKS
 *
 * Runs under bench-edfd with a partitioned configuration (tests/bench/partitioned-bus sets it up
 * and gives the machine its cpusets back afterwards). Two helper processes wake every 500 us (the
 * kernel moves a sleeping thread into its new cpuset only when it wakes, and edfd waits until the
 * thread has run on its CPU before it asks the kernel). Each iteration, one call at a time: Echo;
 * Admit of helper A's main thread (100 us every 100 ms, partitioned: edfd decides the CPU, moves
 * the thread into that CPU's partition, waits until it ran there, sched_setattr); Release (back to
 * SCHED_OTHER, moved out again); then helper B's thread written into PARTITION-TASKS and back into
 * ROOT-TASKS by hand, each write timed (on this kernel a move of another task waits for an RCU
 * grace period). Per run p50 of each; printed as the median of the runs and their spread. Target:
 * Admit p50 <= 1.2x (Echo p50 + move p50). Prints figures and table rows; asserts nothing. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench-lib.h"
#include "shared/protocol.h"

#define RUNTIME (100 * NSEC_PER_USEC)
#define PERIOD (100 * NSEC_PER_MSEC)

/* A process that wakes every 500 us until killed. */
static pid_t waker(void) {
        pid_t pid = fork();

        if (pid == 0) {
                for (;;)
                        usleep(500);
        }
        return pid;
}

/* Write pid into a cgroup's tasks file; the time it took, or exit. */
static uint64_t move_to(const char *tasks, pid_t pid) {
        char buf[24];
        int fd, n = snprintf(buf, sizeof buf, "%d\n", (int) pid);
        uint64_t t0, t1;
        ssize_t w;

        fd = open(tasks, O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
                fprintf(stderr, "bench-place-bus: %s: %s\n", tasks, strerror(errno));
                exit(1);
        }
        t0 = bench_now_ns();
        w = write(fd, buf, (size_t) n);
        t1 = bench_now_ns();
        if (w != n) {
                fprintf(stderr, "bench-place-bus: moving %d into %s: %s\n", (int) pid, tasks, strerror(errno));
                exit(1);
        }
        close(fd);
        return t1 - t0;
}

static double ratio(double a, double b) {
        return b > 0 ? a / b : 0;
}

int main(int argc, char *argv[]) {
        unsigned runs = bench_runs(argc, argv, 5);
        uint64_t calls = 300;
        const char *part = NULL, *root = NULL;
        sd_bus *bus;
        pid_t a, b;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
                        calls = strtoull(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
                        i++;
                else if (!part)
                        part = argv[i];
                else if (!root)
                        root = argv[i];
                else
                        part = NULL, i = argc;
        }
        if (!part || !root || calls < 20) {
                fprintf(stderr, "usage: bench-place-bus [--runs N] [--calls N >= 20] PARTITION-TASKS ROOT-TASKS\n");
                return 2;
        }

        bus = bench_bus_open();
        a = waker();
        b = waker();
        if (a < 0 || b < 0) {
                fprintf(stderr, "bench-place-bus: fork: %s\n", strerror(errno));
                return 1;
        }

        uint64_t *echo = calloc(calls, sizeof(uint64_t)), *admit = calloc(calls, sizeof(uint64_t)),
                 *release = calloc(calls, sizeof(uint64_t)), *move = calloc(2 * calls, sizeof(uint64_t));
        double *v[4], *rt = calloc(runs, sizeof(double));
        for (unsigned k = 0; k < ELEMENTSOF(v); k++)
                v[k] = calloc(runs, sizeof(double));
        if (!echo || !admit || !release || !move || !rt)
                return 1;
        /* v: 0 echo p50, 1 admit p50, 2 release p50, 3 move p50 */

        /* Warm up: the first calls pay for the credentials query, the pin and page faults. */
        for (unsigned i = 0; i < 20; i++) {
                uint64_t id;
                bench_echo(bus);
                if (bench_admit(bus, a, a, BENCH_GROUP, RUNTIME, PERIOD, &id) < 0 || bench_release(bus, id) < 0)
                        return 1;
                move_to(part, b);
                move_to(root, b);
        }

        for (unsigned run = 0; run < runs; run++) {
                for (uint64_t i = 0; i < calls; i++) {
                        uint64_t id, t0;
                        echo[i] = bench_echo(bus);
                        t0 = bench_now_ns();
                        if (bench_admit(bus, a, a, BENCH_GROUP, RUNTIME, PERIOD, &id) < 0)
                                return 1;
                        admit[i] = bench_now_ns() - t0;
                        t0 = bench_now_ns();
                        if (bench_release(bus, id) < 0)
                                return 1;
                        release[i] = bench_now_ns() - t0;
                        move[2 * i] = move_to(part, b);
                        move[2 * i + 1] = move_to(root, b);
                }
                bench_sort_u64(echo, calls);
                bench_sort_u64(admit, calls);
                bench_sort_u64(release, calls);
                bench_sort_u64(move, 2 * calls);
                v[0][run] = (double) bench_quantile(echo, calls, 0.50);
                v[1][run] = (double) bench_quantile(admit, calls, 0.50);
                v[2][run] = (double) bench_quantile(release, calls, 0.50);
                v[3][run] = (double) bench_quantile(move, 2 * calls, 0.50);
                rt[run] = ratio(v[1][run], v[0][run] + v[3][run]);
                printf("run %u: echo p50 %.0f us, admit p50 %.0f us, release p50 %.0f us, raw move p50 %.0f us; "
                       "admit / (echo + move) %.2fx\n",
                       run + 1, v[0][run] / 1e3, v[1][run] / 1e3, v[2][run] / 1e3, v[3][run] / 1e3, rt[run]);
                fflush(stdout);
        }

        char e[96], ad[96], re[96], mv[96], c[96], peer[256];
        BenchSpread s = bench_spread(rt, runs);
        bench_fmt(e, sizeof e, bench_spread(v[0], runs), 1e3, "us", 0);
        bench_fmt(ad, sizeof ad, bench_spread(v[1], runs), 1e3, "us", 0);
        bench_fmt(re, sizeof re, bench_spread(v[2], runs), 1e3, "us", 0);
        bench_fmt(mv, sizeof mv, bench_spread(v[3], runs), 1e3, "us", 0);
        bench_fmt(c, sizeof c, s, 1, "x", 2);
        printf("\n%u runs of %" PRIu64 " calls each; medians (min-max):\n"
               "  Echo p50 %s, raw cgroup move p50 %s\n"
               "  Admit p50 (partitioned) %s, Release p50 %s\n"
               "  Admit / (Echo + move) %s (target <= 1.2x: %s)\n",
               runs, calls, e, mv, ad, re, c, s.median <= 1.2 ? "met" : "MISSED");
        snprintf(peer, sizeof peer, "Echo %s + raw move %s", e, mv);
        bench_row("Admit p50 (partitioned)", ad, peer, c, "<= 1.2x", bench_verdict(s.median <= 1.2));

        kill(a, SIGKILL);
        kill(b, SIGKILL);
        waitpid(a, NULL, 0);
        waitpid(b, NULL, 0);
        sd_bus_flush_close_unref(bus);
        return 0;
}
