/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* CPU sets in the kernel's list format ("0-2,5", as in cpuset.cpus and /sys/devices/system/cpu/online):
 * a fixed-size bit mask, a strict parser and a formatter. Pure: no I/O.
 *
 * The parser follows basic/parse.h for every number (no sign, blank or leading zero) and refuses a
 * reversed range ("3-1"), an empty element ("1,,2"), and a CPU at or above CPU_MASK_MAX. The kernel
 * itself accepts a trailing newline, and so does the parser (files end in one); the empty list is
 * valid (an empty cpuset.cpus reads as "\n"). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CPU_MASK_MAX 1024
#define CPU_MASK_WORDS (CPU_MASK_MAX / 64)
/* The longest formatted list: every other CPU, "0,2,4,...", fits in this. */
#define CPU_LIST_MAX (CPU_MASK_MAX * 5)

typedef struct CpuMask {
        uint64_t w[CPU_MASK_WORDS];
} CpuMask;

/* Parse len bytes at s into *ret. Returns 0, or -EINVAL (-ERANGE for a CPU number too large) with
 * *ret_reason (may be NULL) set to a static phrase that completes "\"%s\" ...": "is not a CPU list
 * (write it as 1 or 2-3,5)", "has a reversed range", "names a CPU above 1023". *ret is written
 * only on success. */
int cpu_mask_parse(const char *s, size_t len, CpuMask *ret, const char **ret_reason);

/* Write m in list form (the shortest: ranges for runs of 2 or more) to buf, NUL-terminated, at most
 * size bytes; "" for an empty mask. Returns buf, or NULL when it does not fit. */
char *cpu_mask_format(const CpuMask *m, char *buf, size_t size);

static inline bool cpu_mask_test(const CpuMask *m, unsigned cpu) {
        return cpu < CPU_MASK_MAX && (m->w[cpu / 64] >> (cpu % 64)) & 1;
}
static inline void cpu_mask_set(CpuMask *m, unsigned cpu) {
        if (cpu < CPU_MASK_MAX)
                m->w[cpu / 64] |= UINT64_C(1) << (cpu % 64);
}

/* The number of CPUs in m. */
unsigned cpu_mask_count(const CpuMask *m);
/* Whether m is empty. */
bool cpu_mask_empty(const CpuMask *m);
/* Whether a and b have a CPU in common; the first one in *ret_cpu (may be NULL) when they do. */
bool cpu_mask_overlap(const CpuMask *a, const CpuMask *b, unsigned *ret_cpu);
/* Whether every CPU of a is in b; the first one that is not in *ret_cpu (may be NULL) otherwise. */
bool cpu_mask_subset(const CpuMask *a, const CpuMask *b, unsigned *ret_cpu);
/* a |= b, a &= ~b. */
void cpu_mask_or(CpuMask *a, const CpuMask *b);
void cpu_mask_andnot(CpuMask *a, const CpuMask *b);
/* The lowest CPU of m, or -1 when m is empty. */
int cpu_mask_first(const CpuMask *m);
