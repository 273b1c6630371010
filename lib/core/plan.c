/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The dry run (see plan.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/plan.h"
#include "basic/macro.h"
#include "core/bandwidth.h"

typedef struct CpuSet {
        DlParams *tasks;
        size_t *owner;  /* the index of each task in the plan's tasks */
        bool *pinned;   /* a split's stages stay where the split put them */
        size_t n, allocated;
} CpuSet;

static int push(CpuSet *c, const DlParams *p, size_t owner, bool pinned) {
        if (c->n == c->allocated) {
                size_t m = c->allocated ? c->allocated * 2 : 8;
                DlParams *t = realloc(c->tasks, m * sizeof(*t));
                if (!t)
                        return -ENOMEM;
                c->tasks = t;
                size_t *o = realloc(c->owner, m * sizeof(*o));
                if (!o)
                        return -ENOMEM;
                c->owner = o;
                bool *q = realloc(c->pinned, m * sizeof(*q));
                if (!q)
                        return -ENOMEM;
                c->pinned = q;
                c->allocated = m;
        }
        c->owner[c->n] = owner;
        c->pinned[c->n] = pinned;
        c->tasks[c->n++] = *p;
        return 0;
}

static void views(const CpuSet *sets, unsigned ncpus, const EdfSupply *supply, PlaceCpu *out) {
        for (unsigned i = 0; i < ncpus; i++)
                out[i] = (PlaceCpu) { .id = i, .supply = *supply, .tasks = sets[i].tasks, .n_tasks = sets[i].n,
                                      .pinned = sets[i].pinned };
}

/* Room by one move (placement.h): task `i` goes where the move made room, the moved task to its new
 * CPU. Returns 0, -ENOSPC when no move helps, or an error. */
static int room(CpuSet *sets, unsigned ncpus, const PlaceCpu *v, const PlanTask *tasks, size_t i, PlaceFit fit,
                PlanEntry *entries) {
        PlaceMove mv;
        int r;

        r = place_make_room(v, ncpus, &tasks[i].params, fit, 0, &mv, NULL);
        if (r < 0)
                return r;
        CpuSet *from = &sets[mv.from];
        size_t moved = from->owner[mv.task];
        DlParams p = from->tasks[mv.task];

        /* The request takes the moved task's slot; the moved task joins its new CPU. */
        from->tasks[mv.task] = tasks[i].params;
        from->owner[mv.task] = i;
        from->pinned[mv.task] = false;
        r = push(&sets[mv.to], &p, moved, false);
        if (r < 0)
                return r;
        entries[moved].cpu = (unsigned) mv.to;
        entries[moved].verdict = mv.verdict_to;
        entries[moved].moved = true;
        entries[i] = (PlanEntry) { .outcome = PLAN_PLACED, .cpu = (unsigned) mv.from, .verdict = mv.verdict_from,
                                   .room = true, .room_task = moved, .room_from = (unsigned) mv.from,
                                   .room_to = (unsigned) mv.to };
        return 0;
}

int plan_run(const PlanTask *tasks, size_t n, unsigned ncpus, const EdfSupply *supply, PlaceFit fit,
             PlanEntry *entries, PlanCpuLoad *loads) {
        return plan_run_with(tasks, n, ncpus, supply, fit, true, entries, loads);
}

int plan_run_with(const PlanTask *tasks, size_t n, unsigned ncpus, const EdfSupply *supply, PlaceFit fit, bool may_move,
                  PlanEntry *entries, PlanCpuLoad *loads) {
        CpuSet *sets = NULL;
        PlaceCpu *v = NULL;
        EdfVerdict *verdicts = NULL;
        int r = 0;

        if (ncpus == 0 || ncpus > PLAN_CPUS_MAX || (unsigned) fit >= _PLACE_FIT_MAX)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                const DlParams *p = &tasks[i].params;
                if (p->runtime < DL_RUNTIME_MIN || p->runtime > p->deadline || p->deadline > p->period)
                        return -EINVAL;
        }
        sets = calloc(ncpus, sizeof(*sets));
        v = calloc(ncpus, sizeof(*v));
        verdicts = calloc(ncpus, sizeof(*verdicts));
        if (!sets || !v || !verdicts) {
                r = -ENOMEM;
                goto finish;
        }

        for (size_t i = 0; i < n; i++) {
                PlanEntry *e = &entries[i];
                size_t at;
                PlaceSplit sp;

                *e = (PlanEntry) { .outcome = PLAN_REFUSED };
                views(sets, ncpus, supply, v);
                r = place_choose(v, ncpus, &tasks[i].params, fit, &at, verdicts);
                if (r == 0) {
                        e->outcome = PLAN_PLACED;
                        e->cpu = (unsigned) at;
                        e->verdict = verdicts[at];
                        r = push(&sets[at], &tasks[i].params, i, false);
                        if (r < 0)
                                goto finish;
                        continue;
                }
                if (r != -ENOSPC)
                        goto finish;
                place_format_refusal(v, ncpus, &tasks[i].params, verdicts, e->reason, sizeof(e->reason));
                r = may_move ? room(sets, ncpus, v, tasks, i, fit, entries) : -ENOSPC;
                if (r == 0)
                        continue;
                if (r != -ENOSPC)
                        goto finish;
                if (!tasks[i].split) {
                        r = 0;
                        continue;
                }
                r = place_split(v, ncpus, &tasks[i].params, fit, PLACE_SPLIT_MIN_STAGE_DEFAULT, &sp);
                if (r == -ENOSPC) {
                        size_t len = strlen(e->reason);
                        snprintf(e->reason + len, sizeof(e->reason) - len, "; no two CPUs can take it split either");
                        r = 0;
                        continue;
                }
                if (r < 0)
                        goto finish;
                e->outcome = PLAN_SPLIT;
                e->cpu = (unsigned) sp.index_a;
                e->cpu_b = (unsigned) sp.index_b;
                e->stage1 = sp.stage1;
                e->stage2 = sp.stage2;
                e->verdict = sp.verdict_b;
                e->reason[0] = '\0';
                r = push(&sets[sp.index_a], &sp.stage1, i, true);
                if (r >= 0)
                        r = push(&sets[sp.index_b], &sp.stage2, i, true);
                if (r < 0)
                        goto finish;
        }

        views(sets, ncpus, supply, v);
        for (unsigned c = 0; loads && c < ncpus; c++) {
                EdfVerdict ver;

                r = edf_check(sets[c].tasks, sets[c].n, NULL, 0, supply, &ver);
                if (r < 0)
                        goto finish;
                loads[c] = (PlanCpuLoad) { .id = c, .cap_bw = place_left(&v[c], 0), .bw = ver.bw_total, .n_tasks = sets[c].n };
        }
        r = 0;
finish:
        for (unsigned c = 0; sets && c < ncpus; c++) {
                free(sets[c].tasks);
                free(sets[c].owner);
                free(sets[c].pinned);
        }
        free(sets);
        free(v);
        free(verdicts);
        return r;
}

uint64_t plan_budget_left(PlanBudgetWindow *w, uint64_t now, uint64_t budget, uint64_t window) {
        if (budget == UINT64_MAX || window == 0)
                return UINT64_MAX;
        if (!w->open || now < w->start || now - w->start >= window) /* a clock gone back opens one too */
                *w = (PlanBudgetWindow) { .start = now, .open = true };
        return w->used < budget ? budget - w->used : 0;
}

void plan_budget_charge(PlanBudgetWindow *w, uint64_t units) {
        w->used = units > UINT64_MAX - w->used ? UINT64_MAX : w->used + units;
}

uint64_t plan_budget_resets_in(const PlanBudgetWindow *w, uint64_t now, uint64_t window) {
        if (!w->open || now < w->start || now - w->start >= window)
                return 0;
        return window - (now - w->start);
}

const char *plan_outcome_to_string(PlanOutcome o) {
        static const char *const names[_PLAN_OUTCOME_MAX] = {
                [PLAN_PLACED] = "placed",
                [PLAN_SPLIT] = "split",
                [PLAN_REFUSED] = "refused",
        };
        return (unsigned) o < _PLAN_OUTCOME_MAX ? names[o] : "?";
}
