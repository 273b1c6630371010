/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* procmon_decode(): datagrams built byte by byte (independently of the kernel's structs), good and
 * bad, including truncation at every offset. */

#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "procmon.h"

/* The wire layout, written out by hand. */
#define NLH_LEN   0  /* u32 */
#define NLH_TYPE  4  /* u16 */
#define CN_IDX    16 /* u32 */
#define CN_VAL    20 /* u32 */
#define CN_SEQ    24 /* u32 */
#define CN_ACK    28 /* u32 */
#define CN_LEN    32 /* u16 */
#define EV_WHAT   36 /* u32 */
#define EV_CPU    40 /* u32 */
#define EV_TIME   44 /* u64 */
#define EV_DATA   52 /* fork: 4 x u32; exec: 2 x u32; exit: 6 x u32; ack: err u32 */
#define PROC_EVENT_LEN 40
#define MSG_LEN   (36 + PROC_EVENT_LEN) /* 76: what the kernel sends */

#define T_NOOP    1
#define T_ERROR   2
#define T_DONE    3
#define T_OVERRUN 4

#define W_NONE 0x00000000u
#define W_FORK 0x00000001u
#define W_EXEC 0x00000002u
#define W_UID  0x00000004u
#define W_COMM 0x00000200u
#define W_EXIT 0x80000000u

static void put16(uint8_t *b, size_t off, uint16_t v) { memcpy(b + off, &v, sizeof(v)); }
static void put32(uint8_t *b, size_t off, uint32_t v) { memcpy(b + off, &v, sizeof(v)); }
static void put64(uint8_t *b, size_t off, uint64_t v) { memcpy(b + off, &v, sizeof(v)); }

/* One message of a datagram. Zero fields take the kernel's values. */
typedef struct Msg {
        uint16_t nl_type;     /* 0 = NLMSG_DONE */
        int nl_len;           /* 0 = 36 + body; -1 = 0; else the nlmsg_len field itself */
        uint32_t idx, val;    /* 0 = CN_IDX_PROC / CN_VAL_PROC */
        int cn_len;           /* 0 = 40; else the cn_msg.len field */
        int body;             /* bytes after the cn_msg actually present; 0 = cn_len */
        uint32_t what, cpu, seq, ack;
        uint64_t ts;
        uint32_t d[6];        /* event data words */
} Msg;

/* Append m at offset off of b (aligned to 4 afterwards). Returns the new end (before padding if
 * last). */
static size_t put_msg(uint8_t *b, size_t off, const Msg *m, size_t *ret_unpadded) {
        int cn_len = m->cn_len ? m->cn_len : PROC_EVENT_LEN;
        int body = m->body ? m->body : cn_len;
        uint8_t *p = b + off;
        size_t len = 36 + (size_t) body;

        memset(p, 0, (len + 3) & ~(size_t) 3);
        put32(p, NLH_LEN, m->nl_len < 0 ? 0 : m->nl_len ? (uint32_t) m->nl_len : (uint32_t) len);
        put16(p, NLH_TYPE, m->nl_type ? m->nl_type : T_DONE);
        put32(p, CN_IDX, m->idx ? m->idx : 1);
        put32(p, CN_VAL, m->val ? m->val : 1);
        put32(p, CN_SEQ, m->seq);
        put32(p, CN_ACK, m->ack);
        put16(p, CN_LEN, (uint16_t) cn_len);
        if (body >= 4)
                put32(p, EV_WHAT, m->what);
        if (body >= 8)
                put32(p, EV_CPU, m->cpu);
        if (body >= 16)
                put64(p, EV_TIME, m->ts);
        for (int i = 0; i < 6 && 16 + 4 * (i + 1) <= body; i++)
                put32(p, EV_DATA + 4 * (size_t) i, m->d[i]);
        if (ret_unpadded)
                *ret_unpadded = off + len;
        return off + ((len + 3) & ~(size_t) 3);
}

/* A datagram of up to 3 messages; len is the unpadded end of the last one unless forced. */
static size_t build(uint8_t *b, const Msg *msgs, size_t n) {
        size_t off = 0, end = 0;

        for (size_t i = 0; i < n; i++)
                off = put_msg(b, off, &msgs[i], &end);
        return end;
}

static const struct sockaddr_nl KERNEL = { .nl_family = AF_NETLINK, .nl_pid = 0, .nl_groups = 1 };

#define FORK_MSG(ppid, ptgid, cpid, ctgid) \
        { .what = W_FORK, .cpu = 1, .seq = 7, .ts = UINT64_C(123456789012), .d = { ppid, ptgid, cpid, ctgid } }
#define EXIT_MSG(pid, tgid, code, sig, ppid, ptgid) \
        { .what = W_EXIT, .cpu = 0, .seq = 8, .ts = UINT64_MAX, .d = { pid, tgid, code, sig, ppid, ptgid } }

typedef struct Expect {
        ProcmonEventType type;
        pid_t pid, tgid, parent_pid, parent_tgid;
        uint32_t exit_code, exit_signal;
} Expect;

typedef struct Case {
        const char *name;
        Msg msgs[3];
        size_t n_msgs;
        size_t raw_len;       /* the datagram's length if not 0, else the built length */
        size_t garbage;       /* bytes of 0xa5 appended after the last message's padding */
        struct sockaddr_nl sender;
        bool custom_sender;
        size_t max;           /* 0 means 8 */
        bool max_zero;
        int ret;
        size_t n;
        Expect ev[3];
        ProcmonStats stats;   /* expected counters; datagrams is checked separately */
} Case;

static const Case cases[] = {
        { .name = "good fork", .msgs = { FORK_MSG(100, 100, 200, 200) }, .n_msgs = 1,
          .n = 1, .ev = { { PROCMON_FORK, 200, 200, 100, 100 } }, .stats = { .events = 1 } },
        { .name = "good exit", .msgs = { EXIT_MSG(200, 200, 256, 17, 100, 100) }, .n_msgs = 1,
          .n = 1, .ev = { { PROCMON_EXIT, 200, 200, 100, 100, 256, 17 } }, .stats = { .events = 1 } },
        { .name = "exit with parent 0", .msgs = { EXIT_MSG(5, 5, 0, 17, 0, 0) }, .n_msgs = 1,
          .n = 1, .ev = { { PROCMON_EXIT, 5, 5, 0, 0, 0, 17 } }, .stats = { .events = 1 } },
        { .name = "thread creation: child_pid != child_tgid, parent is the process's parent",
          .msgs = { FORK_MSG(1, 1, 4243, 4242) }, .n_msgs = 1,
          .n = 1, .ev = { { PROCMON_FORK, 4243, 4242, 1, 1 } }, .stats = { .events = 1 } },
        { .name = "edge pids pass through bit-exact",
          .msgs = { FORK_MSG(0, 1, 0x7fffffff, 0xffffffff) }, .n_msgs = 1,
          .n = 1, .ev = { { PROCMON_FORK, 0x7fffffff, -1, 0, 1 } }, .stats = { .events = 1 } },
        { .name = "two messages in one buffer, in order",
          .msgs = { FORK_MSG(10, 10, 11, 11), EXIT_MSG(11, 11, 0, 17, 10, 10) }, .n_msgs = 2,
          .n = 2, .ev = { { PROCMON_FORK, 11, 11, 10, 10 }, { PROCMON_EXIT, 11, 11, 10, 10, 0, 17 } },
          .stats = { .events = 2 } },
        { .name = "three messages, the middle one skipped",
          .msgs = { FORK_MSG(10, 10, 11, 11), { .what = W_COMM, .d = { 11, 11 } },
                    EXIT_MSG(11, 11, 9, 17, 10, 10) },
          .n_msgs = 3, .n = 2,
          .ev = { { PROCMON_FORK, 11, 11, 10, 10 }, { PROCMON_EXIT, 11, 11, 10, 10, 9, 17 } },
          .stats = { .events = 2, .ignored = 1 } },
        { .name = "fork, exec, exit of one child, in order",
          .msgs = { FORK_MSG(10, 10, 11, 11), { .what = W_EXEC, .d = { 11, 11 } },
                    EXIT_MSG(11, 11, 0, 17, 10, 10) },
          .n_msgs = 3, .n = 3,
          .ev = { { PROCMON_FORK, 11, 11, 10, 10 }, { PROCMON_EXEC, 11, 11 },
                  { PROCMON_EXIT, 11, 11, 10, 10, 0, 17 } },
          .stats = { .events = 3 } },
        { .name = "good exec", .msgs = { { .what = W_EXEC, .cpu = 1, .d = { 4242, 4242 } } }, .n_msgs = 1,
          .n = 1, .ev = { { PROCMON_EXEC, 4242, 4242 } }, .stats = { .events = 1 } },
        { .name = "exec with pid != tgid passes through bit-exact (the decoder does not judge)",
          .msgs = { { .what = W_EXEC, .d = { 0x7fffffff, 0xffffffff } } }, .n_msgs = 1,
          .n = 1, .ev = { { PROCMON_EXEC, 0x7fffffff, -1 } }, .stats = { .events = 1 } },
        { .name = "exec data words after the two pids are not read",
          .msgs = { { .what = W_EXEC, .d = { 5, 5, 99, 98, 97, 96 } } }, .n_msgs = 1,
          .n = 1, .ev = { { PROCMON_EXEC, 5, 5 } }, .stats = { .events = 1 } },
        { .name = "exec one byte short", .msgs = { { .cn_len = 23, .what = W_EXEC, .d = { 1, 1 } } },
          .n_msgs = 1, .stats = { .malformed = 1 } },
        { .name = "exec exactly long enough", .msgs = { { .cn_len = 24, .what = W_EXEC, .d = { 8, 8 } } },
          .n_msgs = 1, .n = 1, .ev = { { PROCMON_EXEC, 8, 8 } }, .stats = { .events = 1 } },
        { .name = "exec with only the header", .msgs = { { .cn_len = 16, .what = W_EXEC } },
          .n_msgs = 1, .stats = { .malformed = 1 } },
        { .name = "exec then a fork after a bad exec", .msgs = { { .cn_len = 20, .what = W_EXEC, .d = { 1 } },
          { .what = W_EXEC, .d = { 3, 3 } }, FORK_MSG(3, 3, 4, 4) }, .n_msgs = 3,
          .n = 2, .ev = { { PROCMON_EXEC, 3, 3 }, { PROCMON_FORK, 4, 4, 3, 3 } },
          .stats = { .malformed = 1, .events = 2 } },
        { .name = "more exec events than max", .msgs = { { .what = W_EXEC, .d = { 1, 1 } },
          { .what = W_EXEC, .d = { 2, 2 } } }, .n_msgs = 2, .max = 1, .ret = -ENOSPC },
        { .name = "foreign sender (nl_pid != 0)", .msgs = { FORK_MSG(1, 1, 2, 2) }, .n_msgs = 1,
          .custom_sender = true, .sender = { .nl_family = AF_NETLINK, .nl_pid = 1234, .nl_groups = 1 },
          .stats = { .foreign = 1 } },
        { .name = "kernel but not the proc group (unicast)", .msgs = { FORK_MSG(1, 1, 2, 2) }, .n_msgs = 1,
          .custom_sender = true, .sender = { .nl_family = AF_NETLINK, .nl_pid = 0, .nl_groups = 0 },
          .stats = { .foreign = 1 } },
        { .name = "kernel but another group", .msgs = { FORK_MSG(1, 1, 2, 2) }, .n_msgs = 1,
          .custom_sender = true, .sender = { .nl_family = AF_NETLINK, .nl_pid = 0, .nl_groups = 3 },
          .stats = { .foreign = 1 } },
        { .name = "not a netlink address", .msgs = { FORK_MSG(1, 1, 2, 2) }, .n_msgs = 1,
          .custom_sender = true, .sender = { .nl_family = 0, .nl_pid = 0, .nl_groups = 1 },
          .stats = { .foreign = 1 } },
        { .name = "wrong cn idx", .msgs = { { .idx = 2, .what = W_FORK, .d = { 1, 1, 2, 2 } } }, .n_msgs = 1,
          .stats = { .foreign = 1 } },
        { .name = "wrong cn val", .msgs = { { .val = 2, .what = W_FORK, .d = { 1, 1, 2, 2 } } }, .n_msgs = 1,
          .stats = { .foreign = 1 } },
        { .name = "unknown event type", .msgs = { { .what = 0x00012345, .d = { 1, 1 } } }, .n_msgs = 1,
          .stats = { .ignored = 1 } },
        { .name = "uid and comm are ignored",
          .msgs = { { .what = W_UID, .d = { 1, 1 } }, { .what = W_COMM, .d = { 1, 1 } } }, .n_msgs = 2,
          .stats = { .ignored = 2 } },
        { .name = "ack (PROC_EVENT_NONE)", .msgs = { { .what = W_NONE, .ack = 43 } }, .n_msgs = 1,
          .stats = { .acks = 1 } },
        { .name = "cn_msg.len larger than the message",
          .msgs = { { .cn_len = 41, .body = 40, .what = W_FORK } },
          .n_msgs = 1, .stats = { .malformed = 1 } },
        { .name = "cn_msg.len 65535", .msgs = { { .cn_len = 65535, .body = 40, .what = W_FORK } },
          .n_msgs = 1, .stats = { .malformed = 1 } },
        { .name = "bad cn_msg.len does not hide the next message",
          .msgs = { { .cn_len = 41, .body = 40, .what = W_FORK }, FORK_MSG(3, 3, 4, 4) }, .n_msgs = 2,
          .n = 1, .ev = { { PROCMON_FORK, 4, 4, 3, 3 } }, .stats = { .malformed = 1, .events = 1 } },
        { .name = "cn_msg.len below the proc_event header", .msgs = { { .cn_len = 15, .what = W_FORK } },
          .n_msgs = 1, .stats = { .malformed = 1 } },
        { .name = "fork one byte short", .msgs = { { .cn_len = 31, .what = W_FORK, .d = { 1, 1, 2, 2 } } },
          .n_msgs = 1, .stats = { .malformed = 1 } },
        { .name = "fork exactly long enough",
          .msgs = { { .cn_len = 32, .what = W_FORK, .d = { 1, 1, 2, 2 } } },
          .n_msgs = 1, .n = 1, .ev = { { PROCMON_FORK, 2, 2, 1, 1 } }, .stats = { .events = 1 } },
        { .name = "exit one byte short", .msgs = { { .cn_len = 31, .what = W_EXIT, .d = { 1, 1 } } },
          .n_msgs = 1, .stats = { .malformed = 1 } },
        { .name = "old exit without parent fields",
          .msgs = { { .cn_len = 32, .what = W_EXIT, .d = { 7, 6, 1, 17 } } },
          .n_msgs = 1, .n = 1, .ev = { { PROCMON_EXIT, 7, 6, 0, 0, 1, 17 } }, .stats = { .events = 1 } },
        { .name = "exit with half a parent field takes none",
          .msgs = { { .cn_len = 38, .what = W_EXIT, .d = { 7, 6, 1, 17, 99, 98 } } },
          .n_msgs = 1, .n = 1, .ev = { { PROCMON_EXIT, 7, 6, 0, 0, 1, 17 } }, .stats = { .events = 1 } },
        { .name = "unpadded last message (odd length)", .msgs = { { .cn_len = 17, .what = W_COMM } }, .n_msgs = 1,
          .stats = { .ignored = 1 } },
        { .name = "odd-length message followed by another",
          .msgs = { { .cn_len = 17, .what = W_COMM }, FORK_MSG(3, 3, 4, 4) }, .n_msgs = 2,
          .n = 1, .ev = { { PROCMON_FORK, 4, 4, 3, 3 } }, .stats = { .ignored = 1, .events = 1 } },
        { .name = "payload too short for a cn_msg", .msgs = { { .nl_len = 16 + 19 } }, .n_msgs = 1,
          .raw_len = 16 + 19, .stats = { .malformed = 1 } },
        { .name = "NLMSG_ERROR", .msgs = { { .nl_type = T_ERROR, .what = 0xffffffea } }, .n_msgs = 1,
          .stats = { .nl_errors = 1 } },
        { .name = "NLMSG_ERROR too short for nlmsgerr", .msgs = { { .nl_type = T_ERROR, .nl_len = 20 } },
          .n_msgs = 1, .raw_len = 20, .stats = { .malformed = 1 } },
        { .name = "NLMSG_NOOP", .msgs = { { .nl_type = T_NOOP } }, .n_msgs = 1, .stats = { .noops = 1 } },
        { .name = "NLMSG_OVERRUN", .msgs = { { .nl_type = T_OVERRUN } }, .n_msgs = 1, .ret = -ENOBUFS,
          .stats = { .overruns = 1 } },
        { .name = "other netlink type", .msgs = { { .nl_type = 0x10, .what = W_FORK } }, .n_msgs = 1,
          .stats = { .malformed = 1 } },
        { .name = "nlmsg_len beyond the datagram", .msgs = { { .nl_len = MSG_LEN + 4, .what = W_FORK } },
          .n_msgs = 1, .ret = -EBADMSG },
        { .name = "nlmsg_len below the header", .msgs = { { .nl_len = 15, .what = W_FORK } }, .n_msgs = 1,
          .ret = -EBADMSG },
        { .name = "nlmsg_len 0", .msgs = { { .nl_len = -1, .what = W_FORK } }, .n_msgs = 1, .ret = -EBADMSG },
        { .name = "trailing garbage after a good message", .msgs = { FORK_MSG(1, 1, 2, 2) }, .n_msgs = 1,
          .garbage = 5, .ret = -EBADMSG },
        { .name = "trailing garbage of a whole header", .msgs = { FORK_MSG(1, 1, 2, 2) }, .n_msgs = 1,
          .garbage = 16, .ret = -EBADMSG },
        { .name = "more events than max", .msgs = { FORK_MSG(1, 1, 2, 2), FORK_MSG(1, 1, 3, 3) }, .n_msgs = 2,
          .max = 1, .ret = -ENOSPC },
        { .name = "max 0 with an event", .msgs = { FORK_MSG(1, 1, 2, 2) }, .n_msgs = 1, .max_zero = true,
          .ret = -ENOSPC },
        { .name = "max 0 without events is fine", .msgs = { { .what = W_COMM } }, .n_msgs = 1, .max_zero = true,
          .stats = { .ignored = 1 } },
};

static void check_stats(const char *name, const ProcmonStats *got, const ProcmonStats *want) {
        cr_expect_eq(got->events, want->events, "%s: events %lu", name, (unsigned long) got->events);
        cr_expect_eq(got->ignored, want->ignored, "%s: ignored %lu", name, (unsigned long) got->ignored);
        cr_expect_eq(got->acks, want->acks, "%s: acks %lu", name, (unsigned long) got->acks);
        cr_expect_eq(got->malformed, want->malformed, "%s: malformed %lu", name, (unsigned long) got->malformed);
        cr_expect_eq(got->foreign, want->foreign, "%s: foreign %lu", name, (unsigned long) got->foreign);
        cr_expect_eq(got->nl_errors, want->nl_errors, "%s: nl_errors %lu", name, (unsigned long) got->nl_errors);
        cr_expect_eq(got->noops, want->noops, "%s: noops %lu", name, (unsigned long) got->noops);
        cr_expect_eq(got->overruns, want->overruns, "%s: overruns %lu", name, (unsigned long) got->overruns);
}

/* A case's datagram in b (at least 512 bytes); returns its length. */
static size_t build_case(uint8_t *b, const Case *c) {
        size_t len = build(b, c->msgs, c->n_msgs);

        if (c->garbage) {
                len = (len + 3) & ~(size_t) 3;
                memset(b + len, 0xa5, c->garbage);
                len += c->garbage;
        }
        return c->raw_len ? c->raw_len : len;
}

Test(procmon_decode, table) {
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const Case *c = &cases[i];
                _Alignas(8) uint8_t b[512];
                ProcEvent ev[8];
                ProcmonStats st = {};
                size_t n = 12345, max = c->max_zero ? 0 : c->max ? c->max : 8, len;
                int r;

                memset(ev, 0x5a, sizeof(ev));
                len = build_case(b, c);
                r = procmon_decode_full(b, len, c->custom_sender ? &c->sender : &KERNEL, ev, max, &n, &st);
                cr_expect_eq(r, c->ret, "%s: returned %d, expected %d", c->name, r, c->ret);
                cr_expect_eq(st.datagrams, 1, "%s: datagrams %lu", c->name, (unsigned long) st.datagrams);
                check_stats(c->name, &st, &c->stats);
                if (r < 0) {
                        cr_expect_eq(n, 12345, "%s: ret_n written on failure", c->name);
                        continue;
                }
                cr_expect_eq(n, c->n, "%s: %zu events, expected %zu", c->name, n, c->n);
                for (size_t j = 0; j < c->n && j < n; j++) {
                        const Expect *e = &c->ev[j];

                        cr_expect_eq(ev[j].type, e->type, "%s[%zu]: type", c->name, j);
                        cr_expect_eq(ev[j].pid, e->pid, "%s[%zu]: pid %d", c->name, j, ev[j].pid);
                        cr_expect_eq(ev[j].tgid, e->tgid, "%s[%zu]: tgid %d", c->name, j, ev[j].tgid);
                        cr_expect_eq(ev[j].parent_pid, e->parent_pid, "%s[%zu]: parent_pid %d", c->name, j,
                                     ev[j].parent_pid);
                        cr_expect_eq(ev[j].parent_tgid, e->parent_tgid, "%s[%zu]: parent_tgid %d", c->name, j,
                                     ev[j].parent_tgid);
                        cr_expect_eq(ev[j].exit_code, e->exit_code, "%s[%zu]: exit_code", c->name, j);
                        cr_expect_eq(ev[j].exit_signal, e->exit_signal, "%s[%zu]: exit_signal", c->name, j);
                }
        }
}

/* The header fields every event carries, from the good fork and exit of the table. */
Test(procmon_decode, header_fields) {
        static const Msg m[2] = { FORK_MSG(1, 1, 2, 2), EXIT_MSG(2, 2, 0, 17, 1, 1) };
        _Alignas(8) uint8_t b[512];
        ProcEvent ev[2];
        size_t n;

        cr_assert_eq(procmon_decode(b, build(b, m, 2), &KERNEL, ev, 2, &n), 0);
        cr_assert_eq(n, 2);
        cr_expect_eq(ev[0].cpu, 1);
        cr_expect_eq(ev[0].seq, 7);
        cr_expect_eq(ev[0].timestamp_ns, UINT64_C(123456789012));
        cr_expect_eq(ev[1].cpu, 0);
        cr_expect_eq(ev[1].seq, 8);
        cr_expect_eq(ev[1].timestamp_ns, UINT64_MAX);
}

/* A datagram cut at any byte is refused as a whole, never read beyond its end (ASan checks the
 * latter: each cut is copied into a heap block of exactly that size). */
Test(procmon_decode, truncated_at_every_offset) {
        static const Msg one[2][1] = { { FORK_MSG(1, 1, 2, 2) }, { { .what = W_EXEC, .d = { 2, 2 } } } };
        static const Msg two[2] = { FORK_MSG(1, 1, 2, 2), EXIT_MSG(2, 2, 0, 17, 1, 1) };
        _Alignas(8) uint8_t b[512];
        size_t len;

        for (size_t which = 0; which < 2; which++) {
                len = build(b, one[which], 1);
                cr_assert_eq(len, MSG_LEN);
                for (size_t k = 0; k < len; k++) {
                        uint8_t *cut = malloc(k ? k : 1);
                        ProcEvent ev[4];
                        size_t n = 99;
                        int r;

                        cr_assert_not_null(cut);
                        memcpy(cut, b, k);
                        r = procmon_decode(cut, k, &KERNEL, ev, 4, &n);
                        cr_expect_eq(r, -EBADMSG, "one %s cut at %zu: %d", which ? "exec" : "fork", k, r);
                        cr_expect_eq(n, 99, "ret_n written at %zu", k);
                        free(cut);
                }
        }

        len = build(b, two, 2);
        cr_assert_eq(len, 2 * MSG_LEN);
        for (size_t k = 0; k <= len; k++) {
                uint8_t *cut = malloc(k ? k : 1);
                ProcEvent ev[4];
                size_t n = 99;
                int r;

                cr_assert_not_null(cut);
                memcpy(cut, b, k);
                r = procmon_decode(cut, k, &KERNEL, ev, 4, &n);
                if (k == MSG_LEN) {
                        /* Exactly the first message: a whole datagram of one. */
                        cr_expect_eq(r, 0, "two messages cut at %zu: %d", k, r);
                        cr_expect_eq(n, 1);
                } else if (k == len) {
                        cr_expect_eq(r, 0);
                        cr_expect_eq(n, 2);
                } else {
                        cr_expect_eq(r, -EBADMSG, "two messages cut at %zu: %d", k, r);
                        cr_expect_eq(n, 99);
                }
                free(cut);
        }
}

/* The proc_event sits at offset 36 in the kernel's own datagrams; the decoder must also cope with a
 * buffer that is not even 4-aligned (UBSan checks the alignment). */
Test(procmon_decode, unaligned_buffer) {
        static const Msg m[2] = { FORK_MSG(1, 1, 2, 2), EXIT_MSG(2, 2, 3, 17, 1, 1) };
        _Alignas(8) uint8_t b[512], u[520];
        size_t len = build(b, m, 2);

        for (size_t shift = 1; shift < 8; shift++) {
                ProcEvent ev[2];
                size_t n;

                memcpy(u + shift, b, len);
                cr_expect_eq(procmon_decode(u + shift, len, &KERNEL, ev, 2, &n), 0, "shift %zu", shift);
                cr_expect_eq(n, 2);
                cr_expect_eq(ev[1].exit_code, 3);
        }
}

Test(procmon_decode, bad_arguments) {
        static const Msg m[1] = { FORK_MSG(1, 1, 2, 2) };
        _Alignas(8) uint8_t b[512];
        size_t len = build(b, m, 1), n = 7;
        ProcEvent ev[1];

        cr_expect_eq(procmon_decode(b, 0, &KERNEL, ev, 1, &n), -EBADMSG, "zero-length datagram");
        cr_expect_eq(procmon_decode(NULL, 0, &KERNEL, ev, 1, &n), -EBADMSG, "zero-length, no buffer");
        cr_expect_eq(procmon_decode(NULL, 16, &KERNEL, ev, 1, &n), -EINVAL);
        cr_expect_eq(procmon_decode(b, len, NULL, ev, 1, &n), -EINVAL, "no sender");
        cr_expect_eq(procmon_decode(b, len, &KERNEL, NULL, 1, &n), -EINVAL, "no events array");
        cr_expect_eq(procmon_decode(b, len, &KERNEL, ev, 1, NULL), -EINVAL, "no ret_n");
        cr_expect_eq(procmon_decode(b, (size_t) INT32_MAX + 1, &KERNEL, ev, 1, &n), -EMSGSIZE);
        cr_expect_eq(procmon_decode(b, SIZE_MAX, &KERNEL, ev, 1, &n), -EMSGSIZE);
        cr_expect_eq(n, 7, "ret_n written on failure");
}

/* Counters accumulate across calls and are optional. */
Test(procmon_decode, stats_accumulate) {
        static const Msg m[2] = { FORK_MSG(1, 1, 2, 2), { .what = W_COMM } };
        _Alignas(8) uint8_t b[512];
        size_t len = build(b, m, 2), n;
        ProcmonStats st = {};
        ProcEvent ev[2];

        for (int i = 0; i < 3; i++)
                cr_assert_eq(procmon_decode_full(b, len, &KERNEL, ev, 2, &n, &st), 0);
        cr_expect_eq(st.datagrams, 3);
        cr_expect_eq(st.events, 3);
        cr_expect_eq(st.ignored, 3);
        cr_assert_eq(procmon_decode_full(b, len, &KERNEL, ev, 2, &n, NULL), 0);
        cr_expect_eq(n, 1);
}
