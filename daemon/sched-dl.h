/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* sched-dl: SCHED_DEADLINE through the raw sched_setattr/sched_getattr system calls, applied only to
 * pinned threads.
 *
 * The idea: a thread id that crosses a trust boundary can be recycled at any moment. So a thread is
 * first *pinned*: a pidfd of its process (which cannot be reused while we hold it), a pidfd of the
 * thread itself where the kernel has PIDFD_THREAD (6.9+; then that one is all a target keeps), and
 * the thread's start time from /proc/PID/task/TID/stat. Every change is "verify, apply, verify again, roll back if the second
 * verify fails" (rtkit's process_set_realtime), so a recycled id is at worst touched for the
 * microseconds between the two checks and then restored.
 *
 * Releasing bandwidth is two steps, because switching a *sleeping* deadline task straight to
 * SCHED_OTHER was seen to leave its bandwidth charged in the kernel for good (docs/design.md, What the kernel does):
 * first DL->DL to runtime 1024 ns, deadline = period = 4194304000 ns, whose bandwidth
 * (1024 << 20) / 4194304000 rounds to 0, then SCHED_OTHER. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/types.h>

#include "basic/sched-attr.h"

/* The flags sched_apply_deadline() accepts from its caller. */
#define SCHED_APPLY_FLAGS (SCHED_FLAG_RESET_ON_FORK | SCHED_FLAG_RECLAIM | SCHED_FLAG_DL_OVERRUN)

/* The zero-bandwidth parking parameters used on the way out of SCHED_DEADLINE. */
#define SCHED_PARK_RUNTIME UINT64_C(1024)
#define SCHED_PARK_PERIOD UINT64_C(4194304000)

/* A thread's identity, as the state records keep it to recognize the thread after a restart: where
 * the kernel has thread pidfds (pidfs, 6.9+), the inode number of the thread's pidfd with bit 63 set
 * (pidfs numbers its inodes from a 64-bit counter: unique for the boot); elsewhere the thread's
 * start time, field 22 of /proc/pid/task/tid/stat, in clock ticks since boot (bit 63 clear). */
#define SCHED_IDENTITY_PIDFS (UINT64_C(1) << 63)

/* A pinned thread. tidfd refers to the thread tid where the kernel has PIDFD_THREAD, and is then the
 * only fd kept (pidfd is -1); elsewhere pidfd refers to the process pid and tidfd is -1.
 * kernel_thread: whether it is a kernel thread (PF_KTHREAD, or a child of kthreadd where pidfd info
 * told). */
typedef struct SchedTarget {
        pid_t pid, tid;
        int pidfd;
        int tidfd;
        uint64_t identity;
        bool kernel_thread;
} SchedTarget;

#define SCHED_TARGET_NULL ((SchedTarget) { .pidfd = -1, .tidfd = -1 })

/* Pin thread tid of process pid. On 6.13+ this is a thread pidfd and PIDFD_GET_INFO (thread group
 * and parent), no /proc; before, a process pidfd, a thread pidfd where there are any, and the stat
 * file. Returns 0 and fills *ret (the caller owns the fds: call sched_target_done()), -EINVAL for
 * pid or tid <= 0, -ESRCH if process pid does not exist (or is not a process but a thread id),
 * -ENOENT if it exists but has no thread tid, -EBADMSG if its stat file cannot be parsed, or another
 * -errno. */
int sched_target_pin(pid_t pid, pid_t tid, SchedTarget *ret);

/* The same the way kernels before 6.9 allow: a process pidfd and the stat file, no thread pidfd (the
 * identity is then the start time). For tests and comparisons on newer kernels. */
int sched_target_pin_via_proc(pid_t pid, pid_t tid, SchedTarget *ret);

/* Whether the pinned thread is the one with identity (as recorded, maybe by an earlier edfd): 1 yes,
 * 0 no, or -errno. A recorded start time is checked against the thread's, read from /proc. */
int sched_target_is(const SchedTarget *t, uint64_t identity);

/* The same for thread tid of process pid, pinned for the check: 1, 0 (also when it does not exist),
 * or -errno. */
int sched_thread_is(pid_t pid, pid_t tid, uint64_t identity);

/* Check that the pinned thread is still the same live thread. With a thread pidfd this is one poll()
 * and nothing else: a pidfd names one struct pid, whose number is freed only after its task is
 * released, and then the pidfd reports POLLHUP; so while the tidfd reports the thread alive (not
 * even a zombie) the tid still names it, and a thread never changes its process. Without one, the
 * stat file is read again: tid still in pid, same start time, the process alive after the read.
 * Returns 0, -ESRCH if it is gone or was replaced, -EINVAL for an unpinned target, or -errno. */
int sched_target_verify(const SchedTarget *t);

/* Pins of threads released a moment ago, kept for a thread that is admitted again (an application
 * that admits and releases the same threads as its streams start and stop): pinning again costs a
 * pidfd_open, an ioctl, an fstat and a close, finding a kept one a poll(). Only pins holding a
 * thread pidfd are kept (with one, poll() alone proves the thread is the same and alive, see
 * sched_target_verify), at most SCHED_PIN_CACHE_MAX; the oldest is closed to make room. */
#define SCHED_PIN_CACHE_MAX 64

typedef struct SchedPinCache {
        SchedTarget slot[SCHED_PIN_CACHE_MAX];
        unsigned next; /* the slot to reuse when none is free */
} SchedPinCache;

/* An empty cache (every slot SCHED_TARGET_NULL). */
void sched_pin_cache_init(SchedPinCache *c);

/* sched_target_pin(), from the cache when it holds a live pin of thread tid of process pid (taken out
 * of it). Same returns. */
int sched_pin_cached(SchedPinCache *c, pid_t pid, pid_t tid, SchedTarget *ret);

/* Keep *t (the cache owns it then; *t is reset to SCHED_TARGET_NULL). A target without a thread
 * pidfd, or of a kernel thread, is closed instead. */
void sched_pin_cache_put(SchedPinCache *c, SchedTarget *t);

/* Close the kept pins of threads that have exited (all = true: every kept pin). */
void sched_pin_cache_prune(SchedPinCache *c, bool all);

/* Whether t holds a pinned thread (an fd and ids). */
bool sched_target_pinned(const SchedTarget *t);

/* Close the target's fds and reset it to SCHED_TARGET_NULL. Accepts NULL and unpinned targets. */
void sched_target_done(SchedTarget *t);

/* Make the pinned thread SCHED_DEADLINE with runtime/deadline/period in ns, with flags (a subset of
 * SCHED_APPLY_FLAGS) plus SCHED_FLAG_RESET_ON_FORK always (else its forks would fail EAGAIN).
 * Verifies the target before and after. If the after-check fails: a target that ended but is not
 * reaped yet is parked (whatever it holds in the kernel goes back at once: the kernel accepts
 * SCHED_DEADLINE for a task that has ended and would keep that bandwidth for good), else the
 * thread's previous policy, read with sched_getattr before, is restored; -ESRCH is returned.
 * Returns 0, or: -EBUSY the kernel's admission test refused (may succeed after a retry: bandwidth
 * of an exiting task comes back at its 0-lag time), -EPERM no CAP_SYS_NICE or the thread's
 * affinity does not span its root domain, -EINVAL bad parameters or flags, -ESRCH the thread is
 * gone, or another -errno. */
int sched_apply_deadline(const SchedTarget *t, uint64_t runtime, uint64_t deadline, uint64_t period,
                         uint64_t flags);

/* Put the pinned thread back to SCHED_OTHER, nice 0, no RESET_ON_FORK, without leaving deadline
 * bandwidth charged in the kernel (the two steps described above). A thread that is not
 * SCHED_DEADLINE is just set to SCHED_OTHER. Returns 0, -ESRCH if the target is gone (its
 * bandwidth went back when it exited), or another -errno. */
int sched_release(const SchedTarget *t);

/* A thread's scheduling state as sched_getattr reports it. */
typedef struct SchedInfo {
        uint32_t policy;
        uint64_t flags;
        int32_t nice;
        uint32_t priority;
        uint64_t runtime, deadline, period; /* ns, SCHED_DEADLINE only (0 otherwise) */
} SchedInfo;

/* Read thread tid's policy and parameters. Returns 0 and *ret, -ESRCH if no such thread, -errno. */
int sched_get(pid_t tid, SchedInfo *ret);

/* sched_apply_deadline() for a target pinned (or verified) a moment ago, whose attributes the caller
 * has just read with sched_get() into *now: the first verify and the sched_getattr are skipped (the check
 * after the change, and the rollback to *now, are not). Admission's path: pin, read, decide, apply. */
int sched_apply_deadline_known(const SchedTarget *t, const SchedInfo *now, uint64_t runtime, uint64_t deadline,
                               uint64_t period, uint64_t flags);

/* sched_release() for a release whose caller knows what the thread holds (had: the parameters edfd
 * gave it), without the sched_getattr before and the verify after: two syscalls of six on the
 * path of every Release (each about a microsecond on a virtual machine). The verify before stays
 * (a thread that ended, whose tid may be someone else's now, is not touched); a thread that ends
 * during the release is not reported (demotion is the safe direction: there is nothing to roll
 * back). Same returns. */
int sched_release_known(const SchedTarget *t, const SchedInfo *had);

/* Field 22 (starttime) of /proc/pid/task/tid/stat, read with basic/proc.h's proc_read_stat().
 * Returns 0 and *ret, -ENOENT if pid has no such thread (or pid does not exist), -EBADMSG if the
 * file cannot be parsed, -EINVAL for ids <= 0, -errno. */
int sched_read_start_time(pid_t pid, pid_t tid, uint64_t *ret);

/* The kernel's struct pidfd_info (include/uapi/linux/pidfd.h, 6.13+), its first published 64 bytes,
 * under our own name: Debian 12's headers do not have it. */
typedef struct SchedPidfdInfo {
        uint64_t mask;
        uint64_t cgroupid;
        uint32_t pid, tgid, ppid;
        uint32_t ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
        int32_t exit_code;
} SchedPidfdInfo;
#define SCHED_PIDFD_INFO_PID UINT64_C(1)
#define SCHED_PIDFD_GET_INFO _IOWR(0xFF, 11, SchedPidfdInfo) /* PIDFS_IOCTL_MAGIC, 11 */

