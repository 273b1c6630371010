/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* core/throttle.c: the sentence of why throttles are not counted, and when a count is reported. */

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "core/throttle.h"

Test(throttle, reason_names_the_step_the_error_and_the_hint) {
        char buf[256];

        cr_assert_str_eq(throttle_reason(THROTTLE_STEP_LOAD, EPERM, buf, sizeof buf),
                         "the kernel refused the BPF program: Operation not permitted (edfd needs CAP_BPF and "
                         "CAP_PERFMON, or CAP_SYS_ADMIN, and the bpf() system call)");
        cr_assert_str_eq(throttle_reason(THROTTLE_STEP_BTF, ENOENT, buf, sizeof buf),
                         "the kernel's BTF (/sys/kernel/btf/vmlinux) is missing: No such file or directory (the "
                         "kernel has no BTF (CONFIG_DEBUG_INFO_BTF) or no sched_switch tracepoint)");
        cr_assert_str_eq(throttle_reason(THROTTLE_STEP_ATTACH, 524, buf, sizeof buf),
                         "the BPF program does not attach to sched_switch: not supported (the kernel is too old for "
                         "BTF raw tracepoints (5.5 and later have them))");
        /* An errno without a hint: the error alone. */
        cr_assert_str_eq(throttle_reason(THROTTLE_STEP_OPEN, ENOMEM, buf, sizeof buf),
                         "the BPF object does not open: Cannot allocate memory");
        /* Missing BTF read as EPERM is no capability problem: no hint. */
        cr_assert_str_eq(throttle_reason(THROTTLE_STEP_BTF, EACCES, buf, sizeof buf),
                         "the kernel's BTF (/sys/kernel/btf/vmlinux) is missing: Permission denied");
}

Test(throttle, reason_is_cut_and_terminated) {
        char buf[16];

        memset(buf, 'x', sizeof buf);
        throttle_reason(THROTTLE_STEP_LOAD, EPERM, buf, sizeof buf);
        cr_assert_eq(strlen(buf), sizeof buf - 1);
        cr_assert_str_eq(buf, "the kernel refu");
        cr_assert_eq(throttle_reason((ThrottleStep) 99, EIO, buf, 0), buf); /* size 0: nothing written */
}

Test(throttle, grew_reports_growth_once) {
        uint64_t seen = 0;

        cr_assert_not(throttle_grew(&seen, 0));
        cr_assert(throttle_grew(&seen, 3));
        cr_assert_eq(seen, 3);
        cr_assert_not(throttle_grew(&seen, 3)); /* the same count: nothing new */
        cr_assert(throttle_grew(&seen, 4));
        cr_assert(throttle_grew(&seen, UINT64_MAX));
        cr_assert_not(throttle_grew(&seen, UINT64_MAX));
}

Test(throttle, grew_takes_a_lower_count_as_the_new_base) {
        uint64_t seen = 10;

        cr_assert_not(throttle_grew(&seen, 2)); /* the entry was made again: from 2 on */
        cr_assert_eq(seen, 2);
        cr_assert(throttle_grew(&seen, 5));
}

Test(throttle, counts_grew_says_which_count_grew) {
        ThrottleCounts seen = { 0, 0 };

        cr_assert_eq(throttle_counts_grew(&seen, &(ThrottleCounts) { 0, 0 }), 0u);
        cr_assert_eq(throttle_counts_grew(&seen, &(ThrottleCounts) { 2, 0 }), THROTTLE_GREW_THROTTLES);
        cr_assert_eq(throttle_counts_grew(&seen, &(ThrottleCounts) { 2, 1 }), THROTTLE_GREW_LOCK_WAITS);
        cr_assert_eq(throttle_counts_grew(&seen, &(ThrottleCounts) { 3, 5 }),
                     THROTTLE_GREW_THROTTLES | THROTTLE_GREW_LOCK_WAITS);
        cr_assert_eq(seen.throttles, 3);
        cr_assert_eq(seen.lock_waits, 5);
        /* The entry made again: both lower, the new base, nothing reported. */
        cr_assert_eq(throttle_counts_grew(&seen, &(ThrottleCounts) { 0, 0 }), 0u);
        cr_assert_eq(throttle_counts_grew(&seen, &(ThrottleCounts) { 0, UINT64_MAX }), THROTTLE_GREW_LOCK_WAITS);
}
