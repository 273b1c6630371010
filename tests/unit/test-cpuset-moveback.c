/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Where a process released from edfd's cgroup v2 partitions goes (issue 41): back to its cgroup,
 * else the nearest ancestor, never the root cgroup unless it came from there; nothing for an
 * origin that is not a clean cgroup path. cpusets_move_back_candidate() is the choice alone; the
 * moves themselves are the VM test's (tests/vm). */

#include <criterion/criterion.h>
#include <stdbool.h>
#include <string.h>

#include "cpuset.h"

static void want(const char *origin, const char *const *expected) {
        char buf[256];
        size_t i = 0;

        for (; expected[i]; i++) {
                cr_assert(cpusets_move_back_candidate(origin, i, buf, sizeof buf), "%s: candidate %zu missing", origin, i);
                cr_assert_str_eq(buf, expected[i], "%s: candidate %zu", origin, i);
        }
        cr_assert_not(cpusets_move_back_candidate(origin, i, buf, sizeof buf), "%s: more than %zu candidates (%s)",
                      origin, i, buf);
}

Test(moveback, origin_then_ancestors_never_the_root) {
        want("/user.slice/user-1000.slice/session-2.scope",
             (const char *[]) { "/user.slice/user-1000.slice/session-2.scope", "/user.slice/user-1000.slice",
                                "/user.slice", NULL });
        want("/system.slice/app.service", (const char *[]) { "/system.slice/app.service", "/system.slice", NULL });
        want("/a", (const char *[]) { "/a", NULL });
}

Test(moveback, the_root_only_for_a_process_from_the_root) {
        want("/", (const char *[]) { "/", NULL });
}

Test(moveback, nothing_for_what_is_not_a_clean_path) {
        static const char *const bad[] = { "", "a/b", "//", "/a//b", "/a/", "/a/../b", "/..", "/./a", "/a/.", NULL };
        char buf[64];

        for (size_t i = 0; bad[i]; i++)
                cr_assert_not(cpusets_move_back_candidate(bad[i], 0, buf, sizeof buf), "\"%s\" is not a cgroup path",
                              bad[i]);
        cr_assert_not(cpusets_move_back_candidate(NULL, 0, buf, sizeof buf));
        cr_assert(cpusets_move_back_candidate("/a/..b/.c", 1, buf, sizeof buf), "names that start with dots are names");
        cr_assert_str_eq(buf, "/a/..b");
        cr_assert_not(cpusets_move_back_candidate("/abcdef", 0, buf, 7), "does not fit");
        cr_assert(cpusets_move_back_candidate("/abcdef", 0, buf, 8));
}
