/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The exact uniprocessor EDF test (see edf.h for the model and the order of the tests). */
#include <errno.h>

#include "core/edf.h"
#include "basic/macro.h"
#include "core/bandwidth.h"

typedef unsigned __int128 u128;

#define FIX_SHIFT 32
#define FIX_ONE ((u128) 1 << FIX_SHIFT)

/* The tasks on the CPU as one sequence: what is there, what is asked for, and the server. */
typedef struct Set {
        const DlParams *a, *b, *server;
        size_t na, nb, n;
        EdfMeter *meter;  /* NULL: not counted */
} Set;

bool edf_meter_charge(EdfMeter *m, uint64_t units) {
        bool ok;

        if (!m)
                return true;
        ok = m->used <= m->limit && units <= m->limit - m->used;
        m->used = units > UINT64_MAX - m->used ? UINT64_MAX : m->used + units;
        return ok;
}

/* Count `passes` passes over the set; false when they take the meter above its limit: the caller
 * stops with -EDQUOT. n <= 2 * EDF_TASKS_MAX + 1 and passes <= 2: units cannot overflow. */
static bool charge(const Set *s, uint64_t passes) {
        return edf_meter_charge(s->meter, (uint64_t) s->n * passes);
}

static const DlParams *set_get(const Set *s, size_t i) {
        if (i < s->na)
                return &s->a[i];
        if (i < s->na + s->nb)
                return &s->b[i - s->na];
        return s->server;
}

static bool task_valid(const DlParams *p) {
        return p->runtime > 0 && p->runtime <= p->deadline && p->deadline <= p->period;
}

uint64_t edf_dbf(const DlParams *task, uint64_t t) {
        u128 jobs, d;

        if (task->period == 0 || t < task->deadline)
                return 0;
        jobs = (u128) ((t - task->deadline) / task->period) + 1;
        d = jobs * task->runtime;
        return d > UINT64_MAX ? UINT64_MAX : (uint64_t) d;
}

/* h(t): the whole set's demand in [0, t]. At most n * t (each task's is at most t: C <= T). */
static u128 demand(const Set *s, uint64_t t) {
        u128 h = 0;

        for (size_t i = 0; i < s->n; i++) {
                const DlParams *p = set_get(s, i);
                if (t >= p->deadline)
                        h += ((u128) ((t - p->deadline) / p->period) + 1) * p->runtime;
        }
        return h;
}

/* The latest absolute deadline at or before t, from a synchronous release; false when none. */
static bool deadline_at_or_before(const Set *s, uint64_t t, uint64_t *ret) {
        bool found = false;
        uint64_t best = 0;

        for (size_t i = 0; i < s->n; i++) {
                const DlParams *p = set_get(s, i);
                uint64_t d;

                if (t < p->deadline)
                        continue;
                d = (t - p->deadline) / p->period * p->period + p->deadline; /* <= t: no overflow */
                if (!found || d > best)
                        best = d, found = true;
        }
        *ret = best;
        return found;
}

/* The first absolute deadline after t; false when none fits in 64 bits. */
static bool deadline_after(const Set *s, uint64_t t, uint64_t *ret) {
        bool found = false;
        uint64_t best = 0;

        for (size_t i = 0; i < s->n; i++) {
                const DlParams *p = set_get(s, i);
                u128 d = p->deadline;

                if (t >= p->deadline)
                        d = (u128) ((t - p->deadline) / p->period + 1) * p->period + p->deadline;
                if (d <= UINT64_MAX && (!found || d < best))
                        best = (uint64_t) d, found = true;
        }
        *ret = best;
        return found;
}

/* QPA finds a violation walking down from L; people read the first one best ("fails at 6 ms"),
 * so look for the earliest deadline whose demand exceeds it, for at most EDF_EARLIEST_STEPS
 * deadlines; *t and *h stay QPA's when the walk is longer. */
#define EDF_EARLIEST_STEPS 10000
static int earliest_violation(const Set *s, uint64_t d_min, uint64_t *t, u128 *h) {
        uint64_t d = d_min;

        for (unsigned k = 0; k < EDF_EARLIEST_STEPS && d < *t; k++) {
                if (!charge(s, 2))
                        return -EDQUOT;
                u128 hd = demand(s, d);
                if (hd > d) {
                        *t = d, *h = hd;
                        return 0;
                }
                if (!deadline_after(s, d, &d))
                        return 0;
        }
        return 0;
}

/* The synchronous busy period, if it ends at or before `limit`: 1; 0 when it does not (or takes more
 * than the steps left); -EDQUOT when the meter ran out. */
static int busy_period(const Set *s, uint64_t limit, uint64_t *steps, uint64_t *ret) {
        u128 w = 0;

        if (!charge(s, 1))
                return -EDQUOT;
        for (size_t i = 0; i < s->n; i++)
                w += set_get(s, i)->runtime;
        for (;;) {
                u128 next = 0;

                if (w > limit || ++*steps > EDF_STEPS_MAX)
                        return 0;
                if (!charge(s, 1))
                        return -EDQUOT;
                for (size_t i = 0; i < s->n; i++) {
                        const DlParams *p = set_get(s, i);
                        next += ((w + p->period - 1) / p->period) * p->runtime;
                }
                if (next == w) {
                        *ret = (uint64_t) w;
                        return 1;
                }
                w = next;
        }
}

int edf_check(const DlParams *tasks, size_t n, const DlParams *extra, size_t n_extra, const EdfSupply *supply,
              EdfVerdict *ret) {
        return edf_check_metered(tasks, n, extra, n_extra, supply, NULL, ret);
}

int edf_check_metered(const DlParams *tasks, size_t n, const DlParams *extra, size_t n_extra,
                      const EdfSupply *supply, EdfMeter *meter, EdfVerdict *ret) {
        Set s = { .a = tasks, .na = n, .b = extra, .nb = n_extra, .server = &supply->server, .meter = meter };
        EdfVerdict v = { .schedulable = false };
        u128 u_fix = 0, la_num = 0;
        uint64_t d_min = UINT64_MAX, d_max = 0, la = 0, lb = 0, limit, t;
        bool implicit = true, have_la = false, have_lb;
        int k;

        if (n > EDF_TASKS_MAX || n_extra > EDF_TASKS_MAX - n)
                return -E2BIG;
        s.n = n + n_extra + (supply->server.runtime > 0 ? 1 : 0);
        if (!charge(&s, 1))
                return -EDQUOT;

        for (size_t i = 0; i < s.n; i++) {
                const DlParams *p = set_get(&s, i);
                uint64_t bw, u;
                int r;

                if (!task_valid(p))
                        return -EINVAL;
                if (p != s.server) {
                        r = bw_of(p->runtime, p->period, &bw);
                        if (r < 0)
                                return r;
                        r = bw_add(v.bw_total, bw, &v.bw_total);
                        if (r < 0)
                                return r;
                }
                u = (uint64_t) (((u128) p->runtime << FIX_SHIFT) / p->period); /* <= 2^32: C <= T */
                u_fix += u;
                la_num += (u128) (p->period - p->deadline) * (u + 1);
                implicit = implicit && p->deadline == p->period;
                d_min = MIN(d_min, p->deadline);
                d_max = MAX(d_max, p->deadline);
        }

        /* 1. The kernel's own test. */
        if (supply->cap_bw != UINT64_MAX && v.bw_total > supply->cap_bw) {
                v.test = EDF_TEST_CAP;
                goto done;
        }
        if (s.n == 0) {
                v.schedulable = true;
                v.test = EDF_TEST_UTILIZATION;
                goto done;
        }

        /* 2. Utilization: each term's true value lies in [u, u + 1) of 2^-32, so U lies in
         * [u_fix, u_fix + n) of 2^-32. */
        if (u_fix > FIX_ONE) {
                v.test = EDF_TEST_UTILIZATION;
                goto done;
        }
        if (u_fix + s.n <= FIX_ONE) {
                /* U < 1 for sure: L_a = max(D_max, sum (T - D) U / (1 - U)), rounded up, with U
                 * taken at its upper end. */
                u128 den = FIX_ONE - u_fix - s.n, q;

                if (implicit) {
                        v.schedulable = true;
                        v.test = EDF_TEST_UTILIZATION;
                        goto done;
                }
                if (den > 0) {
                        q = (la_num + den - 1) / den;
                        if (q <= EDF_HORIZON_MAX) {
                                la = MAX(d_max, (uint64_t) q);
                                have_la = true;
                        }
                }
        }

        /* 3. Processor demand over [0, L], L = min(L_a, L_b). The busy period is only worth
         * computing up to L_a; when U is too close to 1 to tell, it alone bounds the interval. */
        v.test = EDF_TEST_DEMAND;
        k = busy_period(&s, have_la ? la : EDF_HORIZON_MAX, &v.steps, &lb);
        if (k < 0)
                return k;
        have_lb = k > 0;
        if (!have_la && !have_lb) {
                v.test = EDF_TEST_UNDECIDED;
                goto done;
        }
        limit = have_lb && (!have_la || lb < la) ? lb : la;
        v.interval = limit;

        /* QPA: walk down from the last deadline in [0, L]; h(t) < t lets the walk jump to h(t). */
        if (!deadline_at_or_before(&s, limit, &t)) {
                v.schedulable = true; /* no deadline falls in the busy period */
                goto done;
        }
        for (;;) {
                u128 h;

                if (!charge(&s, 2))
                        return -EDQUOT;
                h = demand(&s, t);
                if (h > t) {
                        k = earliest_violation(&s, d_min, &t, &h);
                        if (k < 0)
                                return k;
                        v.interval = t;
                        v.demand = h > UINT64_MAX ? UINT64_MAX : (uint64_t) h;
                        goto done;
                }
                if (h <= d_min) {
                        v.schedulable = true;
                        goto done;
                }
                if (++v.steps > EDF_STEPS_MAX) {
                        v.test = EDF_TEST_UNDECIDED;
                        goto done;
                }
                if (h < t)
                        t = (uint64_t) h;
                else if (!deadline_at_or_before(&s, t - 1, &t)) {
                        v.schedulable = true; /* cannot happen: h > d_min means d_min < t */
                        goto done;
                }
        }

done:
        *ret = v;
        return 0;
}

int edf_supply_from_kernel(int64_t rt_runtime_us, uint64_t rt_period_us, const DlParams *server, EdfSupply *ret) {
        EdfSupply s = {};
        uint64_t cap, server_bw = 0;
        int r;

        r = bw_kernel_capacity(1, rt_runtime_us, rt_period_us, &cap);
        if (r < 0)
                return r;
        if (server) {
                if (!task_valid(server))
                        return -EINVAL;
                r = bw_of(server->runtime, server->period, &server_bw);
                if (r < 0)
                        return r;
                s.server = *server;
        }
        if (cap == UINT64_MAX)
                s.cap_bw = UINT64_MAX;
        else if (server_bw >= cap)
                return -ERANGE;
        else
                s.cap_bw = cap - server_bw;
        *ret = s;
        return 0;
}

const char *edf_test_to_string(EdfTest t) {
        static const char *const names[_EDF_TEST_MAX] = {
                [EDF_TEST_CAP] = "the kernel's cap",
                [EDF_TEST_UTILIZATION] = "utilization",
                [EDF_TEST_DEMAND] = "processor demand (QPA)",
                [EDF_TEST_UNDECIDED] = "undecided",
        };
        return (unsigned) t < _EDF_TEST_MAX ? names[t] : "?";
}
