/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The throttle and lock-wait counters (daemon/throttle.c loads them): BTF-enabled raw tracepoints
 * that count, for the threads edfd put in the map,
 *
 *   - on sched_switch, each time one leaves the CPU throttled, that is with its runtime used up
 *     before its period ended. A sched_yield() of a deadline thread (the end of a job:
 *     edfd_job_done()) throttles it too, with dl_yielded set, and is not counted;
 *   - on sched_waking (which runs in the waker's context), each time one is woken from a futex
 *     wait that does not inherit priority (FUTEX_WAIT, FUTEX_WAIT_BITSET, futex_wait(2),
 *     futex_waitv(2): a default mutex, a condition variable, a semaphore) by a thread without a
 *     deadline of its own that is in a futex wake (FUTEX_WAKE and kin: an unlock, a signal, a
 *     post). That is a possible priority inversion: the deadline thread waited for a thread the
 *     scheduler runs after it, however urgent its own deadline (a PTHREAD_PRIO_INHERIT mutex waits
 *     with FUTEX_LOCK_PI instead and lends the holder its deadline). A thread that waits for its
 *     next job on a condition variable is counted too: possible, not proven. What the sleeping
 *     thread waits in and what the waker does are read from their saved user registers at the
 *     system call's entry (bpf_task_pt_regs()): the system call number and futex(2)'s op.
 *
 * Every other thread costs one load and one compare: its policy is not SCHED_DEADLINE. The
 * programs are attached once, at edfd's start, and stay (so that edfd can give up CAP_BPF and
 * CAP_PERFMON then); while edfd counts no thread, `counting` is 0 and every switch and wakeup
 * costs one load and one compare of it. Where the kernel refuses the wakeup program (before Linux
 * 5.15, no bpf_task_pt_regs()), edfd loads the switch program alone and counts throttles only.
 *
 * The kernel's structs are declared here with the few fields read, preserve_access_index: libbpf
 * relocates each access (CO-RE) against the running kernel's BTF, so the object built here loads
 * on any kernel with BTF whatever its layout. No vmlinux.h, nothing of the build machine's kernel. */

#include <linux/bpf.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "throttle-counts.h"

#define SCHED_DEADLINE 6
/* The most threads counted at once; the map is not preallocated, so only the entries in use cost. */
#define THROTTLE_MAP_MAX 65536

/* futex(2) operations, op & FUTEX_CMD_MASK (the private and clock flags cleared). */
#define FUTEX_CMD_MASK (~(128 | 256))
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_REQUEUE 3
#define FUTEX_CMP_REQUEUE 4
#define FUTEX_WAKE_OP 5
#define FUTEX_WAIT_BITSET 9
#define FUTEX_WAKE_BITSET 10

struct sched_dl_entity {
        unsigned int dl_throttled : 1;
        unsigned int dl_yielded : 1;
} __attribute__((preserve_access_index));

struct task_struct {
        int pid;
        unsigned int policy;
        struct sched_dl_entity dl;
} __attribute__((preserve_access_index));

/* The system call being made and its second argument (futex(2)'s op), as saved at its entry. */
#if defined(__TARGET_ARCH_x86)
struct pt_regs___edfd {
        unsigned long orig_ax;
        unsigned long si;
} __attribute__((preserve_access_index));
#define SYSCALL_NR(r) ((long) BPF_CORE_READ((r), orig_ax))
#define SYSCALL_ARG1(r) ((unsigned long) BPF_CORE_READ((r), si))
#define NR_FUTEX 202
#elif defined(__TARGET_ARCH_arm64)
struct pt_regs___edfd {
        unsigned long long regs[31];
        int syscallno;
} __attribute__((preserve_access_index));
#define SYSCALL_NR(r) ((long) BPF_CORE_READ((r), syscallno))
#define SYSCALL_ARG1(r) ((unsigned long) BPF_CORE_READ((r), regs[1]))
#define NR_FUTEX 98
#endif
/* The futex2 system calls have the same numbers on every architecture (include/uapi/asm-generic). */
#define NR_FUTEX_WAITV 449
#define NR_FUTEX_WAKE 454
#define NR_FUTEX_WAIT 455
#define NR_FUTEX_REQUEUE 456

/* tid (as the initial pid namespace sees it) -> its counts since edfd added it. */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, THROTTLE_MAP_MAX);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, __u32);
        __type(value, struct edfd_counts);
} counts SEC(".maps");

/* 1 while the map holds a thread, else 0: in the .bss map, which edfd writes through its mapping
 * of it (libbpf's skeleton), with no system call. */
__u32 counting = 0;

SEC("tp_btf/sched_switch")
int BPF_PROG(edfd_on_switch, int preempt, struct task_struct *prev) {
        struct sched_dl_entity *dl;
        struct edfd_counts *c;
        __u32 tid;

        if (!*(volatile __u32 *) &counting || prev->policy != SCHED_DEADLINE)
                return 0;
        dl = &prev->dl;
        barrier_var(dl); /* else clang folds &prev->dl into the bitfield's relocation, counted twice */
        if (!BPF_CORE_READ_BITFIELD(dl, dl_throttled) || BPF_CORE_READ_BITFIELD(dl, dl_yielded))
                return 0;
        tid = (__u32) prev->pid;
        c = bpf_map_lookup_elem(&counts, &tid);
        if (c)
                __sync_fetch_and_add(&c->throttles, 1);
        return 0;
}

#ifdef EDFD_LOCK_WAITS
/* Whether the thread whose saved registers are r sleeps in a plain futex wait (wake: makes a wake). */
static __always_inline int futex_call(struct pt_regs___edfd *r, int wake) {
        long nr = SYSCALL_NR(r);
        unsigned long cmd;

        if (nr == NR_FUTEX_WAIT || nr == NR_FUTEX_WAITV)
                return !wake;
        if (nr == NR_FUTEX_WAKE || nr == NR_FUTEX_REQUEUE)
                return wake;
        if (nr != NR_FUTEX)
                return 0;
        cmd = SYSCALL_ARG1(r) & FUTEX_CMD_MASK;
        if (!wake)
                return cmd == FUTEX_WAIT || cmd == FUTEX_WAIT_BITSET;
        return cmd == FUTEX_WAKE || cmd == FUTEX_WAKE_BITSET || cmd == FUTEX_WAKE_OP || cmd == FUTEX_REQUEUE ||
               cmd == FUTEX_CMP_REQUEUE;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(edfd_on_waking, struct task_struct *p) {
        struct task_struct *waker;
        struct edfd_counts *c;
        __u32 tid;

        if (!*(volatile __u32 *) &counting || p->policy != SCHED_DEADLINE)
                return 0;
        waker = bpf_get_current_task_btf();
        if (waker->policy == SCHED_DEADLINE)
                return 0; /* a deadline of its own: EDF runs it as its deadline says */
        if (!futex_call((struct pt_regs___edfd *) bpf_task_pt_regs(p), 0) ||
            !futex_call((struct pt_regs___edfd *) bpf_task_pt_regs(waker), 1))
                return 0;
        tid = (__u32) p->pid;
        c = bpf_map_lookup_elem(&counts, &tid);
        if (c)
                __sync_fetch_and_add(&c->lock_waits, 1);
        return 0;
}
#endif

char LICENSE[] SEC("license") = "GPL";
