/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* A periodic real-time loop on libedfd, the way an application should do it:
 *
 *   1. initialize first (allocate, touch and lock memory, open files): start-up costs would
 *      otherwise be charged to the first budgets and make the first jobs late;
 *   2. admit the calling thread (edfd makes it SCHED_DEADLINE, or says why not);
 *   3. run one job per period and end each with edfd_job_done(), which hands the rest of the budget
 *      back and sleeps until the next period;
 *   4. release the reservation before leaving (an exit would give it back too).
 *
 *   periodic [-T RUNTIME_US] [-P PERIOD_US] [-w WORK_US] [-n JOBS] [-g GROUP] [-v]
 *
 * Defaults: 1 ms of budget every 10 ms, 300 us of work per job, 100 jobs, edfd's default group.
 * Prints the reservation, then how many jobs ended after their deadline (the end of their period);
 * -v also prints each late job, by how much it was late.
 * Exit status: 0 done, 1 edfd refused or failed (its reason on stderr), 2 bad arguments.
 *
 * Build it against an installed libedfd:  cc -o periodic periodic.c $(pkg-config --cflags --libs libedfd) */

#define _POSIX_C_SOURCE 200809L /* clock_gettime(), mlockall(), getopt() */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <edfd/edfd.h>

#define USEC UINT64_C(1000)

static uint64_t clock_ns(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000000 + (uint64_t) ts.tv_nsec;
}

/* One job: spin for work_ns of this thread's own CPU time. */
static void job(uint64_t work_ns) {
        uint64_t until = clock_ns(CLOCK_THREAD_CPUTIME_ID) + work_ns;

        while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < until)
                ;
}

static int parse_u64(const char *s, const char *what, uint64_t *ret) {
        char *end;
        unsigned long long v;

        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno != 0 || end == s || *end || *s == '-' || v == 0) {
                fprintf(stderr, "periodic: invalid %s \"%s\": a positive whole number is expected\n", what, s);
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

int main(int argc, char **argv) {
        uint64_t runtime_us = 1000, period_us = 10000, work_us = 300, jobs = 100, id;
        const char *group = NULL;
        edfd *e = NULL;
        edfd_request *q = NULL;
        uint64_t late = 0, deadline, now;
        int c, r, status = 1;
        int verbose = 0;

        while ((c = getopt(argc, argv, "T:P:w:n:g:vh")) >= 0) {
                switch (c) {
                case 'T': if (parse_u64(optarg, "runtime", &runtime_us) < 0) return 2; break;
                case 'P': if (parse_u64(optarg, "period", &period_us) < 0) return 2; break;
                case 'w': if (parse_u64(optarg, "work", &work_us) < 0) return 2; break;
                case 'n': if (parse_u64(optarg, "job count", &jobs) < 0) return 2; break;
                case 'g': group = optarg; break;
                case 'v': verbose = 1; break;
                case 'h':
                        printf("periodic [-T RUNTIME_US] [-P PERIOD_US] [-w WORK_US] [-n JOBS] [-g GROUP] [-v]\n");
                        return 0;
                default:
                        return 2;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "periodic: unexpected argument \"%s\"\n", argv[optind]);
                return 2;
        }
        if (runtime_us > UINT64_MAX / USEC || period_us > UINT64_MAX / USEC || work_us > UINT64_MAX / USEC) {
                fprintf(stderr, "periodic: a time is too large\n");
                return 2;
        }

        /* 1. Initialize: everything that may fault or block happens before the admission. */
        if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
                fprintf(stderr, "periodic: mlockall: %s (going on unlocked)\n", strerror(errno));
        r = edfd_open(&e);
        if (r < 0) {
                fprintf(stderr, "periodic: cannot connect to the system bus: %s\n", strerror(-r));
                return 1;
        }
        if ((r = edfd_request_new(&q)) < 0 ||
            (r = edfd_request_set_runtime(q, runtime_us * USEC)) < 0 ||
            (r = edfd_request_set_period(q, period_us * USEC)) < 0 ||
            (r = edfd_request_set_group(q, group)) < 0) {
                fprintf(stderr, "periodic: cannot make the request: %s\n", strerror(-r));
                goto finish;
        }

        /* 2. Admit this thread. */
        r = edfd_admit(e, q, &id);
        if (r < 0) {
                fprintf(stderr, "periodic: edfd refused: %s (%s, %s)\n", edfd_error_message(e),
                        edfd_error_name(e) ?: "local", strerror(-r));
                goto finish;
        }
        printf("admitted reservation %" PRIu64 ": %" PRIu64 " us every %" PRIu64 " us\n", id, runtime_us, period_us);
        fflush(stdout);

        /* 3. The jobs. The first starts now; each ends with edfd_job_done(), after which the kernel
         * runs the thread again at its next period. A job is late when it ends after the end of its
         * period (the deadline is the period here). */
        edfd_job_done(); /* start at a period boundary */
        deadline = clock_ns(CLOCK_MONOTONIC) + period_us * USEC;
        for (uint64_t i = 0; i < jobs; i++) {
                job(work_us * USEC);
                now = clock_ns(CLOCK_MONOTONIC);
                if (now > deadline) {
                        late++;
                        if (verbose)
                                printf("job %" PRIu64 " ended %" PRIu64 " us after its deadline\n", i,
                                       (now - deadline) / USEC);
                }
                /* The kernel gives the next job a fresh budget at this job's deadline (or at once
                 * when that has passed), with a deadline one period later. */
                deadline = (now > deadline ? now : deadline) + period_us * USEC;
                r = edfd_job_done();
                if (r < 0) {
                        fprintf(stderr, "periodic: edfd_job_done: %s\n", strerror(-r));
                        goto release;
                }
        }
        printf("ran %" PRIu64 " jobs of %" PRIu64 " us, %" PRIu64 " ended after their deadline\n", jobs, work_us, late);
        status = 0;

release:
        /* 4. Give the bandwidth back. */
        r = edfd_release(e, id);
        if (r < 0) {
                fprintf(stderr, "periodic: release: %s\n", edfd_error_message(e));
                status = 1;
        } else
                printf("released reservation %" PRIu64 "\n", id);
finish:
        edfd_request_free(q);
        edfd_close(e);
        return status;
}
