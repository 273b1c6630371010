/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/throttle.h"

/* What an errno of the kernel usually means when it refuses a tracing program. */
static const char *hint_of(ThrottleStep step, int err) {
        switch (err) {
        case EPERM:
        case EACCES:
                return step == THROTTLE_STEP_BTF ? NULL
                                                 : "edfd needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN, and the bpf() "
                                                   "system call";
        case ENOENT:
        case ESRCH:
                return "the kernel has no BTF (CONFIG_DEBUG_INFO_BTF) or no sched_switch tracepoint";
        case EINVAL:
        case E2BIG:
        case EOPNOTSUPP:
        case 524: /* the kernel's ENOTSUPP */
                return "the kernel is too old for BTF raw tracepoints (5.5 and later have them)";
        case ENOSYS:
                return "the kernel has no bpf() system call (CONFIG_BPF_SYSCALL)";
        default:
                return NULL;
        }
}

char *throttle_reason(ThrottleStep step, int err, char *buf, size_t size) {
        static const char *const what[] = {
                [THROTTLE_STEP_BTF] = "the kernel's BTF (/sys/kernel/btf/vmlinux) is missing",
                [THROTTLE_STEP_OPEN] = "the BPF object does not open",
                [THROTTLE_STEP_LOAD] = "the kernel refused the BPF program",
                [THROTTLE_STEP_ATTACH] = "the BPF program does not attach to sched_switch",
        };
        const char *w = (unsigned) step < sizeof what / sizeof what[0] ? what[step] : "counting failed";
        const char *hint = hint_of(step, err);

        if (size == 0)
                return buf;
        if (err == 524)
                snprintf(buf, size, "%s: not supported%s%s%s", w, hint ? " (" : "", hint ? hint : "", hint ? ")" : "");
        else
                snprintf(buf, size, "%s: %s%s%s%s", w, strerror(err), hint ? " (" : "", hint ? hint : "",
                         hint ? ")" : "");
        return buf;
}

bool throttle_grew(uint64_t *reported, uint64_t now) {
        bool grew = now > *reported;

        *reported = now;
        return grew;
}

unsigned throttle_counts_grew(ThrottleCounts *reported, const ThrottleCounts *now) {
        unsigned grew = 0;

        if (throttle_grew(&reported->throttles, now->throttles))
                grew |= THROTTLE_GREW_THROTTLES;
        if (throttle_grew(&reported->lock_waits, now->lock_waits))
                grew |= THROTTLE_GREW_LOCK_WAITS;
        return grew;
}
