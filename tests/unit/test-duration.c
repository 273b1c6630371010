/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* duration_parse(), percent_parse() and duration_format(), every rule of duration.h. */

#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/duration.h"

#define SENTINEL UINT64_C(0xdeadbeefcafef00d)

/* Whether reason mentions one of the words in the '|'-separated list (case-insensitive). */
static bool mentions(const char *reason, const char *words) {
        char buf[128];

        if (!reason)
                return false;
        snprintf(buf, sizeof buf, "%s", words);
        for (char *save = NULL, *w = strtok_r(buf, "|", &save); w; w = strtok_r(NULL, "|", &save))
                if (strcasestr(reason, w))
                        return true;
        return false;
}

/* Words a reason must contain, by problem. */
#define W_UNIT   "unit"
#define W_SIGN   "sign|negative|minus|plus"
#define W_SPACE  "space|white|blank"
#define W_EMPTY  "empty"
#define W_RANGE  "large|range|fit|64|overflow|big|long"
#define W_FINE   "nanosecond|ns|fine|whole|precision|fraction|decimal"
#define W_NUMBER "number|digit|numeric|decimal|character|unit|invalid"

typedef struct Good {
        const char *s;
        uint64_t ns;
} Good;

typedef struct Bad {
        const char *s;
        int r;
        const char *words;
} Bad;

static const Good duration_good[] = {
        { "100ns",                       100 },
        { "250us",                       250 * NSEC_PER_USEC },
        { "1.5ms",                       1500 * NSEC_PER_USEC },
        { "10ms",                        10 * NSEC_PER_MSEC },
        { "2s",                          2 * NSEC_PER_SEC },
        { "0ns",                         0 },
        { "0s",                          0 },
        { "0.0ms",                       0 },
        { "1ns",                         1 },
        { "1.0ns",                       1 },
        { "1023ns",                      1023 },
        { "1024ns",                      1024 },
        { "1.024us",                     1024 },
        { "1.0010us",                    1001 },
        { "0.000000001s",                1 },
        { "0.0000000010s",               1 },
        { "1.000000000000s",             NSEC_PER_SEC },
        { "0.000001ms",                  1 },
        { "0.001us",                     1 },
        { "1.5s",                        1500 * NSEC_PER_MSEC },
        { "00010ms",                     10 * NSEC_PER_MSEC },
        { "0000000000000000000000000000000000000001ns", 1 },
        { "4194304000ns",                UINT64_C(4194304000) },
        { "18446744073709551615ns",      UINT64_MAX },
        { "18446744073709551.615us",     UINT64_MAX },
        { "18446744073709.551615ms",     UINT64_MAX },
        { "18446744073.709551615s",      UINT64_MAX },
        { "18446744073s",                UINT64_C(18446744073000000000) },
        { "18446744073.7095516s",        UINT64_C(18446744073709551600) },
};

static const Bad duration_bad[] = {
        /* bare numbers */
        { "100",                         -EINVAL, W_UNIT },
        { "0",                           -EINVAL, W_UNIT },
        { "1.5",                         -EINVAL, W_UNIT },
        { "18446744073709551615",        -EINVAL, W_UNIT },
        /* signs */
        { "-1ms",                        -EINVAL, W_SIGN },
        { "+1ms",                        -EINVAL, W_SIGN },
        { "-0ns",                        -EINVAL, W_SIGN },
        /* white space, inside or around */
        { " 1ms",                        -EINVAL, W_SPACE },
        { "1ms ",                        -EINVAL, W_SPACE },
        { "10 ms",                       -EINVAL, W_SPACE },
        { "\t10ms",                      -EINVAL, W_SPACE },
        { "10ms\n",                      -EINVAL, W_SPACE },
        /* empty */
        { "",                            -EINVAL, W_EMPTY },
        /* unknown units */
        { "10mss",                       -EINVAL, W_UNIT },
        { "10m",                         -EINVAL, W_UNIT },
        { "10min",                       -EINVAL, W_UNIT },
        { "1h",                          -EINVAL, W_UNIT },
        { "10%",                         -EINVAL, W_UNIT "|percent" },
        { "10msx",                       -EINVAL, W_UNIT },
        { "10nsms",                      -EINVAL, W_UNIT },
        /* finer than a nanosecond */
        { "1.5ns",                       -EINVAL, W_FINE },
        { "0.5ns",                       -EINVAL, W_FINE },
        { "1.0001us",                    -EINVAL, W_FINE },
        { "0.0000000001s",               -EINVAL, W_FINE },
        { "0.0000001ms",                 -EINVAL, W_FINE },
        /* not a number */
        { "1e3ms",                       -EINVAL, W_NUMBER },
        { "ms",                          -EINVAL, W_NUMBER },
        { "s",                           -EINVAL, W_NUMBER },
        { "1..5ms",                      -EINVAL, W_NUMBER },
        { "1.5.5ms",                     -EINVAL, W_NUMBER },
        { "0x10ms",                      -EINVAL, W_NUMBER },
        { "inf ms",                      -EINVAL, W_NUMBER "|" W_SPACE },
        /* too large for 64 bits */
        { "18446744073709551616ns",      -ERANGE, W_RANGE },
        { "18446744073709552s",          -ERANGE, W_RANGE },
        { "18446744074s",                -ERANGE, W_RANGE },
        { "18446744073.709551616s",      -ERANGE, W_RANGE },
        { "18446744073709.551616ms",     -ERANGE, W_RANGE },
        { "18446744073709551.616us",     -ERANGE, W_RANGE },
        { "1234567890123456789012345678901234567890ns", -ERANGE, W_RANGE },
        { "1234567890123456789012345678901234567890s",  -ERANGE, W_RANGE },
        { "99999999999999999999.5s",     -ERANGE, W_RANGE },
};

Test(duration, parse_good) {
        for (size_t i = 0; i < ELEMENTSOF(duration_good); i++) {
                const Good *c = &duration_good[i];
                uint64_t ns = SENTINEL;
                const char *reason = NULL;
                int r;

                r = duration_parse(c->s, &ns, &reason);
                cr_expect_eq(r, 0, "duration_parse(\"%s\") = %d (%s), expected 0", c->s, r,
                             reason ?: "no reason");
                if (r == 0)
                        cr_expect_eq(ns, c->ns, "duration_parse(\"%s\") gave %" PRIu64 ", expected %" PRIu64,
                                     c->s, ns, c->ns);
        }
}

Test(duration, parse_bad) {
        for (size_t i = 0; i < ELEMENTSOF(duration_bad); i++) {
                const Bad *c = &duration_bad[i];
                uint64_t ns = SENTINEL;
                const char *reason = NULL;
                int r;

                r = duration_parse(c->s, &ns, &reason);
                cr_expect_eq(r, c->r, "duration_parse(\"%s\") = %d, expected %d", c->s, r, c->r);
                cr_expect_eq(ns, SENTINEL, "duration_parse(\"%s\") wrote its result on failure", c->s);
                if (r < 0) {
                        cr_expect_not_null(reason, "duration_parse(\"%s\") gave no reason", c->s);
                        if (reason)
                                cr_expect_gt(strlen(reason), 5, "duration_parse(\"%s\"): reason too short: \"%s\"",
                                             c->s, reason);
                }
        }
}

/* The reason names the problem. */
Test(duration, parse_bad_reasons) {
        for (size_t i = 0; i < ELEMENTSOF(duration_bad); i++) {
                const Bad *c = &duration_bad[i];
                const char *reason = NULL;
                uint64_t ns;

                if (duration_parse(c->s, &ns, &reason) < 0)
                        cr_expect(mentions(reason, c->words),
                                  "duration_parse(\"%s\"): reason \"%s\" mentions none of %s", c->s, reason ?: "(null)",
                                  c->words);
        }
}

/* The header: a bare number, a sign, white space, an unknown unit, an empty string and a value
 * that does not fit are refused "each with its own reason". */
Test(duration, distinct_reasons) {
        static const char *const inputs[] = { "100", "-1ms", "10 ms", "10mss", "", "18446744073709551616ns" };
        const char *reasons[ELEMENTSOF(inputs)];

        for (size_t i = 0; i < ELEMENTSOF(inputs); i++) {
                uint64_t ns;

                reasons[i] = NULL;
                cr_assert_lt(duration_parse(inputs[i], &ns, &reasons[i]), 0, "\"%s\" parsed", inputs[i]);
                cr_assert_not_null(reasons[i], "\"%s\" has no reason", inputs[i]);
        }
        for (size_t i = 0; i < ELEMENTSOF(inputs); i++)
                for (size_t j = i + 1; j < ELEMENTSOF(inputs); j++)
                        cr_expect_str_neq(reasons[i], reasons[j], "\"%s\" and \"%s\" share the reason \"%s\"",
                                          inputs[i], inputs[j], reasons[i]);
}

typedef struct Fmt {
        uint64_t ns;
        const char *s;
} Fmt;

static const Fmt formats[] = {
        { 1,                                 "1ns" },
        { 7,                                 "7ns" },
        { 999,                               "999ns" },
        { 1000,                              "1us" },
        { 1001,                              "1.001us" },
        { 1023,                              "1.023us" },
        { 1024,                              "1.024us" },
        { 1500,                              "1.5us" },
        { 10000,                             "10us" },
        { 250 * NSEC_PER_USEC,               "250us" },
        { NSEC_PER_MSEC,                     "1ms" },
        { 1234567,                           "1234.567us" },
        { 1500 * NSEC_PER_USEC,              "1.5ms" },
        { 1050 * NSEC_PER_USEC,              "1.05ms" },
        { 10 * NSEC_PER_MSEC,                "10ms" },
        { 100 * NSEC_PER_MSEC,               "100ms" },
        { 999 * NSEC_PER_MSEC,               "999ms" },
        { NSEC_PER_SEC,                      "1s" },
        { 1500 * NSEC_PER_MSEC,              "1.5s" },
        { 1001 * NSEC_PER_MSEC,              "1.001s" },
        { 1000500 * NSEC_PER_USEC,           "1000.5ms" },
        { 2 * NSEC_PER_SEC,                  "2s" },
        { 60 * NSEC_PER_SEC,                 "60s" },
        { 3600 * NSEC_PER_SEC,               "3600s" },
        { UINT64_C(4194304000),              "4194.304ms" },
        { UINT64_C(18446744073709551000),    "18446744073709.551ms" },
        { UINT64_C(18446744073000000000),    "18446744073s" },
        { UINT64_MAX,                        "18446744073709551.615us" },
        { UINT64_MAX - 5,                    "18446744073709551.61us" },
        { UINT64_C(18446744073709551615) / 1000 * 1000 + 999 - 1000, "18446744073709550.999us" },
};

Test(duration, format) {
        for (size_t i = 0; i < ELEMENTSOF(formats); i++) {
                char buf[DURATION_MAX];
                char *p;

                memset(buf, 'x', sizeof buf);
                p = duration_format(formats[i].ns, buf);
                cr_expect_eq(p, buf, "duration_format() must return buf");
                cr_expect_str_eq(buf, formats[i].s, "duration_format(%" PRIu64 ") = \"%s\", expected \"%s\"",
                                 formats[i].ns, buf, formats[i].s);
        }
}

Test(duration, format_zero) {
        char buf[DURATION_MAX];
        uint64_t ns = SENTINEL;
        const char *reason = NULL;

        duration_format(0, buf);
        cr_expect_eq(buf[0], '0', "duration_format(0) = \"%s\"", buf);
        cr_expect_eq(duration_parse(buf, &ns, &reason), 0, "duration_format(0) = \"%s\" does not parse: %s", buf,
                     reason ?: "");
        cr_expect_eq(ns, 0);
}

static uint64_t lcg(uint64_t *s) {
        *s = *s * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
        return *s;
}

static void expect_round_trip(uint64_t ns) {
        char buf[DURATION_MAX + 8];
        uint64_t back = SENTINEL;
        const char *reason = NULL;
        int r;

        memset(buf, 0, sizeof buf);
        duration_format(ns, buf);
        cr_assert_lt(strlen(buf), DURATION_MAX, "duration_format(%" PRIu64 ") is too long", ns);
        r = duration_parse(buf, &back, &reason);
        cr_assert_eq(r, 0, "duration_format(%" PRIu64 ") = \"%s\" does not parse: %s", ns, buf, reason ?: "");
        cr_assert_eq(back, ns, "\"%s\" parses back as %" PRIu64 ", not %" PRIu64, buf, back, ns);
}

Test(duration, round_trip) {
        static const uint64_t edges[] = {
                0, 1, 7, 999, 1000, 1001, 1023, 1024, 1500, 999999, 1000000, 1000001, 1500000, 10000000,
                NSEC_PER_SEC - 1, NSEC_PER_SEC, NSEC_PER_SEC + 1, 2 * NSEC_PER_SEC, UINT64_C(4194304000),
                UINT32_MAX, (uint64_t) UINT32_MAX + 1, UINT64_MAX >> 20, UINT64_MAX / 2, UINT64_MAX - 1, UINT64_MAX,
                UINT64_C(18446744073709551000), UINT64_C(18446744073709000000), UINT64_C(18446744073000000000),
        };
        uint64_t seed = 42;

        for (size_t i = 0; i < ELEMENTSOF(edges); i++)
                expect_round_trip(edges[i]);
        for (unsigned i = 0; i < 20000; i++) {
                uint64_t x = lcg(&seed);

                /* all magnitudes, and values that are round in some unit */
                x >>= x % 64;
                expect_round_trip(x);
                expect_round_trip(x / 1000 * 1000);
                expect_round_trip(x / 1000000 * 1000000);
                if (x < UINT64_MAX / 1000)
                        expect_round_trip(x * 1000);
        }
}

static const Good percent_good[] = {
        { "20%",                         20 * NSEC_PER_MSEC },
        { "12.5%",                       12500 * NSEC_PER_USEC },
        { "150%",                        150 * NSEC_PER_MSEC },
        { "100%",                        PERCENT_PERIOD_NS },
        { "0%",                          0 },
        { "0.0%",                        0 },
        { "1%",                          NSEC_PER_MSEC },
        { "0.5%",                        500 * NSEC_PER_USEC },
        { "0.000001%",                   1 },
        { "0.0000010%",                  1 },
        { "12.345678%",                  12345678 },
        { "18446744073709%",             UINT64_C(18446744073709000000) },
        { "18446744073709.551615%",      UINT64_MAX },
};

static const Bad percent_bad[] = {
        { "0.0000001%",                  -EINVAL, W_FINE },
        { "12.3456789%",                 -EINVAL, W_FINE },
        { "20",                          -EINVAL, "%|percent|sign|unit" },
        { "20ms",                        -EINVAL, "%|percent|sign|unit" },
        { "%",                           -EINVAL, W_NUMBER "|" W_EMPTY "|missing" },
        { "",                            -EINVAL, W_EMPTY },
        { "-5%",                         -EINVAL, W_SIGN },
        { "+5%",                         -EINVAL, W_SIGN },
        { "20 %",                        -EINVAL, W_SPACE },
        { " 20%",                        -EINVAL, W_SPACE },
        { "20% ",                        -EINVAL, W_SPACE },
        { "20%%",                        -EINVAL, "%|percent|unit|character|trailing|invalid" },
        { "5%x",                         -EINVAL, "%|percent|unit|character|trailing|invalid" },
        { "1e2%",                        -EINVAL, W_NUMBER "|percent" },
        { "18446744073710%",             -ERANGE, W_RANGE },
        { "18446744073709.551616%",      -ERANGE, W_RANGE },
        { "1234567890123456789012345678901234567890%", -ERANGE, W_RANGE },
};

Test(percent, parse_good) {
        for (size_t i = 0; i < ELEMENTSOF(percent_good); i++) {
                const Good *c = &percent_good[i];
                uint64_t ns = SENTINEL;
                const char *reason = NULL;
                int r;

                r = percent_parse(c->s, &ns, &reason);
                cr_expect_eq(r, 0, "percent_parse(\"%s\") = %d (%s), expected 0", c->s, r, reason ?: "no reason");
                if (r == 0)
                        cr_expect_eq(ns, c->ns, "percent_parse(\"%s\") gave %" PRIu64 ", expected %" PRIu64, c->s,
                                     ns, c->ns);
        }
}

Test(percent, parse_bad) {
        for (size_t i = 0; i < ELEMENTSOF(percent_bad); i++) {
                const Bad *c = &percent_bad[i];
                uint64_t ns = SENTINEL;
                const char *reason = NULL;
                int r;

                r = percent_parse(c->s, &ns, &reason);
                cr_expect_eq(r, c->r, "percent_parse(\"%s\") = %d, expected %d", c->s, r, c->r);
                cr_expect_eq(ns, SENTINEL, "percent_parse(\"%s\") wrote its result on failure", c->s);
                if (r < 0)
                        cr_expect_not_null(reason, "percent_parse(\"%s\") gave no reason", c->s);
        }
}

Test(percent, parse_bad_reasons) {
        for (size_t i = 0; i < ELEMENTSOF(percent_bad); i++) {
                const Bad *c = &percent_bad[i];
                const char *reason = NULL;
                uint64_t ns;

                if (percent_parse(c->s, &ns, &reason) < 0)
                        cr_expect(mentions(reason, c->words),
                                  "percent_parse(\"%s\"): reason \"%s\" mentions none of %s", c->s,
                                  reason ?: "(null)", c->words);
        }
}

/* Every percentage with up to 6 decimals is a whole number of ns over 100 ms: n millionths of a
 * percent are exactly n ns. */
Test(percent, millionths) {
        uint64_t seed = 7;

        for (unsigned i = 0; i < 20000; i++) {
                uint64_t n = lcg(&seed) >> (lcg(&seed) % 64), ns = SENTINEL;
                const char *reason = NULL;
                char s[64];

                snprintf(s, sizeof s, "%" PRIu64 ".%06" PRIu64 "%%", n / 1000000, n % 1000000);
                cr_assert_eq(percent_parse(s, &ns, &reason), 0, "percent_parse(\"%s\"): %s", s, reason ?: "");
                cr_assert_eq(ns, n, "percent_parse(\"%s\") = %" PRIu64 ", expected %" PRIu64, s, ns, n);
        }
}
