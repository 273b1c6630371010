/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* edf_check(): the exact uniprocessor EDF test, against the cases the kernel's documentation and
 * the literature name, and against a brute-force check on random task sets near the boundary.
 *
 * The brute force is written from the definition alone: with U <= 1 (checked exactly as
 * sum C * (H / T) <= H over the hyperperiod H), a synchronous release of constrained-deadline
 * sporadic tasks meets every deadline iff the processor demand h(d) <= d at every absolute deadline
 * d up to H + D_max; the kernel's cap is the sum of bw_of(C, T). Periods come from a small set so
 * that H stays bounded; utilizations are drawn around 1 so that both answers are frequent. */

#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "basic/macro.h"
#include "core/bandwidth.h"
#include "core/edf.h"

#define MS NSEC_PER_MSEC
#define US NSEC_PER_USEC
#define T3(c, d, p) ((DlParams) { .runtime = (c), .deadline = (d), .period = (p) })
#define NO_SUPPLY_LIMITS ((EdfSupply) { .cap_bw = UINT64_MAX })

static uint64_t rng_state = UINT64_C(0x9e3779b97f4a7c15);

static uint64_t rnd(void) { /* xorshift64*, fixed seed: the same sets every run */
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * UINT64_C(2685821657736338717);
}

static uint64_t rnd_in(uint64_t lo, uint64_t hi) { /* [lo, hi] */
        return lo + rnd() % (hi - lo + 1);
}

static EdfSupply kernel_supply(void) { /* this host's CPU: a 95% cap less a 50 ms / 1 s fair server */
        DlParams server = EDF_FAIR_SERVER_DEFAULT;
        EdfSupply s;

        cr_assert_eq(edf_supply_from_kernel(950000, 1000000, &server, &s), 0);
        return s;
}

static bool check(const DlParams *t, size_t n, const EdfSupply *s, EdfVerdict *v) {
        cr_assert_eq(edf_check(t, n, NULL, 0, s, v), 0);
        return v->schedulable;
}

Test(edf, sched_deadline_rst_example) {
        /* Documentation/scheduler/sched-deadline.rst: (50, 50, 100) and (10, 100, 100) are
         * schedulable on one CPU though their density is 1.1; QPA has to say so. */
        DlParams set[] = { T3(50 * MS, 50 * MS, 100 * MS), T3(10 * MS, 100 * MS, 100 * MS) };
        EdfSupply none = NO_SUPPLY_LIMITS, host = kernel_supply();
        EdfVerdict v;

        cr_assert(check(set, 2, &none, &v));
        cr_assert_eq(v.test, EDF_TEST_DEMAND);
        cr_assert(check(set, 2, &host, &v));
        cr_assert_eq(v.test, EDF_TEST_DEMAND);
        /* One more ms in the second and its deadline still holds (61 <= 100); move the second's
         * deadline to 55 and 60 ms of demand falls before 55: refused, at 55. */
        set[1] = T3(10 * MS, 55 * MS, 100 * MS);
        cr_assert_not(check(set, 2, &none, &v));
        cr_assert_eq(v.test, EDF_TEST_DEMAND);
        cr_assert_eq(v.interval, 55 * MS);
        cr_assert_eq(v.demand, 60 * MS);
}

Test(edf, two_sixty_percent_tasks_never_share_a_cpu) {
        DlParams set[] = { T3(6 * MS, 10 * MS, 10 * MS), T3(6 * MS, 10 * MS, 10 * MS) };
        EdfSupply none = NO_SUPPLY_LIMITS, host = kernel_supply();
        EdfVerdict v;

        cr_assert_not(check(set, 2, &none, &v));
        cr_assert_eq(v.test, EDF_TEST_UTILIZATION);
        cr_assert_not(check(set, 2, &host, &v));
        cr_assert_eq(v.test, EDF_TEST_CAP);
        /* Nor with a longer deadline on one: utilization alone refuses. */
        set[1] = T3(12 * MS, 20 * MS, 20 * MS);
        cr_assert_not(check(set, 2, &none, &v));
}

Test(edf, implicit_deadlines_are_utilization) {
        EdfSupply none = NO_SUPPLY_LIMITS;
        DlParams full[] = { T3(5 * MS, 10 * MS, 10 * MS), T3(10 * MS, 20 * MS, 20 * MS) }; /* U = 1 exactly */
        DlParams over[] = { T3(5 * MS, 10 * MS, 10 * MS), T3(10 * MS + 1, 20 * MS, 20 * MS) };
        EdfVerdict v;

        cr_assert(check(full, 2, &none, &v));       /* U = 1: within 2^-32 of 1, the busy period decides */
        cr_assert_eq(v.test, EDF_TEST_DEMAND);
        cr_assert_not(check(over, 2, &none, &v));
        full[1].runtime = 9 * MS;
        cr_assert(check(full, 2, &none, &v));
        cr_assert_eq(v.test, EDF_TEST_UTILIZATION);
}

Test(edf, the_server_counts) {
        /* 95% of a CPU at D = T fits no CPU with a 5% server and a cap of 90%; with the server
         * alone (no cap) it fits exactly; the server's deadline is what fails with D < T. */
        EdfSupply host = kernel_supply(), server_only = { .cap_bw = UINT64_MAX, .server = EDF_FAIR_SERVER_DEFAULT };
        DlParams big = T3(95 * MS, 100 * MS, 100 * MS), tight = T3(96 * MS, 100 * MS, 100 * MS);
        EdfVerdict v;

        cr_assert_not(check(&big, 1, &host, &v));
        cr_assert_eq(v.test, EDF_TEST_CAP);
        cr_assert(check(&big, 1, &server_only, &v));
        cr_assert_not(check(&tight, 1, &server_only, &v));
        cr_assert_eq(v.test, EDF_TEST_UTILIZATION);
        /* (50, 50, 100) twice would be 100%, with the server 105%. */
}

Test(edf, extra_is_part_of_the_set) {
        DlParams there[] = { T3(50 * MS, 50 * MS, 100 * MS) }, ask = T3(10 * MS, 55 * MS, 100 * MS);
        EdfSupply none = NO_SUPPLY_LIMITS;
        EdfVerdict v;

        cr_assert_eq(edf_check(there, 1, &ask, 1, &none, &v), 0);
        cr_assert_not(v.schedulable);
        cr_assert_eq(edf_check(NULL, 0, &ask, 1, &none, &v), 0);
        cr_assert(v.schedulable);
        cr_assert_eq(edf_check(NULL, 0, NULL, 0, &none, &v), 0);
        cr_assert(v.schedulable);
}

Test(edf, bad_input) {
        EdfSupply none = NO_SUPPLY_LIMITS, bad_server = { .cap_bw = UINT64_MAX, .server = T3(2, 1, 10) };
        DlParams bad[] = { T3(0, 10, 10), T3(11, 10, 10), T3(5, 11, 10), T3(5, 0, 10), T3(5, 5, 0) };
        DlParams ok = T3(1, 10, 10);
        EdfVerdict v = { .steps = 77 };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                cr_assert_eq(edf_check(&bad[i], 1, NULL, 0, &none, &v), -EINVAL, "case %zu", i);
                cr_assert_eq(edf_check(&ok, 1, &bad[i], 1, &none, &v), -EINVAL, "case %zu", i);
        }
        cr_assert_eq(v.steps, 77, "a refused call wrote its result");
        cr_assert_eq(edf_check(&ok, 1, NULL, 0, &bad_server, &v), -EINVAL);
        cr_assert_eq(edf_check(&ok, EDF_TASKS_MAX + 1, NULL, 0, &none, &v), -E2BIG);
        cr_assert_eq(edf_check(&ok, EDF_TASKS_MAX, &ok, 1, &none, &v), -E2BIG);
        /* A runtime whose bandwidth does not fit the kernel's fixed point (above 2^44 ns, hours,
         * beyond any period the kernel takes). */
        DlParams huge = T3(UINT64_C(1) << 45, UINT64_C(1) << 45, UINT64_C(1) << 45);
        cr_assert_eq(edf_check(&huge, 1, NULL, 0, &none, &v), -ERANGE);
}

Test(edf, undecided_when_the_interval_cannot_be_bounded) {
        /* U exactly 1 with a hyperperiod beyond EDF_STEPS_MAX busy-period steps: the test says so
         * rather than guess. Periods of two large coprime numbers; C = T/2 each. */
        EdfSupply none = NO_SUPPLY_LIMITS;
        uint64_t p1 = UINT64_C(2147483646), p2 = UINT64_C(2147483647); /* coprime, H ~ 2^62 */
        DlParams set[] = { T3(p1 / 2, p1 / 2, p1), T3(p2 / 2 + 1, p2 - 1, p2) };
        EdfVerdict v;

        /* u = 1/2 + (p2/2 + 1)/p2 > 1: refused outright. */
        cr_assert_not(check(set, 2, &none, &v));
        cr_assert_eq(v.test, EDF_TEST_UTILIZATION);
        set[1].runtime = p2 / 2; /* U = 1 - 1/(2 p2): within 2^-32 of 1, and a busy period of ~2^61 */
        cr_assert_eq(edf_check(set, 2, NULL, 0, &none, &v), 0);
        if (v.test != EDF_TEST_UNDECIDED)
                cr_assert(v.schedulable, "decided %s but refused", edf_test_to_string(v.test));
}

Test(edf, supply_from_kernel) {
        DlParams server = EDF_FAIR_SERVER_DEFAULT, bad = T3(2, 1, 10), huge = T3(95 * MS, 100 * MS, 100 * MS);
        EdfSupply s;

        cr_assert_eq(edf_supply_from_kernel(950000, 1000000, &server, &s), 0);
        cr_assert_eq(s.cap_bw, 996147 - 52428); /* 95% and 5% in the kernel's fixed point */
        cr_assert_eq(s.server.runtime, 50 * MS);
        cr_assert_eq(edf_supply_from_kernel(950000, 1000000, NULL, &s), 0);
        cr_assert_eq(s.cap_bw, 996147);
        cr_assert_eq(s.server.runtime, 0);
        cr_assert_eq(edf_supply_from_kernel(-1, 1000000, &server, &s), 0);
        cr_assert_eq(s.cap_bw, UINT64_MAX);
        cr_assert_eq(edf_supply_from_kernel(950000, 0, &server, &s), -EINVAL);
        cr_assert_eq(edf_supply_from_kernel(950000, 1000000, &bad, &s), -EINVAL);
        cr_assert_eq(edf_supply_from_kernel(950000, 1000000, &huge, &s), -ERANGE);
}

Test(edf, dbf) {
        DlParams t = T3(2, 5, 10);

        cr_assert_eq(edf_dbf(&t, 4), 0);
        cr_assert_eq(edf_dbf(&t, 5), 2);
        cr_assert_eq(edf_dbf(&t, 14), 2);
        cr_assert_eq(edf_dbf(&t, 15), 4);
        cr_assert_eq(edf_dbf(&t, UINT64_MAX), (UINT64_MAX - 5) / 10 * 2 + 2);
        cr_assert_str_eq(edf_test_to_string(EDF_TEST_DEMAND), "processor demand (QPA)");
        cr_assert_str_eq(edf_test_to_string(_EDF_TEST_MAX), "?");
}

/* --- the brute force --- */

static uint64_t gcd(uint64_t a, uint64_t b) {
        while (b) {
                uint64_t t = a % b;
                a = b, b = t;
        }
        return a;
}

static bool brute(const DlParams *t, size_t n, const EdfSupply *s, uint64_t *ret_fail) {
        DlParams all[16];
        size_t m = 0;
        uint64_t h = 1, dmax = 0, bw = 0, used = 0;

        for (size_t i = 0; i < n; i++) {
                uint64_t b;
                cr_assert_eq(bw_of(t[i].runtime, t[i].period, &b), 0);
                bw += b;
                all[m++] = t[i];
        }
        if (s->cap_bw != UINT64_MAX && bw > s->cap_bw)
                return false;
        if (s->server.runtime > 0)
                all[m++] = s->server;
        for (size_t i = 0; i < m; i++) {
                h = h / gcd(h, all[i].period) * all[i].period;
                dmax = MAX(dmax, all[i].deadline);
        }
        for (size_t i = 0; i < m; i++)
                used += all[i].runtime * (h / all[i].period);
        if (used > h)
                return false;
        for (size_t i = 0; i < m; i++)
                for (uint64_t d = all[i].deadline; d <= h + dmax; d += all[i].period) {
                        uint64_t demand = 0;
                        for (size_t j = 0; j < m; j++)
                                demand += edf_dbf(&all[j], d);
                        if (demand > d) {
                                *ret_fail = d;
                                return false;
                        }
                }
        return true;
}

/* Periods whose least common multiple is at most 120 units. */
static const uint64_t periods[] = { 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 24, 30, 40, 60, 120 };

static void random_set(DlParams *t, size_t n, uint64_t unit, unsigned target_permille) {
        /* Utilizations from random weights scaled to the target, C rounded down to the grain. */
        uint64_t w[16], sum = 0;

        for (size_t i = 0; i < n; i++)
                sum += w[i] = rnd_in(1, 1000);
        for (size_t i = 0; i < n; i++) {
                uint64_t p = periods[rnd() % ELEMENTSOF(periods)] * unit, c, d;

                c = p * target_permille * w[i] / (sum * 1000);
                c = MAX(c, 1);
                c = MIN(c, p);
                d = rnd_in(c, p);
                if (rnd() % 4 == 0)
                        d = p; /* some implicit deadlines */
                t[i] = T3(c, d, p);
        }
}

Test(edf, qpa_agrees_with_brute_force) {
        static const uint64_t units[] = { 1, 7, 1000, 1000000 };
        unsigned yes = 0, no = 0, by_demand = 0;

        for (unsigned k = 0; k < 20000; k++) {
                DlParams set[8];
                size_t n = rnd_in(1, 7);
                uint64_t unit = units[rnd() % ELEMENTSOF(units)], fail = 0;
                EdfSupply s = { .cap_bw = UINT64_MAX };
                EdfVerdict v;
                bool want, got;

                random_set(set, n, unit, (unsigned) rnd_in(700, 1080));
                if (rnd() % 3 == 0) { /* a server of 1% to 10% */
                        uint64_t p = periods[rnd() % ELEMENTSOF(periods)] * unit, c = MAX(p * rnd_in(1, 10) / 100, 1);
                        s.server = T3(c, rnd_in(c, p), p);
                }
                if (rnd() % 3 == 0)
                        s.cap_bw = BW_UNIT * rnd_in(80, 100) / 100;
                want = brute(set, n, &s, &fail);
                cr_assert_eq(edf_check(set, n, NULL, 0, &s, &v), 0);
                got = v.schedulable;
                if (want != got) {
                        char line[1024];
                        size_t len = 0;
                        for (size_t i = 0; i < n; i++)
                                len += (size_t) snprintf(line + len, sizeof(line) - len, " (%" PRIu64 ",%" PRIu64 ",%" PRIu64 ")",
                                                         set[i].runtime, set[i].deadline, set[i].period);
                        cr_assert_fail("set %u:%s server (%" PRIu64 ",%" PRIu64 ",%" PRIu64 ") cap %" PRIu64
                                       ": brute force %s (fails at %" PRIu64 "), edf_check %s by %s at %" PRIu64,
                                       k, line, s.server.runtime, s.server.deadline, s.server.period, s.cap_bw,
                                       want ? "yes" : "no", fail, got ? "yes" : "no", edf_test_to_string(v.test), v.interval);
                }
                cr_assert_neq(v.test, EDF_TEST_UNDECIDED, "set %u: undecided with a hyperperiod of at most 120 units", k);
                if (!got && v.test == EDF_TEST_DEMAND) {
                        /* The refusal names a real violation. */
                        uint64_t h = s.server.runtime > 0 ? edf_dbf(&s.server, v.interval) : 0;
                        for (size_t i = 0; i < n; i++)
                                h += edf_dbf(&set[i], v.interval);
                        cr_assert_eq(h, v.demand, "set %u", k);
                        cr_assert_gt(h, v.interval, "set %u", k);
                        by_demand++;
                }
                got ? yes++ : no++;
        }
        /* Near the boundary on purpose: both answers, and demand refusals, are common. */
        cr_assert_gt(yes, 4000, "only %u schedulable", yes);
        cr_assert_gt(no, 4000, "only %u refused", no);
        cr_assert_gt(by_demand, 1000, "only %u refused by processor demand", by_demand);
        printf("# qpa: %u schedulable, %u refused (%u by processor demand)\n", yes, no, by_demand);
}

/* The meter (issue 41): it counts the work a check does, stops a check that would pass its limit
 * with -EDQUOT before the verdict is known, and never changes a verdict it lets through. */
Test(edf, meter_counts_and_stops) {
        DlParams implicit[] = { T3(1 * MS, 10 * MS, 10 * MS), T3(2 * MS, 20 * MS, 20 * MS), T3(3 * MS, 30 * MS, 30 * MS) };
        DlParams rst[] = { T3(50 * MS, 50 * MS, 100 * MS), T3(10 * MS, 100 * MS, 100 * MS) };
        EdfSupply none = NO_SUPPLY_LIMITS, host = kernel_supply();
        EdfVerdict plain, v, untouched = { .steps = 4242 };
        EdfMeter m = { .limit = UINT64_MAX };

        /* Implicit deadlines: one pass over the tasks (the server counts as one). */
        cr_assert_eq(edf_check_metered(implicit, 3, NULL, 0, &none, &m, &v), 0);
        cr_assert_eq(m.used, 3);
        m = (EdfMeter) { .limit = UINT64_MAX };
        cr_assert_eq(edf_check_metered(implicit, 2, &implicit[2], 1, &host, &m, &v), 0);
        cr_assert_eq(m.used, 4);

        /* The demand test: more passes, the same verdict as without a meter. */
        cr_assert_eq(edf_check(rst, 2, NULL, 0, &host, &plain), 0);
        m = (EdfMeter) { .limit = UINT64_MAX };
        cr_assert_eq(edf_check_metered(rst, 2, NULL, 0, &host, &m, &v), 0);
        cr_assert_eq(memcmp(&plain, &v, sizeof v), 0);
        uint64_t need = m.used;
        cr_assert_gt(need, 3 * (1 + v.steps), "3 tasks (the server included), a pass per step and more: %" PRIu64, need);

        /* A limit of exactly what it needs lets it through; one less stops it, verdict untouched. */
        m = (EdfMeter) { .limit = need };
        cr_assert_eq(edf_check_metered(rst, 2, NULL, 0, &host, &m, &v), 0);
        cr_assert_eq(memcmp(&plain, &v, sizeof v), 0);
        cr_assert_eq(m.used, need);
        v = untouched;
        m = (EdfMeter) { .limit = need - 1 };
        cr_assert_eq(edf_check_metered(rst, 2, NULL, 0, &host, &m, &v), -EDQUOT);
        cr_assert_eq(v.steps, 4242, "the verdict is not written when the meter stops the check");
        cr_assert_gt(m.used, m.limit);
        m = (EdfMeter) { .limit = 0 };
        cr_assert_eq(edf_check_metered(rst, 2, NULL, 0, &host, &m, &v), -EDQUOT, "not even the first pass");
        /* Used up: every further check stops at once. */
        cr_assert_eq(edf_check_metered(implicit, 1, NULL, 0, &none, &m, &v), -EDQUOT);

        /* The charge saturates instead of wrapping. */
        m = (EdfMeter) { .used = UINT64_MAX - 1, .limit = UINT64_MAX };
        cr_assert(edf_meter_charge(&m, 1));
        cr_assert_not(edf_meter_charge(&m, 5));
        cr_assert_eq(m.used, UINT64_MAX);
        cr_assert(edf_meter_charge(NULL, UINT64_MAX), "no meter: nothing counted, nothing stopped");
}

/* The meter on random sets near the boundary: a verdict it lets through is the unmetered one. */
Test(edf, meter_never_changes_a_verdict) {
        for (unsigned k = 0; k < 2000; k++) {
                DlParams set[8];
                size_t n = rnd_in(1, 7);
                EdfSupply s = kernel_supply();
                EdfVerdict plain, v;
                EdfMeter m = { .limit = UINT64_MAX };

                random_set(set, n, 1000000, (unsigned) rnd_in(700, 1080));
                cr_assert_eq(edf_check(set, n, NULL, 0, &s, &plain), 0);
                cr_assert_eq(edf_check_metered(set, n, NULL, 0, &s, &m, &v), 0);
                cr_assert_eq(memcmp(&plain, &v, sizeof v), 0, "set %u", k);
                cr_assert_geq(m.used, n + 1, "set %u: at least one pass", k);
                m = (EdfMeter) { .limit = m.used - 1 };
                cr_assert_eq(edf_check_metered(set, n, NULL, 0, &s, &m, &v), -EDQUOT, "set %u", k);
        }
}
