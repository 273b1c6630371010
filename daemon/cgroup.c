/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "core/bandwidth.h"
#include "cgroup.h"
#include "basic/macro.h"

bool cgroup_root_usable(const char *root) {
        struct statfs fs;

        return statfs(root, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

static int write_file(const char *path, const char *value) {
        int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        size_t n = strlen(value);
        ssize_t w;

        if (fd < 0)
                return -errno;
        w = write(fd, value, n);
        if (w < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        close(fd);
        return (size_t) w == n ? 0 : -EIO;
}

static bool has_controller(const char *dir, const char *controller) {
        char path[4096], buf[512];
        FILE *f;
        bool found = false;

        snprintf(path, sizeof path, "%s/cgroup.controllers", dir);
        f = fopen(path, "re");
        if (!f)
                return false;
        if (fgets(buf, sizeof buf, f))
                for (char *tok = strtok(buf, " \n"); tok; tok = strtok(NULL, " \n"))
                        if (strcmp(tok, controller) == 0)
                                found = true;
        fclose(f);
        return found;
}

/* mkdir one level, and let its children have the cpu controller if this level has it. */
static int make_level(const char *dir) {
        char path[4096];

        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        if (has_controller(dir, "cpu")) {
                snprintf(path, sizeof path, "%s/cgroup.subtree_control", dir);
                (void) write_file(path, "+cpu"); /* EBUSY if processes sit here; then cpu.max stays */
        }
        return 0;
}

int cgroup_ensure(const char *root, const char *rel) {
        char path[4096];
        size_t n;
        int r;

        if (snprintf(path, sizeof path, "%s", root) >= (int) sizeof path)
                return -ENAMETOOLONG;
        /* The parent of the root must hand the cpu controller down too. */
        r = make_level(path);
        if (r < 0)
                return r;
        n = strlen(path);
        for (const char *p = rel;;) {
                const char *slash = strchr(p, '/');
                size_t len = slash ? (size_t) (slash - p) : strlen(p);
                if (n + 1 + len + 1 > sizeof path)
                        return -ENAMETOOLONG;
                path[n++] = '/';
                memcpy(path + n, p, len);
                n += len;
                path[n] = '\0';
                r = make_level(path);
                if (r < 0)
                        return r;
                if (!slash)
                        break;
                p = slash + 1;
        }
        if (n + sizeof("/" CGROUP_LEAF) > sizeof path)
                return -ENAMETOOLONG;
        strcpy(path + n, "/" CGROUP_LEAF);
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

int cgroup_set_cpu_max(const char *root, const char *rel, uint64_t runtime_ns, uint64_t period_ns) {
        char path[4096], value[64];
        uint64_t quota, period;
        int r;

        r = bw_cpu_max(runtime_ns, period_ns, &quota, &period);
        if (r < 0)
                return r;
        snprintf(path, sizeof path, "%s/%s/cpu.max", root, rel);
        if (access(path, F_OK) < 0)
                return -ENOENT;
        snprintf(value, sizeof value, "%" PRIu64 " %" PRIu64, quota, period);
        return write_file(path, value);
}

int cgroup_move_process(const char *root, const char *rel, pid_t pid) {
        char path[4096], value[32];

        snprintf(path, sizeof path, "%s/%s/" CGROUP_LEAF "/cgroup.procs", root, rel);
        snprintf(value, sizeof value, "%d", (int) pid);
        return write_file(path, value);
}

int cgroup_remove(const char *root, const char *rel) {
        char path[4096];

        snprintf(path, sizeof path, "%s/%s/" CGROUP_LEAF, root, rel);
        if (rmdir(path) < 0 && errno != ENOENT)
                return -errno;
        snprintf(path, sizeof path, "%s/%s", root, rel);
        if (rmdir(path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}
