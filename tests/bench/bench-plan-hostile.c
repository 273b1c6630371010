/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Root's Echo while nobody sends costly Plans at the shipped rate (issue 41).
 *
 *   bench-plan-hostile [--seconds 20] [--kind booked|split]
 *
 * Runs under bench-edfd with a partitioned configuration and the shipped per-user limits
 * (tests/bench/plan-hostile sets it up, and gives the machine its cpusets back afterwards). A child
 * drops to nobody (65534) and sends one Plan of 1,024 tasks every 200 ms (the shipped rate, 50 per
 * 10 s; the next goes when the last was answered if that took longer); meanwhile root calls Echo
 * every 2 ms and times each. Kinds of plan, both as costly as this author could make them for
 * their case:
 *   booked  1,024 small tasks with constrained deadlines and periods that share no small factor,
 *           90% of a CPU in all: each decided by the processor-demand walk on every CPU, over more
 *           tasks as the plan books them (an edfd that books a plan as root books them all);
 *   split   31 such tasks, then 993 tasks (2 ms within 2.5 ms every 1 s) that no CPU takes whole:
 *           each runs the split's search over both CPUs, whose result the caller's limit of 32
 *           reservations then refuses, so that none is booked and every one searches again.
 * Prints Echo p50, p99 and max, the Plans answered, refused (and how) and their own durations.
 * Asserts nothing. */

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench-lib.h"
#include "shared/protocol.h"

#define US NSEC_PER_USEC
#define MS NSEC_PER_MSEC
#define NTASKS 1024
#define NOBODY 65534

static int append_plan(sd_bus_message *m, const char *kind) {
        int r = sd_bus_message_open_container(m, 'a', "(sstttb)");

        for (unsigned i = 0; r >= 0 && i < NTASKS; i++) {
                uint64_t period = 10000 + (i * 7919) % 9973; /* us */
                uint64_t c = period * 9 / 10 / NTASKS, d = period / 2 + (i * 31) % 97;

                if (strcmp(kind, "split") == 0 && i >= 31)
                        r = sd_bus_message_append(m, "(sstttb)", "t", "rt", 2 * MS, 2500 * US, 1000 * MS, 1);
                else
                        r = sd_bus_message_append(m, "(sstttb)", "t", "rt", c * US, d * US, period * US, 1);
        }
        return r < 0 ? r : sd_bus_message_close_container(m);
}

/* nobody's side: Plans at the shipped rate until killed; counts on stdout at SIGTERM. */
static volatile sig_atomic_t stop;
static void on_term(int sig) {
        (void) sig;
        stop = 1;
}

static void attacker(const char *kind, int fd) {
        uint64_t n_ok = 0, n_costly = 0, n_budget = 0, n_rate = 0, n_other = 0, longest = 0, total = 0;
        char other[256] = "";
        sd_bus *bus;
        int r;

        signal(SIGTERM, on_term);
        if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 || setresuid(NOBODY, NOBODY, NOBODY) < 0) {
                fprintf(stderr, "bench-plan-hostile: cannot become nobody: %s\n", strerror(errno));
                _exit(1);
        }
        bus = bench_bus_open();
        for (uint64_t next = bench_now_ns(); !stop; next += 200 * MS) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
                _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
                uint64_t t0, dt;

                bench_sleep_until(next);
                if (stop)
                        break;
                r = sd_bus_message_new_method_call(bus, &m, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "Plan");
                if (r >= 0)
                        r = append_plan(m, kind);
                if (r < 0)
                        _exit(1);
                t0 = bench_now_ns();
                r = sd_bus_call(bus, m, 600 * UINT64_C(1000000), &e, &reply);
                dt = bench_now_ns() - t0;
                if (stop) /* the call the end interrupted: not counted */
                        break;
                total += dt;
                longest = MAX(longest, dt);
                if (r >= 0)
                        n_ok++;
                else if (e.message && strstr(e.message, "budget used up"))
                        n_budget++;
                else if (e.message && strstr(e.message, "plan too costly"))
                        n_costly++;
                else if (e.name && strcmp(e.name, EDFD_ERROR_LIMIT_EXCEEDED) == 0)
                        n_rate++;
                else {
                        n_other++;
                        snprintf(other, sizeof other, "%s: %s", e.name ?: "?", e.message ?: strerror(-r));
                }
                if (bench_now_ns() > next + 200 * MS)
                        next = bench_now_ns() - 200 * MS; /* late: the next one at once, no burst */
        }
        dprintf(fd, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %s\n", n_ok,
                n_costly, n_budget, n_rate, n_other, longest, total, other);
        _exit(0);
}

int main(int argc, char *argv[]) {
        unsigned seconds = 20;
        const char *kind = "booked", *dir = getenv("EDFD_BENCH_DIR");
        uint64_t *lat, n = 0, cap, end;
        int pipefd[2];
        char line[512] = "";
        sd_bus *bus;
        pid_t child;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
                        seconds = (unsigned) strtoul(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--kind") == 0 && i + 1 < argc)
                        kind = argv[++i];
                else {
                        fprintf(stderr, "usage: bench-plan-hostile [--seconds N] [--kind booked|split]\n");
                        return 2;
                }
        }
        if (strcmp(kind, "booked") != 0 && strcmp(kind, "split") != 0)
                return fprintf(stderr, "bench-plan-hostile: --kind booked or split\n"), 2;
        /* nobody must reach the bus socket in bench-edfd's own directory. */
        if (!dir || chmod(dir, 0711) < 0)
                return fprintf(stderr, "bench-plan-hostile: EDFD_BENCH_DIR: %s\n", dir ? strerror(errno) : "unset"), 1;
        bus = bench_bus_open();
        {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
                const char *note = "";
                unsigned parts = 0;

                if (sd_bus_call_method(bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "ListPartitions", NULL,
                                       &reply, "") >= 0 && sd_bus_message_read(reply, "s", &note) >= 0 &&
                    sd_bus_message_enter_container(reply, 'a', "(" EDFD_PARTITION_ENTRY ")") >= 0)
                        while (sd_bus_message_skip(reply, "(" EDFD_PARTITION_ENTRY ")") > 0)
                                parts++;
                printf("bench-plan-hostile: edfd has %u partitions%s%s\n", parts, *note ? ": " : "", note);
                if (parts < 2)
                        printf("bench-plan-hostile: WARNING: fewer than two partitions: the figures below do not "
                               "measure partitioned placement\n");
        }
        cap = (uint64_t) seconds * 1000;
        lat = calloc(cap, sizeof *lat);
        if (!lat || pipe(pipefd) < 0)
                return 1;

        /* A baseline first: Echo alone for 2 s. */
        uint64_t base[1000], nb = 0;
        for (end = bench_now_ns() + 2 * NSEC_PER_SEC; bench_now_ns() < end && nb < ELEMENTSOF(base);) {
                base[nb++] = bench_echo(bus);
                usleep(2000);
        }
        bench_sort_u64(base, nb);

        child = fork();
        if (child < 0)
                return 1;
        if (child == 0) {
                close(pipefd[0]);
                attacker(kind, pipefd[1]);
        }
        close(pipefd[1]);
        for (end = bench_now_ns() + (uint64_t) seconds * NSEC_PER_SEC; bench_now_ns() < end && n < cap;) {
                lat[n++] = bench_echo(bus);
                usleep(2000);
        }
        kill(child, SIGTERM);
        ssize_t got = read(pipefd[0], line, sizeof line - 1);
        line[got > 0 ? got : 0] = '\0';
        (void) waitpid(child, NULL, 0);
        bench_sort_u64(lat, n);

        uint64_t ok = 0, costly = 0, budget = 0, rate = 0, other = 0, longest = 0, total = 0;
        char why[256] = "";
        (void) sscanf(line, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %255[^\n]",
                      &ok, &costly, &budget, &rate, &other, &longest, &total, why);
        uint64_t plans = ok + costly + budget + rate + other;
        printf("bench-plan-hostile: kind %s, %u s, root's Echo every 2 ms\n", kind, seconds);
        printf("  Echo alone:            p50 %.3f ms, p99 %.3f ms, max %.3f ms (%" PRIu64 " calls)\n",
               bench_quantile(base, nb, 0.5) / 1e6, bench_quantile(base, nb, 0.99) / 1e6,
               nb ? base[nb - 1] / 1e6 : 0.0, nb);
        printf("  Echo during the Plans: p50 %.3f ms, p99 %.3f ms, max %.3f ms (%" PRIu64 " calls)\n",
               bench_quantile(lat, n, 0.5) / 1e6, bench_quantile(lat, n, 0.99) / 1e6, n ? lat[n - 1] / 1e6 : 0.0, n);
        printf("  nobody's Plans: %" PRIu64 " sent: %" PRIu64 " answered, %" PRIu64 " too costly, %" PRIu64
               " budget used up, %" PRIu64 " rate-limited, %" PRIu64 " other%s%s; each took %.1f ms on average, "
               "%.1f ms at most\n",
               plans, ok, costly, budget, rate, other, other ? ": " : "", other ? why : "",
               plans ? total / 1e6 / (double) plans : 0.0, longest / 1e6);
        free(lat);
        sd_bus_flush_close_unref(bus);
        return 0;
}
