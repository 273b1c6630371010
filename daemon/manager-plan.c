/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The dry run against the live books (manager-plan.h). The tasks are booked in the tree itself, as
 * reservations of thread ids no thread can have, so that every rule that reads the books (the
 * group's room up the tree, the per-CPU task sets of the placement) sees them exactly as it would
 * see admitted ones; the event loop runs nothing else meanwhile, and they are gone before the call
 * returns. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capacity.h"
#include "core/bandwidth.h"
#include "core/edf.h"
#include "manager-internal.h"
#include "manager-plan.h"

/* Above every real thread id (the kernel's pid_max is at most 2^22), below 2^32. */
#define PLAN_TID_BASE 0x80000000u

static void refuse(LivePlanEntry *out, const char *message) {
        out->entry.outcome = PLAN_REFUSED;
        snprintf(out->entry.reason, sizeof out->entry.reason, "%s", message);
        out->test = "-";
}

static void refuse_with(LivePlanEntry *out, const Refusal *rf) {
        OpError e = {};

        (void) op_refused(&e, rf);
        refuse(out, e.message);
}

/* Book params on cpu (partitioned) or globally for the tasks after this one. */
static int book(Manager *m, Group *g, uint32_t tid, const DlParams *p, bool partitioned, uint32_t cpu,
                Reservation **booked, size_t *n_booked, LivePlanEntry *out) {
        ReservationSpec spec = { .pid = tid, .tid = tid, .uid = 0, .params = *p, .partitioned = partitioned, .cpu = cpu };
        Refusal rf;
        int r;

        r = reservation_admit(m->tree, g, &spec, &booked[*n_booked], &rf);
        if (r < 0)
                return r;
        if (r > 0) { /* not after the checks above; kept for the day a rule moves */
                refuse_with(out, &rf);
                return 0;
        }
        (*n_booked)++;
        return 0;
}

int manager_plan(Manager *m, const PlanTask *tasks, size_t n, LivePlanEntry *out) {
        _cleanup_free_ Reservation **booked = NULL;
        uint64_t next_id = m->tree->next_id;
        const char *fallback = m->config && m->config->default_group ? m->config->default_group : "/";
        size_t n_booked = 0;
        int r = 0;

        if (n > MANAGER_PLAN_TASKS_MAX)
                return -EINVAL;
        booked = calloc(2 * n + 1, sizeof(*booked));
        if (!booked)
                return -ENOMEM;

        for (size_t i = 0; r == 0 && i < n; i++) {
                const char *path = tasks[i].group && *tasks[i].group ? tasks[i].group : fallback;
                Group *g = tree_find_group(m->tree, path);
                DlParams p = tasks[i].params;
                ParamsOutcome o;
                OpError e = {};
                uint64_t bw;

                out[i] = (LivePlanEntry) { .entry.outcome = PLAN_REFUSED, .test = "-" };
                if (!g) {
                        refuse_with(&out[i], &(Refusal) { .outcome = ADMIT_NO_SUCH_GROUP, .name = path });
                        continue;
                }
                out[i].group = g->path;
                o = dl_params_check(&p, &capacity_kernel(m->capacity)->limits);
                if (o != PARAMS_OK) {
                        refuse_with(&out[i], &(Refusal) { .outcome = ADMIT_BAD_PARAMS, .params = o, .name = g->path });
                        continue;
                }
                if (p.deadline == 0)
                        p.deadline = p.period;
                if (bw_of(p.runtime, p.period, &bw) < 0 || !group_has_room(m->tree, g, 0, bw)) {
                        Refusal rf;
                        (void) group_refuse_budget(m->tree, g, bw, &rf);
                        refuse_with(&out[i], &rf);
                        continue;
                }
                if (place_plan(m, g, &p, tasks[i].split, &out[i].entry, &out[i].partitioned, &e) < 0) {
                        r = e.err < 0 ? e.err : -ENOMEM;
                        break;
                }
                switch (out[i].entry.outcome) {
                case PLAN_PLACED:
                        out[i].test = out[i].partitioned ? edf_test_to_string(out[i].entry.verdict.test)
                                                         : "group bandwidth (global EDF)";
                        r = book(m, g, PLAN_TID_BASE + (uint32_t) i, &p, out[i].partitioned, out[i].entry.cpu, booked,
                                 &n_booked, &out[i]);
                        break;
                case PLAN_SPLIT:
                        out[i].partitioned = true;
                        out[i].test = edf_test_to_string(out[i].entry.verdict.test);
                        r = book(m, g, PLAN_TID_BASE + (uint32_t) i, &out[i].entry.stage1, true, out[i].entry.cpu,
                                 booked, &n_booked, &out[i]);
                        if (r == 0 && out[i].entry.outcome == PLAN_SPLIT) {
                                r = book(m, g, PLAN_TID_BASE + (uint32_t) (n + i), &out[i].entry.stage2, true,
                                         out[i].entry.cpu_b, booked, &n_booked, &out[i]);
                                if (r == 0 && out[i].entry.outcome != PLAN_SPLIT) /* both stages or neither */
                                        reservation_release(m->tree, booked[--n_booked], NULL);
                        }
                        break;
                default:
                        out[i].test = "-";
                        break;
                }
        }

        /* Out again, the last first, and the ids as they were: a plan leaves no trace. */
        while (n_booked > 0)
                reservation_release(m->tree, booked[--n_booked], NULL);
        m->tree->next_id = next_id;
        return r;
}
