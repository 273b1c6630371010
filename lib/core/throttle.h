/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Throttle and lock-wait counts (daemon/throttle.c counts them in the kernel): the rules that need
 * no kernel. A throttle is one time a deadline thread left the CPU with its runtime used up before
 * the end of its period (not by sched_yield()). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where loading the counter failed, for the sentence. */
typedef enum ThrottleStep {
        THROTTLE_STEP_BTF,         /* the kernel's BTF (/sys/kernel/btf/vmlinux) */
        THROTTLE_STEP_OPEN,        /* libbpf reading the object */
        THROTTLE_STEP_LOAD,        /* the kernel verifying the program */
        THROTTLE_STEP_ATTACH,      /* attaching it to sched_switch */
} ThrottleStep;

/* Why counting is off, as the status says it: "the kernel refused the BPF program: Operation not
 * permitted (edfd needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN, and the bpf() system call)". err
 * is a positive errno. Writes at most size bytes (cut, always terminated) and returns buf. */
char *throttle_reason(ThrottleStep step, int err, char *buf, size_t size);

/* A count read now against the one last reported: true when it grew (then *reported becomes now,
 * to be reported). A count below the last one (the thread's entry was made again) is taken as the
 * new base, not reported. */
bool throttle_grew(uint64_t *reported, uint64_t now);

/* A counted thread's figures: its throttles, and its possible lock waits (woken from a futex wait
 * that does not inherit priority by a thread without a deadline: daemon/throttle.bpf.c). */
typedef struct ThrottleCounts {
        uint64_t throttles;
        uint64_t lock_waits;
} ThrottleCounts;

#define THROTTLE_GREW_THROTTLES 1u
#define THROTTLE_GREW_LOCK_WAITS 2u

/* throttle_grew() for each count: the THROTTLE_GREW_* bits of those that grew (0: none); *reported
 * becomes now. */
unsigned throttle_counts_grew(ThrottleCounts *reported, const ThrottleCounts *now);
