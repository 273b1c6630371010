/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* holders: who holds deadline bandwidth that edfd's books do not explain, in words.
 *
 * When the kernel refuses a change with EBUSY although edfd's books have room, the bandwidth is
 * held either by deadline threads edfd does not manage ("strangers", found by a scan of /proc) or,
 * when none is found, most likely still for deadline threads that ended: the kernel gives an ended
 * or demoted task's bandwidth back only at its 0-lag time, within its period (docs/design.md,
 * "What the kernel does"). This module keeps the largest few strangers of a scan and makes the
 * sentences edfd answers with; it is pure (no I/O), so every form is tested without root. */

#include <stddef.h>
#include <stdint.h>

/* How many strangers a scan keeps, and names ("and N more" for the rest). */
#define HOLDERS_MAX 3
#define HOLDER_COMM_MAX 64

typedef struct Holder {
        uint32_t pid, tid;
        uint64_t bw;                       /* bandwidth.h units */
        char comm[HOLDER_COMM_MAX + 1];    /* the thread's comm, NUL-terminated */
} Holder;

/* The largest HOLDERS_MAX strangers of a scan, largest first (ties: the lower tid first), and what
 * all of them hold. */
typedef struct Holders {
        Holder top[HOLDERS_MAX];
        size_t n_top;                      /* entries of top in use */
        size_t n;                          /* strangers met in all */
        uint64_t total_bw;                 /* what they hold in all (saturating) */
} Holders;

/* Count h in *hs, keeping it among the top if it is large enough. */
void holders_add(Holders *hs, const Holder *h);

/* "pid 1234 (chrt) holds 50.0% outside edfd"; several: "pid 1 (a) holds 50.0%, thread 7 of pid 5 (b)
 * holds 20.0% and 2 more hold 6.0% outside edfd" (largest first, HOLDERS_MAX named). "" when hs holds
 * none. Cut to size (NUL-terminated; size > 0). Returns buf. */
char *holders_format(const Holders *hs, char *buf, size_t size);

/* The sentence for bandwidth no stranger holds. back_in_ns: how long until every deadline thread of
 * edfd's that ended is past its 0-lag time (the Capacity object's "recount unsafe until" less now),
 * 0 when edfd knows of none: "it is most likely still held for deadline threads that ended (the
 * kernel gives it back at their 0-lag time): expected back within 850 ms", or "not held by any
 * thread edfd can see; see docs/design.md". Returns buf. */
char *holders_format_ended(uint64_t back_in_ns, char *buf, size_t size);
