/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* split-periodic: the example of a split reservation, and the split mode of the experiment.
 *
 * One job of WORK (CPU time) every PERIOD, due DEADLINE after its release, that no single CPU can
 * take whole, run as edfd's AdmitSplit cuts it: stage 1 by one thread on one CPU, (C1, C1, T), then
 * stage 2 by another thread on another CPU, (C - C1, D - C1, T), released exactly C1 after each
 * release (so its releases stay T apart, and its deadline is the job's), continuing from what stage
 * 1 left (here: a sequence number stage 1 publishes when its part is done). The work is cut in the
 * ratio of the runtimes.
 *
 *   split-periodic --runtime 5.8ms --period 10ms [--deadline D] --work 5.5ms [--group G]
 *                  [--duration 10s] [--skip 2s] [--quiet]
 *
 * What the application must guarantee, and what this program does:
 *   - both threads exist and are runnable when it asks (edfd moves each into its CPU's partition,
 *     and the kernel moves a thread only when it runs): they spin until the answer;
 *   - stage 1 finishes its part within C1 of the release: its budget and its deadline are C1, and
 *     the kernel throttles it beyond. If it has not when stage 2 is released, stage 2 waits for it,
 *     sleeping (counted as "stage 1 late"), and the job's deadline is what is at risk, not other
 *     tasks'; a stage that falls behind skips the releases it missed;
 *   - neither stage does more work than its runtime.
 * Prints jobs, deadline misses (end of stage 2 after release + DEADLINE), response p50/p99/max and
 * the stage-1-late count, as periodic does (PERIODIC_RAW: each response in ns, sorted). Talks to
 * edfd over the system bus ($DBUS_SYSTEM_BUS_ADDRESS). */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include "core/duration.h"
#include "workload.h"

#define ARG_DURATION(opt, v) workload_arg_duration("split-periodic", (opt), (v))
#include "shared/protocol.h"

typedef struct Split {
        uint64_t work1, work2, period, offset, deadline, duration, skip, t0;
        atomic_int tid1, tid2;
        atomic_int go;               /* 1: run from t0; -1: stop */
        atomic_uint_fast64_t done1;  /* the last job stage 1 finished, + 1 */
        uint64_t jobs, misses, late1;
        uint64_t *response;
        size_t n_response, cap;
} Split;

static uint64_t clock_ns(clockid_t c) {
        struct timespec ts;
        clock_gettime(c, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static void sleep_until(uint64_t t) {
        struct timespec ts = { (time_t) (t / NSEC_PER_SEC), (long) (t % NSEC_PER_SEC) };
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
}

static void spin_cpu(uint64_t ns) {
        uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        while (clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0 < ns)
                ;
}

/* Spin (runnable, so that edfd can move the thread) until the admission is answered. */
static bool wait_go(Split *s) {
        while (atomic_load(&s->go) == 0)
                ;
        return atomic_load(&s->go) > 0;
}

/* The next job at or after job k whose release (plus offset) is not yet past: a stage that fell
 * behind skips the releases it missed, as periodic does, instead of running a backlog late. */
static uint64_t next_job(const Split *s, uint64_t k, uint64_t offset) {
        uint64_t now = clock_ns(CLOCK_MONOTONIC), first = s->t0 + offset;

        if (now > first + k * s->period) {
                uint64_t j = (now - first + s->period - 1) / s->period;
                if (j > k)
                        k = j;
        }
        return k;
}

static bool job_in_run(const Split *s, uint64_t k) {
        return s->t0 + k * s->period + s->period <= s->t0 + s->duration;
}

static void *stage1(void *arg) {
        Split *s = arg;

        atomic_store(&s->tid1, (int) gettid());
        if (!wait_go(s))
                return NULL;
        for (uint64_t k = next_job(s, 0, 0); job_in_run(s, k); k = next_job(s, k + 1, 0)) {
                sleep_until(s->t0 + k * s->period);
                spin_cpu(s->work1);
                atomic_store(&s->done1, k + 1);
        }
        atomic_store(&s->done1, UINT64_MAX); /* stage 2 never waits for a job that will not come */
        return NULL;
}

static void *stage2(void *arg) {
        Split *s = arg;

        atomic_store(&s->tid2, (int) gettid());
        if (!wait_go(s))
                return NULL;
        for (uint64_t k = next_job(s, 0, s->offset); job_in_run(s, k); k = next_job(s, k + 1, s->offset)) {
                uint64_t release = s->t0 + k * s->period, end;
                bool late = false;

                sleep_until(release + s->offset);
                /* Stage 1's state is not there yet: wait for it without spending the budget. */
                while (atomic_load(&s->done1) < k + 1) {
                        late = true;
                        sleep_until(clock_ns(CLOCK_MONOTONIC) + 20 * NSEC_PER_USEC);
                }
                spin_cpu(s->work2);
                end = clock_ns(CLOCK_MONOTONIC);
                if (release - s->t0 < s->skip)
                        continue;
                s->jobs++;
                s->late1 += late;
                if (end - release > s->deadline)
                        s->misses++;
                if (s->n_response < s->cap)
                        s->response[s->n_response++] = end - release;
        }
        return NULL;
}

int main(int argc, char *argv[]) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        sd_bus *bus = NULL;
        uint64_t runtime = 0, deadline = 0, period = 0, work = 0, duration = 10 * NSEC_PER_SEC, skip = 0;
        uint64_t id1, r1, d1, id2, r2, d2, offset;
        uint32_t cpu1, cpu2;
        const char *group = "";
        int quiet = 0, r;
        Split s = {};
        pthread_t th1, th2;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--runtime") == 0)
                        runtime = ARG_DURATION(argv[i], argv[i + 1]), i++;
                else if (strcmp(argv[i], "--deadline") == 0)
                        deadline = ARG_DURATION(argv[i], argv[i + 1]), i++;
                else if (strcmp(argv[i], "--period") == 0)
                        period = ARG_DURATION(argv[i], argv[i + 1]), i++;
                else if (strcmp(argv[i], "--work") == 0)
                        work = ARG_DURATION(argv[i], argv[i + 1]), i++;
                else if (strcmp(argv[i], "--duration") == 0)
                        duration = ARG_DURATION(argv[i], argv[i + 1]), i++;
                else if (strcmp(argv[i], "--skip") == 0)
                        skip = ARG_DURATION(argv[i], argv[i + 1]), i++;
                else if (strcmp(argv[i], "--group") == 0 && i + 1 < argc)
                        group = argv[++i];
                else if (strcmp(argv[i], "--quiet") == 0)
                        quiet = 1;
                else {
                        fprintf(stderr, "usage: split-periodic --runtime D --period D [--deadline D] --work D [--group G] "
                                        "[--duration D] [--skip D] [--quiet]\n");
                        return 2;
                }
        }
        if (deadline == 0)
                deadline = period;
        if (runtime == 0 || period == 0 || work == 0 || work > runtime || runtime > deadline || deadline > period ||
            skip >= duration) {
                fprintf(stderr, "split-periodic: need 0 < work <= runtime <= deadline <= period and skip < duration\n");
                return 2;
        }

        s.period = period;
        s.deadline = deadline;
        s.duration = duration;
        s.skip = skip;
        s.cap = duration / period + 2;
        s.response = calloc(s.cap, sizeof(uint64_t));
        if (!s.response || pthread_create(&th1, NULL, stage1, &s) != 0 || pthread_create(&th2, NULL, stage2, &s) != 0) {
                fprintf(stderr, "split-periodic: cannot start the stage threads\n");
                return 1;
        }
        while (atomic_load(&s.tid1) == 0 || atomic_load(&s.tid2) == 0)
                ;

        r = sd_bus_open_system(&bus);
        if (r >= 0)
                r = sd_bus_call_method(bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "AdmitSplit", &error, &reply,
                                       "uuustttt", (uint32_t) getpid(), (uint32_t) atomic_load(&s.tid1),
                                       (uint32_t) atomic_load(&s.tid2), group, runtime, deadline, period, UINT64_C(0));
        if (r >= 0)
                r = sd_bus_message_read(reply, "ttuttu", &id1, &r1, &cpu1, &id2, &r2, &cpu2);
        /* Stage 1's deadline and stage 2's release offset are its runtime; stage 2 is due with the job. */
        d1 = offset = r1;
        d2 = deadline - r1;
        sd_bus_message_unref(reply);
        sd_bus_flush_close_unref(bus);
        if (r < 0) {
                fprintf(stderr, "split-periodic: edfd refused the split: %s\n",
                        sd_bus_error_is_set(&error) ? error.message : strerror(-r));
                atomic_store(&s.go, -1);
                pthread_join(th1, NULL);
                pthread_join(th2, NULL);
                free(s.response);
                return 1;
        }

        /* The work in the ratio of the runtimes. */
        s.work1 = (uint64_t) ((unsigned __int128) work * r1 / runtime);
        s.work2 = work - s.work1;
        s.offset = offset;
        {
                char a[DURATION_MAX], b[DURATION_MAX], c[DURATION_MAX], d[DURATION_MAX], e[DURATION_MAX];
                if (!quiet)
                        fprintf(stderr, "split-periodic: #%" PRIu64 " stage 1 %s within %s on cpu%" PRIu32 " (work %s); #%" PRIu64
                                        " stage 2 %s within %s on cpu%" PRIu32 ", released %s later\n",
                                id1, duration_format(r1, a), duration_format(d1, b), cpu1, duration_format(s.work1, c), id2,
                                duration_format(r2, d), duration_format(d2, e), cpu2, duration_format(offset, a));
        }
        /* Releases on a period boundary at least 20 ms from now. */
        s.t0 = (clock_ns(CLOCK_MONOTONIC) + 20 * NSEC_PER_MSEC + period - 1) / period * period;
        atomic_store(&s.go, 1);
        pthread_join(th1, NULL);
        pthread_join(th2, NULL);

        qsort(s.response, s.n_response, sizeof(uint64_t), workload_cmp_u64);
        char a[DURATION_MAX], b[DURATION_MAX], c[DURATION_MAX];
        if (s.n_response > 0)
                printf("split-periodic: %" PRIu64 " jobs, %" PRIu64 " deadline misses (%.2f%%), response p50 %s p99 %s max %s, "
                       "stage 1 late %" PRIu64 "\n",
                       s.jobs, s.misses, s.jobs ? 100.0 * (double) s.misses / (double) s.jobs : 0.0,
                       duration_format(s.response[s.n_response / 2] / 1000 * 1000, a),
                       duration_format(s.response[s.n_response * 99 / 100] / 1000 * 1000, b),
                       duration_format(s.response[s.n_response - 1] / 1000 * 1000, c), s.late1);
        if (!quiet && getenv("PERIODIC_RAW"))
                for (size_t i = 0; i < s.n_response; i++)
                        printf("%" PRIu64 "\n", s.response[i]);
        free(s.response);
        return 0;
}
