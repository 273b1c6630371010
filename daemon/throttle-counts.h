/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The value of the counters' BPF map, one per counted thread: shared by the BPF program
 * (throttle.bpf.c) and its loader (throttle.c). Plain C types of fixed size only. */

/* Lock waits are counted where the program knows how to read a sleeping thread's system call from
 * its saved registers: x86-64 and arm64. */
#if defined(__TARGET_ARCH_x86) || defined(__TARGET_ARCH_arm64) || \
        (!defined(__bpf__) && (defined(__x86_64__) || defined(__aarch64__)))
#define EDFD_LOCK_WAITS 1
#endif

struct edfd_counts {
        unsigned long long throttles;  /* left the CPU throttled (not by sched_yield()) */
        unsigned long long lock_waits; /* woken from a plain futex wait by a thread without a deadline */
};
