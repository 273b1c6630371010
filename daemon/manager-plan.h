/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The dry run against the live books (the Plan bus method, `edfctl plan --live`). */

#include <stdbool.h>
#include <stddef.h>

#include "core/plan.h"
#include "manager.h"

/* At most this many tasks per call: the bus caps what one caller may make edfd compute. */
#define MANAGER_PLAN_TASKS_MAX 1024

typedef struct LivePlanEntry {
        PlanEntry entry;        /* outcome, CPUs, stages, verdict; reason when refused */
        const char *group;      /* the group decided for (the default resolved); NULL when none */
        bool partitioned;       /* placed on a CPU of a partition (entry.cpu), else globally */
        const char *test;       /* what decided: "utilization", "processor demand", "group bandwidth", ... */
} LivePlanEntry;

/* Decide tasks[0..n) in order, each as Admit (or, for a task whose split is allowed and that no CPU
 * of its partitioned group takes whole, AdmitSplit) would decide it now: the group's room up the
 * tree, the kernel's limits on the times, and the placement with the exact per-CPU test; each task
 * decided is booked for the ones after it, and every booking is taken out again before this
 * returns (the id counter included). Who may admit (users:, per-user limits, polkit) is not
 * checked: a plan names no caller. Nothing is applied: no kernel call, no cgroup, no journal line,
 * no signal. out has n entries. Returns 0, or -EINVAL for more than MANAGER_PLAN_TASKS_MAX tasks,
 * or -ENOMEM (the books as they were). */
int manager_plan(Manager *m, const PlanTask *tasks, size_t n, LivePlanEntry *out);

/* manager-place.c: the placement part of manager_plan(): for a request that passed the group's
 * room, where it would go (ret->outcome PLAN_PLACED with *ret_partitioned and ret->cpu, PLAN_SPLIT
 * when may_split and no CPU takes it whole, or PLAN_REFUSED with ret->reason). Returns 0, or -1
 * with *e for errors that are not refusals. */
int place_plan(Manager *m, const Group *g, const DlParams *p, bool may_split, PlanEntry *ret, bool *ret_partitioned,
               OpError *e);
