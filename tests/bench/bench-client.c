/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* edfctl start to exit against its peers, in one run: `edfctl admit -T 1ms -P 100ms -t TID` and
 * `edfctl release ID`, against bench-oneshot (a minimal sd-bus client making the same call) and
 * `busctl call` (the generic tool), and /bin/true (what starting any process costs here).
 *
 *   bench-client [--runs 5] [--iterations 50] [--edfctl PATH] [--oneshot PATH]
 *
 * Each iteration runs, in turn: edfctl admit, edfctl release, one-shot admit, one-shot release,
 * busctl admit, busctl release, true, timing each from posix_spawn() to waitpid() (stdout to a
 * pipe, read afterwards). Per run the median of each; printed as the median of the runs and their
 * spread. Targets (issue 7): edfctl at most 1.2x the one-shot client, and well below busctl.
 * Runs under bench-edfd; asserts nothing. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench-lib.h"

#ifndef BENCH_EDFCTL
#define BENCH_EDFCTL "edfctl"
#endif
#ifndef BENCH_ONESHOT
#define BENCH_ONESHOT "bench-oneshot"
#endif

extern char **environ;

enum { EDFCTL_ADMIT, EDFCTL_RELEASE, ONESHOT_ADMIT, ONESHOT_RELEASE, BUSCTL_ADMIT, BUSCTL_RELEASE, TRUE, _N };

/* Run argv, its stdout into out (first line, NUL-terminated); returns the ns from spawn to exit. */
static uint64_t spawn_timed(char *const argv[], char *out, size_t size) {
        posix_spawn_file_actions_t fa;
        uint64_t t0, t1;
        int p[2], status;
        pid_t pid;
        ssize_t n;

        if (pipe2(p, O_CLOEXEC) < 0) {
                perror("bench-client: pipe");
                exit(1);
        }
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
        t0 = bench_now_ns();
        if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
                fprintf(stderr, "bench-client: cannot run %s\n", argv[0]);
                exit(1);
        }
        close(p[1]);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        t1 = bench_now_ns();
        n = read(p[0], out, size - 1);
        out[n > 0 ? n : 0] = '\0';
        out[strcspn(out, "\n")] = '\0';
        close(p[0]);
        posix_spawn_file_actions_destroy(&fa);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "bench-client: %s %s failed (status 0x%x)\n", argv[0], argv[1] ? argv[1] : "", status);
                exit(1);
        }
        return t1 - t0;
}

static double median_ns(uint64_t *v, size_t n) {
        bench_sort_u64(v, n);
        return (double) bench_quantile(v, n, 0.5);
}

int main(int argc, char *argv[]) {
        unsigned runs = bench_runs(argc, argv, 5), iterations = 50;
        const char *edfctl = BENCH_EDFCTL, *oneshot = BENCH_ONESHOT;
        char pid_s[16], id[64], out[256];
        double *med[_N], *ratio[4];
        uint64_t *t[_N];
        BenchHelper h;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
                        iterations = (unsigned) strtoul(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--edfctl") == 0 && i + 1 < argc)
                        edfctl = argv[++i];
                else if (strcmp(argv[i], "--oneshot") == 0 && i + 1 < argc)
                        oneshot = argv[++i];
                else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
                        i++;
                else {
                        fprintf(stderr, "usage: bench-client [--runs N] [--iterations N] [--edfctl PATH] [--oneshot PATH]\n");
                        return 2;
                }
        }
        if (iterations < 5) {
                fprintf(stderr, "bench-client: need --iterations >= 5\n");
                return 2;
        }
        (void) bench_edfd_pid(); /* under bench-edfd, or say so */
        if (bench_helper_spawn(1, &h) < 0) {
                fprintf(stderr, "bench-client: cannot start a helper process\n");
                return 1;
        }
        snprintf(pid_s, sizeof pid_s, "%d", (int) h.pid);

        for (int k = 0; k < _N; k++) {
                t[k] = calloc(iterations, sizeof(uint64_t));
                med[k] = calloc(runs, sizeof(double));
        }
        for (int k = 0; k < 4; k++)
                ratio[k] = calloc(runs, sizeof(double));

        for (unsigned run = 0; run < runs; run++) {
                for (unsigned i = 0; i < iterations; i++) {
                        char *a1[] = { (char *) edfctl, (char *) "admit", (char *) "-T", (char *) "1ms", (char *) "-P",
                                       (char *) "100ms", (char *) "-t", pid_s, NULL };
                        t[EDFCTL_ADMIT][i] = spawn_timed(a1, id, sizeof id);
                        char *r1[] = { (char *) edfctl, (char *) "release", id, NULL };
                        t[EDFCTL_RELEASE][i] = spawn_timed(r1, out, sizeof out);

                        char *a2[] = { (char *) oneshot, (char *) "admit", pid_s, pid_s, NULL };
                        t[ONESHOT_ADMIT][i] = spawn_timed(a2, id, sizeof id);
                        char *r2[] = { (char *) oneshot, (char *) "release", id, NULL };
                        t[ONESHOT_RELEASE][i] = spawn_timed(r2, out, sizeof out);

                        char *a3[] = { (char *) "/usr/bin/busctl", (char *) "call", (char *) "org.edfd.Admission1",
                                       (char *) "/org/edfd/Admission1", (char *) "org.edfd.Admission1.Manager",
                                       (char *) "Admit", (char *) "uustttt", pid_s, pid_s, (char *) "",
                                       (char *) "1000000", (char *) "100000000", (char *) "100000000", (char *) "0",
                                       NULL };
                        t[BUSCTL_ADMIT][i] = spawn_timed(a3, out, sizeof out);
                        if (sscanf(out, "t %63s", id) != 1) {
                                fprintf(stderr, "bench-client: busctl printed \"%s\"\n", out);
                                return 1;
                        }
                        char *r3[] = { (char *) "/usr/bin/busctl", (char *) "call", (char *) "org.edfd.Admission1",
                                       (char *) "/org/edfd/Admission1", (char *) "org.edfd.Admission1.Manager",
                                       (char *) "Release", (char *) "t", id, NULL };
                        t[BUSCTL_RELEASE][i] = spawn_timed(r3, out, sizeof out);

                        char *tr[] = { (char *) "/bin/true", NULL };
                        t[TRUE][i] = spawn_timed(tr, out, sizeof out);
                }
                for (int k = 0; k < _N; k++)
                        med[k][run] = median_ns(t[k], iterations);
                ratio[0][run] = med[EDFCTL_ADMIT][run] / med[ONESHOT_ADMIT][run];
                ratio[1][run] = med[EDFCTL_RELEASE][run] / med[ONESHOT_RELEASE][run];
                ratio[2][run] = med[EDFCTL_ADMIT][run] / med[BUSCTL_ADMIT][run];
                ratio[3][run] = med[EDFCTL_RELEASE][run] / med[BUSCTL_RELEASE][run];
                printf("run %u (medians of %u): edfctl admit %.2f release %.2f ms; one-shot %.2f %.2f ms; "
                       "busctl %.2f %.2f ms; /bin/true %.2f ms\n",
                       run + 1, iterations, med[0][run] / 1e6, med[1][run] / 1e6, med[2][run] / 1e6, med[3][run] / 1e6,
                       med[4][run] / 1e6, med[5][run] / 1e6, med[6][run] / 1e6);
                fflush(stdout);
        }

        struct {
                const char *figure;
                int value, peer, ratio;
                const char *peer_name, *target;
                double limit;
        } rows[] = {
                { "edfctl admit -t, start to exit", EDFCTL_ADMIT, ONESHOT_ADMIT, 0, "one-shot client", "<= 1.2x", 1.2 },
                { "edfctl release, start to exit", EDFCTL_RELEASE, ONESHOT_RELEASE, 1, "one-shot client", "<= 1.2x", 1.2 },
                { "edfctl admit -t vs busctl call", EDFCTL_ADMIT, BUSCTL_ADMIT, 2, "busctl call", "< 1x", 1.0 },
                { "edfctl release vs busctl call", EDFCTL_RELEASE, BUSCTL_RELEASE, 3, "busctl call", "< 1x", 1.0 },
        };
        char tr[96];
        bench_fmt(tr, sizeof tr, bench_spread(med[TRUE], runs), 1e6, "ms", 2);
        printf("\n%u runs of %u iterations; medians (min-max); starting /bin/true costs %s\n", runs, iterations, tr);
        for (size_t k = 0; k < ELEMENTSOF(rows); k++) {
                char a[96], b[96], c[96], pa[160];
                BenchSpread s = bench_spread(ratio[rows[k].ratio], runs);
                bench_fmt(a, sizeof a, bench_spread(med[rows[k].value], runs), 1e6, "ms", 2);
                bench_fmt(b, sizeof b, bench_spread(med[rows[k].peer], runs), 1e6, "ms", 2);
                bench_fmt(c, sizeof c, s, 1, "x", 2);
                snprintf(pa, sizeof pa, "%s %s", rows[k].peer_name, b);
                printf("  %-32s %-20s %-36s ratio %s\n", rows[k].figure, a, pa, c);
                bench_row(rows[k].figure, a, pa, c, rows[k].target,
                          bench_verdict(rows[k].limit == 1.0 ? s.median < 1.0 : s.median <= rows[k].limit));
        }
        bench_helper_kill(&h);
        for (int k = 0; k < _N; k++) {
                free(t[k]);
                free(med[k]);
        }
        for (int k = 0; k < 4; k++)
                free(ratio[k]);
        return 0;
}
