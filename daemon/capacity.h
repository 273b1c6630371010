/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* capacity: what the kernel can give deadline tasks, read from the kernel itself.
 *
 * The kernel admits per root domain: sum(runtime/period) <= CPUs x rt_runtime/rt_period, in the
 * fixed point of bandwidth.h. Kernels since 6.12 also reserve a fair server per CPU (50 ms per
 * 1 s by default, changeable in debugfs) out of the same pool. Its per-CPU files in debugfs
 * (fair_server/cpuN/runtime, period) are read where they can be (root is refused them on some
 * machines: then the default), and /sys/kernel/debug/sched/debug shows the root domain's
 * dl_bw->total_bw: the fair servers plus every deadline thread. capacity_read() takes the reserve
 * from the servers' settings (from the kernel version where debugfs is not mounted); the Capacity
 * object below replaces it by a measurement (total_bw less the deadline threads found in /proc, see
 * capacity_refresh()) where that is larger, never where the kernel counts less than the servers take.
 * Deadline threads edfd did not admit hold bandwidth too: they are found by scanning /proc and
 * counted as "unmanaged". */

#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "core/holders.h"
#include "core/params.h"
#include "core/tree.h"

typedef struct KernelCapacity {
        unsigned ncpus;           /* online CPUs */
        int64_t rt_runtime_us;    /* -1: kernel admission off */
        uint64_t rt_period_us;
        uint64_t raw;             /* ncpus x rt_runtime/rt_period (UINT64_MAX when admission is off) */
        uint64_t fair_server;     /* the fair servers' total reserve */
        bool fair_server_measured; /* fair_server measured in debugfs (the kernel counts at least the
                                    * servers' settings), not taken from their settings */
        uint64_t fair_server_uncounted; /* how much less than the servers' settings the kernel counts
                                         * (measured; 0 when it counts them all or is not measured) */
        uint64_t usable;          /* raw - fair_server: what deadline tasks may hold in all */
        bool admission_off;
        DlLimits limits;          /* sched_deadline_period_{min,max}_us */
} KernelCapacity;

/* Read the kernel's capacity and limits. Returns 0, or negative errno when /proc/sys cannot be read.
 *
 * Reading sched_rt_runtime_us or sched_rt_period_us is not free of effects: on 6.18 each read (not
 * only a write) rebuilds the scheduling domains, and with them the kernel's count of deadline
 * bandwidth, from the deadline tasks alive. That recount takes back what the kernel kept for
 * processes made SCHED_DEADLINE after they had ended, but it also forgets a task that has ended
 * and holds its bandwidth until its 0-lag time, whose share is then subtracted once more: the
 * count ends lower than what exists, below zero after a storm (measured; see design.md, "What the
 * kernel does"). capacity_read_reusing() takes those two values from prev instead. */
int capacity_read(KernelCapacity *ret);
int capacity_read_reusing(const KernelCapacity *prev, KernelCapacity *ret);

/* Sum what SCHED_DEADLINE threads hold that the tree does not know (a thread is known when the tree
 * has a reservation for its tid with the same identity). Returns 0 with those threads in *ret (what
 * they hold, how many, the largest with pid, tid and comm), and in *ret_all_bw (may be NULL) what
 * all deadline threads hold, or negative errno. It walks every thread in /proc: one sched_getattr
 * per thread, the stat file of deadline threads only (7 ms for 400 threads here, see docs/design.md,
 * "What the kernel does"). */
int capacity_scan_unmanaged(const Tree *t, Holders *ret, uint64_t *ret_all_bw);

/* Parse the text of /sys/kernel/debug/sched/debug (buf, len; need not be NUL-terminated): the
 * dl_bw->total_bw that every CPU shows for its root domain. Returns 0 and the value when every CPU
 * shows the same one (one root domain); -EDOM when they differ (several root domains: the reserve
 * cannot be told apart), -ENODATA when there is none, -EBADMSG for a value that is not a number,
 * -ERANGE for a value below zero: the kernel's count has wrapped (it subtracted more than it
 * added, see design.md "What the kernel does") and it refuses every deadline admission until a
 * CPU hotplug or cpuset change recounts. */
int capacity_parse_total_bw(const char *buf, size_t len, uint64_t *ret);

/* The same for dl_bw->bw: what the kernel lets deadline tasks hold per CPU (to_ratio of
 * sched_rt_period_us and sched_rt_runtime_us), -1 while its admission is off. Read without side
 * effects, unlike the sysctls themselves (see capacity_read()). */
int capacity_parse_dl_bw(const char *buf, size_t len, int64_t *ret);
int capacity_read_dl_bw(int64_t *ret);

/* Read dl_bw->total_bw from /sys/kernel/debug/sched/debug. Returns 0 and the value, or negative
 * errno (-ENOENT without debugfs, and the errors of capacity_parse_total_bw()). */
int capacity_read_total_bw(uint64_t *ret);

/* The Capacity object: what the manager knows of the kernel's capacity, and when it may ask again.
 *
 * It owns the last reading (KernelCapacity), the unmanaged deadline threads of the last scan, the
 * last three measurements of the fair servers' reserve, and the "recount unsafe until" time: reading
 * the sysctls has the kernel recount (see capacity_read()), which miscounts while an ended deadline
 * task of edfd's waits for its 0-lag time, so they are read again only once none can be waiting
 * (CLOCK_MONOTONIC ns), or at least every 300 s regardless; meanwhile their last values are reused.
 * Its sd-event timer reads them once it is safe. It logs at debug level only: what is worth telling
 * the operator comes back in a CapacityReport, and the manager says it. */
typedef struct Capacity Capacity;

/* Called when the recount timer's read found the sysctls changed: the caller refreshes. */
typedef void (*CapacityChanged)(Capacity *c, void *userdata);

/* Read the kernel's capacity now (the sysctls: the kernel recounts). 0 with *ret (the caller owns
 * it, capacity_free()), or negative errno when /proc/sys cannot be read. */
int capacity_new(Capacity **ret);
/* Free c and its timer. NULL-safe; returns NULL. */
Capacity *capacity_free(Capacity *c);
/* From now on arm the recount timer on e (none before); changed(c, userdata) is called from it when
 * the sysctls changed. e stays the caller's. */
void capacity_attach_event(Capacity *c, sd_event *e, CapacityChanged changed, void *userdata);

/* The last reading, valid until the next capacity_update() or capacity_refresh(). */
const KernelCapacity *capacity_kernel(const Capacity *c);
/* What the deadline threads edfd does not manage held at the last scan, and how many they were. */
uint64_t capacity_unmanaged(const Capacity *c);
unsigned capacity_unmanaged_threads(const Capacity *c);
/* Those threads themselves (the largest few named), valid until the next capacity_refresh(). */
const Holders *capacity_unmanaged_holders(const Capacity *c);
/* When the last scan for them ran (CLOCK_MONOTONIC ns; 0: none yet). */
uint64_t capacity_scanned_ns(const Capacity *c);
/* How long until every deadline thread of edfd's that ended (capacity_recount_unsafe_for()) is past
 * its 0-lag time, and the kernel has given their bandwidth back: ns from now, 0 when none can be
 * waiting. */
uint64_t capacity_ended_back_in(const Capacity *c);
/* Whether debugfs showed the kernel's deadline count below zero at the last refresh. */
bool capacity_count_negative(const Capacity *c);

/* The root's bandwidth: what the kernel admits or, unless cap_auto, the configuration's cap on
 * what edfd hands out, counted on top of the unmanaged threads (never above what the kernel
 * admits). */
uint64_t capacity_root(const Capacity *c, bool cap_auto, uint64_t cap);

/* A deadline thread of edfd's ended (or may have, unseen), with this period: the kernel may hold its
 * bandwidth until its 0-lag time, and a recount before then would count too little. */
void capacity_recount_unsafe_for(Capacity *c, uint64_t period_ns);

/* Read the capacity again, with the fair servers' measured reserve in place of the implied one:
 * the sysctls now if reread (asked for: a reload), else only when a recount is safe (their last
 * values otherwise, and the timer reads them later). 0, or negative errno (the reading stays). */
int capacity_update(Capacity *c, bool reread);

/* What a refresh found that the operator should hear of. */
typedef struct CapacityReport {
        bool count_negative_changed;  /* see capacity_count_negative() */
        bool unmanaged_changed;       /* the number of unmanaged threads changed */
        bool fair_first;              /* the first measurement of the fair servers: */
        uint64_t fair_measured, fair_set; /* what the kernel counts, what the servers are set to take */
        bool fair_uncounted_changed;  /* the kernel began (or ceased) counting less than the servers take */
        bool admission_off_began, admission_off_ended;
} CapacityReport;

/* Measure again: the kernel's count in debugfs, the unmanaged threads of t (capacity_scan_unmanaged()),
 * one measurement of the fair servers' reserve, then capacity_update(c, false). Fills *ret. */
void capacity_refresh(Capacity *c, const Tree *t, CapacityReport *ret);
