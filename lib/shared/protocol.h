/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The D-Bus contract between edfd and its clients: names, error names and the admission flags.
 * Shared by the daemon and edfctl; documented in docs/org.edfd.Admission1.xml and
 * org.edfd.Admission1(5).
 *
 * Units on the bus: times are uint64 nanoseconds; bandwidths are uint64 fixed point with 20
 * fractional bits, the kernel's own unit: BW_UNIT of core/bandwidth.h (1 << 20) is one whole CPU.
 *
 * Methods (interface EDFD_BUS_INTERFACE):
 *   Admit(u pid, u tid, s group, t runtime, t deadline, t period, t flags) -> (t id)
 *   Update(t id, t runtime, t deadline, t period)
 *   Release(t id)
 *   AdmitSplit(u pid, u tid1, u tid2, s group, t runtime, t deadline, t period, t flags)
 *       -> (t id1, t runtime1, u cpu1, t id2, t runtime2, u cpu2)
 *     A job (runtime, deadline, period) run by two threads of pid as two stages on two CPUs of a
 *     partitioned group: stage 1 (runtime1, runtime1, period) on cpu1 by tid1, stage 2 (runtime2,
 *     deadline - runtime1, period) on cpu2 by tid2, released runtime1 after stage 1. Both or
 *     neither.
 *   AdmitAtStart(u pid, s group, t runtime, t deadline, t period, t flags, t bound)
 *     Admit pid's main thread as Admit would when its program starts: after its next exec, at its
 *     first sleep, or bound ns after the exec. Checked at the call, decided then.
 *   ReleaseThread(u tid)
 *   ReleaseProcess(u pid) -> (u released)
 *   ListReservations() -> a(EDFD_RESERVATION_ENTRY)
 *       id, pid, tid, group, runtime, deadline, period, bandwidth, flags, split_from, uid, extra
 *   ListGroups() -> a(EDFD_GROUP_ENTRY)
 *       path, runtime, period, bandwidth, allocated, reservations, groups, cgroup, fork, threads,
 *       anyone, users, dynamic, extra
 *     Who may use a group: anyone = true (users empty); nobody but root: anyone = false and no
 *     users; else the user names. Each entry ends in extra, an a{sv} of further fields: a client
 *     ignores keys it does not know, and edfd adds keys without changing the signature. Today:
 *       reservation  "donated" t: the runtime its donor gave it at a split (split children only);
 *                    "cpu" u: the CPU of a reservation of partitioned placement (absent: global)
 *                    "throttles" t: its thread's throttles since admission (while counted)
 *                    "lock_waits" t: its thread's possible lock waits since admission (while
 *                    counted)
 *       group        "min_split_runtime" t (effective), "overridden" b (a configured group
 *                    resized at run time)
 *     pids and tids are u everywhere, in methods as in signals.
 *   ListPartitions() -> (s note, a(EDFD_PARTITION_ENTRY) partitions)
 *       note: why placement is refused here ("" when nothing is); each partition: name, cpu,
 *       capacity, allocated, reservations, extra (a{sv}, none today)
 *   CreateGroup(s path, t runtime, t period)
 *   CreateGroupWithUsers(s path, t runtime, t period, as users)   (users: the group's own; [] root only)
 *   SetGroup(s path, t runtime, t period)
 *   RemoveGroup(s path)
 *   Reload()
 *   Echo(t value) -> (t value)   (no side effects; the floor for benchmarks)
 * Properties: Version s, Capacity t, Allocated t, Unmanaged t, KernelCapacity t, KernelAdmission b,
 *   Overcommitted b, Reservations u, Groups u, EventsSeen t, EventsLost t, Resyncs t,
 *   UnseenChildren t, WaitingAtStart u, ThrottleCounting s ("on" or why not),
 *   LockWaitCounting s ("on" or why not)
 * Signals:
 *   ReservationAdded(t id, u pid, u tid, s group, s reason)      reason: requested, split,
 *                                                                 inherited
 *   ReservationRemoved(t id, u pid, u tid, s group, s reason)    reason: requested, exited,
 *                                                                 vanished, changed, partition
 *   ReservationChanged(t id, t runtime, t deadline, t period, s reason)
 *                                                                 reason: requested, split,
 *                                                                 returned, partition
 *   ReservationThrottled(t id, u pid, u tid, t throttles)        its count grew (once a second)
 *   ReservationLockWaits(t id, u pid, u tid, t lock_waits)       its count grew (once a second)
 *   Split(t donor_id, t child_id)
 *   GroupsChanged()
 */

#define EDFD_BUS_NAME "org.edfd.Admission1"
#define EDFD_BUS_PATH "/org/edfd/Admission1"
#define EDFD_BUS_INTERFACE "org.edfd.Admission1.Manager"

/* The signatures of one list entry (without the parentheses of the struct). */
#define EDFD_RESERVATION_ENTRY "tuusttttttua{sv}"
#define EDFD_GROUP_ENTRY "sttttuusssbasba{sv}"
#define EDFD_PARTITION_ENTRY "suttua{sv}"

/* At most this many bus names subscribed to edfd's signals at once (Subscribe()). */
#define EDFD_SUBSCRIBERS_MAX 1024

#define EDFD_ERROR_PREFIX "org.edfd.Admission1.Error."
#define EDFD_ERROR_OVER_BUDGET EDFD_ERROR_PREFIX "OverBudget"
#define EDFD_ERROR_INVALID_PARAMETERS EDFD_ERROR_PREFIX "InvalidParameters"
#define EDFD_ERROR_NO_SUCH_GROUP EDFD_ERROR_PREFIX "NoSuchGroup"
#define EDFD_ERROR_GROUP_EXISTS EDFD_ERROR_PREFIX "GroupExists"
#define EDFD_ERROR_NO_SUCH_RESERVATION EDFD_ERROR_PREFIX "NoSuchReservation"
#define EDFD_ERROR_NO_SUCH_THREAD EDFD_ERROR_PREFIX "NoSuchThread"
#define EDFD_ERROR_ALREADY_ADMITTED EDFD_ERROR_PREFIX "AlreadyAdmitted"
#define EDFD_ERROR_FOREIGN_DEADLINE EDFD_ERROR_PREFIX "ForeignDeadline"
#define EDFD_ERROR_GROUP_NOT_EMPTY EDFD_ERROR_PREFIX "GroupNotEmpty"
#define EDFD_ERROR_KERNEL_REFUSED EDFD_ERROR_PREFIX "KernelRefused"
#define EDFD_ERROR_PERMISSION_DENIED EDFD_ERROR_PREFIX "PermissionDenied"
#define EDFD_ERROR_LIMIT_EXCEEDED EDFD_ERROR_PREFIX "LimitExceeded"
#define EDFD_ERROR_INVALID_CONFIG EDFD_ERROR_PREFIX "InvalidConfig"

/* Admit flags. */
#define EDFD_ADMIT_RECLAIM UINT64_C(1)        /* SCHED_FLAG_RECLAIM */
#define EDFD_ADMIT_OVERRUN_SIGNAL UINT64_C(2) /* SCHED_FLAG_DL_OVERRUN: SIGXCPU on overrun */
#define EDFD_ADMIT_MOVE UINT64_C(4)           /* also move the process into the group's cgroup */
#define EDFD_ADMIT_ALL (EDFD_ADMIT_RECLAIM | EDFD_ADMIT_OVERRUN_SIGNAL | EDFD_ADMIT_MOVE)
