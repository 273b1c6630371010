/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Partitioned placement and the C = D split (see placement.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/placement.h"
#include "basic/macro.h"
#include "core/bandwidth.h"
#include "core/duration.h"

static const char *const fit_names[_PLACE_FIT_MAX] = {
        [PLACE_FIT_BEST] = "best",
        [PLACE_FIT_FIRST] = "first",
        [PLACE_FIT_WORST] = "worst",
};

const char *place_fit_to_string(PlaceFit f) {
        return (unsigned) f < _PLACE_FIT_MAX ? fit_names[f] : NULL;
}

int place_fit_from_string(const char *s, PlaceFit *ret) {
        for (unsigned i = 0; s && i < _PLACE_FIT_MAX; i++)
                if (strcmp(s, fit_names[i]) == 0) {
                        *ret = (PlaceFit) i;
                        return 0;
                }
        return -EINVAL;
}

static uint64_t cpu_cap(const PlaceCpu *cpu) {
        uint64_t server_bw = 0;

        if (cpu->supply.cap_bw != UINT64_MAX)
                return cpu->supply.cap_bw;
        if (cpu->supply.server.runtime > 0 && bw_of(cpu->supply.server.runtime, cpu->supply.server.period, &server_bw) < 0)
                server_bw = BW_UNIT;
        return server_bw < BW_UNIT ? BW_UNIT - server_bw : 0;
}

uint64_t place_left(const PlaceCpu *cpu, uint64_t bw_total) {
        uint64_t cap = cpu_cap(cpu);
        return bw_total < cap ? cap - bw_total : 0;
}

static bool req_valid(const DlParams *req) {
        return req && req->runtime > 0 && req->runtime <= req->deadline && req->deadline <= req->period;
}

/* Does fit prefer a CPU with `left` to the best so far with `best_left`? Earlier CPUs win ties:
 * callers walk the CPUs in the order of their numbers. */
static bool better(PlaceFit fit, uint64_t left, uint64_t best_left) {
        switch (fit) {
        case PLACE_FIT_BEST:
                return left < best_left;
        case PLACE_FIT_WORST:
                return left > best_left;
        default:
                return false;
        }
}

/* The indices of cpus in the order of their CPU numbers (the array need not be sorted). */
static void order_by_id(const PlaceCpu *cpus, size_t n, size_t *order) {
        for (size_t i = 0; i < n; i++) {
                size_t j = i;
                for (; j > 0 && cpus[order[j - 1]].id > cpus[i].id; j--)
                        order[j] = order[j - 1];
                order[j] = i;
        }
}

/* place_choose() with CPU `skip` left out (SIZE_MAX: none). */
static int choose(const PlaceCpu *cpus, size_t n, const DlParams *req, PlaceFit fit, size_t skip, size_t *ret_index,
                  EdfVerdict *verdicts) {
        _cleanup_free_ size_t *order = NULL;
        size_t best = SIZE_MAX;
        uint64_t best_left = 0;

        if (n == 0 || !req_valid(req) || (unsigned) fit >= _PLACE_FIT_MAX)
                return -EINVAL;
        order = malloc(n * sizeof(*order));
        if (!order)
                return -ENOMEM;
        order_by_id(cpus, n, order);

        for (size_t k = 0; k < n; k++) {
                size_t i = order[k];
                EdfVerdict v;
                uint64_t left;
                int r;

                if (i == skip)
                        continue;
                r = edf_check_metered(cpus[i].tasks, cpus[i].n_tasks, req, 1, &cpus[i].supply, cpus[i].meter, &v);
                if (r < 0)
                        return r;
                if (verdicts)
                        verdicts[i] = v;
                if (!v.schedulable)
                        continue;
                left = place_left(&cpus[i], v.bw_total);
                if (best == SIZE_MAX || better(fit, left, best_left)) {
                        best = i;
                        best_left = left;
                        if (fit == PLACE_FIT_FIRST && !verdicts)
                                break;
                }
        }
        if (best == SIZE_MAX)
                return -ENOSPC;
        *ret_index = best;
        return 0;
}

int place_choose(const PlaceCpu *cpus, size_t n_cpus, const DlParams *req, PlaceFit fit, size_t *ret_index,
                 EdfVerdict *verdicts) {
        return choose(cpus, n_cpus, req, fit, SIZE_MAX, ret_index, verdicts);
}

/* The largest stage 1 runtime in [DL_RUNTIME_MIN, hi] that cpu passes with, rounded down to a
 * microsecond where that keeps it at or above DL_RUNTIME_MIN; 0 when none. */
static int largest_stage1(const PlaceCpu *cpu, uint64_t period, uint64_t hi, uint64_t *ret, EdfVerdict *ret_v) {
        uint64_t lo = DL_RUNTIME_MIN, best = 0;
        EdfVerdict v, best_v = { 0 };
        int r;

        while (lo <= hi) {
                uint64_t mid = lo + (hi - lo) / 2;
                DlParams s1 = { .runtime = mid, .deadline = mid, .period = period };

                r = edf_check_metered(cpu->tasks, cpu->n_tasks, &s1, 1, &cpu->supply, cpu->meter, &v);
                if (r < 0)
                        return r;
                if (v.schedulable) {
                        best = mid, best_v = v;
                        lo = mid + 1;
                } else
                        hi = mid - 1;
        }
        if (best >= NSEC_PER_USEC && best % NSEC_PER_USEC != 0 && best - best % NSEC_PER_USEC >= DL_RUNTIME_MIN) {
                DlParams s1 = { .runtime = best - best % NSEC_PER_USEC, .period = period };
                s1.deadline = s1.runtime;
                /* passes: monotone */
                r = edf_check_metered(cpu->tasks, cpu->n_tasks, &s1, 1, &cpu->supply, cpu->meter, &best_v);
                if (r < 0)
                        return r;
                best = s1.runtime;
        }
        *ret = best;
        *ret_v = best_v;
        return 0;
}

int place_split(const PlaceCpu *cpus, size_t n_cpus, const DlParams *req, PlaceFit fit, uint64_t min_stage,
                PlaceSplit *ret) {
        _cleanup_free_ uint64_t *c1 = NULL;
        _cleanup_free_ EdfVerdict *va = NULL;
        _cleanup_free_ size_t *order = NULL;
        int r;

        if (n_cpus == 0 || !req_valid(req) || (unsigned) fit >= _PLACE_FIT_MAX)
                return -EINVAL;
        min_stage = MAX(min_stage, DL_RUNTIME_MIN);
        if (n_cpus < 2 || req->runtime / 2 < min_stage)
                return -ENOSPC;
        c1 = calloc(n_cpus, sizeof(*c1));
        va = calloc(n_cpus, sizeof(*va));
        order = malloc(n_cpus * sizeof(*order));
        if (!c1 || !va || !order)
                return -ENOMEM;

        for (size_t i = 0; i < n_cpus; i++) {
                r = largest_stage1(&cpus[i], req->period, req->runtime - min_stage, &c1[i], &va[i]);
                if (r < 0)
                        return r;
        }
        /* CPU a in the order of the largest C1, ties by the lower CPU number. */
        order_by_id(cpus, n_cpus, order);
        for (size_t i = 1; i < n_cpus; i++) {
                size_t x = order[i], j = i;
                for (; j > 0 && c1[order[j - 1]] < c1[x]; j--)
                        order[j] = order[j - 1];
                order[j] = x;
        }

        for (size_t k = 0; k < n_cpus; k++) {
                size_t a = order[k], b;
                DlParams s2;

                if (c1[a] < min_stage) /* in descending order: no CPU further on takes a stage 1 */
                        break;
                s2 = (DlParams) { .runtime = req->runtime - c1[a], .deadline = req->deadline - c1[a], .period = req->period };
                r = choose(cpus, n_cpus, &s2, fit, a, &b, NULL);
                if (r == -ENOSPC)
                        continue;
                if (r < 0)
                        return r;
                *ret = (PlaceSplit) {
                        .index_a = a,
                        .index_b = b,
                        .stage1 = { .runtime = c1[a], .deadline = c1[a], .period = req->period },
                        .stage2 = s2,
                        .verdict_a = va[a],
                };
                r = edf_check_metered(cpus[b].tasks, cpus[b].n_tasks, &s2, 1, &cpus[b].supply, cpus[b].meter,
                                      &ret->verdict_b);
                return r < 0 ? r : 0;
        }
        return -ENOSPC;
}

typedef struct RoomCandidate {
        uint64_t bw;
        size_t cpu, task;
} RoomCandidate;

static int candidate_cmp(const void *a, const void *b, void *userdata) {
        const RoomCandidate *x = a, *y = b;
        const PlaceCpu *cpus = userdata;

        if (x->bw != y->bw)
                return x->bw < y->bw ? -1 : 1;
        if (cpus[x->cpu].id != cpus[y->cpu].id)
                return cpus[x->cpu].id < cpus[y->cpu].id ? -1 : 1;
        return x->task < y->task ? -1 : x->task > y->task;
}

int place_make_room(const PlaceCpu *cpus, size_t n_cpus, const DlParams *req, PlaceFit fit, size_t max_tries,
                    PlaceMove *ret, size_t *ret_tries) {
        _cleanup_free_ RoomCandidate *cand = NULL;
        _cleanup_free_ DlParams *rest = NULL;
        _cleanup_free_ PlaceCpu *others = NULL;
        _cleanup_free_ size_t *back = NULL;
        size_t n_cand = 0, most = 0, tries = 0;
        int r;

        if (ret_tries)
                *ret_tries = 0;
        if (n_cpus == 0 || !req_valid(req) || (unsigned) fit >= _PLACE_FIT_MAX)
                return -EINVAL;
        if (n_cpus < 2)
                return -ENOSPC;
        if (max_tries == 0)
                max_tries = PLACE_ROOM_TRIES_DEFAULT;
        for (size_t i = 0; i < n_cpus; i++) {
                if (cpus[i].n_tasks > SIZE_MAX / sizeof(RoomCandidate) - n_cand)
                        return -E2BIG;
                n_cand += cpus[i].n_tasks;
                most = MAX(most, cpus[i].n_tasks);
        }
        if (n_cand == 0)
                return -ENOSPC;
        cand = malloc(n_cand * sizeof(*cand));
        rest = malloc(most * sizeof(*rest));
        others = malloc((n_cpus - 1) * sizeof(*others));
        back = malloc((n_cpus - 1) * sizeof(*back));
        if (!cand || !rest || !others || !back)
                return -ENOMEM;
        n_cand = 0;
        for (size_t i = 0; i < n_cpus; i++)
                for (size_t t = 0; t < cpus[i].n_tasks; t++) {
                        uint64_t bw;

                        if (cpus[i].pinned && cpus[i].pinned[t])
                                continue;
                        if (bw_of(cpus[i].tasks[t].runtime, cpus[i].tasks[t].period, &bw) < 0)
                                bw = UINT64_MAX;
                        cand[n_cand++] = (RoomCandidate) { .bw = bw, .cpu = i, .task = t };
                }
        qsort_r(cand, n_cand, sizeof(*cand), candidate_cmp, (void *) cpus);

        for (size_t k = 0; k < n_cand && tries < max_tries; k++) {
                const PlaceCpu *x = &cpus[cand[k].cpu];
                const DlParams *t = &x->tasks[cand[k].task];
                EdfVerdict vx, vy;
                size_t n_rest = 0, n_others = 0, at;

                tries++;
                for (size_t j = 0; j < x->n_tasks; j++)
                        if (j != cand[k].task)
                                rest[n_rest++] = x->tasks[j];
                r = edf_check_metered(rest, n_rest, req, 1, &x->supply, x->meter, &vx);
                if (r < 0)
                        goto done;
                if (!vx.schedulable)
                        continue;
                for (size_t i = 0; i < n_cpus; i++)
                        if (i != cand[k].cpu) {
                                back[n_others] = i;
                                others[n_others++] = cpus[i];
                        }
                r = choose(others, n_others, t, fit, SIZE_MAX, &at, NULL);
                if (r == -ENOSPC)
                        continue;
                if (r < 0)
                        goto done;
                r = edf_check_metered(others[at].tasks, others[at].n_tasks, t, 1, &others[at].supply, others[at].meter,
                                      &vy);
                if (r < 0)
                        goto done;
                *ret = (PlaceMove) {
                        .from = cand[k].cpu,
                        .task = cand[k].task,
                        .to = back[at],
                        .verdict_from = vx,
                        .verdict_to = vy,
                };
                r = 0;
                goto done;
        }
        r = -ENOSPC;
done:
        if (ret_tries)
                *ret_tries = tries;
        return r;
}

char *place_format_refusal(const PlaceCpu *cpus, size_t n_cpus, const DlParams *req, const EdfVerdict *verdicts,
                           char *buf, size_t size) {
        char a[DURATION_MAX], b[DURATION_MAX], c[DURATION_MAX];
        uint64_t bw = 0;
        size_t len;

        if (size == 0)
                return buf;
        (void) bw_of(req->runtime, req->period, &bw);
        snprintf(buf, size, "no CPU can take %s:", bw_format_up(bw, a));
        for (size_t i = 0; i < n_cpus; i++) {
                const EdfVerdict *v = &verdicts[i];
                uint64_t before = v->bw_total >= bw ? v->bw_total - bw : 0;

                len = strlen(buf);
                if (len + 1 >= size)
                        break;
                snprintf(buf + len, size - len, "%s cpu%u %s left", i ? "," : "", cpus[i].id,
                         bw_format(place_left(&cpus[i], before), a));
                len = strlen(buf);
                if (v->test == EDF_TEST_DEMAND && !v->schedulable)
                        snprintf(buf + len, size - len, " but a deadline fails at %s (demand %s)",
                                 duration_format(v->interval, b), duration_format(v->demand, c));
                else if (v->test == EDF_TEST_UNDECIDED)
                        snprintf(buf + len, size - len, " but the test cannot bound its interval");
        }
        return buf;
}
