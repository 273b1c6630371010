/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the benchmarks' workloads (periodic, split-periodic, lock-inversion) share: a duration
 * option read or the program exits 2 with the reason, and the order of response times. */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/duration.h"

/* The value v of option opt of program prog, in ns; exits 2 with a message when it is missing or
 * not a duration with a unit. */
static inline uint64_t workload_arg_duration(const char *prog, const char *opt, const char *v) {
        const char *why;
        uint64_t ns;

        if (!v || duration_parse(v, &ns, &why) < 0) {
                fprintf(stderr, "%s: %s \"%s\" %s\n", prog, opt, v ? v : "", v ? why : "needs a value");
                exit(2);
        }
        return ns;
}

/* For qsort() of uint64_t. */
static inline int workload_cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}
