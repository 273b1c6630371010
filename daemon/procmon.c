/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* procmon: the proc connector listener. See procmon.h for the idea and the measured facts.
 *
 * Decoder choices, in the order the bytes are read:
 *   1. the sender must be the kernel (nl_pid 0) on the CN_IDX_PROC multicast group; anything else
 *      is counted as foreign and yields nothing. Only CAP_NET_ADMIN can send to our port at all,
 *      this is defence in depth.
 *   2. framing: the datagram must be an exact sequence of whole netlink messages, walked with
 *      NLMSG_OK over a *signed* remaining length (with an unsigned one, NLMSG_NEXT past a message
 *      whose aligned length exceeds the rest wraps around and NLMSG_OK then reads out of bounds).
 *      Any framing error fails the whole datagram with -EBADMSG: if the lengths lie, nothing
 *      after them can be located reliably.
 *   3. content: each message must be NLMSG_DONE (what the connector sends) carrying a cn_msg of
 *      CN_IDX_PROC/CN_VAL_PROC whose len fits in the message, carrying a proc_event whose header
 *      and type-specific part fit in cn_msg.len. A message that fails here is skipped and counted:
 *      its framing was sound, so the next message is still found correctly.
 *   4. every read goes through memcpy into a local struct: the buffer may be unaligned (the
 *      proc_event sits at offset 36, only 4-aligned, and fuzzers pass anything).
 * Exit events are accepted without their parent_pid/parent_tgid (older kernels lack them): those
 * then read 0, as they also do when the kernel could not fill them. */

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>

#include "basic/macro.h"
#include "procmon.h"

/* The kernel's event filter (include/uapi/linux/cn_proc.h since 6.6). Debian 12's headers are older,
 * so the request is laid out here; the layout is two native-endian 32-bit enums. */
typedef struct ProcmonInput {
        uint32_t mcast_op;
        uint32_t event_type;
} ProcmonInput;

#define PROCMON_EVENT_FORK UINT32_C(0x00000001)
#define PROCMON_EVENT_EXEC UINT32_C(0x00000002)
#define PROCMON_EVENT_EXIT UINT32_C(0x80000000)

/* The fixed part of struct proc_event: what, cpu, timestamp_ns. */
#define PROC_EVENT_HEADER_SIZE (offsetof(struct proc_event, event_data))

/* Exit events before parent_pid/parent_tgid were added: process_pid, process_tgid, exit_code,
 * exit_signal. */
#define PROC_EXIT_MIN_SIZE (4 * sizeof(uint32_t))

_Static_assert(sizeof(struct cn_msg) == 20, "struct cn_msg is 20 bytes in the kernel ABI");
_Static_assert(PROC_EVENT_HEADER_SIZE == 16, "proc_event header is what, cpu, timestamp_ns");
_Static_assert(sizeof(((struct proc_event *) NULL)->event_data.fork) == 16, "fork event is 4 pids");
_Static_assert(sizeof(((struct proc_event *) NULL)->event_data.exit) >= PROC_EXIT_MIN_SIZE, "exit event");
_Static_assert(sizeof(((struct proc_event *) NULL)->event_data.exec) == 8, "exec event is 2 pids");

/* What procmon_open() looks for in the kernel's answer to its LISTEN: cn_msg.ack == ack. */
typedef struct AckMatch {
        uint32_t ack;
        bool found;
        int err; /* the kernel's positive errno from ack.err */
} AckMatch;

/* NLMSG_OK() over a signed remaining length (see above); the macro itself compares the u32
 * nlmsg_len with that int, which is what we want here (rem > 0) but -Wsign-compare flags. */
static bool nlmsg_ok(const struct nlmsghdr *h, int rem) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
        return rem > 0 && NLMSG_OK(h, rem);
#pragma GCC diagnostic pop
}

static void stats_add(uint64_t *counter) {
        /* Counters saturate instead of wrapping. */
        if (*counter != UINT64_MAX)
                (*counter)++;
}

#define COUNT(stats, field)                                \
        do {                                               \
                if (stats)                                 \
                        stats_add(&(stats)->field);        \
        } while (0)

/* Decode the proc_event in data[0..len) (len is cn_msg.len, already checked against the message).
 * Returns 1 with *ret filled for FORK/EXEC/EXIT, 0 for anything else (counted). */
static int decode_proc_event(const uint8_t *data, size_t len, uint32_t seq, uint32_t cn_ack,
                             ProcEvent *ret, ProcmonStats *stats, AckMatch *ack) {
        uint32_t what, cpu;
        uint64_t timestamp;

        if (len < PROC_EVENT_HEADER_SIZE) {
                COUNT(stats, malformed);
                return 0;
        }
        memcpy(&what, data + offsetof(struct proc_event, what), sizeof(what));
        memcpy(&cpu, data + offsetof(struct proc_event, cpu), sizeof(cpu));
        memcpy(&timestamp, data + offsetof(struct proc_event, timestamp_ns), sizeof(timestamp));
        data += PROC_EVENT_HEADER_SIZE;
        len -= PROC_EVENT_HEADER_SIZE;

        switch (what) {

        case PROC_EVENT_FORK: {
                struct fork_proc_event f;

                if (len < sizeof(f)) {
                        COUNT(stats, malformed);
                        return 0;
                }
                memcpy(&f, data, sizeof(f));
                /* For a new thread parent_* name the process's parent, not the creating thread
                 * (CLONE_THREAD copies real_parent): consumers match threads on child_tgid. */
                *ret = (ProcEvent) {
                        .type = PROCMON_FORK,
                        .cpu = cpu,
                        .seq = seq,
                        .timestamp_ns = timestamp,
                        .pid = f.child_pid,
                        .tgid = f.child_tgid,
                        .parent_pid = f.parent_pid,
                        .parent_tgid = f.parent_tgid,
                };
                return 1;
        }

        case PROC_EVENT_EXEC: {
                struct exec_proc_event x;

                if (len < sizeof(x)) {
                        COUNT(stats, malformed);
                        return 0;
                }
                memcpy(&x, data, sizeof(x));
                /* Sent after the exec succeeded; an exec by another thread than the main one has
                 * made that thread the main one (de_thread) by then, so pid == tgid. */
                *ret = (ProcEvent) {
                        .type = PROCMON_EXEC,
                        .cpu = cpu,
                        .seq = seq,
                        .timestamp_ns = timestamp,
                        .pid = x.process_pid,
                        .tgid = x.process_tgid,
                };
                return 1;
        }

        case PROC_EVENT_EXIT: {
                struct exit_proc_event e = {};

                if (len < PROC_EXIT_MIN_SIZE) {
                        COUNT(stats, malformed);
                        return 0;
                }
                /* parent_pid/parent_tgid are 0 when the kernel could not fill them, and are taken
                 * only whole (kernels before 4.18 do not send them): key exits by process_pid /
                 * process_tgid only. */
                memcpy(&e, data, len >= sizeof(e) ? sizeof(e) : PROC_EXIT_MIN_SIZE);
                *ret = (ProcEvent) {
                        .type = PROCMON_EXIT,
                        .cpu = cpu,
                        .seq = seq,
                        .timestamp_ns = timestamp,
                        .pid = e.process_pid,
                        .tgid = e.process_tgid,
                        .parent_pid = e.parent_pid,
                        .parent_tgid = e.parent_tgid,
                        .exit_code = e.exit_code,
                        .exit_signal = e.exit_signal,
                };
                return 1;
        }

        case PROC_EVENT_NONE: {
                /* The kernel's acknowledgement of a LISTEN/IGNORE, sent to every listener whose
                 * filter lets it through; cn_msg.ack is the request's ack + 1, seq is not ours. */
                uint32_t err = 0;

                COUNT(stats, acks);
                if (len >= sizeof(err))
                        memcpy(&err, data, sizeof(err));
                if (ack && !ack->found && cn_ack == ack->ack) {
                        ack->found = true;
                        ack->err = err > INT32_MAX ? EPROTO : (int) err;
                }
                return 0;
        }

        default:
                /* UID, GID, SID, PTRACE, COMM, COREDUMP, and whatever comes next. */
                COUNT(stats, ignored);
                return 0;
        }
}

static int decode_datagram(const void *buf, size_t len, const struct sockaddr_nl *sender,
                           ProcEvent *events, size_t max, size_t *ret_n, ProcmonStats *stats,
                           AckMatch *ack) {
        const uint8_t *p = buf;
        size_t n = 0;
        int rem;

        if ((!buf && len > 0) || !sender || (!events && max > 0))
                return -EINVAL;
        if (len > INT_MAX)
                return -EMSGSIZE;

        COUNT(stats, datagrams);

        if (sender->nl_family != AF_NETLINK || sender->nl_pid != 0 ||
            sender->nl_groups != (UINT32_C(1) << (CN_IDX_PROC - 1))) {
                COUNT(stats, foreign);
                *ret_n = 0;
                return 0;
        }

        if (len < NLMSG_HDRLEN)
                return -EBADMSG; /* empty, or not even one header */

        rem = (int) len;
        while (rem > 0) {
                struct nlmsghdr h;
                const uint8_t *payload;
                size_t payload_len;
                struct cn_msg cn;

                if (rem < (int) NLMSG_HDRLEN)
                        return -EBADMSG; /* trailing bytes that cannot be a message */
                memcpy(&h, p, sizeof(h));
                if (!nlmsg_ok(&h, rem))
                        return -EBADMSG; /* nlmsg_len below the header or beyond the datagram */

                payload = p + NLMSG_HDRLEN;
                payload_len = h.nlmsg_len - NLMSG_HDRLEN;

                /* Step over this message (NLMSG_NEXT, without its pointer arithmetic past the end):
                 * the aligned length may exceed rem for the last message, which has no padding
                 * after it; that ends the walk. */
                size_t step = NLMSG_ALIGN((size_t) h.nlmsg_len);
                if (step >= (size_t) rem)
                        rem = 0;
                else {
                        rem -= (int) step;
                        p += step;
                }

                switch (h.nlmsg_type) {

                case NLMSG_NOOP:
                        COUNT(stats, noops);
                        continue;

                case NLMSG_ERROR:
                        /* Never sent on this socket by today's kernels (the connector does not use
                         * netlink_rcv_skb); counted, including error 0, and otherwise ignored. */
                        if (payload_len < sizeof(struct nlmsgerr))
                                COUNT(stats, malformed);
                        else
                                COUNT(stats, nl_errors);
                        continue;

                case NLMSG_OVERRUN:
                        /* The kernel says data was lost: the same as ENOBUFS, resynchronise. */
                        COUNT(stats, overruns);
                        return -ENOBUFS;

                case NLMSG_DONE:
                        break; /* the connector's message type */

                default:
                        COUNT(stats, malformed);
                        continue;
                }

                if (payload_len < sizeof(cn)) {
                        COUNT(stats, malformed);
                        continue;
                }
                memcpy(&cn, payload, sizeof(cn));
                if (cn.id.idx != CN_IDX_PROC || cn.id.val != CN_VAL_PROC) {
                        COUNT(stats, foreign);
                        continue;
                }
                if (cn.len > payload_len - sizeof(cn)) {
                        COUNT(stats, malformed); /* cn_msg.len claims more than the message holds */
                        continue;
                }

                ProcEvent ev;
                if (decode_proc_event(payload + sizeof(cn), cn.len, cn.seq, cn.ack, &ev, stats, ack) <= 0)
                        continue;
                if (n >= max)
                        return -ENOSPC;
                events[n++] = ev;
        }

        /* Events count only when delivered: a datagram that fails later delivers none. */
        if (stats)
                stats->events = n > UINT64_MAX - stats->events ? UINT64_MAX : stats->events + n;
        *ret_n = n;
        return 0;
}

int procmon_decode_full(const void *buf, size_t len, const struct sockaddr_nl *sender,
                        ProcEvent *events, size_t max, size_t *ret_n, ProcmonStats *stats) {
        if (!ret_n)
                return -EINVAL;
        return decode_datagram(buf, len, sender, events, max, ret_n, stats, NULL);
}

/* Read one datagram into buf. Returns its length, or -errno (-EAGAIN, -ENOBUFS, ...). A datagram
 * larger than size is -EBADMSG (MSG_TRUNC tells its real length). */
static ssize_t receive_datagram(int fd, void *buf, size_t size, struct sockaddr_nl *ret_sender) {
        struct sockaddr_nl sender = {};
        socklen_t sl = sizeof(sender);
        ssize_t k; /* signed: recvfrom returns -1 on error, never store it unsigned */

        k = recvfrom(fd, buf, size, MSG_DONTWAIT | MSG_TRUNC, (struct sockaddr *) &sender, &sl);
        if (k < 0)
                return -errno;
        if ((size_t) k > size)
                return -EBADMSG;
        if (sl != sizeof(sender))
                sender.nl_family = AF_UNSPEC; /* not a netlink address: decoded as foreign */
        *ret_sender = sender;
        return k;
}

int procmon_receive_full(int fd, ProcEvent *events, size_t max, size_t *ret_n, ProcmonStats *stats) {
        /* Aligned so that a well-behaved decoder could cast, though ours copies anyway. */
        _Alignas(NLMSG_ALIGNTO) uint8_t buf[PROCMON_DATAGRAM_MAX];
        struct sockaddr_nl sender;
        ssize_t k;

        if (fd < 0 || !ret_n)
                return -EINVAL;

        for (;;) {
                k = receive_datagram(fd, buf, sizeof(buf), &sender);
                if (k != -EINTR)
                        break;
        }
        if (k == -ENOBUFS) {
                COUNT(stats, overruns);
                return -ENOBUFS;
        }
        if (k < 0)
                return (int) k;

        return decode_datagram(buf, (size_t) k, &sender, events, max, ret_n, stats, NULL);
}

/* Send one PROC_CN_MCAST_LISTEN request with payload (4 bytes: the plain op, 8: a ProcmonInput). */
static int send_listen(int fd, const void *payload, uint16_t payload_len, uint32_t ack) {
        _Alignas(NLMSG_ALIGNTO) uint8_t buf[NLMSG_SPACE(sizeof(struct cn_msg) + sizeof(ProcmonInput))] = {};
        struct nlmsghdr *h = (struct nlmsghdr *) buf;
        struct cn_msg *cn = (struct cn_msg *) NLMSG_DATA(h);
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        ssize_t k;

        if (payload_len > sizeof(ProcmonInput))
                return -EINVAL;

        *h = (struct nlmsghdr) {
                .nlmsg_len = NLMSG_LENGTH(sizeof(*cn) + payload_len),
                .nlmsg_type = NLMSG_DONE,
                .nlmsg_pid = 0, /* the kernel fills in our port id */
        };
        cn->id.idx = CN_IDX_PROC;
        cn->id.val = CN_VAL_PROC;
        cn->seq = ack;
        cn->ack = ack;
        cn->len = payload_len;
        memcpy(cn->data, payload, payload_len);

        k = sendto(fd, buf, h->nlmsg_len, 0, (const struct sockaddr *) &kernel, sizeof(kernel));
        if (k < 0)
                return -errno;
        if ((size_t) k != h->nlmsg_len)
                return -EIO;
        return 0;
}

/* Drain fd looking for the kernel's acknowledgement with cn_msg.ack == want. The connector runs the
 * request synchronously inside sendto() and queues its answer before sendto() returns, so the answer
 * is already in the queue if it exists: no waiting. Events that arrive meanwhile are dropped (the
 * socket is not open yet as far as the caller is concerned). Returns 1 found (*ret_err = the kernel's
 * errno), 0 not found, -ENOBUFS if the queue overflowed meanwhile (the answer may be lost). */
static int find_ack(int fd, uint32_t want, int *ret_err) {
        _Alignas(NLMSG_ALIGNTO) uint8_t buf[PROCMON_DATAGRAM_MAX];
        AckMatch ack = { .ack = want };

        /* Bounded: under a fork storm the queue might refill as fast as it drains. */
        for (unsigned i = 0; i < 65536; i++) {
                struct sockaddr_nl sender;
                ProcEvent ev[1];
                size_t n;
                ssize_t k;

                k = receive_datagram(fd, buf, sizeof(buf), &sender);
                if (k == -EINTR || k == -EBADMSG)
                        continue;
                if (k == -EAGAIN)
                        return 0;
                if (k < 0)
                        return (int) k;
                (void) decode_datagram(buf, (size_t) k, &sender, ev, ELEMENTSOF(ev), &n, NULL, &ack);
                if (ack.found) {
                        *ret_err = ack.err;
                        return 1;
                }
        }
        return 0;
}

/* Send a LISTEN with payload and look for its acknowledgement, retrying when an overflow may have
 * swallowed it. Returns 1 acknowledged (0 = accepted, else -the kernel's error in *ret_err),
 * 0 no answer, -errno. */
static int listen_and_ack(int fd, const void *payload, uint16_t payload_len, uint32_t *ack_counter,
                          int *ret_err) {
        for (unsigned attempt = 0; attempt < 3; attempt++) {
                uint32_t ack = (*ack_counter)++;
                int r;

                r = send_listen(fd, payload, payload_len, ack);
                if (r < 0)
                        return r;
                r = find_ack(fd, ack + 1, ret_err);
                if (r != -ENOBUFS)
                        return r;
        }
        return 0;
}

int procmon_open(int *ret_fd, size_t rcvbuf) {
        struct sockaddr_nl addr = {
                .nl_family = AF_NETLINK,
                .nl_groups = UINT32_C(1) << (CN_IDX_PROC - 1),
        };
        uint32_t ack_counter = (uint32_t) getpid() << 8; /* only needs to differ from other listeners' */
        int fd, r, kernel_err = 0, val;

        if (!ret_fd)
                return -EINVAL;
        if (rcvbuf == 0)
                rcvbuf = PROCMON_RCVBUF_DEFAULT;
        if (rcvbuf > INT_MAX / 2) /* the kernel doubles the value and keeps it in an int */
                return -EINVAL;
        val = (int) rcvbuf;

        fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
        if (fd < 0)
                return -errno;

        /* SO_RCVBUFFORCE ignores net.core.rmem_max but needs CAP_NET_ADMIN; SO_RCVBUF is capped. */
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &val, sizeof(val)) < 0) {
                if (errno != EPERM || setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &val, sizeof(val)) < 0) {
                        r = -errno;
                        goto fail;
                }
        }

        if (bind(fd, (const struct sockaddr *) &addr, sizeof(addr)) < 0) {
                r = -errno;
                goto fail;
        }

        /* First the 8-byte request with event_type 0, which 6.6+ reads as "all events": its answer is
         * then let through to us, which tells whether this kernel understands struct proc_input
         * (older kernels silently drop a request that is not 4 bytes long). */
        ProcmonInput all = { .mcast_op = PROC_CN_MCAST_LISTEN, .event_type = 0 };
        r = listen_and_ack(fd, &all, sizeof(all), &ack_counter, &kernel_err);
        if (r < 0)
                goto fail;
        if (r > 0 && kernel_err == 0) {
                /* Understood: now narrow it to FORK, EXEC and EXIT. The answer to this one is an event of
                 * type NONE, which the new filter itself hides from us, so there is nothing to wait
                 * for; if it were lost we would merely receive (and skip) everything. */
                ProcmonInput filtered = {
                        .mcast_op = PROC_CN_MCAST_LISTEN,
                        .event_type = PROCMON_EVENT_FORK | PROCMON_EVENT_EXEC | PROCMON_EVENT_EXIT,
                };
                r = send_listen(fd, &filtered, sizeof(filtered), ack_counter++);
                if (r < 0)
                        goto fail;
        } else {
                /* A kernel before 6.6 (or one that refused the request): the plain op. */
                uint32_t op = PROC_CN_MCAST_LISTEN;

                kernel_err = 0;
                r = listen_and_ack(fd, &op, sizeof(op), &ack_counter, &kernel_err);
                if (r < 0)
                        goto fail;
                if (r == 0) {
                        /* No answer at all: the kernel ignores requests from outside the initial
                         * pid and user namespaces (or, before 6.6, answered EPERM to nobody). */
                        r = -EOPNOTSUPP;
                        goto fail;
                }
                if (kernel_err != 0) {
                        r = -kernel_err;
                        goto fail;
                }
        }

        *ret_fd = fd;
        return 0;

fail:
        close(fd);
        return r;
}
