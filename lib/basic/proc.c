/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/parse.h"
#include "basic/proc.h"

/* The stat of a task is a line of some 300 bytes; none is this long. */
#define PROC_STAT_SIZE 4096

int proc_read_file(int dir_fd, const char *path, ProcReadFlags flags, char *buf, size_t size, size_t *ret_len) {
        size_t len = 0;
        int fd, r = 0;

        if (!path || !buf || size == 0)
                return -EINVAL;
        fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return errno == ENOENT || errno == ESRCH ? -ENOENT : -errno;
        for (;;) {
                ssize_t k;

                if (len == size - 1) {
                        char more;

                        if (flags & PROC_READ_TRUNCATE)
                                break;
                        /* Full: the file fits only if this is its end. */
                        k = pread(fd, &more, 1, (off_t) len);
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k < 0)
                                r = errno == ESRCH ? -ENOENT : -errno;
                        else if (k > 0)
                                r = -EFBIG;
                        break;
                }
                k = pread(fd, buf + len, size - 1 - len, (off_t) len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        r = errno == ESRCH ? -ENOENT : -errno; /* the task was reaped since the open */
                        break;
                }
                if (k == 0)
                        break;
                len += (size_t) k;
                if ((flags & PROC_READ_LINE) && buf[len - 1] == '\n')
                        break;
        }
        close(fd);
        if (r < 0)
                return r;
        buf[len] = '\0';
        if (ret_len)
                *ret_len = len;
        return 0;
}

int proc_stat_parse(const char *buf, size_t len, unsigned fields, ProcStat *ret) {
        const char *p, *end, *open, *close_paren;
        ProcStat st = {};

        if (!buf || !ret)
                return -EINVAL;
        end = buf + len;
        close_paren = memrchr(buf, ')', len);
        if (!close_paren)
                return -EBADMSG;
        open = memchr(buf, '(', (size_t) (close_paren - buf));
        if (!open)
                return -EBADMSG;
        if (fields & PROC_STAT_COMM) {
                size_t n = MIN((size_t) (close_paren - open - 1), (size_t) PROC_COMM_MAX);
                memcpy(st.comm, open + 1, n);
                st.comm[n] = '\0';
        }

        /* Fields 3 (state) to 22 (starttime), or 39 (processor): each preceded by exactly one blank,
         * none empty. */
        p = close_paren + 1;
        for (unsigned field = 3, last = (fields & PROC_STAT_PROCESSOR) ? 39 : 22; field <= last; field++) {
                const char *tok;
                size_t n;

                if (p >= end || *p != ' ')
                        return -EBADMSG;
                tok = ++p;
                while (p < end && *p != ' ' && *p != '\n' && *p != '\0')
                        p++;
                n = (size_t) (p - tok);
                if (n == 0)
                        return -EBADMSG;
                switch (field) {
                case 3:
                        if (fields & PROC_STAT_STATE) {
                                if (n != 1)
                                        return -EBADMSG;
                                st.state = *tok;
                        }
                        break;
                case 4:
                        if ((fields & PROC_STAT_PPID) && parse_u32_slice(tok, n, &st.ppid, NULL) < 0)
                                return -EBADMSG;
                        break;
                case 9:
                        if ((fields & PROC_STAT_FLAGS) && parse_u64_slice(tok, n, &st.flags, NULL) < 0)
                                return -EBADMSG;
                        break;
                case 22:
                        if ((fields & PROC_STAT_START_TIME) && parse_u64_slice(tok, n, &st.start_time, NULL) < 0)
                                return -EBADMSG;
                        break;
                case 39:
                        if (parse_u32_slice(tok, n, &st.processor, NULL) < 0)
                                return -EBADMSG;
                        break;
                }
        }
        *ret = st;
        return 0;
}

static int read_stat_at(int dir_fd, const char *path, unsigned fields, ProcStat *ret) {
        char buf[PROC_STAT_SIZE];
        size_t len;
        int r;

        r = proc_read_file(dir_fd, path, PROC_READ_LINE, buf, sizeof buf, &len);
        if (r == -EFBIG)
                return -EBADMSG;
        if (r < 0)
                return r;
        return proc_stat_parse(buf, len, fields, ret);
}

int proc_read_stat(pid_t pid, pid_t tid, unsigned fields, ProcStat *ret) {
        char path[64];

        if (pid <= 0 || tid <= 0 || !ret)
                return -EINVAL;
        snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int) pid, (int) tid);
        return read_stat_at(AT_FDCWD, path, fields, ret);
}

int proc_entry_read(const ProcEntry *e, const char *file, ProcReadFlags flags, char *buf, size_t size,
                    size_t *ret_len) {
        char path[64];

        if (!e || !file)
                return -EINVAL;
        if ((size_t) snprintf(path, sizeof path, "%s/%s", e->name, file) >= sizeof path)
                return -ENAMETOOLONG;
        return proc_read_file(e->dir_fd, path, flags, buf, size, ret_len);
}

int proc_entry_stat(const ProcEntry *e, unsigned fields, ProcStat *ret) {
        char path[64];

        if (!e || !ret)
                return -EINVAL;
        if ((size_t) snprintf(path, sizeof path, "%s/stat", e->name) >= sizeof path)
                return -ENAMETOOLONG;
        return read_stat_at(e->dir_fd, path, fields, ret);
}

/* The directory at path (relative to dir_fd), for readdir. NULL with errno set. */
static DIR *open_dir(int dir_fd, const char *path) {
        int fd = openat(dir_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d;

        if (fd < 0)
                return NULL;
        d = fdopendir(fd);
        if (!d) {
                int e = errno;
                close(fd);
                errno = e;
        }
        return d;
}

/* A directory entry that names a task: a decimal id above 0. */
static bool entry_id(const struct dirent *de, pid_t *ret) {
        uint32_t v;

        if (parse_u32(de->d_name, &v, NULL) < 0 || v == 0 || v > INT32_MAX)
                return false;
        *ret = (pid_t) v;
        return true;
}

/* cb for every thread in dir (/proc/PID/task, taken over and closed). */
static int walk_tasks(DIR *dir, pid_t pid, ProcWalkFn cb, void *userdata) {
        struct dirent *de;
        int r = 0;

        while ((de = readdir(dir))) {
                ProcEntry e = { .pid = pid, .dir_fd = dirfd(dir), .name = de->d_name };

                if (!entry_id(de, &e.tid))
                        continue;
                r = cb(&e, userdata);
                if (r < 0)
                        break;
                r = 0;
        }
        closedir(dir);
        return r;
}

int proc_walk_threads(pid_t pid, ProcWalkFn cb, void *userdata) {
        char path[64];
        DIR *d;

        if (pid <= 0 || !cb)
                return -EINVAL;
        snprintf(path, sizeof path, "/proc/%d/task", (int) pid);
        d = open_dir(AT_FDCWD, path);
        if (!d)
                return errno == ENOENT || errno == ESRCH ? -ENOENT : -errno;
        return walk_tasks(d, pid, cb, userdata);
}

/* threads: each process's threads instead of the process. */
static int walk(bool threads, ProcWalkFn cb, void *userdata) {
        struct dirent *de;
        DIR *proc;
        int r = 0;

        if (!cb)
                return -EINVAL;
        proc = open_dir(AT_FDCWD, "/proc");
        if (!proc)
                return -errno;
        while ((de = readdir(proc))) {
                ProcEntry e = { .dir_fd = dirfd(proc), .name = de->d_name };
                char path[64];
                DIR *tasks;

                if (!entry_id(de, &e.pid))
                        continue;
                e.tid = e.pid;
                if (!threads) {
                        r = cb(&e, userdata);
                } else {
                        snprintf(path, sizeof path, "%d/task", (int) e.pid);
                        tasks = open_dir(dirfd(proc), path);
                        if (!tasks)
                                continue; /* exited meanwhile */
                        r = walk_tasks(tasks, e.pid, cb, userdata);
                }
                if (r < 0)
                        break;
                r = 0;
        }
        closedir(proc);
        return r;
}

int proc_walk_processes(ProcWalkFn cb, void *userdata) {
        return walk(false, cb, userdata);
}

int proc_walk_all_threads(ProcWalkFn cb, void *userdata) {
        return walk(true, cb, userdata);
}

long long proc_voluntary_switches(pid_t pid) {
        char path[64], line[256];
        long long v = -1;
        FILE *f;

        snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -1;
        while (fgets(line, sizeof line, f))
                if (sscanf(line, "voluntary_ctxt_switches: %lld", &v) == 1)
                        break;
        fclose(f);
        return v;
}
