/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The little edfctl reads from /proc: a thread's command name for the tables, and the process a
 * thread belongs to for `admit -t TID`. Both read through basic/proc.h. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "basic/parse.h"
#include "basic/proc.h"
#include "edfctl.h"

int proc_thread_comm(uint32_t pid, uint32_t tid, char buf[static 17]) {
        char path[64], tmp[PROC_COMM_MAX + 2];
        int r;

        snprintf(path, sizeof path, "/proc/%" PRIu32 "/task/%" PRIu32 "/comm", pid, tid);
        r = proc_read_file(AT_FDCWD, path, PROC_READ_LINE | PROC_READ_TRUNCATE, tmp, sizeof tmp, NULL);
        if (r < 0)
                return r;
        tmp[strcspn(tmp, "\n")] = '\0';
        tmp[16] = '\0'; /* TASK_COMM_LEN - 1, never more */
        memcpy(buf, tmp, strlen(tmp) + 1);
        return 0;
}

int proc_thread_tgid(uint32_t tid, uint32_t *ret_pid) {
        char path[64], buf[4096];
        const char *p;
        uint32_t v;
        int r;

        snprintf(path, sizeof path, "/proc/%" PRIu32 "/status", tid);
        /* Tgid: is on the fourth line; what comes after it may be cut. */
        r = proc_read_file(AT_FDCWD, path, PROC_READ_TRUNCATE, buf, sizeof buf, NULL);
        if (r == -ENOENT)
                return -ESRCH;
        if (r < 0)
                return r;
        p = strstr(buf, "\nTgid:");
        if (!p)
                return -EBADMSG;
        p += strlen("\nTgid:");
        p += strspn(p, " \t");
        if (parse_u32_slice(p, strcspn(p, "\n"), &v, NULL) < 0 || v == 0 || v > INT32_MAX)
                return -EBADMSG;
        *ret_pid = v;
        return 0;
}
