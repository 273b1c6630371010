/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* A periodic task: every PERIOD it does WORK of CPU time (measured in its own thread CPU time, not
 * loop counts, so that preemption does not shorten the work) and checks whether the job finished
 * before its deadline (the end of the period). Prints jobs, misses and response times.
 *
 *   periodic [--work 20ms] [--period 50ms] [--deadline D] [--duration 10s] [--skip 0] [--tasks N] [--align]
 *            [--set-deadline RUNTIME [--reclaim]] [--quiet]
 *
 * With --align the releases fall on multiples of PERIOD in CLOCK_MONOTONIC, so that tasks of the
 * same period started apart are released together (the worst case for EDF on several CPUs).
 * With --tasks N it runs N such threads in one process (all with the same parameters). With
 * --skip D the jobs released in the first D of the run (measured from the thread's own start, so
 * exec, loader and first page faults fall in it) still run but are not counted anywhere: a
 * warm-up; the run still lasts --duration in all. With PERIODIC_RAW set in the environment it
 * also prints each counted job's response time in ns, one a line, sorted. A job misses when it
 * ends after its release plus --deadline (default: the period; a constrained deadline D < T).
 *
 * Normally it never changes its own scheduling: run it under `edfctl admit -- periodic ...`. With
 * --set-deadline RUNTIME each thread makes itself SCHED_DEADLINE (RUNTIME, --deadline, --period;
 * with --reclaim also SCHED_FLAG_RECLAIM) by sched_setattr before its first job, and exits 3 with
 * the kernel's error if that fails: the experiments' bare-kernel column, no edfd involved (its
 * cpuset must already be the one the thread should run in). */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/sched-attr.h"
#include "core/duration.h"
#include "workload.h"

#define ARG_DURATION(opt, v) workload_arg_duration("periodic", (opt), (v))

typedef struct Task {
        uint64_t work, period, deadline, duration, skip;
        uint64_t set_runtime; /* 0: leave the scheduling alone */
        int align, reclaim;
        uint64_t jobs, misses;
        uint64_t *response;
        size_t n_response;
} Task;

static uint64_t ts_ns(const struct timespec *ts) {
        return (uint64_t) ts->tv_sec * NSEC_PER_SEC + (uint64_t) ts->tv_nsec;
}

static uint64_t clock_ns(clockid_t c) {
        struct timespec ts;
        clock_gettime(c, &ts);
        return ts_ns(&ts);
}

static void *run(void *arg) {
        Task *t = arg;

        if (t->set_runtime > 0) {
                SchedAttr a = { .size = sizeof a, .sched_policy = SCHED_DEADLINE,
                                .sched_flags = t->reclaim ? SCHED_FLAG_RECLAIM : 0, .sched_runtime = t->set_runtime,
                                .sched_deadline = t->deadline, .sched_period = t->period };
                int r = sched_setattr_raw(0, &a, 0);
                if (r < 0) {
                        fprintf(stderr, "periodic: sched_setattr(SCHED_DEADLINE): %s\n", strerror(-r));
                        exit(3);
                }
        }
        uint64_t start = clock_ns(CLOCK_MONOTONIC), release = start;

        if (t->align) { /* the first release on a period boundary of CLOCK_MONOTONIC */
                release = (start + t->period - 1) / t->period * t->period;
                struct timespec ts = { (time_t) (release / NSEC_PER_SEC), (long) (release % NSEC_PER_SEC) };
                while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                        ;
                start = release;
        }
        size_t cap = t->duration / t->period + 2;

        t->response = calloc(cap, sizeof(uint64_t));
        if (!t->response)
                return NULL;
        while (release + t->period <= start + t->duration) {
                uint64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), done;
                while (clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0 < t->work)
                        ;
                done = clock_ns(CLOCK_MONOTONIC);
                if (release - start >= t->skip) {
                        if (t->n_response < cap)
                                t->response[t->n_response++] = done - release;
                        t->jobs++;
                        if (done > release + t->deadline)
                                t->misses++;
                }
                /* Next release: the next period boundary after now (an overrun skips periods). */
                do
                        release += t->period;
                while (release < done);
                struct timespec ts = { (time_t) (release / NSEC_PER_SEC), (long) (release % NSEC_PER_SEC) };
                while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                        ;
        }
        return NULL;
}

int main(int argc, char *argv[]) {
        uint64_t work = 20 * NSEC_PER_MSEC, period = 50 * NSEC_PER_MSEC, duration = 10 * NSEC_PER_SEC, skip = 0;
        uint64_t deadline = 0, set_runtime = 0;
        unsigned n_tasks = 1;
        int quiet = 0, align = 0, reclaim = 0;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--work") == 0)
                        work = ARG_DURATION(argv[i], argv[i + 1]), i++;
                else if (strcmp(argv[i], "--period") == 0)
                        period = ARG_DURATION(argv[i], argv[i + 1]), i++;
                else if (strcmp(argv[i], "--deadline") == 0)
                        deadline = ARG_DURATION(argv[i], argv[i + 1]), i++;
                else if (strcmp(argv[i], "--set-deadline") == 0)
                        set_runtime = ARG_DURATION(argv[i], argv[i + 1]), i++;
                else if (strcmp(argv[i], "--reclaim") == 0)
                        reclaim = 1;
                else if (strcmp(argv[i], "--duration") == 0)
                        duration = ARG_DURATION(argv[i], argv[i + 1]), i++;
                else if (strcmp(argv[i], "--skip") == 0)
                        skip = ARG_DURATION(argv[i], argv[i + 1]), i++;
                else if (strcmp(argv[i], "--tasks") == 0 && i + 1 < argc)
                        n_tasks = (unsigned) strtoul(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--quiet") == 0)
                        quiet = 1;
                else if (strcmp(argv[i], "--align") == 0)
                        align = 1;
                else {
                        fprintf(stderr, "usage: periodic [--work D] [--period D] [--deadline D] [--duration D] [--skip D] "
                                        "[--tasks N] [--align] [--set-deadline RUNTIME [--reclaim]] [--quiet]\n");
                        return 2;
                }
        }
        if (deadline == 0)
                deadline = period;
        if (work == 0 || period == 0 || work > deadline || deadline > period || n_tasks == 0 || n_tasks > 64 ||
            skip >= duration || set_runtime > deadline || (reclaim && set_runtime == 0)) {
                fprintf(stderr, "periodic: need 0 < work <= deadline <= period, skip < duration, 1..64 tasks, "
                                "--set-deadline at most the deadline, --reclaim only with --set-deadline\n");
                return 2;
        }

        Task tasks[64];
        pthread_t th[64];
        for (unsigned i = 0; i < n_tasks; i++) {
                tasks[i] = (Task) { .work = work, .period = period, .deadline = deadline, .duration = duration,
                                .skip = skip, .set_runtime = set_runtime, .align = align, .reclaim = reclaim };
                /* The first task runs in the main thread: an admitted main thread keeps its reservation. */
                if (i > 0 && pthread_create(&th[i], NULL, run, &tasks[i]) != 0) {
                        fprintf(stderr, "periodic: pthread_create failed\n");
                        return 1;
                }
        }
        run(&tasks[0]);
        for (unsigned i = 1; i < n_tasks; i++)
                pthread_join(th[i], NULL);

        uint64_t jobs = 0, misses = 0;
        size_t n = 0;
        for (unsigned i = 0; i < n_tasks; i++) {
                jobs += tasks[i].jobs;
                misses += tasks[i].misses;
                n += tasks[i].n_response;
        }
        uint64_t *all = calloc(n ? n : 1, sizeof(uint64_t));
        size_t k = 0;
        for (unsigned i = 0; i < n_tasks; i++) {
                memcpy(all + k, tasks[i].response, tasks[i].n_response * sizeof(uint64_t));
                k += tasks[i].n_response;
                free(tasks[i].response);
        }
        qsort(all, n, sizeof(uint64_t), workload_cmp_u64);
        char a[DURATION_MAX], b[DURATION_MAX], c[DURATION_MAX];
        if (n > 0)
                printf("periodic: %" PRIu64 " jobs, %" PRIu64 " deadline misses (%.2f%%), response p50 %s p99 %s max %s\n",
                       jobs, misses, jobs ? 100.0 * (double) misses / (double) jobs : 0.0,
                       duration_format(all[n / 2] / 1000 * 1000, a), duration_format(all[n * 99 / 100] / 1000 * 1000, b),
                       duration_format(all[n - 1] / 1000 * 1000, c));
        if (!quiet && getenv("PERIODIC_RAW"))
                for (size_t i = 0; i < n; i++)
                        printf("%" PRIu64 "\n", all[i]);
        free(all);
        return 0;
}
