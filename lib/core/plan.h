/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The dry run: place a whole task set, in the order given, on m CPUs of one partitioned placement,
 * as edfd would admit the tasks one after the other, and say for each what happened and which test
 * decided. Pure: `edfctl plan` reads the file and prints; the daemon's dry-run method will feed its
 * own CPUs in. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/edf.h"
#include "core/placement.h"

#define PLAN_CPUS_MAX 1024u
#define PLAN_REASON_MAX 512

typedef struct PlanTask {
        const char *name;  /* for the caller's messages; may be NULL */
        const char *group; /* a label: offline plans do not know group sizes; may be NULL */
        DlParams params;   /* checked: C <= D <= T, C >= DL_RUNTIME_MIN */
        bool split;        /* the application can run it as two stages (placement.h) */
} PlanTask;

typedef enum PlanOutcome {
        PLAN_PLACED,
        PLAN_SPLIT,
        PLAN_REFUSED,
        _PLAN_OUTCOME_MAX,
} PlanOutcome;

typedef struct PlanEntry {
        PlanOutcome outcome;
        unsigned cpu;            /* PLACED: its CPU; SPLIT: stage 1's */
        unsigned cpu_b;          /* SPLIT: stage 2's */
        DlParams stage1, stage2; /* SPLIT */
        EdfVerdict verdict;      /* PLACED: its CPU's; SPLIT: stage 2's CPU's */
        char reason[PLAN_REASON_MAX]; /* REFUSED */
} PlanEntry;

typedef struct PlanCpuLoad {
        unsigned id;
        uint64_t cap_bw, bw;     /* what it may take and what the plan put there */
        size_t n_tasks;          /* whole tasks and stages */
} PlanCpuLoad;

/* Plan tasks[0..n) on CPUs 0..ncpus-1, each with `supply`, with the fit; entries[i] receives
 * tasks[i]'s outcome and loads (when not NULL, ncpus entries) the CPUs' totals at the end.
 * Returns 0, -EINVAL for no CPUs, more than PLAN_CPUS_MAX, a bad fit or a task breaking
 * C <= D <= T, -ENOMEM, or what edf_check() returns. */
int plan_run(const PlanTask *tasks, size_t n, unsigned ncpus, const EdfSupply *supply, PlaceFit fit,
             PlanEntry *entries, PlanCpuLoad *loads);

/* "placed", "split", "refused". */
const char *plan_outcome_to_string(PlanOutcome o);
