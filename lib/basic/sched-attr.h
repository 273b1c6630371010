/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The kernel's SCHED_DEADLINE interface as this project calls it: the policy and flag numbers, struct
 * sched_attr under a name of our own, and the raw system calls. No policy: the daemon's adapter
 * (daemon/sched-dl.c) pins and verifies threads on top of this; tests and tools call it directly. */

#include <sched.h>
#include <stdint.h>
#include <sys/types.h>

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif
#ifndef SCHED_FLAG_RESET_ON_FORK
#define SCHED_FLAG_RESET_ON_FORK 0x01
#endif
#ifndef SCHED_FLAG_RECLAIM
#define SCHED_FLAG_RECLAIM 0x02
#endif
#ifndef SCHED_FLAG_DL_OVERRUN
#define SCHED_FLAG_DL_OVERRUN 0x04
#endif

/* The kernel's struct sched_attr (SCHED_ATTR_SIZE_VER1, 56 bytes). Defined here under our own name:
 * glibc 2.36 has neither the struct nor a wrapper, newer glibc has both, and the kernel's
 * <linux/sched/types.h> would clash with the latter. */
typedef struct SchedAttr {
        uint32_t size;
        uint32_t sched_policy;
        uint64_t sched_flags;
        int32_t sched_nice;
        uint32_t sched_priority;
        uint64_t sched_runtime;
        uint64_t sched_deadline;
        uint64_t sched_period;
        uint32_t sched_util_min;
        uint32_t sched_util_max;
} SchedAttr;

/* The raw system calls on one thread (tid 0 = the caller). flags is the syscall's flags argument
 * (0). Return 0 or -errno; sched_getattr_raw fills *attr (size is set for the caller). */
int sched_setattr_raw(pid_t tid, const SchedAttr *attr, unsigned flags);
int sched_getattr_raw(pid_t tid, SchedAttr *attr, unsigned flags);

