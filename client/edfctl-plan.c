/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* edfctl plan FILE: the dry run. Reads a task set (plan-file.h), places it offline on --cpus CPUs
 * with partitioned placement (core/plan.h) under the supply model given on the command line, and
 * prints for each task placed, split or refused, where, and which test decided. Touches nothing:
 * no bus, no kernel call. With --live the running edfd decides instead (its Plan method, through
 * libedfd's edfd_plan): its groups, its partitions and what they hold now, nothing applied. */

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/bandwidth.h"
#include "core/plan.h"
#include "core/plan-order.h"
#include "edfctl.h"
#include "plan-file.h"

#define CAPACITY_DEFAULT "95%"
#define SERVER_DEFAULT "50ms/1s"

typedef struct PlanSetup {
        unsigned ncpus;
        uint64_t rt_bw;     /* the kernel's per-CPU limit (--capacity); UINT64_MAX: unlimited */
        EdfSupply supply;   /* cap_bw = rt_bw less the server's share */
        PlaceFit fit;
        PlanOrder order;
} PlanSetup;

static int parse_setup(const Args *a, PlanSetup *ret) {
        const char *capacity = a->capacity ?: CAPACITY_DEFAULT, *server = a->server ?: SERVER_DEFAULT, *reason = NULL;
        PlanSetup s = { .fit = PLACE_FIT_BEST, .order = PLAN_ORDER_GIVEN };
        DlParams srv = {};
        int64_t rt_runtime_us = -1; /* the kernel's sched_rt_runtime_us over a period of 100 ms */
        uint64_t runtime;
        int r;

        if (a->given & ARG_CPUS) {
                uint64_t n;
                if (parse_u64(a->cpus, &n, &reason) < 0)
                        return usage_invalid("CPU count", a->cpus, reason);
                if (n == 0 || n > PLAN_CPUS_MAX)
                        return usage_invalid("CPU count", a->cpus, "is not between 1 and 1024");
                s.ncpus = (unsigned) n;
        } else {
                long n = sysconf(_SC_NPROCESSORS_ONLN);
                s.ncpus = n > 0 && n <= (long) PLAN_CPUS_MAX ? (unsigned) n : 1;
        }
        if (strcmp(capacity, "unlimited") != 0) {
                if (percent_parse(capacity, &runtime, &reason) < 0)
                        return usage_invalid("capacity", capacity, reason);
                if (runtime < NSEC_PER_USEC || runtime > PERCENT_PERIOD_NS)
                        return usage_invalid("capacity", capacity, "is not above 0% and at most 100% (of one CPU)");
                rt_runtime_us = (int64_t) (runtime / NSEC_PER_USEC);
        }
        if (strcmp(server, "none") != 0) {
                const char *slash = strchr(server, '/');
                char rt[64];
                uint64_t period;

                if (!slash || (size_t) (slash - server) >= sizeof(rt))
                        return usage_invalid("fair server", server, "is not RUNTIME/PERIOD (50ms/1s) or none");
                memcpy(rt, server, (size_t) (slash - server));
                rt[slash - server] = '\0';
                if (duration_parse(rt, &runtime, &reason) < 0 || duration_parse(slash + 1, &period, &reason) < 0)
                        return usage_invalid("fair server", server, reason);
                if (runtime < DL_RUNTIME_MIN || runtime > period)
                        return usage_invalid("fair server", server, "needs 1024ns <= runtime <= period");
                srv = (DlParams) { .runtime = runtime, .deadline = period, .period = period };
        }
        r = bw_kernel_capacity(1, rt_runtime_us, PERCENT_PERIOD_NS / NSEC_PER_USEC, &s.rt_bw);
        if (r == 0)
                r = edf_supply_from_kernel(rt_runtime_us, PERCENT_PERIOD_NS / NSEC_PER_USEC, srv.runtime ? &srv : NULL, &s.supply);
        if (r == -ERANGE)
                return usage_invalid("fair server", server, "takes the whole capacity");
        if (r < 0)
                return usage_invalid("capacity", capacity, strerror(-r));
        if ((a->given & ARG_FIT) && place_fit_from_string(a->fit, &s.fit) < 0)
                return usage_invalid("fit", a->fit, "is not best, first or worst");
        if ((a->given & ARG_ORDER) && plan_order_from_string(a->order, &s.order) < 0)
                return usage_invalid("order", a->order, "is not given or decreasing");
        *ret = s;
        return EDFCTL_EXIT_OK;
}

/* The whole file, at most PLAN_FILE_SIZE_MAX + 1 bytes (so that the parser can say it is too
 * large). "-" is standard input. */
static int read_file(const char *path, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, size = PLAN_FILE_SIZE_MAX + 1;
        FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "re");
        int r = 0;

        if (!f)
                return -errno;
        buf = malloc(size);
        if (!buf)
                r = -ENOMEM;
        while (r == 0 && len < size) {
                size_t k;

                errno = 0;
                k = fread(buf + len, 1, size - len, f);
                if (k == 0) {
                        if (ferror(f))
                                r = errno > 0 ? -errno : -EIO; /* a directory: EISDIR */
                        break;
                }
                len += k;
        }
        if (f != stdin)
                fclose(f);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

static const char *test_of(const PlanEntry *e) {
        return e->outcome == PLAN_REFUSED ? "-" : edf_test_to_string(e->verdict.test);
}

/* The task table's header, the same offline and live. */
static int plan_table_header(Table *t) {
        return table_add(t, "TASK") ?: table_add(t, "GROUP") ?: table_add(t, "RUNTIME") ?: table_add(t, "DEADLINE") ?:
               table_add(t, "PERIOD") ?: table_add(t, "SHARE") ?: table_add(t, "RESULT") ?: table_add(t, "CPU") ?:
               table_add(t, "TEST");
}

static int print_text(const PlanFile *f, const PlanEntry *e, const PlanCpuLoad *loads, const PlanSetup *s) {
        _cleanup_(table_freep) Table *t = table_new(9), *c = table_new(5);
        char a[DURATION_MAX], b[DURATION_MAX], d[DURATION_MAX], g[DURATION_MAX];
        size_t placed = 0, split = 0, refused = 0, moves = 0;
        bool any_group = false;
        int r = 0;

        if (!t || !c)
                return -ENOMEM;
        r = plan_table_header(t);
        for (size_t i = 0; r == 0 && i < f->n; i++) {
                const PlanTask *k = &f->tasks[i];
                uint64_t bw = 0;

                (void) bw_of(k->params.runtime, k->params.period, &bw);
                any_group = any_group || k->group;
                r = table_add(t, "%s", tty(k->name)) ?: table_add(t, "%s", k->group ? tty(k->group) : "-") ?:
                    table_add(t, "%s", duration_format(k->params.runtime, a)) ?:
                    table_add(t, "%s", duration_format(k->params.deadline, b)) ?:
                    table_add(t, "%s", duration_format(k->params.period, d)) ?: table_add(t, "%s", bw_format_up(bw, g)) ?:
                    table_add(t, "%s", plan_outcome_to_string(e[i].outcome));
                if (r == 0 && e[i].outcome == PLAN_PLACED)
                        r = table_add(t, "%u", e[i].cpu);
                else if (r == 0 && e[i].outcome == PLAN_SPLIT)
                        r = table_add(t, "%u+%u", e[i].cpu, e[i].cpu_b);
                else if (r == 0)
                        r = table_add(t, "-");
                r = r ?: table_add(t, "%s", test_of(&e[i]));
        }
        if (r < 0)
                return r;
        if (!any_group)
                table_hide(t, 1);
        table_print(t, stdout);

        for (size_t i = 0; i < f->n; i++) {
                if (e[i].outcome == PLAN_PLACED)
                        placed++;
                else if (e[i].outcome == PLAN_SPLIT) {
                        char e1[DURATION_MAX], e2[DURATION_MAX];
                        split++;
                        if (split == 1)
                                putchar('\n');
                        printf("%s: stage 1 runs %s within %s on cpu%u; stage 2 runs %s within %s on cpu%u, released %s "
                               "after each release (so by the task's deadline, %s)\n",
                               tty(f->tasks[i].name), duration_format(e[i].stage1.runtime, a), duration_format(e[i].stage1.deadline, b),
                               e[i].cpu, duration_format(e[i].stage2.runtime, d), duration_format(e[i].stage2.deadline, g),
                               e[i].cpu_b, duration_format(e[i].stage1.runtime, e1),
                               duration_format(e[i].stage1.runtime + e[i].stage2.deadline, e2));
                }
        }
        for (size_t i = 0; i < f->n; i++)
                if (e[i].outcome == PLAN_PLACED && e[i].room) {
                        if (moves++ == 0)
                                putchar('\n');
                        printf("%s: placed on cpu%u after moving %s from cpu%u to cpu%u (no CPU took it whole; "
                               "edfd moves it while it sleeps)\n", tty(f->tasks[i].name), e[i].cpu,
                               tty(f->tasks[e[i].room_task].name), e[i].room_from, e[i].room_to);
                }
        for (size_t i = 0; i < f->n; i++)
                if (e[i].outcome == PLAN_REFUSED) {
                        if (refused++ == 0)
                                putchar('\n');
                        printf("%s: refused: %s\n", tty(f->tasks[i].name), tty(e[i].reason));
                }

        putchar('\n');
        r = table_add(c, "CPU") ?: table_add(c, "CAPACITY") ?: table_add(c, "ALLOCATED") ?: table_add(c, "FREE") ?:
            table_add(c, "TASKS");
        for (unsigned i = 0; r == 0 && i < s->ncpus; i++)
                r = table_add(c, "%u", loads[i].id) ?: table_add(c, "%s", bw_format(loads[i].cap_bw, a)) ?:
                    table_add(c, "%s", bw_format(loads[i].bw, b)) ?:
                    table_add(c, "%s", bw_display_free(loads[i].cap_bw, loads[i].bw, d)) ?: table_add(c, "%zu", loads[i].n_tasks);
        if (r < 0)
                return r;
        table_align_right(c, 4);
        table_print(c, stdout);
        printf("\n%zu of %zu tasks admitted (%zu split), %zu refused; partitioned EDF, %s fit%s, %u CPU%s of %s",
               placed + split, f->n, split, refused, place_fit_to_string(s->fit),
               s->order == PLAN_ORDER_DECREASING ? " in decreasing utilization" : "", s->ncpus, s->ncpus == 1 ? "" : "s",
               s->rt_bw == UINT64_MAX ? "unlimited capacity" : bw_format(s->rt_bw, a));
        if (s->supply.server.runtime > 0)
                printf(" less a fair server of %s every %s\n", duration_format(s->supply.server.runtime, b),
                       duration_format(s->supply.server.period, d));
        else
                printf(", no fair server\n");
        return 0;
}

static json_object *json_params(const DlParams *p, unsigned cpu, uint64_t offset) {
        json_object *o = json_object_new_object();
        int r = 0;

        if (!o)
                return NULL;
        JSON_ADD(o, "cpu", json_object_new_uint64(cpu), r);
        JSON_ADD(o, "runtime", json_object_new_uint64(p->runtime), r);
        JSON_ADD(o, "deadline", json_object_new_uint64(p->deadline), r);
        JSON_ADD(o, "period", json_object_new_uint64(p->period), r);
        JSON_ADD(o, "offset", json_object_new_uint64(offset), r);
        if (r < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

static int json_task(const PlanTask *k, const PlanEntry *e, const PlanTask *moved, json_object **ret) {
        json_object *o = json_object_new_object(), *stages = NULL, *room = NULL;
        uint64_t bw = 0;
        int r = 0;

        if (!o)
                return -ENOMEM;
        (void) bw_of(k->params.runtime, k->params.period, &bw);
        JSON_ADD(o, "name", json_text(k->name), r);
        JSON_ADD(o, "group", k->group ? json_text(k->group) : NULL, r);
        JSON_ADD(o, "runtime", json_object_new_uint64(k->params.runtime), r);
        JSON_ADD(o, "deadline", json_object_new_uint64(k->params.deadline), r);
        JSON_ADD(o, "period", json_object_new_uint64(k->params.period), r);
        JSON_ADD(o, "bandwidth", json_bw(bw), r);
        JSON_ADD(o, "split_allowed", json_object_new_boolean(k->split), r);
        JSON_ADD(o, "result", json_object_new_string(plan_outcome_to_string(e->outcome)), r);
        if (e->outcome == PLAN_REFUSED) {
                JSON_ADD(o, "reason", json_text(e->reason), r);
        } else {
                JSON_ADD(o, "test", json_object_new_string(edf_test_to_string(e->verdict.test)), r);
                if (e->outcome == PLAN_PLACED) {
                        JSON_ADD(o, "cpu", json_object_new_uint64(e->cpu), r);
                        JSON_ADD(o, "moved", json_object_new_boolean(e->moved), r);
                }
                if (e->outcome == PLAN_PLACED && e->room && moved) {
                        room = json_object_new_object();
                        if (!room)
                                r = r ?: -ENOMEM;
                        JSON_ADD(room, "task", json_text(moved->name), r);
                        JSON_ADD(room, "from", json_object_new_uint64(e->room_from), r);
                        JSON_ADD(room, "to", json_object_new_uint64(e->room_to), r);
                        JSON_ADD(o, "room", room, r);
                } else if (e->outcome != PLAN_PLACED) {
                        stages = json_object_new_array();
                        if (!stages || json_object_array_add(stages, json_params(&e->stage1, e->cpu, 0)) < 0 ||
                            json_object_array_add(stages, json_params(&e->stage2, e->cpu_b, e->stage1.runtime)) < 0)
                                r = r ?: -ENOMEM;
                        JSON_ADD(o, "stages", stages, r);
                }
        }
        if (r < 0) {
                json_object_put(o);
                return r;
        }
        *ret = o;
        return 0;
}

static int print_json(const PlanFile *f, const PlanEntry *e, const PlanCpuLoad *loads, const PlanSetup *s) {
        json_object *o = json_object_new_object(), *tasks = json_object_new_array(), *cpus = json_object_new_array(), *server = NULL;
        int r = 0;

        if (!o || !tasks || !cpus) {
                json_object_put(o);
                json_object_put(tasks);
                json_object_put(cpus);
                return -ENOMEM;
        }
        JSON_ADD(o, "placement", json_object_new_string("partitioned"), r);
        JSON_ADD(o, "fit", json_object_new_string(place_fit_to_string(s->fit)), r);
        JSON_ADD(o, "order", json_object_new_string(plan_order_to_string(s->order)), r);
        JSON_ADD(o, "cpus", json_object_new_uint64(s->ncpus), r);
        JSON_ADD(o, "capacity", json_bw(s->rt_bw), r);
        if (s->supply.server.runtime > 0) {
                server = json_object_new_object();
                if (!server)
                        r = r ?: -ENOMEM;
                JSON_ADD(server, "runtime", json_object_new_uint64(s->supply.server.runtime), r);
                JSON_ADD(server, "period", json_object_new_uint64(s->supply.server.period), r);
        }
        JSON_ADD(o, "fair_server", server, r);
        for (size_t i = 0; r == 0 && i < f->n; i++) {
                json_object *t;
                r = json_task(&f->tasks[i], &e[i], e[i].room ? &f->tasks[e[i].room_task] : NULL, &t);
                if (r == 0 && json_object_array_add(tasks, t) < 0) {
                        json_object_put(t);
                        r = -ENOMEM;
                }
        }
        for (unsigned i = 0; r == 0 && i < s->ncpus; i++) {
                json_object *c = json_object_new_object();
                if (!c || json_object_array_add(cpus, c) < 0) {
                        json_object_put(c);
                        r = -ENOMEM;
                        break;
                }
                JSON_ADD(c, "cpu", json_object_new_uint64(loads[i].id), r);
                JSON_ADD(c, "capacity", json_bw(loads[i].cap_bw), r);
                JSON_ADD(c, "allocated", json_bw(loads[i].bw), r);
                JSON_ADD(c, "tasks", json_object_new_uint64(loads[i].n_tasks), r);
        }
        JSON_ADD(o, "tasks", tasks, r);
        JSON_ADD(o, "cpu_loads", cpus, r);
        if (r == 0)
                r = json_print(o);
        json_object_put(o);
        return r;
}

/* --- --live: edfd decides --- */

static const char *live_result(const edfd_plan *p, size_t i) {
        const char *r = edfd_plan_result(p, i);
        return r && strcmp(r, "placed") == 0 && edfd_plan_cpu(p, i, 1) < 0 ? "admitted" : r ?: "?";
}

static int print_live_text(const PlanFile *f, const edfd_plan *p) {
        _cleanup_(table_freep) Table *t = table_new(9);
        char a[DURATION_MAX], b[DURATION_MAX], d[DURATION_MAX], g[DURATION_MAX];
        size_t admitted = 0, split = 0, refused = 0, moves = 0;
        int r;

        if (!t)
                return -ENOMEM;
        r = plan_table_header(t);
        for (size_t i = 0; r == 0 && i < f->n; i++) {
                const PlanTask *k = &f->tasks[i];
                const char *res = live_result(p, i), *grp = edfd_plan_group(p, i);
                int c1 = edfd_plan_cpu(p, i, 1), c2 = edfd_plan_cpu(p, i, 2);
                uint64_t bw = 0;

                (void) bw_of(k->params.runtime, k->params.period, &bw);
                r = table_add(t, "%s", tty(k->name)) ?: table_add(t, "%s", grp && *grp ? tty(grp) : "-") ?:
                    table_add(t, "%s", duration_format(k->params.runtime, a)) ?:
                    table_add(t, "%s", duration_format(k->params.deadline, b)) ?:
                    table_add(t, "%s", duration_format(k->params.period, d)) ?: table_add(t, "%s", bw_format_up(bw, g)) ?:
                    table_add(t, "%s", tty(res));
                if (r == 0 && c1 >= 0 && c2 >= 0)
                        r = table_add(t, "%d+%d", c1, c2);
                else if (r == 0 && c1 >= 0)
                        r = table_add(t, "%d", c1);
                else if (r == 0)
                        r = table_add(t, "-");
                r = r ?: table_add(t, "%s", tty(edfd_plan_test(p, i) ?: "-"));
        }
        if (r < 0)
                return r;
        table_print(t, stdout);
        for (size_t i = 0; i < f->n; i++) {
                const char *res = edfd_plan_result(p, i);
                if (res && strcmp(res, "split") == 0) {
                        uint64_t r1 = edfd_plan_runtime(p, i, 1), dl = f->tasks[i].params.deadline;
                        char e1[DURATION_MAX];
                        if (split++ == 0)
                                putchar('\n');
                        printf("%s: stage 1 runs %s within %s on cpu%d; stage 2 runs %s within %s on cpu%d, released %s "
                               "after each release\n", tty(f->tasks[i].name), duration_format(r1, a), duration_format(r1, b),
                               edfd_plan_cpu(p, i, 1), duration_format(edfd_plan_runtime(p, i, 2), d),
                               duration_format(dl > r1 ? dl - r1 : 0, g), edfd_plan_cpu(p, i, 2), duration_format(r1, e1));
                } else if (res && strcmp(res, "placed") == 0) {
                        const char *note = edfd_plan_reason(p, i);
                        admitted++;
                        if (note && *note) { /* placed after a move for room */
                                if (moves++ == 0)
                                        putchar('\n');
                                printf("%s: placed on cpu%d %s\n", tty(f->tasks[i].name), edfd_plan_cpu(p, i, 1), tty(note));
                        }
                }
        }
        for (size_t i = 0; i < f->n; i++) {
                const char *res = edfd_plan_result(p, i);
                if (res && strcmp(res, "refused") == 0) {
                        if (refused++ == 0)
                                putchar('\n');
                        printf("%s: refused: %s\n", tty(f->tasks[i].name), tty(edfd_plan_reason(p, i)));
                }
        }
        printf("\n%zu of %zu tasks admitted (%zu split), %zu refused: decided by edfd against what it holds now; "
               "nothing applied\n", admitted + split, f->n, split, refused);
        return 0;
}

static int print_live_json(const PlanFile *f, const edfd_plan *p) {
        json_object *o = json_object_new_object(), *tasks = json_object_new_array();
        int r = 0;

        if (!o || !tasks) {
                json_object_put(o);
                json_object_put(tasks);
                return -ENOMEM;
        }
        JSON_ADD(o, "live", json_object_new_boolean(1), r);
        for (size_t i = 0; r == 0 && i < f->n; i++) {
                const PlanTask *k = &f->tasks[i];
                const char *res = edfd_plan_result(p, i) ?: "?", *grp = edfd_plan_group(p, i);
                json_object *t = json_object_new_object();
                int c1 = edfd_plan_cpu(p, i, 1), c2 = edfd_plan_cpu(p, i, 2);
                uint64_t bw = 0;

                if (!t || json_object_array_add(tasks, t) < 0) {
                        json_object_put(t);
                        r = -ENOMEM;
                        break;
                }
                (void) bw_of(k->params.runtime, k->params.period, &bw);
                JSON_ADD(t, "name", json_text(k->name), r);
                JSON_ADD(t, "group", grp && *grp ? json_text(grp) : NULL, r);
                JSON_ADD(t, "runtime", json_object_new_uint64(k->params.runtime), r);
                JSON_ADD(t, "deadline", json_object_new_uint64(k->params.deadline), r);
                JSON_ADD(t, "period", json_object_new_uint64(k->params.period), r);
                JSON_ADD(t, "bandwidth", json_bw(bw), r);
                JSON_ADD(t, "split_allowed", json_object_new_boolean(k->split), r);
                JSON_ADD(t, "result", json_text(res), r);
                JSON_ADD(t, "cpu", c1 >= 0 ? json_object_new_int(c1) : NULL, r);
                JSON_ADD(t, "cpu_stage2", c2 >= 0 ? json_object_new_int(c2) : NULL, r);
                if (strcmp(res, "split") == 0) {
                        JSON_ADD(t, "runtime_stage1", json_object_new_uint64(edfd_plan_runtime(p, i, 1)), r);
                        JSON_ADD(t, "runtime_stage2", json_object_new_uint64(edfd_plan_runtime(p, i, 2)), r);
                }
                JSON_ADD(t, "test", json_text(edfd_plan_test(p, i) ?: "-"), r);
                JSON_ADD(t, "reason", strcmp(res, "refused") == 0 ? json_text(edfd_plan_reason(p, i) ?: "") : NULL, r);
        }
        JSON_ADD(o, "tasks", tasks, r);
        if (r == 0)
                r = json_print(o);
        json_object_put(o);
        return r;
}

static int plan_live(const Args *a, const PlanFile *f) {
        _cleanup_(edfd_closep) edfd *e = NULL;
        _cleanup_(edfd_plan_freep) edfd_plan *p = NULL;
        int r, ex;

        r = edfd_plan_new(&p);
        for (size_t i = 0; r >= 0 && i < f->n; i++)
                r = edfd_plan_add(p, f->tasks[i].name, f->tasks[i].group, f->tasks[i].params.runtime,
                                  f->tasks[i].params.deadline, f->tasks[i].params.period, f->tasks[i].split);
        if (r == -E2BIG) {
                fprintf(stderr, "edfctl: %s has %zu tasks: edfd plans at most 1024 at once\n", tty(a->positional[0]), f->n);
                return EDFCTL_EXIT_USAGE;
        }
        if (r < 0) {
                fprintf(stderr, "edfctl: cannot make the plan: %s\n", strerror(-r));
                return EDFCTL_EXIT_FAILED;
        }
        ex = edfctl_connect(&e);
        if (ex != EDFCTL_EXIT_OK)
                return ex;
        r = edfd_plan_run(e, p);
        if (r < 0)
                return edfctl_failed(e, r, "Plan");
        r = (a->given & ARG_JSON) ? print_live_json(f, p) : print_live_text(f, p);
        if (r < 0) {
                fprintf(stderr, "edfctl: cannot print the plan: %s\n", strerror(-r));
                return EDFCTL_EXIT_FAILED;
        }
        for (size_t i = 0; i < f->n; i++)
                if (strcmp(edfd_plan_result(p, i) ?: "refused", "refused") == 0)
                        return EDFCTL_EXIT_FAILED;
        return EDFCTL_EXIT_OK;
}

int verb_plan(const Args *a) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_free_ PlanEntry *entries = NULL;
        _cleanup_free_ PlanCpuLoad *loads = NULL;
        char err[PLAN_FILE_ERROR_MAX];
        PlanFile f = {};
        PlanSetup s;
        size_t len = 0;
        int r, ex;

        if ((a->given & ARG_LIVE) && (a->given & (ARG_CPUS | ARG_CAPACITY | ARG_SERVER | ARG_FIT | ARG_ORDER)))
                return usage_error(a, "--live asks edfd, which knows its CPUs, capacity, fair server and fit, and "
                                      "decides as it admits: --cpus, --capacity, --server, --fit and --order are "
                                      "for the offline plan");
        ex = parse_setup(a, &s);
        if (ex != EDFCTL_EXIT_OK)
                return ex;
        r = read_file(a->positional[0], &buf, &len);
        if (r < 0) {
                fprintf(stderr, "edfctl: cannot read %s: %s\n", tty(a->positional[0]), strerror(-r));
                return EDFCTL_EXIT_USAGE;
        }
        r = plan_file_parse(strcmp(a->positional[0], "-") == 0 ? "<stdin>" : a->positional[0], buf, len, &f, err);
        if (r < 0) {
                fprintf(stderr, "edfctl: %s\n", err);
                return r == -ENOMEM ? EDFCTL_EXIT_FAILED : EDFCTL_EXIT_USAGE;
        }
        if (a->given & ARG_LIVE) {
                ex = plan_live(a, &f);
                plan_file_done(&f);
                if (ex != EDFCTL_EXIT_USAGE && fflush(stdout) != 0) {
                        fprintf(stderr, "edfctl: cannot write the output: %s\n", strerror(errno));
                        return EDFCTL_EXIT_FAILED;
                }
                return ex;
        }
        entries = calloc(f.n, sizeof(*entries));
        loads = calloc(s.ncpus, sizeof(*loads));
        r = entries && loads ? plan_run_ordered(f.tasks, f.n, s.order, s.ncpus, &s.supply, s.fit, entries, loads) : -ENOMEM;
        if (r >= 0)
                r = (a->given & ARG_JSON) ? print_json(&f, entries, loads, &s) : print_text(&f, entries, loads, &s);
        if (r < 0) {
                fprintf(stderr, "edfctl: cannot plan: %s\n", strerror(-r));
                plan_file_done(&f);
                return EDFCTL_EXIT_FAILED;
        }
        ex = EDFCTL_EXIT_OK;
        for (size_t i = 0; i < f.n; i++)
                if (entries[i].outcome == PLAN_REFUSED)
                        ex = EDFCTL_EXIT_FAILED;
        plan_file_done(&f);
        if (fflush(stdout) != 0) {
                fprintf(stderr, "edfctl: cannot write the output: %s\n", strerror(errno));
                return EDFCTL_EXIT_FAILED;
        }
        return ex;
}
