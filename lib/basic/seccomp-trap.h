/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Seccomp user notification (seccomp_unotify(2), Linux 5.0; CONTINUE since 5.5) as edfctl run uses
 * it: a filter that sends a few system calls of a process tree to a listener, and the supervisor's
 * side of the listener. No policy: what a trapped call means is core/setattr.h's, what to do about it
 * client/edfctl-run.c's.
 *
 * The filter traps the listed system calls of the build's own architecture only; every other call,
 * and every call of another ABI (i386 or x32 on x86-64), runs as if there were no filter. A trapped
 * thread sleeps until the supervisor answers: a return value, or CONTINUE (the kernel then runs the
 * call as it is, reading the caller's memory again). When the listener is closed, trapped calls fail
 * with ENOSYS.
 *
 * Reading the caller's memory: the notice names the trapping thread by id, and an id can be
 * recycled once the thread is gone. So /proc/TID/mem is opened first, the notice is checked to be
 * still pending (SECCOMP_IOCTL_NOTIF_ID_VALID: the thread is still in the trap, so the file is its),
 * then read, and the notice is checked again after the read. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One trapped call. */
typedef struct SeccompNotice {
        uint64_t id;      /* the notice's cookie */
        pid_t tid;        /* the thread that trapped, in the supervisor's pid namespace */
        int nr;           /* the system call's number */
        uint64_t args[6]; /* its arguments, as the registers held them */
} SeccompNotice;

/* In the process to put under the filter (a child after fork, before exec): PR_SET_NO_NEW_PRIVS,
 * then a filter that traps the n system calls in nrs for this thread and everything it starts.
 * Returns the listener (O_CLOEXEC), or a negative errno (-EINVAL for n 0 or above 32). */
int seccomp_trap_install(const int *nrs, size_t n);

/* Wait for the next trapped call on listener. Returns 0 with *ret filled, -ENOENT when the caller
 * went away before the notice could be received (the next one may be there: call again), -EINTR,
 * or another negative errno. */
int seccomp_trap_receive(int listener, SeccompNotice *ret);

/* Whether notice id is still pending (its thread still waits in the trap). 0 yes, -ENOENT no, or
 * another negative errno. */
int seccomp_trap_valid(int listener, uint64_t id);

/* Open the memory of notice n's thread for seccomp_trap_read(). Returns the fd (O_CLOEXEC; the
 * caller closes it), -ENOENT when the notice is no longer pending, or another negative errno
 * (-EACCES: the caller's memory is not readable to the supervisor). */
int seccomp_trap_open_memory(int listener, const SeccompNotice *n);

/* Read size bytes at addr from mem_fd (seccomp_trap_open_memory()'s), then check that notice n is
 * still pending. Returns 0 when all of them were read, -EFAULT when not all could be (an address the
 * caller cannot read either), -ENOENT when the notice ended, or another negative errno. */
int seccomp_trap_read(int listener, const SeccompNotice *n, int mem_fd, uint64_t addr, void *buf, size_t size);

/* Answer notice id: the call returns 0 (err 0) or fails with err (a positive errno). Returns 0,
 * -ENOENT when the caller went away meanwhile (nothing to answer), or another negative errno. */
int seccomp_trap_answer(int listener, uint64_t id, int err);

/* Let the kernel run the call of notice id as it is. Same returns. */
int seccomp_trap_continue(int listener, uint64_t id);
