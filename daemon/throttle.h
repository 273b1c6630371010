/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Throttles and possible lock waits per managed thread, counted in the kernel (throttle.bpf.c): a
 * BPF program on the sched_switch tracepoint adds one to a thread's throttles in a BPF hash map
 * each time the thread leaves the CPU throttled (its runtime used up before its period ended; a
 * sched_yield() is not counted), and one on sched_waking adds one to its lock waits each time it is
 * woken from a futex wait that does not inherit priority by a thread without a deadline (a
 * possible priority inversion). Only threads edfd put in the map are counted, so the map stays as
 * small as edfd's books. The programs are attached once, when edfd starts, and switched by a flag
 * they read first: on only while the map has an entry. Counting is best effort: where the programs
 * cannot be loaded (a kernel without BTF, no CAP_BPF, edfd built without libbpf) edfd works as
 * before and throttles_state() says why; where only the wakeup program is refused, throttles are
 * counted and throttles_lock_state() says why lock waits are not. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/throttle.h"

typedef struct Throttles Throttles;

/* Load and attach the counter. disabled: the reason to not even try (NULL: try); lock_waits false:
 * the switch program alone (throttles only; for the benchmark of what the wakeup program costs).
 * Returns 0 with *ret, on or off (throttles_on()); -ENOMEM only. */
int throttles_new(Throttles **ret, const char *disabled, bool lock_waits);
/* Detach and free; NULL-safe; returns NULL. */
Throttles *throttles_free(Throttles *t);
bool throttles_on(const Throttles *t);
/* "on", or why not ("the kernel refused the BPF program: ..."). */
const char *throttles_state(const Throttles *t);
/* Whether lock waits are counted: "on", or why not (throttles off, or the wakeup program refused). */
const char *throttles_lock_state(const Throttles *t);

/* Count thread tid from 0 (again, if it was counted). 0, -EOPNOTSUPP when counting is off,
 * -ENOSPC when the map is full, or another negative errno. */
int throttles_track(Throttles *t, uint32_t tid);
/* Stop counting tid and forget its entry; nothing when it was not counted. */
void throttles_untrack(Throttles *t, uint32_t tid);
/* The counts of tid since throttles_track() (lock_waits stays 0 where they are not counted): 0 with
 * *ret, -EOPNOTSUPP when counting is off, -ENOENT when tid is not counted. One bpf() system call. */
int throttles_read(const Throttles *t, uint32_t tid, ThrottleCounts *ret);
/* How many threads are counted (the map's entries edfd made). */
size_t throttles_tracked(const Throttles *t);
/* Whether the program counts now (its flag is on): only while a thread is counted, so that an edfd
 * without reservations costs a context switch one load and compare of the flag. */
bool throttles_counting(const Throttles *t);

/* After the load: give up CAP_BPF and CAP_PERFMON (effective, permitted, inheritable; the bounding
 * set too where CAP_SETPCAP allows, and no_new_privs so that no exec gets them back), which only
 * the load and the attach needed. Where this kernel checks CAP_BPF at every bpf() call on the map
 * (seen by one lookup once they are out of the effective set), they are kept, and counting with
 * them. Returns 0 (dropped; *note says what stays, "" when nothing) or negative errno (kept;
 * *note says why). */
int throttles_seal(Throttles *t, char *note, size_t size);

/* Call grew(tid, totals, what) for each counted thread whose counts grew since the last poll (what:
 * the THROTTLE_GREW_* bits of those that grew): one bpf() system call per counted thread. Returns
 * how many grew. */
typedef void (*ThrottlesGrew)(void *userdata, uint32_t tid, const ThrottleCounts *total, unsigned what);
size_t throttles_poll(Throttles *t, ThrottlesGrew grew, void *userdata);
