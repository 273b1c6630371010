/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "basic/macro.h"
#include "core/params.h"

ParamsOutcome dl_params_check(DlParams *p, const DlLimits *limits) {
        uint64_t deadline = p->deadline == 0 ? p->period : p->deadline;

        if (p->period == 0)
                return PARAMS_PERIOD_ZERO;
        /* The kernel reserves bit 63 (it compares signed values internally). */
        if ((p->runtime | deadline | p->period) & (UINT64_C(1) << 63))
                return PARAMS_BIT63;
        if (p->runtime < DL_RUNTIME_MIN)
                return PARAMS_RUNTIME_TOO_SMALL;
        if (p->runtime > deadline)
                return PARAMS_RUNTIME_ABOVE_DEADLINE;
        if (deadline > p->period)
                return PARAMS_DEADLINE_ABOVE_PERIOD;
        if (limits && p->period < limits->period_min)
                return PARAMS_PERIOD_TOO_SHORT;
        if (limits && p->period > limits->period_max)
                return PARAMS_PERIOD_TOO_LONG;

        p->deadline = deadline;
        return PARAMS_OK;
}

const char *params_outcome_to_string(ParamsOutcome o) {
        static const char *const table[_PARAMS_MAX] = {
                [PARAMS_OK] = "parameters are valid",
                [PARAMS_PERIOD_ZERO] = "period is 0",
                [PARAMS_BIT63] = "a value has bit 63 set",
                [PARAMS_RUNTIME_TOO_SMALL] = "runtime is below 1024ns, the kernel's minimum",
                [PARAMS_RUNTIME_ABOVE_DEADLINE] = "runtime is above the deadline",
                [PARAMS_DEADLINE_ABOVE_PERIOD] = "deadline is above the period",
                [PARAMS_PERIOD_TOO_SHORT] = "period is below the kernel's minimum (sched_deadline_period_min_us)",
                [PARAMS_PERIOD_TOO_LONG] = "period is above the kernel's maximum (sched_deadline_period_max_us)",
        };
        if ((unsigned) o >= _PARAMS_MAX)
                return "unknown parameter error";
        return table[o];
}
