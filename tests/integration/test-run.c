/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* edfctl run (issue 38): programs that call sched_setattr(SCHED_DEADLINE) themselves, run by nobody
 * under edfctl's seccomp supervisor against a real edfd on a private bus (the harness's). The
 * program is run-caller (its commands in run-caller.c), or a real one: chrt -d, rt-app,
 * cyclicdeadline. Every check compares three views: what the program's call returned, edfd's books
 * (ListReservations), and the kernel's (sched_getattr, /proc/PID/sched).
 *
 * Environment (set by meson): EDFCTL_BINARY, RUN_CALLER, plus the harness's. */

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "harness.h"

TestSuite(run, .fini = harness_fini, .timeout = 300);

#define MS HARNESS_MSEC
#define REPLY_TIMEOUT_MS 30000

typedef struct Run {
        Harness *h;
        pid_t pid;            /* edfctl run, as nobody */
        int in, out;          /* the program's stdin and stdout (-1 when not piped) */
        char buf[4096];       /* what was read from out and not yet returned */
        size_t n_buf;
        char line[4096];      /* the last reply */
        char err_path[256];   /* edfctl's and the program's stderr */
        pid_t caller, caller_tid;
        int status;           /* edfctl's wait status once reaped */
        bool reaped;
} Run;

static const char *binary(const char *env) {
        const char *p = getenv(env);
        cr_assert(p && *p, "%s is not set (meson sets it)", env);
        return p;
}

/* The stderr of edfctl and its program so far, for failure messages. */
static const char *run_log(Run *r) {
        static char log[8192];
        int fd = open(r->err_path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read(fd, log, sizeof log - 1);
        if (fd >= 0)
                close(fd);
        log[n > 0 ? n : 0] = '\0';
        return log;
}

/* Whether run_start() gives the program a 1 MiB stack limit (RLIMIT_STACK, glibc's default thread
 * stack size): cyclicdeadline calls mlockall(MCL_FUTURE), and an 8 MiB thread stack does not fit in
 * nobody's 8 MiB RLIMIT_MEMLOCK here (which root cannot raise on this machine: no
 * CAP_SYS_RESOURCE); its pthread_create() then fails, unchecked, and it waits for its threads
 * forever. */
static bool run_small_stack;

/* Start edfctl run OPTS... -- ARGV... as nobody (argv NULL: run-caller). piped: the program's stdin
 * and stdout are pipes to the test (run-caller's commands); else stdin is /dev/null and stdout goes
 * where stderr goes. */
static Run *run_start(Harness *h, const char *const opts[], const char *const argv[], bool piped) {
        const char *caller[] = { binary("RUN_CALLER"), NULL };
        const char *args[64];
        int in[2] = { -1, -1 }, out[2] = { -1, -1 }, errfd;
        size_t k = 0;
        pid_t parent = getpid();
        Run *r = calloc(1, sizeof *r);
        static unsigned seq;

        cr_assert(r);
        r->h = h;
        r->in = r->out = -1;
        snprintf(r->err_path, sizeof r->err_path, "%s/run-%u.err", h->dir, seq++);
        errfd = open(r->err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        cr_assert_geq(errfd, 0, "%s: %s", r->err_path, strerror(errno));
        if (!argv)
                argv = caller;
        if (piped)
                cr_assert(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0);
        args[k++] = binary("EDFCTL_BINARY");
        args[k++] = "run";
        for (size_t i = 0; opts && opts[i]; i++)
                args[k++] = opts[i];
        args[k++] = "--";
        for (size_t i = 0; argv[i] && k < ELEMENTSOF(args) - 1; i++)
                args[k++] = argv[i];
        args[k] = NULL;

        r->pid = fork();
        cr_assert_geq(r->pid, 0);
        if (r->pid == 0) {
                int devnull = open("/dev/null", O_RDONLY);
                if (dup2(in[0] >= 0 ? in[0] : devnull, 0) < 0 || (out[1] >= 0 && dup2(out[1], 1) < 0) ||
                    (out[1] < 0 && dup2(errfd, 1) < 0) || dup2(errfd, 2) < 0)
                        _exit(110);
                (void) close_range(3, ~0U, 0);
                if (setenv("DBUS_SYSTEM_BUS_ADDRESS", h->bus_address, 1) < 0 || chdir("/") < 0)
                        _exit(111);
                if (run_small_stack) {
                        struct rlimit rl;
                        if (getrlimit(RLIMIT_STACK, &rl) < 0)
                                _exit(113);
                        rl.rlim_cur = 1024 * 1024;
                        if (setrlimit(RLIMIT_STACK, &rl) < 0)
                                _exit(113);
                }
                if (agent_drop_to(AGENT_NOBODY) < 0)
                        _exit(112);
                agent_die_with_parent(parent);
                execv(args[0], (char **) args);
                _exit(127);
        }
        close(errfd);
        if (in[0] >= 0) {
                close(in[0]);
                close(out[1]);
                r->in = in[1];
                r->out = out[0];
        }
        return r;
}

/* The next line the program wrote, without its newline; asserts it comes within the timeout. */
static const char *run_read_line(Run *r) {
        for (;;) {
                char *nl = memchr(r->buf, '\n', r->n_buf);
                if (nl) {
                        size_t len = (size_t) (nl - r->buf);
                        memcpy(r->line, r->buf, len);
                        r->line[len] = '\0';
                        memmove(r->buf, nl + 1, r->n_buf - len - 1);
                        r->n_buf -= len + 1;
                        return r->line;
                }
                struct pollfd p = { .fd = r->out, .events = POLLIN };
                int k = poll(&p, 1, REPLY_TIMEOUT_MS);
                cr_assert_gt(k, 0, "the program did not answer within %d ms; its and edfctl's stderr:\n%s",
                             REPLY_TIMEOUT_MS, run_log(r));
                ssize_t n = read(r->out, r->buf + r->n_buf, sizeof r->buf - 1 - r->n_buf);
                cr_assert_gt(n, 0, "the program ended (stdout closed); stderr:\n%s", run_log(r));
                r->n_buf += (size_t) n;
        }
}

/* Send one command, return its reply (after "= "). */
_printf_(2, 3) static const char *run_cmd(Run *r, const char *fmt, ...) {
        char cmd[256];
        va_list ap;
        int len;
        const char *reply;

        va_start(ap, fmt);
        len = vsnprintf(cmd, sizeof cmd - 1, fmt, ap);
        va_end(ap);
        cmd[len++] = '\n';
        cr_assert_eq(write(r->in, cmd, (size_t) len), len);
        reply = run_read_line(r);
        cr_assert(strncmp(reply, "= ", 2) == 0, "command %.*s: reply \"%s\"; stderr:\n%s", len - 1, cmd, reply,
                  run_log(r));
        return reply + 2;
}

/* The program's errno for a command. */
_printf_(2, 3) static int run_errno(Run *r, const char *fmt, ...) {
        char cmd[256];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(cmd, sizeof cmd, fmt, ap);
        va_end(ap);
        return atoi(run_cmd(r, "%s", cmd));
}

/* Wait for run-caller's first line. */
static void run_ready(Run *r) {
        int pid, tid;
        const char *l = run_read_line(r);

        cr_assert(sscanf(l, "ready %d %d", &pid, &tid) == 2, "first line \"%s\"; stderr:\n%s", l, run_log(r));
        r->caller = pid;
        r->caller_tid = tid;
}

static Run *run_caller(Harness *h, const char *const opts[]) {
        Run *r = run_start(h, opts, NULL, true);

        run_ready(r);
        return r;
}

/* Wait for edfctl run to end (at most 30 s, then SIGKILL); its wait status. */
static int run_wait(Run *r) {
        for (unsigned i = 0; !r->reaped && i < 3000; i++) {
                pid_t w = waitpid(r->pid, &r->status, WNOHANG);
                if (w == r->pid)
                        r->reaped = true;
                else
                        harness_usleep(10000);
        }
        if (!r->reaped) {
                (void) kill(r->pid, SIGKILL);
                (void) waitpid(r->pid, &r->status, 0);
                r->reaped = true;
                cr_assert_fail("edfctl run did not end; stderr:\n%s", run_log(r));
        }
        return r->status;
}

static void run_free(Run *r) {
        if (!r)
                return;
        if (!r->reaped) {
                (void) kill(r->pid, SIGKILL);
                (void) waitpid(r->pid, &r->status, 0);
        }
        if (r->in >= 0)
                close(r->in);
        if (r->out >= 0)
                close(r->out);
        free(r);
}

/* quit, then edfctl run ends with the program's status 0. */
static void run_quit(Run *r) {
        char q[] = "quit\n";
        int st;

        cr_assert_eq(write(r->in, q, sizeof q - 1), (ssize_t) sizeof q - 1);
        st = run_wait(r);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "edfctl run ended with status 0x%x; stderr:\n%s", st,
                  run_log(r));
}

/* The reservation of thread tid in edfd's books: true and *ret filled (group not kept), or false. */
static bool reservation_of(Harness *h, pid_t tid, HarnessReservation *ret) {
        HarnessReservation *res = NULL;
        size_t n = 0;
        bool found = false;

        cr_assert_eq(harness_list_reservations(h, &res, &n), 0);
        for (size_t i = 0; i < n; i++)
                if (res[i].tid == (uint32_t) tid) {
                        *ret = res[i];
                        ret->group = NULL;
                        found = true;
                }
        harness_reservations_free(res, n);
        return found;
}

static size_t n_reservations(Harness *h) {
        HarnessReservation *res = NULL;
        size_t n = 0;

        cr_assert_eq(harness_list_reservations(h, &res, &n), 0);
        harness_reservations_free(res, n);
        return n;
}

/* Bounded wait until edfd holds no reservation (exits reach it through the proc connector). */
static void wait_no_reservations(Harness *h, const char *what) {
        for (unsigned i = 0; i < 500 && n_reservations(h) > 0; i++)
                harness_usleep(10000);
        harness_assert_no_reservations(h, what);
}

/* The kernel's view and edfd's agree: tid is SCHED_DEADLINE with what edfd holds for it, or
 * SCHED_OTHER and edfd holds nothing. */
static void assert_books_follow_kernel(Harness *h, pid_t tid, const char *what) {
        HarnessReservation v;
        SchedAttr a;

        cr_assert_eq(harness_sched_getattr(tid, &a), 0);
        if (reservation_of(h, tid, &v)) {
                cr_assert_eq(a.sched_policy, SCHED_DEADLINE, "%s: edfd holds reservation %" PRIu64 " for %d, which is "
                             "policy %u", what, v.id, (int) tid, a.sched_policy);
                cr_assert(a.sched_runtime == v.runtime && a.sched_deadline == v.deadline && a.sched_period == v.period,
                          "%s: the kernel has %" PRIu64 "/%" PRIu64 "/%" PRIu64 ", edfd %" PRIu64 "/%" PRIu64 "/%" PRIu64,
                          what, a.sched_runtime, a.sched_deadline, a.sched_period, v.runtime, v.deadline, v.period);
                cr_assert_eq(v.uid, (uint32_t) AGENT_NOBODY, "%s: the reservation is nobody's", what);
        } else
                cr_assert_eq(a.sched_policy, SCHED_OTHER, "%s: thread %d is policy %u, which edfd does not hold", what,
                             (int) tid, a.sched_policy);
}

static unsigned count_fds(pid_t pid) {
        char path[64];
        unsigned n = 0;
        DIR *d;

        snprintf(path, sizeof path, "/proc/%d/fd", (int) pid);
        d = opendir(path);
        cr_assert(d, "%s: %s", path, strerror(errno));
        for (struct dirent *e; (e = readdir(d));)
                n += e->d_name[0] != '.';
        closedir(d);
        return n;
}

static long vm_rss_kib(pid_t pid) {
        char path[64], line[256];
        long kib = -1;
        FILE *f;

        snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        cr_assert(f);
        while (fgets(line, sizeof line, f))
                if (sscanf(line, "VmRSS: %ld", &kib) == 1)
                        break;
        fclose(f);
        return kib;
}

/* --- the agent's decisions, one by one --- */

Test(run, admits_updates_and_releases_as_the_program_asks) {
        Harness *h = harness_start_or_skip("run.yaml");
        HarnessReservation v, v2;
        Run *r = run_caller(h, NULL);
        pid_t t = r->caller_tid;
        char want[128];
        int e;

        /* under the filter, with no_new_privs */
        {
                char path[64], line[256];
                bool nnp = false;
                snprintf(path, sizeof path, "/proc/%d/status", (int) r->caller);
                FILE *f = fopen(path, "re");
                cr_assert(f);
                while (fgets(line, sizeof line, f))
                        nnp |= strcmp(line, "NoNewPrivs:\t1\n") == 0;
                fclose(f);
                cr_assert(nnp, "the program runs with no_new_privs");
        }

        e = run_errno(r, "set 0 %" PRIu64 " %" PRIu64 " %" PRIu64 " 0", 1 * MS, 10 * MS, 10 * MS);
        cr_assert_eq(e, 0, "sched_setattr(SCHED_DEADLINE 1ms/10ms) under edfctl run: errno %d; stderr:\n%s", e,
                     run_log(r));
        cr_assert(reservation_of(h, t, &v), "edfd holds the thread");
        cr_assert(v.pid == (uint32_t) r->caller && v.runtime == 1 * MS && v.deadline == 10 * MS && v.period == 10 * MS,
                  "edfd's reservation is the program's own times");
        harness_assert_dl(t, 1 * MS, 10 * MS, 10 * MS, 0);
        snprintf(want, sizeof want, "0 6 %" PRIu64 " %" PRIu64 " %" PRIu64 " 1", 1 * MS, 10 * MS, 10 * MS);
        cr_assert_str_eq(run_cmd(r, "get"), want, "sched_getattr in the program shows what edfd applied");
        assert_books_follow_kernel(h, t, "admitted");

        /* DL -> DL: the same reservation, new times */
        e = run_errno(r, "set 0 %" PRIu64 " %" PRIu64 " %" PRIu64 " 0", 2 * MS, 8 * MS, 20 * MS);
        cr_assert_eq(e, 0, "a change of times: errno %d; stderr:\n%s", e, run_log(r));
        cr_assert(reservation_of(h, t, &v2) && v2.id == v.id && v2.runtime == 2 * MS && v2.deadline == 8 * MS &&
                          v2.period == 20 * MS,
                  "edfd updated the same reservation");
        harness_assert_dl(t, 2 * MS, 8 * MS, 20 * MS, 0);

        /* bad times: EINVAL, nothing changes */
        HarnessBooks before = harness_books_take(h);
        cr_assert_eq(run_errno(r, "set 0 %" PRIu64 " %" PRIu64 " %" PRIu64 " 0", 3 * MS, 2 * MS, 20 * MS), EINVAL,
                     "runtime above the deadline is EINVAL");
        cr_assert_eq(run_errno(r, "set 0 %" PRIu64 " %" PRIu64 " %" PRIu64 " 0", 16 * MS, 20 * MS, 20 * MS), EBUSY,
                     "80%% of a CPU is over nobody's 70%%: EBUSY, as the kernel says when it has no room");
        harness_books_assert_same(h, &before, "refused changes");
        harness_books_free(&before);
        harness_assert_dl(t, 2 * MS, 8 * MS, 20 * MS, 0);

        /* out of SCHED_DEADLINE by sched_setscheduler: edfd releases, the kernel runs the call */
        cr_assert_eq(run_errno(r, "sched"), 0, "sched_setscheduler(SCHED_OTHER)");
        cr_assert(!reservation_of(h, t, &v), "released");
        harness_assert_other(t);

        /* and by sched_setattr, with the flags mapped */
        cr_assert_eq(run_errno(r, "set 0 %" PRIu64 " %" PRIu64 " %" PRIu64 " %u", 1 * MS, 10 * MS, 10 * MS,
                               SCHED_FLAG_DL_OVERRUN | SCHED_FLAG_RECLAIM),
                     0);
        cr_assert(reservation_of(h, t, &v) && (v.flags & 3) == 3, "RECLAIM and DL_OVERRUN asked of edfd (flags %" PRIu64 ")",
                  v.flags);
        harness_assert_dl(t, 1 * MS, 10 * MS, 10 * MS, SCHED_FLAG_RECLAIM | SCHED_FLAG_DL_OVERRUN);
        cr_assert_eq(run_errno(r, "other 0"), 0);
        cr_assert(!reservation_of(h, t, &v), "released");
        harness_assert_other(t);
        /* SCHED_OTHER again, while not SCHED_DEADLINE: the kernel's, nothing asked of edfd */
        cr_assert_eq(run_errno(r, "other 0"), 0);

        /* still held when the program ends: released at its exit */
        cr_assert_eq(run_errno(r, "set 0 %" PRIu64 " %" PRIu64 " %" PRIu64 " 0", 1 * MS, 10 * MS, 10 * MS), 0);
        run_quit(r);
        wait_no_reservations(h, "after the program ended");
        run_free(r);
        harness_stop(h);
}

Test(run, malformed_calls_get_the_kernels_answer) {
        Harness *h = harness_start_or_skip("run.yaml");
        Run *r = run_caller(h, NULL);
        char cmd[] = "bad\n";
        static const char *const want[] = { "7 56", "7 56", "22", "14", "22", "22", "22", "22" };
        HarnessBooks before = harness_books_take(h);

        cr_assert_eq(write(r->in, cmd, sizeof cmd - 1), (ssize_t) sizeof cmd - 1);
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                const char *l = run_read_line(r);
                cr_expect_str_eq(l + 2, want[i], "malformed call %zu: \"%s\", the kernel's answer is \"%s\" "
                                 "(E2BIG with the size written back, EINVAL, EFAULT)", i, l, want[i]);
        }
        harness_books_assert_same(h, &before, "malformed calls");
        harness_books_free(&before);
        harness_assert_other(r->caller_tid);
        run_quit(r);
        run_free(r);
        harness_stop(h);
}

/* --- hostile callers --- */

Test(run, a_struct_rewritten_during_the_call_is_read_once) {
        Harness *h = harness_start_or_skip("run.yaml");
        Run *r = run_caller(h, NULL);
        pid_t t = r->caller_tid;
        unsigned admitted = 0;

        for (unsigned i = 0; i < 200; i++) {
                HarnessReservation v;
                int e = run_errno(r, "rewrite %" PRIu64 " %" PRIu64 " %" PRIu64, 1 * MS, 2 * MS, 10 * MS);
                cr_assert(e == 0 || e == EPERM || e == EINVAL, "round %u: errno %d; stderr:\n%s", i, e, run_log(r));
                assert_books_follow_kernel(h, t, "after a rewritten call");
                if (reservation_of(h, t, &v)) {
                        admitted++;
                        cr_assert(v.runtime == 1 * MS || v.runtime == 2 * MS,
                                  "what edfd applied is a value the program wrote (%" PRIu64 ")", v.runtime);
                }
                cr_assert_eq(run_errno(r, "other 0"), 0);
                assert_books_follow_kernel(h, t, "after leaving");
        }
        cr_log_info("rewritten structs: %u of 200 calls admitted", admitted);
        run_quit(r);
        run_free(r);
        harness_stop(h);
}

Test(run, callers_that_exit_during_their_call) {
        Harness *h = harness_start_or_skip("run.yaml");
        Run *r = run_caller(h, NULL);
        unsigned fds;

        cr_assert_eq(run_errno(r, "set 0 %" PRIu64 " %" PRIu64 " %" PRIu64 " 0", 1 * MS, 10 * MS, 10 * MS), 0);
        cr_assert_eq(run_errno(r, "other 0"), 0);
        fds = count_fds(r->pid);
        cr_assert_str_eq(run_cmd(r, "exitmid 300 %" PRIu64 " %" PRIu64, 1 * MS, 10 * MS), "0 300");
        wait_no_reservations(h, "after 300 processes exited during their calls");
        cr_assert_eq(count_fds(r->pid), fds, "edfctl run's fds did not grow");
        /* and it still serves */
        cr_assert_eq(run_errno(r, "set 0 %" PRIu64 " %" PRIu64 " %" PRIu64 " 0", 1 * MS, 10 * MS, 10 * MS), 0);
        assert_books_follow_kernel(h, r->caller_tid, "after the storm");
        run_quit(r);
        wait_no_reservations(h, "at the end");
        run_free(r);
        harness_stop(h);
}

/* The program is killed while edfd decides on its call (edfd stopped with SIGSTOP meanwhile). */
Test(run, a_caller_killed_while_edfd_decides) {
        Harness *h = harness_start_or_skip("run.yaml");
        Run *r = run_caller(h, NULL);
        char cmd[128], path[64], sc[64] = "";
        int st;

        cr_assert_eq(kill(h->edfd_pid, SIGSTOP), 0);
        snprintf(cmd, sizeof cmd, "set 0 %" PRIu64 " %" PRIu64 " %" PRIu64 " 0\n", 1 * MS, 10 * MS, 10 * MS);
        cr_assert_eq(write(r->in, cmd, strlen(cmd)), (ssize_t) strlen(cmd));
        /* edfctl has the call and waits for edfd (sd-bus waits in ppoll, edfctl's own loop in poll) */
        snprintf(path, sizeof path, "/proc/%d/syscall", (int) r->pid);
        for (unsigned i = 0; i < 500; i++) {
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                ssize_t n = fd >= 0 ? read(fd, sc, sizeof sc - 1) : -1;
                if (fd >= 0)
                        close(fd);
                sc[n > 0 ? n : 0] = '\0';
                if (strncmp(sc, "271 ", 4) == 0)
                        break;
                harness_usleep(10000);
        }
        cr_log_info("edfctl's system call while edfd is stopped: %.20s", sc);
        cr_assert_eq(kill(r->caller, SIGKILL), 0);
        cr_assert_eq(kill(h->edfd_pid, SIGCONT), 0);
        st = run_wait(r);
        cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
                  "edfctl run ends as its program did (SIGKILL), status 0x%x; stderr:\n%s", st, run_log(r));
        wait_no_reservations(h, "after the caller was killed mid-call");
        run_free(r);
        harness_stop(h);
}

Test(run, forged_pids_are_decided_as_for_that_caller) {
        Harness *h = harness_start_or_skip("run.yaml");
        Run *r = run_caller(h, NULL);
        HarnessChild *root_child;
        HarnessReservation v;
        pid_t nobody, dead = harness_dead_pid();
        HarnessBooks before;

        cr_assert_eq(harness_spawn_child(h, 1, false, &root_child), 0);
        nobody = harness_nobody_sleeper();
        before = harness_books_take(h);
        cr_assert_eq(run_errno(r, "set %d %" PRIu64 " %" PRIu64 " %" PRIu64 " 0", (int) root_child->pid, 1 * MS, 10 * MS,
                               10 * MS),
                     EPERM, "root's process: EPERM, as the kernel says to nobody");
        harness_assert_other(root_child->pid);
        cr_assert_eq(run_errno(r, "set 1 %" PRIu64 " %" PRIu64 " %" PRIu64 " 0", 1 * MS, 10 * MS, 10 * MS), EPERM,
                     "pid 1: EPERM");
        cr_assert_eq(run_errno(r, "set %d %" PRIu64 " %" PRIu64 " %" PRIu64 " 0", (int) dead, 1 * MS, 10 * MS, 10 * MS),
                     ESRCH, "a pid nobody has: ESRCH");
        cr_assert_eq(run_errno(r, "set %d %" PRIu64 " %" PRIu64 " %" PRIu64 " 0", (int) dead, 3 * MS, 1 * MS, 10 * MS),
                     ESRCH, "the kernel looks the thread up before the times: ESRCH");
        cr_assert_eq(run_errno(r, "other %d", (int) root_child->pid), EPERM,
                     "root's process to SCHED_OTHER: the kernel's EPERM");
        harness_books_assert_same(h, &before, "forged pids");
        harness_books_free(&before);

        /* nobody's own process outside the tree: edfd's rules let nobody ask for it */
        cr_assert_eq(run_errno(r, "set %d %" PRIu64 " %" PRIu64 " %" PRIu64 " 0", (int) nobody, 1 * MS, 10 * MS, 10 * MS),
                     0, "nobody's other process is admitted; stderr:\n%s", run_log(r));
        cr_assert(reservation_of(h, nobody, &v) && v.pid == (uint32_t) nobody, "edfd holds it");
        harness_assert_dl(nobody, 1 * MS, 10 * MS, 10 * MS, 0);
        cr_assert_eq(run_errno(r, "other %d", (int) nobody), 0);
        cr_assert(!reservation_of(h, nobody, &v), "and released");
        harness_assert_other(nobody);

        run_quit(r);
        kill(nobody, SIGKILL);
        waitpid(nobody, NULL, 0);
        run_free(r);
        harness_stop(h);
}

Test(run, ten_thousand_traps) {
        Harness *h = harness_start_or_skip("run.yaml");
        Run *r = run_caller(h, NULL);
        unsigned fds, fds_after;
        long rss, rss_after;
        const char *l;
        struct timespec a, b;

        /* warm up: the bus connection, the first allocations */
        cr_assert_str_eq(run_cmd(r, "loop 50 %" PRIu64 " %" PRIu64, 1 * MS, 100 * MS), "0 0 0");
        fds = count_fds(r->pid);
        rss = vm_rss_kib(r->pid);
        clock_gettime(CLOCK_MONOTONIC, &a);
        l = run_cmd(r, "loop 5000 %" PRIu64 " %" PRIu64, 1 * MS, 100 * MS);
        clock_gettime(CLOCK_MONOTONIC, &b);
        cr_assert_str_eq(l, "0 0 0", "10,000 trapped calls (5,000 admissions and releases), failures: %s; stderr:\n%s", l,
                         run_log(r));
        fds_after = count_fds(r->pid);
        rss_after = vm_rss_kib(r->pid);
        cr_log_info("10,000 traps in %.2f s (%.0f us per admission and release); edfctl run's fds %u -> %u, "
                    "VmRSS %ld -> %ld KiB",
                    (double) (b.tv_sec - a.tv_sec) + (double) (b.tv_nsec - a.tv_nsec) / 1e9,
                    ((double) (b.tv_sec - a.tv_sec) * 1e6 + (double) (b.tv_nsec - a.tv_nsec) / 1e3) / 5000, fds, fds_after,
                    rss, rss_after);
        cr_assert_eq(fds_after, fds, "no fd growth");
#if defined(__SANITIZE_ADDRESS__)
        /* AddressSanitizer keeps freed memory in quarantine (up to 256 MiB): VmRSS grows whatever the
         * program does; LeakSanitizer checks edfctl at its exit instead. */
        cr_log_info("VmRSS not checked under AddressSanitizer (+%ld KiB)", rss_after - rss);
#else
        cr_assert_lt(rss_after - rss, 1024, "VmRSS grew by %ld KiB over 10,000 traps", rss_after - rss);
#endif
        harness_assert_no_reservations(h, "after the loop");
        harness_assert_other(r->caller_tid);
        run_quit(r);
        run_free(r);
        harness_stop(h);
}

Test(run, without_edfd_the_kernel_answers) {
        Harness *h = harness_start_or_skip("run.yaml");
        Run *r = run_caller(h, NULL);
        const char *log;
        const char *first;

        cr_assert_geq(harness_kill_daemon(h, SIGTERM), 0);
        cr_assert_eq(run_errno(r, "set 0 %" PRIu64 " %" PRIu64 " %" PRIu64 " 0", 1 * MS, 10 * MS, 10 * MS), EPERM,
                     "no edfd: the kernel's own EPERM for nobody");
        cr_assert_eq(run_errno(r, "set 0 %" PRIu64 " %" PRIu64 " %" PRIu64 " 0", 1 * MS, 10 * MS, 10 * MS), EPERM);
        harness_assert_other(r->caller_tid);
        log = run_log(r);
        first = strstr(log, "edfd is not reachable");
        cr_assert(first, "edfctl says edfd is not reachable; stderr:\n%s", log);
        cr_assert(!strstr(first + 1, "edfd is not reachable"), "and says it once; stderr:\n%s", log);
        cr_assert_eq(harness_start_daemon(h), 0);
        cr_assert_eq(run_errno(r, "set 0 %" PRIu64 " %" PRIu64 " %" PRIu64 " 0", 1 * MS, 10 * MS, 10 * MS), 0,
                     "edfd back: admitted again; stderr:\n%s", run_log(r));
        harness_assert_dl(r->caller_tid, 1 * MS, 10 * MS, 10 * MS, 0);
        run_quit(r);
        wait_no_reservations(h, "at the end");
        run_free(r);
        harness_stop(h);
}

Test(run, margin_and_overhead_raise_the_runtime) {
        Harness *h = harness_start_or_skip("run.yaml");
        static const char *const opts[] = { "--margin", "10%", "--overhead", "50us", NULL };
        Run *r = run_caller(h, opts);

        cr_assert_eq(run_errno(r, "set 0 %" PRIu64 " %" PRIu64 " %" PRIu64 " 0", 1 * MS, 10 * MS, 10 * MS), 0);
        /* 1 ms + 10% + 50 us */
        harness_assert_dl(r->caller_tid, 1150000, 10 * MS, 10 * MS, 0);
        assert_books_follow_kernel(h, r->caller_tid, "raised");
        run_quit(r);
        run_free(r);
        harness_stop(h);
}

Test(run, a_group_the_user_may_not_use) {
        Harness *h = harness_start_or_skip("run.yaml");
        static const char *const opts[] = { "-g", "closed", NULL };
        Run *r = run_caller(h, opts);

        cr_assert_eq(run_errno(r, "set 0 %" PRIu64 " %" PRIu64 " %" PRIu64 " 0", 1 * MS, 10 * MS, 10 * MS), EPERM,
                     "root's group: EPERM");
        cr_assert(strstr(run_log(r), "permission denied"), "edfctl says edfd's reason; stderr:\n%s", run_log(r));
        harness_assert_no_reservations(h, "a group nobody may not use");
        run_quit(r);
        run_free(r);
        harness_stop(h);
}

/* --- real programs, unchanged, as nobody --- */

/* Whether name is an executable on PATH. */
static bool have_program(const char *name) {
        const char *path = getenv("PATH");
        char buf[4096];

        for (const char *p = path ?: "/usr/bin:/bin"; p && *p;) {
                size_t n = strcspn(p, ":");
                snprintf(buf, sizeof buf, "%.*s/%s", (int) n, p, name);
                if (access(buf, X_OK) == 0)
                        return true;
                p += n + (p[n] == ':');
        }
        return false;
}

/* The kernel's own view of thread tid in /proc/PID/task/TID/sched: its policy (-1 unreadable), and
 * whether it shows the deadline entity (dl.runtime). */
static int proc_sched_policy(pid_t pid, pid_t tid, bool *ret_dl_runtime) {
        char path[96], line[256];
        int policy = -1;
        FILE *f;

        snprintf(path, sizeof path, "/proc/%d/task/%d/sched", (int) pid, (int) tid);
        f = fopen(path, "re");
        *ret_dl_runtime = false;
        if (!f)
                return -1;
        while (fgets(line, sizeof line, f)) {
                if (strncmp(line, "policy ", 7) == 0)
                        policy = atoi(strchr(line, ':') + 1);
                if (strncmp(line, "dl.runtime ", 11) == 0)
                        *ret_dl_runtime = true;
        }
        fclose(f);
        return policy;
}

/* What `edfctl status` (as root, on the harness's bus) prints. */
static const char *edfctl_status(Harness *h) {
        static char out[16384];
        char cmd[1024];
        size_t n;
        FILE *p;

        snprintf(cmd, sizeof cmd, "DBUS_SYSTEM_BUS_ADDRESS='%s' '%s' status 2>&1", h->bus_address, binary("EDFCTL_BINARY"));
        p = popen(cmd, "r");
        cr_assert(p);
        n = fread(out, 1, sizeof out - 1, p);
        out[n] = '\0';
        pclose(p);
        return out;
}

/* A thread of pid that edfd holds, admitted within nobody's limits: the three views agree. */
static void assert_admitted_real(Harness *h, pid_t pid, pid_t tid, uint64_t runtime, uint64_t deadline, uint64_t period,
                                 const char *what) {
        HarnessReservation v;
        bool dl_runtime;
        char needle[64];
        const char *status;

        cr_assert(reservation_of(h, tid, &v), "%s: edfd holds thread %d", what, (int) tid);
        cr_assert(v.pid == (uint32_t) pid && v.uid == (uint32_t) AGENT_NOBODY && v.runtime == runtime &&
                          v.deadline == deadline && v.period == period,
                  "%s: edfd holds %d/%d uid %u %" PRIu64 "/%" PRIu64 "/%" PRIu64, what, (int) v.pid, (int) v.tid, v.uid,
                  v.runtime, v.deadline, v.period);
        harness_assert_dl(tid, runtime, deadline, period, 0);
        cr_assert_eq(proc_sched_policy(pid, tid, &dl_runtime), SCHED_DEADLINE, "%s: /proc sched says policy 6", what);
        cr_assert(dl_runtime, "%s: /proc sched shows dl.runtime", what);
        status = edfctl_status(h);
        snprintf(needle, sizeof needle, "tid %d ", (int) tid);
        cr_assert(strstr(status, needle), "%s: edfctl status shows thread %d:\n%s", what, (int) tid, status);
}

Test(run, chrt_deadline) {
        if (!have_program("chrt"))
                cr_skip_test("no chrt (util-linux)");
        Harness *h = harness_start_or_skip("run.yaml");
        const char *ok[] = { "chrt", "-d", "-T", "2000000", "-P", "10000000", "-D", "10000000", "0", binary("RUN_CALLER"), NULL };
        const char *big[] = { "chrt", "-d", "-T", "9000000", "-P", "10000000", "0", "true", NULL };
        Run *r;
        int st;

        /* chrt sets SCHED_DEADLINE on itself, then executes run-caller: the same thread */
        r = run_start(h, NULL, ok, true);
        run_ready(r);
        assert_admitted_real(h, r->caller, r->caller_tid, 2 * MS, 10 * MS, 10 * MS, "chrt -d 2ms/10ms");
        run_quit(r);
        wait_no_reservations(h, "after chrt's program ended");
        run_free(r);

        /* 90% of a CPU is over nobody's 70%: chrt reports the kernel's EBUSY in its own words */
        r = run_start(h, NULL, big, false);
        st = run_wait(r);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0, "chrt over the limit fails (status 0x%x)", st);
        cr_assert(strstr(run_log(r), "Device or resource busy"), "chrt says EBUSY; its output:\n%s", run_log(r));
        harness_assert_no_reservations(h, "chrt over the limit");
        run_free(r);
        harness_stop(h);
}

/* Bounded wait until edfd holds at least n reservations; the first in *ret. */
static bool wait_reservations(Harness *h, size_t n, HarnessReservation *ret) {
        for (unsigned i = 0; i < 1000; i++) {
                HarnessReservation *res = NULL;
                size_t k = 0;
                cr_assert_eq(harness_list_reservations(h, &res, &k), 0);
                if (k >= n) {
                        *ret = res[0];
                        ret->group = NULL;
                        harness_reservations_free(res, k);
                        return true;
                }
                harness_reservations_free(res, k);
                harness_usleep(10000);
        }
        return false;
}

Test(run, cyclicdeadline) {
        if (!have_program("cyclicdeadline"))
                cr_skip_test("no cyclicdeadline (Debian's rt-tests; tools/setup-deps installs it)");
        Harness *h = harness_start_or_skip("run.yaml");
        /* one thread, 60% of a 10 ms deadline (its fixed share), the period left 0 (= the deadline) */
        const char *one[] = { "cyclicdeadline", "-t", "1", "-i", "10000", "-D", "3", "-q", NULL };
        /* two such threads: 120%, over nobody's 70% */
        const char *two[] = { "cyclicdeadline", "-t", "2", "-i", "10000", "-s", "0", "-D", "2", "-q", NULL };
        HarnessReservation v;
        Run *r;
        int st;

        run_small_stack = true;
        r = run_start(h, NULL, one, false);
        cr_assert(wait_reservations(h, 1, &v), "cyclicdeadline's thread is admitted; its output:\n%s", run_log(r));
        assert_admitted_real(h, (pid_t) v.pid, (pid_t) v.tid, 6 * MS, 10 * MS, 10 * MS, "cyclicdeadline -t 1 -i 10000");
        st = run_wait(r);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "cyclicdeadline ran its 3 s (status 0x%x); output:\n%s", st,
                  run_log(r));
        wait_no_reservations(h, "after cyclicdeadline ended");
        run_free(r);

        r = run_start(h, NULL, two, false);
        (void) run_wait(r);
        cr_assert(strstr(run_log(r), "Device or resource busy"),
                  "the thread over the limit reports EBUSY; cyclicdeadline's output:\n%s", run_log(r));
        wait_no_reservations(h, "after cyclicdeadline over the limit");
        run_free(r);
        run_small_stack = false;
        harness_stop(h);
}

/* An rt-app configuration from its tutorial (/usr/share/doc/rt-app/tutorial.txt): each thread a
 * periodic load (run, then a timer) under SCHED_DEADLINE by dl-runtime, dl-period and dl-deadline
 * (us); calibration given as ns per loop (no calibration run), logs into dir. */
static char *rt_app_config(const char *dir, const char *name, const char *threads) {
        char *path = NULL;
        FILE *f;

        cr_assert(asprintf(&path, "%s/%s.json", dir, name) > 0);
        f = fopen(path, "we");
        cr_assert(f, "%s: %s", path, strerror(errno));
        fprintf(f,
                "{\n"
                "\t\"tasks\" : {\n%s\t},\n"
                "\t\"global\" : {\n"
                "\t\t\"duration\" : 3,\n"
                "\t\t\"calibration\" : 100,\n"
                "\t\t\"default_policy\" : \"SCHED_OTHER\",\n"
                "\t\t\"pi_enabled\" : false,\n"
                "\t\t\"lock_pages\" : false,\n"
                "\t\t\"logdir\" : \"%s\",\n"
                "\t\t\"log_basename\" : \"%s\",\n"
                "\t\t\"ftrace\" : false,\n"
                "\t\t\"gnuplot\" : false\n"
                "\t}\n"
                "}\n",
                threads, dir, name);
        cr_assert_eq(fclose(f), 0);
        cr_assert_eq(chmod(path, 0644), 0);
        return path;
}

Test(run, rt_app) {
        if (!have_program("rt-app"))
                cr_skip_test("no rt-app (Debian's rt-app; tools/setup-deps installs it)");
        Harness *h = harness_start_or_skip("run.yaml");
        char dir[] = "/tmp/test-run-rt-app.XXXXXX";
        _cleanup_free_ char *ok = NULL, *big = NULL;
        HarnessReservation *res = NULL;
        size_t n = 0;
        HarnessReservation v;
        Run *r;
        int st;

        cr_assert(mkdtemp(dir));
        cr_assert_eq(chmod(dir, 0777), 0); /* rt-app, as nobody, writes its logs here */
        /* 10% and 10%: within nobody's 70% in at most 4 reservations */
        ok = rt_app_config(dir, "two",
                           "\t\t\"audio\" : {\n"
                           "\t\t\t\"policy\" : \"SCHED_DEADLINE\",\n"
                           "\t\t\t\"dl-runtime\" : 1000, \"dl-period\" : 10000, \"dl-deadline\" : 10000,\n"
                           "\t\t\t\"run\" : 300, \"timer\" : { \"ref\" : \"unique\", \"period\" : 10000 }\n"
                           "\t\t},\n"
                           "\t\t\"video\" : {\n"
                           "\t\t\t\"policy\" : \"SCHED_DEADLINE\",\n"
                           "\t\t\t\"dl-runtime\" : 2000, \"dl-period\" : 20000, \"dl-deadline\" : 15000,\n"
                           "\t\t\t\"run\" : 500, \"timer\" : { \"ref\" : \"unique\", \"period\" : 20000 }\n"
                           "\t\t}\n");
        /* 80%: over nobody's 70% (rt-app 1.0 sends a deadline of 0 when dl-deadline is left out,
         * which the kernel refuses with EINVAL, as edfctl run does) */
        big = rt_app_config(dir, "big",
                            "\t\t\"hog\" : {\n"
                            "\t\t\t\"policy\" : \"SCHED_DEADLINE\",\n"
                            "\t\t\t\"dl-runtime\" : 8000, \"dl-period\" : 10000, \"dl-deadline\" : 10000,\n"
                            "\t\t\t\"run\" : 1000, \"timer\" : { \"ref\" : \"unique\", \"period\" : 10000 }\n"
                            "\t\t}\n");

        const char *argv_ok[] = { "rt-app", ok, NULL };
        r = run_start(h, NULL, argv_ok, false);
        cr_assert(wait_reservations(h, 2, &v), "rt-app's two threads are admitted; its output:\n%s", run_log(r));
        cr_assert_eq(harness_list_reservations(h, &res, &n), 0);
        cr_assert_eq(n, 2u);
        for (size_t i = 0; i < n; i++) {
                bool audio = res[i].runtime == 1 * MS;
                assert_admitted_real(h, (pid_t) res[i].pid, (pid_t) res[i].tid, audio ? 1 * MS : 2 * MS,
                                     audio ? 10 * MS : 15 * MS, audio ? 10 * MS : 20 * MS,
                                     audio ? "rt-app's audio thread" : "rt-app's video thread");
        }
        harness_reservations_free(res, n);
        st = run_wait(r);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rt-app ran its 3 s (status 0x%x); output:\n%s", st, run_log(r));
        wait_no_reservations(h, "after rt-app ended");
        run_free(r);

        const char *argv_big[] = { "rt-app", big, NULL };
        r = run_start(h, NULL, argv_big, false);
        st = run_wait(r);
        cr_assert(strstr(run_log(r), "Device or resource busy"),
                  "rt-app over the limit reports EBUSY (status 0x%x); its output:\n%s", st, run_log(r));
        wait_no_reservations(h, "after rt-app over the limit");
        run_free(r);

        /* its logs, then the directory */
        {
                DIR *d = opendir(dir);
                for (struct dirent *e; d && (e = readdir(d));)
                        if (e->d_name[0] != '.') {
                                char p[512];
                                snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
                                (void) unlink(p);
                        }
                if (d)
                        closedir(d);
                (void) rmdir(dir);
        }
        harness_stop(h);
}
