/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What `edfctl run` makes of a program's own sched_setattr(2) or sched_setscheduler(2), trapped by
 * seccomp user notification before the kernel ran it. Pure: the caller (client/edfctl-run.c) reads
 * the system call's arguments and the bytes at its pointer, asks here once, and acts.
 *
 * The idea: the kernel's own checks, in the kernel's order, decide what a call is, so that a program
 * sees the errno the kernel would give it for the same request had it the privilege to make it:
 *
 *   - a call the kernel refuses before it looks at the thread's privilege or policy (a bad pointer,
 *     a size it does not take, unknown flags, a negative pid, a flags argument): SETATTR_KERNEL, the
 *     kernel answers it as it is (and writes back the size for E2BIG, as only it does);
 *   - to SCHED_DEADLINE with times the kernel's __checkparam_dl() takes: SETATTR_ADMIT, with the
 *     program's own runtime, deadline and period (raised only by a margin or overhead given), for
 *     edfd to decide; times it refuses: SETATTR_REFUSE with EINVAL, answered without edfd;
 *   - to another policy the kernel takes (SCHED_OTHER, BATCH, IDLE, FIFO, RR, with a priority in
 *     range): SETATTR_LEAVE, out of SCHED_DEADLINE: edfd ends the thread's reservation first (when it
 *     holds one), then the kernel runs the call on a SCHED_OTHER thread;
 *   - what edfd has nothing to do with or this agent does not handle (sched_setscheduler to
 *     SCHED_DEADLINE, which the kernel always refuses with EINVAL; the KEEP_POLICY, KEEP_PARAMS and
 *     UTIL_CLAMP flags; SCHED_EXT and unknown policies): SETATTR_KERNEL.
 *
 * The kernel's sched_setattr path (kernel/sched/syscalls.c): the pointer, pid and flags arguments
 * (EINVAL), the size (EFAULT, E2BIG), a negative policy (EINVAL), the thread (ESRCH), then
 * __sched_setscheduler(): the policy, the flags, the priority and __checkparam_dl() (EINVAL), the
 * caller's privilege (EPERM), the bandwidth (EBUSY). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/params.h"

/* The kernel's sizes of struct sched_attr. */
#define SETATTR_SIZE_VER0 48u
#define SETATTR_SIZE_VER1 56u
/* The flags of sched_attr (include/uapi/linux/sched.h). */
#define SETATTR_FLAG_RESET_ON_FORK 0x01u
#define SETATTR_FLAG_RECLAIM 0x02u
#define SETATTR_FLAG_DL_OVERRUN 0x04u
#define SETATTR_FLAG_KEEP_POLICY 0x08u
#define SETATTR_FLAG_KEEP_PARAMS 0x10u
#define SETATTR_FLAG_UTIL_CLAMP_MIN 0x20u
#define SETATTR_FLAG_UTIL_CLAMP_MAX 0x40u
#define SETATTR_FLAGS_ALL 0x7fu
/* sched_setscheduler's policy bit for reset-on-fork. */
#define SETATTR_SCHED_RESET_ON_FORK 0x40000000u

typedef enum SetattrSyscall {
        SETATTR_SYSCALL_SETATTR,     /* sched_setattr(pid, attr, flags) */
        SETATTR_SYSCALL_SETSCHEDULER, /* sched_setscheduler(pid, policy, param) */
} SetattrSyscall;

typedef enum SetattrAction {
        SETATTR_KERNEL, /* let the kernel run the call as it is */
        SETATTR_REFUSE, /* answer -err without the kernel and without edfd */
        SETATTR_ADMIT,  /* ask edfd for SCHED_DEADLINE with params; answer 0 or the kernel's errno */
        SETATTR_LEAVE,  /* end the thread's reservation through edfd (if any), then the kernel */
} SetattrAction;

/* A trapped call: the system call, its first three arguments as the kernel passed them (64-bit
 * registers; the kernel reads pid, flags and policy as 32-bit ints), and the bytes read from the
 * caller at its pointer (args[1] of sched_setattr, args[2] of sched_setscheduler): n_mem of them,
 * as many as setattr_read_size() said, or mem NULL when they could not be read. */
typedef struct SetattrCall {
        SetattrSyscall syscall;
        uint64_t args[3];
        const void *mem;
        size_t n_mem;
} SetattrCall;

/* What the program's times are raised by before edfd is asked: runtime + ceil(runtime x margin /
 * PERCENT_PERIOD_NS) + overhead (core/calibration.h's budget_from_work()). Zero: as asked. */
typedef struct SetattrRaise {
        uint64_t margin;   /* percent_parse()'s runtime over PERCENT_PERIOD_NS */
        uint64_t overhead; /* ns */
} SetattrRaise;

typedef struct SetattrDecision {
        SetattrAction action;
        int err;             /* SETATTR_REFUSE: the positive errno to answer */
        const char *why;     /* static: what the call is, or why it goes to the kernel or is refused */
        int32_t pid;         /* the pid argument: 0 for the calling thread */
        DlParams asked;      /* SETATTR_ADMIT and REFUSE of times: the program's own (period filled in) */
        DlParams params;     /* SETATTR_ADMIT: what edfd is asked for (asked, raised) */
        bool reclaim;        /* SETATTR_ADMIT: SCHED_FLAG_RECLAIM asked */
        bool overrun;        /* SETATTR_ADMIT: SCHED_FLAG_DL_OVERRUN asked */
} SetattrDecision;

/* How many bytes to read at the call's pointer before setattr_decide(): for sched_setattr, given the
 * size field (the first 4 bytes at the pointer, read first, as the kernel does), what the kernel
 * copies (SETATTR_SIZE_VER0 for 0, else the size), or 0 when the kernel refuses the size (below
 * VER0 or above page_size: E2BIG, the kernel's to answer); for sched_setscheduler, sizeof(int),
 * whatever size_field is. */
size_t setattr_read_size(SetattrSyscall syscall, uint32_t size_field, size_t page_size);

/* Decide the call c (the kernel's period limits in limits, NULL: none; raise NULL: none). */
SetattrDecision setattr_decide(const SetattrCall *c, const SetattrRaise *raise, const DlLimits *limits);

/* The errno a program gets for edfd's answer to its SETATTR_ADMIT: err is the negative errno of the
 * libedfd call, from_edfd whether edfd itself refused (a D-Bus error of edfd's; else the bus or the
 * library failed). Returns the positive errno the kernel would give for the same request (EBUSY for
 * bandwidth refused: over budget, over the user's limits, the kernel's own refusal; EINVAL for
 * parameters edfd refuses; EPERM where edfd does not let this user ask for this thread or group;
 * ESRCH for a thread that is gone), or 0 when edfd could not be asked (not on the bus, no answer, the
 * connection lost): the kernel's own answer is then the program's. */
int setattr_errno(int err, bool from_edfd);

