/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* core/setattr.h: what edfctl run makes of a trapped sched_setattr / sched_setscheduler, in the
 * kernel's order, and the errno a program gets for edfd's answer. Table-driven, no I/O. */

#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/sched-attr.h"
#include "core/duration.h"
#include "core/setattr.h"

#define US NSEC_PER_USEC
#define MS NSEC_PER_MSEC
#define B63 (UINT64_C(1) << 63)
#define PAGE 4096

static SchedAttr dl(uint64_t runtime, uint64_t deadline, uint64_t period, uint64_t flags) {
        return (SchedAttr) { .size = sizeof(SchedAttr), .sched_policy = SCHED_DEADLINE, .sched_flags = flags,
                             .sched_runtime = runtime, .sched_deadline = deadline, .sched_period = period };
}

static SetattrDecision decide_attr(int64_t pid, const SchedAttr *a, size_t n, uint64_t flags_arg) {
        SetattrCall c = { .syscall = SETATTR_SYSCALL_SETATTR, .args = { (uint64_t) pid, 0x1000, flags_arg },
                          .mem = a, .n_mem = n };
        return setattr_decide(&c, NULL, NULL);
}

typedef struct AttrCase {
        const char *name;
        SchedAttr attr;
        SetattrAction action;
        int err;
        DlParams params; /* ADMIT: what edfd is asked */
} AttrCase;

/* A sched_attr as a constant initializer: DLA() to SCHED_DEADLINE, ATTR({...}) any other. */
#define DLA(r, d, p, f)                                                                                 \
        { .size = sizeof(SchedAttr), .sched_policy = SCHED_DEADLINE, .sched_flags = (f), .sched_runtime = (r), \
          .sched_deadline = (d), .sched_period = (p) }
#define ATTR(...) __VA_ARGS__
#define ADMIT(n, a, r, d, p) { n, a, SETATTR_ADMIT, 0, { r, d, p } }
#define REFUSE(n, a) { n, a, SETATTR_REFUSE, EINVAL, {} }
#define KERNEL(n, a) { n, a, SETATTR_KERNEL, 0, {} }
#define LEAVE(n, a) { n, a, SETATTR_LEAVE, 0, {} }

static const AttrCase attr_cases[] = {
        ADMIT("the tutorial's 10ms/100ms", DLA(10 * MS, 100 * MS, 100 * MS, 0), 10 * MS, 100 * MS, 100 * MS),
        ADMIT("period 0 is the deadline", DLA(1 * MS, 10 * MS, 0, 0), 1 * MS, 10 * MS, 10 * MS),
        ADMIT("constrained deadline", DLA(1 * MS, 5 * MS, 10 * MS, 0), 1 * MS, 5 * MS, 10 * MS),
        ADMIT("runtime == deadline == period", DLA(10 * MS, 10 * MS, 10 * MS, 0), 10 * MS, 10 * MS, 10 * MS),
        ADMIT("the smallest runtime", DLA(1024, 1 * MS, 1 * MS, 0), 1024, 1 * MS, 1 * MS),
        ADMIT("RESET_ON_FORK", DLA(1 * MS, 10 * MS, 10 * MS, SETATTR_FLAG_RESET_ON_FORK), 1 * MS, 10 * MS, 10 * MS),
        ADMIT("RECLAIM and DL_OVERRUN", DLA(1 * MS, 10 * MS, 10 * MS, SETATTR_FLAG_RECLAIM | SETATTR_FLAG_DL_OVERRUN),
              1 * MS, 10 * MS, 10 * MS),
        ADMIT("a nice value is no matter", ATTR({ .size = 56, .sched_policy = 6, .sched_nice = -20,
                                                          .sched_runtime = MS, .sched_deadline = 10 * MS }),
              1 * MS, 10 * MS, 10 * MS),

        REFUSE("deadline 0", DLA(1 * MS, 0, 10 * MS, 0)),
        REFUSE("deadline and period 0", DLA(1 * MS, 0, 0, 0)),
        REFUSE("runtime 1023", DLA(1023, 1 * MS, 1 * MS, 0)),
        REFUSE("runtime 0", DLA(0, 1 * MS, 1 * MS, 0)),
        REFUSE("runtime above the deadline", DLA(11 * MS, 10 * MS, 20 * MS, 0)),
        REFUSE("deadline above the period", DLA(1 * MS, 20 * MS, 10 * MS, 0)),
        REFUSE("bit 63 in the deadline", DLA(1 * MS, B63 | MS, 0, 0)),
        REFUSE("bit 63 in the period", DLA(1 * MS, 10 * MS, B63, 0)),
        REFUSE("UINT64_MAX everywhere", DLA(UINT64_MAX, UINT64_MAX, UINT64_MAX, 0)),
        REFUSE("a priority with SCHED_DEADLINE", ATTR({ .size = 56, .sched_policy = 6, .sched_priority = 1,
                                                              .sched_runtime = MS, .sched_deadline = 10 * MS })),

        KERNEL("unknown flag 0x80", DLA(1 * MS, 10 * MS, 10 * MS, 0x80)),
        KERNEL("the top flag bit", DLA(1 * MS, 10 * MS, 10 * MS, UINT64_C(1) << 63)),
        KERNEL("SCHED_FLAG_SUGOV (kernel only)", DLA(1 * MS, 10 * MS, 10 * MS, 0x10000000)),
        KERNEL("KEEP_POLICY", DLA(1 * MS, 10 * MS, 10 * MS, SETATTR_FLAG_KEEP_POLICY)),
        KERNEL("KEEP_PARAMS", DLA(1 * MS, 10 * MS, 10 * MS, SETATTR_FLAG_KEEP_PARAMS)),
        KERNEL("UTIL_CLAMP_MIN", DLA(1 * MS, 10 * MS, 10 * MS, SETATTR_FLAG_UTIL_CLAMP_MIN)),
        KERNEL("a negative policy", ATTR({ .size = 56, .sched_policy = 0x80000000u })),
        KERNEL("policy 4 (none)", ATTR({ .size = 56, .sched_policy = 4 })),
        KERNEL("SCHED_EXT", ATTR({ .size = 56, .sched_policy = 7 })),
        KERNEL("policy 1000", ATTR({ .size = 56, .sched_policy = 1000 })),
        KERNEL("FIFO priority 0", ATTR({ .size = 56, .sched_policy = SCHED_FIFO })),
        KERNEL("FIFO priority 100", ATTR({ .size = 56, .sched_policy = SCHED_FIFO, .sched_priority = 100 })),
        KERNEL("OTHER priority 1", ATTR({ .size = 56, .sched_policy = SCHED_OTHER, .sched_priority = 1 })),

        LEAVE("SCHED_OTHER", ATTR({ .size = 56, .sched_policy = SCHED_OTHER })),
        LEAVE("SCHED_OTHER with RESET_ON_FORK", ATTR({ .size = 56, .sched_policy = SCHED_OTHER,
                                                             .sched_flags = SETATTR_FLAG_RESET_ON_FORK })),
        LEAVE("SCHED_BATCH nice 5", ATTR({ .size = 56, .sched_policy = SCHED_BATCH, .sched_nice = 5 })),
        LEAVE("SCHED_IDLE", ATTR({ .size = 56, .sched_policy = SCHED_IDLE })),
        LEAVE("SCHED_FIFO 1", ATTR({ .size = 56, .sched_policy = SCHED_FIFO, .sched_priority = 1 })),
        LEAVE("SCHED_RR 99", ATTR({ .size = 56, .sched_policy = SCHED_RR, .sched_priority = 99 })),
        /* the deadline times of another policy are no matter to the kernel */
        LEAVE("SCHED_OTHER with deadline times", ATTR({ .size = 56, .sched_policy = SCHED_OTHER,
                                                              .sched_runtime = 1, .sched_deadline = 2 })),
};

Test(setattr, decides_the_kernels_way) {
        for (size_t i = 0; i < ELEMENTSOF(attr_cases); i++) {
                const AttrCase *t = &attr_cases[i];
                SetattrDecision d = decide_attr(0, &t->attr, sizeof t->attr, 0);

                cr_expect_eq(d.action, t->action, "%s: action %d, expected %d (%s)", t->name, d.action, t->action,
                             d.why ?: "");
                cr_expect(d.why && *d.why, "%s: says why", t->name);
                if (t->action == SETATTR_REFUSE)
                        cr_expect_eq(d.err, t->err, "%s: errno %d, expected %d", t->name, d.err, t->err);
                if (t->action == SETATTR_ADMIT) {
                        cr_expect(d.params.runtime == t->params.runtime && d.params.deadline == t->params.deadline &&
                                          d.params.period == t->params.period,
                                  "%s: asks %" PRIu64 "/%" PRIu64 "/%" PRIu64, t->name, d.params.runtime, d.params.deadline,
                                  d.params.period);
                        cr_expect(memcmp(&d.params, &d.asked, sizeof d.params) == 0, "%s: nothing raised", t->name);
                        cr_expect_eq(d.reclaim, !!(t->attr.sched_flags & SETATTR_FLAG_RECLAIM), "%s: reclaim", t->name);
                        cr_expect_eq(d.overrun, !!(t->attr.sched_flags & SETATTR_FLAG_DL_OVERRUN), "%s: overrun", t->name);
                }
        }
}

Test(setattr, the_arguments_first) {
        SchedAttr a = dl(1 * MS, 10 * MS, 10 * MS, 0);
        SetattrCall c = { .syscall = SETATTR_SYSCALL_SETATTR, .args = { 0, 0, 0 }, .mem = &a, .n_mem = sizeof a };
        SetattrDecision d;

        /* NULL attr, flags argument, negative pid: EINVAL, the kernel's to say */
        cr_expect_eq(setattr_decide(&c, NULL, NULL).action, SETATTR_KERNEL, "a NULL attr");
        cr_expect_eq(decide_attr(0, &a, sizeof a, 1).action, SETATTR_KERNEL, "flags argument 1");
        cr_expect_eq(decide_attr(0, &a, sizeof a, UINT64_C(1) << 32).action, SETATTR_ADMIT,
                     "only the low 32 bits of the flags register count");
        cr_expect_eq(decide_attr(-1, &a, sizeof a, 0).action, SETATTR_KERNEL, "pid -1");
        cr_expect_eq(decide_attr(INT32_MIN, &a, sizeof a, 0).action, SETATTR_KERNEL, "pid INT32_MIN");
        /* pid_t is 32 bits: 0x1_0000_0005 is pid 5 */
        d = decide_attr((int64_t) ((UINT64_C(1) << 32) | 5), &a, sizeof a, 0);
        cr_expect(d.action == SETATTR_ADMIT && d.pid == 5, "pid register 0x100000005 is pid 5 (%d)", d.pid);
        d = decide_attr(1234, &a, sizeof a, 0);
        cr_expect(d.action == SETATTR_ADMIT && d.pid == 1234, "another thread's pid is kept");
        /* unreadable memory: EFAULT, the kernel's */
        c.args[1] = 0x1000;
        c.mem = NULL;
        cr_expect_eq(setattr_decide(&c, NULL, NULL).action, SETATTR_KERNEL, "unreadable attr");
}

Test(setattr, sizes) {
        unsigned char big[PAGE + 1] = {};
        SchedAttr a = dl(1 * MS, 10 * MS, 10 * MS, 0);

        cr_expect_eq(setattr_read_size(SETATTR_SYSCALL_SETATTR, 0, PAGE), SETATTR_SIZE_VER0, "size 0 is VER0");
        cr_expect_eq(setattr_read_size(SETATTR_SYSCALL_SETATTR, 47, PAGE), 0u, "47: E2BIG");
        cr_expect_eq(setattr_read_size(SETATTR_SYSCALL_SETATTR, 1, PAGE), 0u, "1: E2BIG");
        cr_expect_eq(setattr_read_size(SETATTR_SYSCALL_SETATTR, 48, PAGE), 48u, "48");
        cr_expect_eq(setattr_read_size(SETATTR_SYSCALL_SETATTR, 56, PAGE), 56u, "56");
        cr_expect_eq(setattr_read_size(SETATTR_SYSCALL_SETATTR, PAGE, PAGE), (size_t) PAGE, "a page");
        cr_expect_eq(setattr_read_size(SETATTR_SYSCALL_SETATTR, PAGE + 1, PAGE), 0u, "above a page: E2BIG");
        cr_expect_eq(setattr_read_size(SETATTR_SYSCALL_SETATTR, UINT32_MAX, PAGE), 0u, "UINT32_MAX: E2BIG");
        cr_expect_eq(setattr_read_size(SETATTR_SYSCALL_SETSCHEDULER, 12345, PAGE), sizeof(int), "sched_param");

        /* VER0: the fields up to the period */
        a.size = 48;
        cr_expect_eq(decide_attr(0, &a, 48, 0).action, SETATTR_ADMIT, "VER0");
        /* shorter than VER0 read: the kernel's */
        cr_expect_eq(decide_attr(0, &a, 40, 0).action, SETATTR_KERNEL, "40 bytes");
        /* UTIL_CLAMP needs VER1 */
        a.sched_flags = SETATTR_FLAG_UTIL_CLAMP_MAX;
        cr_expect_eq(decide_attr(0, &a, 48, 0).action, SETATTR_KERNEL, "UTIL_CLAMP in VER0");
        /* a larger struct: zero bytes past the kernel's are fine, anything else is E2BIG */
        a = dl(1 * MS, 10 * MS, 10 * MS, 0);
        a.size = PAGE;
        memcpy(big, &a, sizeof a);
        cr_expect_eq(decide_attr(0, (SchedAttr *) big, PAGE, 0).action, SETATTR_ADMIT, "a page, zero tail");
        big[PAGE - 1] = 1;
        cr_expect_eq(decide_attr(0, (SchedAttr *) big, PAGE, 0).action, SETATTR_KERNEL, "a page, the last byte set");
        big[PAGE - 1] = 0;
        big[56] = 0x80;
        cr_expect_eq(decide_attr(0, (SchedAttr *) big, 57, 0).action, SETATTR_KERNEL, "57 bytes, the 57th set");
}

Test(setattr, sched_setscheduler) {
        static const struct {
                int64_t policy;
                int32_t priority;
                SetattrAction action;
        } cases[] = {
                { SCHED_OTHER, 0, SETATTR_LEAVE },
                { SCHED_OTHER | SETATTR_SCHED_RESET_ON_FORK, 0, SETATTR_LEAVE },
                { SCHED_BATCH, 0, SETATTR_LEAVE },
                { SCHED_IDLE, 0, SETATTR_LEAVE },
                { SCHED_FIFO, 1, SETATTR_LEAVE },
                { SCHED_RR | SETATTR_SCHED_RESET_ON_FORK, 99, SETATTR_LEAVE },
                { SCHED_FIFO, 0, SETATTR_KERNEL },
                { SCHED_FIFO, 100, SETATTR_KERNEL },
                { SCHED_FIFO, -1, SETATTR_KERNEL },
                { SCHED_OTHER, 5, SETATTR_KERNEL },
                { SCHED_DEADLINE, 0, SETATTR_KERNEL }, /* always EINVAL: no times */
                { -1, 0, SETATTR_KERNEL },
                { 4, 0, SETATTR_KERNEL },
                { 7, 0, SETATTR_KERNEL },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                int32_t prio = cases[i].priority;
                SetattrCall c = { .syscall = SETATTR_SYSCALL_SETSCHEDULER, .args = { 0, (uint64_t) cases[i].policy, 0x1000 },
                                  .mem = &prio, .n_mem = sizeof prio };
                SetattrDecision d = setattr_decide(&c, NULL, NULL);
                cr_expect_eq(d.action, cases[i].action, "policy %" PRIi64 " priority %d: %d, expected %d", cases[i].policy,
                             prio, d.action, cases[i].action);
        }
        int32_t prio = 0;
        SetattrCall c = { .syscall = SETATTR_SYSCALL_SETSCHEDULER, .args = { 0, SCHED_OTHER, 0x1000 } };
        cr_expect_eq(setattr_decide(&c, NULL, NULL).action, SETATTR_KERNEL, "unreadable sched_param");
        c.mem = &prio;
        c.n_mem = sizeof prio;
        c.args[0] = (uint64_t) -3;
        cr_expect_eq(setattr_decide(&c, NULL, NULL).action, SETATTR_KERNEL, "pid -3");
}

Test(setattr, limits_and_raise) {
        SchedAttr a = dl(1 * MS, 10 * MS, 10 * MS, 0);
        SetattrCall c = { .syscall = SETATTR_SYSCALL_SETATTR, .args = { 0, 0x1000, 0 }, .mem = &a, .n_mem = sizeof a };
        DlLimits lim = DL_LIMITS_DEFAULT;
        SetattrRaise raise = { .margin = 10 * MS /* 10% */, .overhead = 50 * US };
        SetattrDecision d;

        cr_expect_eq(setattr_decide(&c, NULL, &lim).action, SETATTR_ADMIT, "within the limits");
        a = dl(50 * US, 50 * US, 50 * US, 0);
        d = setattr_decide(&c, NULL, &lim);
        cr_expect(d.action == SETATTR_REFUSE && d.err == EINVAL, "period below sched_deadline_period_min_us");
        a = dl(1 * MS, 5 * NSEC_PER_SEC, 5 * NSEC_PER_SEC, 0);
        d = setattr_decide(&c, NULL, &lim);
        cr_expect(d.action == SETATTR_REFUSE && d.err == EINVAL, "period above sched_deadline_period_max_us");

        a = dl(1 * MS, 10 * MS, 10 * MS, 0);
        d = setattr_decide(&c, &raise, NULL);
        cr_expect_eq(d.action, SETATTR_ADMIT);
        cr_expect_eq(d.asked.runtime, 1 * MS, "the program's own runtime is kept in asked");
        cr_expect_eq(d.params.runtime, 1 * MS + 100 * US + 50 * US, "raised: 1ms + 10%% + 50us = %" PRIu64, d.params.runtime);
        cr_expect(d.params.deadline == 10 * MS && d.params.period == 10 * MS, "deadline and period as asked");

        /* raised above the deadline: EINVAL, nothing asked */
        a = dl(9950 * US, 10 * MS, 10 * MS, 0);
        d = setattr_decide(&c, &raise, NULL);
        cr_expect(d.action == SETATTR_REFUSE && d.err == EINVAL, "raised above the deadline");
        /* overflow in the raise */
        raise.overhead = UINT64_MAX;
        a = dl(1 * MS, 10 * MS, 10 * MS, 0);
        d = setattr_decide(&c, &raise, NULL);
        cr_expect(d.action == SETATTR_REFUSE && d.err == EINVAL, "an overhead that overflows");
}

Test(setattr, errno_table) {
        cr_expect_eq(setattr_errno(0, true), 0);
        cr_expect_eq(setattr_errno(-ENOSPC, true), EBUSY, "over budget");
        cr_expect_eq(setattr_errno(-EDQUOT, true), EBUSY, "over the user's limits");
        cr_expect_eq(setattr_errno(-EREMOTEIO, true), EBUSY, "the kernel refused edfd");
        cr_expect_eq(setattr_errno(-EBUSY, true), EBUSY, "foreign deadline thread");
        cr_expect_eq(setattr_errno(-EALREADY, true), EBUSY, "admitted by another");
        cr_expect_eq(setattr_errno(-EINVAL, true), EINVAL, "parameters");
        cr_expect_eq(setattr_errno(-EACCES, true), EPERM, "not this user's thread");
        cr_expect_eq(setattr_errno(-ENOENT, true), EPERM, "no such group");
        cr_expect_eq(setattr_errno(-ESRCH, true), ESRCH, "gone");
        cr_expect_eq(setattr_errno(-EBADMSG, true), EPERM, "anything else edfd says");
        /* not edfd's answer: the kernel's own, except the bus policy's refusal */
        cr_expect_eq(setattr_errno(-EHOSTUNREACH, false), 0, "edfd not on the bus");
        cr_expect_eq(setattr_errno(-ETIMEDOUT, false), 0, "no answer");
        cr_expect_eq(setattr_errno(-ECONNRESET, false), 0, "connection lost");
        cr_expect_eq(setattr_errno(-ENOENT, false), 0, "no bus socket");
        cr_expect_eq(setattr_errno(-EACCES, false), EPERM, "the bus policy refused");
}
