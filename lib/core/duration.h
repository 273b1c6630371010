/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Durations and percentages as people write them, and back.
 *
 * A duration always carries a unit: "100ns", "250us", "1.5ms", "10ms", "2s". A decimal fraction is
 * allowed as long as the result is a whole number of nanoseconds ("1.5ns" is refused). A bare
 * number, a sign, white space inside, an unknown unit, an empty string and anything that does not
 * fit in 64 bits are refused, each with its own reason.
 *
 * A percentage ("20%", "12.5%") is a share of one CPU; edfd turns it into a runtime over a period
 * of 100 ms (PERCENT_PERIOD_NS), so "20%" is 20 ms every 100 ms. Percentages above 100% are
 * parsed; whether they make sense (a group may span several CPUs, a thread never) is the caller's
 * rule. */

#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"

#define PERCENT_PERIOD_NS (100 * NSEC_PER_MSEC)

/* Large enough for any duration_format() or bw_format() result. */
#define DURATION_MAX 32

/* Parse a duration. Returns 0 and the value in *ret_ns, or -EINVAL / -ERANGE with a static,
 * human-readable reason in *ret_reason (e.g. "has no unit (write it as 10ms, 250us, 1.5s)"). */
int duration_parse(const char *s, uint64_t *ret_ns, const char **ret_reason);

/* Parse "20%" into the runtime it means over PERCENT_PERIOD_NS (20% -> 20 ms). Returns 0 or
 * -EINVAL / -ERANGE with a static reason, like duration_parse(). "0%" parses as 0. */
int percent_parse(const char *s, uint64_t *ret_runtime_ns, const char **ret_reason);

/* Format ns for humans with the largest unit that keeps it exact within 3 decimals:
 * 10000000 -> "10ms", 1500000 -> "1.5ms", 1024 -> "1.024us", 7 -> "7ns". Returns buf. */
char *duration_format(uint64_t ns, char buf[static DURATION_MAX]);
