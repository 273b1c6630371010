/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* /proc, read once for the whole project: a reader of small files, the parser of a task's stat
 * line, and a walker over processes and threads.
 *
 * The stat line is "pid (comm) state ppid pgrp ...": comm may hold blanks and ')', but it is at
 * most 64 bytes and no later field can hold ')', so comm ends at the LAST ')'. After it every
 * field is preceded by exactly one blank. Numbers follow basic/parse.h. The parser is pure (a
 * buffer in, fields out) so that it can be tested on any text. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Longest comm the kernel shows in stat (kernel threads' workqueue names; TASK_COMM_LEN is 16). */
#define PROC_COMM_MAX 64

/* PF_KTHREAD in field 9 (include/linux/sched.h): a kernel thread. */
#define PROC_PF_KTHREAD UINT64_C(0x00200000)

typedef enum ProcReadFlags {
        /* Stop once what was read ends in a newline: for one-line files (stat, comm), it spares the
         * read that would report the end of the file. */
        PROC_READ_LINE = 1 << 0,
        /* Keep the first size - 1 bytes of a longer file instead of failing with -EFBIG (for a
         * field near the top of /proc/PID/status). */
        PROC_READ_TRUNCATE = 1 << 1,
} ProcReadFlags;

/* Read the file at path (relative to dir_fd, or AT_FDCWD) with pread(2) into buf, at most size - 1
 * bytes, NUL-terminated. The fd is O_CLOEXEC and closed before returning. Returns 0 with the
 * length in *ret_len (may be NULL); -ENOENT when the file or its task is gone (ENOENT and ESRCH
 * alike), -EFBIG when the file does not fit (unless PROC_READ_TRUNCATE), -EINVAL for size 0, or
 * another negative errno. buf is NUL-terminated on success only. */
int proc_read_file(int dir_fd, const char *path, ProcReadFlags flags, char *buf, size_t size, size_t *ret_len);

typedef enum ProcStatField {
        PROC_STAT_COMM = 1 << 0,       /* field 2 */
        PROC_STAT_STATE = 1 << 1,      /* field 3 */
        PROC_STAT_PPID = 1 << 2,       /* field 4 */
        PROC_STAT_FLAGS = 1 << 3,      /* field 9 */
        PROC_STAT_START_TIME = 1 << 4, /* field 22 */
        PROC_STAT_PROCESSOR = 1 << 5,  /* field 39: the CPU it last ran on */
} ProcStatField;

typedef struct ProcStat {
        char comm[PROC_COMM_MAX + 1]; /* NUL-terminated, cut at PROC_COMM_MAX bytes */
        char state;                   /* 'R', 'S', 'D', 'Z', 'X', ... */
        uint32_t ppid;                /* 0 for pid 1 and kthreadd */
        uint64_t flags;               /* PF_* */
        uint64_t start_time;          /* clock ticks since boot */
        uint32_t processor;           /* the CPU it last ran on */
} ProcStat;

/* Parse a stat line (buf[0..len), need not be NUL-terminated; a trailing newline is fine). The
 * line must have its parentheses and fields 3 to 22 (to 39 when PROC_STAT_PROCESSOR is asked for),
 * each one non-empty; only the fields asked for
 * in `fields` (ProcStatField bits) are parsed and written to *ret, the others are left alone (so a
 * field nobody reads cannot fail the line). Returns 0, -EBADMSG for a line that is not such a
 * line or a requested field that is not a number by basic/parse.h (state: one character), -EINVAL
 * for NULL arguments. *ret is written only on success. */
int proc_stat_parse(const char *buf, size_t len, unsigned fields, ProcStat *ret);

/* Read and parse /proc/PID/task/TID/stat (tid == pid is the main thread). Returns 0, -EINVAL for
 * ids <= 0, -ENOENT when there is no such thread of pid (or no pid), -EBADMSG, or -errno. */
int proc_read_stat(pid_t pid, pid_t tid, unsigned fields, ProcStat *ret);

/* One process or thread met by a walk, valid during the callback only. */
typedef struct ProcEntry {
        pid_t pid;        /* the process (thread group) */
        pid_t tid;        /* the thread; == pid in a walk of processes */
        int dir_fd;       /* the directory that holds the entry: /proc, or /proc/PID/task */
        const char *name; /* the entry in dir_fd: the decimal pid, or tid */
} ProcEntry;

/* What a walk calls for every entry. A negative return stops the walk, which returns it; anything
 * else goes on. */
typedef int (*ProcWalkFn)(const ProcEntry *e, void *userdata);

/* Every process in /proc (tid == pid, dir_fd is /proc), in directory order. Entries that vanish
 * during the walk are simply not met. Returns 0, a callback's negative return, or negative errno
 * when /proc cannot be opened. */
int proc_walk_processes(ProcWalkFn cb, void *userdata);
/* Every thread of process pid (its main thread too; dir_fd is /proc/PID/task). Returns 0, a
 * callback's negative return, -ENOENT when pid is gone, or negative errno. */
int proc_walk_threads(pid_t pid, ProcWalkFn cb, void *userdata);
/* Every thread of every process. Returns as proc_walk_processes(). */
int proc_walk_all_threads(ProcWalkFn cb, void *userdata);

/* proc_read_file() of the entry's file (as "stat", "comm", "status"). Same returns. */
int proc_entry_read(const ProcEntry *e, const char *file, ProcReadFlags flags, char *buf, size_t size,
                    size_t *ret_len);
/* proc_stat_parse() of the entry's stat file. Returns as proc_read_stat(). */
int proc_entry_stat(const ProcEntry *e, unsigned fields, ProcStat *ret);

/* The voluntary context switches of process pid's main thread (/proc/PID/status), or -1 when it
 * cannot be read. A thread that slept since an earlier reading has more. */
long long proc_voluntary_switches(pid_t pid);
