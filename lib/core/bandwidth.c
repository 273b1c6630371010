/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "core/bandwidth.h"
#include "basic/macro.h"
#include "core/duration.h"

int bw_of(uint64_t runtime, uint64_t period, uint64_t *ret_bw) {
        if (period == 0)
                return -EINVAL;
        if (runtime > (UINT64_MAX >> BW_SHIFT))
                return -ERANGE;
        *ret_bw = (runtime << BW_SHIFT) / period;
        return 0;
}

int bw_kernel_capacity(unsigned ncpus, int64_t rt_runtime_us, uint64_t rt_period_us, uint64_t *ret_bw) {
        uint64_t per_cpu, total;
        int r;

        if (rt_period_us == 0)
                return -EINVAL;
        if (rt_runtime_us < 0) {
                *ret_bw = UINT64_MAX;
                return 0;
        }
        /* The kernel: dl_b->bw = to_ratio(global_rt_period(), global_rt_runtime()), in ns; and
         * cap_scale(dl_b->bw, cpus * SCHED_CAPACITY_SCALE) = bw * cpus for CPUs of full capacity.
         * The ratio of the ns values equals the ratio of the us values only after scaling both, so
         * compute in ns as the kernel does. */
        if ((uint64_t) rt_runtime_us > UINT64_MAX / NSEC_PER_USEC || rt_period_us > UINT64_MAX / NSEC_PER_USEC)
                return -ERANGE;
        r = bw_of((uint64_t) rt_runtime_us * NSEC_PER_USEC, rt_period_us * NSEC_PER_USEC, &per_cpu);
        if (r < 0)
                return r;
        if (__builtin_mul_overflow(per_cpu, (uint64_t) ncpus, &total))
                return -ERANGE;
        *ret_bw = total;
        return 0;
}

int bw_add(uint64_t a, uint64_t b, uint64_t *ret) {
        uint64_t sum;

        if (__builtin_add_overflow(a, b, &sum))
                return -ERANGE;
        *ret = sum;
        return 0;
}

int bw_sub(uint64_t a, uint64_t b, uint64_t *ret) {
        if (b > a)
                return -ERANGE;
        *ret = a - b;
        return 0;
}

char *bw_format_percent(uint64_t bw, unsigned decimals, BwRound round, char buf[static DURATION_MAX]) {
        uint64_t scale = 1, whole, frac;
        unsigned __int128 v;

        if (bw == UINT64_MAX) {
                snprintf(buf, DURATION_MAX, "unlimited");
                return buf;
        }
        decimals = MIN(decimals, 6u);
        for (unsigned i = 0; i < decimals; i++)
                scale *= 10;
        /* v = bw * 100 * 10^decimals / BW_UNIT, rounded: at most 2^64 * 10^8, well within 128 bits. */
        v = (unsigned __int128) bw * 100 * scale;
        if (round == BW_ROUND_NEAREST)
                v += BW_UNIT / 2;
        else if (round == BW_ROUND_UP)
                v += BW_UNIT - 1;
        v >>= BW_SHIFT;
        whole = (uint64_t) (v / scale);
        frac = (uint64_t) (v % scale);
        while (decimals > 0 && frac % 10 == 0) {
                frac /= 10;
                decimals--;
        }
        if (decimals == 0)
                snprintf(buf, DURATION_MAX, "%" PRIu64 "%%", whole);
        else
                snprintf(buf, DURATION_MAX, "%" PRIu64 ".%0*" PRIu64 "%%", whole, (int) decimals, frac);
        return buf;
}

char *bw_format(uint64_t bw, char buf[static DURATION_MAX]) {
        return bw_format_percent(bw, 1, BW_ROUND_NEAREST, buf);
}

char *bw_format_up(uint64_t bw, char buf[static DURATION_MAX]) {
        return bw_format_percent(bw, 1, BW_ROUND_UP, buf);
}

int bw_cpu_max(uint64_t runtime_ns, uint64_t period_ns, uint64_t *ret_quota_us, uint64_t *ret_period_us) {
        const uint64_t pmin = 1000, pmax = 1000000, qmin = 1000;
        unsigned __int128 q, p;

        if (runtime_ns == 0 || period_ns == 0)
                return -EINVAL;
        p = period_ns / 1000;
        p = p < pmin ? pmin : p > pmax ? pmax : p;
        /* quota = runtime / period * p, in us, rounded to nearest. */
        q = ((unsigned __int128) runtime_ns * p + period_ns / 2) / period_ns;
        if (q < qmin) {
                /* Grow the period until the quota reaches 1 ms: p = qmin * period / runtime. */
                unsigned __int128 np = ((unsigned __int128) qmin * period_ns + runtime_ns - 1) / runtime_ns;
                if (np > pmax)
                        np = pmax;
                p = np;
                q = ((unsigned __int128) runtime_ns * p + period_ns / 2) / period_ns;
                if (q < qmin)
                        q = qmin;
        }
        if (q > UINT64_MAX)
                return -ERANGE;
        *ret_quota_us = (uint64_t) q;
        *ret_period_us = (uint64_t) p;
        return 0;
}
