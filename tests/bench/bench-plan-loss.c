/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What best fit loses (issue 35, item 6): random constrained-deadline task sets on M identical CPUs,
 * each decided by a search over every assignment of tasks to CPUs (the reference: a set is feasible
 * when some assignment passes the exact EDF test, edf_check(), on every CPU), and by the dry run of
 * core/plan.h: best fit alone in the order given (what edfd did before the move for room), best fit
 * with one move for room where no CPU takes a task whole (place_make_room(), what edfd's Admit and
 * `edfctl plan` do now), and that in decreasing utilization (core/plan-order.h). Prints, per M, the
 * feasible sets, how many of them each refuses (the loss), that none ever admits an infeasible set,
 * the cost of a dry run, and the cost of the dry run with moves on the sets where best fit alone
 * refused (the search for room included). Pure: no root, no I/O timed.
 *
 *   bench-plan-loss [--sets 10000] [--seed 35] [--cpus 2,4] [--tasks 3-8]
 *
 * The sets: n tasks (uniform in --tasks), periods uniform in 5-100 ms, total utilization uniform in
 * 50-100% of the CPUs' capacity (UUniFast, a task above one CPU drawn again), deadline uniform in
 * [C, T]. The search assigns task by task and stops a branch at the first CPU that fails (a subset
 * of a schedulable set is schedulable), with the CPUs taken as identical (a task goes to at most one
 * CPU that is still empty). */

#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/macro.h"
#include "core/bandwidth.h"
#include "core/plan-order.h"

#define TASKS_MAX 12
#define CPUS_MAX 8

static uint64_t rng;
static uint64_t rnd(void) {
        rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
        return rng * UINT64_C(2685821657736338717);
}
static double rnd01(void) {
        return (double) (rnd() >> 11) / (double) (UINT64_C(1) << 53);
}

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

typedef struct Search {
        const DlParams *tasks;
        size_t n;
        unsigned m;
        const EdfSupply *supply;
        DlParams cpu[CPUS_MAX][TASKS_MAX];
        size_t n_on[CPUS_MAX];
        uint64_t nodes;
} Search;

/* Whether tasks[k..n) can be added to the CPUs as they are. */
static int search(Search *s, size_t k) {
        bool tried_empty = false;

        if (k == s->n)
                return 1;
        for (unsigned c = 0; c < s->m; c++) {
                EdfVerdict v;
                int r;

                if (s->n_on[c] == 0) {
                        if (tried_empty)
                                continue; /* identical CPUs: one empty CPU stands for all */
                        tried_empty = true;
                }
                s->nodes++;
                r = edf_check(s->cpu[c], s->n_on[c], &s->tasks[k], 1, s->supply, &v);
                if (r < 0)
                        return r;
                if (!v.schedulable)
                        continue;
                s->cpu[c][s->n_on[c]++] = s->tasks[k];
                r = search(s, k + 1);
                s->n_on[c]--;
                if (r != 0)
                        return r;
        }
        return 0;
}

static void draw(DlParams *t, size_t n, unsigned m, uint64_t cap_bw) {
        for (;;) {
                double target = (0.5 + 0.5 * rnd01()) * (double) m * (double) cap_bw / (double) BW_UNIT, sum = target;
                double u[TASKS_MAX];
                bool ok = true;

                for (size_t i = 0; i + 1 < n; i++) {
                        double rest = sum * pow(rnd01(), 1.0 / (double) (n - 1 - i));
                        u[i] = sum - rest;
                        sum = rest;
                }
                u[n - 1] = sum;
                for (size_t i = 0; i < n && ok; i++) {
                        uint64_t p = (5 + rnd() % 96) * NSEC_PER_MSEC, c = (uint64_t) (u[i] * (double) p);

                        if (c > p || u[i] > 1.0)
                                ok = false;
                        c = MAX(c, 2 * DL_RUNTIME_MIN);
                        c = MIN(c, p);
                        t[i] = (DlParams) { .runtime = c, .deadline = c + (uint64_t) ((double) (p - c) * rnd01()),
                                            .period = p };
                }
                if (ok)
                        return;
        }
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static int all_admitted(const PlanEntry *e, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (e[i].outcome != PLAN_PLACED)
                        return 0;
        return 1;
}

int main(int argc, char *argv[]) {
        unsigned long sets = 10000, seed = 35, nmin = 3, nmax = 8;
        const char *cpus_arg = "2,4";
        DlParams server = EDF_FAIR_SERVER_DEFAULT;
        EdfSupply supply;

        for (int i = 1; i + 1 < argc; i += 2) {
                if (strcmp(argv[i], "--sets") == 0)
                        sets = strtoul(argv[i + 1], NULL, 10);
                else if (strcmp(argv[i], "--seed") == 0)
                        seed = strtoul(argv[i + 1], NULL, 10);
                else if (strcmp(argv[i], "--cpus") == 0)
                        cpus_arg = argv[i + 1];
                else if (strcmp(argv[i], "--tasks") == 0 && sscanf(argv[i + 1], "%lu-%lu", &nmin, &nmax) == 2)
                        ;
                else {
                        fprintf(stderr, "usage: bench-plan-loss [--sets N] [--seed S] [--cpus 2,4] [--tasks 3-8]\n");
                        return 2;
                }
        }
        if (argc % 2 == 0 || nmin < 1 || nmax > TASKS_MAX || nmin > nmax || sets == 0) {
                fprintf(stderr, "bench-plan-loss: need 1 <= tasks <= %d and at least one set\n", TASKS_MAX);
                return 2;
        }
        if (edf_supply_from_kernel(950000, 1000000, &server, &supply) < 0)
                return 1;
        printf("bench-plan-loss: %lu random constrained sets per CPU count (seed %lu), %lu-%lu tasks, utilization "
               "50-100%% of the CPUs' capacity (%.0f%% each: 95%% less the fair server), best fit\n",
               sets, seed, nmin, nmax, 100.0 * (double) supply.cap_bw / (double) BW_UNIT);
        printf("| CPUs | feasible (search) | refused by best fit alone | refused with one move for room | "
               "refused with the move, decreasing order | admitted but infeasible | dry run p50 | "
               "dry run with moves where best fit refused, p50 / max | search nodes p50 |\n"
               "|---|---|---|---|---|---|---|---|---|\n");
        for (const char *p = cpus_arg; *p;) {
                char *end;
                unsigned long m = strtoul(p, &end, 10);
                unsigned long feasible = 0, lost_bare = 0, lost_given = 0, lost_dec = 0, wrong = 0, n_room = 0;
                uint64_t *cost = calloc(sets, sizeof(uint64_t)), *nodes = calloc(sets, sizeof(uint64_t));
                uint64_t *room_cost = calloc(sets, sizeof(uint64_t));

                if (end == p || m < 1 || m > CPUS_MAX || !cost || !nodes || !room_cost) {
                        fprintf(stderr, "bench-plan-loss: --cpus takes numbers 1-%d\n", CPUS_MAX);
                        return 2;
                }
                rng = UINT64_C(0x9e3779b97f4a7c15) ^ (seed * 1000 + m);
                for (unsigned long k = 0; k < sets; k++) {
                        size_t n = nmin + rnd() % (nmax - nmin + 1);
                        DlParams t[TASKS_MAX];
                        PlanTask pt[TASKS_MAX];
                        PlanEntry bare[TASKS_MAX], given[TASKS_MAX], dec[TASKS_MAX];
                        Search s = { .tasks = t, .n = n, .m = (unsigned) m, .supply = &supply };
                        uint64_t t0;
                        int r, ok, found;

                        draw(t, n, (unsigned) m, supply.cap_bw);
                        for (size_t i = 0; i < n; i++)
                                pt[i] = (PlanTask) { .params = t[i] };
                        found = r = search(&s, 0);
                        if (r < 0) {
                                fprintf(stderr, "bench-plan-loss: edf_check: %s\n", strerror(-r));
                                return 1;
                        }
                        nodes[k] = s.nodes;
                        t0 = now_ns();
                        r = plan_run_with(pt, n, (unsigned) m, &supply, PLACE_FIT_BEST, false, bare, NULL);
                        cost[k] = now_ns() - t0;
                        if (r >= 0) {
                                t0 = now_ns();
                                r = plan_run_ordered(pt, n, PLAN_ORDER_GIVEN, (unsigned) m, &supply, PLACE_FIT_BEST, given,
                                                     NULL);
                                if (!all_admitted(bare, n))
                                        room_cost[n_room++] = now_ns() - t0;
                        }
                        if (r >= 0)
                                r = plan_run_ordered(pt, n, PLAN_ORDER_DECREASING, (unsigned) m, &supply, PLACE_FIT_BEST,
                                                     dec, NULL);
                        if (r < 0) {
                                fprintf(stderr, "bench-plan-loss: plan_run: %s\n", strerror(-r));
                                return 1;
                        }
                        ok = found;
                        feasible += ok;
                        lost_bare += ok && !all_admitted(bare, n);
                        lost_given += ok && !all_admitted(given, n);
                        lost_dec += ok && !all_admitted(dec, n);
                        wrong += !ok && (all_admitted(bare, n) || all_admitted(given, n) || all_admitted(dec, n));
                }
                qsort(cost, sets, sizeof(uint64_t), cmp_u64);
                qsort(nodes, sets, sizeof(uint64_t), cmp_u64);
                qsort(room_cost, n_room, sizeof(uint64_t), cmp_u64);
#define PCT(x) (feasible ? 100.0 * (double) (x) / (double) feasible : 0.0)
                printf("| %lu | %lu of %lu | %lu (%.2f%%) | %lu (%.2f%%) | %lu (%.2f%%) | %lu | %.1f us | %.1f / %.1f us (%lu sets) | %"
                       PRIu64 " |\n", m, feasible, sets, lost_bare, PCT(lost_bare), lost_given, PCT(lost_given), lost_dec,
                       PCT(lost_dec), wrong, (double) cost[sets / 2] / 1000.0,
                       n_room ? (double) room_cost[n_room / 2] / 1000.0 : 0.0,
                       n_room ? (double) room_cost[n_room - 1] / 1000.0 : 0.0, n_room, nodes[sets / 2]);
#undef PCT
                free(room_cost);
                free(cost);
                free(nodes);
                p = *end == ',' ? end + 1 : end;
        }
        return 0;
}
