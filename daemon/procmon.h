/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* procmon: the kernel's proc connector (NETLINK_CONNECTOR, CN_IDX_PROC), which reports every fork,
 * exec and exit on the machine.
 *
 * The idea: the socket code (procmon_open, procmon_receive) is a thin shell around a pure decoder
 * (procmon_decode) that looks only at (buf, len, sender) and can therefore be unit-tested and fuzzed
 * without a kernel. Delivery is best effort: when the socket buffer overflows the kernel drops events
 * and the next read fails with ENOBUFS. One ENOBUFS stands for an overflow episode (any number of
 * lost events), so the caller must then resynchronise from /proc rather than count losses.
 *
 * Facts measured on this kernel (docs/design.md, What the kernel does) that consumers must respect:
 *   - for a new thread (pthread_create, CLONE_THREAD) the FORK event's parent_pid/parent_tgid name
 *     the process's *parent*, not the thread that called pthread_create; the thread's own process is
 *     its tgid. Match new threads on tgid (the child's tgid), never on parent_*.
 *   - for a new process, parent_pid is the thread that forked.
 *   - some EXIT events carry parent_pid = parent_tgid = 0 (the kernel fills them only while the task
 *     is still linked to its parent): key exits by pid/tgid, never by parent.
 *   - sequence numbers are per CPU and count every event the kernel sends to anyone, including those
 *     the event filter hides from us: a gap in seq is not a loss. */

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <linux/netlink.h>

/* Default receive buffer (the value given to SO_RCVBUFFORCE; the kernel doubles it). Measured here
 * (6.18, 2 CPUs, FORK|EXIT filter on): a reader that keeps up lost nothing of 50,000 forks at full
 * speed even with the default 208 KiB; what the buffer buys is room for a reader that falls behind.
 * Each queued event costs ~680 bytes of buffer (skb overhead), so N bytes hold ~N/340 events. A
 * reader taking 200 us per event against 10,000 forks (20,000 events at ~15,000/s) lost 87% with
 * 208 KiB, 85% with 1 MiB, 38% with 4 MiB and nothing with 8 MiB. So 8 MiB: ~24,000 events of
 * backlog, over a second of a fork storm while the daemon is busy in sched_setattr and on the bus.
 * The memory is only used while the queue is actually full. */
#define PROCMON_RCVBUF_DEFAULT (UINT64_C(8) << 20)

/* The largest datagram procmon_receive() accepts (the connector's CONNECTOR_MAX_MSG_SIZE, plus the
 * netlink and connector headers). The proc connector sends one 76-byte message per datagram. */
#define PROCMON_DATAGRAM_MAX (16384 + 64)

typedef enum ProcmonEventType {
        PROCMON_FORK = 1,
        PROCMON_EXIT = 2,
        PROCMON_EXEC = 3,      /* the process's executable was replaced (after the exec succeeded) */
} ProcmonEventType;

typedef struct ProcEvent {
        ProcmonEventType type;
        uint32_t cpu;          /* the CPU that sent the event */
        uint32_t seq;          /* cn_msg.seq: a per-CPU counter, see the note above */
        uint64_t timestamp_ns; /* CLOCK_MONOTONIC (the kernel's ktime_get_ns()) */
        pid_t pid;             /* FORK: the new thread (child_pid); EXIT: the exiting thread; EXEC: the
                                * thread that exec'd, which is the main thread by then (the kernel
                                * gives it the process's pid before it reports the exec) */
        pid_t tgid;            /* its process (child_tgid / process_tgid); pid != tgid for a thread */
        pid_t parent_pid;      /* FORK: see the note above; EXIT: may be 0; EXEC: 0 */
        pid_t parent_tgid;
        uint32_t exit_code;    /* EXIT only: the wait status the kernel keeps (task->exit_code) */
        uint32_t exit_signal;  /* EXIT only: the signal sent to the parent (SIGCHLD, or -1 for threads) */
} ProcEvent;

/* Counters the decoder adds to; the caller owns the struct and zeroes it when it likes. */
typedef struct ProcmonStats {
        uint64_t datagrams; /* datagrams handed to the decoder */
        uint64_t events;    /* FORK, EXEC and EXIT events delivered (in datagrams that decoded) */
        uint64_t ignored;   /* proc events of other types (UID, GID, SID, COMM, ...) */
        uint64_t acks;      /* PROC_EVENT_NONE: the kernel's answers to LISTEN requests */
        uint64_t malformed; /* well-framed messages with contents that do not fit, skipped */
        uint64_t foreign;   /* datagrams not from the kernel's proc group, messages of other connectors */
        uint64_t nl_errors; /* NLMSG_ERROR messages (including error 0, a netlink ACK) */
        uint64_t noops;     /* NLMSG_NOOP messages */
        uint64_t overruns;  /* overflow episodes: ENOBUFS from recvfrom, NLMSG_OVERRUN */
} ProcmonStats;

/* Open a proc connector listener: a NETLINK_CONNECTOR socket (SOCK_DGRAM | SOCK_CLOEXEC |
 * SOCK_NONBLOCK) bound to the CN_IDX_PROC group, with a receive buffer of rcvbuf bytes (0 means
 * PROCMON_RCVBUF_DEFAULT; SO_RCVBUFFORCE, SO_RCVBUF capped by net.core.rmem_max without
 * CAP_NET_ADMIN) and PROC_CN_MCAST_LISTEN sent. On kernels with the event filter (6.6+) only FORK,
 * EXEC and EXIT events are requested; older kernels get the plain LISTEN and the decoder skips the rest.
 * Events that happen before this returns may or may not be seen: open first, then scan /proc.
 * Returns 0 and the fd in *ret_fd (the caller owns it), -EINVAL for a rcvbuf above INT_MAX / 2,
 * -EOPNOTSUPP if the kernel never acknowledged the LISTEN (not in the initial pid and user
 * namespace), the kernel's error from the acknowledgement (e.g. -EPERM before 6.6 without
 * CAP_NET_ADMIN), or the failing syscall's -errno. */
int procmon_open(int *ret_fd, size_t rcvbuf);

/* Decode one datagram: a PURE function of its arguments (no syscalls, no globals). sender is where
 * the datagram came from; only the kernel (nl_pid 0) on the CN_IDX_PROC group is believed, anything
 * else is counted in stats->foreign and yields no events. Writes the FORK, EXEC and EXIT events, in order,
 * to events[0..*ret_n). stats may be NULL.
 *
 * Returns 0 on success (possibly with *ret_n = 0: acks, other event types, skipped messages),
 * -EBADMSG if the datagram is not a whole sequence of netlink messages (empty, truncated, a length
 * field that lies, trailing bytes: the framing itself is broken so nothing in it is trusted),
 * -ENOBUFS for NLMSG_OVERRUN (an overflow episode, as from recvfrom), -ENOSPC if the datagram holds
 * more than max events, -EINVAL for a NULL buf with len > 0 or a NULL sender, -EMSGSIZE for len
 * above INT_MAX. *ret_n is written only on success; events[] may be partly written on failure.
 * Messages that are well framed but wrong inside (another connector's idx/val, cn_msg.len beyond
 * the message, a proc_event too short for its type) are skipped and counted, not fatal. */
int procmon_decode_full(const void *buf, size_t len, const struct sockaddr_nl *sender,
                        ProcEvent *events, size_t max, size_t *ret_n, ProcmonStats *stats);

/* procmon_decode_full() without counters. */
static inline int procmon_decode(const void *buf, size_t len, const struct sockaddr_nl *sender,
                                 ProcEvent *events, size_t max, size_t *ret_n) {
        return procmon_decode_full(buf, len, sender, events, max, ret_n, NULL);
}

/* Read one datagram from fd (non-blocking) and decode it into events[0..*ret_n); stats may be NULL.
 * The kernel sends one event per datagram, so call this until it returns -EAGAIN; max >= 1 is always
 * enough for the kernel's datagrams. Returns 0 (possibly with *ret_n = 0: a datagram that held
 * nothing for us), -EAGAIN when nothing is queued, -ENOBUFS after an overflow episode (events were
 * lost: resynchronise, then keep reading), -EBADMSG for a datagram larger than PROCMON_DATAGRAM_MAX
 * or badly framed, any other error of procmon_decode_full() or -errno of recvfrom. */
int procmon_receive_full(int fd, ProcEvent *events, size_t max, size_t *ret_n, ProcmonStats *stats);

/* procmon_receive_full() without counters. */
static inline int procmon_receive(int fd, ProcEvent *events, size_t max, size_t *ret_n) {
        return procmon_receive_full(fd, events, max, ret_n, NULL);
}
