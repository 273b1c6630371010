/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* capacity: what the kernel can give deadline tasks, read from the kernel itself.
 *
 * The kernel admits per root domain: sum(runtime/period) <= CPUs x rt_runtime/rt_period, in the
 * fixed point of bandwidth.h. Kernels since 6.12 also reserve a fair server per CPU (50 ms per
 * 1 s by default) out of the same pool; its per-CPU files in debugfs are not readable even by
 * root, so the reserve is taken from debugfs where it is mounted and readable, else from what the
 * kernel version implies. Deadline threads edfd did not admit hold bandwidth too: they are found
 * by scanning /proc and counted as "unmanaged". */

#include <stdbool.h>
#include <stdint.h>

#include "params.h"
#include "tree.h"

typedef struct KernelCapacity {
        unsigned ncpus;           /* online CPUs */
        int64_t rt_runtime_us;    /* -1: kernel admission off */
        uint64_t rt_period_us;
        uint64_t raw;             /* ncpus x rt_runtime/rt_period (UINT64_MAX when admission is off) */
        uint64_t fair_server;     /* the fair servers' total reserve */
        uint64_t usable;          /* raw - fair_server: what deadline tasks may hold in all */
        bool admission_off;
        DlLimits limits;          /* sched_deadline_period_{min,max}_us */
} KernelCapacity;

/* Read the kernel's capacity and limits. Returns 0, or negative errno when /proc/sys cannot be read. */
int capacity_read(KernelCapacity *ret);

/* Sum what SCHED_DEADLINE threads hold that the tree does not know (a thread is known when the tree
 * has a reservation for its tid with the same start time). Returns 0 with the bandwidth and number
 * of threads, or negative errno. */
int capacity_scan_unmanaged(const Tree *t, uint64_t *ret_bw, unsigned *ret_threads);
