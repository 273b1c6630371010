/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* procmon against the real proc connector: the FORK, EXEC and EXIT of a child we fork, the FORK of a
 * thread, the kernel's event filter, and an overflow episode reported as -ENOBUFS. Needs root in
 * the initial pid namespace; skips otherwise. */

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procmon.h"

/* Bounds the waits so that a broken kernel fails the test instead of hanging it: not a timing
 * assertion, nothing is measured. */
#define POLL_MS 2000
#define POLL_ROUNDS 10

static int open_or_skip(size_t rcvbuf) {
        int fd, r;

        if (geteuid() != 0)
                cr_skip_test("the proc connector needs root (CAP_NET_ADMIN)");
        r = procmon_open(&fd, rcvbuf);
        if (r == -EOPNOTSUPP || r == -EPROTONOSUPPORT || r == -EPERM || r == -EAFNOSUPPORT)
                cr_skip_test("proc connector unavailable here: %s", strerror(-r));
        cr_assert_eq(r, 0, "procmon_open: %s", strerror(-r));
        return fd;
}

typedef bool (*EventCheck)(const ProcEvent *ev, void *userdata);

/* Read events until check() says done (returns true) or the bounded wait runs out. Returns whether
 * done. -ENOBUFS fails the test: nothing here should overflow an 8 MiB buffer. */
static bool read_until(int fd, EventCheck check, void *userdata, ProcmonStats *stats) {
        for (unsigned round = 0; round < POLL_ROUNDS; round++) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int r;

                r = poll(&p, 1, POLL_MS);
                cr_assert_geq(r, 0, "poll: %m");
                if (r == 0)
                        continue;
                for (;;) {
                        ProcEvent ev[4];
                        size_t n;

                        r = procmon_receive_full(fd, ev, 4, &n, stats);
                        if (r == -EAGAIN)
                                break;
                        cr_assert_eq(r, 0, "procmon_receive: %s", strerror(-r));
                        for (size_t i = 0; i < n; i++)
                                if (check(&ev[i], userdata))
                                        return true;
                }
        }
        return false;
}

/* Drain what is queued now, passing each event to check() (whose result is ignored). */
static void drain(int fd, EventCheck check, void *userdata) {
        for (unsigned i = 0; i < 100000; i++) {
                ProcEvent ev[4];
                size_t n;
                int r;

                r = procmon_receive(fd, ev, 4, &n);
                if (r == -EAGAIN)
                        return;
                cr_assert_eq(r, 0, "procmon_receive: %s", strerror(-r));
                for (size_t j = 0; j < n; j++)
                        (void) check(&ev[j], userdata);
        }
        cr_assert_fail("the queue never ran dry");
}

Test(procmon, socket_flags) {
        int fd = open_or_skip(0), fl, rcv;
        socklen_t sl = sizeof(rcv);

        fl = fcntl(fd, F_GETFD);
        cr_expect(fl >= 0 && (fl & FD_CLOEXEC), "fd must be O_CLOEXEC");
        fl = fcntl(fd, F_GETFL);
        cr_expect(fl >= 0 && (fl & O_NONBLOCK), "fd must be O_NONBLOCK");
        cr_assert_eq(getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, &sl), 0);
        /* The kernel doubles the value it was given. */
        cr_expect_geq((uint64_t) rcv, PROCMON_RCVBUF_DEFAULT, "receive buffer %d", rcv);
        close(fd);
}

Test(procmon, bad_rcvbuf) {
        int fd = -1;

        cr_expect_eq(procmon_open(&fd, (size_t) INT32_MAX), -EINVAL);
        cr_expect_eq(procmon_open(&fd, SIZE_MAX), -EINVAL);
        cr_expect_eq(procmon_open(NULL, 0), -EINVAL);
        cr_expect_eq(fd, -1, "ret_fd written on failure");
}

typedef struct ChildEvents {
        pid_t child;
        unsigned forks, execs, exits;
        ProcEvent fork, exec, exit;
} ChildEvents;

static bool on_child_event(const ProcEvent *ev, void *userdata) {
        ChildEvents *c = userdata;

        if (ev->pid != c->child)
                return false;
        if (ev->type == PROCMON_FORK) {
                c->forks++;
                c->fork = *ev;
        } else if (ev->type == PROCMON_EXEC) {
                c->execs++;
                c->exec = *ev;
        } else if (ev->type == PROCMON_EXIT) {
                c->exits++;
                c->exit = *ev;
        }
        return c->exits > 0; /* the exit comes after the fork and the exec */
}

Test(procmon, fork_and_exit_of_one_child) {
        int fd = open_or_skip(0), status;
        ChildEvents c = {};

        c.child = fork();
        cr_assert_geq(c.child, 0, "fork: %m");
        if (c.child == 0)
                _exit(7);
        cr_assert_eq(waitpid(c.child, &status, 0), c.child);

        cr_assert(read_until(fd, on_child_event, &c, NULL), "no EXIT event for child %d", c.child);
        drain(fd, on_child_event, &c); /* nothing else may arrive for this pid */

        cr_expect_eq(c.forks, 1, "FORK events for the child: %u", c.forks);
        cr_expect_eq(c.exits, 1, "EXIT events for the child: %u", c.exits);
        cr_expect_eq(c.fork.tgid, c.child);
        cr_expect_eq(c.fork.parent_pid, getpid(), "a new process's parent_pid is the forking thread");
        cr_expect_eq(c.fork.parent_tgid, getpid());
        cr_expect_eq(c.exit.tgid, c.child);
        cr_expect_eq(c.exit.exit_code, (uint32_t) status, "exit_code %#x, wait status %#x", c.exit.exit_code,
                     status);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 7);
        cr_expect_eq(c.exit.exit_signal, (uint32_t) SIGCHLD);
        cr_expect_leq(c.fork.timestamp_ns, c.exit.timestamp_ns, "timestamps are CLOCK_MONOTONIC");
        close(fd);
}

static void *thread_main(void *arg) {
        int *p = arg;

        *p = (int) syscall(SYS_gettid);
        return NULL;
}

typedef struct ThreadEvents {
        pid_t child;
        pid_t thread; /* learnt from the events */
        unsigned thread_forks, thread_exits, child_exits;
        ProcEvent fork;
} ThreadEvents;

static bool on_thread_event(const ProcEvent *ev, void *userdata) {
        ThreadEvents *t = userdata;

        if (ev->tgid != t->child)
                return false;
        if (ev->type == PROCMON_FORK && ev->pid != ev->tgid) {
                t->thread_forks++;
                t->thread = ev->pid;
                t->fork = *ev;
        } else if (ev->type == PROCMON_EXIT && ev->pid != ev->tgid && ev->pid == t->thread) {
                t->thread_exits++;
        } else if (ev->type == PROCMON_EXIT && ev->pid == t->child) {
                t->child_exits++;
        }
        return t->child_exits > 0;
}

Test(procmon, thread_creation) {
        int fd = open_or_skip(0), pipefd[2], status;
        ThreadEvents t = {};
        int tid = 0;

        cr_assert_eq(pipe2(pipefd, O_CLOEXEC), 0);
        t.child = fork();
        cr_assert_geq(t.child, 0, "fork: %m");
        if (t.child == 0) {
                pthread_t th;

                if (pthread_create(&th, NULL, thread_main, &tid) != 0 || pthread_join(th, NULL) != 0)
                        _exit(1);
                if (write(pipefd[1], &tid, sizeof(tid)) != sizeof(tid))
                        _exit(1);
                _exit(0);
        }
        close(pipefd[1]);
        cr_assert_eq(read(pipefd[0], &tid, sizeof(tid)), (ssize_t) sizeof(tid));
        close(pipefd[0]);
        cr_assert_eq(waitpid(t.child, &status, 0), t.child);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed to create a thread");

        cr_assert(read_until(fd, on_thread_event, &t, NULL), "no EXIT event for child %d", t.child);
        cr_expect_eq(t.thread_forks, 1, "FORK events with child_pid != child_tgid: %u", t.thread_forks);
        cr_expect_eq(t.thread, tid, "the thread's FORK names tid %d, the thread said %d", t.thread, tid);
        cr_expect_neq(t.fork.pid, t.fork.tgid);
        /* The measured fact consumers rely on: parent_* name the process's parent (us), not the
         * thread that called pthread_create (t.child). */
        cr_expect_eq(t.fork.parent_tgid, getpid(), "thread FORK parent_tgid %d (child %d, us %d)",
                     t.fork.parent_tgid, t.child, getpid());
        cr_expect_eq(t.thread_exits, 1, "EXIT events for the thread: %u", t.thread_exits);
        close(fd);
}

static bool kernel_at_least(unsigned major, unsigned minor) {
        struct utsname u;
        unsigned a = 0, b = 0;

        if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &a, &b) != 2)
                return false;
        return a > major || (a == major && b >= minor);
}

static void *exec_from_thread(void *arg) {
        (void) arg;
        execl("/bin/true", "true", (char *) NULL);
        _exit(127);
}

/* An exec by another thread than the main one: the kernel makes the exec'ing thread the main one
 * first, so the EXEC event names the process's pid as both pid and tgid (what the start-up watches
 * match on). Before it, the old main thread's EXIT event carries the same pid and tgid. */
Test(procmon, exec_from_a_thread_names_the_process) {
        int fd = open_or_skip(0), status;
        ChildEvents c = {};

        c.child = fork();
        cr_assert_geq(c.child, 0, "fork: %m");
        if (c.child == 0) {
                pthread_t t;

                if (pthread_create(&t, NULL, exec_from_thread, NULL) != 0)
                        _exit(126);
                for (;;)
                        pause();
        }
        cr_assert_eq(waitpid(c.child, &status, 0), c.child);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "/bin/true did not run from a thread: %#x",
                  status);
        cr_assert(read_until(fd, on_child_event, &c, NULL), "no EXIT event for child %d", c.child);
        drain(fd, on_child_event, &c);
        cr_expect_eq(c.execs, 1, "%u EXEC events with pid %d", c.execs, c.child);
        cr_expect_eq(c.exec.tgid, c.child, "the EXEC event's tgid %d", c.exec.tgid);
        cr_expect_geq(c.exits, 2, "%u EXIT events with pid %d: the old main thread's and the program's", c.exits,
                      c.child);
        close(fd);
}

Test(procmon, kernel_filter_hides_other_events) {
        ProcmonStats st = {};
        ChildEvents c = {};
        int fd, status;

        if (!kernel_at_least(6, 6))
                cr_skip_test("the proc connector's event filter needs Linux 6.6");
        fd = open_or_skip(0);

        /* exec makes an EXEC event, which we asked for, and a COMM event, which we did not. */
        c.child = fork();
        cr_assert_geq(c.child, 0, "fork: %m");
        if (c.child == 0) {
                execl("/bin/true", "true", (char *) NULL);
                _exit(127);
        }
        cr_assert_eq(waitpid(c.child, &status, 0), c.child);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "/bin/true did not run");

        cr_assert(read_until(fd, on_child_event, &c, &st), "no EXIT event for child %d", c.child);
        cr_expect_geq(st.events, 3);
        /* The exec, by the child's only thread: pid and tgid are the child's, between fork and exit. */
        cr_expect_eq(c.execs, 1, "%u EXEC events for child %d", c.execs, c.child);
        cr_expect_eq(c.exec.pid, c.child);
        cr_expect_eq(c.exec.tgid, c.child);
        cr_expect(c.exec.timestamp_ns >= c.fork.timestamp_ns && c.exec.timestamp_ns <= c.exit.timestamp_ns,
                  "the exec is reported between the fork and the exit");
        /* With the filter in place nothing but FORK, EXEC and EXIT reaches the socket, from anyone
         * on the machine, not even the acknowledgements of other listeners' requests. */
        cr_expect_eq(st.ignored, 0, "%lu events of other types arrived", (unsigned long) st.ignored);
        cr_expect_eq(st.acks, 0, "%lu acks arrived", (unsigned long) st.acks);
        cr_expect_eq(st.foreign + st.malformed, 0);
        close(fd);
}

Test(procmon, overflow_is_enobufs_then_reading_goes_on) {
        unsigned enobufs = 0, ok = 0;
        int fd;

        /* The smallest buffer the kernel allows: a few events. */
        fd = open_or_skip(1);

        for (int i = 0; i < 200; i++) {
                pid_t p = fork();

                cr_assert_geq(p, 0, "fork: %m");
                if (p == 0)
                        _exit(0);
                cr_assert_eq(waitpid(p, NULL, 0), p);
        }

        for (unsigned i = 0; i < 100000; i++) {
                ProcEvent ev[4];
                size_t n;
                int r;

                r = procmon_receive(fd, ev, 4, &n);
                if (r == -EAGAIN)
                        break;
                if (r == -ENOBUFS) {
                        enobufs++;
                        continue;
                }
                cr_assert_eq(r, 0, "procmon_receive: %s", strerror(-r));
                ok++;
        }
        cr_expect_geq(enobufs, 1, "400 events into a tiny buffer must overflow");
        cr_expect_geq(ok, 1, "the queued events are still readable after -ENOBUFS");
        close(fd);
}
