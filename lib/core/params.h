/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The deadline parameter rules, matching the kernel's __checkparam_dl(), plus edfd's convention
 * that a deadline of 0 means "equal to the period". The kernel never receives a zero deadline
 * from edfd, and a zero period is refused (the kernel would read it as "period = deadline", which
 * is a different convention from ours). */

#include <stdint.h>

/* The kernel refuses runtimes below 1 << DL_SCALE ns. */
#define DL_RUNTIME_MIN UINT64_C(1024)

typedef struct DlParams {
        uint64_t runtime;
        uint64_t deadline;
        uint64_t period;
} DlParams;

/* What the kernel allows for periods, from /proc/sys/kernel/sched_deadline_period_{min,max}_us. */
typedef struct DlLimits {
        uint64_t period_min; /* ns */
        uint64_t period_max; /* ns */
} DlLimits;

/* The kernel's defaults (100 us and 4194304 us), for tests and for a daemon that cannot read /proc. */
#define DL_LIMITS_DEFAULT ((DlLimits) { .period_min = 100 * UINT64_C(1000), .period_max = UINT64_C(4194304000) })

typedef enum ParamsOutcome {
        PARAMS_OK = 0,
        PARAMS_PERIOD_ZERO,
        PARAMS_BIT63,
        PARAMS_RUNTIME_TOO_SMALL,
        PARAMS_RUNTIME_ABOVE_DEADLINE,
        PARAMS_DEADLINE_ABOVE_PERIOD,
        PARAMS_PERIOD_TOO_SHORT,
        PARAMS_PERIOD_TOO_LONG,
        _PARAMS_MAX,
} ParamsOutcome;

/* Check p against the rules and limits. On PARAMS_OK, p->deadline is filled with p->period when it
 * was 0; on any refusal p is left as it was. The checks run in the order of the enum, so each
 * violation has exactly one named outcome. */
ParamsOutcome dl_params_check(DlParams *p, const DlLimits *limits);

/* A sentence fragment for an outcome ("runtime is below 1024ns"), static. */
const char *params_outcome_to_string(ParamsOutcome o);
