/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The order of a dry run (see plan-order.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "core/plan-order.h"

const char *plan_order_to_string(PlanOrder o) {
        static const char *const names[_PLAN_ORDER_MAX] = {
                [PLAN_ORDER_GIVEN] = "given",
                [PLAN_ORDER_DECREASING] = "decreasing",
        };
        return (unsigned) o < _PLAN_ORDER_MAX ? names[o] : NULL;
}

int plan_order_from_string(const char *s, PlanOrder *ret) {
        for (unsigned o = 0; s && o < _PLAN_ORDER_MAX; o++)
                if (strcmp(s, plan_order_to_string((PlanOrder) o)) == 0) {
                        *ret = (PlanOrder) o;
                        return 0;
                }
        return -EINVAL;
}

/* The whole rule: whether task ia comes before task ib. */
static int before(const PlanTask *a, size_t ia, const PlanTask *b, size_t ib) {
        /* a's C/T above b's: Ca * Tb > Cb * Ta, exact in 128 bits. */
        unsigned __int128 x = (unsigned __int128) a->params.runtime * b->params.period,
                          y = (unsigned __int128) b->params.runtime * a->params.period;

        if (x != y)
                return x > y;
        if (a->params.deadline != b->params.deadline)
                return a->params.deadline < b->params.deadline;
        return ia < ib;
}

static int compare(const void *x, const void *y, void *userdata) {
        const PlanTask *tasks = userdata;
        size_t a = *(const size_t *) x, b = *(const size_t *) y;

        return before(&tasks[a], a, &tasks[b], b) ? -1 : before(&tasks[b], b, &tasks[a], a) ? 1 : 0;
}

int plan_order(const PlanTask *tasks, size_t n, PlanOrder o, size_t *perm) {
        if ((unsigned) o >= _PLAN_ORDER_MAX)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                perm[i] = i;
        if (o == PLAN_ORDER_DECREASING && n > 1)
                qsort_r(perm, n, sizeof *perm, compare, (void *) tasks);
        return 0;
}

int plan_run_ordered(const PlanTask *tasks, size_t n, PlanOrder o, unsigned ncpus, const EdfSupply *supply,
                     PlaceFit fit, PlanEntry *entries, PlanCpuLoad *loads) {
        _cleanup_free_ size_t *perm = NULL;
        _cleanup_free_ PlanTask *sorted = NULL;
        _cleanup_free_ PlanEntry *out = NULL;
        int r;

        if ((unsigned) o >= _PLAN_ORDER_MAX)
                return -EINVAL;
        if (o == PLAN_ORDER_GIVEN || n < 2)
                return plan_run(tasks, n, ncpus, supply, fit, entries, loads);
        perm = calloc(n, sizeof *perm);
        sorted = calloc(n, sizeof *sorted);
        out = calloc(n, sizeof *out);
        if (!perm || !sorted || !out)
                return -ENOMEM;
        r = plan_order(tasks, n, o, perm);
        if (r < 0)
                return r;
        for (size_t k = 0; k < n; k++)
                sorted[k] = tasks[perm[k]];
        r = plan_run(sorted, n, ncpus, supply, fit, out, loads);
        if (r < 0)
                return r;
        for (size_t k = 0; k < n; k++) {
                entries[perm[k]] = out[k];
                if (out[k].room) /* the moved task, by its place in the caller's order */
                        entries[perm[k]].room_task = perm[out[k].room_task];
        }
        return 0;
}
