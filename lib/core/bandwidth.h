/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Bandwidth in the kernel's own fixed point.
 *
 * The rule: a bandwidth is runtime/period as an unsigned fixed-point number with 20 fractional
 * bits (BW_UNIT = 1 << 20 is one whole CPU), computed exactly as the kernel's to_ratio() computes
 * it: (runtime << 20) / period, rounded down. Groups and reservations use the same formula.
 *
 * Why: the kernel admits a deadline task by adding this very number to its root domain's total
 * and comparing with its capacity. If edfd rounded differently (up, or in another unit) its books
 * and the kernel would disagree by a unit here and there, and either edfd would promise what the
 * kernel refuses (EBUSY on a request the books say fits) or refuse what the kernel would take.
 * Rounding down also means that children which add up exactly to their parent on paper fit: the
 * sum of rounded-down parts never exceeds the rounded-down whole (10% + 15% + 15% fits 40%).
 *
 * All arithmetic on user-supplied numbers is overflow-checked; nothing here divides where a
 * comparison can be made by cross-multiplication instead. */

#include <stdbool.h>
#include <stdint.h>

#include "core/duration.h"

#define BW_SHIFT 20
#define BW_UNIT (UINT64_C(1) << BW_SHIFT)

/* The kernel's to_ratio(period, runtime). Returns 0 with *ret_bw, -EINVAL for period 0, -ERANGE
 * when runtime << 20 does not fit in 64 bits. */
int bw_of(uint64_t runtime, uint64_t period, uint64_t *ret_bw);

/* The kernel's cap_scale() of its per-CPU limit: ncpus * to_ratio(rt_period, rt_runtime), the
 * deadline capacity of a root domain with ncpus CPUs, before the fair servers. rt_runtime < 0
 * means kernel admission is off (returned as UINT64_MAX). -EINVAL for rt_period 0, -ERANGE. */
int bw_kernel_capacity(unsigned ncpus, int64_t rt_runtime_us, uint64_t rt_period_us, uint64_t *ret_bw);

/* a + b and a - b for bandwidth books: -ERANGE on overflow or underflow, else 0. */
int bw_add(uint64_t a, uint64_t b, uint64_t *ret);
int bw_sub(uint64_t a, uint64_t b, uint64_t *ret);

/* How a bandwidth is rounded to the last decimal shown. */
typedef enum BwRound {
        BW_ROUND_DOWN,    /* what the kernel's arithmetic keeps */
        BW_ROUND_NEAREST, /* for showing what is: 6 ms per 100 ms (62914 units, 5.99995%) is 6% */
        BW_ROUND_UP,      /* for what a request needs: it never shows less than it is */
} BwRound;

/* The one percentage formatter: bw as a percentage of one CPU (BW_UNIT is 100%) with at most
 * `decimals` decimals (0 to 6; more count as 6), rounded as `round` says, trailing zeros after the
 * point dropped with the point itself: BW_UNIT / 8 with 1 -> "12.5%", BW_UNIT with 1 -> "100%",
 * 62914 with 1 and nearest -> "6%", with 3 and down -> "5.999%". UINT64_MAX (no limit) is
 * "unlimited". Returns buf. Used by the daemon's messages, the configuration's check and edfctl. */
char *bw_format_percent(uint64_t bw, unsigned decimals, BwRound round, char buf[static DURATION_MAX]);

/* bw_format_percent() with one decimal rounded to nearest, what edfd and edfctl show everywhere:
 * BW_UNIT -> "100%", BW_UNIT/8 -> "12.5%", 3 * BW_UNIT / 2 -> "150%", 6 ms per 100 ms (62914
 * units, 5.99995%) -> "6%"; UINT64_MAX -> "unlimited". Returns buf. */
char *bw_format(uint64_t bw, char buf[static DURATION_MAX]);
/* The same rounded up: for what a request needs (20 ms per 100 ms is 209715 units, 19.99998%,
 * which rounds down to 19.9% but is asked for as 20%). */
char *bw_format_up(uint64_t bw, char buf[static DURATION_MAX]);

/* The cgroup v2 cpu.max pair for a group of runtime/period. The kernel takes periods of 1 ms to
 * 1 s and quotas of at least 1 ms, so the pair is scaled to keep the ratio: a 10 s period becomes
 * 1 s, a 500 us period 1 ms, and a ratio too small for a 1 ms quota within 1 s gets 1 ms per 1 s
 * (the smallest cap the kernel offers, slightly above the group's share). Returns 0, -EINVAL for
 * a zero runtime or period, -ERANGE when the quota does not fit in 64 bits. */
int bw_cpu_max(uint64_t runtime_ns, uint64_t period_ns, uint64_t *ret_quota_us, uint64_t *ret_period_us);
