/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for edfctl plan's task-set reader (client/plan-file.h) and the dry run it feeds
 * (core/plan.h), over arbitrary bytes read as CSV (plan.csv), YAML (plan.yaml) and by sniffing
 * (plan, as from standard input).
 *
 * The input is copied into a heap block of exactly its size (no NUL after it), so that ASan catches
 * any read past the end. Checked besides the sanitizers, for every input and name:
 * - the parse returns 0 with 1..PLAN_FILE_TASKS_MAX tasks, or -EINVAL with a message that starts
 *   with the file name and an empty result, or -ENOMEM;
 * - an accepted task has a name (no two alike), no control character in its name or group,
 *   DL_RUNTIME_MIN <= runtime <= deadline <= period, and a line within the input, the lines in
 *   file order;
 * - plan_run() on the accepted tasks, on 1 and on 3 CPUs, returns 0 (every limit of the reader
 *   holds for the plan: a refusal, never an error), each task placed on a CPU that exists, split
 *   on two different ones or refused with a reason, and the CPUs' task counts add up.
 *
 * Built by tests/fuzz/meson.build with client/plan-file.c (the fuzz build has no client/). */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/plan.h"
#include "plan-file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what) {
        if (!ok) {
                fprintf(stderr, "fuzz-plan: %s\n", what);
                abort();
        }
}

static int by_name(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static int has_control(const char *s) {
        for (; s && *s; s++)
                if ((unsigned char) *s < 0x20 || *s == 0x7f)
                        return 1;
        return 0;
}

static void check_plan(const PlanFile *f, unsigned ncpus) {
        EdfSupply supply;
        DlParams server = EDF_FAIR_SERVER_DEFAULT;
        PlanEntry *e = calloc(f->n, sizeof(*e));
        PlanCpuLoad loads[3];
        size_t on_cpus = 0, stages = 0;
        int r;

        if (!e)
                return;
        check(edf_supply_from_kernel(950000, 1000000, &server, &supply) == 0, "the supply");
        r = plan_run(f->tasks, f->n, ncpus, &supply, PLACE_FIT_BEST, e, loads);
        check(r == 0 || r == -ENOMEM, "plan_run() on an accepted file returns 0");
        for (size_t i = 0; r == 0 && i < f->n; i++) {
                switch (e[i].outcome) {
                case PLAN_PLACED:
                        check(e[i].cpu < ncpus, "placed on a CPU that exists");
                        stages += 1;
                        break;
                case PLAN_SPLIT:
                        check(e[i].cpu < ncpus && e[i].cpu_b < ncpus && e[i].cpu != e[i].cpu_b, "split on two CPUs");
                        check(e[i].stage1.runtime + e[i].stage2.runtime == f->tasks[i].params.runtime,
                              "the stages add up to the runtime");
                        stages += 2;
                        break;
                case PLAN_REFUSED:
                        check(e[i].reason[0] != '\0', "a refusal has a reason");
                        break;
                default:
                        check(0, "an outcome");
                }
        }
        for (unsigned c = 0; r == 0 && c < ncpus; c++) {
                check(loads[c].bw <= loads[c].cap_bw, "no CPU holds more than it may");
                on_cpus += loads[c].n_tasks;
        }
        check(r != 0 || on_cpus == stages, "the CPUs' counts add up");
        free(e);
}

static void one(const char *name, const char *buf, size_t size) {
        char err[PLAN_FILE_ERROR_MAX];
        PlanFile f = { .n = 99 };
        const char **names;
        int r;

        r = plan_file_parse(name, buf, size, &f, err);
        if (r < 0) {
                check(r == -EINVAL || r == -ENOMEM, "a refusal is -EINVAL or -ENOMEM");
                check(strncmp(err, name, strlen(name)) == 0 && err[strlen(name)] == ':', "the message names the file");
                check(f.n == 0 && !f.tasks && !f.strings, "a refusal leaves the result empty");
                return;
        }
        check(f.n >= 1 && f.n <= PLAN_FILE_TASKS_MAX, "1..PLAN_FILE_TASKS_MAX tasks");
        names = calloc(f.n, sizeof(*names));
        for (size_t i = 0; i < f.n; i++) {
                const PlanTask *t = &f.tasks[i];
                check(t->name && *t->name, "a task has a name");
                check(!has_control(t->name) && !has_control(t->group), "no control character in a name or group");
                check(t->params.runtime >= DL_RUNTIME_MIN && t->params.runtime <= t->params.deadline &&
                      t->params.deadline <= t->params.period, "1024ns <= runtime <= deadline <= period");
                check(f.lines[i] >= 1 && f.lines[i] <= size + 1 && (i == 0 || f.lines[i] >= f.lines[i - 1]),
                      "lines within the input, in file order");
                if (names)
                        names[i] = t->name;
        }
        if (names) {
                qsort(names, f.n, sizeof(*names), by_name);
                for (size_t i = 1; i < f.n; i++)
                        check(strcmp(names[i - 1], names[i]) != 0, "no two tasks of one name");
                free(names);
        }
        check_plan(&f, 1);
        check_plan(&f, 3);
        plan_file_done(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *buf = malloc(size ? size : 1);

        if (!buf)
                return 0;
        memcpy(buf, data, size);
        one("plan.csv", buf, size);
        one("plan.yaml", buf, size);
        one("plan", buf, size);
        free(buf);
        return 0;
}
