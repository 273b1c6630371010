/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The exact uniprocessor EDF test: do these sporadic tasks, and what the kernel itself runs on the
 * CPU, all meet their deadlines under preemptive EDF on one CPU?
 *
 * The supply model (docs/design.md, "Exact tests"): a CPU runs deadline entities at full speed. What
 * the kernel itself takes is modelled as one more task, the fair server (kernels since 6.12: 50 ms
 * every 1 s per CPU by default, as a sporadic task (50 ms, 1 s, 1 s); runtime 0 for kernels without
 * one), and the kernel's own admission test must pass as well: the tasks' bandwidths, each rounded
 * as the kernel's to_ratio() rounds it, may add up to at most cap_bw (the root domain's limit for
 * this CPU with the fair server's share already taken off, BW_UNIT = one CPU; UINT64_MAX when the
 * kernel's admission is off).
 *
 * The test, in the order it is applied:
 *   1. the kernel's cap: sum of bw_of(C, T) <= cap_bw (the kernel would refuse otherwise);
 *   2. utilization: U = sum C/T (server included) <= 1, else no schedule exists;
 *   3. processor demand: h(t) = sum over tasks with D <= t of (floor((t - D) / T) + 1) C <= t for
 *      every t up to a bound L, checked with Quick Processor-demand Analysis (Zhang and Burns,
 *      IEEE Transactions on Computers 58(9), 2009), L = min(L_a, L_b): L_a = max(D_max,
 *      sum (T - D) U / (1 - U)), L_b the synchronous busy period. When every D = T the demand
 *      test is the utilization test and is skipped.
 * Constrained deadlines only (C <= D <= T, as the kernel requires). All arithmetic is in integer
 * nanoseconds; U is compared with 1 in 32-bit fixed point with its rounding error carried, and
 * where that cannot tell (U within n / 2^32 of 1) the busy period decides. A set whose interval
 * cannot be bounded below EDF_HORIZON_MAX, or that takes more than EDF_STEPS_MAX steps, is
 * refused as undecided: the test never says yes without proof. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/params.h"

/* The longest test interval checked (about 146 years) and the most QPA or busy-period steps. */
#define EDF_HORIZON_MAX (UINT64_C(1) << 62)
#define EDF_STEPS_MAX UINT64_C(10000000)
/* The most tasks on one CPU. */
#define EDF_TASKS_MAX 65536u

/* A meter of the test's work, for a caller that must bound what one request may make it compute (the
 * daemon's Plan). One work unit is one task's term in one pass over a CPU's task set: checking a set
 * of n tasks (server included) costs n for reading it, n for each busy-period iteration, 2n for
 * each QPA step and for each deadline the search for the earliest violation looks at. So the work
 * of a request is about tasks x CPUs x test steps, counted where it is done. */
typedef struct EdfMeter {
        uint64_t used;   /* units counted so far (the pass that would have passed limit included) */
        uint64_t limit;  /* a pass that would take used above this is not run; UINT64_MAX: none */
} EdfMeter;

/* Charge units to meter (NULL: nothing): true, or false when they take it above its limit (they
 * are counted all the same; used saturates). For work of the caller's own that belongs to the same
 * request, such as its walk over the books. */
bool edf_meter_charge(EdfMeter *meter, uint64_t units);

/* The fair server of kernels since 6.12, by default. */
#define EDF_FAIR_SERVER_DEFAULT ((DlParams) { .runtime = 50 * UINT64_C(1000000), \
                                              .deadline = UINT64_C(1000000000), \
                                              .period = UINT64_C(1000000000) })

typedef struct EdfSupply {
        uint64_t cap_bw;  /* what the tasks' bandwidths may total (BW units); UINT64_MAX: no cap */
        DlParams server;  /* what the kernel runs there besides; runtime 0: nothing */
} EdfSupply;

/* Which test decided. */
typedef enum EdfTest {
        EDF_TEST_CAP,         /* the kernel's cap (refused) */
        EDF_TEST_UTILIZATION, /* U <= 1 with implicit deadlines (passed), or U > 1 (refused) */
        EDF_TEST_DEMAND,      /* the processor-demand test (QPA) */
        EDF_TEST_UNDECIDED,   /* the interval or the steps ran out: refused */
        _EDF_TEST_MAX,
} EdfTest;

typedef struct EdfVerdict {
        bool schedulable;
        EdfTest test;
        uint64_t bw_total;  /* the tasks' bandwidths summed (server excluded), BW units */
        uint64_t interval;  /* DEMAND: refused, a t where h(t) > t (the earliest when it is among the
                             * first 10,000 deadlines); passed, the bound L checked */
        uint64_t demand;    /* DEMAND refused: h(t) at that t */
        uint64_t steps;     /* QPA steps taken */
} EdfVerdict;

/* The supply of one CPU from the kernel's settings: cap_bw = to_ratio(rt_period, rt_runtime) less
 * the server's bandwidth (UINT64_MAX when rt_runtime_us < 0: admission off), and the server
 * (NULL: none). Returns 0, -EINVAL for rt_period 0 or a server breaking C <= D <= T, -ERANGE when
 * the server takes the whole cap. */
int edf_supply_from_kernel(int64_t rt_runtime_us, uint64_t rt_period_us, const DlParams *server, EdfSupply *ret);

/* Decide for the union of tasks[0..n) and extra[0..n_extra) (what is there and what is asked for;
 * either may be empty) on a CPU with the given supply. Returns 0 and fills *ret (refusals are not
 * errors), -EINVAL when a task breaks C <= D <= T or has a zero runtime, -E2BIG for more than
 * EDF_TASKS_MAX tasks, -ERANGE when the bandwidths' sum overflows. */
int edf_check(const DlParams *tasks, size_t n, const DlParams *extra, size_t n_extra, const EdfSupply *supply,
              EdfVerdict *ret);
/* edf_check() with its work charged to meter (NULL: not counted). Returns what edf_check() returns,
 * or -EDQUOT, *ret untouched, when the next pass would take meter->used above meter->limit (the
 * units of that pass are counted, so meter->used > meter->limit afterwards). */
int edf_check_metered(const DlParams *tasks, size_t n, const DlParams *extra, size_t n_extra,
                      const EdfSupply *supply, EdfMeter *meter, EdfVerdict *ret);

/* The processor demand h(t) of one task, saturating at UINT64_MAX. */
uint64_t edf_dbf(const DlParams *task, uint64_t t);

/* "the kernel's cap", "utilization", "processor demand (QPA)", "undecided". */
const char *edf_test_to_string(EdfTest t);
