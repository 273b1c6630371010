/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The dry run against the live books (the Plan bus method, `edfctl plan --live`). */

#include <stdbool.h>
#include <stddef.h>

#include "core/edf.h"
#include "core/plan.h"
#include "manager.h"

/* The thread ids a plan books its tasks under: no thread has one. */
#define PLAN_TID_BASE 0x80000000u

/* At most this many tasks per call: the bus caps what one caller may make edfd compute. */
#define MANAGER_PLAN_TASKS_MAX 1024

/* What one Plan may make edfd compute, in the exact test's work units (core/edf.h, EdfMeter: one
 * task's term in one pass over a CPU's task set; the walk over the books for each task counts one
 * per reservation): the tests run on the event loop, so every other call waits meanwhile. A call
 * that reaches its limit is refused whole (LimitExceeded, "plan too costly", the limit named) and
 * changes nothing.
 * - per call: MANAGER_PLAN_UNITS_MAX for every caller but root (about 7 ms of this 2-CPU test
 *   machine's time, docs/performance.md), MANAGER_PLAN_UNITS_ROOT_MAX for root;
 * - per user: MANAGER_PLAN_BUDGET units per MANAGER_PLAN_BUDGET_WINDOW_NS, charged with what each
 *   call used (a refused one too), counted as the request rate is (a window opens at the first
 *   call after the last one closed); a call runs with at most what is left. Root has no budget.
 * Large constrained task sets are for `edfctl plan` without --live, which runs in the client. */
#define MANAGER_PLAN_UNITS_MAX UINT64_C(2000000)
#define MANAGER_PLAN_UNITS_ROOT_MAX UINT64_C(200000000)
#define MANAGER_PLAN_BUDGET UINT64_C(10000000)
#define MANAGER_PLAN_BUDGET_WINDOW_NS (10 * UINT64_C(1000000000))

typedef struct LivePlanEntry {
        PlanEntry entry;        /* outcome, CPUs, stages, verdict; reason when refused */
        const char *group;      /* the group decided for (the default resolved); NULL when none */
        bool partitioned;       /* placed on a CPU of a partition (entry.cpu), else globally */
        const char *test;       /* what decided: "utilization", "processor demand", "group bandwidth", ... */
} LivePlanEntry;

/* Decide tasks[0..n) in order, each as Admit (or, for a task whose split is allowed and that no CPU
 * of its partitioned group takes whole, AdmitSplit) would decide it now for caller c: the group,
 * the kernel's limits on the times, the group's users: list, c's per-user limits (the number of
 * reservations and the bandwidth, with the plan's earlier tasks counted as c's), the group's room
 * up the tree, and the placement with the exact per-CPU test; each task decided is booked (as c's)
 * for the ones after it, and every booking is taken out again before this returns (the id counter
 * included). Not checked: polkit (a plan asks nobody), the threads (a plan names none). Nothing is
 * applied: no kernel call, no cgroup, no journal line, no signal. The work is bounded as said
 * above and charged to c's budget. out has n entries; *ret_units (may be NULL) receives the work
 * units counted. Returns 0, or -1 with *e: OP_INVALID for more than MANAGER_PLAN_TASKS_MAX tasks,
 * OP_LIMIT_EXCEEDED for a plan over its limit or a user whose budget is used up, OP_ERRNO
 * (-ENOMEM); the books as they were in every case. */
int manager_plan(Manager *m, const Caller *c, const PlanTask *tasks, size_t n, LivePlanEntry *out,
                 uint64_t *ret_units, OpError *e);

/* manager-place.c: the placement part of manager_plan(): for a request that passed the group's
 * room, where it would go (ret->outcome PLAN_PLACED with *ret_partitioned and ret->cpu, PLAN_SPLIT
 * when may_split and no CPU takes it whole, or PLAN_REFUSED with ret->reason), its tests charged
 * to meter (NULL: not counted; the walk over the books counts one unit per reservation). Returns
 * 0, or -1 with *e for errors that are not refusals (e->err -EDQUOT: the meter ran out). */
int place_plan(Manager *m, const Group *g, const DlParams *p, bool may_split, EdfMeter *meter, PlanEntry *ret,
               bool *ret_partitioned, OpError *e);
/* Where no CPU takes it whole, place_plan() moves one booked reservation for room as Admit would
 * (ret->room, ret->room_task its id, ret->reason the sentence), in the books only; this puts every
 * such reservation back on its CPU, the last move first. */
void place_plan_undo(Manager *m);
