/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Priority inversion, measured (issue 40): a SCHED_DEADLINE thread and a SCHED_OTHER thread share a
 * mutex that the fair thread holds for part of each period. When the deadline thread wants the
 * lock in the middle of its job and the fair thread has it, the deadline thread sleeps until the
 * fair thread lets go; with CPU hogs beside them the fair thread gets only its fair share of a CPU
 * meanwhile, and the deadline thread's job waits as long as that takes. With PTHREAD_PRIO_INHERIT
 * the mutex is a PI futex (an rt_mutex in the kernel): the holder runs with the waiter's deadline
 * until it lets go (deadline inheritance), and the wait is the holder's critical section.
 *
 *   lock-inversion [--work 2ms] [--lock-at 500us] [--section 100us] [--period 10ms] [--deadline D]
 *                  [--hold 4ms] [--rest 2ms] [--duration 10s] [--skip 1s] [--pi] [--same-cpu]
 *                  (--set-deadline RUNTIME [--reclaim] | --admit RUNTIME [--group G])
 *
 * The deadline thread (the main thread): each job spins --lock-at of its own CPU time, takes the
 * lock, spins --section holding it, lets it go, spins the rest of --work; then sleeps until its
 * next release (a period boundary of CLOCK_MONOTONIC). The holder (a second thread, created before
 * the main thread becomes a deadline thread, so it stays SCHED_OTHER): takes the lock, spins --hold
 * of its own CPU time holding it, lets go, sleeps --rest, again. --same-cpu pins the holder to the
 * CPU the deadline thread runs on once it is a deadline thread (partitioned placement: they share
 * it with that CPU's hog).
 *
 * --set-deadline RUNTIME: the main thread makes itself SCHED_DEADLINE by sched_setattr (the bare
 * kernel; the process must already be in the cpuset it should run in). --admit RUNTIME: edfd admits
 * it (libedfd's edfd_admit() of the calling thread, group --group), which also places it. Exit 3
 * when that fails, with the reason.
 *
 * Prints one line: jobs, deadline misses, response p50/p99/max, how many jobs waited for the lock,
 * how long (p50, max, in all), and how often the holder took it. A job misses when it ends after
 * its release plus the deadline (default: the period). The first --skip of the run is a warm-up,
 * not counted. */

/* _GNU_SOURCE (the build defines it): pthread_setaffinity_np(), sched_getcpu(). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <edfd/edfd.h>

#include "basic/sched-attr.h"
#include "core/duration.h"
#include "workload.h"

#define ARG_DURATION(opt, v) workload_arg_duration("lock-inversion", (opt), (v))

static pthread_mutex_t lock;
static atomic_int stop;
static atomic_int holder_cpu = -1; /* the CPU the holder is to be pinned to (--same-cpu), -1: none */
static uint64_t holds;             /* times the holder took the lock (read after the join) */

static uint64_t hold_ns = 4 * NSEC_PER_MSEC, rest_ns = 2 * NSEC_PER_MSEC;

static uint64_t clock_ns(clockid_t c) {
        struct timespec ts;

        clock_gettime(c, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static void spin(uint64_t cpu_ns) {
        uint64_t from = clock_ns(CLOCK_THREAD_CPUTIME_ID);

        while (clock_ns(CLOCK_THREAD_CPUTIME_ID) - from < cpu_ns)
                ;
}

static void sleep_until(uint64_t t) {
        struct timespec ts = { (time_t) (t / NSEC_PER_SEC), (long) (t % NSEC_PER_SEC) };

        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
}

static void *holder(void *arg) {
        int pinned = -1;

        (void) arg;
        while (!atomic_load(&stop)) {
                int cpu = atomic_load(&holder_cpu);
                if (cpu >= 0 && cpu != pinned) {
                        cpu_set_t set;
                        CPU_ZERO(&set);
                        CPU_SET(cpu, &set);
                        if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0)
                                pinned = cpu;
                        else
                                fprintf(stderr, "lock-inversion: the holder cannot be pinned to cpu%d\n", cpu);
                }
                pthread_mutex_lock(&lock);
                spin(hold_ns);
                pthread_mutex_unlock(&lock);
                holds++;
                sleep_until(clock_ns(CLOCK_MONOTONIC) + rest_ns);
        }
        return NULL;
}

/* Make the calling thread a deadline thread, by hand or through edfd. 0, or exits 3. */
static void become_deadline(uint64_t set_runtime, int reclaim, uint64_t admit_runtime, const char *group,
                            uint64_t deadline, uint64_t period) {
        int r;

        if (set_runtime > 0) {
                SchedAttr a = { .size = sizeof a, .sched_policy = SCHED_DEADLINE,
                                .sched_flags = reclaim ? SCHED_FLAG_RECLAIM : 0, .sched_runtime = set_runtime,
                                .sched_deadline = deadline, .sched_period = period };
                r = sched_setattr_raw(0, &a, 0);
                if (r < 0) {
                        fprintf(stderr, "lock-inversion: sched_setattr(SCHED_DEADLINE): %s\n", strerror(-r));
                        exit(3);
                }
                return;
        }
        edfd *e = NULL;
        edfd_request *q = NULL;
        uint64_t id;

        if ((r = edfd_open(&e)) < 0 || (r = edfd_request_new(&q)) < 0 ||
            (r = edfd_request_set_runtime(q, admit_runtime)) < 0 || (r = edfd_request_set_deadline(q, deadline)) < 0 ||
            (r = edfd_request_set_period(q, period)) < 0 || (r = edfd_request_set_group(q, group)) < 0 ||
            (r = edfd_admit(e, q, &id)) < 0) {
                fprintf(stderr, "lock-inversion: edfd refused: %s (%s)\n", e ? edfd_error_message(e) : "", strerror(-r));
                edfd_request_free(q);
                edfd_close(e);
                exit(3);
        }
        edfd_request_free(q);
        edfd_close(e); /* the reservation stays until the thread exits */
}

int main(int argc, char *argv[]) {
        uint64_t work = 2 * NSEC_PER_MSEC, lock_at = 500 * NSEC_PER_USEC, section = 100 * NSEC_PER_USEC;
        uint64_t period = 10 * NSEC_PER_MSEC, deadline = 0, duration = 10 * NSEC_PER_SEC, skip = NSEC_PER_SEC;
        uint64_t set_runtime = 0, admit_runtime = 0;
        const char *group = NULL;
        int pi = 0, same_cpu = 0, reclaim = 0;

        for (int i = 1; i < argc; i++) {
                const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
                if (strcmp(a, "--work") == 0)
                        work = ARG_DURATION(a, v), i++;
                else if (strcmp(a, "--lock-at") == 0)
                        lock_at = ARG_DURATION(a, v), i++;
                else if (strcmp(a, "--section") == 0)
                        section = ARG_DURATION(a, v), i++;
                else if (strcmp(a, "--period") == 0)
                        period = ARG_DURATION(a, v), i++;
                else if (strcmp(a, "--deadline") == 0)
                        deadline = ARG_DURATION(a, v), i++;
                else if (strcmp(a, "--hold") == 0)
                        hold_ns = ARG_DURATION(a, v), i++;
                else if (strcmp(a, "--rest") == 0)
                        rest_ns = ARG_DURATION(a, v), i++;
                else if (strcmp(a, "--duration") == 0)
                        duration = ARG_DURATION(a, v), i++;
                else if (strcmp(a, "--skip") == 0)
                        skip = ARG_DURATION(a, v), i++;
                else if (strcmp(a, "--set-deadline") == 0)
                        set_runtime = ARG_DURATION(a, v), i++;
                else if (strcmp(a, "--admit") == 0)
                        admit_runtime = ARG_DURATION(a, v), i++;
                else if (strcmp(a, "--group") == 0 && v)
                        group = v, i++;
                else if (strcmp(a, "--pi") == 0)
                        pi = 1;
                else if (strcmp(a, "--same-cpu") == 0)
                        same_cpu = 1;
                else if (strcmp(a, "--reclaim") == 0)
                        reclaim = 1;
                else {
                        fprintf(stderr, "usage: lock-inversion [--work D] [--lock-at D] [--section D] [--period D] "
                                        "[--deadline D] [--hold D] [--rest D] [--duration D] [--skip D] [--pi] "
                                        "[--same-cpu] (--set-deadline RUNTIME [--reclaim] | --admit RUNTIME [--group G])\n");
                        return 2;
                }
        }
        if (deadline == 0)
                deadline = period;
        if (work == 0 || work > deadline || deadline > period || lock_at > work || section > work - lock_at ||
            hold_ns == 0 || skip >= duration || (set_runtime > 0) == (admit_runtime > 0) || set_runtime > deadline ||
            admit_runtime > deadline || (reclaim && set_runtime == 0)) {
                fprintf(stderr, "lock-inversion: need 0 < work <= deadline <= period, lock-at + section <= work, "
                                "hold > 0, skip < duration, one of --set-deadline or --admit (at most the deadline), "
                                "--reclaim only with --set-deadline\n");
                return 2;
        }

        pthread_mutexattr_t ma;
        pthread_mutexattr_init(&ma);
        if (pi && pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT) != 0) {
                fprintf(stderr, "lock-inversion: PTHREAD_PRIO_INHERIT is not supported\n");
                return 1;
        }
        pthread_mutex_init(&lock, &ma);
        pthread_mutexattr_destroy(&ma);

        pthread_t th;
        if (pthread_create(&th, NULL, holder, NULL) != 0) {
                fprintf(stderr, "lock-inversion: pthread_create failed\n");
                return 1;
        }
        become_deadline(set_runtime, reclaim, admit_runtime, group, deadline, period);

        size_t cap = duration / period + 2, n = 0, n_waits = 0;
        uint64_t *response = calloc(cap, sizeof(uint64_t)), *waits = calloc(cap, sizeof(uint64_t));
        uint64_t jobs = 0, misses = 0, waited = 0;
        if (!response || !waits) {
                fprintf(stderr, "lock-inversion: out of memory\n");
                return 1;
        }
        uint64_t start = clock_ns(CLOCK_MONOTONIC), release = (start + period - 1) / period * period;
        start = release;
        sleep_until(release);
        if (same_cpu)
                atomic_store(&holder_cpu, sched_getcpu());
        while (release + period <= start + duration) {
                uint64_t t0, t1, done;

                spin(lock_at);
                t0 = clock_ns(CLOCK_MONOTONIC);
                pthread_mutex_lock(&lock);
                t1 = clock_ns(CLOCK_MONOTONIC);
                spin(section);
                pthread_mutex_unlock(&lock);
                spin(work - lock_at - section);
                done = clock_ns(CLOCK_MONOTONIC);
                if (release - start >= skip && n < cap) {
                        response[n++] = done - release;
                        jobs++;
                        if (done > release + deadline)
                                misses++;
                        /* A wait that took more than 20 us had to sleep: the lock was held. */
                        if (t1 - t0 > 20 * NSEC_PER_USEC) {
                                waits[n_waits++] = t1 - t0;
                                waited += t1 - t0;
                        }
                }
                do
                        release += period;
                while (release < done);
                if (same_cpu)
                        atomic_store(&holder_cpu, sched_getcpu());
                sleep_until(release);
        }
        atomic_store(&stop, 1);
        pthread_join(th, NULL);

        char a[DURATION_MAX], b[DURATION_MAX], c[DURATION_MAX], d[DURATION_MAX], e[DURATION_MAX], f[DURATION_MAX];
        qsort(response, n, sizeof(uint64_t), workload_cmp_u64);
        qsort(waits, n_waits, sizeof(uint64_t), workload_cmp_u64);
        if (n == 0) {
                fprintf(stderr, "lock-inversion: no job was counted (duration too short for the skip)\n");
                return 1;
        }
        printf("lock-inversion: mutex %s, %" PRIu64 " jobs, %" PRIu64 " deadline misses (%.2f%%), response p50 %s "
               "p99 %s max %s; %zu jobs waited for the lock (%.1f%%), wait p50 %s max %s, %s in all; "
               "the holder took it %" PRIu64 " times\n",
               pi ? "PTHREAD_PRIO_INHERIT" : "default", jobs, misses, 100.0 * (double) misses / (double) jobs,
               duration_format(response[n / 2] / 1000 * 1000, a), duration_format(response[n * 99 / 100] / 1000 * 1000, b),
               duration_format(response[n - 1] / 1000 * 1000, c), n_waits, 100.0 * (double) n_waits / (double) jobs,
               duration_format(n_waits ? waits[n_waits / 2] / 1000 * 1000 : 0, d),
               duration_format(n_waits ? waits[n_waits - 1] / 1000 * 1000 : 0, e),
               duration_format(waited / 1000 * 1000, f), holds);
        free(response);
        free(waits);
        return 0;
}
