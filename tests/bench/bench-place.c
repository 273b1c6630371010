/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The partitioned placement decision in the core (issue 21's speed goal): 64 CPUs with 16
 * constrained-deadline reservations each (periods 5-100 ms, deadlines between the runtime and the
 * period, about 55% of each CPU), then place_choose() for a new constrained request, 2,000 times
 * with different requests, after 200 decisions of warm-up. Prints p50, p99 and the worst decision
 * time and the QPA steps of the worst. Target: p50 under 100 us. Pure: no root, no I/O timed. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "basic/macro.h"
#include "core/placement.h"

#define CPUS 64
#define PER_CPU 16
#define DECISIONS 2000
#define WARMUP 200

static uint64_t rng = UINT64_C(0x9e3779b97f4a7c15);
static uint64_t rnd(void) {
        rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
        return rng * UINT64_C(2685821657736338717);
}

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static DlParams random_task(unsigned permille) {
        uint64_t p = (5 + rnd() % 96) * NSEC_PER_MSEC, c = p * permille / 1000, d;

        c = MAX(c, 2 * DL_RUNTIME_MIN);
        d = c + (p - c) * (rnd() % 101) / 100;
        return (DlParams) { .runtime = c, .deadline = d, .period = p };
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

int main(void) {
        static DlParams tasks[CPUS][PER_CPU];
        static uint64_t t[DECISIONS];
        PlaceCpu cpus[CPUS];
        EdfVerdict verdicts[CPUS];
        DlParams server = EDF_FAIR_SERVER_DEFAULT;
        EdfSupply supply;
        uint64_t placed = 0, worst_steps = 0;

        if (edf_supply_from_kernel(950000, 1000000, &server, &supply) < 0)
                return 1;
        for (unsigned c = 0; c < CPUS; c++) {
                size_t n = 0;
                EdfVerdict v;
                /* Fill each CPU with tasks that keep it schedulable, up to PER_CPU. */
                while (n < PER_CPU) {
                        DlParams x = random_task(20 + rnd() % 30);
                        if (edf_check(tasks[c], n, &x, 1, &supply, &v) == 0 && v.schedulable)
                                tasks[c][n++] = x;
                }
                cpus[c] = (PlaceCpu) { .id = c, .supply = supply, .tasks = tasks[c], .n_tasks = n };
        }
        for (unsigned i = 0; i < WARMUP + DECISIONS; i++) {
                DlParams req = random_task(10 + rnd() % 40);
                size_t at;
                uint64_t t0 = now_ns();
                int r = place_choose(cpus, CPUS, &req, PLACE_FIT_BEST, &at, verdicts);
                uint64_t dt = now_ns() - t0;

                if (r != 0 && r != -ENOSPC)
                        return 1;
                if (i >= WARMUP) {
                        t[i - WARMUP] = dt;
                        placed += r == 0;
                        for (unsigned c = 0; c < CPUS; c++)
                                worst_steps = MAX(worst_steps, verdicts[c].steps);
                }
        }
        qsort(t, DECISIONS, sizeof(uint64_t), cmp_u64);
        printf("placement decision, %d CPUs x %d constrained reservations: p50 %.1f us, p99 %.1f us, max %.1f us "
               "(%" PRIu64 " of %d requests placed; most QPA steps on one CPU %" PRIu64 "; target p50 < 100 us)\n",
               CPUS, PER_CPU, (double) t[DECISIONS / 2] / 1000, (double) t[DECISIONS * 99 / 100] / 1000,
               (double) t[DECISIONS - 1] / 1000, placed, DECISIONS, worst_steps);
        return 0;
}
