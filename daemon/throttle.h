/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Throttles per managed thread, counted in the kernel: a BPF program on the sched_switch tracepoint
 * (throttle.bpf.c) adds one to a thread's entry in a BPF hash map each time the thread leaves the
 * CPU throttled (its runtime used up before its period ended; a sched_yield() is not counted). Only
 * threads edfd put in the map are counted, so the map stays as small as edfd's books. The program
 * is attached once, when edfd starts, and switched by a flag the program reads first: on only while
 * the map has an entry. Counting is
 * best effort: where the program cannot be loaded (a kernel without BTF, no CAP_BPF, edfd built
 * without libbpf) edfd works as before and throttles_state() says why. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Throttles Throttles;

/* Load and attach the counter. disabled: the reason to not even try (NULL: try). Returns 0 with
 * *ret, on or off (throttles_on()); -ENOMEM only. */
int throttles_new(Throttles **ret, const char *disabled);
/* Detach and free; NULL-safe; returns NULL. */
Throttles *throttles_free(Throttles *t);
bool throttles_on(const Throttles *t);
/* "on", or why not ("the kernel refused the BPF program: ..."). */
const char *throttles_state(const Throttles *t);

/* Count thread tid from 0 (again, if it was counted). 0, -EOPNOTSUPP when counting is off,
 * -ENOSPC when the map is full, or another negative errno. */
int throttles_track(Throttles *t, uint32_t tid);
/* Stop counting tid and forget its entry; nothing when it was not counted. */
void throttles_untrack(Throttles *t, uint32_t tid);
/* The throttles of tid since throttles_track(): 0 with *ret, -EOPNOTSUPP when counting is off,
 * -ENOENT when tid is not counted. One bpf() system call. */
int throttles_read(const Throttles *t, uint32_t tid, uint64_t *ret);
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

/* Call grew(tid, total) for each counted thread whose count grew since the last poll: one bpf()
 * system call per counted thread. Returns how many grew. */
typedef void (*ThrottlesGrew)(void *userdata, uint32_t tid, uint64_t total);
size_t throttles_poll(Throttles *t, ThrottlesGrew grew, void *userdata);
