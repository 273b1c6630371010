/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* A CPU hog that counts: spins for DURATION and prints how many loop iterations it made per
 * second of wall time, so that what a SCHED_OTHER task keeps of its CPU beside deadline tasks can
 * be compared run by run (the reclaim experiment's cost column).
 *
 *   spin [--duration 5s] [--skip 1s]
 *
 * The first --skip of the run is not counted (start-up, and the deadline tasks' own warm-up). */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/duration.h"

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

int main(int argc, char *argv[]) {
        uint64_t duration = 5 * NSEC_PER_SEC, skip = NSEC_PER_SEC;
        const char *why;

        for (int i = 1; i < argc; i++) {
                uint64_t *to = strcmp(argv[i], "--duration") == 0 ? &duration : strcmp(argv[i], "--skip") == 0 ? &skip : NULL;
                if (!to || i + 1 >= argc || duration_parse(argv[i + 1], to, &why) < 0) {
                        fprintf(stderr, "usage: spin [--duration D] [--skip D] (D with a unit: 5s, 500ms)\n");
                        return 2;
                }
                i++;
        }
        if (skip >= duration) {
                fprintf(stderr, "spin: --skip must be shorter than --duration\n");
                return 2;
        }
        uint64_t start = now_ns(), from = start + skip, end = start + duration, loops = 0, t;
        volatile uint64_t sink = 0;

        while ((t = now_ns()) < from)
                ;
        while ((t = now_ns()) < end) {
                for (int k = 0; k < 1000; k++)
                        sink += (uint64_t) k;
                loops++;
        }
        printf("spin: %.0f kloops/s over %.2f s\n", (double) loops / ((double) (t - from) / 1e9), (double) (t - from) / 1e9);
        return 0;
}
