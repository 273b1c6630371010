/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-lib.h"
#include "core/bandwidth.h"
#include "shared/protocol.h"
#include "sched-dl.h"

uint64_t bench_now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

void bench_sleep_until(uint64_t t_ns) {
        struct timespec ts = { (time_t) (t_ns / NSEC_PER_SEC), (long) (t_ns % NSEC_PER_SEC) };

        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return x < y ? -1 : x > y;
}

void bench_sort_u64(uint64_t *v, size_t n) {
        qsort(v, n, sizeof *v, cmp_u64);
}

uint64_t bench_quantile(const uint64_t *sorted, size_t n, double p) {
        size_t k;

        if (n == 0)
                return 0;
        k = (size_t) (p * (double) n);
        if (k >= n)
                k = n - 1;
        return sorted[k];
}

BenchSpread bench_spread(const double *v, size_t n) {
        BenchSpread s = {};
        double *c;

        if (n == 0)
                return s;
        c = malloc(n * sizeof *c);
        if (!c)
                return s;
        memcpy(c, v, n * sizeof *c);
        qsort(c, n, sizeof *c, cmp_double);
        s.min = c[0];
        s.max = c[n - 1];
        s.median = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
        free(c);
        return s;
}

char *bench_fmt(char *buf, size_t size, BenchSpread s, double scale, const char *unit, int decimals) {
        bool space = *unit && strcmp(unit, "x") != 0 && strcmp(unit, "%") != 0;

        snprintf(buf, size, "%.*f%s%s (%.*f-%.*f)", decimals, s.median / scale, space ? " " : "", unit, decimals,
                 s.min / scale, decimals, s.max / scale);
        return buf;
}

void bench_row(const char *figure, const char *value, const char *peer, const char *ratio, const char *target,
               const char *verdict) {
        const char *f[] = { figure, value, peer, ratio, target, verdict };

        fputs("@row", stdout);
        for (size_t i = 0; i < ELEMENTSOF(f); i++)
                printf("\t%s", f[i] && *f[i] ? f[i] : "-");
        putchar('\n');
        fflush(stdout);
}

const char *bench_verdict(bool met) {
        return met ? "met" : "MISSED";
}

unsigned bench_runs(int argc, char **argv, unsigned def) {
        const char *e = getenv("BENCH_RUNS");

        for (int i = 1; i + 1 < argc; i++)
                if (strcmp(argv[i], "--runs") == 0)
                        e = argv[i + 1];
        if (e && *e) {
                char *end;
                unsigned long v = strtoul(e, &end, 10);
                if (*end || v == 0 || v > 1000) {
                        fprintf(stderr, "bench: --runs/BENCH_RUNS \"%s\" is not a number of runs (1..1000)\n", e);
                        exit(2);
                }
                return (unsigned) v;
        }
        return def;
}

sd_bus *bench_bus_open(void) {
        sd_bus *bus = NULL;
        int r;

        if (!getenv("DBUS_SYSTEM_BUS_ADDRESS")) {
                fprintf(stderr, "bench: DBUS_SYSTEM_BUS_ADDRESS is not set: run this under bench-edfd "
                                "(tools/bench does)\n");
                exit(2);
        }
        r = sd_bus_open_system(&bus);
        if (r < 0) {
                fprintf(stderr, "bench: cannot connect to %s: %s\n", getenv("DBUS_SYSTEM_BUS_ADDRESS"), strerror(-r));
                exit(1);
        }
        return bus;
}

pid_t bench_edfd_pid(void) {
        const char *e = getenv("EDFD_PID");
        long v = e ? strtol(e, NULL, 10) : 0;

        if (v <= 0) {
                fprintf(stderr, "bench: EDFD_PID is not set: run this under bench-edfd (tools/bench does)\n");
                exit(2);
        }
        return (pid_t) v;
}

unsigned bench_kernel_busy;

/* The kernel's pool is machine-wide: another user of it (a test probing its headroom) can fill it for
 * a moment, and edfd then answers KernelRefused after its own 100 ms of retries. Retry for up to 2 s
 * more, and count it, so that such a moment shows in the output instead of ending the benchmark. */
static bool kernel_refused(const sd_bus_error *e) {
        return sd_bus_error_has_name(e, EDFD_ERROR_KERNEL_REFUSED);
}

int bench_admit(sd_bus *bus, pid_t pid, pid_t tid, const char *group, uint64_t runtime, uint64_t period,
                uint64_t *ret_id) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        uint64_t id, until = bench_now_ns() + 2 * NSEC_PER_SEC;
        int r;

        for (;;) {
                r = sd_bus_call_method(bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "Admit", &error, &reply,
                                       "uustttt", (uint32_t) pid, (uint32_t) tid, group, runtime, period, period,
                                       UINT64_C(0));
                if (r >= 0 || !kernel_refused(&error) || bench_now_ns() > until)
                        break;
                bench_kernel_busy++;
                sd_bus_error_free(&error);
                usleep(10000);
        }
        if (r >= 0)
                r = sd_bus_message_read(reply, "t", &id);
        if (r < 0)
                fprintf(stderr, "bench: Admit(%d, %d): %s\n", (int) pid, (int) tid,
                        error.message ? error.message : strerror(-r));
        else
                *ret_id = id;
        sd_bus_message_unref(reply);
        sd_bus_error_free(&error);
        return r < 0 ? r : 0;
}

int bench_release(sd_bus *bus, uint64_t id) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t until = bench_now_ns() + 2 * NSEC_PER_SEC;
        int r;

        for (;;) {
                r = sd_bus_call_method(bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "Release", &error, NULL,
                                       "t", id);
                if (r >= 0 || !kernel_refused(&error) || bench_now_ns() > until)
                        break;
                bench_kernel_busy++;
                sd_bus_error_free(&error);
                usleep(10000);
        }
        if (r < 0)
                fprintf(stderr, "bench: Release(%" PRIu64 "): %s\n", id, error.message ? error.message : strerror(-r));
        sd_bus_error_free(&error);
        return r < 0 ? r : 0;
}

uint64_t bench_echo(sd_bus *bus) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        uint64_t t0 = bench_now_ns(), t1;
        int r;

        r = sd_bus_call_method(bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "Echo", &error, &reply, "t",
                               UINT64_C(42));
        t1 = bench_now_ns();
        if (r < 0) {
                fprintf(stderr, "bench: Echo: %s\n", error.message ? error.message : strerror(-r));
                exit(1);
        }
        sd_bus_message_unref(reply);
        sd_bus_error_free(&error);
        return t1 - t0;
}

void bench_note_interference(void) {
        if (bench_kernel_busy)
                printf("note: the kernel refused bandwidth %u times although edfd's books had room (another user of "
                       "the machine-wide deadline pool); those calls were retried\n",
                       bench_kernel_busy);
}

int bench_property_u64(sd_bus *bus, const char *name, uint64_t *ret) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *contents;
        char type;
        int r;

        r = sd_bus_call_method(bus, EDFD_BUS_NAME, EDFD_BUS_PATH, "org.freedesktop.DBus.Properties", "Get", &error,
                               &reply, "ss", EDFD_BUS_INTERFACE, name);
        if (r >= 0)
                r = sd_bus_message_peek_type(reply, &type, &contents);
        if (r >= 0 && type == 'v') {
                if (strcmp(contents, "t") == 0) {
                        uint64_t v;
                        r = sd_bus_message_read(reply, "v", "t", &v);
                        if (r >= 0)
                                *ret = v;
                } else if (strcmp(contents, "u") == 0) {
                        uint32_t v;
                        r = sd_bus_message_read(reply, "v", "u", &v);
                        if (r >= 0)
                                *ret = v;
                } else
                        r = -EBADMSG;
        } else if (r >= 0)
                r = -EBADMSG;
        if (r < 0)
                fprintf(stderr, "bench: property %s: %s\n", name, error.message ? error.message : strerror(-r));
        sd_bus_message_unref(reply);
        sd_bus_error_free(&error);
        return r < 0 ? r : 0;
}

int bench_books(sd_bus *bus, BenchBooks *ret) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        BenchBooks b = {};
        int r;

        r = sd_bus_call_method(bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "ListReservations", &error, &reply,
                               "");
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(" EDFD_RESERVATION_ENTRY ")");
        while (r >= 0) {
                uint64_t id, runtime, deadline, period, bw, flags, donor;
                uint32_t pid, tid, uid;
                const char *group;
                r = sd_bus_message_enter_container(reply, 'r', EDFD_RESERVATION_ENTRY);
                if (r <= 0)
                        break;
                r = sd_bus_message_read(reply, "tuusttttttu", &id, &pid, &tid, &group, &runtime, &deadline, &period,
                                        &bw, &flags, &donor, &uid);
                if (r >= 0)
                        r = sd_bus_message_skip(reply, "a{sv}"); /* the extra fields: none needed here */
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        break;
                b.reservations++;
                b.sum_runtime += runtime;
        }
        reply = sd_bus_message_unref(reply);
        if (r >= 0)
                r = sd_bus_call_method(bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "ListGroups", &error,
                                       &reply, "");
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(" EDFD_GROUP_ENTRY ")");
        while (r >= 0) {
                uint64_t runtime, period, bw, allocated;
                uint32_t n_res, n_groups;
                const char *path, *cgroup, *fork, *threads;
                r = sd_bus_message_enter_container(reply, 'r', EDFD_GROUP_ENTRY);
                if (r <= 0)
                        break;
                r = sd_bus_message_read(reply, "sttttuusss", &path, &runtime, &period, &bw, &allocated, &n_res,
                                        &n_groups, &cgroup, &fork, &threads);
                if (r >= 0)
                        r = sd_bus_message_skip(reply, "basba{sv}"); /* users, dynamic, the extra fields */
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        break;
                if (strcmp(path, "/") == 0)
                        b.root_allocated = allocated;
                else if (strcmp(path, BENCH_GROUP) == 0)
                        b.group_allocated = allocated;
        }
        if (r >= 0) {
                uint64_t unmanaged = 0;
                r = bench_property_u64(bus, "Unmanaged", &unmanaged);
                /* The root's allocation counts deadline threads edfd does not manage: others' come and go. */
                b.root_allocated = b.root_allocated > unmanaged ? b.root_allocated - unmanaged : 0;
        }
        if (r < 0)
                fprintf(stderr, "bench: reading the books: %s\n", error.message ? error.message : strerror(-r));
        else
                *ret = b;
        sd_bus_message_unref(reply);
        sd_bus_error_free(&error);
        return r < 0 ? r : 0;
}

/* --- helper processes --- */

static int helper_pipe = -1;

static void *helper_thread(void *arg) {
        int32_t tid = (int32_t) syscall(SYS_gettid);

        (void) arg;
        if (write(helper_pipe, &tid, sizeof tid) != sizeof tid)
                _exit(1);
        for (;;)
                pause();
        return NULL;
}

int bench_helper_spawn(unsigned n, BenchHelper *ret) {
        BenchHelper h = { .n = n };
        int p[2];

        if (n == 0)
                return -EINVAL;
        h.tids = calloc(n, sizeof(pid_t));
        if (!h.tids)
                return -ENOMEM;
        if (pipe2(p, O_CLOEXEC) < 0) {
                free(h.tids);
                return -errno;
        }
        fflush(stdout);
        h.pid = fork();
        if (h.pid < 0) {
                int r = -errno;
                close(p[0]);
                close(p[1]);
                free(h.tids);
                return r;
        }
        if (h.pid == 0) {
                pthread_attr_t attr;
                int32_t self = (int32_t) getpid();

                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                close(p[0]);
                helper_pipe = p[1];
                pthread_attr_init(&attr);
                pthread_attr_setstacksize(&attr, 64 * 1024);
                if (write(p[1], &self, sizeof self) != sizeof self)
                        _exit(1);
                for (unsigned i = 1; i < n; i++) {
                        pthread_t t;
                        if (pthread_create(&t, &attr, helper_thread, NULL) != 0)
                                _exit(1);
                }
                for (;;)
                        pause();
        }
        close(p[1]);
        for (unsigned i = 0; i < n; i++) {
                int32_t tid;
                ssize_t k = read(p[0], &tid, sizeof tid);
                if (k != sizeof tid) {
                        close(p[0]);
                        kill(h.pid, SIGKILL);
                        waitpid(h.pid, NULL, 0);
                        free(h.tids);
                        return -ECHILD;
                }
                h.tids[i] = tid;
        }
        close(p[0]);
        /* The main thread wrote first, but keep tids[0] == pid whatever the order. */
        for (unsigned i = 1; i < n; i++)
                if (h.tids[i] == h.pid) {
                        h.tids[i] = h.tids[0];
                        h.tids[0] = h.pid;
                }
        *ret = h;
        return 0;
}

void bench_helper_kill(BenchHelper *h) {
        if (h->pid > 0) {
                kill(h->pid, SIGKILL);
                waitpid(h->pid, NULL, 0);
        }
        free(h->tids);
        *h = (BenchHelper) {};
}

long bench_status_kib(pid_t pid, const char *field) {
        char path[64], line[256];
        size_t len = strlen(field);
        long v = -ENOENT;
        FILE *f;

        snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof line, f))
                if (strncmp(line, field, len) == 0 && line[len] == ':') {
                        v = strtol(line + len + 1, NULL, 10);
                        break;
                }
        fclose(f);
        return v;
}

int64_t bench_cpu_ns(pid_t pid) {
        char path[64];
        unsigned long long run = 0;
        FILE *f;
        int n;

        snprintf(path, sizeof path, "/proc/%d/schedstat", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        n = fscanf(f, "%llu", &run);
        fclose(f);
        return n == 1 ? (int64_t) run : -EBADMSG;
}

/* --- the kernel's headroom --- */

#define PROBE_PERIOD NSEC_PER_SEC
#define PROBE_THREADS 4

static int probe_wake[2] = { -1, -1 };

static void *probe_thread(void *arg) {
        pid_t *tid = arg;
        char c;

        __atomic_store_n(tid, (pid_t) syscall(SYS_gettid), __ATOMIC_RELEASE);
        (void) read(probe_wake[0], &c, 1);
        return NULL;
}

static int probe_set(pid_t tid, uint64_t runtime, uint64_t period) {
        SchedAttr a = { .size = sizeof a, .sched_policy = SCHED_DEADLINE, .sched_runtime = runtime,
                        .sched_deadline = period, .sched_period = period };

        return sched_setattr_raw(tid, &a, 0);
}

/* The kernel's to_ratio(): bandwidth in BW_UNIT units. */
static uint64_t kernel_bw(uint64_t runtime, uint64_t period) {
        return (runtime << BW_SHIFT) / period;
}

int bench_kernel_headroom(uint64_t *ret_bw) {
        pthread_t th[PROBE_THREADS];
        pid_t tids[PROBE_THREADS] = {};
        uint64_t total = 0;
        unsigned started = 0;
        int r = 0;

        if (pipe2(probe_wake, O_CLOEXEC) < 0)
                return -errno;
        for (; started < PROBE_THREADS; started++)
                if (pthread_create(&th[started], NULL, probe_thread, &tids[started]) != 0) {
                        r = -EAGAIN;
                        break;
                }
        for (unsigned i = 0; i < started; i++)
                while (__atomic_load_n(&tids[i], __ATOMIC_ACQUIRE) == 0)
                        usleep(100);
        /* Each thread takes as much as still fits, up to one whole CPU; the next one goes on. */
        for (unsigned i = 0; r == 0 && i < started; i++) {
                uint64_t lo = 0, hi = PROBE_PERIOD; /* lo fits (0: nothing), hi + 1 does not */
                if (probe_set(tids[i], PROBE_PERIOD, PROBE_PERIOD) == 0)
                        lo = PROBE_PERIOD;
                else {
                        if (probe_set(tids[i], 1024, PROBE_PERIOD) != 0)
                                break; /* not even the smallest: the pool is full */
                        lo = 1024;
                        while (hi - lo > 16) {
                                uint64_t mid = lo + (hi - lo) / 2;
                                if (probe_set(tids[i], mid, PROBE_PERIOD) == 0)
                                        lo = mid;
                                else
                                        hi = mid;
                        }
                        (void) probe_set(tids[i], lo, PROBE_PERIOD); /* leave it at what fits */
                }
                total += kernel_bw(lo, PROBE_PERIOD);
                if (lo < PROBE_PERIOD)
                        break;
        }
        /* Give it all back while they sleep: first the zero-rounding bandwidth (a sleeping task switched
         * straight to SCHED_OTHER can leave its bandwidth charged), then SCHED_OTHER (a parked thread
         * would get 1 us every 4 s to exit in); then the threads exit. */
        for (unsigned i = 0; i < started; i++) {
                SchedAttr park = { .size = sizeof park, .sched_policy = SCHED_DEADLINE,
                                   .sched_runtime = SCHED_PARK_RUNTIME, .sched_deadline = SCHED_PARK_PERIOD,
                                   .sched_period = SCHED_PARK_PERIOD };
                SchedAttr other = { .size = sizeof other, .sched_policy = SCHED_OTHER };
                (void) sched_setattr_raw(tids[i], &park, 0);
                (void) sched_setattr_raw(tids[i], &other, 0);
        }
        close(probe_wake[1]);
        for (unsigned i = 0; i < started; i++)
                pthread_join(th[i], NULL);
        close(probe_wake[0]);
        probe_wake[0] = probe_wake[1] = -1;
        if (r == 0)
                *ret_bw = total;
        return r;
}
