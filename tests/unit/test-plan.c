/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* plan_run() (the dry run's decisions) and plan_file_parse() (its CSV and YAML task sets, and every
 * refusal of a bad file). */

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "core/bandwidth.h"
#include "core/plan.h"
#include "core/plan-order.h"
#include "plan-file.h"

#define MS NSEC_PER_MSEC
#define US NSEC_PER_USEC

static EdfSupply host(void) { /* this host's CPU: a 95% cap less a 50 ms / 1 s fair server */
        DlParams server = EDF_FAIR_SERVER_DEFAULT;
        EdfSupply s;

        cr_assert_eq(edf_supply_from_kernel(950000, 1000000, &server, &s), 0);
        return s;
}

static PlanFile parse_ok(const char *name, const char *text) {
        char err[PLAN_FILE_ERROR_MAX];
        PlanFile f;
        int r = plan_file_parse(name, text, strlen(text), &f, err);

        cr_assert_eq(r, 0, "%s: %s", name, err);
        return f;
}

static void parse_bad(const char *name, const char *text, const char *want) {
        char err[PLAN_FILE_ERROR_MAX];
        PlanFile f = { .n = 99 };

        cr_assert_eq(plan_file_parse(name, text, strlen(text), &f, err), -EINVAL, "%s parsed", text);
        cr_assert_str_eq(err, want);
        cr_assert_eq(f.n, 0);
        cr_assert_null(f.tasks);
}

Test(plan, seed_case) {
        PlanFile f = parse_ok("seed.csv", "# the seed's case\nname,runtime,deadline,period,split\n"
                                          "a,5.8ms,10ms,10ms,no\nb, 5.8ms ,10ms,10ms,\nc,5.8ms,,10ms,yes\n");
        PlanEntry e[3];
        PlanCpuLoad loads[2];
        EdfSupply s = host();

        cr_assert_eq(f.n, 3);
        cr_assert_str_eq(f.tasks[1].name, "b");
        cr_assert_eq(f.tasks[2].params.deadline, 10 * MS, "an empty deadline is the period");
        cr_assert(f.tasks[2].split);
        cr_assert_not(f.tasks[1].split);

        cr_assert_eq(plan_run(f.tasks, f.n, 2, &s, PLACE_FIT_BEST, e, loads), 0);
        cr_assert_eq(e[0].outcome, PLAN_PLACED);
        cr_assert_eq(e[0].cpu, 0);
        cr_assert_eq(e[1].outcome, PLAN_PLACED);
        cr_assert_eq(e[1].cpu, 1);
        cr_assert_eq(e[2].outcome, PLAN_SPLIT);
        cr_assert_eq(e[2].stage1.runtime, 3200 * US);
        cr_assert_eq(e[2].stage2.runtime, 2600 * US);
        cr_assert_eq(e[2].cpu_b, 1);
        cr_assert_eq(loads[0].n_tasks, 2);
        cr_assert_eq(loads[1].n_tasks, 2);
        cr_assert_leq(loads[0].bw, loads[0].cap_bw);

        /* Without the split, the third is refused with the numbers. */
        f.tasks[2].split = false;
        cr_assert_eq(plan_run(f.tasks, f.n, 2, &s, PLACE_FIT_BEST, e, NULL), 0);
        cr_assert_eq(e[2].outcome, PLAN_REFUSED);
        cr_assert_str_eq(e[2].reason, "no CPU can take 58%: cpu0 32% left, cpu1 32% left");
        /* Nor on one CPU with the split: there is no second CPU. */
        f.tasks[2].split = true;
        cr_assert_eq(plan_run(f.tasks, f.n, 1, &s, PLACE_FIT_BEST, e, NULL), 0);
        cr_assert_eq(e[1].outcome, PLAN_REFUSED);
        cr_assert_str_eq(e[2].reason, "no CPU can take 58%: cpu0 32% left; no two CPUs can take it split either");
        plan_file_done(&f);
}

Test(plan, constrained_deadlines_yaml) {
        PlanFile f = parse_ok("set.yaml", "tasks:\n"
                                          "  - { name: control, runtime: 50ms, deadline: 50ms, period: 100ms }\n"
                                          "  - name: logger\n    runtime: 10ms\n    period: 100ms\n    group: io\n"
                                          "  - { name: sensor, runtime: 2ms, deadline: 5ms, period: 20ms, split: false }\n");
        PlanEntry e[3];
        EdfSupply s = host();

        cr_assert_eq(f.n, 3);
        cr_assert_str_eq(f.tasks[1].group, "io");
        cr_assert_null(f.tasks[0].group);
        cr_assert_eq(plan_run(f.tasks, f.n, 1, &s, PLACE_FIT_BEST, e, NULL), 0);
        cr_assert_eq(e[0].outcome, PLAN_PLACED);
        cr_assert_eq(e[1].outcome, PLAN_PLACED);
        cr_assert_eq(e[1].verdict.test, EDF_TEST_DEMAND);
        cr_assert_eq(e[2].outcome, PLAN_REFUSED);
        cr_assert_str_eq(e[2].reason, "no CPU can take 10%: cpu0 30% left but a deadline fails at 50ms (demand 56ms)");
        /* Two CPUs: the sensor goes where the control loop is not. */
        cr_assert_eq(plan_run(f.tasks, f.n, 2, &s, PLACE_FIT_BEST, e, NULL), 0);
        cr_assert_eq(e[2].outcome, PLAN_PLACED);
        cr_assert_eq(e[2].cpu, 1);
        plan_file_done(&f);
}

Test(plan, formats) {
        /* No extension: "tasks:" makes it YAML, anything else CSV. */
        PlanFile f = parse_ok("set", "\n# comment\ntasks:\n  - { runtime: 1ms, period: 10ms }\n");
        cr_assert_eq(f.n, 1);
        cr_assert_str_eq(f.tasks[0].name, "#1");
        plan_file_done(&f);
        f = parse_ok("-", "period,runtime\r\n10ms,1ms\r\n20ms,2ms\r\n");
        cr_assert_eq(f.n, 2);
        cr_assert_eq(f.tasks[1].params.period, 20 * MS);
        cr_assert_str_eq(f.tasks[1].name, "#2");
        plan_file_done(&f);
        f = parse_ok("x.yml", "---\ntasks:\n  - { runtime: 1ms, period: 10ms, split: yes }\n...\n");
        cr_assert(f.tasks[0].split);
        plan_file_done(&f);
        plan_file_done(NULL);
}

Test(plan, comments) {
        /* edfctl(1): # starts a comment, at the start of a line or after a blank, in CSV as in YAML. */
        PlanFile f = parse_ok("c.csv", "name,runtime,period # the header\n"
                                       "a,1ms,10ms # a note\n"
                                       "b,2ms,10ms\t# after a tab\n"
                                       "# a whole line\n"
                                       "   # an indented one\n"
                                       "c#1,3ms,10ms\n");

        cr_assert_eq(f.n, 3);
        cr_assert_str_eq(f.tasks[0].name, "a");
        cr_assert_eq(f.tasks[0].params.period, 10 * MS);
        cr_assert_eq(f.tasks[1].params.runtime, 2 * MS);
        cr_assert_str_eq(f.tasks[2].name, "c#1");
        cr_assert_eq(f.lines[2], 6);
        plan_file_done(&f);
        parse_bad("c.csv", "name,runtime,period\nc,3ms,10ms#x\n", "c.csv:2: period \"10ms#x\" has an unknown unit (use ns, us, ms or s)");
        f = parse_ok("c.yaml", "tasks: # the set\n  - { name: a, runtime: 1ms, period: 10ms } # a note\n"
                               "  - name: b # a name\n    runtime: 2ms # its runtime\n    period: 10ms\n");
        cr_assert_eq(f.n, 2);
        cr_assert_str_eq(f.tasks[1].name, "b");
        cr_assert_eq(f.tasks[1].params.runtime, 2 * MS);
        cr_assert_eq(f.lines[1], 3);
        plan_file_done(&f);
}

Test(plan, duplicate_names) {
        parse_bad("d.csv", "name,runtime,period\na,1ms,10ms\nb,1ms,10ms\nb,2ms,10ms\na,2ms,10ms\n",
                  "d.csv:4: task name \"b\" is already the name of the task at d.csv:3");
        parse_bad("d.csv", "name,runtime,period\na,1ms,10ms\nb,1ms,10ms\nc,2ms,10ms\na,2ms,10ms\nb,1ms,10ms\n",
                  "d.csv:5: task name \"a\" is already the name of the task at d.csv:2");
        /* An unnamed task's name is its position. */
        parse_bad("d.csv", "runtime,period,name\n1ms,10ms,\n1ms,10ms,#1\n",
                  "d.csv:3: task name \"#1\" is already the name of the task at d.csv:2");
        parse_bad("d.yaml", "tasks:\n  - { name: x, runtime: 1ms, period: 10ms }\n\n  - name: y\n    runtime: 1ms\n"
                            "    period: 10ms\n  - name: x\n    runtime: 1ms\n    period: 10ms\n",
                  "d.yaml:7: task name \"x\" is already the name of the task at d.yaml:2");
}

Test(plan, bad_files) {
        parse_bad("a.csv", "", "a.csv: is empty (a CSV task set starts with a header line: name, runtime, deadline, period, group, split)");
        parse_bad("a.csv", "name,runtime,period\n", "a.csv: holds no task");
        parse_bad("a.csv", "name,runtime,cpu,period\n", "a.csv:1: unknown column \"cpu\" (expected name, runtime, deadline, period, group, split)");
        parse_bad("a.csv", "name,runtime\n", "a.csv:1: the header names no period column (the first line is the header: name, runtime, deadline, period, group, split)");
        parse_bad("a.csv", "runtime,period,runtime\n", "a.csv:1: column runtime is named twice");
        parse_bad("a.csv", "runtime,period\n1ms,10ms\n5,10ms\n", "a.csv:3: runtime \"5\" has no unit (write it as 10ms, 250us, 1.5s)");
        parse_bad("a.csv", "runtime,period\n1ms,10ms,3\n", "a.csv:2: more fields than the header's 2 columns");
        parse_bad("a.csv", "runtime,period,name\n1ms,10ms\n", "a.csv:2: 2 fields, the header has 3 columns");
        parse_bad("a.csv", "name,runtime,period\nv,11ms,10ms\n", "a.csv:2: task v: runtime 11ms is above the period 10ms");
        parse_bad("a.csv", "name,runtime,deadline,period\nv,1ms,20ms,10ms\n", "a.csv:2: task v: deadline 20ms is above the period 10ms");
        parse_bad("a.csv", "name,runtime,deadline,period\nv,2ms,1ms,10ms\n", "a.csv:2: task v: runtime 2ms is above the deadline 1ms");
        parse_bad("a.csv", "name,runtime,deadline,period\nv,1ms,0ms,10ms\n", "a.csv:2: deadline is 0 (leave it out for a deadline equal to the period)");
        parse_bad("a.csv", "runtime,period\n100ns,10ms\n", "a.csv:2: task #1: runtime is below 1024ns, the kernel's minimum");
        parse_bad("a.csv", "runtime,period\n,10ms\n", "a.csv:2: task #1 has no runtime");
        parse_bad("a.csv", "runtime,period,split\n1ms,10ms,maybe\n", "a.csv:2: split \"maybe\" is not yes or no");
        parse_bad("a.csv", "runtime,period,name\n1ms,10ms,a\tb\n", "a.csv:2: name \"a\\tb\" holds a control character");
        parse_bad("a.csv", "runtime,period,name\n1ms,10ms,\x1b]0;x\n", "a.csv:2: name \"\\x1b]0;x\" holds a control character");
        /* A name that is not valid UTF-8 is taken (outputs escape it) but shown escaped in messages. */
        parse_bad("a.csv", "name,runtime,period\nv\xff\xe2\x80\xae,11ms,10ms\n",
                  "a.csv:2: task v\\xff\\xe2\\x80\\xae: runtime 11ms is above the period 10ms");
        parse_bad("a.csv", "name,runtime,period\n\xc3,1ms,10ms\n\xc3,1ms,10ms\n",
                  "a.csv:3: task name \"\\xc3\" is already the name of the task at a.csv:2");
        parse_bad("a.csv", "runtime,period\n99999999999999999999s,10ms\n", "a.csv:2: runtime \"99999999999999999999s\" is too large");
        parse_bad("b.yaml", "tasks: [ { runtime: 1ms } ]\n", "b.yaml:1: task #1 has no period");
        parse_bad("b.yaml", "tasks:\n  - { runtime: 1ms, period: 10ms, cpu: 1 }\n", "b.yaml:2: unknown key \"cpu\" in a task (expected name, runtime, deadline, period, group, split)");
        parse_bad("b.yaml", "cpus: 2\n", "b.yaml:1: unknown key \"cpus\" (expected tasks)");
        parse_bad("b.yaml", "tasks: 3\n", "b.yaml:1: tasks must be a sequence of tasks");
        parse_bad("b.yaml", "tasks: [ 3 ]\n", "b.yaml:1: each task is a mapping (name, runtime, deadline, period, group, split)");
        parse_bad("b.yaml", "tasks: [ { runtime: [1ms] } ]\n", "b.yaml:1: runtime must be a scalar");
        parse_bad("b.yaml", "tasks: [ { runtime: 1ms, runtime: 2ms } ]\n", "b.yaml:1: runtime given twice");
        parse_bad("b.yaml", "tasks: [ &a { runtime: 1ms, period: 2ms }, *a ]\n", "b.yaml:1: anchors (&a) are not supported: write each value out in full");
        parse_bad("b.yaml", "tasks: [\n", "b.yaml:2: not valid YAML: did not find expected node content, while parsing a flow node at 2:1");
        parse_bad("b.yaml", "- 1\n", "b.yaml:1: expected a mapping with tasks:");
        parse_bad("b.yaml", "", "b.yaml: is empty (expected tasks:)");
        parse_bad("b.yaml", "tasks: []\n", "b.yaml: holds no task");
        parse_bad("b.yaml", "tasks: []\ntasks: []\n", "b.yaml:2: tasks given twice");
        parse_bad("b.yaml", "tasks: [ { runtime: 1ms, period: 10ms } ]\n---\ntasks: []\n", "b.yaml:2: a second YAML document: only one is read; remove this \"---\" and merge what follows into the first");
        parse_bad("b.yaml", "{}\n", "b.yaml: has no tasks:");
        /* An escaped NUL: libyaml's scalar is longer than its C string. */
        parse_bad("b.yaml", "tasks:\n  - { period: 10ms,\n      runtime: \"5ms\\u0000xyzw\" }\n",
                  "b.yaml:3: runtime holds a NUL byte");
        parse_bad("b.yaml", "tasks: [ { runtime: 1ms, period: 10ms, name: \"a\\0b\" } ]\n",
                  "b.yaml:1: name holds a NUL byte");
        parse_bad("b.yaml", "\"tasks\\0\": [ { runtime: 1ms, period: 10ms } ]\n", "b.yaml:1: unknown key \"tasks\\x00\" (expected tasks)");
}

/* A file may hold what one CPU's test takes, since a plan may put every task there; one more is
 * refused by the reader, naming the limit, instead of failing the plan part way. */
Test(plan, most_tasks) {
        const char header[] = "runtime,period\n", row[] = "1024ns,100ms\n";
        size_t n = PLAN_FILE_TASKS_MAX + 1, len = strlen(header) + n * strlen(row);
        _cleanup_free_ char *buf = malloc(len + 1), *want = NULL;
        char err[PLAN_FILE_ERROR_MAX];
        PlanFile f;

        cr_assert_eq(PLAN_FILE_TASKS_MAX, EDF_TASKS_MAX);
        cr_assert_not_null(buf);
        strcpy(buf, header);
        for (size_t i = 0; i < n; i++)
                memcpy(buf + strlen(header) + i * strlen(row), row, strlen(row));
        buf[len] = '\0';
        cr_assert_eq(plan_file_parse("many.csv", buf, len, &f, err), -EINVAL);
        cr_assert(asprintf(&want, "many.csv:%zu: more than %u tasks, the most a plan takes (one CPU's test takes at most %u)",
                           n + 1, PLAN_FILE_TASKS_MAX, EDF_TASKS_MAX) > 0);
        cr_assert_str_eq(err, want);
        cr_assert_eq(plan_file_parse("many.csv", buf, len - strlen(row), &f, err), 0, "%s", err);
        cr_assert_eq(f.n, PLAN_FILE_TASKS_MAX);
        plan_file_done(&f);
}

/* The same in YAML, every key given: the reader's node budget holds the most tasks a plan takes,
 * one more is refused by count; a tree of values that are no tasks is cut at that budget. */
Test(plan, most_tasks_yaml) {
        size_t n = PLAN_FILE_TASKS_MAX + 1, size = 16 + n * 100, len = 0;
        _cleanup_free_ char *buf = malloc(size), *want = NULL, *flat = NULL;
        char err[PLAN_FILE_ERROR_MAX];
        size_t end_of_max = 0;
        PlanFile f;

        cr_assert_not_null(buf);
        len += (size_t) snprintf(buf, size, "tasks:\n");
        for (size_t i = 0; i < n; i++) {
                if (i == n - 1)
                        end_of_max = len;
                len += (size_t) snprintf(buf + len, size - len, "- {name: t%zu, runtime: 1024ns, deadline: 100ms, "
                                         "period: 100ms, group: g, split: no}\n", i);
        }
        cr_assert_eq(plan_file_parse("many.yaml", buf, end_of_max, &f, err), 0, "%s", err);
        cr_assert_eq(f.n, PLAN_FILE_TASKS_MAX);
        plan_file_done(&f);
        cr_assert_eq(plan_file_parse("many.yaml", buf, len, &f, err), -EINVAL);
        cr_assert(asprintf(&want, "many.yaml:%zu: more than %u tasks, the most a plan takes (one CPU's test takes at "
                           "most %u)", n + 1, PLAN_FILE_TASKS_MAX, EDF_TASKS_MAX) > 0);
        cr_assert_str_eq(err, want);

        /* A million scalars: refused once the tree is larger than the most tasks could make it. */
        flat = malloc(16 + 2 * 1000000);
        cr_assert_not_null(flat);
        len = (size_t) sprintf(flat, "tasks: [");
        for (size_t i = 0; i < 1000000; i++)
                len += (size_t) sprintf(flat + len, "a,");
        flat[len - 1] = ']';
        cr_assert_eq(plan_file_parse("flat.yaml", flat, len, &f, err), -EINVAL);
        cr_assert(strstr(err, "flat.yaml:1: holds more than ") == err && strstr(err, "values, more than 65536 tasks of "
                  "six keys (the most a plan takes)"), "%s", err);
}

Test(plan, bad_calls) {
        PlanTask t = { .name = "x", .params = { .runtime = 1 * MS, .deadline = 10 * MS, .period = 10 * MS } };
        PlanEntry e;
        EdfSupply s = host();

        cr_assert_eq(plan_run(&t, 1, 0, &s, PLACE_FIT_BEST, &e, NULL), -EINVAL);
        cr_assert_eq(plan_run(&t, 1, PLAN_CPUS_MAX + 1, &s, PLACE_FIT_BEST, &e, NULL), -EINVAL);
        cr_assert_eq(plan_run(&t, 1, 1, &s, _PLACE_FIT_MAX, &e, NULL), -EINVAL);
        t.params.runtime = 100;
        cr_assert_eq(plan_run(&t, 1, 1, &s, PLACE_FIT_BEST, &e, NULL), -EINVAL);
        cr_assert_eq(plan_run(NULL, 0, 1, &s, PLACE_FIT_BEST, NULL, NULL), 0);
        cr_assert_str_eq(plan_outcome_to_string(PLAN_SPLIT), "split");
}

/* The order of a dry run: decreasing utilization, exact, ties by the shorter deadline then the
 * file's position; the outcomes still land on each task's own entry. */
Test(plan, order_decreasing) {
        const PlanTask t[] = {
                { .name = "small1", .params = { 3 * MS, 10 * MS, 10 * MS } },
                { .name = "small2", .params = { 3 * MS, 10 * MS, 10 * MS } },
                { .name = "large1", .params = { 6 * MS, 10 * MS, 10 * MS } },
                { .name = "tight", .params = { 6 * MS, 8 * MS, 10 * MS } },
                /* 30% exactly as small1, written over another period: a tie by utilization */
                { .name = "same", .params = { 30 * MS, 100 * MS, 100 * MS } },
                /* one part in 10^9 above 30% */
                { .name = "above", .params = { 300000001, 1000 * MS, 1000 * MS } },
        };
        const size_t want[] = { 3, 2, 5, 0, 1, 4 };
        size_t perm[ELEMENTSOF(t)];
        EdfSupply s = host();
        PlanEntry e[4];
        PlanOrder o;

        cr_assert_eq(plan_order(t, ELEMENTSOF(t), PLAN_ORDER_DECREASING, perm), 0);
        for (size_t i = 0; i < ELEMENTSOF(t); i++)
                cr_expect_eq(perm[i], want[i], "position %zu: %s, want %s", i, t[perm[i]].name, t[want[i]].name);
        cr_assert_eq(plan_order(t, ELEMENTSOF(t), PLAN_ORDER_GIVEN, perm), 0);
        for (size_t i = 0; i < ELEMENTSOF(t); i++)
                cr_expect_eq(perm[i], i);
        cr_expect_eq(plan_order(t, 1, _PLAN_ORDER_MAX, perm), -EINVAL);

        /* small1, small2, large1, large1 again: given, best fit alone loses the last; one move for
         * room (small1 to cpu1) places it, and so does the decreasing order without a move */
        PlanTask set[4] = { t[0], t[1], t[2], t[2] };
        cr_assert_eq(plan_run_with(set, 4, 2, &s, PLACE_FIT_BEST, false, e, NULL), 0);
        cr_expect_eq(e[3].outcome, PLAN_REFUSED);
        cr_expect(!e[3].room);
        cr_assert_eq(plan_run_ordered(set, 4, PLAN_ORDER_GIVEN, 2, &s, PLACE_FIT_BEST, e, NULL), 0);
        cr_expect_eq(e[3].outcome, PLAN_PLACED);
        cr_expect(e[3].room);
        cr_expect_eq(e[3].cpu, 0u);
        cr_expect_eq(e[3].room_task, 0u, "the smallest, first placed");
        cr_expect_eq(e[3].room_from, 0u);
        cr_expect_eq(e[3].room_to, 1u);
        cr_expect(e[0].moved);
        cr_expect_eq(e[0].cpu, 1u, "small1 ends on cpu1");
        cr_expect(!e[1].moved && e[1].cpu == 0u);
        PlanEntry loads_e[4];
        PlanCpuLoad loads[2];
        cr_assert_eq(plan_run(set, 4, 2, &s, PLACE_FIT_BEST, loads_e, loads), 0);
        cr_expect_eq(loads[0].n_tasks, 2u);
        cr_expect_eq(loads[1].n_tasks, 2u);
        /* The move in decreasing order names the moved task by the caller's order. */
        PlanTask rev[4] = { t[2], t[0], t[1], t[2] }; /* large1, small1, small2, large1 */
        cr_assert_eq(plan_run_ordered(rev, 4, PLAN_ORDER_GIVEN, 2, &s, PLACE_FIT_BEST, e, NULL), 0);
        for (size_t i = 0; i < 4; i++)
                cr_expect_eq(e[i].outcome, PLAN_PLACED, "task %zu", i);
        cr_assert_eq(plan_run_ordered(set, 4, PLAN_ORDER_DECREASING, 2, &s, PLACE_FIT_BEST, e, NULL), 0);
        for (size_t i = 0; i < 4; i++)
                cr_expect_eq(e[i].outcome, PLAN_PLACED, "task %zu", i);
        cr_expect_eq(e[0].cpu, 0u);
        cr_expect_eq(e[1].cpu, 1u);
        cr_expect_eq(e[2].cpu, 0u);
        cr_expect_eq(e[3].cpu, 1u);

        cr_assert_eq(plan_order_from_string("decreasing", &o), 0);
        cr_expect_eq(o, PLAN_ORDER_DECREASING);
        cr_expect_eq(plan_order_from_string("Decreasing", &o), -EINVAL);
        cr_expect_eq(plan_order_from_string(NULL, &o), -EINVAL);
        cr_expect_str_eq(plan_order_to_string(PLAN_ORDER_GIVEN), "given");
        cr_expect_null(plan_order_to_string(_PLAN_ORDER_MAX));
}

/* The work budget per user (issue 41): a window opens at the first call, what is charged is taken
 * off until it closes, then all of it is there again. */
Test(plan, budget_window) {
        PlanBudgetWindow w = {};
        const uint64_t S = UINT64_C(1000000000);

        cr_assert_eq(plan_budget_left(&w, 100 * S, UINT64_MAX, 10 * S), UINT64_MAX, "no budget");
        cr_assert_eq(plan_budget_left(&w, 100 * S, 1000, 0), UINT64_MAX, "no window");
        cr_assert_eq(plan_budget_resets_in(&w, 100 * S, 10 * S), 0, "none open");

        cr_assert_eq(plan_budget_left(&w, 100 * S, 1000, 10 * S), 1000);
        plan_budget_charge(&w, 400);
        cr_assert_eq(plan_budget_left(&w, 101 * S, 1000, 10 * S), 600);
        cr_assert_eq(plan_budget_resets_in(&w, 101 * S, 10 * S), 9 * S);
        plan_budget_charge(&w, 700); /* a call may go over what was left by its last pass */
        cr_assert_eq(plan_budget_left(&w, 109 * S, 1000, 10 * S), 0);
        cr_assert_eq(plan_budget_left(&w, 110 * S, 1000, 10 * S), 1000, "the next window");
        cr_assert_eq(plan_budget_resets_in(&w, 110 * S, 10 * S), 10 * S);
        plan_budget_charge(&w, UINT64_MAX);
        plan_budget_charge(&w, UINT64_MAX);
        cr_assert_eq(w.used, UINT64_MAX, "saturates");
        cr_assert_eq(plan_budget_left(&w, 111 * S, 1000, 10 * S), 0);
        cr_assert_eq(plan_budget_left(&w, 50 * S, 1000, 10 * S), 1000, "a clock gone back opens a window");
}
