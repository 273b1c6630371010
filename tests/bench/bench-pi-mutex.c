/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* What a PTHREAD_PRIO_INHERIT mutex costs against a default one (issue 40, libedfd(3)):
 *
 *   bench-pi-mutex [--rounds N]
 *
 * 1. Uncontended: one thread locks and unlocks 10,000,000 times; ns per pair (a user-space
 *    atomic either way).
 * 2. Contended: two threads, pinned to two CPUs, each lock, spin 200 ns, unlock, 200,000 times
 *    between them; ns per pair (the futex system calls: FUTEX_WAIT/WAKE or FUTEX_LOCK_PI/UNLOCK_PI,
 *    and for PI the rt_mutex's bookkeeping and its spin on a running owner).
 * Each figure is the median of --rounds (default 5), the two kinds alternated. SCHED_OTHER
 * throughout: what the mutex costs, not what inheritance buys (tests/bench/lock-inversion). */

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/parse.h"
#include "workload.h"

#define UNCONTENDED 10000000u
#define CONTENDED 200000u
#define ROUNDS_MAX 100u

static pthread_mutex_t lock;

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static void init(int pi) {
        pthread_mutexattr_t a;

        pthread_mutexattr_init(&a);
        if (pi && pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT) != 0) {
                fprintf(stderr, "bench-pi-mutex: PTHREAD_PRIO_INHERIT is not supported\n");
                exit(77);
        }
        pthread_mutex_init(&lock, &a);
        pthread_mutexattr_destroy(&a);
}

static void *hammer(void *arg) {
        int cpu = (int) (intptr_t) arg;
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        (void) pthread_setaffinity_np(pthread_self(), sizeof set, &set);
        for (unsigned i = 0; i < CONTENDED / 2; i++) {
                pthread_mutex_lock(&lock);
                uint64_t until = now_ns() + 200;
                while (now_ns() < until)
                        ;
                pthread_mutex_unlock(&lock);
        }
        return NULL;
}

/* ns per lock/unlock pair: uncontended (contended 0) or two threads on CPUs 0 and 1. */
static double measure(int pi, int contended) {
        uint64_t t0;
        double ns;

        init(pi);
        t0 = now_ns();
        if (!contended) {
                for (unsigned i = 0; i < UNCONTENDED; i++) {
                        pthread_mutex_lock(&lock);
                        pthread_mutex_unlock(&lock);
                }
                ns = (double) (now_ns() - t0) / UNCONTENDED;
        } else {
                pthread_t a, b;
                if (pthread_create(&a, NULL, hammer, (void *) (intptr_t) 0) != 0 ||
                    pthread_create(&b, NULL, hammer, (void *) (intptr_t) 1) != 0) {
                        fprintf(stderr, "bench-pi-mutex: pthread_create failed\n");
                        exit(1);
                }
                pthread_join(a, NULL);
                pthread_join(b, NULL);
                ns = (double) (now_ns() - t0) / CONTENDED;
        }
        pthread_mutex_destroy(&lock);
        return ns;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return (x > y) - (x < y);
}

int main(int argc, char **argv) {
        static const char *const kind[2] = { "default", "PTHREAD_PRIO_INHERIT" };
        uint32_t rounds = 5;
        double v[2][2][ROUNDS_MAX];
        const char *why = NULL;

        if (argc == 3 && strcmp(argv[1], "--rounds") == 0) {
                if (parse_u32(argv[2], &rounds, &why) < 0 || rounds < 1 || rounds > ROUNDS_MAX) {
                        fprintf(stderr, "bench-pi-mutex: --rounds needs a number from 1 to %u, not \"%s\"%s%s\n",
                                ROUNDS_MAX, argv[2], why ? ": " : "", why ? why : "");
                        return 2;
                }
        } else if (argc != 1) {
                fprintf(stderr, "usage: bench-pi-mutex [--rounds N]\n");
                return 2;
        }
        for (unsigned r = 0; r < rounds; r++)
                for (int c = 0; c < 2; c++)
                        for (int k = 0; k < 2; k++) {
                                int pi = (k + (int) r) % 2; /* alternated: no order bias */
                                v[c][pi][r] = measure(pi, c);
                        }
        for (int c = 0; c < 2; c++)
                for (int pi = 0; pi < 2; pi++) {
                        qsort(v[c][pi], rounds, sizeof(double), cmp_double);
                        printf("%s, %s mutex: %.1f ns per lock/unlock pair (median of %u; %.1f-%.1f)\n",
                               c ? "contended by two threads on two CPUs" : "uncontended", kind[pi],
                               v[c][pi][rounds / 2], rounds, v[c][pi][0], v[c][pi][rounds - 1]);
                }
        return 0;
}
