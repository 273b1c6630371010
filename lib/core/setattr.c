/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/sched-attr.h"
#include "core/calibration.h"
#include "core/setattr.h"

/* The kernel's policies (include/uapi/linux/sched.h); SCHED_EXT (7) is left to the kernel. */
#define POLICY_OTHER 0u
#define POLICY_FIFO 1u
#define POLICY_RR 2u
#define POLICY_BATCH 3u
#define POLICY_IDLE 5u
#define POLICY_DEADLINE 6u
#define RT_PRIO_MAX 99u

size_t setattr_read_size(SetattrSyscall syscall, uint32_t size_field, size_t page_size) {
        if (syscall == SETATTR_SYSCALL_SETSCHEDULER)
                return sizeof(int32_t);
        if (size_field == 0)
                return SETATTR_SIZE_VER0;
        if (size_field < SETATTR_SIZE_VER0 || size_field > page_size)
                return 0;
        return size_field;
}

static SetattrDecision kernel(const char *why) {
        return (SetattrDecision) { .action = SETATTR_KERNEL, .why = why };
}

static bool is_leave_policy(uint32_t policy) {
        return policy == POLICY_OTHER || policy == POLICY_FIFO || policy == POLICY_RR || policy == POLICY_BATCH ||
               policy == POLICY_IDLE;
}

/* The kernel's priority rule: 1..99 for FIFO and RR, 0 for every other policy. */
static bool priority_fits(uint32_t policy, uint32_t priority) {
        if (priority > RT_PRIO_MAX)
                return false;
        return (policy == POLICY_FIFO || policy == POLICY_RR) == (priority != 0);
}

static SetattrDecision decide_setscheduler(const SetattrCall *c, int32_t pid) {
        int32_t policy = (int32_t) (uint32_t) c->args[1];
        uint32_t p;
        int32_t priority;

        if (policy < 0)
                return kernel("a negative policy (EINVAL)");
        if (!c->mem || c->n_mem != sizeof priority)
                return kernel("the sched_param cannot be read (EINVAL or EFAULT)");
        if (pid < 0)
                return kernel("a negative pid (EINVAL)");
        memcpy(&priority, c->mem, sizeof priority);
        p = (uint32_t) policy & ~SETATTR_SCHED_RESET_ON_FORK;
        if (p == POLICY_DEADLINE)
                return kernel("sched_setscheduler cannot give deadline times (EINVAL)");
        if (!is_leave_policy(p))
                return kernel("a policy the agent leaves to the kernel");
        if (priority < 0 || !priority_fits(p, (uint32_t) priority))
                return kernel("a priority out of range for the policy (EINVAL)");
        return (SetattrDecision) { .action = SETATTR_LEAVE, .pid = pid, .why = "to a policy other than SCHED_DEADLINE" };
}

/* A copy of a sched_attr of n bytes (n >= VER0): the fields it has, zero after; false when bytes
 * past the kernel's struct are not zero (copy_struct_from_user()'s E2BIG). */
static bool attr_copy(const void *mem, size_t n, SchedAttr *ret) {
        const unsigned char *b = mem;

        for (size_t i = sizeof(SchedAttr); i < n; i++)
                if (b[i] != 0)
                        return false;
        *ret = (SchedAttr) {};
        memcpy(ret, mem, MIN(n, sizeof(SchedAttr)));
        return true;
}

static SetattrDecision decide_setattr(const SetattrCall *c, int32_t pid, const SetattrRaise *raise,
                                      const DlLimits *limits) {
        uint32_t flags_arg = (uint32_t) c->args[2];
        SetattrDecision d = { .pid = pid };
        SchedAttr a;
        ParamsOutcome o;
        DlParams p;

        /* The kernel's order: the arguments, then the copy, then the policy. */
        if (c->args[1] == 0 || pid < 0 || flags_arg != 0)
                return kernel("a NULL attr, a negative pid or a flags argument (EINVAL)");
        if (!c->mem || c->n_mem < SETATTR_SIZE_VER0)
                return kernel("the sched_attr cannot be read, or its size is refused (EFAULT or E2BIG)");
        if (!attr_copy(c->mem, c->n_mem, &a))
                return kernel("bytes past the kernel's sched_attr are not zero (E2BIG)");
        if ((a.sched_flags & (SETATTR_FLAG_UTIL_CLAMP_MIN | SETATTR_FLAG_UTIL_CLAMP_MAX)) && c->n_mem < SETATTR_SIZE_VER1)
                return kernel("UTIL_CLAMP in a sched_attr without its fields (EINVAL)");
        if ((int32_t) a.sched_policy < 0)
                return kernel("a negative policy (EINVAL)");
        if (a.sched_flags & ~(uint64_t) SETATTR_FLAGS_ALL)
                return kernel("unknown flags (EINVAL)");
        if (a.sched_flags & (SETATTR_FLAG_KEEP_POLICY | SETATTR_FLAG_KEEP_PARAMS | SETATTR_FLAG_UTIL_CLAMP_MIN |
                             SETATTR_FLAG_UTIL_CLAMP_MAX))
                return kernel("KEEP_POLICY, KEEP_PARAMS and UTIL_CLAMP are left to the kernel");

        if (a.sched_policy != POLICY_DEADLINE) {
                if (!is_leave_policy(a.sched_policy))
                        return kernel("a policy the agent leaves to the kernel");
                if (!priority_fits(a.sched_policy, a.sched_priority))
                        return kernel("a priority out of range for the policy (EINVAL)");
                d.action = SETATTR_LEAVE;
                d.why = "to a policy other than SCHED_DEADLINE";
                return d;
        }

        /* __checkparam_dl(), with the kernel's convention that a period of 0 is the deadline. */
        d.action = SETATTR_REFUSE;
        d.err = EINVAL;
        if (a.sched_priority != 0) {
                d.why = "a SCHED_DEADLINE priority must be 0";
                return d;
        }
        if (a.sched_deadline == 0) {
                d.why = "the deadline is 0";
                return d;
        }
        p = (DlParams) { .runtime = a.sched_runtime, .deadline = a.sched_deadline,
                         .period = a.sched_period ?: a.sched_deadline };
        d.asked = p;
        o = dl_params_check(&p, limits);
        if (o != PARAMS_OK) {
                d.why = params_outcome_to_string(o);
                return d;
        }
        d.asked = p;
        if (raise && (raise->margin || raise->overhead)) {
                uint64_t runtime;
                if (budget_from_work(p.runtime, raise->margin, raise->overhead, &runtime) < 0 || runtime > p.deadline) {
                        d.why = "the runtime raised by --margin and --overhead is above the deadline";
                        return d;
                }
                p.runtime = runtime;
        }
        d.action = SETATTR_ADMIT;
        d.err = 0;
        d.why = "to SCHED_DEADLINE";
        d.params = p;
        d.reclaim = a.sched_flags & SETATTR_FLAG_RECLAIM;
        d.overrun = a.sched_flags & SETATTR_FLAG_DL_OVERRUN;
        return d;
}

SetattrDecision setattr_decide(const SetattrCall *c, const SetattrRaise *raise, const DlLimits *limits) {
        /* pid_t and the flags are ints: the kernel takes the low 32 bits of each register. */
        int32_t pid = (int32_t) (uint32_t) c->args[0];

        if (c->syscall == SETATTR_SYSCALL_SETSCHEDULER)
                return decide_setscheduler(c, pid);
        return decide_setattr(c, pid, raise, limits);
}

int setattr_errno(int err, bool from_edfd) {
        static const struct {
                int edfd, kernel;
        } table[] = {
                { ENOSPC, EBUSY },     /* over the group's budget */
                { EDQUOT, EBUSY },     /* over the user's limits */
                { EREMOTEIO, EBUSY },  /* the kernel refused edfd (its message says why) */
                { EBUSY, EBUSY },      /* the thread runs SCHED_DEADLINE outside edfd */
                { EALREADY, EBUSY },   /* admitted already, by someone else */
                { EINVAL, EINVAL },    /* parameters edfd's rules refuse */
                { EACCES, EPERM },     /* not this user's thread, or not their group */
                { ENOENT, EPERM },     /* no such group: nothing this user may be admitted into */
                { ESRCH, ESRCH },      /* the thread is gone */
        };

        if (err >= 0)
                return 0;
        if (!from_edfd)
                /* The bus policy's refusal is a refusal; anything else means edfd was not asked. */
                return err == -EACCES ? EPERM : 0;
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (table[i].edfd == -err)
                        return table[i].kernel;
        return EPERM; /* a newer edfd's refusal */
}
