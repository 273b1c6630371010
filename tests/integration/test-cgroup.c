/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The cgroup adapter against the real cgroup v2 hierarchy of this machine (directories, leaves,
 * moving a process) and, for the controller files this machine's v2 hierarchy does not offer
 * (cpu.max, cgroup.subtree_control with cpu), against a directory that has them as plain files. */

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"

static char *read_all(const char *path) {
        static char buf[4096];
        FILE *f = fopen(path, "re");
        size_t n;

        if (!f)
                return NULL;
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        return buf;
}

static void write_all(const char *path, const char *s) {
        FILE *f = fopen(path, "we");
        cr_assert(f, "open %s: %s", path, strerror(errno));
        fputs(s, f);
        fclose(f);
}

static const char *v2_mount(void) {
        static const char *const candidates[] = { "/sys/fs/cgroup/unified", "/sys/fs/cgroup" };
        for (size_t i = 0; i < 2; i++)
                if (cgroup_root_usable(candidates[i]))
                        return candidates[i];
        return NULL;
}

Test(cgroup, real_hierarchy_dirs_leaf_and_move) {
        const char *v2 = v2_mount();
        char root[PATH_MAX], path[PATH_MAX + 64];
        pid_t child;
        int status;

        if (geteuid() != 0)
                cr_skip_test("needs root to create cgroups");
        if (!v2)
                cr_skip_test("no cgroup v2 hierarchy mounted at /sys/fs/cgroup/unified or /sys/fs/cgroup");
        snprintf(root, sizeof root, "%s/edfd-test-cgroup-%d", v2, (int) getpid());
        cr_assert_eq(mkdir(root, 0755), 0, "mkdir %s: %s", root, strerror(errno));
        cr_assert(cgroup_root_usable(root));

        cr_assert_eq(cgroup_ensure(root, "audio/pipewire"), 0);
        snprintf(path, sizeof path, "%s/audio/pipewire/" CGROUP_LEAF "/cgroup.procs", root);
        cr_assert_eq(access(path, F_OK), 0, "%s missing", path);
        /* Idempotent. */
        cr_assert_eq(cgroup_ensure(root, "audio/pipewire"), 0);

        child = fork();
        cr_assert_geq(child, 0);
        if (child == 0) {
                pause();
                _exit(0);
        }
        cr_assert_eq(cgroup_move_process(root, "audio/pipewire", child), 0);
        snprintf(path, sizeof path, "/proc/%d/cgroup", (int) child);
        char *cg = read_all(path);
        cr_assert(cg && strstr(cg, "edfd-test-cgroup-") && strstr(cg, "/audio/pipewire/" CGROUP_LEAF),
                  "child's cgroup: %s", cg ? cg : "(unreadable)");

        /* A cgroup with a process in it cannot go. */
        cr_assert_eq(cgroup_remove(root, "audio/pipewire"), -EBUSY);
        /* Moving a process that does not exist fails and names the error. */
        cr_assert_lt(cgroup_move_process(root, "audio/pipewire", 999999999), 0);

        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        /* The kernel needs a moment to empty the cgroup after the exit. */
        int r = -EBUSY;
        for (int i = 0; i < 200 && r == -EBUSY; i++) {
                r = cgroup_remove(root, "audio/pipewire");
                if (r == -EBUSY)
                        usleep(5000);
        }
        cr_assert_eq(r, 0, "remove: %s", strerror(-r));
        cr_assert_eq(cgroup_remove(root, "audio"), 0);
        cr_assert_eq(rmdir(root), 0);

        /* cpu.max: this machine's hybrid layout has no cpu controller in v2 (see below for the file). */
        snprintf(path, sizeof path, "%s/cpu.max", v2);
        if (access(path, F_OK) < 0)
                cr_log_info("no cpu controller in %s: cpu.max is tested on plain files below and in the VM test", v2);
}

/* The controller files, where this kernel's v2 hierarchy has none: a plain directory that has
 * them, so that what edfd writes can be read back. */
Test(cgroup, controller_files) {
        char tmpl[] = "/tmp/edfd-test-cgroup-XXXXXX", path[PATH_MAX + 64];
        char *root = mkdtemp(tmpl);

        cr_assert(root);
        snprintf(path, sizeof path, "%s/cgroup.controllers", root);
        write_all(path, "cpuset cpu io memory pids\n");
        snprintf(path, sizeof path, "%s/cgroup.subtree_control", root);
        write_all(path, "");
        cr_assert_eq(cgroup_ensure(root, "video"), 0);
        cr_assert_str_eq(read_all(path), "+cpu", "the cpu controller is handed down from the root");

        /* No cpu.max in the group: ENOENT, the daemon says so once and carries on. */
        cr_assert_eq(cgroup_set_cpu_max(root, "video", 20000000, 100000000), -ENOENT);

        static const struct {
                uint64_t runtime, period;
                const char *want;
        } cases[] = {
                { 20000000, 100000000, "20000 100000" },      /* 20 ms per 100 ms */
                { 150000000, 100000000, "150000 100000" },    /* 150%: quota above period */
                { 2000000, 10000000000, "1000 1000000" },     /* 0.02%: below 1 ms per 1 s, the smallest cap */
                { 50000, 500000, "1000 10000" },              /* 10% of 500 us: period grown until quota is 1 ms */
        };
        snprintf(path, sizeof path, "%s/video/cpu.max", root);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                write_all(path, ""); /* a plain file: the kernel would not need this truncation */
                int r = cgroup_set_cpu_max(root, "video", cases[i].runtime, cases[i].period);
                cr_assert_eq(r, 0, "case %zu: %s", i, strerror(-r));
                cr_expect_str_eq(read_all(path), cases[i].want, "case %zu", i);
        }
        char cmd[PATH_MAX + 16];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        cr_assert_eq(system(cmd), 0);
}
