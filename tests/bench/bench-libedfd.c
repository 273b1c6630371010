/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* What libedfd costs its caller: the client's CPU time for an Admit+Release pair made through
 * libedfd (edfd_admit, edfd_release) against the same two calls made with raw sd-bus
 * (sd_bus_call_method), in one run, one connection each, opened before measuring.
 *
 *   bench-libedfd [--runs 5] [--blocks 20] [--pairs 100]
 *
 * Each run alternates blocks of --pairs pairs, libedfd then sd-bus, --blocks of each, the first of
 * each discarded (warm-up: first calls fault in code and grow buffers). A block's figure is this
 * process's CPU time (CLOCK_PROCESS_CPUTIME_ID) per pair: wall-clock latency is dominated by
 * dbus-daemon and edfd and too noisy here for a 5% figure. Per run the median block of each, and
 * their ratio; printed as the median of the runs with their spread. Target (issue 22): the
 * library at most 1.05x raw sd-bus. Runs under bench-edfd; asserts nothing. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench-lib.h"
#include "edfd/edfd.h"
#include "shared/protocol.h"

#define MSEC UINT64_C(1000000)

static uint64_t cpu_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * 1000000000 + (uint64_t) ts.tv_nsec;
}

static void die(const char *what, int r, const char *message) {
        fprintf(stderr, "bench-libedfd: %s: %s (%s)\n", what, strerror(-r), message ?: "");
        exit(1);
}

static void pair_libedfd(edfd *e, const edfd_request *q) {
        uint64_t id;
        int r;

        r = edfd_admit(e, q, &id);
        if (r < 0)
                die("edfd_admit", r, edfd_error_message(e));
        r = edfd_release(e, id);
        if (r < 0)
                die("edfd_release", r, edfd_error_message(e));
}

static void pair_sdbus(sd_bus *bus, pid_t pid) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        uint64_t id;
        int r;

        r = sd_bus_call_method(bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "Admit", &error, &reply,
                               "uustttt", (uint32_t) pid, (uint32_t) pid, BENCH_GROUP, MSEC, UINT64_C(0),
                               100 * MSEC, UINT64_C(0));
        if (r >= 0)
                r = sd_bus_message_read(reply, "t", &id);
        reply = sd_bus_message_unref(reply);
        if (r < 0)
                die("Admit", r, error.message);
        r = sd_bus_call_method(bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "Release", &error, NULL, "t",
                               id);
        if (r < 0)
                die("Release", r, error.message);
        sd_bus_error_free(&error);
}

static unsigned arg_u(int argc, char **argv, const char *name, unsigned def) {
        for (int i = 1; i + 1 < argc; i++)
                if (strcmp(argv[i], name) == 0) {
                        char *end;
                        unsigned long v = strtoul(argv[i + 1], &end, 10);
                        if (*end || v == 0 || v > 100000) {
                                fprintf(stderr, "bench-libedfd: %s needs a number from 1 to 100000\n", name);
                                exit(2);
                        }
                        return (unsigned) v;
                }
        return def;
}

static double median(double *v, size_t n) {
        return bench_spread(v, n).median;
}

int main(int argc, char **argv) {
        unsigned runs = bench_runs(argc, argv, 5), blocks = arg_u(argc, argv, "--blocks", 20),
                 pairs = arg_u(argc, argv, "--pairs", 100);
        double *lib = calloc(blocks, sizeof *lib), *raw = calloc(blocks, sizeof *raw);
        double *lib_runs = calloc(runs, sizeof *lib_runs), *raw_runs = calloc(runs, sizeof *raw_runs),
               *ratio_runs = calloc(runs, sizeof *ratio_runs);
        BenchHelper helper;
        sd_bus *bus;
        edfd *e = NULL;
        edfd_request *q = NULL;
        char v[64], p[64], x[64];
        int r;

        if (!lib || !raw || !lib_runs || !raw_runs || !ratio_runs)
                die("calloc", -ENOMEM, NULL);
        if (blocks < 2) {
                fprintf(stderr, "bench-libedfd: --blocks must be at least 2 (the first is warm-up)\n");
                return 2;
        }
        r = bench_helper_spawn(1, &helper);
        if (r < 0)
                die("helper", r, NULL);
        bus = bench_bus_open();
        r = edfd_open(&e);
        if (r < 0)
                die("edfd_open", r, NULL);
        if ((r = edfd_request_new(&q)) < 0 || (r = edfd_request_set_runtime(q, MSEC)) < 0 ||
            (r = edfd_request_set_period(q, 100 * MSEC)) < 0 || (r = edfd_request_set_group(q, BENCH_GROUP)) < 0 ||
            (r = edfd_request_set_thread(q, helper.pid, helper.pid)) < 0)
                die("request", r, NULL);

        for (unsigned run = 0; run < runs; run++) {
                for (unsigned b = 0; b < blocks; b++) {
                        uint64_t t0 = cpu_ns();
                        for (unsigned i = 0; i < pairs; i++)
                                pair_libedfd(e, q);
                        uint64_t t1 = cpu_ns();
                        for (unsigned i = 0; i < pairs; i++)
                                pair_sdbus(bus, helper.pid);
                        uint64_t t2 = cpu_ns();
                        lib[b] = (double) (t1 - t0) / pairs;
                        raw[b] = (double) (t2 - t1) / pairs;
                }
                lib_runs[run] = median(lib + 1, blocks - 1);
                raw_runs[run] = median(raw + 1, blocks - 1);
                ratio_runs[run] = lib_runs[run] / raw_runs[run];
                printf("run %u: libedfd %.1f us, sd-bus %.1f us of client CPU per admit+release pair, %.3fx\n",
                       run + 1, lib_runs[run] / 1000, raw_runs[run] / 1000, ratio_runs[run]);
        }
        BenchSpread rs = bench_spread(ratio_runs, runs);
        bench_fmt(v, sizeof v, bench_spread(lib_runs, runs), 1000, "us", 1);
        bench_fmt(p, sizeof p, bench_spread(raw_runs, runs), 1000, "us", 1);
        bench_fmt(x, sizeof x, rs, 1, "x", 3);
        printf("client CPU per admit+release pair: libedfd %s, raw sd-bus %s, ratio %s (%u runs, %u blocks of %u pairs each)\n",
               v, p, x, runs, blocks, pairs);
        bench_row("libedfd: client CPU per admit+release pair", v, p, x, "<= 1.05x", bench_verdict(rs.median <= 1.05));
        bench_note_interference();

        edfd_request_free(q);
        edfd_close(e);
        sd_bus_flush_close_unref(bus);
        bench_helper_kill(&helper);
        free(lib);
        free(raw);
        free(lib_runs);
        free(raw_runs);
        free(ratio_runs);
        return 0;
}
