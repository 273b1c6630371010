/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* sched: see sched-dl.h for the idea (pin, verify, apply, verify, roll back; two-step release). */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/proc.h"
#include "sched-dl.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* include/uapi/linux/pidfd.h, 6.9+ */
#endif

_Static_assert(sizeof(SchedPidfdInfo) == 64, "PIDFD_INFO_SIZE_VER0");

static int pidfd_open_raw(pid_t pid, unsigned flags) {
        int fd = (int) syscall(SYS_pidfd_open, pid, flags);
        return fd < 0 ? -errno : fd;
}

/* 1 if either pidfd reports its process (or, for a thread pidfd, its thread) exited, 0 if both are
 * alive. fd2 may be -1 (poll ignores it). One system call for both. */
static int pidfds_exited(int fd1, int fd2) {
        struct pollfd p[2] = { { .fd = fd1, .events = POLLIN }, { .fd = fd2, .events = POLLIN } };
        int r;

        do
                r = poll(p, 2, 0);
        while (r < 0 && errno == EINTR);
        if (r < 0)
                return -errno;
        for (size_t i = 0; i < 2; i++)
                if (p[i].revents & POLLNVAL)
                        return -EBADF;
        for (size_t i = 0; i < 2; i++)
                if (p[i].revents & (POLLIN | POLLHUP | POLLERR))
                        return 1;
        return 0;
}

static int pidfd_exited(int fd) {
        return pidfds_exited(fd, -1);
}

int sched_read_start_time(pid_t pid, pid_t tid, uint64_t *ret) {
        ProcStat st;
        int r;

        if (!ret)
                return -EINVAL;
        r = proc_read_stat(pid, tid, PROC_STAT_START_TIME, &st);
        if (r < 0)
                return r;
        *ret = st.start_time;
        return 0;
}

bool sched_target_pinned(const SchedTarget *t) {
        return t && (t->pidfd >= 0 || t->tidfd >= 0) && t->pid > 0 && t->tid > 0;
}

void sched_target_done(SchedTarget *t) {
        if (!t)
                return;
        if (t->pidfd >= 0)
                close(t->pidfd);
        if (t->tidfd >= 0)
                close(t->tidfd);
        *t = SCHED_TARGET_NULL;
}

/* After something about tid failed: -ENOENT if the process is still there (so tid is not one of its
 * threads), -ESRCH if the process itself is gone. */
static int missing_thread_error(int pidfd) {
        int r = pidfd_exited(pidfd);
        if (r < 0)
                return r;
        return r ? -ESRCH : -ENOENT;
}

/* The same without a pidfd at hand: -ESRCH also when pid is not a process but a thread id. */
static int missing_thread(pid_t pid) {
        int fd = pidfd_open_raw(pid, 0), r;

        if (fd < 0)
                return fd == -EMFILE || fd == -ENFILE || fd == -ENOMEM ? fd : -ESRCH;
        r = missing_thread_error(fd);
        close(fd);
        return r;
}

/* What this kernel has, learned at the first pin: 1 yes, 0 no, -1 not known yet. */
static int have_thread_pidfd = -1, have_pidfd_info = -1;

/* The fast way (6.13+): a thread pidfd, and PIDFD_GET_INFO on it for the thread group (tid in pid,
 * and pid a process) and the parent (kernel threads are kthreadd, pid 2, and its children; a
 * user-mode helper that kthreadd started is refused with them, which costs nobody anything). No /proc
 * at all. Returns 1 with *t filled (tidfd, kernel_thread), 0 if this kernel cannot (t untouched),
 * or -errno as sched_target_pin. */
static int pin_by_thread_pidfd(pid_t pid, pid_t tid, SchedTarget *t) {
        SchedPidfdInfo info = { .mask = SCHED_PIDFD_INFO_PID };
        int fd;

        if (have_thread_pidfd == 0 || have_pidfd_info == 0)
                return 0;
        fd = pidfd_open_raw(tid, PIDFD_THREAD);
        if (fd == -EINVAL && have_thread_pidfd < 0) {
                have_thread_pidfd = 0; /* before 6.9 */
                return 0;
        }
        if (fd == -ESRCH)
                return missing_thread(pid);
        if (fd < 0)
                return fd;
        have_thread_pidfd = 1;

        if (ioctl(fd, SCHED_PIDFD_GET_INFO, &info) < 0) {
                int r = -errno;

                close(fd);
                if ((r == -ENOTTY || r == -EINVAL) && have_pidfd_info < 0) {
                        have_pidfd_info = 0; /* 6.9 to 6.12 */
                        return 0;
                }
                return r == -ESRCH ? missing_thread(pid) : r; /* ESRCH: the thread was reaped meanwhile */
        }
        have_pidfd_info = 1;
        if (info.tgid != (uint32_t) pid) {
                close(fd);
                return missing_thread(pid);
        }
        t->tidfd = fd;
        t->kernel_thread = info.pid == 2 || info.ppid == 2;
        return 1;
}

/* The way through /proc: a pidfd of the process (pid cannot name anyone else while we hold it), a
 * thread pidfd where the kernel has one, and /proc/pid/task/tid/stat, which exists only if tid is a
 * thread of pid (procfs checks the thread group), for PF_KTHREAD and the start time. */
static int pin_by_proc(pid_t pid, pid_t tid, bool thread_pidfd, SchedTarget *t, uint64_t *ret_start_time) {
        ProcStat st;
        int r;

        r = pidfd_open_raw(pid, 0);
        if (r == -EINVAL || r == -ENOENT)
                return -ESRCH; /* pid exists only as a thread id, not as a process (6.18: ENOENT) */
        if (r < 0)
                return r;
        t->pidfd = r;

        if (thread_pidfd && have_thread_pidfd != 0) {
                r = pidfd_open_raw(tid, PIDFD_THREAD);
                if (r == -ESRCH)
                        return missing_thread_error(t->pidfd);
                if (r >= 0) {
                        have_thread_pidfd = 1;
                        t->tidfd = r;
                } else if (r == -EINVAL)
                        have_thread_pidfd = 0;
                else
                        return r;
        }

        /* /proc/pid/task/tid/stat exists only if tid is a thread of pid. */
        r = proc_read_stat(pid, tid, PROC_STAT_START_TIME | PROC_STAT_FLAGS, &st);
        if (r == -ENOENT)
                return missing_thread_error(t->pidfd);
        if (r < 0)
                return r;
        *ret_start_time = st.start_time;
        t->kernel_thread = (st.flags & PROC_PF_KTHREAD) != 0;
        return 0;
}

/* The pidfs inode number of a pidfd, tagged: unique for the boot. */
static int pidfs_identity(int fd, uint64_t *ret) {
        struct stat st;

        if (fstat(fd, &st) < 0)
                return -errno;
        *ret = (uint64_t) st.st_ino | SCHED_IDENTITY_PIDFS;
        return 0;
}

static int pin(pid_t pid, pid_t tid, bool modern, SchedTarget *ret) {
        _cleanup_(sched_target_done) SchedTarget t = SCHED_TARGET_NULL;
        uint64_t start_time = 0;
        int r = 0;

        if (pid <= 0 || tid <= 0 || !ret)
                return -EINVAL;
        t.pid = pid;
        t.tid = tid;

        if (modern)
                r = pin_by_thread_pidfd(pid, tid, &t);
        if (r == 0)
                r = pin_by_proc(pid, tid, modern, &t, &start_time);
        if (r < 0)
                return r;
        if (t.tidfd >= 0) {
                r = pidfs_identity(t.tidfd, &t.identity);
                if (r < 0)
                        return r;
        } else
                t.identity = start_time;

        /* Still alive after the checks: then what they found was about the threads our fds name (and
         * the thread is not a zombie). */
        r = sched_target_verify(&t);
        if (r < 0)
                return r;

        /* With a thread pidfd a process pidfd has done its job (tid is in pid, checked above, and a
         * thread never leaves its process; the thread ends when the process does): one fd a target,
         * so that 10,000 reservations fit in a 20,000 fd limit. */
        if (t.tidfd >= 0 && t.pidfd >= 0) {
                close(t.pidfd);
                t.pidfd = -1;
        }

        *ret = t;
        t = SCHED_TARGET_NULL;
        return 0;
}

int sched_target_pin(pid_t pid, pid_t tid, SchedTarget *ret) {
        return pin(pid, tid, true, ret);
}

void sched_pin_cache_init(SchedPinCache *c) {
        for (size_t i = 0; i < SCHED_PIN_CACHE_MAX; i++)
                c->slot[i] = SCHED_TARGET_NULL;
        c->next = 0;
}

int sched_pin_cached(SchedPinCache *c, pid_t pid, pid_t tid, SchedTarget *ret) {
        if (!c || !ret)
                return -EINVAL;
        for (size_t i = 0; i < SCHED_PIN_CACHE_MAX; i++) {
                SchedTarget *t = &c->slot[i];

                if (t->tidfd < 0 || t->pid != pid || t->tid != tid)
                        continue;
                if (sched_target_verify(t) == 0) {
                        *ret = *t;
                        *t = SCHED_TARGET_NULL;
                        return 0;
                }
                sched_target_done(t); /* exited: the id may now name another thread */
                break;
        }
        return sched_target_pin(pid, tid, ret);
}

void sched_pin_cache_put(SchedPinCache *c, SchedTarget *t) {
        size_t i;

        if (!c || !t)
                return;
        if (t->tidfd < 0 || t->pidfd >= 0 || t->kernel_thread) {
                sched_target_done(t);
                return;
        }
        for (i = 0; i < SCHED_PIN_CACHE_MAX; i++)
                if (c->slot[i].tidfd < 0)
                        break;
        if (i == SCHED_PIN_CACHE_MAX) {
                i = c->next;
                c->next = (c->next + 1) % SCHED_PIN_CACHE_MAX;
                sched_target_done(&c->slot[i]);
        }
        c->slot[i] = *t;
        *t = SCHED_TARGET_NULL;
}

void sched_pin_cache_prune(SchedPinCache *c, bool all) {
        if (!c)
                return;
        for (size_t i = 0; i < SCHED_PIN_CACHE_MAX; i++)
                if (c->slot[i].tidfd >= 0 && (all || sched_target_verify(&c->slot[i]) != 0))
                        sched_target_done(&c->slot[i]);
}

int sched_target_pin_via_proc(pid_t pid, pid_t tid, SchedTarget *ret) {
        return pin(pid, tid, false, ret);
}

int sched_target_is(const SchedTarget *t, uint64_t identity) {
        uint64_t st;
        int r;

        if (!sched_target_pinned(t))
                return -EINVAL;
        if ((identity & SCHED_IDENTITY_PIDFS) || !(t->identity & SCHED_IDENTITY_PIDFS))
                return t->identity == identity;

        /* A start time (recorded by an edfd on a kernel without pidfs, or before identities were
         * pidfs inodes) against a pidfs target: read the start time, then check the target is still
         * the thread it was read about. */
        r = sched_read_start_time(t->pid, t->tid, &st);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        r = sched_target_verify(t);
        if (r == -ESRCH)
                return 0;
        if (r < 0)
                return r;
        return st == identity;
}

int sched_thread_is(pid_t pid, pid_t tid, uint64_t identity) {
        _cleanup_(sched_target_done) SchedTarget t = SCHED_TARGET_NULL;
        int r;

        r = sched_target_pin(pid, tid, &t);
        if (r == -ESRCH || r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        return sched_target_is(&t, identity);
}

int sched_target_verify(const SchedTarget *t) {
        uint64_t st;
        int r;

        if (!sched_target_pinned(t))
                return -EINVAL;

        /* Both while pinning; afterwards whichever the target keeps (see sched_target_pin). */
        r = pidfds_exited(t->pidfd, t->tidfd);
        if (r != 0)
                return r < 0 ? r : -ESRCH;
        if (t->tidfd >= 0)
                return 0; /* see sched-dl.h: the thread pidfd alone proves it is the same thread */

        r = sched_read_start_time(t->pid, t->tid, &st);
        if (r == -ENOENT)
                return -ESRCH;
        if (r < 0)
                return r;
        if (st != t->identity)
                return -ESRCH; /* tid was recycled inside the same process */

        /* And once more: had the process died between the poll and the read, pid could have been
         * reused by then and the stat could be someone else's. */
        r = pidfd_exited(t->pidfd);
        if (r != 0)
                return r < 0 ? r : -ESRCH;
        return 0;
}

/* DL -> DL to a bandwidth that rounds to zero, so that the next step out of SCHED_DEADLINE leaves
 * nothing charged in the kernel even if the task is asleep. */
static int park(pid_t tid) {
        SchedAttr a = {
                .size = sizeof(a),
                .sched_policy = SCHED_DEADLINE,
                .sched_flags = SCHED_FLAG_RESET_ON_FORK, /* a fork in between must not fail */
                .sched_runtime = SCHED_PARK_RUNTIME,
                .sched_deadline = SCHED_PARK_PERIOD,
                .sched_period = SCHED_PARK_PERIOD,
        };
        return sched_setattr_raw(tid, &a, 0);
}

/* Put tid back to what sched_getattr said before we changed it to SCHED_DEADLINE. */
static int restore(pid_t tid, const SchedAttr *prev) {
        SchedAttr a = *prev;
        int r;

        a.size = sizeof(a);
        a.sched_flags &= SCHED_APPLY_FLAGS; /* util-clamp values are not restored */
        if (a.sched_policy != SCHED_DEADLINE) {
                r = park(tid);
                if (r < 0 && r != -EINVAL)
                        return r;
        }
        return sched_setattr_raw(tid, &a, 0);
}

/* Whether the target's task is still attached to its id: alive, or ended and not yet reaped (a
 * zombie). Signal 0 checks just that. A thread other than the leader is reaped as it ends. */
static bool still_attached(const SchedTarget *t) {
        int fd = t->tidfd >= 0 ? t->tidfd : t->tid == t->pid ? t->pidfd : -1;

        return fd >= 0 && syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0) == 0;
}

/* The change itself, and the check after it, given the thread's attributes before. */
static int apply_deadline(const SchedTarget *t, const SchedAttr *prev, uint64_t runtime, uint64_t deadline,
                          uint64_t period, uint64_t flags) {
        SchedAttr a;
        int r;

        a = (SchedAttr) {
                .size = sizeof(a),
                .sched_policy = SCHED_DEADLINE,
                .sched_flags = flags | SCHED_FLAG_RESET_ON_FORK,
                .sched_runtime = runtime,
                .sched_deadline = deadline,
                .sched_period = period,
        };
        r = sched_setattr_raw(t->tid, &a, 0);
        if (r < 0)
                return r; /* -EBUSY, -EPERM, -EINVAL, -ESRCH as the kernel said */

        r = sched_target_verify(t);
        if (r == 0)
                return 0;

        /* Ours ended meanwhile, or the id names another thread now. The kernel accepts
         * SCHED_DEADLINE for a task that has ended, and then keeps the bandwidth for good: the task
         * never runs again to give it back (see design.md, "What the kernel does"). Parking
         * (DL -> DL to a bandwidth that rounds to zero) takes back whatever such a task holds, at
         * once; its previous policy means nothing any more. */
        if (still_attached(t)) {
                if (park(t->tid) == 0)
                        (void) sched_setattr_raw(t->tid, &(SchedAttr) { .size = sizeof(SchedAttr), .sched_policy = SCHED_OTHER }, 0);
                return r;
        }
        /* Reaped: whoever has the id now gets its previous policy back. If ours was a process that
         * had ended before the change and was reaped before this check, the kernel keeps what the
         * change gave it, and nothing can take it back now; the manager's measurement of what the
         * kernel holds beyond its deadline tasks (debugfs) sees it. */
        (void) restore(t->tid, prev);
        return r;
}

int sched_apply_deadline(const SchedTarget *t, uint64_t runtime, uint64_t deadline, uint64_t period,
                         uint64_t flags) {
        SchedAttr prev;
        int r;

        if (!sched_target_pinned(t))
                return -EINVAL;
        if (flags & ~(uint64_t) SCHED_APPLY_FLAGS)
                return -EINVAL;

        /* Read first, verify last: the thread may end between the check and the change, and the
         * shorter that window the rarer the case apply_deadline() cannot undo. */
        r = sched_getattr_raw(t->tid, &prev, 0);
        if (r < 0) {
                int v = sched_target_verify(t);
                return v < 0 ? v : r;
        }
        r = sched_target_verify(t);
        if (r < 0)
                return r;
        return apply_deadline(t, &prev, runtime, deadline, period, flags);
}

int sched_apply_deadline_known(const SchedTarget *t, const SchedInfo *now, uint64_t runtime, uint64_t deadline,
                               uint64_t period, uint64_t flags) {
        if (!sched_target_pinned(t) || !now)
                return -EINVAL;
        if (flags & ~(uint64_t) SCHED_APPLY_FLAGS)
                return -EINVAL;

        SchedAttr prev = {
                .size = sizeof(prev),
                .sched_policy = now->policy,
                .sched_flags = now->flags,
                .sched_nice = now->nice,
                .sched_priority = now->priority,
                .sched_runtime = now->runtime,
                .sched_deadline = now->deadline,
                .sched_period = now->period,
        };
        return apply_deadline(t, &prev, runtime, deadline, period, flags);
}

/* The two steps of a release, given what the thread holds: had as read just before, or as edfd gave
 * it (then the thread may have changed itself since: a park of a thread that is not SCHED_DEADLINE
 * costs nothing and is undone by the second step). */
static int release(const SchedTarget *t, const SchedAttr *had) {
        SchedAttr other = {
                .size = sizeof(other),
                .sched_policy = SCHED_OTHER,
                .sched_flags = 0, /* RESET_ON_FORK off again */
                .sched_nice = 0,
        };
        bool parked = false;
        int r;

        if (had->sched_policy == SCHED_DEADLINE) {
                /* Lowering bandwidth passes admission, unless the root domain is over-committed
                 * already (EBUSY: bandwidth leaked elsewhere, or the limits shrank); -EINVAL only if
                 * an administrator set sched_deadline_period_max_us below the parking period; -EPERM
                 * if a thread that left SCHED_DEADLINE by itself narrowed its affinity. In all these
                 * cases go straight out: a release must never fail for that, at the risk that a
                 * sleeping task's bandwidth stays charged. */
                r = park(t->tid);
                if (r == -ESRCH)
                        return r;
                parked = r == 0;
        }

        r = sched_setattr_raw(t->tid, &other, 0);
        if (r < 0) {
                /* Never leave the thread parked: at 1024 ns per 4.19 s it would be all but stopped.
                 * Give it back what it had (it fits: we just freed it, unless someone took it). */
                if (parked && r != -ESRCH) {
                        SchedAttr a = *had;
                        a.size = sizeof(a);
                        a.sched_flags &= SCHED_APPLY_FLAGS;
                        (void) sched_setattr_raw(t->tid, &a, 0);
                }
                return r;
        }
        return 0;
}

int sched_release(const SchedTarget *t) {
        SchedAttr cur;
        int r;

        if (!sched_target_pinned(t))
                return -EINVAL;

        r = sched_target_verify(t);
        if (r < 0)
                return r;

        r = sched_getattr_raw(t->tid, &cur, 0);
        if (r < 0)
                return r;

        r = release(t, &cur);
        if (r < 0)
                return r;

        /* No rollback if the thread vanished meanwhile: demotion is the safe direction. */
        return sched_target_verify(t);
}

int sched_release_known(const SchedTarget *t, const SchedInfo *had) {
        int r;

        if (!sched_target_pinned(t) || !had)
                return -EINVAL;

        r = sched_target_verify(t);
        if (r < 0)
                return r;

        SchedAttr a = {
                .size = sizeof(a),
                .sched_policy = had->policy,
                .sched_flags = had->flags,
                .sched_nice = had->nice,
                .sched_priority = had->priority,
                .sched_runtime = had->runtime,
                .sched_deadline = had->deadline,
                .sched_period = had->period,
        };
        return release(t, &a);
}

int sched_get(pid_t tid, SchedInfo *ret) {
        SchedAttr a;
        int r;

        if (tid <= 0 || !ret)
                return -EINVAL;

        r = sched_getattr_raw(tid, &a, 0);
        if (r < 0)
                return r;

        *ret = (SchedInfo) {
                .policy = a.sched_policy,
                .flags = a.sched_flags,
                .nice = a.sched_nice,
                .priority = a.sched_priority,
                .runtime = a.sched_policy == SCHED_DEADLINE ? a.sched_runtime : 0,
                .deadline = a.sched_policy == SCHED_DEADLINE ? a.sched_deadline : 0,
                .period = a.sched_policy == SCHED_DEADLINE ? a.sched_period : 0,
        };
        return 0;
}
