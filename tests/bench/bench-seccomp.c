/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What edfctl run's seccomp filter costs the programs under it (issue 38):
 *
 *   - a system call the filter does not trap: getpid(2) (the raw system call, never cached), with
 *     no filter and under edfctl run's filter (basic/seccomp-trap.h, the same two calls trapped);
 *   - a trapped call answered with CONTINUE by a supervisor thread, the path every sched_setattr
 *     that edfd has nothing to do with takes: sched_setattr(SCHED_OTHER) on a SCHED_OTHER thread,
 *     with the filter and without.
 *
 * Each run is two fresh child processes, one with the filter and one without (the filter cannot be
 * taken off), in alternating order; the figures are the medians of the runs with their spread.
 * Needs no edfd and no root.
 *
 *   bench-seccomp [--runs N] [--calls N] [--trapped N] */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/sched-attr.h"
#include "basic/seccomp-trap.h"
#include "bench-lib.h"

static int listener = -1;

static void *supervisor(void *arg) {
        (void) arg;
        for (;;) {
                SeccompNotice n;
                int r = seccomp_trap_receive(listener, &n);
                if (r == 0)
                        (void) seccomp_trap_continue(listener, n.id);
                else if (r != -ENOENT && r != -EINTR)
                        return NULL;
        }
}

/* ns per call of what (0: getpid, 1: sched_setattr(SCHED_OTHER)), n calls, in this process. */
static double measure(int what, unsigned long n) {
        static const SchedAttr other = { .size = sizeof(SchedAttr), .sched_policy = SCHED_OTHER };
        uint64_t t0 = bench_now_ns();

        for (unsigned long i = 0; i < n; i++)
                if (what == 0)
                        (void) syscall(SYS_getpid);
                else
                        (void) syscall(SYS_sched_setattr, 0, &other, 0);
        return (double) (bench_now_ns() - t0) / (double) n;
}

/* One child: the filter or not, both measurements; the two figures back over a pipe. */
static int child_run(bool filtered, unsigned long calls, unsigned long trapped, double ret[2]) {
        int p[2];
        pid_t pid;
        int status;

        if (pipe(p) < 0)
                return -errno;
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                static const int nrs[] = { SYS_sched_setattr, SYS_sched_setscheduler };
                double v[2];
                pthread_t t;
                close(p[0]);
                if (filtered) {
                        listener = seccomp_trap_install(nrs, ELEMENTSOF(nrs));
                        if (listener < 0)
                                _exit(2);
                        /* The supervisor runs under the filter too; its ioctls are not trapped. */
                        if (pthread_create(&t, NULL, supervisor, NULL) != 0)
                                _exit(3);
                }
                (void) measure(0, calls / 10); /* warm up */
                v[0] = measure(0, calls);
                v[1] = measure(1, trapped);
                _exit(write(p[1], v, sizeof v) == (ssize_t) sizeof v ? 0 : 4);
        }
        close(p[1]);
        ssize_t k = read(p[0], ret, 2 * sizeof(double));
        close(p[0]);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (k != 2 * (ssize_t) sizeof(double) || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return -EIO;
        return 0;
}

int main(int argc, char **argv) {
        unsigned runs = bench_runs(argc, argv, 5);
        unsigned long calls = 2000000, trapped = 20000;
        double bare[2][64], filt[2][64], ratio[2][64];
        char a[64], b[64], c[64];

        for (int i = 1; i + 1 < argc; i++) {
                if (strcmp(argv[i], "--calls") == 0)
                        calls = strtoul(argv[i + 1], NULL, 10);
                else if (strcmp(argv[i], "--trapped") == 0)
                        trapped = strtoul(argv[i + 1], NULL, 10);
        }
        if (runs > 64)
                runs = 64;
        if (calls == 0 || trapped == 0) {
                fprintf(stderr, "bench-seccomp: --calls and --trapped need a positive number\n");
                return 2;
        }

        for (unsigned r = 0; r < runs; r++) {
                double v0[2], v1[2];
                bool filtered_first = r % 2;
                int e = child_run(filtered_first, calls, trapped, filtered_first ? v1 : v0);
                e = e ?: child_run(!filtered_first, calls, trapped, filtered_first ? v0 : v1);
                if (e < 0) {
                        fprintf(stderr, "bench-seccomp: a run failed: %s\n", strerror(-e));
                        return 1;
                }
                for (int w = 0; w < 2; w++) {
                        bare[w][r] = v0[w];
                        filt[w][r] = v1[w];
                        ratio[w][r] = v1[w] / v0[w];
                }
                printf("run %u: getpid %.1f ns bare, %.1f ns filtered; sched_setattr(OTHER) %.0f ns bare, %.0f ns "
                       "trapped and continued\n",
                       r + 1, v0[0], v1[0], v0[1], v1[1]);
        }

        bench_fmt(a, sizeof a, bench_spread(filt[0], runs), 1, "ns", 1);
        bench_fmt(b, sizeof b, bench_spread(bare[0], runs), 1, "ns", 1);
        bench_fmt(c, sizeof c, bench_spread(ratio[0], runs), 1, "x", 2);
        printf("getpid under edfctl run's filter: %s, without: %s (%lu calls per run, %u runs)\n", a, b, calls, runs);
        bench_row("run: getpid under the filter", a, b, c, "-", "-");
        bench_fmt(a, sizeof a, bench_spread(filt[1], runs), 1000, "us", 1);
        bench_fmt(b, sizeof b, bench_spread(bare[1], runs), 1000, "us", 1);
        bench_fmt(c, sizeof c, bench_spread(ratio[1], runs), 1, "x", 1);
        printf("sched_setattr(SCHED_OTHER) trapped and continued: %s, untrapped: %s (%lu calls per run)\n", a, b, trapped);
        bench_row("run: trapped call, CONTINUE", a, b, c, "-", "-");
        return 0;
}
