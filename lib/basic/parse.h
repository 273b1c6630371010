/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The integer parsers, one set of rules for the whole project (configuration, journal, command
 * line, /proc): decimal digits only; no sign, blank, prefix or suffix; no leading zero except in
 * "0" itself; a value above the type's largest is refused, never wrapped or clamped.
 *
 * On error the functions return -EINVAL (not a number by these rules) or -ERANGE (too large), and
 * set *ret_reason (when ret_reason is not NULL) to a static phrase that completes a sentence about
 * the text: "\"%s\" is empty", "... is negative", "... is not a whole number" (a decimal fraction
 * such as 1.5), "... is not a decimal number" (anything else with a character that is not a digit),
 * "... has a leading zero (write it without, as in 10)", "... is too large (the largest is N)".
 * *ret is written only on success. */

#include <stddef.h>
#include <stdint.h>

/* A NUL-terminated string (NULL is "empty"). */
int parse_u64(const char *s, uint64_t *ret, const char **ret_reason);
int parse_u32(const char *s, uint32_t *ret, const char **ret_reason);

/* The len bytes at s (need not be NUL-terminated; a NUL among them is not a digit). */
int parse_u64_slice(const char *s, size_t len, uint64_t *ret, const char **ret_reason);
int parse_u32_slice(const char *s, size_t len, uint32_t *ret, const char **ret_reason);
