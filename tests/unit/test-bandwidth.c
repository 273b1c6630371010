/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bw_of(), bw_kernel_capacity(), bw_add(), bw_sub(), bw_format_percent(): the kernel's fixed point,
 * exactly. */

#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/bandwidth.h"
#include "core/duration.h"

#define SENTINEL UINT64_C(0xdeadbeefcafef00d)
#define MS NSEC_PER_MSEC

/* The kernel's to_ratio() body, in 128 bits so that it can say when the shift would not fit. */
static int ref_bw(uint64_t runtime, uint64_t period, uint64_t *ret) {
        unsigned __int128 x;

        if (period == 0)
                return -EINVAL;
        if (runtime > (UINT64_MAX >> BW_SHIFT))
                return -ERANGE;
        x = ((unsigned __int128) runtime << BW_SHIFT) / period;
        *ret = (uint64_t) x;
        return 0;
}

typedef struct BwCase {
        uint64_t runtime, period;
        int r;
        uint64_t bw;
} BwCase;

static const BwCase bw_cases[] = {
        { 10 * MS,                   100 * MS,       0,       104857 },
        { 15 * MS,                   100 * MS,       0,       157286 },
        { 40 * MS,                   100 * MS,       0,       419430 },
        { 100 * MS,                  100 * MS,       0,       BW_UNIT },
        { 1,                         1,              0,       BW_UNIT },
        { UINT64_MAX >> 20,          UINT64_MAX >> 20, 0,     BW_UNIT },
        { 150 * MS,                  100 * MS,       0,       3 * BW_UNIT / 2 },
        { 0,                         1,              0,       0 },
        { 0,                         UINT64_MAX,     0,       0 },
        { 1,                         UINT64_MAX,     0,       0 },
        { 1024,                      UINT64_C(4194304000), 0, 0 },   /* rounds to zero (docs/design.md) */
        { 1,                         BW_UNIT,        0,       1 },
        { 1,                         BW_UNIT + 1,    0,       0 },
        { 950000,                    1000000,        0,       996147 },
        { UINT64_MAX >> 20,          1,              0,       (UINT64_MAX >> 20) << 20 },
        { (UINT64_MAX >> 20) + 1,    1,              -ERANGE, 0 },
        { UINT64_MAX,                UINT64_MAX,     -ERANGE, 0 },
        { UINT64_MAX,                1,              -ERANGE, 0 },
        { 0,                         0,              -EINVAL, 0 },
        { 10 * MS,                   0,              -EINVAL, 0 },
};

Test(bandwidth, bw_of_table) {
        for (size_t i = 0; i < ELEMENTSOF(bw_cases); i++) {
                const BwCase *c = &bw_cases[i];
                uint64_t bw = SENTINEL;
                int r;

                r = bw_of(c->runtime, c->period, &bw);
                cr_expect_eq(r, c->r, "bw_of(%" PRIu64 ", %" PRIu64 ") = %d, expected %d", c->runtime, c->period,
                             r, c->r);
                if (c->r == 0)
                        cr_expect_eq(bw, c->bw, "bw_of(%" PRIu64 ", %" PRIu64 ") = %" PRIu64 ", expected %" PRIu64,
                                     c->runtime, c->period, bw, c->bw);
                else
                        cr_expect_eq(bw, SENTINEL, "bw_of(%" PRIu64 ", %" PRIu64 ") wrote on failure", c->runtime,
                                     c->period);
        }
}

static uint64_t lcg(uint64_t *s) {
        *s = *s * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
        return *s >> 11 | *s << 53;
}

/* Against the kernel's formula, over every magnitude. */
Test(bandwidth, bw_of_random) {
        uint64_t seed = 1;

        for (unsigned i = 0; i < 200000; i++) {
                uint64_t runtime = lcg(&seed) >> (lcg(&seed) % 64);
                uint64_t period = lcg(&seed) >> (lcg(&seed) % 64);
                uint64_t want = SENTINEL, got = SENTINEL;
                int rw, rg;

                rw = ref_bw(runtime, period, &want);
                rg = bw_of(runtime, period, &got);
                cr_assert_eq(rg, rw, "bw_of(%" PRIu64 ", %" PRIu64 ") = %d, expected %d", runtime, period, rg, rw);
                cr_assert_eq(got, want, "bw_of(%" PRIu64 ", %" PRIu64 ") = %" PRIu64 ", expected %" PRIu64, runtime,
                             period, got, want);
        }
}

/* The header's promise: parts that add up to the whole on paper fit in the whole. */
Test(bandwidth, rounded_parts_fit) {
        uint64_t whole, a, b, c;

        cr_assert_eq(bw_of(40 * MS, 100 * MS, &whole), 0);
        cr_assert_eq(bw_of(10 * MS, 100 * MS, &a), 0);
        cr_assert_eq(bw_of(15 * MS, 100 * MS, &b), 0);
        cr_assert_eq(bw_of(15 * MS, 100 * MS, &c), 0);
        cr_expect_leq(a + b + c, whole, "10%% + 15%% + 15%% = %" PRIu64 " > 40%% = %" PRIu64, a + b + c, whole);
}

typedef struct CapCase {
        unsigned ncpus;
        int64_t rt_runtime;
        uint64_t rt_period;
        int r;
        uint64_t bw;
} CapCase;

static const CapCase cap_cases[] = {
        { 2,        950000,          1000000,  0,       2 * 996147 },
        { 1,        950000,          1000000,  0,       996147 },
        { 0,        950000,          1000000,  0,       0 },
        { 1,        1000000,         1000000,  0,       BW_UNIT },
        { 2,        1000000,         1000000,  0,       2 * BW_UNIT },
        { 1,        0,               1000000,  0,       0 },
        { 2,        -1,              1000000,  0,       UINT64_MAX },
        { 1,        INT64_MIN,       1000000,  0,       UINT64_MAX },
        { 2,        950000,          0,        -EINVAL, 0 },
        { 1,        INT64_MAX,       1,        -ERANGE, 0 },
        { 1,        INT64_C(1) << 33, 1,       0,       UINT64_C(1) << 53 },
        { 2047,     INT64_C(1) << 33, 1,       0,       UINT64_C(2047) << 53 },
        { 2048,     INT64_C(1) << 33, 1,       -ERANGE, 0 },
        { UINT_MAX, INT64_C(1) << 33, 1,       -ERANGE, 0 },
        { UINT_MAX, 950000,          1000000,  0,       (uint64_t) UINT_MAX * 996147 },
};

Test(bandwidth, kernel_capacity) {
        for (size_t i = 0; i < ELEMENTSOF(cap_cases); i++) {
                const CapCase *c = &cap_cases[i];
                uint64_t bw = SENTINEL;
                int r;

                r = bw_kernel_capacity(c->ncpus, c->rt_runtime, c->rt_period, &bw);
                cr_expect_eq(r, c->r, "bw_kernel_capacity(%u, %" PRIi64 ", %" PRIu64 ") = %d, expected %d", c->ncpus,
                             c->rt_runtime, c->rt_period, r, c->r);
                if (c->r == 0)
                        cr_expect_eq(bw, c->bw,
                                     "bw_kernel_capacity(%u, %" PRIi64 ", %" PRIu64 ") = %" PRIu64
                                     ", expected %" PRIu64,
                                     c->ncpus, c->rt_runtime, c->rt_period, bw, c->bw);
                else
                        cr_expect_eq(bw, SENTINEL, "bw_kernel_capacity(%u, %" PRIi64 ", %" PRIu64 ") wrote on failure",
                                     c->ncpus, c->rt_runtime, c->rt_period);
        }
}

typedef struct ArithCase {
        uint64_t a, b;
        int r_add;
        uint64_t add;
        int r_sub;
        uint64_t sub;
} ArithCase;

static const ArithCase arith_cases[] = {
        { 0,              0,              0,       0,              0,       0 },
        { 1,              0,              0,       1,              0,       1 },
        { 0,              1,              0,       1,              -ERANGE, 0 },
        { 1024,           1023,           0,       2047,           0,       1 },
        { 1023,           1024,           0,       2047,           -ERANGE, 0 },
        { BW_UNIT,        BW_UNIT,        0,       2 * BW_UNIT,    0,       0 },
        { UINT64_MAX,     0,              0,       UINT64_MAX,     0,       UINT64_MAX },
        { UINT64_MAX,     1,              -ERANGE, 0,              0,       UINT64_MAX - 1 },
        { 1,              UINT64_MAX,     -ERANGE, 0,              -ERANGE, 0 },
        { UINT64_MAX,     UINT64_MAX,     -ERANGE, 0,              0,       0 },
        { UINT64_MAX / 2, UINT64_MAX / 2 + 1, 0,   UINT64_MAX,     -ERANGE, 0 },
        { UINT64_MAX / 2 + 1, UINT64_MAX / 2 + 1, -ERANGE, 0,      0,       0 },
};

Test(bandwidth, add_sub) {
        for (size_t i = 0; i < ELEMENTSOF(arith_cases); i++) {
                const ArithCase *c = &arith_cases[i];
                uint64_t x = SENTINEL, y = SENTINEL;

                cr_expect_eq(bw_add(c->a, c->b, &x), c->r_add, "bw_add(%" PRIu64 ", %" PRIu64 ")", c->a, c->b);
                cr_expect_eq(x, c->r_add == 0 ? c->add : SENTINEL, "bw_add(%" PRIu64 ", %" PRIu64 ") = %" PRIu64,
                             c->a, c->b, x);
                cr_expect_eq(bw_sub(c->a, c->b, &y), c->r_sub, "bw_sub(%" PRIu64 ", %" PRIu64 ")", c->a, c->b);
                cr_expect_eq(y, c->r_sub == 0 ? c->sub : SENTINEL, "bw_sub(%" PRIu64 ", %" PRIu64 ") = %" PRIu64,
                             c->a, c->b, y);
        }
}

typedef struct FmtCase {
        uint64_t bw;
        const char *s;
} FmtCase;

static const FmtCase fmt_cases[] = {
        { 0,                  "0%" },
        { 1,                  "0%" },
        { BW_UNIT / 1000 - 524, "0%" },           /* 0.04998..% rounds down */
        { BW_UNIT / 1000,     "0.1%" },           /* 0.0999..% rounds to nearest */
        { BW_UNIT / 1000 + 1, "0.1%" },
        { BW_UNIT / 8,        "12.5%" },
        { BW_UNIT / 4,        "25%" },
        { BW_UNIT / 2,        "50%" },
        { BW_UNIT - 1,        "100%" },
        { BW_UNIT - 1049,     "99.9%" },
        { BW_UNIT,            "100%" },
        { BW_UNIT + 1,        "100%" },
        { 3 * BW_UNIT / 2,    "150%" },
        { 2 * BW_UNIT,        "200%" },
        { 104857,             "10%" },            /* bw_of(10ms, 100ms) = 9.99999%: to the nearest tenth */
        { 62914,              "6%" },             /* bw_of(6ms, 100ms) = 5.99995% */
        { 2 * 996147,         "190%" },
        { UINT64_MAX - 1,     "1759218604441600%" },
        { UINT64_MAX,         "unlimited" },          /* what bw_kernel_capacity() returns for "off" */
};

Test(bandwidth, format) {
        for (size_t i = 0; i < ELEMENTSOF(fmt_cases); i++) {
                char buf[DURATION_MAX];
                char *p;

                memset(buf, 'x', sizeof buf);
                p = bw_format(fmt_cases[i].bw, buf);
                cr_expect_eq(p, buf, "bw_format() must return buf");
                cr_expect_str_eq(buf, fmt_cases[i].s, "bw_format(%" PRIu64 ") = \"%s\", expected \"%s\"",
                                 fmt_cases[i].bw, buf, fmt_cases[i].s);
        }
}

/* The one-decimal percentage, rounded to nearest or up, as bw_format() and bw_format_up() print it
 * (before bw_format_percent() they had a formatter of their own; this is its formula). */
static void ref_tenths(uint64_t bw, bool up, char want[static DURATION_MAX]) {
        uint64_t tenths = (uint64_t) (((unsigned __int128) bw * 1000 + (up ? BW_UNIT - 1 : BW_UNIT / 2)) >> BW_SHIFT);

        if (tenths % 10 == 0)
                snprintf(want, DURATION_MAX, "%" PRIu64 "%%", tenths / 10);
        else
                snprintf(want, DURATION_MAX, "%" PRIu64 ".%" PRIu64 "%%", tenths / 10, tenths % 10);
}

/* bw_format() of every bandwidth is the one-decimal percentage rounded to nearest, bw_format_up()
 * the same rounded up. */
Test(bandwidth, format_random) {
        uint64_t seed = 3;

        for (unsigned i = 0; i < 100000; i++) {
                uint64_t bw = MIN(lcg(&seed) >> (lcg(&seed) % 64), UINT64_MAX - 1);
                char want[DURATION_MAX], buf[DURATION_MAX];

                ref_tenths(bw, false, want);
                bw_format(bw, buf);
                cr_assert_str_eq(buf, want, "bw_format(%" PRIu64 ") = \"%s\", expected \"%s\"", bw, buf, want);
                ref_tenths(bw, true, want);
                bw_format_up(bw, buf);
                cr_assert_str_eq(buf, want, "bw_format_up(%" PRIu64 ") = \"%s\", expected \"%s\"", bw, buf, want);
        }
}

typedef struct PercentCase {
        uint64_t bw;
        unsigned decimals;
        BwRound round;
        const char *s;
} PercentCase;

static const PercentCase percent_cases[] = {
        { 0,                 0, BW_ROUND_UP,      "0%" },
        { 0,                 4, BW_ROUND_NEAREST, "0%" },
        { 1,                 1, BW_ROUND_DOWN,    "0%" },
        { 1,                 1, BW_ROUND_NEAREST, "0%" },
        { 1,                 1, BW_ROUND_UP,      "0.1%" },       /* the least above nothing */
        { 1,                 6, BW_ROUND_UP,      "0.000096%" },  /* 100 / 2^20 = 0.0000953...% */
        { 1,                 9, BW_ROUND_UP,      "0.000096%" },  /* more than 6 decimals count as 6 */
        { 1023,              2, BW_ROUND_NEAREST, "0.1%" },       /* 0.09756%: the trailing 0 goes */
        { 1024,              3, BW_ROUND_DOWN,    "0.097%" },
        { 62914,             1, BW_ROUND_DOWN,    "5.9%" },       /* 5.99995% */
        { 62914,             1, BW_ROUND_NEAREST, "6%" },
        { 62914,             3, BW_ROUND_DOWN,    "5.999%" },
        { 62914,             4, BW_ROUND_NEAREST, "5.9999%" },
        { 62914,             5, BW_ROUND_NEAREST, "5.99995%" },
        { 209715,            1, BW_ROUND_DOWN,    "19.9%" },      /* 20ms/100ms: 19.99998% */
        { 209715,            1, BW_ROUND_UP,      "20%" },
        { 209715,            0, BW_ROUND_DOWN,    "19%" },
        { BW_UNIT / 8,       0, BW_ROUND_NEAREST, "13%" },        /* 12.5 rounds half up */
        { BW_UNIT / 8,       0, BW_ROUND_DOWN,    "12%" },
        { BW_UNIT / 8,       3, BW_ROUND_UP,      "12.5%" },      /* exact: nothing to round */
        { BW_UNIT,           4, BW_ROUND_UP,      "100%" },
        { BW_UNIT + 1,       1, BW_ROUND_UP,      "100.1%" },
        { UINT64_MAX - 1,    1, BW_ROUND_NEAREST, "1759218604441600%" },
        { UINT64_MAX - 1,    6, BW_ROUND_UP,      "1759218604441599.99981%" },
        { UINT64_MAX - 1,    6, BW_ROUND_DOWN,    "1759218604441599.999809%" },
        { UINT64_MAX,        2, BW_ROUND_DOWN,    "unlimited" },
};

Test(bandwidth, format_percent) {
        for (size_t i = 0; i < ELEMENTSOF(percent_cases); i++) {
                const PercentCase *c = &percent_cases[i];
                char buf[DURATION_MAX];

                memset(buf, 'x', sizeof buf);
                cr_expect_eq(bw_format_percent(c->bw, c->decimals, c->round, buf), buf);
                cr_expect_str_eq(buf, c->s, "bw_format_percent(%" PRIu64 ", %u, %d) = \"%s\", expected \"%s\"", c->bw,
                                 c->decimals, (int) c->round, buf, c->s);
        }
}

/* bw_format_percent() with 1 to 4 decimals rounded to nearest against the configuration check's
 * pct_format() it replaced, so that every message stays byte for byte what it was. */
Test(bandwidth, format_percent_random) {
        uint64_t seed = 7;

        for (unsigned i = 0; i < 100000; i++) {
                uint64_t bw = MIN(lcg(&seed) >> (lcg(&seed) % 64), UINT64_MAX - 1);
                char want[DURATION_MAX], buf[DURATION_MAX];

                for (unsigned d = 1; d <= 4; d++) {
                        unsigned __int128 scale = 1, v;
                        char frac[16];
                        size_t l;

                        for (unsigned k = 0; k < d; k++)
                                scale *= 10;
                        v = ((unsigned __int128) bw * 100 * scale + BW_UNIT / 2) >> BW_SHIFT;
                        if (v % scale == 0)
                                snprintf(want, sizeof want, "%" PRIu64 "%%", (uint64_t) (v / scale));
                        else {
                                snprintf(frac, sizeof frac, "%0*" PRIu64, (int) d, (uint64_t) (v % scale));
                                for (l = strlen(frac); l > 0 && frac[l - 1] == '0'; l--)
                                        frac[l - 1] = '\0';
                                snprintf(want, sizeof want, "%" PRIu64 ".%s%%", (uint64_t) (v / scale), frac);
                        }
                        bw_format_percent(bw, d, BW_ROUND_NEAREST, buf);
                        cr_assert_str_eq(buf, want, "bw_format_percent(%" PRIu64 ", %u) = \"%s\", expected \"%s\"", bw,
                                         d, buf, want);
                }
        }
}

typedef struct CpuMaxCase {
        uint64_t runtime, period;
        int r;
        uint64_t quota_us, period_us;
} CpuMaxCase;

static const CpuMaxCase cpu_max_cases[] = {
        { 10 * MS,              100 * MS,             0,       10000,   100000 },
        { 150 * MS,             100 * MS,             0,       150000,  100000 },   /* a group above one CPU */
        { 100 * MS,             100 * MS,             0,       100000,  100000 },
        { 20 * MS,              10 * NSEC_PER_SEC,    0,       2000,    1000000 },  /* 10 s becomes 1 s */
        { 1 * MS,               NSEC_PER_SEC,         0,       1000,    1000000 },
        { 1 * MS,               1 * MS,               0,       1000,    1000 },
        { 400 * NSEC_PER_USEC,  500 * NSEC_PER_USEC,  0,       1000,    1250 },     /* 500 us: 1 ms quota, same ratio */
        { 1000,                 NSEC_PER_SEC,         0,       1000,    1000000 },  /* too small: 1 ms per 1 s */
        { 1,                    UINT64_MAX,           0,       1000,    1000000 },
        { 0,                    100 * MS,             -EINVAL, 0,       0 },
        { 10 * MS,              0,                    -EINVAL, 0,       0 },
        { 0,                    0,                    -EINVAL, 0,       0 },
};

Test(bandwidth, cpu_max_table) {
        for (size_t i = 0; i < ELEMENTSOF(cpu_max_cases); i++) {
                const CpuMaxCase *c = &cpu_max_cases[i];
                uint64_t q = SENTINEL, p = SENTINEL;
                int r;

                r = bw_cpu_max(c->runtime, c->period, &q, &p);
                cr_expect_eq(r, c->r, "bw_cpu_max(%" PRIu64 ", %" PRIu64 ") = %d", c->runtime, c->period, r);
                if (c->r == 0) {
                        cr_expect_eq(q, c->quota_us, "bw_cpu_max(%" PRIu64 ", %" PRIu64 "): quota %" PRIu64
                                     ", expected %" PRIu64, c->runtime, c->period, q, c->quota_us);
                        cr_expect_eq(p, c->period_us, "bw_cpu_max(%" PRIu64 ", %" PRIu64 "): period %" PRIu64
                                     ", expected %" PRIu64, c->runtime, c->period, p, c->period_us);
                } else
                        cr_expect(q == SENTINEL && p == SENTINEL, "bw_cpu_max() wrote on failure");
        }
}

/* Whatever the input: a period the kernel takes (1 ms .. 1 s), a quota of at least 1 ms, and the
 * group's ratio kept to within half a microsecond of quota, unless the 1 ms floor lifts it. */
Test(bandwidth, cpu_max_random) {
        uint64_t seed = 11;

        for (unsigned i = 0; i < 100000; i++) {
                uint64_t runtime = lcg(&seed) >> (lcg(&seed) % 64);
                uint64_t period = lcg(&seed) >> (lcg(&seed) % 64);
                uint64_t q = SENTINEL, p = SENTINEL;
                unsigned __int128 want2, got2;
                int r;

                runtime = MAX(runtime, 1);
                period = MAX(period, 1);
                if (runtime > period * (uint64_t) 64 && period < UINT64_MAX / 64)
                        runtime = period * (1 + runtime % 64); /* groups of up to 64 CPUs */
                r = bw_cpu_max(runtime, period, &q, &p);
                if (r == -ERANGE)
                        continue;
                cr_assert_eq(r, 0, "bw_cpu_max(%" PRIu64 ", %" PRIu64 ") = %d", runtime, period, r);
                cr_assert(p >= 1000 && p <= 1000000, "bw_cpu_max(%" PRIu64 ", %" PRIu64 "): period %" PRIu64 " us",
                          runtime, period, p);
                cr_assert_geq(q, 1000, "bw_cpu_max(%" PRIu64 ", %" PRIu64 "): quota %" PRIu64 " us", runtime, period,
                              q);
                if (q == 1000)
                        continue;
                /* |q / p - runtime / period| <= 1 / (2 p)  <=>  |2 q period - 2 runtime p| <= period */
                got2 = (unsigned __int128) 2 * q * period;
                want2 = (unsigned __int128) 2 * runtime * p;
                cr_assert((got2 > want2 ? got2 - want2 : want2 - got2) <= period,
                          "bw_cpu_max(%" PRIu64 ", %" PRIu64 ") = %" PRIu64 "/%" PRIu64 " loses the ratio", runtime,
                          period, q, p);
        }
}
