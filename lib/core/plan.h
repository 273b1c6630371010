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
        bool moved;              /* PLACED: a later task's room moved it; cpu is where it ends */
        bool room;               /* PLACED after one move made room (placement.h, place_make_room()): */
        size_t room_task;        /* the task moved (its index in the plan), */
        unsigned room_from, room_to; /* from this CPU (the one this task took) to that one */
} PlanEntry;

typedef struct PlanCpuLoad {
        unsigned id;
        uint64_t cap_bw, bw;     /* what it may take and what the plan put there */
        size_t n_tasks;          /* whole tasks and stages */
} PlanCpuLoad;

/* Plan tasks[0..n) on CPUs 0..ncpus-1, each with `supply`, with the fit, as the daemon admits: a
 * task no CPU takes whole is placed after moving one placed task where that makes room
 * (place_make_room(); a split's stages never move), else split where it may be; entries[i] receives
 * tasks[i]'s outcome and loads (when not NULL, ncpus entries) the CPUs' totals at the end.
 * Returns 0, -EINVAL for no CPUs, more than PLAN_CPUS_MAX, a bad fit or a task breaking
 * C <= D <= T, -ENOMEM, or what edf_check() returns. */
int plan_run(const PlanTask *tasks, size_t n, unsigned ncpus, const EdfSupply *supply, PlaceFit fit,
             PlanEntry *entries, PlanCpuLoad *loads);
/* plan_run() with the move for room on (as plan_run() and the daemon) or off (best fit alone, to
 * measure what the move buys). */
int plan_run_with(const PlanTask *tasks, size_t n, unsigned ncpus, const EdfSupply *supply, PlaceFit fit, bool may_move,
                  PlanEntry *entries, PlanCpuLoad *loads);

/* What one caller may make a dry run against a daemon's books compute: a budget of work units
 * (core/edf.h's EdfMeter) per window of time, counted as core/rate.h counts requests (a window opens
 * at the first call after the previous one closed). The daemon keeps one window per user. */
typedef struct PlanBudgetWindow {
        uint64_t start;  /* when the current window opened */
        uint64_t used;   /* units charged in it */
        bool open;
} PlanBudgetWindow;

/* The units the caller has left at time now (ns) with `budget` units per `window` ns, opening a new
 * window when the last one is over (a call asks this first, runs with at most that much, then
 * charges what it used). UINT64_MAX when there is no budget (budget UINT64_MAX or window 0). */
uint64_t plan_budget_left(PlanBudgetWindow *w, uint64_t now, uint64_t budget, uint64_t window);
/* Charge units to the window (saturating). */
void plan_budget_charge(PlanBudgetWindow *w, uint64_t units);
/* The ns until the current window closes at time now (0 when none is open or it is over). */
uint64_t plan_budget_resets_in(const PlanBudgetWindow *w, uint64_t now, uint64_t window);

/* "placed", "split", "refused". */
const char *plan_outcome_to_string(PlanOutcome o);
