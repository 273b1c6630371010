/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dl_params_check(): the kernel's __checkparam_dl() rules, one named outcome per violation. */

#include <criterion/criterion.h>
#include <inttypes.h>
#include <string.h>

#include "basic/macro.h"
#include "core/params.h"

#define US NSEC_PER_USEC
#define MS NSEC_PER_MSEC
#define B63 (UINT64_C(1) << 63)
#define PMIN (100 * US)
#define PMAX UINT64_C(4194304000)

typedef struct ParamsCase {
        DlParams in;
        ParamsOutcome o;
        uint64_t deadline;      /* the deadline after PARAMS_OK */
        ParamsOutcome alt;      /* a second acceptable outcome where the kernel's rules leave it open, or o */
} ParamsCase;

#define OK(r, d, p, d_after) { { r, d, p }, PARAMS_OK, d_after, PARAMS_OK }
#define NO(r, d, p, out)     { { r, d, p }, out, 0, out }

static const ParamsCase cases[] = {
        /* good ones */
        OK(10 * MS,         0,                100 * MS,         100 * MS),
        OK(10 * MS,         50 * MS,          100 * MS,         50 * MS),
        OK(1024,            0,                PMIN,             PMIN),
        OK(1024,            1024,             PMIN,             1024),
        OK(PMIN,            PMIN,             PMIN,             PMIN),          /* runtime == deadline == period */
        OK(PMAX,            PMAX,             PMAX,             PMAX),
        OK(PMAX,            0,                PMAX,             PMAX),
        OK(1024,            0,                PMAX,             PMAX),
        OK(100 * MS,        100 * MS,         100 * MS,         100 * MS),

        /* period 0 is refused first, whatever else is wrong */
        NO(10 * MS,         10 * MS,          0,                PARAMS_PERIOD_ZERO),
        NO(0,               0,                0,                PARAMS_PERIOD_ZERO),
        NO(UINT64_MAX,      UINT64_MAX,       0,                PARAMS_PERIOD_ZERO),
        NO(1,               B63,              0,                PARAMS_PERIOD_ZERO),

        /* bit 63 in the deadline or the period */
        NO(10 * MS,         0,                B63,              PARAMS_BIT63),
        NO(10 * MS,         0,                UINT64_MAX,       PARAMS_BIT63),
        NO(10 * MS,         B63,              100 * MS,         PARAMS_BIT63),
        NO(10 * MS,         UINT64_MAX,       UINT64_MAX,       PARAMS_BIT63),
        NO(0,               B63,              B63,              PARAMS_BIT63),  /* before runtime */
        NO(1,               0,                B63 | 1,          PARAMS_BIT63),

        /* runtime below 1024 ns */
        NO(0,               0,                100 * MS,         PARAMS_RUNTIME_TOO_SMALL),
        NO(1,               0,                100 * MS,         PARAMS_RUNTIME_TOO_SMALL),
        NO(1023,            0,                100 * MS,         PARAMS_RUNTIME_TOO_SMALL),
        NO(1023,            200 * MS,         100 * MS,         PARAMS_RUNTIME_TOO_SMALL), /* before the order */
        NO(0,               0,                1,                PARAMS_RUNTIME_TOO_SMALL), /* before the limits */

        /* runtime above deadline (deadline 0 means the period) */
        NO(10 * MS + 1,     10 * MS,          100 * MS,         PARAMS_RUNTIME_ABOVE_DEADLINE),
        NO(100 * MS + 1,    0,                100 * MS,         PARAMS_RUNTIME_ABOVE_DEADLINE),
        NO(2048,            1024,             2 * PMAX,         PARAMS_RUNTIME_ABOVE_DEADLINE), /* before limits */
        NO(300 * MS,        200 * MS,         100 * MS,         PARAMS_RUNTIME_ABOVE_DEADLINE), /* before order */

        /* deadline above period */
        NO(10 * MS,         100 * MS + 1,     100 * MS,         PARAMS_DEADLINE_ABOVE_PERIOD),
        NO(1024,            B63 - 1,          100 * MS,         PARAMS_DEADLINE_ABOVE_PERIOD),
        NO(1024,            2048,             1024,             PARAMS_DEADLINE_ABOVE_PERIOD),  /* before limits */

        /* period limits */
        NO(1024,            0,                PMIN - 1,         PARAMS_PERIOD_TOO_SHORT),
        NO(1024,            1024,             1024,             PARAMS_PERIOD_TOO_SHORT),
        NO(1024,            0,                PMAX + 1,         PARAMS_PERIOD_TOO_LONG),
        NO(10 * MS,         100 * MS,         B63 - 1,          PARAMS_PERIOD_TOO_LONG),
        NO(10 * MS,         0,                10 * 1000 * MS,   PARAMS_PERIOD_TOO_LONG),

        /* runtime with bit 63: the kernel refuses it as runtime > deadline; either name is fair */
        { { B63, 0, 100 * MS }, PARAMS_RUNTIME_ABOVE_DEADLINE, 0, PARAMS_BIT63 },
        { { UINT64_MAX, 0, 100 * MS }, PARAMS_RUNTIME_ABOVE_DEADLINE, 0, PARAMS_BIT63 },
        { { UINT64_MAX, UINT64_MAX, UINT64_MAX }, PARAMS_BIT63, 0, PARAMS_BIT63 },
};

static void check_case(const ParamsCase *c, const DlLimits *limits) {
        DlParams p = c->in;
        ParamsOutcome o;

        o = dl_params_check(&p, limits);
        cr_expect(o == c->o || o == c->alt,
                  "dl_params_check(%" PRIu64 ", %" PRIu64 ", %" PRIu64 ") = %d (%s), expected %d (%s)", c->in.runtime,
                  c->in.deadline, c->in.period, o, params_outcome_to_string(o) ?: "?", c->o,
                  params_outcome_to_string(c->o) ?: "?");
        cr_expect_eq(p.runtime, c->in.runtime, "runtime changed");
        cr_expect_eq(p.period, c->in.period, "period changed");
        if (o == PARAMS_OK)
                cr_expect_eq(p.deadline, c->deadline,
                             "deadline after (%" PRIu64 ", %" PRIu64 ", %" PRIu64 ") = %" PRIu64
                             ", expected %" PRIu64, c->in.runtime, c->in.deadline, c->in.period, p.deadline,
                             c->deadline);
        else
                cr_expect_eq(p.deadline, c->in.deadline, "refused (%" PRIu64 ", %" PRIu64 ", %" PRIu64
                             ") but the deadline was changed to %" PRIu64, c->in.runtime, c->in.deadline,
                             c->in.period, p.deadline);
}

Test(params, table_default_limits) {
        DlLimits limits = DL_LIMITS_DEFAULT;

        cr_assert_eq(limits.period_min, PMIN);
        cr_assert_eq(limits.period_max, PMAX);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                check_case(&cases[i], &limits);
}

Test(params, other_limits) {
        static const ParamsCase narrow[] = {
                OK(1024,        0,        MS,            MS),
                NO(1024,        0,        MS - 1,        PARAMS_PERIOD_TOO_SHORT),
                NO(1024,        0,        MS + 1,        PARAMS_PERIOD_TOO_LONG),
                NO(1024,        0,        100 * MS,      PARAMS_PERIOD_TOO_LONG),
        };
        static const ParamsCase wide[] = {
                OK(1024,        0,        1024,          1024),
                OK(1024,        0,        B63 - 1,       B63 - 1),
                OK(B63 - 1,     B63 - 1,  B63 - 1,       B63 - 1),
                NO(1024,        0,        B63,           PARAMS_BIT63),
                NO(1023,        0,        1024,          PARAMS_RUNTIME_TOO_SMALL),
        };
        DlLimits one = { .period_min = MS, .period_max = MS };
        DlLimits all = { .period_min = 0, .period_max = UINT64_MAX };

        for (size_t i = 0; i < ELEMENTSOF(narrow); i++)
                check_case(&narrow[i], &one);
        for (size_t i = 0; i < ELEMENTSOF(wide); i++)
                check_case(&wide[i], &all);
}

Test(params, outcome_strings) {
        for (int i = 0; i < _PARAMS_MAX; i++) {
                const char *s = params_outcome_to_string(i);

                cr_assert_not_null(s, "no string for outcome %d", i);
                cr_expect_gt(strlen(s), 1, "empty string for outcome %d", i);
                for (int j = 0; j < i; j++)
                        cr_expect_str_neq(s, params_outcome_to_string(j), "outcomes %d and %d share \"%s\"", j, i, s);
        }
        /* the header's own example */
        cr_expect(strstr(params_outcome_to_string(PARAMS_RUNTIME_TOO_SMALL), "1024"),
                  "\"%s\" does not name the minimum", params_outcome_to_string(PARAMS_RUNTIME_TOO_SMALL));
}
