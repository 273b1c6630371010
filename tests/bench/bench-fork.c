/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Forks of an admitted process, against a floor (issue 6).
 *
 *   bench-fork [--runs 5] [--forks 1000] [--rate 500] [--storm 50000] [--storm-runs 3] [--no-headroom]
 *
 * 1. Fork-split latency. A forker process is SCHED_DEADLINE with 10 ms every 100 ms and forks
 *    --forks children at --rate per second. Each child spins on sched_getattr() on itself until it is
 *    SCHED_DEADLINE, and records the time from just before fork() in its parent to that
 *    moment. Two modes, alternating run by run:
 *      edfd   the forker is admitted through edfd, whose group splits forks: edfd sees the fork
 *             on the proc connector, halves the parent, raises the child, and on the child's exit
 *             gives the parent its runtime back;
 *      floor  the forker is made SCHED_DEADLINE directly, and a minimal listener (procmon.c and
 *             sched-dl.c, the same code edfd uses) receives the fork event and makes the two
 *             sched_setattr calls itself (parent halved, then child raised), and restores the
 *             parent on the child's exit. No pinning, no books, no state, no bus.
 *    Target: edfd's p50 at most 1.5x the floor's.
 * 2. A storm: --storm forks at full speed from a deadline forker (50 ms every 100 ms) whose children
 *    exit at once, once admitted through edfd and once as a deadline process edfd does not manage
 *    (the peer: what the same storm costs without edfd's splits). Figures: time, edfd's EventsLost
 *    before and after (target 0 lost), how long edfd took to catch up, and the books after: the
 *    reservations back to where they were (the forker's runtime whole again), the group's and the
 *    root's allocation back after the release, and the kernel's free deadline bandwidth measured by
 *    a probe before and after (optional, --no-headroom skips it; other users of the machine's
 *    deadline pool can move it).
 * Runs under bench-edfd; asserts nothing. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench-lib.h"
#include "procmon.h"
#include "sched-dl.h"

#define FORKER_RUNTIME (50 * NSEC_PER_MSEC)
#define FORKER_PERIOD (100 * NSEC_PER_MSEC)
#define STORM_RUNTIME (50 * NSEC_PER_MSEC)
#define CHILD_TIMEOUT (200 * NSEC_PER_MSEC)
#define NOT_APPLIED UINT64_MAX

/* --- the forker --- */

typedef struct Command {
        uint32_t storm; /* 0: paced latency forks, 1: a storm */
        uint32_t count;
        uint32_t rate;
} Command;

typedef struct Answer {
        uint64_t elapsed_ns;
        uint32_t not_applied;
} Answer;

static uint64_t *shared; /* latencies, MAP_SHARED: written by the forker's children */

static void child_wait_for_deadline(uint64_t t0, uint32_t slot) {
        SchedAttr a;
        uint64_t t;

        for (;;) {
                t = bench_now_ns();
                if (sched_getattr_raw(0, &a, 0) == 0 && a.sched_policy == SCHED_DEADLINE) {
                        shared[slot] = t - t0;
                        break;
                }
                if (t - t0 > CHILD_TIMEOUT) {
                        shared[slot] = NOT_APPLIED;
                        break;
                }
                /* No sched_yield() here: for a SCHED_DEADLINE task it gives up the rest of the runtime
                 * of this period, so a child made deadline just before it would be throttled for up to a
                 * period, and when it then exits its bandwidth stays charged until its 0-lag time. */
        }
        _exit(0);
}

static void forker_main(int cmd_fd, int ans_fd) {
        Command c;

        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        while (read(cmd_fd, &c, sizeof c) == sizeof c) {
                Answer a = {};
                uint64_t start = bench_now_ns();

                if (!c.storm) {
                        uint64_t step = NSEC_PER_SEC / (c.rate ? c.rate : 1);
                        for (uint32_t i = 0; i < c.count; i++) {
                                uint64_t t0;
                                pid_t pid;
                                bench_sleep_until(start + i * step);
                                t0 = bench_now_ns();
                                pid = fork();
                                if (pid == 0)
                                        child_wait_for_deadline(t0, i);
                                if (pid < 0) {
                                        shared[i] = NOT_APPLIED;
                                        continue;
                                }
                                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                                        ;
                        }
                        for (uint32_t i = 0; i < c.count; i++)
                                a.not_applied += shared[i] == NOT_APPLIED;
                } else {
                        uint32_t live = 0;
                        for (uint32_t i = 0; i < c.count; i++) {
                                pid_t pid = fork();
                                if (pid == 0)
                                        _exit(0);
                                if (pid < 0) {
                                        /* Out of processes for a moment: reap one and try again. */
                                        if (live > 0 && waitpid(-1, NULL, 0) > 0)
                                                live--;
                                        i--;
                                        continue;
                                }
                                live++;
                                while (live > 0 && waitpid(-1, NULL, WNOHANG) > 0)
                                        live--;
                        }
                        while (live > 0 && waitpid(-1, NULL, 0) > 0)
                                live--;
                }
                a.elapsed_ns = bench_now_ns() - start;
                if (write(ans_fd, &a, sizeof a) != sizeof a)
                        _exit(1);
        }
        _exit(0);
}

typedef struct Forker {
        pid_t pid;
        int cmd_fd, ans_fd;
} Forker;

static int forker_start(Forker *ret) {
        int c[2], a[2];
        pid_t pid;

        if (pipe2(c, O_CLOEXEC) < 0 || pipe2(a, O_CLOEXEC) < 0)
                return -errno;
        fflush(stdout);
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                close(c[1]);
                close(a[0]);
                forker_main(c[0], a[1]);
        }
        close(c[0]);
        close(a[1]);
        *ret = (Forker) { pid, c[1], a[0] };
        return 0;
}

static Answer forker_run(const Forker *f, uint32_t storm, uint32_t count, uint32_t rate) {
        Command c = { storm, count, rate };
        Answer a = {};

        if (write(f->cmd_fd, &c, sizeof c) != sizeof c || read(f->ans_fd, &a, sizeof a) != sizeof a) {
                fprintf(stderr, "bench-fork: the forker died\n");
                exit(1);
        }
        return a;
}

/* Make the forker SCHED_DEADLINE directly (not through edfd), or put it back to SCHED_OTHER. */
static int forker_set_direct(const Forker *f, uint64_t runtime) {
        SchedAttr a = { .size = sizeof a, .sched_policy = SCHED_DEADLINE, .sched_flags = SCHED_FLAG_RESET_ON_FORK,
                        .sched_runtime = runtime, .sched_deadline = FORKER_PERIOD, .sched_period = FORKER_PERIOD };

        return sched_setattr_raw(f->pid, &a, 0);
}

static void forker_unset_direct(const Forker *f) {
        SchedTarget t = SCHED_TARGET_NULL;

        if (sched_target_pin(f->pid, f->pid, &t) == 0)
                (void) sched_release(&t); /* parks at a zero-rounding bandwidth first */
        sched_target_done(&t);
}

/* --- the floor: a minimal proc connector listener --- */

static volatile sig_atomic_t floor_stop;

static void on_term(int sig) {
        (void) sig;
        floor_stop = 1;
}

/* sched_setattr, retrying EBUSY as edfd does (50 us doubling up to 5 ms, for at most 100 ms): the
 * pool is machine-wide and another user may fill it for a moment. Counts the retries. */
static unsigned floor_busy;

static int floor_set(pid_t tid, const SchedAttr *a) {
        uint64_t until = bench_now_ns() + 100 * NSEC_PER_MSEC;
        int r;

        for (unsigned i = 0;; i++) {
                r = sched_setattr_raw(tid, a, 0);
                if (r != -EBUSY || bench_now_ns() >= until)
                        return r;
                floor_busy++;
                usleep((useconds_t) MIN(50u << MIN(i, 7u), 5000u));
        }
}

static void floor_main(pid_t forker, int ready_fd) {
        SchedAttr half = { .size = sizeof half, .sched_policy = SCHED_DEADLINE, .sched_flags = SCHED_FLAG_RESET_ON_FORK,
                           .sched_runtime = FORKER_RUNTIME / 2, .sched_deadline = FORKER_PERIOD,
                           .sched_period = FORKER_PERIOD };
        SchedAttr full = half;
        unsigned failed = 0;
        pid_t child = 0;
        int fd, r;
        char c = 1;

        full.sched_runtime = FORKER_RUNTIME;
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        signal(SIGTERM, on_term);
        r = procmon_open(&fd, 0);
        if (r < 0) {
                fprintf(stderr, "bench-fork: floor: procmon_open: %s\n", strerror(-r));
                _exit(1);
        }
        if (write(ready_fd, &c, 1) != 1)
                _exit(1);
        while (!floor_stop) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                ProcEvent ev[8];
                size_t n;

                if (poll(&p, 1, 100) <= 0)
                        continue;
                for (;;) {
                        r = procmon_receive(fd, ev, ELEMENTSOF(ev), &n);
                        if (r == -EAGAIN)
                                break;
                        if (r < 0)
                                continue;
                        for (size_t i = 0; i < n; i++) {
                                if (ev[i].type == PROCMON_FORK && ev[i].parent_tgid == forker && ev[i].pid == ev[i].tgid) {
                                        /* Shrink the parent first, raise the child second. */
                                        failed += floor_set(forker, &half) < 0;
                                        failed += floor_set(ev[i].pid, &half) < 0;
                                        child = ev[i].pid;
                                } else if (ev[i].type == PROCMON_EXIT && child > 0 && ev[i].pid == child) {
                                        failed += floor_set(forker, &full) < 0;
                                        child = 0;
                                }
                        }
                }
        }
        if (floor_busy || failed)
                printf("        floor: the kernel said EBUSY %u times (retried as edfd does), %u calls failed\n",
                       floor_busy, failed);
        fflush(stdout);
        close(fd);
        _exit(0);
}

static pid_t floor_start(pid_t forker) {
        int p[2];
        pid_t pid;
        char c;

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        fflush(stdout);
        pid = fork();
        if (pid == 0) {
                close(p[0]);
                floor_main(forker, p[1]);
        }
        close(p[1]);
        if (pid < 0 || read(p[0], &c, 1) != 1) {
                close(p[0]);
                fprintf(stderr, "bench-fork: the floor listener did not start\n");
                exit(1);
        }
        close(p[0]);
        return pid;
}

static void floor_end(pid_t pid) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
}

/* --- edfd --- */

/* Wait until the books show n reservations holding sum_runtime in all and EventsSeen has stopped
 * moving; returns how long that took (ns), or UINT64_MAX after timeout_ns. */
static uint64_t settle(sd_bus *bus, uint64_t n, uint64_t sum_runtime, uint64_t timeout_ns) {
        uint64_t start = bench_now_ns(), seen = UINT64_MAX, stable_since = 0;

        for (;;) {
                BenchBooks b;
                uint64_t s, now = bench_now_ns();
                if (bench_books(bus, &b) < 0 || bench_property_u64(bus, "EventsSeen", &s) < 0)
                        return UINT64_MAX;
                if (s != seen) {
                        seen = s;
                        stable_since = now;
                }
                if (b.reservations == n && b.sum_runtime == sum_runtime && now - stable_since >= 50 * NSEC_PER_MSEC)
                        return stable_since - start;
                if (now - start > timeout_ns)
                        return UINT64_MAX;
                usleep(5000);
        }
}

static uint64_t *samples(uint32_t count, uint32_t *ret_n) {
        uint64_t *v = malloc(count * sizeof *v);
        uint32_t n = 0;

        if (!v)
                exit(1);
        for (uint32_t i = 0; i < count; i++)
                if (shared[i] != NOT_APPLIED)
                        v[n++] = shared[i];
        bench_sort_u64(v, n);
        *ret_n = n;
        return v;
}

/* The kernel's free deadline bandwidth once it holds still: what the previous phase released by
 * leaving SCHED_DEADLINE stays charged until each thread's 0-lag time (up to a period), so probe
 * until two probes 250 ms apart agree (at most 10 times). */
static int headroom_settled(uint64_t *ret) {
        uint64_t a, b;
        int r = bench_kernel_headroom(&a);

        for (unsigned i = 0; r == 0 && i < 10; i++) {
                usleep(250000);
                r = bench_kernel_headroom(&b);
                if (r == 0 && b == a)
                        break;
                a = b;
        }
        if (r == 0)
                *ret = a;
        return r;
}

int main(int argc, char *argv[]) {
        unsigned runs = bench_runs(argc, argv, 5), storm_runs = 3;
        uint32_t forks = 1000, rate = 500, storm = 50000;
        bool headroom = true;
        Forker f;
        sd_bus *bus;
        int r;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--forks") == 0 && i + 1 < argc)
                        forks = (uint32_t) strtoul(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--rate") == 0 && i + 1 < argc)
                        rate = (uint32_t) strtoul(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--storm") == 0 && i + 1 < argc)
                        storm = (uint32_t) strtoul(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--storm-runs") == 0 && i + 1 < argc)
                        storm_runs = (unsigned) strtoul(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--no-headroom") == 0)
                        headroom = false;
                else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
                        i++;
                else {
                        fprintf(stderr, "usage: bench-fork [--runs N] [--forks N] [--rate N] [--storm N] [--storm-runs N] "
                                        "[--no-headroom]\n");
                        return 2;
                }
        }
        if (forks < 10 || rate == 0 || rate > 10000 || storm_runs > 100) {
                fprintf(stderr, "bench-fork: need --forks >= 10, --rate 1..10000, --storm-runs <= 100\n");
                return 2;
        }

        shared = mmap(NULL, forks * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (shared == MAP_FAILED)
                return 1;
        r = forker_start(&f);
        if (r < 0) {
                fprintf(stderr, "bench-fork: cannot start the forker: %s\n", strerror(-r));
                return 1;
        }
        bus = bench_bus_open();

        /* 1. Latency, alternating floor and edfd. */
        double *p50[2], *p99[2], *ratio = calloc(runs, sizeof(double));
        for (int m = 0; m < 2; m++) {
                p50[m] = calloc(runs, sizeof(double));
                p99[m] = calloc(runs, sizeof(double));
        }
        uint32_t missed[2] = {};
        for (unsigned run = 0; run < runs; run++) {
                for (int m = 0; m < 2; m++) { /* 0 floor, 1 edfd */
                        uint64_t id = 0, *v;
                        uint32_t n;
                        pid_t fl = 0;
                        Answer a;

                        if (m == 0) {
                                fl = floor_start(f.pid);
                                r = forker_set_direct(&f, FORKER_RUNTIME);
                                if (r < 0) {
                                        fprintf(stderr, "bench-fork: sched_setattr on the forker: %s\n", strerror(-r));
                                        return 1;
                                }
                        } else if (bench_admit(bus, f.pid, f.pid, BENCH_GROUP, FORKER_RUNTIME, FORKER_PERIOD, &id) < 0)
                                return 1;
                        a = forker_run(&f, 0, forks, rate);
                        if (m == 0) {
                                floor_end(fl);
                                forker_unset_direct(&f);
                        } else {
                                /* The last child's exit gives the runtime back: wait for it, then release. */
                                (void) settle(bus, 1, FORKER_RUNTIME, 2 * NSEC_PER_SEC);
                                if (bench_release(bus, id) < 0)
                                        return 1;
                        }
                        v = samples(forks, &n);
                        missed[m] += a.not_applied;
                        p50[m][run] = (double) bench_quantile(v, n, 0.50);
                        p99[m][run] = (double) bench_quantile(v, n, 0.99);
                        printf("run %u %-5s: %u forks in %.2f s, fork -> deadline p50 %.0f us p99 %.0f us max %.0f us%s\n",
                               run + 1, m ? "edfd" : "floor", forks, (double) a.elapsed_ns / 1e9, p50[m][run] / 1e3,
                               p99[m][run] / 1e3, n ? (double) v[n - 1] / 1e3 : 0.0, a.not_applied ? " (some never applied)" : "");
                        if (a.not_applied)
                                printf("        %u children were not made SCHED_DEADLINE within %" PRIu64 " ms\n",
                                       a.not_applied, CHILD_TIMEOUT / NSEC_PER_MSEC);
                        fflush(stdout);
                        free(v);
                }
                ratio[run] = p50[0][run] > 0 ? p50[1][run] / p50[0][run] : 0;
        }
        {
                char a[96], b[96], c[96], pa[128], fig[96];
                BenchSpread s = bench_spread(ratio, runs);
                snprintf(fig, sizeof fig, "fork -> child deadline p50 (%u/s)", rate);
                bench_fmt(a, sizeof a, bench_spread(p50[1], runs), 1e3, "us", 0);
                bench_fmt(b, sizeof b, bench_spread(p50[0], runs), 1e3, "us", 0);
                bench_fmt(c, sizeof c, s, 1, "x", 2);
                snprintf(pa, sizeof pa, "floor listener %s", b);
                printf("\n%u runs of %u forks at %u/s; medians (min-max):\n  %s: edfd %s, %s, ratio %s\n", runs, forks, rate,
                       fig, a, pa, c);
                bench_row(fig, a, pa, c, "<= 1.5x", bench_verdict(s.median <= 1.5 && missed[1] == 0));

                double *r99 = calloc(runs, sizeof(double));
                for (unsigned run = 0; run < runs; run++)
                        r99[run] = p99[0][run] > 0 ? p99[1][run] / p99[0][run] : 0;
                snprintf(fig, sizeof fig, "fork -> child deadline p99 (%u/s)", rate);
                bench_fmt(a, sizeof a, bench_spread(p99[1], runs), 1e3, "us", 0);
                bench_fmt(b, sizeof b, bench_spread(p99[0], runs), 1e3, "us", 0);
                bench_fmt(c, sizeof c, bench_spread(r99, runs), 1, "x", 2);
                snprintf(pa, sizeof pa, "floor listener %s", b);
                printf("  %s: edfd %s, %s, ratio %s\n", fig, a, pa, c);
                if (missed[0] || missed[1])
                        printf("  children never made SCHED_DEADLINE: edfd %u, floor %u\n", missed[1], missed[0]);
                bench_row(fig, a, pa, c, "", "");
                free(r99);
        }

        for (int m = 0; m < 2; m++) {
                free(p50[m]);
                free(p99[m]);
        }
        free(ratio);
        if (storm == 0 || storm_runs == 0)
                goto done;

        /* 2. Storms, alternating: admitted through edfd, then a deadline forker edfd does not manage. */
        double *st[2], *catchup = calloc(storm_runs, sizeof(double)), *sratio = calloc(storm_runs, sizeof(double));
        uint64_t lost_total = 0, seen_min = UINT64_MAX;
        unsigned balanced = 0, headroom_same = 0, headroom_runs = 0;
        int64_t headroom_worst = 0;
        for (int m = 0; m < 2; m++)
                st[m] = calloc(storm_runs, sizeof(double));
        for (unsigned run = 0; run < storm_runs; run++) {
                BenchBooks b0, b1, b2, b3;
                uint64_t lost0, lost1, seen0, seen1, resync0, resync1, unseen0, unseen1, id, hr0 = 0, hr1 = 0, t_settle;
                bool hr_ok = false;
                Answer a;

                if (bench_books(bus, &b0) < 0)
                        return 1;
                if (headroom)
                        hr_ok = headroom_settled(&hr0) == 0;
                if (bench_admit(bus, f.pid, f.pid, BENCH_GROUP, STORM_RUNTIME, FORKER_PERIOD, &id) < 0 ||
                    bench_books(bus, &b1) < 0)
                        return 1;
                if (bench_property_u64(bus, "EventsLost", &lost0) < 0 || bench_property_u64(bus, "EventsSeen", &seen0) < 0 ||
                    bench_property_u64(bus, "Resyncs", &resync0) < 0 ||
                    bench_property_u64(bus, "UnseenChildren", &unseen0) < 0)
                        return 1;
                a = forker_run(&f, 1, storm, 0);
                st[0][run] = (double) a.elapsed_ns;
                t_settle = settle(bus, b1.reservations, b1.sum_runtime, 60 * NSEC_PER_SEC);
                if (bench_property_u64(bus, "EventsLost", &lost1) < 0 || bench_property_u64(bus, "EventsSeen", &seen1) < 0 ||
                    bench_property_u64(bus, "Resyncs", &resync1) < 0 ||
                    bench_property_u64(bus, "UnseenChildren", &unseen1) < 0 || bench_books(bus, &b2) < 0)
                        return 1;
                catchup[run] = t_settle == UINT64_MAX ? -1 : (double) t_settle;
                if (bench_release(bus, id) < 0 || bench_books(bus, &b3) < 0)
                        return 1;
                /* Settled too: what the children held comes back at their 0-lag times, and what the
                 * kernel kept for children raised after they ended at edfd's first look at the
                 * capacity once none can be ending (design.md, "What the kernel does"). */
                if (headroom && hr_ok)
                        hr_ok = headroom_settled(&hr1) == 0;
                bool ok = t_settle != UINT64_MAX && b2.reservations == b1.reservations &&
                          b2.sum_runtime == b1.sum_runtime && b2.group_allocated == b1.group_allocated &&
                          b3.reservations == b0.reservations && b3.group_allocated == b0.group_allocated &&
                          b3.root_allocated == b0.root_allocated;
                balanced += ok;
                lost_total += lost1 - lost0;
                seen_min = MIN(seen_min, seen1 - seen0);
                if (hr_ok) {
                        int64_t d = (int64_t) hr1 - (int64_t) hr0;
                        headroom_runs++;
                        headroom_same += d == 0;
                        if (llabs(d) > llabs(headroom_worst))
                                headroom_worst = d;
                }
                printf("storm %u edfd : %u forks in %.2f s, events seen %" PRIu64 ", lost %" PRIu64 ", resyncs %" PRIu64
                       ", unseen children %" PRIu64 "; caught up %s%.0f ms after; books %s",
                       run + 1, storm, (double) a.elapsed_ns / 1e9, seen1 - seen0, lost1 - lost0, resync1 - resync0,
                       unseen1 - unseen0, t_settle == UINT64_MAX ? "NOT (timeout) " : "",
                       t_settle == UINT64_MAX ? 0.0 : (double) t_settle / 1e6, ok ? "balanced" : "NOT balanced");
                if (hr_ok)
                        printf("; kernel headroom %s (%+" PRId64 " units)", hr0 == hr1 ? "back" : "differs", (int64_t) (hr1 - hr0));
                printf("\n");
                if (!ok)
                        printf("        reservations %" PRIu64 " -> %" PRIu64 " -> %" PRIu64 ", runtime %" PRIu64 " -> %" PRIu64
                               ", group allocated %" PRIu64 " -> %" PRIu64 " -> %" PRIu64 " -> %" PRIu64
                               ", root allocated %" PRIu64 " -> %" PRIu64 "\n",
                               b1.reservations, b2.reservations, b3.reservations, b1.sum_runtime, b2.sum_runtime,
                               b0.group_allocated, b1.group_allocated, b2.group_allocated, b3.group_allocated,
                               b0.root_allocated, b3.root_allocated);
                fflush(stdout);

                /* The peer: the same storm from a deadline forker edfd does not manage. */
                r = forker_set_direct(&f, STORM_RUNTIME);
                if (r < 0) {
                        fprintf(stderr, "bench-fork: sched_setattr on the forker: %s\n", strerror(-r));
                        return 1;
                }
                a = forker_run(&f, 1, storm, 0);
                forker_unset_direct(&f);
                st[1][run] = (double) a.elapsed_ns;
                sratio[run] = st[0][run] / st[1][run];
                printf("storm %u peer : %u forks in %.2f s (deadline forker, not managed by edfd)\n", run + 1, storm,
                       (double) a.elapsed_ns / 1e9);
                fflush(stdout);
                /* Let edfd drain the peer's events before the next round. */
                (void) settle(bus, b0.reservations, b0.sum_runtime, 60 * NSEC_PER_SEC);
        }
        {
                char a[128], b[96], c[96], pa[160], fig[96], cu[96];
                bool all_caught_up = true;
                for (unsigned run = 0; run < storm_runs; run++)
                        all_caught_up &= catchup[run] >= 0;

                snprintf(fig, sizeof fig, "fork storm %u: events lost", storm);
                snprintf(a, sizeof a, "%" PRIu64 " in %u runs (>= %" PRIu64 " seen per run)", lost_total, storm_runs,
                         seen_min);
                bench_row(fig, a, "", "", "0", bench_verdict(lost_total == 0));

                snprintf(fig, sizeof fig, "fork storm %u: time", storm);
                bench_fmt(a, sizeof a, bench_spread(st[0], storm_runs), 1e9, "s", 2);
                bench_fmt(b, sizeof b, bench_spread(st[1], storm_runs), 1e9, "s", 2);
                bench_fmt(c, sizeof c, bench_spread(sratio, storm_runs), 1, "x", 2);
                snprintf(pa, sizeof pa, "unmanaged deadline forker %s", b);
                bench_row(fig, a, pa, c, "", "");

                snprintf(fig, sizeof fig, "fork storm %u: edfd caught up after", storm);
                if (all_caught_up)
                        bench_fmt(cu, sizeof cu, bench_spread(catchup, storm_runs), 1e6, "ms", 0);
                else
                        snprintf(cu, sizeof cu, "timed out (60 s) in some run");
                bench_row(fig, cu, "", "", "", "");

                snprintf(fig, sizeof fig, "fork storm %u: books balanced", storm);
                snprintf(a, sizeof a, "%u of %u runs", balanced, storm_runs);
                bench_row(fig, a, "", "", "all runs", bench_verdict(balanced == storm_runs));

                if (headroom_runs) {
                        snprintf(fig, sizeof fig, "fork storm %u: kernel headroom back", storm);
                        snprintf(a, sizeof a, "%u of %u runs (worst %+" PRId64 " units of 2^-20 CPU)", headroom_same,
                                 headroom_runs, headroom_worst);
                        bench_row(fig, a, "", "", "all runs (optional)", bench_verdict(headroom_same == headroom_runs));
                }
                printf("\n%u storms of %u forks; events lost %" PRIu64 "; books balanced in %u; edfd caught up %s after the "
                       "last fork\n",
                       storm_runs, storm, lost_total, balanced, cu);
        }
        for (int m = 0; m < 2; m++)
                free(st[m]);
        free(catchup);
        free(sratio);

done:
        bench_note_interference();
        kill(f.pid, SIGKILL);
        waitpid(f.pid, NULL, 0);
        munmap(shared, forks * sizeof(uint64_t));
        sd_bus_flush_close_unref(bus);
        return 0;
}
