/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The order a dry run decides a task set in. Best fit decides in the order it is given, as edfd
 * admits requests as they come; offline, a set may be decided in decreasing utilization instead
 * (the classic first-fit/best-fit-decreasing heuristics of bin packing), which places the big
 * tasks while every CPU still has room and loses fewer feasible sets (tests/bench/bench-plan-loss
 * measures how many against a search over every assignment). Pure. */

#include <stddef.h>

#include "core/plan.h"

typedef enum PlanOrder {
        PLAN_ORDER_GIVEN,
        PLAN_ORDER_DECREASING,
        _PLAN_ORDER_MAX,
} PlanOrder;

/* "given", "decreasing"; NULL for anything else. */
const char *plan_order_to_string(PlanOrder o);
/* The order named s into *ret; 0, or -EINVAL. */
int plan_order_from_string(const char *s, PlanOrder *ret);

/* The positions of tasks[0..n) in the order o: perm[k] is the index of the k-th task to decide.
 * DECREASING: by utilization C/T, the largest first (compared exactly, by cross-multiplication),
 * ties by the shorter deadline, then by the given position, so the order is total and stable.
 * Returns 0, or -EINVAL for an unknown order. perm holds n entries. */
int plan_order(const PlanTask *tasks, size_t n, PlanOrder o, size_t *perm);

/* plan_run() of tasks decided in the order o; entries[i] is still tasks[i]'s outcome. Returns what
 * plan_run() returns, -EINVAL for an unknown order, or -ENOMEM. */
int plan_run_ordered(const PlanTask *tasks, size_t n, PlanOrder o, unsigned ncpus, const EdfSupply *supply,
                     PlaceFit fit, PlanEntry *entries, PlanCpuLoad *loads);
