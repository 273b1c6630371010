/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* edfd_plan: the dry run against the running edfd (its Plan method). A plan is a list of tasks the
 * caller adds, sent in one call; the answers come back in the same order and stay in the plan. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libedfd-internal.h"

#define PLAN_TASKS_MAX 1024 /* what edfd takes in one call */

typedef struct plan_task {
        char *name, *group;
        uint64_t runtime, deadline, period;
        int split;
        /* the answer */
        char *result, *decided_group, *test, *reason;
        uint32_t cpu[2];
        uint64_t stage_runtime[2];
} plan_task;

struct edfd_plan {
        plan_task *tasks;
        size_t n, cap;
        int answered;
};

static void answer_clear(plan_task *t) {
        free(t->result);
        free(t->decided_group);
        free(t->test);
        free(t->reason);
        t->result = t->decided_group = t->test = t->reason = NULL;
}

int edfd_plan_new(edfd_plan **ret) {
        if (!ret)
                return -EINVAL;
        *ret = calloc(1, sizeof **ret);
        return *ret ? 0 : -ENOMEM;
}

edfd_plan *edfd_plan_free(edfd_plan *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n; i++) {
                free(p->tasks[i].name);
                free(p->tasks[i].group);
                answer_clear(&p->tasks[i]);
        }
        free(p->tasks);
        free(p);
        return NULL;
}

int edfd_plan_add(edfd_plan *p, const char *name, const char *group, uint64_t runtime, uint64_t deadline,
                  uint64_t period, int split) {
        plan_task *t;

        if (!p)
                return -EINVAL;
        if (p->n == PLAN_TASKS_MAX)
                return -E2BIG;
        if (p->n == p->cap) {
                size_t cap = p->cap ? p->cap * 2 : 16;
                plan_task *grown = realloc(p->tasks, cap * sizeof *grown);
                if (!grown)
                        return -ENOMEM;
                p->tasks = grown, p->cap = cap;
        }
        t = &p->tasks[p->n];
        *t = (plan_task) { .runtime = runtime, .deadline = deadline, .period = period, .split = !!split };
        t->name = strdup(name ?: "");
        t->group = strdup(group ?: "");
        if (!t->name || !t->group) {
                free(t->name);
                free(t->group);
                return -ENOMEM;
        }
        p->n++;
        p->answered = 0;
        return 0;
}

static int dup_into(char **dst, const char *s) {
        *dst = strdup(s);
        return *dst ? 0 : -ENOMEM;
}

int edfd_plan_run(edfd *e, edfd_plan *p) {
        sd_bus_message *call = NULL, *reply = NULL;
        size_t i = 0;
        int r = edfd_begin(e);

        if (r < 0)
                return r;
        if (!p)
                return edfd_fail(e, -EINVAL, "Plan: no plan (NULL)");
        r = edfd_call_new(e, "Plan", &call);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(call, 'a', "(sstttb)");
        for (size_t k = 0; r >= 0 && k < p->n; k++) {
                const plan_task *t = &p->tasks[k];
                r = sd_bus_message_append(call, "(sstttb)", t->name, t->group, t->runtime, t->deadline, t->period, t->split);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(call);
        if (r < 0) {
                sd_bus_message_unref(call);
                return edfd_fail(e, r, "cannot make the Plan call: %s", r == -EINVAL ? "a string is not valid UTF-8" : strerror(-r));
        }
        r = edfd_call_send(e, call, "Plan", false, &reply);
        sd_bus_message_unref(call);
        if (r < 0)
                return r;

        for (size_t k = 0; k < p->n; k++)
                answer_clear(&p->tasks[k]);
        p->answered = 0;
        r = sd_bus_message_enter_container(reply, 'a', "(ssuuttss)");
        while (r > 0) {
                const char *result, *group, *test, *reason;
                uint32_t cpu1, cpu2;
                uint64_t rt1, rt2;

                r = sd_bus_message_read(reply, "(ssuuttss)", &result, &group, &cpu1, &cpu2, &rt1, &rt2, &test, &reason);
                if (r <= 0)
                        break;
                if (i == p->n) {
                        r = -EBADMSG;
                        break;
                }
                plan_task *t = &p->tasks[i++];
                t->cpu[0] = cpu1, t->cpu[1] = cpu2;
                t->stage_runtime[0] = rt1, t->stage_runtime[1] = rt2;
                r = dup_into(&t->result, result) ?: dup_into(&t->decided_group, group) ?: dup_into(&t->test, test) ?:
                    dup_into(&t->reason, reason) ?: 1;
        }
        if (r == 0 && i != p->n)
                r = -EBADMSG;
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        sd_bus_message_unref(reply);
        if (r == -ENOMEM)
                return edfd_fail(e, r, "Plan: out of memory");
        if (r < 0) {
                for (size_t k = 0; k < p->n; k++)
                        answer_clear(&p->tasks[k]);
                return edfd_fail_parse(e, r, "Plan");
        }
        p->answered = 1;
        return 0;
}

size_t edfd_plan_size(const edfd_plan *p) {
        return p ? p->n : 0;
}

static const plan_task *answered(const edfd_plan *p, size_t i) {
        return p && p->answered && i < p->n ? &p->tasks[i] : NULL;
}

const char *edfd_plan_result(const edfd_plan *p, size_t i) {
        const plan_task *t = answered(p, i);
        return t ? t->result : NULL;
}

const char *edfd_plan_group(const edfd_plan *p, size_t i) {
        const plan_task *t = answered(p, i);
        return t ? t->decided_group : NULL;
}

int edfd_plan_cpu(const edfd_plan *p, size_t i, unsigned stage) {
        const plan_task *t = answered(p, i);

        if (!t || stage < 1 || stage > 2 || t->cpu[stage - 1] > INT32_MAX)
                return -1;
        return (int) t->cpu[stage - 1];
}

uint64_t edfd_plan_runtime(const edfd_plan *p, size_t i, unsigned stage) {
        const plan_task *t = answered(p, i);
        return t && stage >= 1 && stage <= 2 ? t->stage_runtime[stage - 1] : 0;
}

const char *edfd_plan_test(const edfd_plan *p, size_t i) {
        const plan_task *t = answered(p, i);
        return t ? t->test : NULL;
}

const char *edfd_plan_reason(const edfd_plan *p, size_t i) {
        const plan_task *t = answered(p, i);
        return t ? t->reason : NULL;
}
