/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Partitioned placement: which CPU of a partition takes a reservation, decided by the exact test of
 * core/edf.h on each CPU; and the C = D split for a reservation that fits no single CPU.
 *
 * Fits, all deterministic:
 *   best   the CPU with the least bandwidth left after placing, among those where the test passes
 *          (ties: the lowest CPU number): it packs, and keeps whole CPUs free for large requests;
 *   first  the lowest CPU number where the test passes;
 *   worst  the CPU with the most left after placing (ties: lowest): it spreads.
 * "Left" is the CPU's cap (EdfSupply.cap_bw; BW_UNIT less the server's share when the kernel has
 * no cap) less the bandwidths placed there, request included.
 *
 * The split (semi-partitioned EDF with C = D splitting, Burns, Davis, Wang and Zhang, Real-Time
 * Systems 48(1), 2012): a request (C, D, T) that no CPU takes whole becomes stage 1 (C1, C1, T) on
 * CPU a, with C1 the largest runtime (rounded down to a microsecond) that CPU a still passes with,
 * and stage 2 (C - C1, D - C1, T) on another CPU b, released C1 after each release of stage 1. Both
 * tests are monotone in C1 (a larger stage 1 never passes where a smaller one fails, and a larger
 * stage 2, from a smaller C1, never passes where a smaller one fails), so the largest C1 is the
 * best for every b; CPU a is tried in the order of the largest C1 (ties: lowest number) and CPU b
 * chosen by the fit among the others. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/edf.h"
#include "core/params.h"

typedef enum PlaceFit {
        PLACE_FIT_BEST,
        PLACE_FIT_FIRST,
        PLACE_FIT_WORST,
        _PLACE_FIT_MAX,
} PlaceFit;

/* "best", "first", "worst"; and back (-EINVAL for anything else). */
const char *place_fit_to_string(PlaceFit f);
int place_fit_from_string(const char *s, PlaceFit *ret);

/* One CPU of a partition and what is placed there. */
typedef struct PlaceCpu {
        unsigned id;           /* the CPU's number: for messages and ties */
        EdfSupply supply;
        const DlParams *tasks; /* the reservations on it (stages included) */
        size_t n_tasks;
        EdfMeter *meter;       /* the tests on it are charged here (edf_check_metered()); NULL: not
                                * counted. The CPUs of one call usually share one. */
        const bool *pinned;    /* n_tasks flags for place_make_room(): true, that task may not move;
                                * NULL: every task may */
} PlaceCpu;

/* The bandwidth the CPU has left with `bw_total` placed on it (0 when over). */
uint64_t place_left(const PlaceCpu *cpu, uint64_t bw_total);

/* Choose the CPU for req. Returns 0 with *ret_index (into cpus); -ENOSPC when no CPU passes;
 * -EINVAL for a request breaking C <= D <= T, no CPUs or a bad fit; -E2BIG, -ERANGE as
 * edf_check(); -EDQUOT when a CPU's meter ran out (the answer is not known). verdicts, when not
 * NULL, has n_cpus entries and receives each CPU's verdict with the request added (on success and
 * on -ENOSPC), for the reasons. */
int place_choose(const PlaceCpu *cpus, size_t n_cpus, const DlParams *req, PlaceFit fit, size_t *ret_index,
                 EdfVerdict *verdicts);

typedef struct PlaceSplit {
        size_t index_a, index_b; /* into cpus */
        DlParams stage1;         /* (C1, C1, T) on a */
        DlParams stage2;         /* (C - C1, D - C1, T) on b, released C1 after stage 1 */
        EdfVerdict verdict_a, verdict_b;
} PlaceSplit;

/* The least runtime a split leaves either stage unless told otherwise: min-split-runtime's default
 * (a stage of a few microseconds would be all overhead: the switch alone costs tens). */
#define PLACE_SPLIT_MIN_STAGE_DEFAULT (500 * NSEC_PER_USEC)

/* Split req over two CPUs, each stage at least min_stage of runtime (DL_RUNTIME_MIN at least).
 * Returns 0 with *ret; -ENOSPC when no pair of CPUs takes it (fewer than two CPUs, a runtime
 * below 2 x min_stage, or no CPU can take a stage 1 of min_stage with a stage 2 of at least
 * min_stage left for another); -EINVAL, -E2BIG, -ERANGE, -EDQUOT as above. */
int place_split(const PlaceCpu *cpus, size_t n_cpus, const DlParams *req, PlaceFit fit, uint64_t min_stage,
                PlaceSplit *ret);

/* Room by one move: where no CPU takes req whole, one reservation already placed may move to make
 * room. Task t of CPU x moves to CPU y where the exact test passes with it, and req then passes on x
 * without t: both CPUs pass after the move (and passed before), so no deadline of theirs is put at
 * risk by the books; the caller moves t while it sleeps (the kernel's wake-up rule then makes it a
 * sporadic task on y, which is what y's test assumed). Candidates (x, t) are tried in the order of
 * t's bandwidth, smallest first (the least work moved), ties by CPU number and t's place in x's
 * set; y is chosen by the fit among the other CPUs. Pinned tasks are not candidates. At most
 * max_tries candidates are tried (0: PLACE_ROOM_TRIES_DEFAULT), so one refusal costs at most
 * max_tries x n_cpus exact tests. Returns 0 with *ret; -ENOSPC when no single move makes room (or
 * the tries ran out: *ret_tries says how many were tried); -EINVAL, -E2BIG, -ERANGE, -EDQUOT, -ENOMEM
 * as place_choose(). */
#define PLACE_ROOM_TRIES_DEFAULT 256u

typedef struct PlaceMove {
        size_t from, task, to;    /* cpus[from].tasks[task] moves to cpus[to]; req goes to cpus[from] */
        EdfVerdict verdict_from;  /* cpus[from] with the task gone and req added */
        EdfVerdict verdict_to;    /* cpus[to] with the task added */
} PlaceMove;

int place_make_room(const PlaceCpu *cpus, size_t n_cpus, const DlParams *req, PlaceFit fit, size_t max_tries,
                    PlaceMove *ret, size_t *ret_tries);

/* The refusal, for a request no CPU takes, from place_choose()'s verdicts:
 * "no CPU can take 58%: cpu0 32% left, cpu1 32% left", and for a CPU whose cap holds but whose
 * deadlines do not: "cpu2 40% left but a deadline fails at 12ms (demand 13.2ms)". Truncated to
 * size; returns buf. */
char *place_format_refusal(const PlaceCpu *cpus, size_t n_cpus, const DlParams *req, const EdfVerdict *verdicts,
                           char *buf, size_t size);
