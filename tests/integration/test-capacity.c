/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel's capacity changes under edfd: sched_rt_runtime_us lowered below what edfd has handed
 * out, and kernel admission turned off (-1). edfd must notice by itself, evict nobody, refuse new
 * admissions while it is short, survive a reload and a kill -9 restart in that state with the same
 * books, and accept admissions again once the capacity is back.
 *
 * These tests change a machine-wide sysctl for a few seconds (and always restore it, also when an
 * assertion fails): like every test that uses the kernel's deadline pool, they never run beside
 * other tests (meson is_parallel: false). */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "shared/protocol.h"

#define MS HARNESS_MSEC
#define P100 (100 * MS)
#define RT_RUNTIME "/proc/sys/kernel/sched_rt_runtime_us"

/* With RT group scheduling (the cgroup v1 cpu controller, as on this machine's hybrid layout), the
 * root task group holds an RT runtime of its own, and the kernel refuses (EINVAL) a global
 * sched_rt_runtime_us below it: that one is lowered first and raised last. */
static const char *const root_group_rt_files[] = {
        "/sys/fs/cgroup/cpu/cpu.rt_runtime_us",
        "/sys/fs/cgroup/cpu,cpuacct/cpu.rt_runtime_us",
};

static long saved_rt_runtime = LONG_MIN, saved_group_rt = LONG_MIN;
static const char *group_rt_file;

static int read_long(const char *path, long *ret) {
        long long v;
        int r = harness_read_ll(path, &v);

        if (r == 0)
                *ret = (long) v;
        return r;
}

static int write_long(const char *path, long v) {
        FILE *f = fopen(path, "we");
        int r = 0;

        if (!f)
                return -errno;
        if (fprintf(f, "%ld\n", v) < 0)
                r = -EIO;
        if (fclose(f) != 0 && r == 0)
                r = -errno;
        return r;
}

static void restore_rt_runtime(void) {
        if (saved_rt_runtime != LONG_MIN) {
                if (write_long(RT_RUNTIME, saved_rt_runtime) < 0)
                        fprintf(stderr, "test-capacity: could not restore %s to %ld: %m\n", RT_RUNTIME,
                                saved_rt_runtime);
                saved_rt_runtime = LONG_MIN;
        }
        if (saved_group_rt != LONG_MIN) {
                if (write_long(group_rt_file, saved_group_rt) < 0)
                        fprintf(stderr, "test-capacity: could not restore %s to %ld: %m\n", group_rt_file,
                                saved_group_rt);
                saved_group_rt = LONG_MIN;
        }
}

static void fini(void) {
        restore_rt_runtime();
        harness_fini();
}

TestSuite(capacity, .fini = fini, .timeout = 120);

/* Set sched_rt_runtime_us, remembering the machine's value the first time. */
static void set_rt_runtime(long v) {
        long group_rt;
        int r;

        if (saved_rt_runtime == LONG_MIN)
                cr_assert_eq(read_long(RT_RUNTIME, &saved_rt_runtime), 0, "cannot read %s", RT_RUNTIME);
        for (size_t i = 0; v >= 0 && i < sizeof root_group_rt_files / sizeof root_group_rt_files[0]; i++)
                if (read_long(root_group_rt_files[i], &group_rt) == 0 && group_rt > v) {
                        if (saved_group_rt == LONG_MIN) {
                                saved_group_rt = group_rt;
                                group_rt_file = root_group_rt_files[i];
                        }
                        r = write_long(root_group_rt_files[i], v);
                        cr_assert_eq(r, 0, "cannot write %ld to %s: %s", v, root_group_rt_files[i], strerror(-r));
                }
        r = write_long(RT_RUNTIME, v);
        cr_assert_eq(r, 0, "cannot write %ld to %s: %s", v, RT_RUNTIME, strerror(-r));
}

static bool get_bool(Harness *h, const char *property) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        int v = -1, r;

        r = sd_bus_get_property_trivial(h->bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, property, &e, 'b',
                                        &v);
        cr_assert_geq(r, 0, "Get(%s): %s", property, e.message ? e.message : strerror(-r));
        return v;
}

static uint64_t get_u64(Harness *h, const char *property) {
        uint64_t v = 0;

        cr_assert_eq(harness_get_u64(h, property, &v), 0, "Get(%s)", property);
        return v;
}

/* Wait (at most 15 s: edfd looks again every 10 s by itself) until property is want. */
static bool wait_bool(Harness *h, const char *property, bool want) {
        for (unsigned i = 0; i < 150; i++) {
                if (get_bool(h, property) == want)
                        return true;
                harness_usleep(100 * 1000);
        }
        return false;
}

static char *status_line(Harness *h) {
        char *s;

        pthread_mutex_lock(&h->notify_lock);
        s = strdup(h->status);
        pthread_mutex_unlock(&h->notify_lock);
        cr_assert_not_null(s);
        return s;
}

/* Wait (at most 2 s: STATUS= is coalesced to one per 250 ms) until STATUS= contains text (or, with
 * present false, does not). */
static bool wait_status(Harness *h, const char *text, bool present) {
        for (unsigned i = 0; i < 20; i++) {
                _cleanup_free_ char *s = status_line(h);
                if ((strstr(s, text) != NULL) == present)
                        return true;
                harness_usleep(100 * 1000);
        }
        return false;
}

/* Two groups of 40% each: 80% at the root, which fits every machine that admits deadline tasks at
 * all; the test then lowers the kernel's pool below it. */
static const char config[] = "reclaim: off\n" /* the flags are checked exactly */
                             "default-group: a\n"
                             "groups:\n"
                             "  a: {bandwidth: 40%}\n"
                             "  b: {bandwidth: 40%}\n";
static const char config_bigger[] = "reclaim: off\n" /* the flags are checked exactly */
                                    "default-group: a\n"
                                    "groups:\n"
                                    "  a: {bandwidth: 60%}\n"
                                    "  b: {bandwidth: 40%}\n";

/* sched_rt_runtime_us such that the whole pool of this machine (less its fair servers) is 70% of
 * one CPU: below the 80% the groups hold, above the test's one reservation and the fair servers. */
static long rt_runtime_for_70pct(void) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        uint64_t servers = harness_fair_servers(); /* in 2^-20 CPU, all CPUs */
        uint64_t want = harness_bw(70 * MS, P100) + servers;

        /* usable = ncpu x rt/1e6 - servers, so rt = (70% + servers) / ncpu in 2^-20 units, in us. */
        return (long) (want * 1000000 / BW_UNIT / (uint64_t) ncpu);
}

Test(capacity, lowered_below_allocation_evicts_nobody) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h;
        HarnessChild *c, *d;
        HarnessBooks before;
        uint64_t id, cap0, cap1;
        int r;

        harness_require();
        cr_assert_eq(harness_start(&h, config, NULL), 0);
        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        cr_assert_eq(harness_spawn_child(h, 1, false, &d), 0);
        r = harness_admit(h, &e, c->pid, 0, "a", 5 * MS, P100, P100, 0, &id);
        assert_bus_ok(r, &e, "Admit(5ms/100ms into a)");
        cap0 = get_u64(h, "Capacity");
        cr_assert(!get_bool(h, "Overcommitted"));

        /* The kernel's pool shrinks under edfd: it notices at its next periodic look by itself. */
        set_rt_runtime(rt_runtime_for_70pct());
        cr_assert(wait_bool(h, "Overcommitted", true), "edfd did not notice that the capacity fell below 80%%");
        cap1 = get_u64(h, "Capacity");
        cr_assert_lt(cap1, cap0, "Capacity %" PRIu64 " did not fall (was %" PRIu64 ")", cap1, cap0);
        cr_assert_lt(cap1, harness_bw(80 * MS, P100), "Capacity %" PRIu64 " is not below 80%%", cap1);
        cr_assert(wait_status(h, "OVERCOMMITTED", true), "STATUS= does not say OVERCOMMITTED");
        harness_assert_dl(c->pid, 5 * MS, P100, P100, 0); /* nobody evicted */
        before = harness_books_take(h); /* the root's bandwidth is the new capacity */

        /* No admission while short, even one that fits its group: the refusal names the root. */
        sd_bus_error_free(&e);
        r = harness_admit(h, &e, d->pid, 0, "b", 1 * MS, P100, P100, 0, NULL);
        assert_bus_error(r, &e, "Admit while overcommitted", EDFD_ERROR_OVER_BUDGET);
        harness_assert_other(d->pid);

        /* The same configuration reloads: a reload never evicts either. */
        sd_bus_error_free(&e);
        r = harness_call(h, &e, NULL, "Reload", "");
        assert_bus_ok(r, &e, "Reload of the same file while overcommitted");
        cr_assert(get_bool(h, "Overcommitted"));
        harness_books_assert_same(h, &before, "a reload while overcommitted");

        /* A larger one does not: while short, a reload may not ask for more. */
        cr_assert_eq(harness_write_config(h, config_bigger), 0);
        sd_bus_error_free(&e);
        r = harness_call(h, &e, NULL, "Reload", "");
        assert_bus_error(r, &e, "Reload of a larger tree while overcommitted", EDFD_ERROR_INVALID_CONFIG);
        cr_assert(strstr(e.message, "may not ask for more"), "unexpected message: %s", e.message);
        harness_books_assert_same(h, &before, "a refused reload");
        cr_assert_eq(harness_write_config(h, config), 0);

        /* kill -9 and restart while short: edfd starts, re-adopts, stays overcommitted. */
        cr_assert_eq(harness_restart_daemon(h, true), 0, "edfd did not start again while the capacity is short");
        harness_books_assert_same(h, &before, "a kill -9 and restart while overcommitted");
        cr_assert(get_bool(h, "Overcommitted"));
        harness_assert_dl(c->pid, 5 * MS, P100, P100, 0);

        /* The capacity comes back: admissions work again, without a reload. */
        restore_rt_runtime();
        cr_assert(wait_bool(h, "Overcommitted", false), "edfd did not notice that the capacity is back");
        cr_assert_eq(get_u64(h, "Capacity"), cap0);
        cr_assert(wait_status(h, "OVERCOMMITTED", false), "STATUS= still says OVERCOMMITTED");
        sd_bus_error_free(&e);
        r = harness_admit(h, &e, d->pid, 0, "b", 1 * MS, P100, P100, 0, NULL);
        assert_bus_ok(r, &e, "Admit once the capacity is back");
        harness_assert_dl(d->pid, 1 * MS, P100, P100, 0);

        harness_books_free(&before);
        harness_stop(h);
}

/* In this test's own mount namespace, which edfd (its child) inherits: the machine's mounts stay
 * as they are. */
static void private_debugfs(void) {
        if (access("/sys/kernel/debug/sched/debug", R_OK) == 0)
                return;
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("none", "/sys/kernel/debug", "debugfs", 0, NULL) < 0)
                cr_skip_test("cannot mount debugfs in a private mount namespace: %s", strerror(errno));
}

static void admission_off_is_reported(bool debugfs) {
        Harness *h;
        uint64_t cap0;

        harness_require();
        if (debugfs)
                private_debugfs();
        cr_assert_eq(harness_start(&h, config, NULL), 0);
        cap0 = get_u64(h, "Capacity");
        cr_assert(get_bool(h, "KernelAdmission"));
        cr_assert(wait_status(h, "kernel admission OFF", false));

        set_rt_runtime(-1);
        cr_assert(wait_bool(h, "KernelAdmission", false), "edfd did not notice sched_rt_runtime_us = -1");
        cr_assert(wait_status(h, "kernel admission OFF", true), "STATUS= does not say that kernel admission is off");

        restore_rt_runtime();
        cr_assert(wait_bool(h, "KernelAdmission", true), "edfd did not notice kernel admission back on");
        cr_assert_eq(get_u64(h, "Capacity"), cap0);
        cr_assert(wait_status(h, "kernel admission OFF", false));
        harness_stop(h);
}

Test(capacity, kernel_admission_off_is_reported) {
        admission_off_is_reported(false);
}

/* Where debugfs is readable edfd sees the change in dl_bw->bw, without reading the sysctls. */
Test(capacity, kernel_admission_off_is_reported_through_debugfs) {
        admission_off_is_reported(true);
}

/* Where debugfs shows the root domain's dl_bw->total_bw, edfd measures the fair servers' reserve
 * (total_bw less every deadline thread) beside what the servers are set to take. debugfs
 * is mounted in this test's own mount namespace (edfd, its child, inherits it): the machine's mounts
 * stay as they are. */
Test(capacity, fair_servers_measured_in_debugfs) {
        _cleanup_free_ char *log = NULL;
        const char *line = NULL;
        uint64_t shortfall = 0;
        Harness *h;
        FILE *f;

        harness_require();
        private_debugfs();
        if (access("/sys/kernel/debug/sched/debug", R_OK) < 0)
                cr_skip_test("/sys/kernel/debug/sched/debug is not readable: %s", strerror(errno));

        cr_assert_eq(harness_start(&h, config, NULL), 0);
        /* The first measurement is made at start; a kernel whose count is short of what its threads
         * hold (seen on 6.18) gives none then, so wait for a later one too. */
        for (unsigned i = 0; i < 250 && !line; i++) {
                size_t n = 0;

                free(log);
                log = NULL;
                f = fopen(h->log_path, "re");
                cr_assert_not_null(f);
                if (getdelim(&log, &n, '\0', f) < 0) {
                        free(log);
                        log = NULL;
                }
                fclose(f);
                line = log ? strstr(log, "fair servers hold ") : NULL;
                if (!line)
                        harness_usleep(100 * 1000);
        }
        cr_assert_not_null(line, "edfd logged no measurement of the fair servers in 25 s");
        {
                char measured[32], implied[32];
                cr_assert_eq(sscanf(line, "fair servers hold %31s (measured in debugfs; their settings say %31[^)])",
                                    measured, implied),
                             2, "unexpected line: %.200s", line);
                /* On a kernel whose count is right, the measurement is the default reserve. */
                if (harness_kernel_shortfall(&shortfall) == 0 && shortfall == 0)
                        cr_expect_str_eq(measured, implied, "measured %s, the servers' settings say %s", measured, implied);
                else
                        cr_log_info("the kernel's count is short by %llu: measured %s, implied %s",
                                    (unsigned long long) shortfall, measured, implied);
        }
        harness_stop(h);
}

static uint64_t mono_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* Waits on fd, then uses spin_ns of its own CPU time and exits. */
static _Noreturn void spin_then_exit(int fd, uint64_t spin_ns) {
        struct timespec t0, t;
        char c;

        (void) !read(fd, &c, 1);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
        do
                clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
        while ((uint64_t) ((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec)) < spin_ns);
        _exit(0);
}

/* On 6.18 reading sched_rt_runtime_us (not only writing it) makes the kernel rebuild its scheduling
 * domains and recount its deadline bandwidth from the tasks alive. A deadline task that has ended
 * still holds its bandwidth until its 0-lag time; a recount before then leaves it out, and its 0-lag
 * timer then subtracts its share once more: the kernel counts less than exists (below zero after a
 * storm), admitting more than its pool. edfd reads that sysctl at its periodic look: it must not
 * while one of its deadline threads has ended and waits for its 0-lag time, and it reads it (and
 * has the kernel recount) once none can be.
 *
 * A thread admitted with 600 ms per 4 s uses 560 ms and exits just before edfd's periodic look:
 * its 0-lag time is ~3 s after its exit, so the look falls in between. Once it has passed, the
 * kernel must count all the bandwidth that exists. */
static void ending_thread_at_look(bool admitted, bool debugfs) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        const uint64_t runtime = 600 * MS, period = 4000 * MS, spin = 560 * MS;
        uint64_t shortfall = 0, resyncs, id;
        bool exercised = false;
        Harness *h;
        int r;

        harness_settle_kernel_count(); /* an earlier test's child must not be ending as edfd starts */
        harness_require();
        if (debugfs)
                private_debugfs();
        r = harness_kernel_shortfall(&shortfall);
        if (r < 0)
                cr_skip_test("the kernel's own count (debugfs) cannot be read: %s", strerror(-r));
        if (period > harness_period_max())
                cr_skip_test("sched_deadline_period_max_us is below 4 s");
        cr_assert_eq(harness_start(&h, config, NULL), 0);

        for (int attempt = 0; attempt < 3 && !exercised; attempt++) {
                uint64_t t_look, t_exit, after;
                int fds[2];
                pid_t p;

                cr_assert_eq(harness_kernel_shortfall(&shortfall), 0);
                if (shortfall != 0)
                        cr_skip_test("the kernel already counts %" PRIu64 " less than exists", shortfall);

                cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
                p = fork();
                cr_assert_geq(p, 0);
                if (p == 0) {
                        close(fds[1]);
                        spin_then_exit(fds[0], spin);
                }
                close(fds[0]);
                if (admitted) {
                        sd_bus_error_free(&e);
                        r = harness_admit(h, &e, p, 0, "a", runtime, period, period, 0, &id);
                        assert_bus_ok(r, &e, "Admit(600ms/4s into a)");
                } else {
                        SchedAttr a = { .sched_policy = SCHED_DEADLINE, .sched_runtime = runtime,
                                               .sched_deadline = period, .sched_period = period };
                        cr_assert_eq(harness_sched_setattr(p, &a), 0, "600ms/4s without edfd");
                }

                /* edfd's periodic look: every 10 s from the last one. */
                resyncs = get_u64(h, "Resyncs");
                for (unsigned i = 0; i < 1200 && get_u64(h, "Resyncs") == resyncs; i++)
                        harness_usleep(10 * 1000);
                t_look = mono_ns() + 10000 * MS;
                resyncs = get_u64(h, "Resyncs");
                while (mono_ns() < t_look - 800 * MS)
                        harness_usleep(10 * 1000);
                (void) !write(fds[1], "x", 1);
                close(fds[1]);
                cr_assert_eq(waitpid(p, NULL, 0), p);
                t_exit = mono_ns();

                /* Past its 0-lag time (within a period of its exit), before the look after next. */
                while (mono_ns() < t_exit + period + 200 * MS)
                        harness_usleep(10 * 1000);
                after = get_u64(h, "Resyncs");
                exercised = t_exit < t_look && after > resyncs;
                cr_assert_eq(harness_kernel_shortfall(&shortfall), 0);
                cr_expect_eq(shortfall, 0,
                             "the kernel counts %" PRIu64 " (%.1f%% of a CPU) less deadline bandwidth than exists after a "
                             "thread of 600ms/4s (%s) ended %.2f s before edfd's periodic look",
                             shortfall, 100.0 * (double) shortfall / (double) BW_UNIT,
                             admitted ? "admitted through edfd" : "not edfd's",
                             (double) ((int64_t) t_look - (int64_t) t_exit) / 1e9);
                if (!exercised)
                        cr_log_info("attempt %d: the thread ended after the look, or no look came: again", attempt + 1);
        }
        if (!exercised)
                cr_skip_test("in 3 attempts the thread never ended just before edfd's periodic look (machine too slow)");
        harness_stop(h);
}

Test(capacity, no_recount_while_a_deadline_thread_ends, .timeout = 120) {
        ending_thread_at_look(true, false);
}

/* A deadline thread edfd does not manage is not seen ending. Where debugfs is readable, edfd does
 * not need to read the sysctls at its periodic look at all: dl_bw->bw shows whether they changed,
 * without side effects. */
Test(capacity, no_recount_where_debugfs_shows_no_change, .timeout = 120) {
        ending_thread_at_look(false, true);
}

/* The kernel keeps for good the bandwidth of a process made SCHED_DEADLINE after it had ended and
 * reaped before it could be taken back (a storm's child can be raised that way), until it recounts.
 * edfd has it recount once its deadline threads that ended are past their 0-lag times: here a
 * zombie raised by the test itself (10%) is given back shortly after a thread admitted through
 * edfd exits, not only at edfd's periodic look 10 s later. */
Test(capacity, recount_once_deadline_threads_have_ended, .timeout = 60) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        long long base = 0, leaked = 0, now = 0;
        uint64_t shortfall, resyncs, t0;
        HarnessChild *c;
        Harness *h;
        pid_t z;
        int r;

        harness_settle_kernel_count();
        harness_require();
        r = harness_kernel_shortfall(&shortfall);
        if (r < 0)
                cr_skip_test("the kernel's own count (debugfs) cannot be read: %s", strerror(-r));
        cr_assert_eq(harness_start(&h, config, NULL), 0);
        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        sd_bus_error_free(&e);
        r = harness_admit(h, &e, c->pid, 0, "a", 5 * MS, P100, P100, 0, NULL);
        assert_bus_ok(r, &e, "Admit(5ms/100ms into a)");

        /* Right after a periodic look, so that the next one is 10 s away. */
        resyncs = get_u64(h, "Resyncs");
        for (unsigned i = 0; i < 1200 && get_u64(h, "Resyncs") == resyncs; i++)
                harness_usleep(10 * 1000);
        t0 = mono_ns();
        resyncs = get_u64(h, "Resyncs");
        cr_assert_eq(harness_kernel_total_bw(&base), 0);

        /* The leak, made by hand: a zombie raised to 10%, then reaped. */
        z = fork();
        cr_assert_geq(z, 0);
        if (z == 0)
                _exit(0);
        cr_assert_eq(waitid(P_PID, z, NULL, WEXITED | WNOWAIT), 0);
        SchedAttr a = { .sched_policy = SCHED_DEADLINE, .sched_runtime = 10 * MS, .sched_deadline = P100,
                               .sched_period = P100 };
        r = harness_sched_setattr(z, &a);
        cr_assert_eq(waitpid(z, NULL, 0), z);
        if (r < 0)
                cr_skip_test("this kernel refuses SCHED_DEADLINE for a zombie: %s", strerror(-r));
        cr_assert_eq(harness_kernel_total_bw(&leaked), 0);
        if (leaked - base < (long long) harness_bw(9 * MS, P100))
                cr_skip_test("this kernel does not keep a raised zombie's bandwidth (%lld before, %lld after)", base,
                             leaked);

        /* The admitted thread ends: within a period and edfd's slack, the kernel recounts. */
        harness_child_kill(c);
        for (unsigned i = 0; i < 300; i++) {
                cr_assert_eq(harness_kernel_total_bw(&now), 0);
                if (now <= base - (long long) harness_bw(5 * MS, P100) + (long long) harness_bw(1 * MS, P100))
                        break;
                harness_usleep(10 * 1000);
        }
        cr_expect_leq(now, base - (long long) harness_bw(5 * MS, P100) + (long long) harness_bw(1 * MS, P100),
                      "the kernel still counts %lld (%lld before the leak of %lld, and the admitted 5%% ended) %.1f s "
                      "after edfd's periodic look: no recount",
                      now, base, leaked - base, (double) (mono_ns() - t0) / 1e9);
        cr_expect_eq(get_u64(h, "Resyncs"), resyncs, "the recount came only with the periodic look");
        harness_stop(h);
}

/* ---- strangers named: EBUSY although the books have room ---- */

/* The thread's comm, as /proc shows it (for the message). */
static void read_comm(pid_t pid, pid_t tid, char *buf, size_t size) {
        char path[64];
        FILE *f;

        snprintf(path, sizeof path, "/proc/%d/task/%d/comm", (int) pid, (int) tid);
        f = fopen(path, "re");
        cr_assert_not_null(f, "%s: %m", path);
        cr_assert_not_null(fgets(buf, (int) size, f));
        fclose(f);
        buf[strcspn(buf, "\n")] = 0;
}

/* The root's books balance: what it holds is its groups' sizes plus what the deadline threads edfd
 * does not manage hold (Unmanaged). */
static void assert_root_balances(Harness *h, const char *when) {
        HarnessGroup *g = NULL;
        const HarnessGroup *root;
        uint64_t sum = 0, unmanaged = get_u64(h, "Unmanaged");
        size_t n = 0;

        cr_assert_eq(harness_list_groups(h, &g, &n), 0);
        root = harness_find_group(g, n, "/");
        cr_assert_not_null(root, "ListGroups has no root");
        for (size_t i = 0; i < n; i++)
                if (strcmp(g[i].path, "/") != 0 && !strchr(g[i].path + 1, '/'))
                        sum += g[i].bandwidth;
        cr_expect_eq(root->allocated, sum + unmanaged,
                     "%s: the root holds %" PRIu64 ", its groups %" PRIu64 " and Unmanaged %" PRIu64, when,
                     root->allocated, sum, unmanaged);
        harness_groups_free(g, n);
}

/* Right after edfd's periodic look (the scan for unmanaged threads), so that the next one is ~10 s
 * away. */
static void after_periodic_look(Harness *h) {
        uint64_t resyncs = get_u64(h, "Resyncs");

        for (unsigned i = 0; i < 1200 && get_u64(h, "Resyncs") == resyncs; i++)
                harness_usleep(10 * 1000);
        cr_assert_neq(get_u64(h, "Resyncs"), resyncs, "no periodic look within 12 s");
}

static const char config_strangers[] = "reclaim: off\n" /* the flags are checked exactly */
                                       "default-group: a\n"
                                       "groups:\n"
                                       "  a: {bandwidth: 100%}\n";

/* A deadline thread started outside edfd after its periodic look takes 95%, and an Admit that fits
 * edfd's books but not what the kernel has left waits out the EBUSY window: then edfd rescans at
 * once, charges the stranger (Unmanaged), and since the request no longer fits the books the answer
 * is their own OverBudget, naming the stranger's pid, comm and bandwidth. Once the stranger is gone
 * (and a periodic look saw it go) the same Admit succeeds. */
Test(capacity, stranger_named_when_the_kernel_is_busy, .timeout = 90) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        const uint64_t s_rt = 95 * MS;
        uint64_t headroom = 0, need, u0, u1, id = 0;
        char comm[32], who[96], *before;
        HarnessChild *c, *stranger;
        Harness *h;
        int r;

        harness_settle_kernel_count();
        harness_require();
        cr_assert_eq(harness_start(&h, config_strangers, NULL), 0);
        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        cr_assert_eq(harness_spawn_child(h, 1, false, &stranger), 0);
        cr_assert_eq(harness_probe_headroom(&headroom), 0);
        if (headroom < harness_bw(s_rt, P100) + harness_bw(10 * MS, P100))
                cr_skip_test("the kernel has only %.1f%% of a CPU left for deadline tasks",
                             100.0 * (double) headroom / (double) BW_UNIT);
        /* What the kernel will have left once the stranger runs, and 10% more: within group a. */
        need = (headroom - harness_bw(s_rt, P100) + harness_bw(10 * MS, P100)) * P100 / BW_UNIT;
        need = need / MS * MS;
        cr_assert_leq(need, P100);

        after_periodic_look(h);
        u0 = get_u64(h, "Unmanaged");
        before = harness_books_reservations(h);
        cr_assert_eq(harness_dl_set(stranger->tids[0], s_rt, P100, P100, 0), 0, "the stranger's 95%%");
        r = harness_admit(h, &e, c->pid, 0, "a", need, P100, P100, 0, &id);
        assert_bus_error(r, &e, "Admit beside a stranger edfd has not seen yet", EDFD_ERROR_OVER_BUDGET);
        read_comm(stranger->pid, stranger->tids[0], comm, sizeof comm);
        if (stranger->tids[0] == stranger->pid)
                snprintf(who, sizeof who, "pid %d (%s) holds 95%%", (int) stranger->pid, comm);
        else
                snprintf(who, sizeof who, "thread %d of pid %d (%s) holds 95%%", (int) stranger->tids[0],
                         (int) stranger->pid, comm);
        cr_log_info("Admit(%" PRIu64 " ms/100 ms) beside the stranger: %s: %s", need / MS, e.name, e.message);
        cr_expect(strstr(e.message, who), "the refusal does not name the stranger (\"%s\"): %s", who, e.message);
        cr_expect(strstr(e.message, "outside edfd"), "%s", e.message);
        u1 = get_u64(h, "Unmanaged");
        cr_expect_geq(u1, u0 + harness_bw(s_rt, P100), "Unmanaged is %" PRIu64 " (was %" PRIu64 "): the stranger's "
                      "95%% is not in it", u1, u0);
        harness_assert_other(c->pid);
        {
                _cleanup_free_ char *after = harness_books_reservations(h);
                cr_expect_str_eq(after, before, "the refusal changed the reservations");
        }
        free(before);
        assert_root_balances(h, "after the rescan");

        /* The stranger ends; the next periodic look sees it gone, and the same Admit fits. */
        cr_assert_eq(harness_dl_reset(stranger->tids[0]), 0);
        harness_child_kill(stranger);
        for (unsigned i = 0; i < 1500 && get_u64(h, "Unmanaged") > u0; i++)
                harness_usleep(10 * 1000);
        cr_assert_leq(get_u64(h, "Unmanaged"), u0, "Unmanaged did not drop after the stranger ended");
        sd_bus_error_free(&e);
        r = harness_admit(h, &e, c->pid, 0, "a", need, P100, P100, 0, &id);
        assert_bus_ok(r, &e, "the same Admit once the stranger is gone");
        harness_assert_dl(c->pid, need, P100, P100, 0);
        assert_root_balances(h, "after the Admit");
        cr_assert_geq(harness_call(h, NULL, NULL, "Release", "t", id), 0);
        harness_child_kill(c);
        harness_stop(h);
}

static const char config_ended[] = "reclaim: off\n" /* the flags are checked exactly */
                                   "default-group: a\n"
                                   "groups:\n"
                                   "  a: {bandwidth: 35%}\n"
                                   "  b: {bandwidth: 135%}\n";

/* No stranger holds it: a thread of edfd's (300 ms per 1 s) uses 250 ms and exits, and the kernel
 * keeps its 30% until its 0-lag time (~0.6 s later). edfd's own threads hold the rest of the pool
 * (in group b), so an Admit of 30% right after the exit fits the books but not the kernel: the answer
 * is KernelRefused saying the bandwidth is most likely still held for deadline threads that ended,
 * and within how many ms it comes back; after that the same Admit succeeds. */
Test(capacity, ended_thread_named_when_the_kernel_is_busy, .timeout = 60) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        const uint64_t x_rt = 300 * MS, x_period = 1000 * MS, spin = 250 * MS;
        uint64_t headroom = 0, fill, f1, f2, id_x, id_f1, id_f2 = 0, id = 0, u0, within = 0;
        HarnessChild *c, *filler;
        const char *p;
        Harness *h;
        int fds[2], r;
        pid_t x;

        harness_settle_kernel_count();
        harness_require();
        if (x_period > harness_period_max())
                cr_skip_test("sched_deadline_period_max_us is below 1 s");
        cr_assert_eq(harness_start(&h, config_ended, NULL), 0);
        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        cr_assert_eq(harness_spawn_child(h, 2, false, &filler), 0);
        cr_assert_eq(harness_probe_headroom(&headroom), 0);
        /* The fillers leave the kernel 15% once the thread's 30% is taken too. */
        if (headroom < harness_bw(120 * MS, P100) || headroom > harness_bw(200 * MS, P100))
                cr_skip_test("the kernel has %.1f%% of a CPU left for deadline tasks, not between 120%% and 200%%",
                             100.0 * (double) headroom / (double) BW_UNIT);
        fill = (headroom - harness_bw(45 * MS, P100)) * P100 / BW_UNIT / MS * MS;
        fill = MIN(fill, 135 * MS);
        f1 = MIN(fill, 95 * MS);
        f2 = fill - f1;
        u0 = get_u64(h, "Unmanaged");

        cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
        x = fork();
        cr_assert_geq(x, 0);
        if (x == 0) {
                close(fds[1]);
                spin_then_exit(fds[0], spin);
        }
        close(fds[0]);
        r = harness_admit(h, &e, x, 0, "a", x_rt, x_period, x_period, 0, &id_x);
        assert_bus_ok(r, &e, "Admit(300ms/1s into a)");
        r = harness_admit(h, &e, filler->pid, filler->tids[0], "b", f1, P100, P100, 0, &id_f1);
        assert_bus_ok(r, &e, "Admit(filler 1 into b)");
        if (f2 >= MS) {
                r = harness_admit(h, &e, filler->pid, filler->tids[1], "b", f2, P100, P100, 0, &id_f2);
                assert_bus_ok(r, &e, "Admit(filler 2 into b)");
        }

        (void) !write(fds[1], "x", 1);
        close(fds[1]);
        cr_assert_eq(waitpid(x, NULL, 0), x);
        cr_assert_eq(harness_wait_signal(h, "ReservationRemoved", id_x, "exited", NULL), 0);
        r = harness_admit(h, &e, c->pid, 0, "a", 30 * MS, P100, P100, 0, &id);
        if (r >= 0)
                cr_skip_test("the kernel gave the ended thread's bandwidth back at once (not at its 0-lag time)");
        cr_log_info("Admit(30ms/100ms) right after the 300ms/1s thread ended: %s: %s", e.name, e.message);
        assert_bus_error(r, &e, "Admit of the bandwidth an ended thread still holds", EDFD_ERROR_KERNEL_REFUSED);
        cr_expect(strstr(e.message, "EBUSY"), "%s", e.message);
        cr_expect(strstr(e.message, "still held for deadline threads that ended"), "%s", e.message);
        cr_expect(!strstr(e.message, "outside edfd"), "no stranger is there: %s", e.message);
        p = strstr(e.message, "expected back within ");
        cr_assert(p, "the message does not say when it comes back: %s", e.message);
        within = strtoull(p + strlen("expected back within "), NULL, 10);
        cr_expect(within > 0 && within <= (x_period + 100 * MS) / MS, "back within %" PRIu64 " ms, not within the "
                  "thread's period and edfd's slack", within);
        cr_expect_eq(get_u64(h, "Unmanaged"), u0, "the rescan found a stranger where there is none");
        harness_assert_other(c->pid);
        assert_root_balances(h, "after the refusal");

        /* When it said: the same Admit succeeds. */
        harness_usleep((within + 50) * 1000);
        sd_bus_error_free(&e);
        r = harness_admit(h, &e, c->pid, 0, "a", 30 * MS, P100, P100, 0, &id);
        assert_bus_ok(r, &e, "the same Admit once the ended thread's 0-lag time has passed");
        harness_assert_dl(c->pid, 30 * MS, P100, P100, 0);
        cr_assert_geq(harness_call(h, NULL, NULL, "Release", "t", id), 0);
        cr_assert_geq(harness_call(h, NULL, NULL, "Release", "t", id_f1), 0);
        if (id_f2)
                cr_assert_geq(harness_call(h, NULL, NULL, "Release", "t", id_f2), 0);
        harness_child_kill(filler);
        harness_child_kill(c);
        harness_stop(h);
}
