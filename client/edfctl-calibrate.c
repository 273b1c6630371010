/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* edfctl calibrate: measure the per-job overhead of this machine and keep it (core/calibration.h
 * says what it is); and calibration_load() for admit --work.
 *
 * The measurement: one thread of edfctl's own, admitted through edfd like any other (so its
 * bandwidth is in the books), runs jobs of three sizes of work every period, each job WORK of its
 * own thread CPU time. The kernel charges a deadline thread exactly its thread CPU time (both are
 * the scheduler's sum of exec time), so from one job's start to the next one's the thread is
 * charged WORK plus the path around the job; that difference, job by job, is the sample. The first
 * jobs of each size are discarded (cold caches, the first page faults of the loop). */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "basic/proc.h"
#include "config.h"
#include "edfctl.h"

#define CALIBRATION_FILE_MAX (64 * 1024)
#define CAL_PERIOD (10 * NSEC_PER_MSEC)
#define CAL_RUNTIME (4 * NSEC_PER_MSEC)  /* the largest work (2 ms) plus room for its overhead */
#define CAL_SKIP 20                       /* jobs discarded at the start of each work size */
#define CAL_MIN_JOBS 100
#define CAL_DEFAULT_DURATION (30 * NSEC_PER_SEC)

static const uint64_t cal_works[] = { 100 * NSEC_PER_USEC, 500 * NSEC_PER_USEC, 2 * NSEC_PER_MSEC };
#define N_WORKS ELEMENTSOF(cal_works)
#define SCHED_DEADLINE_POLICY 6

const char *calibration_path(void) {
        const char *p = getenv("EDFD_CALIBRATION");

        return p && *p ? p : EDFD_CALIBRATION_PATH;
}

static void trim_end(char *s) {
        size_t len = strlen(s);

        while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
                s[--len] = '\0';
}

static void machine_id_read(MachineId *m) {
        struct utsname u;
        char buf[16384];
        const char *p;

        *m = (MachineId) {};
        if (uname(&u) == 0)
                snprintf(m->kernel, sizeof m->kernel, "%s %s", u.release, u.version);
        else
                snprintf(m->kernel, sizeof m->kernel, "unknown");
        snprintf(m->cpu_model, sizeof m->cpu_model, "unknown");
        if (proc_read_file(AT_FDCWD, "/proc/cpuinfo", PROC_READ_TRUNCATE, buf, sizeof buf, NULL) >= 0 &&
            (p = strstr(buf, "model name"))) {
                p += strcspn(p, ":\n");
                if (*p == ':') {
                        p++;
                        p += strspn(p, " \t");
                        size_t len = strcspn(p, "\n");
                        if (len > 0 && len < sizeof m->cpu_model)
                                snprintf(m->cpu_model, sizeof m->cpu_model, "%.*s", (int) len, p);
                }
        }
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        m->cpus = n > 0 ? (unsigned) n : 1;
        /* The file keeps values trimmed: so must the comparison. */
        trim_end(m->kernel);
        trim_end(m->cpu_model);
}

int calibration_load(const char *path, Calibration *ret, char *why, size_t size) {
        _cleanup_free_ char *buf = NULL;
        const char *reason, *stale;
        char stale_buf[2 * MACHINE_TEXT_MAX + 96];
        MachineId now;
        unsigned line;
        size_t len;
        int r;

        buf = malloc(CALIBRATION_FILE_MAX);
        if (!buf)
                return snprintf(why, size, "out of memory"), -ENOMEM;
        r = proc_read_file(AT_FDCWD, path, 0, buf, CALIBRATION_FILE_MAX, &len);
        if (r == -ENOENT)
                return 0;
        if (r == -EFBIG)
                return snprintf(why, size, "%s is larger than 64 KiB: not an edfd calibration", path), -EINVAL;
        if (r < 0)
                return snprintf(why, size, "cannot read %s: %s", path, strerror(-r)), r;
        if (strlen(buf) != len)
                return snprintf(why, size, "%s holds a NUL byte: not an edfd calibration", path), -EINVAL;
        r = calibration_parse(buf, ret, &line, &reason);
        if (r < 0) {
                if (line > 0)
                        snprintf(why, size, "%s line %u %s", path, line, reason);
                else
                        snprintf(why, size, "%s %s", path, reason);
                return r;
        }
        machine_id_read(&now);
        stale = calibration_stale(ret, &now, stale_buf, sizeof stale_buf);
        if (stale)
                return snprintf(why, size, "the calibration in %s is stale: %s", path, stale), -ESTALE;
        return 1;
}

/* --- the tick --- */

static uint64_t now_ns(clockid_t c) {
        struct timespec ts;

        clock_gettime(c, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static int read_jiffies(uint64_t *ret) {
        _cleanup_free_ char *buf = malloc(1 << 20);
        const char *p;

        if (!buf)
                return -ENOMEM;
        /* Root only; long (every CPU's timers), and "jiffies: N" comes after the first CPU's. */
        if (proc_read_file(AT_FDCWD, "/proc/timer_list", PROC_READ_TRUNCATE, buf, 1 << 20, NULL) < 0)
                return -EACCES;
        p = strstr(buf, "\njiffies: ");
        if (!p)
                return -EBADMSG;
        p += strlen("\njiffies: ");
        return parse_u64_slice(p, strcspn(p, "\n"), ret, &(const char *) { NULL });
}

/* The kernel's HZ, from how fast jiffies advance over 200 ms; 0 when it cannot be read. */
static uint64_t measure_hz(void) {
        static const uint64_t known[] = { 100, 250, 300, 1000 };
        uint64_t j0, j1, t0, t1, hz;

        t0 = now_ns(CLOCK_MONOTONIC);
        if (read_jiffies(&j0) < 0)
                return 0;
        nanosleep(&(struct timespec) { 0, 200 * 1000 * 1000 }, NULL);
        if (read_jiffies(&j1) < 0)
                return 0;
        t1 = now_ns(CLOCK_MONOTONIC);
        if (j1 <= j0 || t1 <= t0)
                return 0;
        hz = (j1 - j0) * NSEC_PER_SEC / (t1 - t0);
        for (size_t i = 0; i < ELEMENTSOF(known); i++)
                if (hz * 10 >= known[i] * 9 && hz * 10 <= known[i] * 11)
                        return known[i];
        return hz;
}

/* --- the worker --- */

enum { GO_WAIT, GO_RUN, GO_QUIT };

typedef struct Worker {
        uint64_t phase_ns;
        atomic_int tid;
        atomic_int go;
        atomic_bool done;
        int policy;              /* seen when it started: SCHED_DEADLINE, or why not */
        uint64_t *samples[N_WORKS];
        size_t n_samples[N_WORKS], cap;
        uint64_t late[N_WORKS];  /* jobs that ended after their deadline (the end of their period) */
} Worker;

static void sleep_until(uint64_t t) {
        struct timespec ts = { (time_t) (t / NSEC_PER_SEC), (long) (t % NSEC_PER_SEC) };

        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
}

static void *worker_run(void *arg) {
        Worker *w = arg;
        uint64_t prev_c0 = 0, prev_work = 0;
        bool have_prev = false;

        atomic_store(&w->tid, (int) gettid());
        while (atomic_load(&w->go) == GO_WAIT)
                nanosleep(&(struct timespec) { 0, 1000 * 1000 }, NULL);
        if (atomic_load(&w->go) == GO_QUIT)
                return NULL;
        w->policy = sched_getscheduler(0) & ~SCHED_RESET_ON_FORK; /* edfd sets reset-on-fork */
        if (w->policy == SCHED_DEADLINE_POLICY)
                for (size_t k = 0; k < N_WORKS; k++) {
                        uint64_t start = now_ns(CLOCK_MONOTONIC);
                        uint64_t release = (start / CAL_PERIOD + 1) * CAL_PERIOD, end = release + w->phase_ns;

                        for (size_t job = 0; release + CAL_PERIOD <= end; job++) {
                                uint64_t c0, c1, done;

                                sleep_until(release);
                                c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
                                /* The charge since the last job's start, less that job's work. */
                                if (have_prev && job >= CAL_SKIP && w->n_samples[k] < w->cap)
                                        w->samples[k][w->n_samples[k]++] =
                                                c0 - prev_c0 > prev_work ? c0 - prev_c0 - prev_work : 0;
                                while (now_ns(CLOCK_THREAD_CPUTIME_ID) - c0 < cal_works[k])
                                        ;
                                c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
                                done = now_ns(CLOCK_MONOTONIC);
                                prev_c0 = c0, prev_work = c1 - c0, have_prev = true;
                                if (job >= CAL_SKIP && done > release + CAL_PERIOD)
                                        w->late[k]++;
                                do
                                        release += CAL_PERIOD;
                                while (release < done);
                        }
                }
        atomic_store(&w->done, true);
        /* Stay until edfctl has given the reservation back: an exit would release it too, but then
         * the release and the exit race. */
        while (atomic_load(&w->go) != GO_QUIT)
                nanosleep(&(struct timespec) { 0, 1000 * 1000 }, NULL);
        return NULL;
}

/* Write text to path whole or not at all: a temporary file beside it, synced, renamed over it. The
 * directory exists (check_writable() made it). */
static int write_file(const char *path, const char *text) {
        _cleanup_free_ char *tmp = NULL;
        size_t len = strlen(text);
        int fd, r = 0;

        if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
                return -ENOMEM;
        fd = mkstemp(tmp);
        if (fd < 0)
                return -errno;
        errno = 0;
        if (fchmod(fd, 0644) < 0 || write(fd, text, len) != (ssize_t) len || fsync(fd) < 0)
                r = errno ? -errno : -EIO; /* a short write leaves errno 0 */
        if (close(fd) < 0 && r == 0)
                r = -errno;
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                unlink(tmp);
        return r;
}

/* Whether path's directory takes a new file (made if missing); path must not be a directory. */
static int check_writable(const char *path) {
        _cleanup_free_ char *dir = strdup(path);
        char *slash;

        struct stat st;

        if (!dir)
                return -ENOMEM;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
                return -EISDIR;
        slash = strrchr(dir, '/');
        if (!slash)
                return access(".", W_OK) < 0 ? -errno : 0;
        if (slash == dir)
                slash[1] = '\0';
        else
                *slash = '\0';
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        return access(dir, W_OK) < 0 ? -errno : 0;
}

static void print_row(const char *label, uint64_t *v, size_t n, uint64_t late) {
        char a[DURATION_MAX], b[DURATION_MAX], c[DURATION_MAX], d[DURATION_MAX];
        uint64_t p50 = quantile_permille(v, n, 500), p99 = quantile_permille(v, n, 990),
                 p999 = quantile_permille(v, n, 999), max = quantile_permille(v, n, 1000);

        printf("%-8s %6zu %10s %10s %10s %10s %5" PRIu64 "\n", label, n, duration_format(p50, a),
               duration_format(p99, b), duration_format(p999, c), duration_format(max, d), late);
}

int verb_calibrate(const Args *a) {
        _cleanup_(edfd_closep) edfd *e = NULL;
        _cleanup_(edfd_request_freep) edfd_request *q = NULL;
        _cleanup_free_ uint64_t *all = NULL;
        const char *path = a->n_positional > 0 ? a->positional[0] : calibration_path();
        uint64_t duration = CAL_DEFAULT_DURATION, id = 0, late = 0;
        char text[CALIBRATION_TEXT_MAX], x[DURATION_MAX], y[DURATION_MAX];
        Calibration c = {};
        Worker w = {};
        pthread_t thread;
        size_t n_all = 0;
        int r, ex = EDFCTL_EXIT_OK;

        if (*path == '\0')
                return usage_invalid("file", path, "is empty");
        if (a->given & ARG_DURATION) {
                ex = parse_duration_arg("duration", a->duration, &duration);
                if (ex != EDFCTL_EXIT_OK)
                        return ex;
                if (duration < 3 * NSEC_PER_SEC || duration > 3600 * NSEC_PER_SEC)
                        return usage_invalid("duration", a->duration, "is not between 3s and 1h");
        }
        w.phase_ns = duration / N_WORKS;
        w.cap = w.phase_ns / CAL_PERIOD + 1;
        for (size_t k = 0; k < N_WORKS; k++) {
                w.samples[k] = calloc(w.cap, sizeof(uint64_t));
                if (!w.samples[k]) {
                        ex = EDFCTL_EXIT_FAILED;
                        fputs("edfctl: out of memory\n", stderr);
                        goto out;
                }
        }

        /* Before measuring: a file that cannot be written would waste the run. */
        r = check_writable(path);
        if (r < 0) {
                fprintf(stderr, "edfctl: cannot write %s: %s\n", path, strerror(-r));
                ex = EDFCTL_EXIT_FAILED;
                goto out;
        }
        machine_id_read(&c.machine);
        c.hz = measure_hz();
        c.period = CAL_PERIOD;

        ex = edfctl_connect(&e);
        if (ex != EDFCTL_EXIT_OK)
                goto out;
        if (pthread_create(&thread, NULL, worker_run, &w) != 0) {
                fputs("edfctl: cannot start the calibration's thread\n", stderr);
                ex = EDFCTL_EXIT_FAILED;
                goto out;
        }
        while (atomic_load(&w.tid) == 0)
                nanosleep(&(struct timespec) { 0, 100 * 1000 }, NULL);

        r = edfd_request_new(&q);
        r = r ?: edfd_request_set_runtime(q, CAL_RUNTIME);
        r = r ?: edfd_request_set_period(q, CAL_PERIOD);
        r = r ?: edfd_request_set_group(q, a->group ?: "");
        r = r ?: edfd_request_set_thread(q, getpid(), (pid_t) atomic_load(&w.tid));
        r = r ?: edfd_admit(e, q, &id);
        if (r < 0) {
                atomic_store(&w.go, GO_QUIT);
                pthread_join(thread, NULL);
                ex = edfctl_failed(e, r, "Admit (the calibration's own 4ms/10ms reservation)");
                goto out;
        }
        printf("Calibrating for %s: reservation #%" PRIu64 ", 4ms every 10ms, jobs of 100us, 500us and 2ms of work.\n",
               duration_format(duration, x), id);
        fflush(stdout);
        atomic_store(&w.go, GO_RUN);
        while (!atomic_load(&w.done))
                nanosleep(&(struct timespec) { 0, 10 * 1000 * 1000 }, NULL);
        r = edfd_release(e, id);
        atomic_store(&w.go, GO_QUIT);
        pthread_join(thread, NULL);
        if (r < 0) {
                ex = edfctl_failed(e, r, "Release (the calibration's reservation)");
                goto out;
        }
        if (w.policy != SCHED_DEADLINE_POLICY) {
                fprintf(stderr, "edfctl: the calibration's thread was not SCHED_DEADLINE after its admission (policy %d)\n",
                        w.policy);
                ex = EDFCTL_EXIT_FAILED;
                goto out;
        }

        all = calloc(w.cap * N_WORKS, sizeof(uint64_t));
        if (!all) {
                fputs("edfctl: out of memory\n", stderr);
                ex = EDFCTL_EXIT_FAILED;
                goto out;
        }
        printf("\n%-8s %6s %10s %10s %10s %10s %5s\n", "work", "jobs", "p50", "p99", "p99.9", "max", "late");
        for (size_t k = 0; k < N_WORKS; k++) {
                memcpy(all + n_all, w.samples[k], w.n_samples[k] * sizeof(uint64_t));
                n_all += w.n_samples[k];
                late += w.late[k];
                print_row(duration_format(cal_works[k], x), w.samples[k], w.n_samples[k], w.late[k]);
        }
        print_row("all", all, n_all, late);
        if (n_all < CAL_MIN_JOBS) {
                fprintf(stderr, "edfctl: only %zu jobs were measured (at least %d are needed): nothing written\n", n_all,
                        CAL_MIN_JOBS);
                ex = EDFCTL_EXIT_FAILED;
                goto out;
        }
        c.jobs = n_all;
        c.p50 = quantile_permille(all, n_all, 500);
        c.p99 = quantile_permille(all, n_all, 990);
        /* Rounded up to the microsecond: budgets stay readable (1.063ms, not 1062.843us). */
        c.overhead = quantile_permille(all, n_all, 999);
        c.overhead = (c.overhead + NSEC_PER_USEC - 1) / NSEC_PER_USEC * NSEC_PER_USEC;
        c.max = quantile_permille(all, n_all, 1000);
        c.measured = (int64_t) time(NULL);
        if (calibration_format(&c, text, sizeof text) < 0) {
                fputs("edfctl: the calibration does not fit its text\n", stderr);
                ex = EDFCTL_EXIT_FAILED;
                goto out;
        }
        printf("\nPer-job overhead: %s (the 99.9th percentile of %" PRIu64 " jobs, rounded up to the us).\n", duration_format(c.overhead, x), c.jobs);
        if (c.hz)
                printf("The kernel enforces budgets at its tick: %s (HZ=%" PRIu64 "); a job that costs more than its\n"
                       "budget runs on until then, and the deficit is taken from its next periods.\n",
                       duration_format(NSEC_PER_SEC / c.hz, y), c.hz);
        r = write_file(path, text);
        if (r < 0) {
                fprintf(stderr, "edfctl: cannot write %s: %s\n", path, strerror(-r));
                ex = EDFCTL_EXIT_FAILED;
                goto out;
        }
        printf("Written to %s: edfctl admit --work adds it to every budget.\n", path);
out:
        for (size_t k = 0; k < N_WORKS; k++)
                free(w.samples[k]);
        return ex;
}
