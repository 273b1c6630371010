/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* cpuset: the partitions edfd owns, each its own root domain, behind one adapter with two
 * backends.
 *
 * - cgroup v2 (pure v2 machines): MOUNT/edfd-partitions is a domain cgroup and a partition root
 *   (`cpuset.cpus.partition = root`) holding the union of the partitions' CPUs; each partition is
 *   a threaded child of it with its own CPUs and `cpuset.cpus.partition = root`. An admitted
 *   process moves in whole (cgroup.procs of edfd-partitions), its deadline thread into its CPU's
 *   child (cgroup.threads). The kernel makes partitions only on top of partition roots, so this
 *   works at the top level of the hierarchy, not below a systemd service's cgroup.
 * - cgroup v1 cpusets (hybrid machines): MOUNT/edfd-partitions (the union, cpu_exclusive,
 *   sched_load_balance 0) with a child per partition (cpu_exclusive, sched_load_balance 1), and the
 *   root cpuset's sched_load_balance set to 0 while edfd owns a partition: the kernel then makes one
 *   root domain of each balanced cpuset. A single thread moves (the tasks file). The root cpuset's
 *   own tasks are not load-balanced meanwhile: that is the price of the layout (docs/design.md).
 *
 * The directory edfd-partitions is the mark of ownership: edfd creates it before it touches the root
 * balancing and restores the balancing before it removes it, so a restart finds what a crash left
 * half-done and cpusets_apply() converges to the configuration from any such state.
 *
 * The checks of a layout are pure (core/cpuset-layout.h); this adapter reads what they need. Before
 * it creates, changes or removes a partition, cpusets_apply() sums what every deadline thread
 * of the machine holds (edfd's and others', found in /proc) in each root domain of the layout it is
 * about to make, and refuses a layout that over-commits one: the kernel re-adds deadline tasks to
 * rebuilt root domains without checking. It removes only empty partitions. It never moves a task:
 * moving is cpusets_move_*(), which the manager calls only for threads it admitted. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/cpulist.h"
#include "core/cpuset-layout.h" /* CpusetBackend, CpusetSpec, CPUSET_DIR: the pure layout check */

#define CPUSET_V1_MOUNT_DEFAULT "/sys/fs/cgroup/cpuset"
#define CPUSET_V2_MOUNT_DEFAULT "/sys/fs/cgroup"
#define CPUSET_NAME_MAX 32

/* "none", "cgroup-v1", "cgroup-v2". */
const char *cpuset_backend_to_string(CpusetBackend b);

typedef enum CpusetState {
        CPUSET_STATE_ABSENT,  /* configured, no directory (yet) */
        CPUSET_STATE_VALID,   /* its own root domain on its CPUs */
        CPUSET_STATE_INVALID, /* v2 "root invalid (...)" or "member"; v1 not exclusive or balanced */
} CpusetState;

/* "absent", "valid", "invalid". */
const char *cpuset_state_to_string(CpusetState s);

/* A partition as the kernel shows it. */
typedef struct CpusetPartition {
        char name[CPUSET_NAME_MAX + 1];
        CpuMask cpus;        /* cpuset.cpus */
        CpusetState state;
        char reason[320];    /* why it is invalid, in the kernel's words where it gives them */
        unsigned n_tasks;    /* threads in it */
        uint64_t dl_bw;      /* what its deadline threads hold (BW units), from the last scan */
} CpusetPartition;

typedef struct Cpusets Cpusets;

/* Find the backend: v1 when a cpuset hierarchy is mounted at v1_mount, else v2 when v2_mount's
 * cgroup.controllers offers cpuset, else none (NULL: the defaults above; tests pass their own).
 * Reads the CPUs present and online from /sys/devices/system/cpu. Returns 0 and a new object, or
 * -ENOMEM; a machine without cpusets is not an error (backend none, with the reason). */
int cpusets_open(Cpusets **ret, const char *v1_mount, const char *v2_mount);
/* Accepts NULL, returns NULL. Leaves the partitions as they are. */
Cpusets *cpusets_free(Cpusets *c);

CpusetBackend cpusets_backend(const Cpusets *c);
/* Why no partition can be made here (one sentence), or NULL when one can. */
const char *cpusets_unavailable(const Cpusets *c);
/* The CPUs online when cpusets_open() looked. */
const CpuMask *cpusets_online(const Cpusets *c);

/* v2: the CPUs that edfd-partitions keeps for itself (none by default), where the other threads of
 * a process moved in whole (cpusets_move_process()) run: the kernel refuses a task in a partition
 * root that gave all its CPUs to its children (ENOSPC, seen in the VM). They are its own root domain
 * and are taken from the root cgroup like the partitions' CPUs. Takes effect at the next
 * cpusets_apply(); ignored on v1, where threads move alone. */
void cpusets_set_shared(Cpusets *c, const CpuMask *shared);

/* Check specs against the machine, touching nothing: CPUs that do not exist or are offline,
 * cpusets edfd does not own that share a CPU with a partition (named), no CPU left outside the
 * partitions (an error on v2, where the root cgroup has tasks of its own; a note on v1, where the
 * root cpuset keeps every CPU and its tasks run unbalanced on them), and a backend that is none.
 * Returns 0 when specs can be made, -EINVAL with one line per problem in *ret_errors, and fills
 * *ret_notes (may be NULL) with what the layout means. Each strv is the caller's. */
int cpusets_check(Cpusets *c, const CpusetSpec *specs, size_t n, char ***ret_errors, char ***ret_notes);

/* Make the machine's partitions what specs say (an empty specs: none at all), from whatever state a
 * crash left: create what is missing, fix a half-made directory, remove what is not asked for when
 * it is empty, restore the v1 root balancing when no partition is left. per_cpu_bw: what one CPU
 * admits in BW units (UINT64_MAX: kernel admission is off, no over-commit check). Refuses, changing
 * nothing, with one sentence in *ret_error: what cpusets_check() refuses; a partition to remove or
 * to change whose directory still holds threads; a layout in which the deadline threads of some root
 * domain would hold more than its CPUs admit. Returns 0 (notes of what it did in *ret_notes, may be
 * NULL), -EINVAL / -EBUSY / -ENOSPC (over-commit) with *ret_error, or another negative errno (with
 * *ret_error naming the file) when the kernel refuses a write half-way. */
int cpusets_apply(Cpusets *c, const CpusetSpec *specs, size_t n, uint64_t per_cpu_bw, char **ret_error,
                  char ***ret_notes);

/* Every partition edfd owns as the kernel shows it now (directories under edfd-partitions), by
 * name, with the deadline bandwidth its threads hold. Returns 0 and a new array (the caller frees
 * it; NULL with 0), or negative errno. */
int cpusets_list(Cpusets *c, CpusetPartition **ret, size_t *ret_n);

/* Called by cpusets_poll() for a partition whose state changed since the last poll (or since
 * cpusets_apply()): was, and what it is now. */
typedef void (*CpusetChangeFn)(const CpusetPartition *now, CpusetState was, void *userdata);
/* Read every owned partition's state and call cb for each change. Returns the number of changes,
 * or negative errno. The manager polls this from a timer (v2 partitions turn invalid when their CPUs
 * go away or a sibling takes them, with no event of their own). */
int cpusets_poll(Cpusets *c, CpusetChangeFn cb, void *userdata);

/* Move thread tid into partition name: v1 its tasks file (the thread alone); v2 its
 * cgroup.threads (the thread's process must be in edfd-partitions already: cpusets_move_process()).
 * Only for threads edfd admitted. Returns 0, -ENOENT (no such partition), -ESRCH, or -errno. */
int cpusets_move_thread(Cpusets *c, const char *name, pid_t tid);
/* v2: move process pid whole into edfd-partitions (cgroup.procs), where its threads run on the CPUs
 * no partition took. v1: -EOPNOTSUPP (threads move alone). */
int cpusets_move_process(Cpusets *c, pid_t pid);
/* Move admitted thread tid of process pid into partition name. v1: the thread alone (its tasks
 * file). v2: a process not yet in edfd-partitions moves in whole first, into edfd-partitions when it
 * has CPUs of its own (cpusets_set_shared()), else into partition name itself (its other threads
 * then share that CPU: the kernel refuses a task in a partition root without CPUs, ENOSPC); then the
 * thread into name (cgroup.threads). The cgroup the process came from is remembered for
 * cpusets_move_out(). Returns 0, -ENOENT (no such partition), -ESRCH, or -errno. */
int cpusets_move_in(Cpusets *c, const char *name, pid_t pid, pid_t tid);
/* v2: a process moved in (cpusets_move_in()) whose cgroup of origin is gone: its service (or scope)
 * has stopped and systemd removed the cgroup, while the process lives on in edfd-partitions, where
 * the stop could not reach it. */
typedef struct CpusetOrphan {
        pid_t pid;
        char origin[256];
} CpusetOrphan;
/* Every such process now (a new array, the caller's; NULL with 0 when none); forgets the origins
 * of processes that have ended or left edfd-partitions. Returns 0 or -ENOMEM. */
int cpusets_orphans(Cpusets *c, CpusetOrphan **ret, size_t *ret_n);
/* v2: the cgroups processes moved in came from, as cpusets_move_in() remembered them: the i-th
 * (pid in *ret_pid), or NULL past the last. For the state journal, which keeps them over a
 * restart. */
const char *cpusets_origin_at(const Cpusets *c, size_t i, pid_t *ret_pid);
/* v2: the cgroup process pid came from, as cpusets_move_in() remembered it, or NULL. */
const char *cpusets_origin_of(const Cpusets *c, pid_t pid);
/* v2: remember again that process pid came from path (a cgroup path below the mount, from the
 * state journal after a restart), unless it is remembered already. Returns 0, -EINVAL, -ENOMEM. */
int cpusets_origin_restore(Cpusets *c, pid_t pid, const char *path);
/* Move thread tid (v1) or process tid (v2) out of the partitions. v1: to the root cpuset (the v1
 * cpuset hierarchy holds no other controller: the process's memory, pids and io limits stay as
 * they are). v2: back to the cgroup it came from (cpusets_move_in(), or the state journal after a
 * restart), else to the nearest ancestor of that cgroup that takes it, never to the root cgroup
 * (unless it came from there): the root cgroup is under no limit at all, and a user can make its
 * own cgroup refuse the process (a controller enabled in its cgroup.subtree_control, or the cgroup
 * removed). When none takes it, or its origin is not known, it stays where it is, in edfd's
 * cgroups, and its origin is kept for a later try. What a released thread needs before the
 * partition it was in can be removed. Returns 0 with the cgroup it went to in where (may be NULL;
 * size bytes; "" on v1), -ESRCH (gone), or, v2, where it stays: -ENOENT (origin unknown), or the
 * last candidate's -errno. */
int cpusets_move_out_to(Cpusets *c, pid_t tid, char *where, size_t size);
/* cpusets_move_out_to() without the answer. */
int cpusets_move_out(Cpusets *c, pid_t tid);
/* The choice of cpusets_move_out_to() on v2, alone (pure, for the tests): the i-th cgroup to try
 * for a process that came from origin (a path below the mount): 0 is origin itself, then each of
 * its ancestors, nearest first, down to but not including the root cgroup "/"; "/" itself only for
 * a process that came from "/". Writes it into buf (size bytes) and returns true, or returns false
 * past the last, for an origin that is not an absolute cgroup path (an empty, "." or ".."
 * component), or one that does not fit buf. */
bool cpusets_move_back_candidate(const char *origin, size_t i, char *buf, size_t size);
