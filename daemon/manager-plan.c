/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The dry run against the live books (manager-plan.h). The tasks are booked in the tree itself, as
 * reservations of the caller's of thread ids no thread can have, so that every rule that reads the
 * books (the group's room up the tree, the caller's per-user limits, the per-CPU task sets of the
 * placement) sees them exactly as it would see admitted ones; the event loop runs nothing else
 * meanwhile, and they are gone before the call returns. That is also why its work is bounded: every
 * other caller, root included, waits while it runs. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "capacity.h"
#include "core/admission.h"
#include "core/bandwidth.h"
#include "core/edf.h"
#include "log.h"
#include "manager-internal.h"
#include "manager-plan.h"

/* Above every real thread id (the kernel's pid_max is at most 2^22), below 2^32. */

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

/* The caller's own limits for add_bw and add_n more (root: none). Returns true when they hold;
 * false with the refusal in *out. */
static bool within_limits(Manager *m, const AdmissionCaller *ac, uint64_t add_bw, size_t add_n, LivePlanEntry *out) {
        Refusal rf;

        if (ac->uid == 0 || user_limits_check(m->tree, ac->uid, &ac->limits, add_bw, add_n, &rf) == 0)
                return true;
        rf.user = ac->user;
        refuse_with(out, &rf);
        return false;
}

/* Book params on cpu (partitioned) or globally, as the caller's, for the tasks after this one. */
static int book(Manager *m, Group *g, uint32_t uid, uint32_t tid, const DlParams *p, bool partitioned, uint32_t cpu,
                Reservation **booked, size_t *n_booked, LivePlanEntry *out) {
        ReservationSpec spec = { .pid = tid, .tid = tid, .uid = uid, .params = *p, .partitioned = partitioned,
                                 .cpu = cpu };
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

/* The caller's budget window, made on first use; NULL for -ENOMEM. */
static PlanBudgetWindow *budget_of(Manager *m, uint32_t uid) {
        PlanBudgetWindow *w = hashmap_get(&m->plan.budgets, (uint64_t) uid + 1);

        if (w)
                return w;
        w = calloc(1, sizeof(*w));
        if (!w || hashmap_put(&m->plan.budgets, (uint64_t) uid + 1, w) < 0) {
                free(w);
                return NULL;
        }
        return w;
}

/* The tasks, decided in order with their tests charged to meter. Returns 0, or a negative errno
 * (-EDQUOT: the meter ran out at task *ret_at). The books as they were in every case. */
static int plan_tasks(Manager *m, const AdmissionCaller *ac, const PlanTask *tasks, size_t n, LivePlanEntry *out,
                      EdfMeter *meter, size_t *ret_at) {
        _cleanup_free_ Reservation **booked = NULL;
        uint64_t next_id = m->tree->next_id;
        const char *fallback = m->config && m->config->default_group ? m->config->default_group : "/";
        size_t n_booked = 0, i;
        int r = 0;

        booked = calloc(2 * n + 1, sizeof(*booked));
        if (!booked)
                return -ENOMEM;

        for (i = 0; r == 0 && i < n; i++) {
                const char *path = tasks[i].group && *tasks[i].group ? tasks[i].group : fallback;
                Group *g = tree_find_group(m->tree, path);
                DlParams p = tasks[i].params;
                ParamsOutcome o;
                OpError e = {};
                uint64_t bw;

                out[i] = (LivePlanEntry) { .entry.outcome = PLAN_REFUSED, .test = "-" };
                if (!edf_meter_charge(meter, 1)) { /* the lookups and the booking */
                        r = -EDQUOT;
                        break;
                }
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
                if (!admission_group_allows(g, ac->uid, ac->user)) {
                        refuse_with(&out[i],
                                    &(Refusal) { .outcome = ADMIT_NOT_ALLOWED, .name = g->path, .uid = ac->uid });
                        continue;
                }
                if (p.deadline == 0)
                        p.deadline = p.period;
                bool number = bw_of(p.runtime, p.period, &bw) == 0;
                if (!number)
                        bw = 0; /* the room refuses it below, with Admit's words */
                if (!within_limits(m, ac, bw, 1, &out[i]))
                        continue;
                if (!number || !group_has_room(m->tree, g, 0, bw)) {
                        Refusal rf;
                        (void) group_refuse_budget(m->tree, g, bw, &rf);
                        refuse_with(&out[i], &rf);
                        continue;
                }
                if (place_plan(m, g, &p, tasks[i].split, meter, &out[i].entry, &out[i].partitioned, &e) < 0) {
                        r = e.err < 0 ? e.err : -ENOMEM;
                        break;
                }
                switch (out[i].entry.outcome) {
                case PLAN_PLACED:
                        out[i].test = out[i].partitioned ? edf_test_to_string(out[i].entry.verdict.test)
                                                         : "group bandwidth (global EDF)";
                        r = book(m, g, ac->uid, PLAN_TID_BASE + (uint32_t) i, &p, out[i].partitioned, out[i].entry.cpu,
                                 booked, &n_booked, &out[i]);
                        break;
                case PLAN_SPLIT: {
                        uint64_t bw1 = 0, bw2 = 0;

                        (void) bw_of(out[i].entry.stage1.runtime, out[i].entry.stage1.period, &bw1);
                        (void) bw_of(out[i].entry.stage2.runtime, out[i].entry.stage2.period, &bw2);
                        if (!within_limits(m, ac, bw1 + bw2, 2, &out[i])) /* two reservations: AdmitSplit's */
                                break;
                        out[i].partitioned = true;
                        out[i].test = edf_test_to_string(out[i].entry.verdict.test);
                        r = book(m, g, ac->uid, PLAN_TID_BASE + (uint32_t) i, &out[i].entry.stage1, true,
                                 out[i].entry.cpu, booked, &n_booked, &out[i]);
                        if (r == 0 && out[i].entry.outcome == PLAN_SPLIT) {
                                r = book(m, g, ac->uid, PLAN_TID_BASE + (uint32_t) (n + i), &out[i].entry.stage2, true,
                                         out[i].entry.cpu_b, booked, &n_booked, &out[i]);
                                if (r == 0 && out[i].entry.outcome != PLAN_SPLIT) /* both stages or neither */
                                        reservation_release(m->tree, booked[--n_booked], NULL);
                        }
                        break;
                }
                default:
                        out[i].test = "-";
                        break;
                }
        }

        /* Out again, the last first, and the ids as they were: a plan leaves no trace. */
        place_plan_undo(m);
        while (n_booked > 0)
                reservation_release(m->tree, booked[--n_booked], NULL);
        m->tree->next_id = next_id;
        *ret_at = i;
        return r;
}

static char *units_format(uint64_t v, char buf[static 32]) {
        snprintf(buf, 32, "%" PRIu64, v);
        return buf;
}

int manager_plan(Manager *m, const Caller *c, const PlanTask *tasks, size_t n, LivePlanEntry *out,
                 uint64_t *ret_units, OpError *e) {
        AdmissionCaller ac = manager_admission_caller(m, c);
        uint64_t cap = c->uid == 0 ? MANAGER_PLAN_UNITS_ROOT_MAX : MANAGER_PLAN_UNITS_MAX, left = UINT64_MAX;
        uint64_t now = now_ns(), start;
        PlanBudgetWindow *w = NULL;
        EdfMeter meter;
        char a[32], b[32];
        size_t at = 0;
        int r;

        if (ret_units)
                *ret_units = 0;
        if (n > MANAGER_PLAN_TASKS_MAX)
                return op_fail(e, OP_INVALID, "a plan takes at most %d tasks", MANAGER_PLAN_TASKS_MAX);
        if (c->uid != 0) {
                w = budget_of(m, c->uid);
                if (!w)
                        return op_errno(e, -ENOMEM, "plan budget");
                left = plan_budget_left(w, now, MANAGER_PLAN_BUDGET, MANAGER_PLAN_BUDGET_WINDOW_NS);
                if (left == 0)
                        return op_fail(e, OP_LIMIT_EXCEEDED,
                                       "user %s: plan budget used up: %s work units per %" PRIu64 " s, the next window "
                                       "opens in %" PRIu64 " ms",
                                       ac.user, units_format(MANAGER_PLAN_BUDGET, a),
                                       MANAGER_PLAN_BUDGET_WINDOW_NS / UINT64_C(1000000000),
                                       (plan_budget_resets_in(w, now, MANAGER_PLAN_BUDGET_WINDOW_NS) + 999999) /
                                               UINT64_C(1000000));
        }
        meter = (EdfMeter) { .limit = MIN(cap, left) };
        start = now_ns();
        r = plan_tasks(m, &ac, tasks, n, out, &meter, &at);
        if (w)
                plan_budget_charge(w, meter.used);
        if (ret_units)
                *ret_units = meter.used;
        log_debug("Plan of %zu tasks by uid %u: %" PRIu64 " work units in %" PRIu64 " us%s", n, (unsigned) c->uid,
                  meter.used, (now_ns() - start) / 1000, r == -EDQUOT ? " (stopped at the limit)" : "");
        if (r == -EDQUOT && meter.limit == cap)
                return op_fail(e, OP_LIMIT_EXCEEDED,
                               "plan too costly: more than %s work units by task %zu of %zu, limit %s per call%s (the "
                               "exact test's steps on each CPU for each task; `edfctl plan` without --live has no limit)",
                               units_format(cap, a), at + 1, n, units_format(cap, b), c->uid == 0 ? " for root" : "");
        if (r == -EDQUOT)
                return op_fail(e, OP_LIMIT_EXCEEDED,
                               "user %s: plan too costly: more than the %s work units left of its plan budget by task "
                               "%zu of %zu, limit %s per %" PRIu64 " s",
                               ac.user, units_format(left, a), at + 1, n, units_format(MANAGER_PLAN_BUDGET, b),
                               MANAGER_PLAN_BUDGET_WINDOW_NS / UINT64_C(1000000000));
        if (r < 0)
                return op_errno(e, r, "cannot plan");
        return 0;
}
