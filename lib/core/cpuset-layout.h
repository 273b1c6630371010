/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The layout of edfd's partitions, checked without touching the machine: what the cpuset adapter
 * (daemon/cpuset.c) decides before it creates, changes or removes one, from what it read.
 *
 * - cpuset_layout_check(): the partitions asked for against the CPUs present and online, each
 *   other, the CPUs edfd-partitions keeps for itself (v2) and the cpusets edfd does not own; and
 *   what the layout means for the CPUs left outside (an error on v2, where the root cgroup has
 *   tasks of its own and must keep one; a note on v1).
 * - cpuset_layout_fits(): the over-commit test. The kernel re-adds deadline tasks to rebuilt root
 *   domains without checking, so every root domain of the new layout must admit what the deadline
 *   threads already in it hold: each partition, the shared CPUs, and the CPUs outside.
 *
 * Pure: the adapter reads the machine (present, online, foreign cpusets, the threads' bandwidth)
 * and passes it in; messages are one sentence each. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/cpulist.h"

/* The directory that holds edfd's partitions (and marks them as its own). */
#define CPUSET_DIR "edfd-partitions"

typedef enum CpusetBackend {
        CPUSET_BACKEND_NONE, /* no partition can be made here (CpusetMachine.unavailable says why) */
        CPUSET_BACKEND_V1,
        CPUSET_BACKEND_V2,
} CpusetBackend;

/* A partition as asked for (name: letters, digits, _ . -, at most CPUSET_NAME_MAX bytes). */
typedef struct CpusetSpec {
        const char *name;
        CpuMask cpus;
} CpusetSpec;

/* What the adapter found on the machine. */
typedef struct CpusetMachine {
        CpusetBackend backend;
        const char *unavailable; /* backend none: why, one sentence */
        CpuMask present, online;
        CpuMask shared;          /* v2: the CPUs edfd-partitions keeps for itself, as configured */
} CpusetMachine;

/* A top-level cpuset that edfd does not own, with the path to name it by. */
typedef struct CpusetForeign {
        const char *path;
        CpuMask cpus;
} CpusetForeign;

/* The CPUs edfd-partitions keeps with n partitions: the configured ones on v2 while there are
 * partitions, else none. */
CpuMask cpuset_layout_shared(const CpusetMachine *m, size_t n);
/* The union of the specs' CPUs into *ret; -EINVAL (and *ret untouched) when two share a CPU. */
int cpuset_layout_union(const CpusetSpec *specs, size_t n, CpuMask *ret);

/* Check specs[0..n) against m and the foreign cpusets: a backend that is none, CPUs that do not
 * exist or are offline, two partitions that share a CPU, shared CPUs that are offline or in a
 * partition, no CPU left outside on v2, a CPU that a foreign cpuset holds too. Appends one line per
 * problem to *errors and per remark to *notes (strv, basic/strv.h; the caller's). Returns 0, or
 * -ENOMEM. */
int cpuset_layout_check(const CpusetMachine *m, const CpusetSpec *specs, size_t n, const CpusetForeign *foreign,
                        size_t n_foreign, char ***errors, char ***notes);

/* Would the deadline threads of each root domain of the layout specs[0..n) fit, per_cpu_bw (BW units)
 * being what one CPU admits? existing[0..n_existing) are the partitions there now and bw[] what
 * their deadline threads hold, bw[n_existing] what those outside every partition hold and
 * bw[n_existing + 1] those of edfd-partitions itself (v2). A thread of an existing partition that is
 * kept stays in it; of one that goes, it ends up outside. Returns 0, -ENOSPC with the root domain
 * that would be over-committed in *ret_error (malloc'd; NULL without memory), or -ENOMEM. */
int cpuset_layout_fits(const CpusetMachine *m, const CpusetSpec *specs, size_t n, char *const *existing,
                       size_t n_existing, const uint64_t *bw, uint64_t per_cpu_bw, char **ret_error);
