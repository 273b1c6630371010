/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* edfctl run -- PROGRAM: programs that call sched_setattr(SCHED_DEADLINE) themselves (rt-app,
 * cyclicdeadline, chrt -d), admitted by edfd without changing them.
 *
 * edfctl forks; the child puts itself under a seccomp filter that traps sched_setattr and
 * sched_setscheduler (basic/seccomp-trap.h), hands the filter's listener to edfctl over a socket
 * pair, and executes PROGRAM. edfctl, as the user who ran it, is the supervisor: for each trapped
 * call it reads the sched_attr from the caller's memory (checking that the caller is still the one
 * that trapped), lets core/setattr.h decide what the call is, and
 *
 *   - to SCHED_DEADLINE: asks edfd through libedfd to admit that thread (Update when edfd admitted
 *     it already) with what was read, once, and answers 0 or the kernel's errno for edfd's refusal.
 *     The call is never CONTINUEd: the kernel would read the caller's memory a second time, and as
 *     the user it would refuse anyway (EPERM);
 *   - out of SCHED_DEADLINE: asks edfd to release the thread, which edfd does itself (so the books
 *     follow what the kernel did), then lets the kernel run the call on the now SCHED_OTHER thread
 *     (whatever the memory says by then: to SCHED_DEADLINE again is EPERM for the user). A thread
 *     that leaves SCHED_DEADLINE behind edfd's back all the same (memory rewritten between the two
 *     reads, to a policy the user may take) is edfd's resync's to find, as for any program;
 *   - anything else, malformed calls included: lets the kernel run it (CONTINUE).
 *
 * One thread, one call at a time: the program's other threads' trapped calls wait their turn.
 * edfctl is a child subreaper, so that descendants that outlive PROGRAM stay its children; it ends,
 * as PROGRAM ended, once it has reaped every one of them. */

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/sched-attr.h"
#include "basic/seccomp-trap.h"
#include "core/setattr.h"
#include "edfctl.h"
#include "shared/protocol.h"

#define ATTR_READ_MAX 4096

typedef struct Run {
        const char *group;    /* "" for edfd's default group */
        SetattrRaise raise;
        int listener;
        edfd *e;              /* opened at the first call edfd must answer; closed when it broke */
        bool said_unreachable;
        struct stat pidns;    /* ours, to tell whether a pid argument means the same thread to us */
        size_t page_size;
} Run;

/* --- the child's side: the filter, then the listener to edfctl --- */

typedef struct ChildSetup {
        int sock; /* the child's end of the socket pair */
} ChildSetup;

static int send_fd(int sock, int fd) {
        char dummy = 'L';
        struct iovec iov = { .iov_base = &dummy, .iov_len = 1 };
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } u = {};
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf };
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
        if (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0)
                return -errno;
        return 0;
}

static int recv_fd(int sock) {
        char dummy;
        struct iovec iov = { .iov_base = &dummy, .iov_len = 1 };
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } u = {};
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf };
        struct cmsghdr *c;
        ssize_t n;
        int fd;

        do
                n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        c = CMSG_FIRSTHDR(&mh);
        if (n != 1 || !c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
                return -EBADMSG;
        memcpy(&fd, CMSG_DATA(c), sizeof(int));
        return fd;
}

static int child_setup(void *userdata) {
        const ChildSetup *cs = userdata;
        static const int trapped[] = { SYS_sched_setattr, SYS_sched_setscheduler };
        sigset_t chld;
        int listener, r;

        /* edfctl blocked SIGCHLD for its signalfd; PROGRAM must not inherit that. */
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        if (sigprocmask(SIG_UNBLOCK, &chld, NULL) < 0)
                return -errno;
        listener = seccomp_trap_install(trapped, ELEMENTSOF(trapped));
        if (listener < 0)
                return listener;
        r = send_fd(cs->sock, listener);
        close(listener);
        close(cs->sock);
        return r;
}

/* --- edfd --- */

static int connection(Run *run) {
        int r;

        if (run->e)
                return 0;
        r = edfd_open(&run->e);
        if (r < 0)
                run->e = NULL;
        return r;
}

/* edfd could not be asked: once, say so; the kernel answers the program from now on until edfd
 * answers again. */
static void unreachable(Run *run, int r) {
        if (!run->said_unreachable) {
                if (run->e)
                        (void) edfctl_failed(run->e, r, "Admit");
                else
                        fprintf(stderr, "edfctl: cannot connect to the system bus: %s\n", strerror(-r));
                fprintf(stderr, "edfctl: edfd is not reachable: the program's sched_setattr calls get the kernel's own "
                        "answer\n");
                run->said_unreachable = true;
        }
        run->e = edfd_close(run->e);
}

/* The reservation edfd holds for thread tid, or 0. */
static uint64_t reservation_of(Run *run, pid_t tid) {
        _cleanup_(edfd_snapshot_freep) edfd_snapshot *s = NULL;

        if (edfd_snapshot_fetch(run->e, EDFD_SNAPSHOT_RESERVATIONS, &s) < 0)
                return 0;
        for (size_t i = 0; i < edfd_snapshot_n_reservations(s); i++) {
                const edfd_reservation *v = edfd_snapshot_reservation(s, i);
                if (edfd_reservation_tid(v) == tid)
                        return edfd_reservation_id(v);
        }
        return 0;
}

static bool from_edfd(const edfd *e) {
        const char *name = e ? edfd_error_name(e) : NULL;
        return name && strncmp(name, EDFD_ERROR_PREFIX, strlen(EDFD_ERROR_PREFIX)) == 0;
}

/* To SCHED_DEADLINE: the errno to answer (0: admitted), or -1 for "the kernel answers". */
static int admit(Run *run, pid_t tid, const SetattrDecision *d) {
        _cleanup_(edfd_request_freep) edfd_request *q = NULL;
        uint64_t flags = (d->reclaim ? EDFD_ADMIT_RECLAIM : 0) | (d->overrun ? EDFD_ADMIT_OVERRUN_SIGNAL : 0), id = 0;
        SchedAttr now;
        uint32_t pid;
        int r, err;

        if (proc_thread_tgid((uint32_t) tid, &pid) < 0 || sched_getattr_raw(tid, &now, 0) < 0)
                return ESRCH;
        r = connection(run);
        if (r < 0) {
                unreachable(run, r);
                return -1;
        }
        if (now.sched_policy == SCHED_DEADLINE)
                id = reservation_of(run, tid);
        if (id) {
                r = edfd_update(run->e, id, d->params.runtime, d->params.deadline, d->params.period);
                if (r != -ENXIO)
                        goto answered;
        }
        if (request_make(pid, (uint32_t) tid, run->group, &d->params, flags, &q) < 0)
                return ENOMEM;
        r = edfd_admit(run->e, q, NULL);
answered:
        if (r >= 0) {
                run->said_unreachable = false;
                return 0;
        }
        err = setattr_errno(r, from_edfd(run->e));
        if (err == 0) {
                unreachable(run, r);
                return -1;
        }
        if (from_edfd(run->e) && r != -ESRCH)
                (void) edfctl_failed(run->e, r, id ? "Update" : "Admit");
        return err;
}

/* Out of SCHED_DEADLINE: edfd releases the thread itself when it holds it; then the kernel. */
static void leave(Run *run, pid_t tid) {
        SchedAttr now;
        int r;

        if (sched_getattr_raw(tid, &now, 0) < 0 || now.sched_policy != SCHED_DEADLINE)
                return;
        r = connection(run);
        if (r >= 0)
                r = edfd_release_thread(run->e, tid);
        if (r >= 0 || r == -ENXIO || from_edfd(run->e))
                return; /* released, or not edfd's to release: the kernel decides as it would */
        if (setattr_errno(r, false) == 0)
                unreachable(run, r);
}

/* --- one trapped call --- */

static bool same_pid_namespace(const Run *run, pid_t tid) {
        char path[64];
        struct stat st;

        snprintf(path, sizeof path, "/proc/%" PRIi32 "/ns/pid", (int32_t) tid);
        return stat(path, &st) == 0 && st.st_dev == run->pidns.st_dev && st.st_ino == run->pidns.st_ino;
}

/* Read what the call points at into buf; the number of bytes read, 0 when nothing could be (the
 * kernel then finds the same), or -ENOENT when the caller is gone. */
static ssize_t read_argument(const Run *run, const SeccompNotice *n, SetattrSyscall sc, void *buf) {
        uint64_t addr = sc == SETATTR_SYSCALL_SETATTR ? n->args[1] : n->args[2];
        uint32_t size_field = 0;
        size_t want;
        int fd, r;

        if (addr == 0)
                return 0;
        fd = seccomp_trap_open_memory(run->listener, n);
        if (fd == -ENOENT)
                return -ENOENT;
        if (fd < 0)
                return 0;
        if (sc == SETATTR_SYSCALL_SETATTR) {
                r = seccomp_trap_read(run->listener, n, fd, addr, &size_field, sizeof size_field);
                if (r < 0) {
                        close(fd);
                        return r == -ENOENT ? r : 0;
                }
        }
        want = setattr_read_size(sc, size_field, run->page_size);
        if (want == 0 || want > ATTR_READ_MAX) {
                close(fd);
                return 0;
        }
        r = seccomp_trap_read(run->listener, n, fd, addr, buf, want);
        close(fd);
        if (r < 0)
                return r == -ENOENT ? r : 0;
        return (ssize_t) want;
}

static void handle(Run *run, const SeccompNotice *n) {
        static unsigned char buf[ATTR_READ_MAX];
        SetattrSyscall sc = n->nr == SYS_sched_setattr ? SETATTR_SYSCALL_SETATTR : SETATTR_SYSCALL_SETSCHEDULER;
        SetattrCall c = { .syscall = sc };
        SetattrDecision d;
        SchedAttr now;
        ssize_t k;
        pid_t tid;
        int err;

        if (n->nr != SYS_sched_setattr && n->nr != SYS_sched_setscheduler) {
                (void) seccomp_trap_continue(run->listener, n->id);
                return;
        }
        memcpy(c.args, n->args, sizeof c.args);
        k = read_argument(run, n, sc, buf);
        if (k == -ENOENT)
                return; /* the caller is gone: nothing to answer */
        if (k > 0) {
                c.mem = buf;
                c.n_mem = (size_t) k;
        }
        d = setattr_decide(&c, &run->raise, NULL);
        tid = d.pid ?: n->tid;
        /* A pid in another pid namespace names another thread than it does to edfd: the kernel's. */
        if (d.action == SETATTR_KERNEL || (d.pid != 0 && !same_pid_namespace(run, n->tid))) {
                (void) seccomp_trap_continue(run->listener, n->id);
                return;
        }
        /* The kernel looks the thread up before it checks the parameters. */
        if (sched_getattr_raw(tid, &now, 0) == -ESRCH) {
                (void) seccomp_trap_answer(run->listener, n->id, ESRCH);
                return;
        }
        switch (d.action) {
        case SETATTR_REFUSE:
                (void) seccomp_trap_answer(run->listener, n->id, d.err);
                return;
        case SETATTR_ADMIT:
                err = admit(run, tid, &d);
                if (err >= 0)
                        (void) seccomp_trap_answer(run->listener, n->id, err);
                else
                        (void) seccomp_trap_continue(run->listener, n->id);
                return;
        case SETATTR_LEAVE:
                leave(run, tid);
                (void) seccomp_trap_continue(run->listener, n->id);
                return;
        default:
                (void) seccomp_trap_continue(run->listener, n->id);
        }
}

/* --- the supervisor --- */

/* Serve the listener until PROGRAM (pid) and every descendant of it have ended; PROGRAM's wait
 * status in *ret_status. */
static int supervise(Run *run, pid_t pid, int sigfd, int *ret_status) {
        bool program_ended = false, listening = true;

        for (;;) {
                struct pollfd p[2] = {
                        { .fd = listening ? run->listener : -1, .events = POLLIN },
                        { .fd = sigfd, .events = POLLIN },
                };
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        fprintf(stderr, "edfctl: poll: %s\n", strerror(errno));
                        return -errno;
                }
                if (p[0].revents & POLLIN) {
                        SeccompNotice n;
                        int r = seccomp_trap_receive(run->listener, &n);
                        if (r == 0)
                                handle(run, &n);
                        else if (r != -ENOENT && r != -EINTR) {
                                fprintf(stderr, "edfctl: cannot receive a trapped call: %s\n", strerror(-r));
                                return r;
                        }
                } else if (p[0].revents & (POLLHUP | POLLERR | POLLNVAL))
                        listening = false; /* no process is under the filter any more */
                if (p[1].revents & POLLIN) {
                        struct signalfd_siginfo si;
                        (void) !read(sigfd, &si, sizeof si);
                        for (;;) {
                                int status;
                                pid_t w = waitpid(-1, &status, WNOHANG);
                                if (w == 0)
                                        break;
                                if (w < 0) {
                                        if (errno == EINTR)
                                                continue;
                                        if (program_ended)
                                                return 0; /* ECHILD: every descendant has ended */
                                        break;
                                }
                                if (w == pid) {
                                        program_ended = true;
                                        *ret_status = status;
                                        command_ended();
                                }
                        }
                }
        }
}

int verb_run(const Args *a) {
        Run run = { .group = a->group ?: "", .listener = -1 };
        sigset_t chld;
        int sv[2], sigfd, status = 0, r, ex;
        ChildSetup cs;
        pid_t pid;

        if (!a->command)
                return usage_error(a, "say what to run: -- PROGRAM [ARG...]");
        if (!a->command[0])
                return usage_error(a, "no program after --");
        if (a->group && *a->group == '\0')
                return usage_invalid("group", a->group, "is empty (leave -g out for edfd's default group)");
        if (a->given & ARG_MARGIN) {
                const char *reason = NULL;
                if (percent_parse(a->margin, &run.raise.margin, &reason) < 0)
                        return usage_invalid("margin", a->margin, reason);
        }
        if (a->given & ARG_OVERHEAD) {
                ex = admit_overhead(a, &run.raise.overhead);
                if (ex != EDFCTL_EXIT_OK)
                        return ex;
        }
        if (stat("/proc/self/ns/pid", &run.pidns) < 0) {
                fprintf(stderr, "edfctl: cannot read this process's pid namespace: %s\n", strerror(errno));
                return EDFCTL_EXIT_FAILED;
        }
        run.page_size = (size_t) sysconf(_SC_PAGESIZE);

        /* SIGCHLD through a signalfd, blocked before the fork so that none is lost (child_setup()
         * unblocks it again for PROGRAM). */
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        if (sigprocmask(SIG_BLOCK, &chld, NULL) < 0 || (sigfd = signalfd(-1, &chld, SFD_CLOEXEC)) < 0) {
                fprintf(stderr, "edfctl: cannot watch for SIGCHLD: %s\n", strerror(errno));
                return EDFCTL_EXIT_FAILED;
        }
        if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
                fprintf(stderr, "edfctl: cannot become a subreaper: %s\n", strerror(errno));
                close(sigfd);
                return EDFCTL_EXIT_FAILED;
        }
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                fprintf(stderr, "edfctl: cannot make a socket pair: %s\n", strerror(errno));
                close(sigfd);
                return EDFCTL_EXIT_FAILED;
        }
        cs.sock = sv[1];
        ex = command_spawn(a->command, child_setup, &cs, "install the seccomp filter", &pid);
        close(sv[1]);
        if (ex != EDFCTL_EXIT_OK) {
                close(sv[0]);
                close(sigfd);
                return ex;
        }
        run.listener = recv_fd(sv[0]);
        close(sv[0]);
        if (run.listener < 0) {
                /* Cannot happen once the child executed: it sent the listener first. */
                fprintf(stderr, "edfctl: did not receive the seccomp listener: %s\n", strerror(-run.listener));
                (void) kill(pid, SIGKILL);
                while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                        ;
                command_ended();
                close(sigfd);
                return EDFCTL_EXIT_FAILED;
        }

        r = supervise(&run, pid, sigfd, &status);
        close(run.listener);
        close(sigfd);
        edfd_close(run.e);
        if (r < 0) {
                (void) kill(pid, SIGKILL);
                return EDFCTL_EXIT_FAILED;
        }
        return command_end_as(status);
}
