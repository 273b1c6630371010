/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The process's capability sets (capget(2), capset(2), prctl(2)'s PR_CAPBSET_DROP), for giving up
 * what only edfd's start needed. Masks are of capability numbers: CAPS_BIT(CAP_BPF). */

#include <stdbool.h>
#include <stdint.h>

#define CAPS_PERFMON 38
#define CAPS_BPF 39
#define CAPS_BIT(cap) (UINT64_C(1) << (cap))

/* Take mask out of the effective set (only_effective: and keep it permitted, so that
 * caps_raise() can give it back), else out of the effective, permitted and inheritable sets for
 * good (the ambient set follows). 0 or negative errno (nothing changed). */
int caps_drop(uint64_t mask, bool only_effective);
/* Put mask back into the effective set, from the permitted one. 0 or negative errno. */
int caps_raise(uint64_t mask);
/* Take mask out of the bounding set (what an exec could give back). Needs CAP_SETPCAP: -EPERM
 * without it, after dropping what it could. */
int caps_drop_bounding(uint64_t mask);
