/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sched against the real kernel: pin, apply SCHED_DEADLINE, read it back, release, and check with a
 * headroom probe that the release left no bandwidth charged. Needs root (CAP_SYS_NICE); skips
 * otherwise. Small reservations only (1 ms / 100 ms); the probe's helpers sleep throughout.
 *
 * This reads the machine-wide deadline bandwidth pool: run it alone (meson is_parallel: false),
 * never beside other tests that admit deadline threads. */

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sched-dl.h"

#define MS UINT64_C(1000000)
#define US UINT64_C(1000)

/* A child that sleeps until told to go: on EOF of its control pipe (or our death) it exits. */
typedef struct Sleeper {
        pid_t pid;
        pid_t tid; /* a second thread of the child, if asked for; else == pid */
        int ctl;   /* write end; closing it ends the child */
} Sleeper;

typedef struct SleeperPipes {
        int ctl, report;
} SleeperPipes;

/* The second thread: reports its own tid, then sleeps on the control pipe like the main thread. */
static void *sleeper_thread(void *arg) {
        const SleeperPipes *p = arg;
        pid_t tid = (pid_t) syscall(SYS_gettid);
        char c;

        if (write(p->report, &tid, sizeof(tid)) != sizeof(tid))
                _exit(4);
        while (read(p->ctl, &c, 1) > 0)
                ;
        _exit(0);
        return NULL;
}

static Sleeper sleeper_start(bool with_thread, bool cpu0_only) {
        int ctl[2], report[2];
        Sleeper s = {};
        pid_t tid;

        cr_assert_eq(pipe2(ctl, O_CLOEXEC), 0);
        cr_assert_eq(pipe2(report, O_CLOEXEC), 0);
        s.pid = fork();
        cr_assert_geq(s.pid, 0, "fork: %m");
        if (s.pid == 0) {
                SleeperPipes pipes = { .ctl = ctl[0], .report = report[1] };
                char c;

                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                close(ctl[1]);
                close(report[0]);
                if (cpu0_only) {
                        cpu_set_t set;

                        CPU_ZERO(&set);
                        CPU_SET(0, &set);
                        if (sched_setaffinity(0, sizeof(set), &set) < 0)
                                _exit(2);
                }
                if (with_thread) {
                        pthread_t th;

                        if (pthread_create(&th, NULL, sleeper_thread, &pipes) != 0)
                                _exit(3);
                } else {
                        tid = getpid();
                        if (write(report[1], &tid, sizeof(tid)) != sizeof(tid))
                                _exit(4);
                }
                while (read(ctl[0], &c, 1) > 0)
                        ;
                _exit(0);
        }
        close(ctl[0]);
        close(report[1]);
        cr_assert_eq(read(report[0], &tid, sizeof(tid)), (ssize_t) sizeof(tid), "sleeper did not start");
        close(report[0]);
        s.tid = tid;
        s.ctl = ctl[1];
        if (with_thread)
                cr_assert_neq(s.tid, s.pid, "the sleeper's thread reported the main thread's id");
        return s;
}

/* End the sleeper and reap it. */
static void sleeper_stop(Sleeper *s) {
        if (s->pid <= 0)
                return;
        close(s->ctl);
        (void) kill(s->pid, SIGKILL);
        (void) waitpid(s->pid, NULL, 0);
        s->pid = 0;
}

static void need_root(void) {
        if (geteuid() != 0)
                cr_skip_test("SCHED_DEADLINE needs root (CAP_SYS_NICE)");
}

/* Apply, retrying briefly on EBUSY (another test's bandwidth on its way back); skip if the machine
 * stays full. */
static void apply_or_skip(const SchedTarget *t, uint64_t runtime, uint64_t deadline, uint64_t period) {
        int r = -EBUSY;

        for (int i = 0; i < 10 && r == -EBUSY; i++) {
                r = sched_apply_deadline(t, runtime, deadline, period, 0);
                if (r == -EBUSY)
                        usleep(20000);
        }
        if (r == -EBUSY)
                cr_skip_test("no deadline headroom left on this machine (EBUSY)");
        cr_assert_eq(r, 0, "sched_apply_deadline: %s", strerror(-r));
}

Test(sched, apply_read_back_release) {
        SchedTarget t = SCHED_TARGET_NULL;
        SchedInfo info;
        Sleeper s;
        int r;

        need_root();
        s = sleeper_start(false, false);
        r = sched_target_pin(s.pid, s.pid, &t);
        cr_assert_eq(r, 0, "pin: %s", strerror(-r));
        cr_expect_eq(t.pid, s.pid);
        cr_expect_eq(t.tid, s.pid);
        cr_expect(sched_target_pinned(&t));
        cr_expect((t.pidfd >= 0) != (t.tidfd >= 0), "one fd: the thread's (PIDFD_THREAD) or else the process's (%d, %d)",
                  t.pidfd, t.tidfd);
        cr_expect_neq(t.identity, 0);
        if (t.tidfd >= 0)
                cr_expect(t.identity & SCHED_IDENTITY_PIDFS, "a thread pidfd's identity is its pidfs inode");
        cr_expect_eq(sched_target_verify(&t), 0);

        apply_or_skip(&t, 1 * MS, 100 * MS, 100 * MS);
        cr_assert_eq(sched_get(s.pid, &info), 0);
        cr_expect_eq(info.policy, SCHED_DEADLINE);
        cr_expect_eq(info.runtime, 1 * MS);
        cr_expect_eq(info.deadline, 100 * MS);
        cr_expect_eq(info.period, 100 * MS);
        cr_expect(info.flags & SCHED_FLAG_RESET_ON_FORK, "RESET_ON_FORK is always set, flags %#" PRIx64,
                  info.flags);

        /* Changing the parameters of a deadline thread (DL -> DL), deadline < period. */
        r = sched_apply_deadline(&t, 2 * MS, 50 * MS, 100 * MS, 0);
        cr_expect_eq(r, 0, "DL -> DL: %s", strerror(-r));
        cr_assert_eq(sched_get(s.pid, &info), 0);
        cr_expect_eq(info.runtime, 2 * MS);
        cr_expect_eq(info.deadline, 50 * MS);

        cr_assert_eq(sched_release(&t), 0);
        cr_assert_eq(sched_get(s.pid, &info), 0);
        cr_expect_eq(info.policy, SCHED_OTHER, "policy %u after release", info.policy);
        cr_expect_eq(info.nice, 0);
        cr_expect_eq(info.flags & SCHED_FLAG_RESET_ON_FORK, 0, "RESET_ON_FORK left on after release");
        cr_expect_eq(info.runtime, 0);

        /* Releasing a thread that is not SCHED_DEADLINE is harmless. */
        cr_expect_eq(sched_release(&t), 0);

        sleeper_stop(&s);
        cr_expect_eq(sched_target_verify(&t), -ESRCH, "verify after the child was reaped");
        cr_expect_eq(sched_apply_deadline(&t, 1 * MS, 100 * MS, 100 * MS, 0), -ESRCH);
        cr_expect_eq(sched_release(&t), -ESRCH);
        sched_target_done(&t);
        cr_expect_eq(t.pidfd, -1);
        cr_expect_eq(t.tidfd, -1);
        sched_target_done(&t); /* twice is fine */
        sched_target_done(NULL);
}

Test(sched, flags_pass_through) {
        SchedTarget t = SCHED_TARGET_NULL;
        SchedInfo info;
        Sleeper s;
        int r;

        need_root();
        s = sleeper_start(false, false);
        cr_assert_eq(sched_target_pin(s.pid, s.pid, &t), 0);
        r = sched_apply_deadline(&t, 1 * MS, 100 * MS, 100 * MS, SCHED_FLAG_DL_OVERRUN);
        if (r == -EBUSY)
                cr_skip_test("no deadline headroom left on this machine (EBUSY)");
        cr_assert_eq(r, 0, "apply with DL_OVERRUN: %s", strerror(-r));
        cr_assert_eq(sched_get(s.pid, &info), 0);
        cr_expect(info.flags & SCHED_FLAG_DL_OVERRUN, "flags %#" PRIx64, info.flags);
        cr_expect(info.flags & SCHED_FLAG_RESET_ON_FORK, "flags %#" PRIx64, info.flags);
        cr_expect_eq(sched_release(&t), 0);
        sleeper_stop(&s);
        sched_target_done(&t);
}

/* A child process that exits once *ret_release is closed. */
static pid_t waiting_child(int *ret_release) {
        int fds[2];
        pid_t p;
        char c;

        cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
        p = fork();
        cr_assert_geq(p, 0);
        if (p == 0) {
                close(fds[1]);
                (void) read(fds[0], &c, 1);
                _exit(0);
        }
        close(fds[0]);
        *ret_release = fds[1];
        return p;
}

Test(sched, zombie_fails_verify) {
        SchedTarget t = SCHED_TARGET_NULL;
        pid_t p;
        int release;

        need_root();
        p = waiting_child(&release);
        cr_assert_eq(sched_target_pin(p, p, &t), 0);
        close(release); /* the child exits and stays a zombie until reaped */
        cr_assert_eq(waitid(P_PID, p, NULL, WEXITED | WNOWAIT), 0);
        cr_expect_eq(sched_target_verify(&t), -ESRCH, "a zombie is not a live thread");
        cr_assert_eq(waitpid(p, NULL, 0), p);
        cr_expect_eq(sched_target_verify(&t), -ESRCH);
        sched_target_done(&t);
}

Test(sched, thread_of_a_process) {
        SchedTarget t = SCHED_TARGET_NULL;
        SchedInfo info;
        Sleeper s;
        int r;

        need_root();
        s = sleeper_start(true, false);
        r = sched_target_pin(s.pid, s.tid, &t);
        cr_assert_eq(r, 0, "pin of a thread: %s", strerror(-r));
        apply_or_skip(&t, 1 * MS, 100 * MS, 100 * MS);
        cr_assert_eq(sched_get(s.tid, &info), 0);
        cr_expect_eq(info.policy, SCHED_DEADLINE);
        cr_assert_eq(sched_get(s.pid, &info), 0);
        cr_expect_eq(info.policy, SCHED_OTHER, "the main thread is not touched");
        cr_expect_eq(sched_release(&t), 0);
        cr_assert_eq(sched_get(s.tid, &info), 0);
        cr_expect_eq(info.policy, SCHED_OTHER);

        /* A thread id is not a process id. */
        SchedTarget u = SCHED_TARGET_NULL;
        cr_expect_eq(sched_target_pin(s.tid, s.tid, &u), -ESRCH);
        sleeper_stop(&s);
        sched_target_done(&t);
}

Test(sched, pin_errors) {
        SchedTarget t = SCHED_TARGET_NULL, u;
        Sleeper s;

        need_root();
        s = sleeper_start(false, false);

        /* The same answers both ways: thread pidfd and pidfd info, or /proc. */
        for (int way = 0; way < 2; way++) {
                int (*pin)(pid_t, pid_t, SchedTarget *) = way ? sched_target_pin_via_proc : sched_target_pin;

                /* Our own pid is a live thread, but not one of s.pid's. */
                cr_expect_eq(pin(s.pid, getpid(), &t), -ENOENT, "way %d: tid of another process", way);
                cr_expect_eq(t.pidfd, -1, "ret written on failure");
                cr_expect_eq(t.tidfd, -1, "ret written on failure");
                cr_expect_eq(pin(s.pid, INT32_MAX, &t), -ENOENT, "way %d: tid that does not exist", way);
                cr_expect_eq(pin(INT32_MAX, INT32_MAX, &t), -ESRCH, "way %d: pid that does not exist", way);
                cr_expect_eq(pin(INT32_MAX, getpid(), &t), -ESRCH, "way %d: pid that does not exist, live tid", way);
                cr_expect_eq(pin(0, 1, &t), -EINVAL);
                cr_expect_eq(pin(1, 0, &t), -EINVAL);
                cr_expect_eq(pin(-1, -1, &t), -EINVAL);
                cr_expect_eq(pin(1, 1, NULL), -EINVAL);
        }
        cr_expect_eq(sched_target_verify(&t), -EINVAL, "an unpinned target");
        cr_expect_eq(sched_apply_deadline(&t, 1 * MS, 100 * MS, 100 * MS, 0), -EINVAL);
        cr_expect_eq(sched_release(&t), -EINVAL);

        /* A target whose start time does not match (the tid was recycled): refused, untouched. With a
         * thread pidfd held the tid cannot be recycled at all, so this is the check of kernels without
         * PIDFD_THREAD: drop the tidfd from the copy. */
        cr_assert_eq(sched_target_pin(s.pid, s.pid, &t), 0);
        cr_assert_eq(sched_target_pin_via_proc(s.pid, s.pid, &u), 0);
        cr_assert_eq(u.tidfd, -1);
        u.identity++;
        cr_expect_eq(sched_target_verify(&u), -ESRCH);
        cr_expect_eq(sched_apply_deadline(&u, 1 * MS, 100 * MS, 100 * MS, 0), -ESRCH);
        cr_expect_eq(sched_release(&u), -ESRCH);
        cr_expect_eq(sched_target_verify(&t), 0);
        sched_target_done(&u);

        sleeper_stop(&s);
        sched_target_done(&t);
}

Test(sched, bad_params_are_einval_and_change_nothing) {
        static const struct {
                const char *name;
                uint64_t runtime, deadline, period, flags;
        } bad[] = {
                { "runtime 0", 0, 100 * MS, 100 * MS, 0 },
                { "runtime 1", 1, 100 * MS, 100 * MS, 0 },
                { "runtime 1023", 1023, 100 * MS, 100 * MS, 0 },
                { "runtime above deadline", 60 * MS, 50 * MS, 100 * MS, 0 },
                { "deadline above period", 1 * MS, 100 * MS + 1, 100 * MS, 0 },
                { "bit 63 in deadline and period", 1 * MS, UINT64_C(1) << 63, UINT64_C(1) << 63, 0 },
                { "runtime UINT64_MAX", UINT64_MAX, UINT64_MAX, UINT64_MAX, 0 },
                { "period below sched_deadline_period_min_us", 1024, 50 * US, 50 * US, 0 },
                { "period above sched_deadline_period_max_us", 1 * MS, 5000 * MS, 5000 * MS, 0 },
                { "unknown flag", 1 * MS, 100 * MS, 100 * MS, 0x20 },
                { "flag bit 63", 1 * MS, 100 * MS, 100 * MS, UINT64_C(1) << 63 },
        };
        SchedTarget t = SCHED_TARGET_NULL;
        SchedInfo info;
        Sleeper s;

        need_root();
        s = sleeper_start(false, false);
        cr_assert_eq(sched_target_pin(s.pid, s.pid, &t), 0);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                int r = sched_apply_deadline(&t, bad[i].runtime, bad[i].deadline, bad[i].period, bad[i].flags);

                cr_expect_eq(r, -EINVAL, "%s: %d (%s)", bad[i].name, r, strerror(-r));
                cr_assert_eq(sched_get(s.pid, &info), 0);
                cr_expect_eq(info.policy, SCHED_OTHER, "%s changed the policy", bad[i].name);
        }
        sleeper_stop(&s);
        sched_target_done(&t);
}

Test(sched, narrowed_affinity_is_eperm) {
        SchedTarget t = SCHED_TARGET_NULL;
        SchedInfo info;
        Sleeper s;
        int r;

        need_root();
        if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
                cr_skip_test("needs 2 CPUs: with one, CPU 0 is the whole root domain");
        s = sleeper_start(false, true);
        cr_assert_eq(sched_target_pin(s.pid, s.pid, &t), 0);
        r = sched_apply_deadline(&t, 1 * MS, 100 * MS, 100 * MS, 0);
        cr_expect_eq(r, -EPERM, "affinity narrower than the root domain: %d (%s)", r, strerror(-r));
        cr_assert_eq(sched_get(s.pid, &info), 0);
        cr_expect_eq(info.policy, SCHED_OTHER);
        sleeper_stop(&s);
        sched_target_done(&t);
}

Test(sched, get_and_start_time) {
        SchedInfo info;
        uint64_t st = 0, st2 = 0;
        char buf[4096];
        FILE *f;
        size_t n;

        cr_expect_eq(sched_get(INT32_MAX, &info), -ESRCH);
        cr_expect_eq(sched_get(0, &info), -EINVAL);
        cr_assert_eq(sched_get(getpid(), &info), 0);
        cr_expect_eq(info.policy, SCHED_OTHER);

        cr_assert_eq(sched_read_start_time(getpid(), getpid(), &st), 0);
        f = fopen("/proc/self/stat", "re");
        cr_assert_not_null(f);
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = 0;
        /* Independently: field 22 counted from the end of the last ')'. */
        {
                char *p = strrchr(buf, ')');
                unsigned long long v = 0;

                cr_assert_not_null(p);
                cr_assert_eq(sscanf(p + 2, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
                                           "%*s %*s %*s %llu", &v), 1);
                st2 = v;
        }
        cr_expect_eq(st, st2);
        cr_expect_eq(sched_read_start_time(getpid(), INT32_MAX, &st), -ENOENT);
        cr_expect_eq(sched_read_start_time(INT32_MAX, INT32_MAX, &st), -ENOENT);
        cr_expect_eq(sched_read_start_time(0, 1, &st), -EINVAL);
}

/* The stat parser itself (comm with ')' and blanks, truncated lines, overflow, field 9) is tested
 * in tests/unit/test-basic.c. */

static void *block_on_pipe(void *arg) {
        int *fds = arg;
        pid_t tid = (pid_t) syscall(SYS_gettid);
        char c;

        if (write(fds[3], &tid, sizeof tid) != sizeof tid)
                return NULL;
        (void) read(fds[0], &c, 1);
        return NULL;
}

/* A thread that ends while its process lives on fails verify, with the thread pidfd (one poll) and
 * without it (the stat file, as on kernels before 6.9: simulated by dropping the tidfd). */
/* True once /proc/self/task/TID is gone (the thread released), polling for at most ms milliseconds. */
static bool thread_gone_within(pid_t tid, int ms) {
        char path[64];

        snprintf(path, sizeof path, "/proc/self/task/%d", (int) tid);
        for (int i = 0; i < ms; i++) {
                if (access(path, F_OK) < 0 && errno == ENOENT)
                        return true;
                usleep(1000);
        }
        return false;
}

Test(sched, ended_thread_fails_verify) {
        for (int with_tidfd = 1; with_tidfd >= 0; with_tidfd--) {
                SchedTarget t = SCHED_TARGET_NULL;
                int fds[4];
                pthread_t th;
                pid_t tid;

                cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
                cr_assert_eq(pipe2(fds + 2, O_CLOEXEC), 0);
                cr_assert_eq(pthread_create(&th, NULL, block_on_pipe, fds), 0);
                cr_assert_eq(read(fds[2], &tid, sizeof tid), (ssize_t) sizeof tid);
                cr_assert_eq((with_tidfd ? sched_target_pin : sched_target_pin_via_proc)(getpid(), tid, &t), 0);
                cr_expect_eq(sched_target_verify(&t), 0, "the thread lives (tidfd %d)", with_tidfd);
                close(fds[1]);
                cr_assert_eq(pthread_join(th, NULL), 0);
                /* pthread_join() returns once the thread has cleared its tid, which the kernel does
                 * before the thread is dead (exit_mm() comes before exit_notify()): wait until the
                 * kernel has removed it, then it must fail verification. */
                cr_assert(thread_gone_within(tid, 5000), "thread %d still listed after 5 s", (int) tid);
                cr_expect_eq(sched_target_verify(&t), -ESRCH, "the thread ended (tidfd %d)", with_tidfd);
                cr_expect_eq(sched_apply_deadline(&t, 1 * MS, 100 * MS, 100 * MS, 0), -ESRCH);
                sched_target_done(&t);
                close(fds[0]);
                close(fds[2]);
                close(fds[3]);
        }
}

/* Identities: the same thread gets the same one from every pin, another thread another one; a start
 * time recorded by an earlier edfd (or on an older kernel) still recognizes the thread. */
Test(sched, identities) {
        SchedTarget a = SCHED_TARGET_NULL, b = SCHED_TARGET_NULL, p = SCHED_TARGET_NULL;
        uint64_t st;
        Sleeper s;

        need_root();
        s = sleeper_start(true, false);
        cr_assert_eq(sched_target_pin(s.pid, s.tid, &a), 0);
        cr_assert_eq(sched_target_pin(s.pid, s.tid, &b), 0);
        cr_assert_eq(sched_target_pin_via_proc(s.pid, s.tid, &p), 0);
        cr_assert_eq(sched_read_start_time(s.pid, s.tid, &st), 0);

        cr_expect_eq(a.identity, b.identity);
        cr_expect_eq(p.identity, st, "without a thread pidfd the identity is the start time");
        cr_expect_eq(sched_target_is(&a, b.identity), 1);
        cr_expect_eq(sched_target_is(&a, st), 1, "a recorded start time");
        cr_expect_eq(sched_target_is(&a, st + 1), 0);
        cr_expect_eq(sched_target_is(&p, st), 1);
        cr_expect_eq(sched_thread_is(s.pid, s.tid, a.identity), 1);
        cr_expect_eq(sched_thread_is(s.pid, s.tid, st), 1);
        if (a.tidfd >= 0) {
                SchedTarget m = SCHED_TARGET_NULL;

                cr_expect(a.identity & SCHED_IDENTITY_PIDFS);
                cr_expect_eq(sched_target_is(&a, a.identity + 1), 0);
                cr_assert_eq(sched_target_pin(s.pid, s.pid, &m), 0);
                cr_expect_neq(m.identity, a.identity, "the main thread is another thread");
                sched_target_done(&m);
        }
        cr_expect_eq(sched_thread_is(s.pid, INT32_MAX, a.identity), 0, "no such thread");
        sched_target_done(&a);
        sched_target_done(&b);
        sched_target_done(&p);
        sleeper_stop(&s);
        cr_expect_eq(sched_thread_is(s.tid, s.tid, st), 0, "a thread that ended");
}

/* pin reads PF_KTHREAD along with the start time: kthreadd (pid 2) is a kernel thread, we are not. */
Test(sched, pin_knows_kernel_threads) {
        SchedTarget t = SCHED_TARGET_NULL;

        cr_assert_eq(sched_target_pin(getpid(), getpid(), &t), 0);
        cr_expect(!t.kernel_thread);
        sched_target_done(&t);
        if (sched_target_pin(2, 2, &t) < 0)
                cr_skip_test("cannot pin pid 2 (kthreadd) here: %m");
        cr_expect(t.kernel_thread, "pid 2 is kthreadd, a kernel thread");
        sched_target_done(&t);
        cr_assert_eq(sched_target_pin_via_proc(2, 2, &t), 0);
        cr_expect(t.kernel_thread, "pid 2 through /proc");
        sched_target_done(&t);
}

/* ---- headroom probe ----
 *
 * How much deadline bandwidth the kernel still admits, measured with sleeping helper processes: a
 * DL -> DL change is admitted iff total - old + new fits, so raising a helper by binary search finds
 * what is free plus what it holds itself. One thread can hold at most one CPU, so a helper admitted
 * at a full CPU keeps it and the next one probes the rest; the free bandwidth is then what all the
 * helpers hold together. Afterwards they are lowered to PROBE_MIN again (a DL -> DL decrease is
 * taken off the kernel's total at once).
 *
 * The helpers live for the whole test: they are not started and killed per probe, because a task
 * that exits gives its bandwidth back only at its 0-lag time, and a probe right after would see
 * less (measured: 0 free). Nor are they ever parked at 1024 ns / 4.19 s: a sleeping task changed
 * DL -> DL keeps its current budget instance, so a parked-then-raised helper can wake with 1024 ns
 * left and be throttled for 4.19 s (measured too). */

#define PROBE_PERIOD (100 * MS)
#define PROBE_MIN (100 * US)                /* what a helper holds between probes */
#define PROBE_RESOLUTION (5 * US)           /* 0.005% of a CPU */
#define PROBE_TOLERANCE (100 * US)          /* 0.1% of a CPU; the leak looked for is 1% */
#define PROBE_HELPERS_MAX 8

typedef struct Probe {
        Sleeper h[PROBE_HELPERS_MAX];
        size_t n;
} Probe;

static int dl_set(pid_t tid, uint64_t runtime, uint64_t period) {
        SchedAttr a = {
                .size = sizeof(a),
                .sched_policy = SCHED_DEADLINE,
                .sched_flags = SCHED_FLAG_RESET_ON_FORK,
                .sched_runtime = runtime,
                .sched_deadline = period,
                .sched_period = period,
        };
        return sched_setattr_raw(tid, &a, 0);
}

/* One helper per CPU, plus one: enough to hold every CPU's worth. */
static void probe_start(Probe *p) {
        long ncpus = sysconf(_SC_NPROCESSORS_ONLN);

        p->n = ncpus < 1 ? 2 : (size_t) ncpus + 1;
        if (p->n > PROBE_HELPERS_MAX)
                p->n = PROBE_HELPERS_MAX;
        for (size_t i = 0; i < p->n; i++) {
                int r;

                p->h[i] = sleeper_start(false, false);
                r = dl_set(p->h[i].pid, PROBE_MIN, PROBE_PERIOD);
                if (r == -EBUSY)
                        cr_skip_test("no deadline headroom left on this machine for the probe");
                cr_assert_eq(r, 0, "probe helper: %s", strerror(-r));
        }
}

static void probe_stop(Probe *p) {
        for (size_t i = 0; i < p->n; i++)
                sleeper_stop(&p->h[i]);
        p->n = 0;
}

/* Free bandwidth in runtime-per-PROBE_PERIOD units (PROBE_PERIOD = one CPU). */
static uint64_t headroom(Probe *p) {
        uint64_t total = 0;
        size_t i;

        for (i = 0; i < p->n; i++) {
                uint64_t lo = PROBE_MIN, hi = PROBE_PERIOD;
                int r;

                if (dl_set(p->h[i].pid, PROBE_PERIOD, PROBE_PERIOD) == 0) {
                        total += PROBE_PERIOD; /* a whole CPU: keep it, the next helper probes on */
                        continue;
                }
                while (hi - lo > PROBE_RESOLUTION) {
                        uint64_t mid = lo + (hi - lo) / 2;

                        r = dl_set(p->h[i].pid, mid, PROBE_PERIOD);
                        if (r == 0)
                                lo = mid;
                        else {
                                cr_assert_eq(r, -EBUSY, "probe: %s", strerror(-r));
                                hi = mid;
                        }
                }
                total += lo;
                break;
        }
        cr_assert_lt(i, p->n, "every helper got a whole CPU: more free than CPUs?");
        /* Helpers after the one that filled the pool still hold PROBE_MIN: also free bandwidth. */
        total += (p->n - i - 1) * PROBE_MIN;

        for (size_t j = 0; j <= i; j++)
                cr_assert_eq(dl_set(p->h[j].pid, PROBE_MIN, PROBE_PERIOD), 0);
        return total;
}

static uint64_t absdiff(uint64_t a, uint64_t b) {
        return a > b ? a - b : b - a;
}

/* Two probes in a row that agree, or skip: the pool is shared with the whole machine. */
static uint64_t stable_headroom(Probe *p) {
        uint64_t prev = headroom(p);

        for (int i = 0; i < 5; i++) {
                uint64_t cur = headroom(p);

                if (absdiff(cur, prev) <= PROBE_TOLERANCE)
                        return cur;
                prev = cur;
                usleep(20000);
        }
        cr_skip_test("the deadline bandwidth pool keeps changing: another test is admitting threads");
        return 0;
}

Test(sched, release_leaves_no_bandwidth_behind) {
        SchedTarget t = SCHED_TARGET_NULL;
        uint64_t before, during, after;
        Probe probe = {};
        Sleeper s;

        need_root();

        /* The thread under test sleeps the whole time: the case where a direct switch to SCHED_OTHER
         * was seen to leave its bandwidth charged for good. Both ways: sched_release reads the
         * thread first, sched_release_known goes by what edfd gave it (the path of Release). */
        s = sleeper_start(false, false);
        cr_assert_eq(sched_target_pin(s.pid, s.pid, &t), 0);
        probe_start(&probe);

        before = stable_headroom(&probe);
        if (before < 2 * MS)
                cr_skip_test("no deadline headroom left on this machine");

        for (int known = 0; known < 2; known++) {
                apply_or_skip(&t, 1 * MS, 100 * MS, 100 * MS);
                during = stable_headroom(&probe);
                /* The probe must see the reservation, or the comparison below proves nothing. */
                cr_expect(absdiff(before - during, 1 * MS) <= PROBE_TOLERANCE,
                          "headroom %" PRIu64 " ns/100ms before, %" PRIu64 " with 1ms/100ms held", before, during);

                SchedInfo had = { .policy = SCHED_DEADLINE, .flags = SCHED_FLAG_RESET_ON_FORK, .runtime = 1 * MS,
                                  .deadline = 100 * MS, .period = 100 * MS };
                cr_assert_eq(known ? sched_release_known(&t, &had) : sched_release(&t), 0);
                after = stable_headroom(&probe);
                cr_expect(absdiff(after, before) <= PROBE_TOLERANCE,
                          "%s: headroom %" PRIu64 " ns/100ms before, %" PRIu64 " after release: %" PRId64
                          " ns/100ms left charged",
                          known ? "sched_release_known" : "sched_release", before, after, (int64_t) (before - after));
        }

        probe_stop(&probe);
        sleeper_stop(&s);
        sched_target_done(&t);
}

/* Release goes by what edfd gave the thread, without reading it: a thread that has left
 * SCHED_DEADLINE by itself since (to SCHED_OTHER with a narrowed affinity, so that even the parking
 * step is refused, or to SCHED_FIFO) still ends as SCHED_OTHER, nice 0, and the release succeeds. */
Test(sched, release_known_of_a_thread_that_changed_itself) {
        SchedInfo had = { .policy = SCHED_DEADLINE, .flags = SCHED_FLAG_RESET_ON_FORK, .runtime = 1 * MS,
                          .deadline = 100 * MS, .period = 100 * MS };
        SchedTarget t = SCHED_TARGET_NULL;
        SchedInfo info;
        Sleeper s;

        need_root();
        for (int way = 0; way < 2; way++) {
                s = sleeper_start(false, way == 0 && sysconf(_SC_NPROCESSORS_ONLN) >= 2);
                cr_assert_eq(sched_target_pin(s.pid, s.pid, &t), 0);
                if (way == 1) {
                        struct sched_param sp = { .sched_priority = 1 };
                        cr_assert_eq(sched_setscheduler(s.pid, SCHED_FIFO, &sp), 0, "SCHED_FIFO: %m");
                }
                cr_expect_eq(sched_release_known(&t, &had), 0, "way %d", way);
                cr_assert_eq(sched_get(s.pid, &info), 0);
                cr_expect_eq(info.policy, SCHED_OTHER, "way %d: policy %u after release", way, info.policy);
                cr_expect_eq(info.nice, 0);
                cr_expect_eq(info.flags & SCHED_FLAG_RESET_ON_FORK, 0);
                sleeper_stop(&s);
                cr_expect_eq(sched_release_known(&t, &had), -ESRCH, "way %d: a reaped thread is not touched", way);
                cr_expect_eq(sched_release_known(&t, NULL), -EINVAL);
                sched_target_done(&t);
        }
        cr_expect_eq(sched_release_known(&t, &had), -EINVAL, "an unpinned target");
}

/* The kernel accepts SCHED_DEADLINE for a process that has ended and is not reaped yet (a zombie),
 * and keeps that bandwidth for good: the task never runs again to give it back (measured with
 * debugfs on 6.18: SCHED_OTHER afterwards, or reaping, does not help; parking does). A donor that
 * ends just as edfd gives it its runtime back is changed that way: it held deadline parameters
 * before, so putting those back after the failed check would charge them again. The zombie is
 * parked instead. The _known variant skips the check before the change, as a donor that ends
 * between the check and the change would. */
Test(sched, raise_of_a_zombie_leaves_no_bandwidth_behind) {
        SchedInfo had = { .policy = SCHED_DEADLINE, .flags = SCHED_FLAG_RESET_ON_FORK, .runtime = 10 * MS,
                          .deadline = 100 * MS, .period = 100 * MS };
        SchedTarget t = SCHED_TARGET_NULL;
        uint64_t before, after;
        Probe probe = {};
        pid_t p;
        int release, r;

        need_root();
        probe_start(&probe);
        before = stable_headroom(&probe);
        if (before < 30 * MS)
                cr_skip_test("no deadline headroom left on this machine");

        p = waiting_child(&release);
        cr_assert_eq(sched_target_pin(p, p, &t), 0);
        cr_assert_eq(dl_set(p, had.runtime, had.period), 0);
        close(release);
        cr_assert_eq(waitid(P_PID, p, NULL, WEXITED | WNOWAIT), 0); /* a zombie now, that ended as a deadline task */
        usleep(2 * had.period / US); /* past its 0-lag time: the kernel has taken its bandwidth back */

        r = sched_apply_deadline_known(&t, &had, 20 * MS, 100 * MS, 100 * MS, 0);
        cr_expect_eq(r, -ESRCH, "raising a zombie: %d (%s)", r, strerror(-r));
        after = stable_headroom(&probe);
        cr_expect(absdiff(after, before) <= PROBE_TOLERANCE,
                  "headroom %" PRIu64 " ns/100ms before, %" PRIu64 " after raising a zombie to 20ms/100ms: %" PRId64
                  " ns/100ms kept by the kernel",
                  before, after, (int64_t) (before - after));

        cr_assert_eq(waitpid(p, NULL, 0), p);
        probe_stop(&probe);
        sched_target_done(&t);
}
