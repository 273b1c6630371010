/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What edfd's scan for deadline threads it does not manage costs (capacity_scan_unmanaged(): the
 * periodic look, and the rescan after an EBUSY that the books do not explain), with N more sleeping
 * processes of T threads each on the machine: bench-scan [N [T [ROUNDS]]]. Prints the threads in
 * /proc, the median and the worst scan. Run as root (sched_getattr of every thread). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capacity.h"
#include "core/bandwidth.h"

static uint64_t mono_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static void *sleeper(void *arg) {
        (void) arg;
        for (;;)
                pause();
        return NULL;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
        unsigned n = argc > 1 ? (unsigned) atoi(argv[1]) : 300, threads = argc > 2 ? (unsigned) atoi(argv[2]) : 1;
        unsigned rounds = argc > 3 ? (unsigned) atoi(argv[3]) : 50;
        DlLimits limits = DL_LIMITS_DEFAULT;
        pid_t *kids = calloc(n ? n : 1, sizeof *kids);
        uint64_t *t = calloc(rounds ? rounds : 1, sizeof *t), all;
        Holders hs;
        Tree *tree;

        if (!kids || !t || rounds == 0 || threads == 0 || tree_new(&tree, BW_UNIT, &limits, FORK_NONE,
                                                                   FORK_NONE, 0) < 0)
                return 1;
        for (unsigned i = 0; i < n; i++) {
                kids[i] = fork();
                if (kids[i] == 0) {
                        pthread_t th;
                        prctl(PR_SET_PDEATHSIG, SIGKILL);
                        for (unsigned k = 1; k < threads; k++)
                                pthread_create(&th, NULL, sleeper, NULL);
                        sleeper(NULL);
                }
        }
        sleep(1);
        for (unsigned i = 0; i < rounds; i++) {
                uint64_t t0 = mono_ns();
                if (capacity_scan_unmanaged(tree, &hs, &all) < 0)
                        return 1;
                t[i] = mono_ns() - t0;
        }
        qsort(t, rounds, sizeof *t, cmp_u64);
        {
                unsigned total = 0;
                FILE *f = popen("ls -d /proc/[0-9]*/task/[0-9]* | wc -l", "r");
                if (f && fscanf(f, "%u", &total) != 1)
                        total = 0;
                if (f)
                        pclose(f);
                printf("scan of %u threads (%u extra processes of %u threads): median %.3f ms, worst %.3f ms, "
                       "%zu deadline threads outside edfd\n",
                       total, n, threads, (double) t[rounds / 2] / 1e6, (double) t[rounds - 1] / 1e6, hs.n);
        }
        for (unsigned i = 0; i < n; i++)
                if (kids[i] > 0) {
                        kill(kids[i], SIGKILL);
                        waitpid(kids[i], NULL, 0);
                }
        tree_free(tree);
        free(kids);
        free(t);
        return 0;
}
