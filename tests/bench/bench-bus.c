/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The admission round trip against the floor: edfd's own Echo(t) method, served by the same process
 * on the same private dbus-daemon, measured in the same run.
 *
 *   bench-bus [--runs 5] [--calls 2000] [--pipelined 20000]
 *
 * 1. Latency: a helper process sleeps; each iteration calls Echo, Admit (its main thread, 100 us
 *    every 100 ms), Echo, Release, one call at a time, so that noise on this shared machine falls
 *    on both alike. Per run p50 and p99 of each; printed as the median of the runs and their
 *    spread (min-max). Targets (issue 5): Admit and Release p50 <= 1.3x echo p50, p99 <= 2x echo p99.
 * 2. Throughput: 16 calls in flight (sd_bus_call_method_async): echo calls per second, and Admit and
 *    Release calls per second on 16 sleeping threads of a helper (each thread admitted, released,
 *    admitted again...), in blocks of 2,000 calls taken in turn (echo, admit+release, admit+release,
 *    echo, ...) and summed. Target: at least 70% of the echo's calls per second.
 *
 * Runs under bench-edfd. Prints figures and table rows; asserts nothing. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench-lib.h"
#include "shared/protocol.h"

#define RUNTIME (100 * NSEC_PER_USEC)
#define PERIOD (100 * NSEC_PER_MSEC)
#define IN_FLIGHT 16
#define PIPE_BLOCK 2000 /* calls per block of the throughput phase */

/* --- pipelined --- */

typedef struct Pipe {
        sd_bus *bus;
        uint64_t issued, done, limit;
        int failed;
} Pipe;

typedef struct Slot {
        Pipe *pipe;
        pid_t pid, tid;
        uint64_t id; /* 0: not admitted, next call is Admit */
} Slot;

static int send_next(Slot *s);

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Slot *s = userdata;
        Pipe *p = s->pipe;
        const sd_bus_error *e = sd_bus_message_get_error(m);

        (void) ret_error;
        p->done++;
        if (e && sd_bus_error_has_name(e, EDFD_ERROR_KERNEL_REFUSED)) {
                /* The machine-wide pool was full for a moment (another user): the same call again. */
                bench_kernel_busy++;
                (void) send_next(s);
                return 0;
        }
        if (e) {
                fprintf(stderr, "bench-bus: pipelined call failed: %s\n", e->message ? e->message : e->name);
                p->failed = -EIO;
                return 0;
        }
        if (s->tid > 0) {
                if (s->id == 0) {
                        if (sd_bus_message_read(m, "t", &s->id) < 0)
                                p->failed = -EBADMSG;
                } else
                        s->id = 0;
        }
        if (p->issued < p->limit)
                (void) send_next(s);
        return 0;
}

static int send_next(Slot *s) {
        Pipe *p = s->pipe;
        int r;

        if (s->tid <= 0)
                r = sd_bus_call_method_async(p->bus, NULL, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "Echo",
                                             on_reply, s, "t", UINT64_C(42));
        else if (s->id == 0)
                r = sd_bus_call_method_async(p->bus, NULL, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "Admit",
                                             on_reply, s, "uustttt", (uint32_t) s->pid, (uint32_t) s->tid,
                                             BENCH_GROUP, RUNTIME, PERIOD, PERIOD, UINT64_C(0));
        else
                r = sd_bus_call_method_async(p->bus, NULL, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE,
                                             "Release", on_reply, s, "t", s->id);
        if (r < 0) {
                fprintf(stderr, "bench-bus: sending a call: %s\n", strerror(-r));
                p->failed = r;
                return r;
        }
        p->issued++;
        return 0;
}

/* Calls, time and CPU of edfd and dbus-daemon, summed over blocks. */
typedef struct Piped {
        uint64_t calls, ns;
        int64_t edfd_ns, bus_ns;
} Piped;

/* One block of `limit` calls with IN_FLIGHT calls outstanding, added to acc; helper NULL means Echo.
 * limit is rounded up to whole admit+release pairs per slot. */
static void pipelined(sd_bus *bus, const BenchHelper *helper, uint64_t limit, pid_t edfd, pid_t busd, Piped *acc) {
        Pipe p = { .bus = bus, .limit = limit };
        Slot slots[IN_FLIGHT];
        int64_t e0 = bench_cpu_ns(edfd), b0 = bench_cpu_ns(busd);
        uint64_t t0, t1;

        t0 = bench_now_ns();
        for (unsigned i = 0; i < IN_FLIGHT; i++) {
                slots[i] = (Slot) { .pipe = &p, .pid = helper ? helper->pid : 0, .tid = helper ? helper->tids[i] : 0 };
                if (send_next(&slots[i]) < 0)
                        exit(1);
        }
        /* Finish every pair: a slot whose thread is admitted still sends its Release. */
        for (;;) {
                bool busy = p.done < p.issued;
                for (unsigned i = 0; !busy && i < IN_FLIGHT; i++)
                        if (slots[i].id != 0) {
                                (void) send_next(&slots[i]);
                                busy = true;
                        }
                if (!busy || p.failed)
                        break;
                int r = sd_bus_process(bus, NULL);
                if (r < 0) {
                        fprintf(stderr, "bench-bus: sd_bus_process: %s\n", strerror(-r));
                        exit(1);
                }
                if (r == 0)
                        (void) sd_bus_wait(bus, UINT64_MAX);
        }
        t1 = bench_now_ns();
        if (p.failed)
                exit(1);
        acc->calls += p.done;
        acc->ns += t1 - t0;
        acc->edfd_ns += bench_cpu_ns(edfd) - e0;
        acc->bus_ns += bench_cpu_ns(busd) - b0;
}

static double ratio(double a, double b) {
        return b > 0 ? a / b : 0;
}

int main(int argc, char *argv[]) {
        unsigned runs = bench_runs(argc, argv, 5);
        uint64_t calls = 2000, piped = 20000;
        BenchHelper one, many;
        sd_bus *bus;
        int r;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
                        calls = strtoull(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--pipelined") == 0 && i + 1 < argc)
                        piped = strtoull(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
                        i++;
                else {
                        fprintf(stderr, "usage: bench-bus [--runs N] [--calls N] [--pipelined N]\n");
                        return 2;
                }
        }
        if (calls < 100 || piped < 1000) {
                fprintf(stderr, "bench-bus: need --calls >= 100 and --pipelined >= 1000\n");
                return 2;
        }

        bus = bench_bus_open();
        r = bench_helper_spawn(1, &one);
        if (r >= 0)
                r = bench_helper_spawn(IN_FLIGHT, &many);
        if (r < 0) {
                fprintf(stderr, "bench-bus: helper process: %s\n", strerror(-r));
                return 1;
        }

        uint64_t *echo = calloc(2 * calls, sizeof(uint64_t)), *admit = calloc(calls, sizeof(uint64_t)),
                 *release = calloc(calls, sizeof(uint64_t));
        double *v[12];
        pid_t edfd = bench_edfd_pid(), busd = getenv("EDFD_BUS_PID") ? (pid_t) atoi(getenv("EDFD_BUS_PID")) : 0;
        for (unsigned k = 0; k < ELEMENTSOF(v); k++)
                v[k] = calloc(runs, sizeof(double));
        if (!echo || !admit || !release)
                return 1;
        /* v: 0 echo p50, 1 echo p99, 2 admit p50, 3 admit p99, 4 release p50, 5 release p99,
         *    6 echo calls/s, 7 admit+release calls/s, 8 edfd CPU ns per echo call, 9 per admit or release
         *    call (16 in flight), 10 and 11 the same for dbus-daemon */

        /* Warm up: the first calls pay for the credentials query and page faults. */
        for (unsigned i = 0; i < 50; i++) {
                uint64_t id;
                bench_echo(bus);
                if (bench_admit(bus, one.pid, one.pid, BENCH_GROUP, RUNTIME, PERIOD, &id) < 0 || bench_release(bus, id) < 0)
                        return 1;
        }

        for (unsigned run = 0; run < runs; run++) {
                for (uint64_t i = 0; i < calls; i++) {
                        uint64_t id, t0;
                        echo[2 * i] = bench_echo(bus);
                        t0 = bench_now_ns();
                        if (bench_admit(bus, one.pid, one.pid, BENCH_GROUP, RUNTIME, PERIOD, &id) < 0)
                                return 1;
                        admit[i] = bench_now_ns() - t0;
                        echo[2 * i + 1] = bench_echo(bus);
                        t0 = bench_now_ns();
                        if (bench_release(bus, id) < 0)
                                return 1;
                        release[i] = bench_now_ns() - t0;
                }
                bench_sort_u64(echo, 2 * calls);
                bench_sort_u64(admit, calls);
                bench_sort_u64(release, calls);
                v[0][run] = (double) bench_quantile(echo, 2 * calls, 0.50);
                v[1][run] = (double) bench_quantile(echo, 2 * calls, 0.99);
                v[2][run] = (double) bench_quantile(admit, calls, 0.50);
                v[3][run] = (double) bench_quantile(admit, calls, 0.99);
                v[4][run] = (double) bench_quantile(release, calls, 0.50);
                v[5][run] = (double) bench_quantile(release, calls, 0.99);

                {
                        /* Blocks of echo and of admit+release in turn, ABBA, so that the drifts of
                         * this shared machine (another tenant, where the scheduler put the three
                         * processes) fall on both alike rather than on whichever ran second. */
                        uint64_t blocks = MAX(piped / PIPE_BLOCK, 1), per = piped / blocks;
                        Piped pe = {}, pa = {};
                        for (uint64_t b = 0; b < blocks; b++) {
                                bool echo_first = b % 2 == 0;
                                pipelined(bus, echo_first ? NULL : &many, per, edfd, busd, echo_first ? &pe : &pa);
                                pipelined(bus, echo_first ? &many : NULL, per, edfd, busd, echo_first ? &pa : &pe);
                        }
                        v[6][run] = (double) pe.calls * 1e9 / (double) pe.ns;
                        v[7][run] = (double) pa.calls * 1e9 / (double) pa.ns;
                        v[8][run] = (double) pe.edfd_ns / (double) pe.calls;
                        v[9][run] = (double) pa.edfd_ns / (double) pa.calls;
                        v[10][run] = (double) pe.bus_ns / (double) pe.calls;
                        v[11][run] = (double) pa.bus_ns / (double) pa.calls;
                }
                printf("run %u: echo p50 %.0f p99 %.0f us, admit p50 %.0f p99 %.0f us, release p50 %.0f p99 %.0f us; "
                       "16 in flight: echo %.0f/s, admit+release %.0f calls/s; CPU per call: edfd %.1f us echo, %.1f us "
                       "admit/release, dbus-daemon %.1f us echo, %.1f us admit/release\n",
                       run + 1, v[0][run] / 1e3, v[1][run] / 1e3, v[2][run] / 1e3, v[3][run] / 1e3, v[4][run] / 1e3,
                       v[5][run] / 1e3, v[6][run], v[7][run], v[8][run] / 1e3, v[9][run] / 1e3, v[10][run] / 1e3,
                       v[11][run] / 1e3);
                fflush(stdout);
        }

        /* Per-run ratios: both sides of each ratio were measured in the same run. */
        double *rt[5];
        for (unsigned k = 0; k < 5; k++)
                rt[k] = calloc(runs, sizeof(double));
        for (unsigned run = 0; run < runs; run++) {
                rt[0][run] = ratio(v[2][run], v[0][run]);
                rt[1][run] = ratio(v[3][run], v[1][run]);
                rt[2][run] = ratio(v[4][run], v[0][run]);
                rt[3][run] = ratio(v[5][run], v[1][run]);
                rt[4][run] = ratio(v[7][run], v[6][run]);
        }

        struct {
                const char *figure;
                unsigned value, peer, ratio;
                double limit;
                bool at_least;
                const char *peer_name, *target;
        } rows[] = {
                { "Admit p50 (sync)", 2, 0, 0, 1.3, false, "Echo p50", "<= 1.3x" },
                { "Admit p99 (sync)", 3, 1, 1, 2.0, false, "Echo p99", "<= 2x" },
                { "Release p50 (sync)", 4, 0, 2, 1.3, false, "Echo p50", "<= 1.3x" },
                { "Release p99 (sync)", 5, 1, 3, 2.0, false, "Echo p99", "<= 2x" },
        };
        printf("\n%u runs of %" PRIu64 " admit+release pairs and %" PRIu64 " echo calls; medians (min-max):\n", runs, calls,
               2 * calls);
        for (size_t k = 0; k < ELEMENTSOF(rows); k++) {
                char a[96], b[96], c[96], pa[128];
                BenchSpread s = bench_spread(rt[rows[k].ratio], runs);
                bench_fmt(a, sizeof a, bench_spread(v[rows[k].value], runs), 1e3, "us", 0);
                bench_fmt(b, sizeof b, bench_spread(v[rows[k].peer], runs), 1e3, "us", 0);
                bench_fmt(c, sizeof c, s, 1, "x", 2);
                snprintf(pa, sizeof pa, "%s %s", rows[k].peer_name, b);
                printf("  %-20s %-22s %-30s ratio %s\n", rows[k].figure, a, pa, c);
                bench_row(rows[k].figure, a, pa, c, rows[k].target, bench_verdict(s.median <= rows[k].limit));
        }
        {
                char a[128], b[96], c[96], pa[128];
                BenchSpread s = bench_spread(rt[4], runs), pairs = bench_spread(v[7], runs);
                char tmp[96];
                bench_fmt(tmp, sizeof tmp, pairs, 1, "calls/s", 0);
                snprintf(a, sizeof a, "%s = %.0f pairs/s", tmp, pairs.median / 2);
                bench_fmt(b, sizeof b, bench_spread(v[6], runs), 1, "calls/s", 0);
                bench_fmt(c, sizeof c, s, 1, "x", 2);
                snprintf(pa, sizeof pa, "Echo %s", b);
                printf("  %-20s %s, %s, ratio %s\n", "16 in flight", a, pa, c);
                bench_row("Admit+Release, 16 in flight", a, pa, c, ">= 0.70x", bench_verdict(s.median >= 0.70));
        }

        {
                char a[96], b[96], c[96], pa[128];
                double *rc = calloc(runs, sizeof(double));
                for (unsigned run = 0; run < runs; run++)
                        rc[run] = ratio(v[9][run], v[8][run]);
                bench_fmt(a, sizeof a, bench_spread(v[9], runs), 1e3, "us", 1);
                bench_fmt(b, sizeof b, bench_spread(v[8], runs), 1e3, "us", 1);
                bench_fmt(c, sizeof c, bench_spread(rc, runs), 1, "x", 2);
                snprintf(pa, sizeof pa, "per Echo %s", b);
                printf("  edfd CPU per call     Admit/Release %s, %s, ratio %s\n", a, pa, c);
                bench_row("edfd CPU per Admit/Release call", a, pa, c, "", "");
                for (unsigned run = 0; run < runs; run++)
                        rc[run] = ratio(v[11][run], v[10][run]);
                bench_fmt(a, sizeof a, bench_spread(v[11], runs), 1e3, "us", 1);
                bench_fmt(b, sizeof b, bench_spread(v[10], runs), 1e3, "us", 1);
                bench_fmt(c, sizeof c, bench_spread(rc, runs), 1, "x", 2);
                snprintf(pa, sizeof pa, "per Echo %s", b);
                printf("  dbus-daemon CPU/call  Admit/Release %s, %s, ratio %s\n", a, pa, c);
                bench_row("dbus-daemon CPU per Admit/Release call", a, pa, c, "", "");
                free(rc);
        }

        bench_helper_kill(&one);
        bench_helper_kill(&many);
        bench_note_interference();
        for (unsigned k = 0; k < ELEMENTSOF(v); k++)
                free(v[k]);
        for (unsigned k = 0; k < ELEMENTSOF(rt); k++)
                free(rt[k]);
        free(echo);
        free(admit);
        free(release);
        sd_bus_flush_close_unref(bus);
        return 0;
}
