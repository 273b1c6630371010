/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* place_choose(), place_split(), place_format_refusal(): the fits, the seed article's case (three
 * tasks of 58% on two CPUs), the split, and random placements whose every CPU passes the exact
 * test afterwards. */

#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "basic/macro.h"
#include "core/bandwidth.h"
#include "core/placement.h"

#define MS NSEC_PER_MSEC
#define US NSEC_PER_USEC
#define T3(c, d, p) ((DlParams) { .runtime = (c), .deadline = (d), .period = (p) })
#define MAXT 64

typedef struct Cpu {
        DlParams tasks[MAXT];
        size_t n;
} Cpu;

static EdfSupply host_supply(void) { /* this host's CPU: a 95% cap less a 50 ms / 1 s fair server */
        DlParams server = EDF_FAIR_SERVER_DEFAULT;
        EdfSupply s;

        cr_assert_eq(edf_supply_from_kernel(950000, 1000000, &server, &s), 0);
        return s;
}

static void view(Cpu *cpus, size_t n, PlaceCpu *out, const EdfSupply *s) {
        for (size_t i = 0; i < n; i++)
                out[i] = (PlaceCpu) { .id = (unsigned) i, .supply = *s, .tasks = cpus[i].tasks, .n_tasks = cpus[i].n };
}

static int place(Cpu *cpus, size_t n, const DlParams *req, PlaceFit fit, size_t *ret, char *why, size_t why_size) {
        PlaceCpu v[8];
        EdfVerdict verdicts[8];
        EdfSupply s = host_supply();
        int r;

        view(cpus, n, v, &s);
        r = place_choose(v, n, req, fit, ret, verdicts);
        if (r == 0) {
                cr_assert_lt(cpus[*ret].n, MAXT);
                cpus[*ret].tasks[cpus[*ret].n++] = *req;
        } else if (r == -ENOSPC && why)
                place_format_refusal(v, n, req, verdicts, why, why_size);
        return r;
}

Test(placement, seed_case_partitioned_refuses_the_third_with_numbers) {
        Cpu cpus[2] = { 0 };
        DlParams t = T3(5800 * US, 10 * MS, 10 * MS);
        char why[256];
        size_t at;

        cr_assert_eq(place(cpus, 2, &t, PLACE_FIT_BEST, &at, why, sizeof(why)), 0);
        cr_assert_eq(at, 0);
        cr_assert_eq(place(cpus, 2, &t, PLACE_FIT_BEST, &at, why, sizeof(why)), 0);
        cr_assert_eq(at, 1, "two 58%% tasks on one CPU");
        cr_assert_eq(place(cpus, 2, &t, PLACE_FIT_BEST, &at, why, sizeof(why)), -ENOSPC);
        cr_assert_str_eq(why, "no CPU can take 58%: cpu0 32% left, cpu1 32% left");
}

Test(placement, seed_case_split_admits_the_third) {
        Cpu cpus[2] = { { .tasks = { T3(5800 * US, 10 * MS, 10 * MS) }, .n = 1 },
                        { .tasks = { T3(5800 * US, 10 * MS, 10 * MS) }, .n = 1 } };
        DlParams t = T3(5800 * US, 10 * MS, 10 * MS);
        EdfSupply s = host_supply();
        PlaceCpu v[2];
        PlaceSplit sp;
        EdfVerdict check;

        view(cpus, 2, v, &s);
        cr_assert_eq(place_split(v, 2, &t, PLACE_FIT_BEST, DL_RUNTIME_MIN, &sp), 0);
        cr_assert_eq(sp.index_a, 0);
        cr_assert_eq(sp.index_b, 1);
        /* Stage 1 takes what cpu0's cap leaves: 32% of 10 ms, rounded down to a microsecond. */
        cr_assert_eq(sp.stage1.runtime, 3200 * US, "C1 = %" PRIu64, sp.stage1.runtime);
        cr_assert_eq(sp.stage1.deadline, sp.stage1.runtime);
        cr_assert_eq(sp.stage1.period, 10 * MS);
        cr_assert_eq(sp.stage2.runtime, 2600 * US);
        cr_assert_eq(sp.stage2.deadline, 6800 * US);
        cr_assert_eq(sp.stage2.period, 10 * MS);
        cr_assert(sp.verdict_a.schedulable && sp.verdict_b.schedulable);
        /* Both CPUs pass with their stage, checked again from scratch. */
        cr_assert_eq(edf_check(cpus[0].tasks, 1, &sp.stage1, 1, &s, &check), 0);
        cr_assert(check.schedulable);
        cr_assert_eq(edf_check(cpus[1].tasks, 1, &sp.stage2, 1, &s, &check), 0);
        cr_assert(check.schedulable);
        /* A microsecond more on stage 1 does not fit cpu0: C1 is the largest. */
        DlParams more = T3(sp.stage1.runtime + US, sp.stage1.runtime + US, 10 * MS);
        cr_assert_eq(edf_check(cpus[0].tasks, 1, &more, 1, &s, &check), 0);
        cr_assert_not(check.schedulable);
}

Test(placement, split_needs_two_cpus_and_room) {
        Cpu cpus[2] = { { .tasks = { T3(8 * MS, 10 * MS, 10 * MS) }, .n = 1 },
                        { .tasks = { T3(8 * MS, 10 * MS, 10 * MS) }, .n = 1 } };
        DlParams t = T3(5 * MS, 10 * MS, 10 * MS);
        EdfSupply s = host_supply();
        PlaceCpu v[2];
        PlaceSplit sp;

        view(cpus, 2, v, &s);
        cr_assert_eq(place_split(v, 1, &t, PLACE_FIT_BEST, DL_RUNTIME_MIN, &sp), -ENOSPC);
        cr_assert_eq(place_split(v, 2, &t, PLACE_FIT_BEST, DL_RUNTIME_MIN, &sp), -ENOSPC, "10%% + 10%% left cannot hold 50%%");
        cr_assert_eq(place_split(v, 0, &t, PLACE_FIT_BEST, DL_RUNTIME_MIN, &sp), -EINVAL);
        t.runtime = 11 * MS;
        cr_assert_eq(place_split(v, 2, &t, PLACE_FIT_BEST, DL_RUNTIME_MIN, &sp), -EINVAL);
}

/* A split leaves each stage at least min_stage: a job that fits one CPU whole gives stage 2 the
 * minimum (not DL_RUNTIME_MIN's 1 us), and one below twice the minimum is not split. */
Test(placement, split_stages_keep_the_minimum) {
        Cpu cpus[2] = { { .n = 0 }, { .n = 0 } };
        DlParams t = T3(2 * MS, 10 * MS, 10 * MS);
        EdfSupply s = host_supply();
        PlaceCpu v[2];
        PlaceSplit sp;

        view(cpus, 2, v, &s);
        cr_assert_eq(place_split(v, 2, &t, PLACE_FIT_BEST, 500 * US, &sp), 0);
        cr_assert_eq(sp.stage1.runtime, 1500 * US, "C1 = %" PRIu64, sp.stage1.runtime);
        cr_assert_eq(sp.stage2.runtime, 500 * US, "C2 = %" PRIu64, sp.stage2.runtime);
        cr_assert_eq(sp.stage2.deadline, 10 * MS - 1500 * US);
        cr_assert_eq(place_split(v, 2, &t, PLACE_FIT_BEST, 0, &sp), 0, "0 means DL_RUNTIME_MIN");
        cr_assert_eq(sp.stage2.runtime, 2 * MS - sp.stage1.runtime);
        cr_assert_geq(sp.stage2.runtime, DL_RUNTIME_MIN);
        cr_assert_eq(place_split(v, 2, &t, PLACE_FIT_BEST, 1 * MS, &sp), 0, "exactly half and half");
        cr_assert_eq(sp.stage1.runtime, 1 * MS);
        cr_assert_eq(sp.stage2.runtime, 1 * MS);
        cr_assert_eq(place_split(v, 2, &t, PLACE_FIT_BEST, 1 * MS + 1, &sp), -ENOSPC, "below twice the minimum");

        /* Each CPU can take a stage 1 of 400 us at most: below the minimum, no split. */
        Cpu busy[2] = { { .tasks = { T3(8600 * US, 10 * MS, 10 * MS) }, .n = 1 },
                        { .tasks = { T3(8600 * US, 10 * MS, 10 * MS) }, .n = 1 } };
        DlParams u = T3(1200 * US, 10 * MS, 10 * MS);
        view(busy, 2, v, &s);
        cr_assert_eq(place_split(v, 2, &u, PLACE_FIT_BEST, 500 * US, &sp), -ENOSPC);
        cr_assert_eq(place_split(v, 2, &u, PLACE_FIT_BEST, 300 * US, &sp), -ENOSPC, "nor a stage 2 of 800 us in 4%%");
        u = T3(600 * US, 10 * MS, 10 * MS);
        cr_assert_eq(place_split(v, 2, &u, PLACE_FIT_BEST, 200 * US, &sp), 0, "400 us + 200 us fit the 4%% each has");
        cr_assert_eq(sp.stage1.runtime, 400 * US);
        cr_assert_eq(sp.stage2.runtime, 200 * US);
}

Test(placement, fits) {
        /* cpu0 has 50%, cpu1 20%, cpu2 nothing; a 10% request. */
        Cpu cpus[3] = { { .tasks = { T3(5 * MS, 10 * MS, 10 * MS) }, .n = 1 },
                        { .tasks = { T3(2 * MS, 10 * MS, 10 * MS) }, .n = 1 },
                        { .n = 0 } };
        DlParams t = T3(1 * MS, 10 * MS, 10 * MS);
        EdfSupply s = host_supply();
        PlaceCpu v[3];
        size_t at;

        view(cpus, 3, v, &s);
        cr_assert_eq(place_choose(v, 3, &t, PLACE_FIT_BEST, &at, NULL), 0);
        cr_assert_eq(at, 0);
        cr_assert_eq(place_choose(v, 3, &t, PLACE_FIT_WORST, &at, NULL), 0);
        cr_assert_eq(at, 2);
        cr_assert_eq(place_choose(v, 3, &t, PLACE_FIT_FIRST, &at, NULL), 0);
        cr_assert_eq(at, 0);
        /* A request of 45%: cpu0 cannot (50 + 45 > 90), best fit takes cpu1, first fit too. */
        t = T3(4500 * US, 10 * MS, 10 * MS);
        cr_assert_eq(place_choose(v, 3, &t, PLACE_FIT_BEST, &at, NULL), 0);
        cr_assert_eq(at, 1);
        cr_assert_eq(place_choose(v, 3, &t, PLACE_FIT_FIRST, &at, NULL), 0);
        cr_assert_eq(at, 1);
        /* Ties go to the lowest CPU number, whatever the array's order. */
        PlaceCpu rev[2] = { { .id = 7, .supply = s }, { .id = 3, .supply = s } };
        cr_assert_eq(place_choose(rev, 2, &t, PLACE_FIT_BEST, &at, NULL), 0);
        cr_assert_eq(rev[at].id, 3);
        cr_assert_eq(place_choose(rev, 2, &t, PLACE_FIT_WORST, &at, NULL), 0);
        cr_assert_eq(rev[at].id, 3);
        /* A constrained deadline decides where utilization would not: cpu0 holds (5, 5, 10),
         * cpu1 (2, 10, 10); a (4, 6, 10) request passes the cap on both but meets its deadline
         * only on cpu1 (5 + 4 > 6 by t = 6 on cpu0). */
        Cpu c2[2] = { { .tasks = { T3(5 * MS, 5 * MS, 10 * MS) }, .n = 1 },
                      { .tasks = { T3(2 * MS, 10 * MS, 10 * MS) }, .n = 1 } };
        EdfVerdict verdicts[2];
        char why[256];
        view(c2, 2, v, &s);
        t = T3(4 * MS, 6 * MS, 10 * MS);
        cr_assert_eq(place_choose(v, 2, &t, PLACE_FIT_BEST, &at, verdicts), 0);
        cr_assert_eq(at, 1);
        cr_assert_not(verdicts[0].schedulable);
        cr_assert_eq(verdicts[0].test, EDF_TEST_DEMAND);
        cr_assert_gt(verdicts[0].demand, verdicts[0].interval);
        printf("# %s\n", place_format_refusal(v, 2, &t, verdicts, why, sizeof(why)));
        c2[1].tasks[0] = T3(6 * MS, 10 * MS, 10 * MS);
        cr_assert_eq(place_choose(v, 2, &t, PLACE_FIT_BEST, &at, verdicts), -ENOSPC);
        place_format_refusal(v, 2, &t, verdicts, why, sizeof(why));
        cr_assert_str_eq(why, "no CPU can take 40%: cpu0 40% left but a deadline fails at 6ms (demand 9ms), cpu1 30% left");
        /* Truncation keeps a terminated string. */
        place_format_refusal(v, 2, &t, verdicts, why, 20);
        cr_assert_eq(strlen(why), 19);
}

Test(placement, fit_names_and_bad_input) {
        PlaceFit f;
        PlaceCpu one = { .id = 0, .supply = host_supply() };
        DlParams bad = T3(11, 10, 10);
        size_t at;

        for (unsigned i = 0; i < _PLACE_FIT_MAX; i++) {
                cr_assert_eq(place_fit_from_string(place_fit_to_string((PlaceFit) i), &f), 0);
                cr_assert_eq(f, (PlaceFit) i);
        }
        cr_assert_eq(place_fit_from_string("best-fit", &f), -EINVAL);
        cr_assert_eq(place_fit_from_string(NULL, &f), -EINVAL);
        cr_assert_null(place_fit_to_string(_PLACE_FIT_MAX));
        cr_assert_eq(place_choose(&one, 1, &bad, PLACE_FIT_BEST, &at, NULL), -EINVAL);
        cr_assert_eq(place_choose(&one, 0, &bad, PLACE_FIT_BEST, &at, NULL), -EINVAL);
        bad = T3(1 * MS, 10 * MS, 10 * MS);
        cr_assert_eq(place_choose(&one, 1, &bad, _PLACE_FIT_MAX, &at, NULL), -EINVAL);
        cr_assert_eq(place_choose(&one, 1, NULL, PLACE_FIT_BEST, &at, NULL), -EINVAL);
}

Test(placement, random_placements_keep_every_cpu_schedulable) {
        static const uint64_t periods[] = { 5 * MS, 10 * MS, 20 * MS, 25 * MS, 50 * MS, 100 * MS };
        uint64_t state = UINT64_C(0x2545f4914f6cdd1d);
        unsigned placed = 0, refused = 0, split = 0;

        for (unsigned round = 0; round < 300; round++) {
                Cpu cpus[4] = { 0 };
                EdfSupply s = host_supply();
                PlaceCpu v[4];
                PlaceFit fit = (PlaceFit) (round % _PLACE_FIT_MAX);

                for (unsigned k = 0; k < 16; k++) {
                        uint64_t p, c, d;
                        DlParams t;
                        size_t at;
                        PlaceSplit sp;

                        state ^= state >> 12, state ^= state << 25, state ^= state >> 27;
                        p = periods[(state >> 8) % ELEMENTSOF(periods)];
                        c = MAX(p * ((state >> 20) % 60 + 1) / 100, DL_RUNTIME_MIN * 2);
                        d = c + (p - c) * ((state >> 32) % 101) / 100;
                        t = T3(c, d, p);
                        view(cpus, 4, v, &s);
                        if (place_choose(v, 4, &t, fit, &at, NULL) == 0) {
                                cpus[at].tasks[cpus[at].n++] = t;
                                placed++;
                        } else if (place_split(v, 4, &t, fit, DL_RUNTIME_MIN, &sp) == 0) {
                                cr_assert_neq(sp.index_a, sp.index_b);
                                cr_assert_eq(sp.stage1.runtime + sp.stage2.runtime, t.runtime);
                                cr_assert_eq(sp.stage1.runtime + sp.stage2.deadline, t.deadline);
                                cpus[sp.index_a].tasks[cpus[sp.index_a].n++] = sp.stage1;
                                cpus[sp.index_b].tasks[cpus[sp.index_b].n++] = sp.stage2;
                                split++;
                        } else
                                refused++;
                        for (size_t i = 0; i < 4; i++) {
                                EdfVerdict ver;
                                cr_assert_eq(edf_check(cpus[i].tasks, cpus[i].n, NULL, 0, &s, &ver), 0);
                                cr_assert(ver.schedulable, "round %u step %u: cpu%zu no longer schedulable", round, k, i);
                        }
                }
        }
        cr_assert_gt(placed, 100);
        cr_assert_gt(refused, 100);
        cr_assert_gt(split, 20);
        printf("# placements: %u whole, %u split, %u refused\n", placed, split, refused);
}

/* The meter (issue 41): every CPU's tests are charged to it; when it runs out, neither the choice
 * nor the split has an answer (-EDQUOT), and with room enough it answers as without a meter. */
Test(placement, meter_bounds_choose_and_split) {
        Cpu cpus[2] = {};
        PlaceCpu v[2];
        EdfSupply s = host_supply();
        EdfMeter m = { .limit = UINT64_MAX };
        DlParams req = T3(5800 * US, 10 * MS, 10 * MS);
        PlaceSplit plain, sp;
        size_t at;

        for (size_t c = 0; c < 2; c++)
                for (size_t i = 0; i < 20; i++)
                        cpus[c].tasks[cpus[c].n++] = T3((100 + i) * US, (3 + i) * MS, (10 + i) * MS);
        view(cpus, 2, v, &s);
        cr_assert_eq(place_choose(v, 2, &T3(1 * MS, 5 * MS, 10 * MS), PLACE_FIT_BEST, &at, NULL), 0);
        cr_assert_eq(place_split(v, 2, &req, PLACE_FIT_BEST, 500 * US, &plain), 0);

        for (size_t c = 0; c < 2; c++)
                v[c].meter = &m;
        cr_assert_eq(place_choose(v, 2, &T3(1 * MS, 5 * MS, 10 * MS), PLACE_FIT_BEST, &at, NULL), 0);
        uint64_t choose_units = m.used;
        cr_assert_gt(choose_units, 2 * 22, "both CPUs' tests counted (21 tasks and the server on each)");
        m = (EdfMeter) { .limit = UINT64_MAX };
        cr_assert_eq(place_split(v, 2, &req, PLACE_FIT_BEST, 500 * US, &sp), 0);
        cr_assert_eq(memcmp(&plain, &sp, sizeof sp), 0, "the same split with a meter");
        cr_assert_gt(m.used, 10 * choose_units, "the split searches: many tests per CPU (%" PRIu64 ")", m.used);

        uint64_t split_units = m.used;
        m = (EdfMeter) { .limit = split_units - 1 };
        cr_assert_eq(place_split(v, 2, &req, PLACE_FIT_BEST, 500 * US, &sp), -EDQUOT);
        m = (EdfMeter) { .limit = choose_units - 1 };
        cr_assert_eq(place_choose(v, 2, &T3(1 * MS, 5 * MS, 10 * MS), PLACE_FIT_BEST, &at, NULL), -EDQUOT);
}

/* --- room by one move --- */

/* Best fit in arrival order: 40% and 40% on cpu0, 50% on cpu1; a second 50% fits no CPU whole, yet
 * {40, 50} {40, 50} holds. One move (a 40% to cpu1) makes the room. */
Test(placement, make_room_moves_the_smallest_task_that_makes_room) {
        Cpu cpus[2] = { 0 };
        DlParams a = T3(4 * MS, 10 * MS, 10 * MS), c = T3(5 * MS, 10 * MS, 10 * MS);
        EdfSupply s = host_supply();
        PlaceCpu v[2];
        PlaceMove mv;
        size_t at, tries;

        cr_assert_eq(place(cpus, 2, &a, PLACE_FIT_BEST, &at, NULL, 0), 0);
        cr_assert_eq(place(cpus, 2, &a, PLACE_FIT_BEST, &at, NULL, 0), 0);
        cr_assert_eq(at, 0, "best fit packs both 40%% on cpu0");
        cr_assert_eq(place(cpus, 2, &c, PLACE_FIT_BEST, &at, NULL, 0), 0);
        cr_assert_eq(at, 1);
        cr_assert_eq(place(cpus, 2, &c, PLACE_FIT_BEST, &at, NULL, 0), -ENOSPC);

        view(cpus, 2, v, &s);
        cr_assert_eq(place_make_room(v, 2, &c, PLACE_FIT_BEST, 0, &mv, &tries), 0);
        cr_assert_eq(mv.from, 0);
        cr_assert_eq(mv.task, 0, "the first of the two 40%% (ties by place)");
        cr_assert_eq(mv.to, 1);
        cr_assert(mv.verdict_from.schedulable && mv.verdict_to.schedulable);
        cr_assert_eq(tries, 1);

        /* Both CPUs pass the exact test after the move, checked independently. */
        EdfVerdict chk;
        cr_assert_eq(edf_check(&cpus[0].tasks[1], 1, &c, 1, &s, &chk), 0);
        cr_assert(chk.schedulable);
        cr_assert_eq(edf_check(cpus[1].tasks, cpus[1].n, &a, 1, &s, &chk), 0);
        cr_assert(chk.schedulable);
}

Test(placement, make_room_respects_pinned_tasks_and_refuses_what_no_move_helps) {
        Cpu cpus[2] = { { .tasks = { T3(4 * MS, 10 * MS, 10 * MS), T3(4 * MS, 10 * MS, 10 * MS) }, .n = 2 },
                        { .tasks = { T3(5 * MS, 10 * MS, 10 * MS) }, .n = 1 } };
        DlParams c = T3(5 * MS, 10 * MS, 10 * MS), big = T3(9 * MS, 10 * MS, 10 * MS);
        EdfSupply s = host_supply();
        bool pin0[2] = { true, false }, pin_all[2] = { true, true };
        PlaceCpu v[2];
        PlaceMove mv;
        size_t tries;

        view(cpus, 2, v, &s);
        v[0].pinned = pin0;
        cr_assert_eq(place_make_room(v, 2, &c, PLACE_FIT_BEST, 0, &mv, NULL), 0);
        cr_assert_eq(mv.task, 1, "the pinned first task stays");
        v[0].pinned = pin_all;
        cr_assert_eq(place_make_room(v, 2, &c, PLACE_FIT_BEST, 0, &mv, &tries), -ENOSPC,
                     "only the 50%% of cpu1 may move, and cpu0 cannot take it");
        cr_assert_eq(tries, 1);
        v[0].pinned = NULL;
        cr_assert_eq(place_make_room(v, 2, &big, PLACE_FIT_BEST, 0, &mv, NULL), -ENOSPC,
                     "90%% fits nowhere after any one move");
        cr_assert_eq(place_make_room(v, 2, &c, PLACE_FIT_BEST, 1, &mv, &tries), 0, "the first candidate works");
        cr_assert_eq(place_make_room(v, 1, &c, PLACE_FIT_BEST, 0, &mv, NULL), -ENOSPC, "one CPU: nowhere to move");
        DlParams bad = T3(5 * MS, 4 * MS, 10 * MS);
        cr_assert_eq(place_make_room(v, 2, &bad, PLACE_FIT_BEST, 0, &mv, NULL), -EINVAL);
}

Test(placement, make_room_is_bounded_by_its_tries) {
        /* cpu0 full of small tasks none of whose moves helps a 60% (cpu1 is nearly full too): every
         * candidate fails, and no more than max_tries are tried. */
        Cpu cpus[2] = { 0 };
        EdfSupply s = host_supply();
        DlParams small = T3(1 * MS, 20 * MS, 20 * MS), req = T3(6 * MS, 10 * MS, 10 * MS);
        PlaceCpu v[2];
        PlaceMove mv;
        size_t tries;

        for (size_t i = 0; i < 17; i++)
                cpus[0].tasks[cpus[0].n++] = small; /* 85% */
        cpus[1].tasks[cpus[1].n++] = T3(8 * MS, 10 * MS, 10 * MS);
        view(cpus, 2, v, &s);
        cr_assert_eq(place_make_room(v, 2, &req, PLACE_FIT_BEST, 5, &mv, &tries), -ENOSPC);
        cr_assert_eq(tries, 5);
        cr_assert_eq(place_make_room(v, 2, &req, PLACE_FIT_BEST, 0, &mv, &tries), -ENOSPC);
        cr_assert_eq(tries, 18, "every task of both CPUs, once");
}

/* Random books: whenever make_room answers, the move and the request leave every CPU passing. */
Test(placement, make_room_random_moves_leave_every_cpu_schedulable) {
        EdfSupply s = host_supply();
        uint64_t seed = 42;
        unsigned found = 0;

        for (int round = 0; round < 2000; round++) {
                Cpu cpus[3] = { 0 };
                PlaceCpu v[3];
                PlaceMove mv;
                size_t at;

#define RND() (seed = seed * 6364136223846793005ULL + 1442695040888963407ULL, seed >> 33)
                for (int k = 0; k < 12; k++) {
                        uint64_t p = (5 + RND() % 46) * MS, c = (p * (5 + RND() % 45)) / 100, d = c + (p - c) * (50 + RND() % 51) / 100;
                        DlParams t = T3(MAX(c, 100 * US), 0, p);
                        t.deadline = MAX(d, t.runtime);
                        if (place(cpus, 3, &t, PLACE_FIT_BEST, &at, NULL, 0) == 0)
                                continue;
                        view(cpus, 3, v, &s);
                        if (place_make_room(v, 3, &t, PLACE_FIT_BEST, 0, &mv, NULL) != 0)
                                continue;
                        found++;
                        DlParams moved = cpus[mv.from].tasks[mv.task];
                        cpus[mv.from].tasks[mv.task] = t;
                        cpus[mv.to].tasks[cpus[mv.to].n++] = moved;
                        for (size_t i = 0; i < 3; i++) {
                                EdfVerdict chk;
                                cr_assert_eq(edf_check(cpus[i].tasks, cpus[i].n, NULL, 0, &s, &chk), 0);
                                cr_assert(chk.schedulable, "round %d: cpu%zu fails after the move", round, i);
                        }
                }
#undef RND
        }
        cr_assert_gt(found, 50, "make_room found room only %u times", found);
}
