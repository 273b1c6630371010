/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The per-job overhead: what the kernel charges a periodic job besides its work, measured on this
 * machine by `edfctl calibrate`, kept in a small text file, and added by `edfctl admit --work`.
 *
 * A job of W of CPU time (its own thread CPU time) is charged W plus the path around it: the
 * return from its sleep, the end of its loop, the system call that sleeps, the switch out, and on
 * the next release the wake-up and the switch in, each on whatever cache the CPU kept. That path is
 * a few microseconds on bare metal and far more in a virtual machine whose exits cost tens of
 * microseconds each. The calibration measures it job by job (the thread CPU time from one job's
 * start to the next one's, minus the work) and keeps a high quantile of it.
 *
 * The file is "key = value" lines and # comments. It holds for one machine: the kernel (its
 * release and build, which fix HZ and the scheduler), the CPU model and the number of online CPUs.
 * When any of them differs, the calibration is stale and must be run again. Pure: no I/O. */

#include <stddef.h>
#include <stdint.h>

#define CALIBRATION_VERSION 1
#define MACHINE_TEXT_MAX 160
/* Large enough for calibration_format() of any calibration. */
#define CALIBRATION_TEXT_MAX 2048

typedef struct MachineId {
        char kernel[MACHINE_TEXT_MAX];    /* uname's release and version: "6.18.44 #1 SMP ..." */
        char cpu_model[MACHINE_TEXT_MAX]; /* /proc/cpuinfo's first "model name" */
        unsigned cpus;                    /* online CPUs */
} MachineId;

typedef struct Calibration {
        MachineId machine;
        uint64_t hz;          /* the kernel's tick rate (0: unknown): it enforces budgets at the tick */
        int64_t measured;     /* when, in seconds since the epoch */
        uint64_t period;      /* of the calibration's jobs, ns */
        uint64_t jobs;        /* measured (warm-up discarded) */
        uint64_t overhead;    /* ns per job that a budget adds: the 99.9th percentile, rounded up to the us */
        uint64_t p50, p99, max;
} Calibration;

/* Parse the file's text. Returns 0, or -EINVAL with the 1-based line in *ret_line (0: the file as a
 * whole) and a static reason in *ret_reason. Unknown keys, a repeated key, a missing key, a number
 * that is not one, a version other than CALIBRATION_VERSION and quantiles out of order are
 * refused. */
int calibration_parse(const char *text, Calibration *ret, unsigned *ret_line, const char **ret_reason);

/* The file's text for c, with comments saying what it is. Returns its length, or -ENOSPC when size
 * is too small (CALIBRATION_TEXT_MAX always does). */
int calibration_format(const Calibration *c, char *buf, size_t size);

/* NULL when c holds for the machine now describes; else why not, written into buf ("the kernel is
 * 6.1.0 ..., the calibration was made on 6.18.44 ..."). */
const char *calibration_stale(const Calibration *c, const MachineId *now, char *buf, size_t size);

/* The permille-th per-mille of v[0..n) by nearest rank (sorts v). 0 when n is 0. */
uint64_t quantile_permille(uint64_t *v, size_t n, unsigned permille);

/* The budget for a job of work ns: work + ceil(work x margin / PERCENT_PERIOD_NS) + overhead, where
 * margin is percent_parse()'s runtime over PERCENT_PERIOD_NS (10% is 10 ms). The margin scales the
 * work only: the overhead is measured, not estimated. Returns 0, or -ERANGE on overflow. */
int budget_from_work(uint64_t work, uint64_t margin, uint64_t overhead, uint64_t *ret_runtime);
