/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Benchmark of the pure core: the cost of an admission decision and the memory of the books.
 *
 * Builds a tree of 10,000 groups up to 8 deep holding 100,000 reservations, then times
 * admit+release pairs into random groups (the group already found, as the daemon has it after
 * the first lookup), the same with the lookup by path, and split+release pairs (a fork and its
 * exit, with the runtime going back to the donor). Each figure is the median over several runs.
 * Prints figures; asserts nothing. Targets: < 1 us per pair, < 256 bytes per reservation. */

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/bandwidth.h"
#include "basic/macro.h"
#include "core/tree.h"

#define N_GROUPS 10000
#define MAX_DEPTH 8
#define N_RESERVATIONS 100000
#define RUNS 7
#define PAIRS 200000

static uint64_t rng = UINT64_C(0x243f6a8885a308d3);

static uint64_t rnd(void) {
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        return rng * UINT64_C(2685821657736338717);
}

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return x < y ? -1 : x > y;
}

static double median(double *v, size_t n) {
        qsort(v, n, sizeof *v, cmp_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what, int r) {
        fprintf(stderr, "bench-core: %s: %d (%s)\n", what, r, r > 0 ? admit_outcome_to_string(r) : strerror(-r));
        exit(EXIT_FAILURE);
}

static Group *groups[N_GROUPS];
static size_t n_groups;

/* Breadth first: the root gets 4 children, every other group 3, until N_GROUPS or MAX_DEPTH.
 * A group at depth d has runtime 2^(40-2d) ns every 1 ns, i.e. bandwidth 2^(60-2d): three children
 * take three quarters of their parent, the last quarter is room for reservations. */
static void build_groups(Tree *t) {
        size_t head = 0;
        char path[GROUP_PATH_MAX + 1];

        for (;;) {
                Group *parent = head == 0 ? t->root : groups[head - 1];
                unsigned fanout = head == 0 ? 4 : 3;

                if (parent->depth + 1 > MAX_DEPTH)
                        return;
                for (unsigned i = 0; i < fanout && n_groups < N_GROUPS; i++) {
                        GroupSpec spec = {
                                .runtime = UINT64_C(1) << (40 - 2 * (parent->depth + 1)),
                                .period = 1,
                                .fork = _FORK_POLICY_UNSET,
                                .threads = _FORK_POLICY_UNSET,
                        };
                        Refusal ref;
                        int r;

                        if (parent == t->root)
                                snprintf(path, sizeof path, "g%u", i);
                        else
                                snprintf(path, sizeof path, "%s/g%u", parent->path, i);
                        r = group_create(t, path, &spec, &groups[n_groups], &ref);
                        if (r != 0)
                                die("group_create", r);
                        n_groups++;
                }
                if (n_groups >= N_GROUPS)
                        return;
                head++;
        }
}

static ReservationSpec spec_for(uint32_t i) {
        return (ReservationSpec) {
                .pid = 1 + i / 8,
                .tid = 1 + i,
                .uid = 1000 + i % 50,
                .identity = i,
                .params = { 10 * NSEC_PER_MSEC, 0, 100 * NSEC_PER_MSEC },
        };
}

int main(void) {
        DlLimits limits = DL_LIMITS_DEFAULT;
        struct mallinfo2 mi0, mi1;
        size_t mem0, mem1;
        double pair[RUNS], lookup[RUNS], split[RUNS];
        Group **pick;
        Tree *t = NULL;
        unsigned max_depth = 0;
        int r;

        r = tree_new(&t, UINT64_C(1) << 62, &limits, FORK_SPLIT, FORK_SPLIT, 1024);
        if (r < 0)
                die("tree_new", r);
        build_groups(t);
        for (size_t i = 0; i < n_groups; i++)
                max_depth = groups[i]->depth > max_depth ? groups[i]->depth : max_depth;

        /* the books of 100,000 reservations */
        malloc_trim(0);
        mi0 = mallinfo2();
        mem0 = tree_memory(t);
        for (uint32_t i = 0; i < N_RESERVATIONS; i++) {
                ReservationSpec spec = spec_for(i);
                Refusal ref;

                r = reservation_admit(t, groups[rnd() % n_groups], &spec, NULL, &ref);
                if (r != 0)
                        die("reservation_admit", r);
        }
        mem1 = tree_memory(t);
        mi1 = mallinfo2();

        /* the groups to admit into, drawn in advance so that drawing is not timed */
        pick = malloc(sizeof(Group *) * PAIRS);
        if (!pick)
                die("malloc", -ENOMEM);
        for (size_t i = 0; i < PAIRS; i++)
                pick[i] = groups[rnd() % n_groups];

        for (int run = 0; run < RUNS; run++) {
                uint64_t t0, t1;

                /* admit + release, group in hand */
                t0 = now_ns();
                for (uint32_t i = 0; i < PAIRS; i++) {
                        ReservationSpec spec = spec_for(N_RESERVATIONS + i);
                        Reservation *res;
                        ReleaseEffect eff;
                        Refusal ref;

                        r = reservation_admit(t, pick[i], &spec, &res, &ref);
                        if (r != 0)
                                die("reservation_admit", r);
                        reservation_release(t, res, &eff);
                }
                t1 = now_ns();
                pair[run] = (double) (t1 - t0) / PAIRS;

                /* the same with the lookup by path */
                t0 = now_ns();
                for (uint32_t i = 0; i < PAIRS; i++) {
                        ReservationSpec spec = spec_for(N_RESERVATIONS + i);
                        Reservation *res;
                        ReleaseEffect eff;
                        Refusal ref;
                        Group *g = tree_find_group(t, pick[i]->path);

                        r = reservation_admit(t, g, &spec, &res, &ref);
                        if (r != 0)
                                die("reservation_admit", r);
                        reservation_release(t, res, &eff);
                }
                t1 = now_ns();
                lookup[run] = (double) (t1 - t0) / PAIRS;

                /* a fork and its exit: split off a random reservation, release the child */
                t0 = now_ns();
                for (uint32_t i = 0; i < PAIRS; i++) {
                        Reservation *donor = tree_find_thread(t, 1 + (uint32_t) (rnd() % N_RESERVATIONS)), *child;
                        ReleaseEffect eff;
                        DlParams old;
                        Refusal ref;

                        r = reservation_split(t, donor, false, 900000000, 900000000, i, &child, &old, &ref);
                        if (r != 0)
                                die("reservation_split", r);
                        reservation_release(t, child, &eff);
                        if (eff.donor != donor)
                                die("the donor did not get its runtime back", -EUCLEAN);
                }
                t1 = now_ns();
                split[run] = (double) (t1 - t0) / PAIRS;
        }

        {
                char buf[256];

                r = tree_check(t, buf, sizeof buf);
                if (r < 0) {
                        fprintf(stderr, "bench-core: tree_check: %s\n", buf);
                        return EXIT_FAILURE;
                }
        }

        printf("groups                           %zu (deepest %u)\n", n_groups + 1, max_depth);
        printf("reservations                     %zu\n", t->n_reservations);
        /* median() sorts: the spread of the runs is then the first and the last. */
        double m_pair = median(pair, RUNS), m_lookup = median(lookup, RUNS), m_split = median(split, RUNS);
        printf("admit+release, group in hand     %.0f ns per pair (%.0f-%.0f) (median of %d x %d; target < 1000)\n",
               m_pair, pair[0], pair[RUNS - 1], RUNS, PAIRS);
        printf("admit+release with path lookup   %.0f ns per pair (%.0f-%.0f)\n", m_lookup, lookup[0], lookup[RUNS - 1]);
        printf("split+release (fork and exit)    %.0f ns per pair (%.0f-%.0f)\n", m_split, split[0], split[RUNS - 1]);
        printf("tree_memory() per reservation    %.1f bytes (target < 256)\n",
               (double) (mem1 - mem0) / N_RESERVATIONS);
        /* uordblks: in use in the heap; hblkhd: in mmap()ed blocks (the large hash tables) */
        {
                double delta = (double) (mi1.uordblks + mi1.hblkhd) - (double) (mi0.uordblks + mi0.hblkhd);

                if (delta > 0)
                        printf("malloc per reservation           %.1f bytes (mallinfo2 uordblks + hblkhd delta)\n",
                               delta / N_RESERVATIONS);
                else
                        printf("malloc per reservation           n/a (mallinfo2 reports nothing, e.g. under a sanitizer)\n");
        }
        printf("tree_memory() in all             %zu bytes (%zu for the groups alone)\n", mem1, mem0);
        printf("sizeof(Reservation) %zu, sizeof(Group) %zu\n", sizeof(Reservation), sizeof(Group));

        free(pick);
        tree_free(t);
        return EXIT_SUCCESS;
}
