/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The task-set file that `edfctl plan` reads, parsed from a buffer (no I/O here). Two formats:
 *
 * CSV: a header line naming the columns, then one task per line. Columns: runtime and period
 * (required), deadline (empty or absent: the period), name, group, split (yes/no, true/false,
 * empty: no). A # at the start of a line or after a blank starts a comment (to the end of the
 * line, as in YAML); blank lines are skipped; fields are trimmed; there is no quoting (a name
 * cannot hold a comma, nor a # after a blank).
 *
 *     name,runtime,deadline,period,split
 *     video,5.8ms,10ms,10ms,yes
 *
 * YAML: a mapping with `tasks:`, a sequence of mappings with the same keys (split: a boolean).
 *
 *     tasks:
 *       - { name: video, runtime: 5.8ms, period: 10ms, split: true }
 *
 * The format is the extension's (.csv, .yaml, .yml); otherwise YAML when the first line that is
 * not blank or a comment starts with "tasks:", else CSV. Durations carry a unit (10ms, 250us);
 * each task is checked with the kernel's rules (runtime >= 1024ns, runtime <= deadline <=
 * period). A task without a name is named by its position ("#3"); two tasks of one name are
 * refused (with both lines). Every error names the file, the line and the problem; the first one
 * stops the parse. */

#include <stdbool.h>
#include <stddef.h>

#include "core/plan.h"

/* The most tasks in a file: what one CPU's EDF test takes (EDF_TASKS_MAX), since a plan may put
 * every task on one CPU (best fit packs small tasks onto cpu0). With more, plan_run() would fail
 * with -E2BIG part way instead of the file being refused. */
#define PLAN_FILE_TASKS_MAX EDF_TASKS_MAX
#define PLAN_FILE_SIZE_MAX (16u << 20)
#define PLAN_FILE_ERROR_MAX 512

typedef struct PlanFile {
        PlanTask *tasks;  /* names and groups point into strings owned here */
        unsigned *lines;  /* the line each task starts on */
        size_t n;
        char **strings;
        size_t n_strings;
        size_t allocated, allocated_strings;
} PlanFile;

/* Parse buf (len bytes; need not be NUL-terminated) read from filename (used for the format and the
 * messages). Returns 0 with *ret filled, -EINVAL with the reason in err ("plan.csv:3: runtime
 * "5" has no unit (write it as 10ms, 250us, 1.5s)"), -ENOMEM. *ret is empty on error. */
int plan_file_parse(const char *filename, const char *buf, size_t len, PlanFile *ret, char err[static PLAN_FILE_ERROR_MAX]);

void plan_file_done(PlanFile *f);
