/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The little edfctl reads from /proc: a thread's command name for the tables, and the process a
 * thread belongs to for `admit -t TID`. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "edfctl.h"

/* Read up to size - 1 bytes of path into buf, NUL-terminated. Returns the length or -errno. */
static ssize_t read_small_file(const char *path, char *buf, size_t size) {
        ssize_t n;
        int fd;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        if (n < 0)
                n = -errno;
        else
                buf[n] = '\0';
        close(fd);
        return n;
}

int proc_thread_comm(uint32_t pid, uint32_t tid, char buf[static 17]) {
        char path[64], tmp[32];
        ssize_t n;

        snprintf(path, sizeof path, "/proc/%" PRIu32 "/task/%" PRIu32 "/comm", pid, tid);
        n = read_small_file(path, tmp, sizeof tmp);
        if (n < 0)
                return (int) n;
        tmp[strcspn(tmp, "\n")] = '\0';
        tmp[16] = '\0'; /* TASK_COMM_LEN - 1, never more */
        memcpy(buf, tmp, strlen(tmp) + 1);
        return 0;
}

int proc_thread_tgid(uint32_t tid, uint32_t *ret_pid) {
        char path[64], buf[4096];
        const char *p;
        unsigned long v;
        ssize_t n;

        snprintf(path, sizeof path, "/proc/%" PRIu32 "/status", tid);
        n = read_small_file(path, buf, sizeof buf);
        if (n == -ENOENT)
                return -ESRCH;
        if (n < 0)
                return (int) n;
        p = strstr(buf, "\nTgid:");
        if (!p || sscanf(p + strlen("\nTgid:"), "%lu", &v) != 1 || v == 0 || v > INT32_MAX)
                return -EBADMSG;
        *ret_pid = (uint32_t) v;
        return 0;
}
