/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The throttle counter (daemon/throttle.c loads it): a BTF-enabled raw tracepoint on sched_switch
 * that counts, for the threads edfd put in the map, each time one leaves the CPU throttled, that
 * is with its runtime used up before its period ended. A sched_yield() of a deadline thread (the
 * end of a job: edfd_job_done()) throttles it too, with dl_yielded set, and is not counted. Every
 * other thread costs one load and one compare: its policy is not SCHED_DEADLINE. The program is
 * attached once, at edfd's start, and stays (so that edfd can give up CAP_BPF and CAP_PERFMON
 * then); while edfd counts no thread, `counting` is 0 and every switch costs one load and one
 * compare of it.
 *
 * The kernel's structs are declared here with the few fields read, preserve_access_index: libbpf
 * relocates each access (CO-RE) against the running kernel's BTF, so the object built here loads
 * on any kernel with BTF whatever its layout. No vmlinux.h, nothing of the build machine's kernel. */

#include <linux/bpf.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define SCHED_DEADLINE 6
/* The most threads counted at once; the map is not preallocated, so only the entries in use cost. */
#define THROTTLE_MAP_MAX 65536

struct sched_dl_entity {
        unsigned int dl_throttled : 1;
        unsigned int dl_yielded : 1;
} __attribute__((preserve_access_index));

struct task_struct {
        int pid;
        unsigned int policy;
        struct sched_dl_entity dl;
} __attribute__((preserve_access_index));

/* tid (as the initial pid namespace sees it) -> throttles since edfd added it. */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, THROTTLE_MAP_MAX);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, __u32);
        __type(value, __u64);
} throttles SEC(".maps");

/* 1 while the map holds a thread, else 0: in the .bss map, which edfd writes through its mapping
 * of it (libbpf's skeleton), with no system call. */
__u32 counting = 0;

SEC("tp_btf/sched_switch")
int BPF_PROG(edfd_on_switch, int preempt, struct task_struct *prev) {
        struct sched_dl_entity *dl;
        __u64 *n;
        __u32 tid;

        if (!*(volatile __u32 *) &counting || prev->policy != SCHED_DEADLINE)
                return 0;
        dl = &prev->dl;
        barrier_var(dl); /* else clang folds &prev->dl into the bitfield's relocation, counted twice */
        if (!BPF_CORE_READ_BITFIELD(dl, dl_throttled) || BPF_CORE_READ_BITFIELD(dl, dl_yielded))
                return 0;
        tid = (__u32) prev->pid;
        n = bpf_map_lookup_elem(&throttles, &tid);
        if (n)
                __sync_fetch_and_add(n, 1);
        return 0;
}

char LICENSE[] SEC("license") = "GPL";
