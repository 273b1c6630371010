/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* A periodic real-time loop on libedfd, the way an application should do it:
 *
 *   1. initialize first (allocate, touch and lock memory, open files, start the helper threads):
 *      start-up costs would otherwise be charged to the first budgets and make the first jobs late;
 *   2. admit the calling thread (edfd makes it SCHED_DEADLINE, or says why not);
 *   3. run one job per period and end each with edfd_job_done(), which hands the rest of the budget
 *      back and sleeps until the next period;
 *   4. release the reservation before leaving (an exit would give it back too).
 *
 * What the deadline thread shares with a normal thread is locked with a PTHREAD_PRIO_INHERIT
 * mutex. Here the late jobs are printed by a helper thread (SCHED_OTHER: stdio may block, and has
 * no place in a job), from a queue the two share. With a default mutex, a job that wants the lock
 * while the helper holds it sleeps until the helper lets go, and the helper runs only when the
 * scheduler gives a normal thread its turn: behind every other deadline thread, and sharing the CPU
 * with every normal one (a priority inversion; edfctl status counts these as possible lock waits,
 * edfd-trace names them). A priority-inheritance mutex lends the waiter's deadline to the holder
 * until it lets go, so the wait is the holder's critical section and no more. Its cost: a lock or
 * unlock nobody contends is one atomic instruction in user space either way; a contended one is a
 * system call (futex FUTEX_LOCK_PI / FUTEX_UNLOCK_PI) and the kernel's rt_mutex bookkeeping, a few
 * microseconds. Keep the critical sections short: the holder runs them on the waiter's budget.
 *
 *   periodic [-T RUNTIME_US] [-P PERIOD_US] [-w WORK_US] [-n JOBS] [-g GROUP] [-v]
 *
 * Defaults: 1 ms of budget every 10 ms, 300 us of work per job, 100 jobs, edfd's default group.
 * Prints the reservation, then how many jobs ended after their deadline (the end of their period);
 * -v also prints each late job, by how much it was late.
 * Exit status: 0 done, 1 edfd refused or failed (its reason on stderr), 2 bad arguments.
 *
 * Build it against an installed libedfd:  cc -o periodic periodic.c $(pkg-config --cflags --libs libedfd) */

#define _POSIX_C_SOURCE 200809L /* clock_gettime(), mlockall(), getopt(), nanosleep() */
#define _XOPEN_SOURCE 700       /* pthread_mutexattr_setprotocol() */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <edfd/edfd.h>

#define USEC UINT64_C(1000)

/* The late jobs, from the deadline thread to the printer: a ring both use under one PI mutex. */
#define LATE_MAX 64
static struct {
        pthread_mutex_t lock;
        uint64_t job[LATE_MAX], late_us[LATE_MAX];
        unsigned head, n;       /* the oldest entry, how many */
        uint64_t dropped;       /* late jobs that found the ring full */
        int done;               /* the jobs are over: print what is left and stop */
} late_queue;

static int late_queue_init(void) {
        pthread_mutexattr_t a;
        int r;

        r = pthread_mutexattr_init(&a);
        if (r != 0)
                return -r;
        r = pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
        if (r == 0)
                r = pthread_mutex_init(&late_queue.lock, &a);
        pthread_mutexattr_destroy(&a);
        return -r;
}

/* In the job: a few stores under the lock, no system call unless the printer holds it. */
static void late_queue_push(uint64_t job, uint64_t late_us) {
        pthread_mutex_lock(&late_queue.lock);
        if (late_queue.n < LATE_MAX) {
                unsigned i = (late_queue.head + late_queue.n++) % LATE_MAX;
                late_queue.job[i] = job;
                late_queue.late_us[i] = late_us;
        } else
                late_queue.dropped++;
        pthread_mutex_unlock(&late_queue.lock);
}

/* The printer: a normal thread, started before the admission. Takes one entry at a time under the
 * lock and prints it outside. */
static void *late_printer(void *arg) {
        struct timespec pause = { 0, 20 * 1000 * 1000 };

        (void) arg;
        for (;;) {
                uint64_t job = 0, late_us = 0;
                int have = 0, done;

                pthread_mutex_lock(&late_queue.lock);
                if (late_queue.n > 0) {
                        job = late_queue.job[late_queue.head];
                        late_us = late_queue.late_us[late_queue.head];
                        late_queue.head = (late_queue.head + 1) % LATE_MAX;
                        late_queue.n--;
                        have = 1;
                }
                done = late_queue.done && late_queue.n == 0;
                pthread_mutex_unlock(&late_queue.lock);
                if (have)
                        printf("job %" PRIu64 " ended %" PRIu64 " us after its deadline\n", job, late_us);
                else if (done)
                        return NULL;
                else
                        nanosleep(&pause, NULL);
        }
}

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
        pthread_t printer;

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

        /* 1. Initialize: everything that may fault or block happens before the admission. The
         * printer is started now, so that it stays a normal thread (a thread a deadline thread
         * creates is one too, by edfd's fork rule or the kernel's reset-on-fork; either way its
         * creation would run on the first budget). */
        if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
                fprintf(stderr, "periodic: mlockall: %s (going on unlocked)\n", strerror(errno));
        r = late_queue_init();
        if (r < 0) {
                fprintf(stderr, "periodic: cannot make a priority-inheritance mutex: %s\n", strerror(-r));
                return 1;
        }
        r = pthread_create(&printer, NULL, late_printer, NULL);
        if (r != 0) {
                fprintf(stderr, "periodic: cannot start the printer thread: %s\n", strerror(r));
                return 1;
        }
        r = edfd_open(&e);
        if (r < 0) {
                fprintf(stderr, "periodic: cannot connect to the system bus: %s\n", strerror(-r));
                goto finish;
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
                                late_queue_push(i, (now - deadline) / USEC);
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
        status = 0;

release:
        /* The printer prints what is left, then the summary comes. */
        pthread_mutex_lock(&late_queue.lock);
        late_queue.done = 1;
        pthread_mutex_unlock(&late_queue.lock);
        pthread_join(printer, NULL);
        if (status == 0)
                printf("ran %" PRIu64 " jobs of %" PRIu64 " us, %" PRIu64 " ended after their deadline%s\n", jobs,
                       work_us, late, late_queue.dropped ? " (some not printed: the queue was full)" : "");
        /* 4. Give the bandwidth back. */
        r = edfd_release(e, id);
        if (r < 0) {
                fprintf(stderr, "periodic: release: %s\n", edfd_error_message(e));
                status = 1;
        } else
                printf("released reservation %" PRIu64 "\n", id);
finish:
        if (status == 1 && !late_queue.done) { /* refused: the printer still waits */
                pthread_mutex_lock(&late_queue.lock);
                late_queue.done = 1;
                pthread_mutex_unlock(&late_queue.lock);
                pthread_join(printer, NULL);
        }
        edfd_request_free(q);
        edfd_close(e);
        return status;
}
