/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/hashmap.h"
#include "basic/macro.h"
#include "basic/parse.h"
#include "basic/strv.h"
#include "cpuset.h"
#include "state.h"

/* Every line but a G record with a users: list is below 600 bytes; that one may hold STATE_USERS_MAX
 * names (see the assertion at users_format()). */
#define STATE_LINE_MAX (17 * 1024)
#define STATE_HEADER "edfd-state"

/* Room allocated and mapped ahead of the journal's end: one fallocate(2) and mremap(2) every 64 KiB
 * (some 700 records), a page fault every 4 KiB. */
#define JOURNAL_CHUNK ((size_t) 64 * 1024)

struct State {
        char *dir;
        char *path;
        int lock_fd;
        int fd;
        char *map;        /* the journal, mapped; NULL where it cannot be (then pwrite(2)) */
        size_t map_size;  /* bytes mapped: the file's size while mapped */
        size_t used;      /* bytes of records: where the next one goes */
        time_t touched;   /* when the journal's mtime was last set (see append_line) */
        size_t n_lines;   /* records in the journal since its last rewrite */
};

static uint32_t line_sum(const char *s, size_t n) {
        uint32_t h = UINT32_C(2166136261);

        for (size_t i = 0; i < n; i++) {
                h ^= (unsigned char) s[i];
                h *= UINT32_C(16777619);
        }
        return h;
}

/* Unmap and close the journal; with trim, cut the room allocated ahead off again: the file a clean
 * stop leaves holds its records and nothing else. */
static void journal_close(State *s, bool trim) {
        if (s->map) {
                (void) munmap(s->map, s->map_size);
                if (trim)
                        (void) ftruncate(s->fd, (off_t) s->used);
                s->map = NULL;
                s->map_size = 0;
        }
        if (s->fd >= 0)
                close(s->fd);
        s->fd = -1;
        s->used = 0;
}

State *state_free(State *s) {
        if (!s)
                return NULL;
        journal_close(s, true);
        if (s->lock_fd >= 0)
                close(s->lock_fd); /* releases the flock */
        free(s->dir);
        free(s->path);
        free(s);
        return NULL;
}

static int mkdir_p(const char *dir) {
        _cleanup_free_ char *p = strdup(dir);

        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++)
                if (*s == '/') {
                        *s = '\0';
                        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                                return -errno;
                        *s = '/';
                }
        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* Make room for at least `need` more bytes after the journal's end: allocate it in the file (so that
 * storing into the mapping can never fault for want of space: an ENOSPC comes here, as an error)
 * and map it. */
static int journal_grow(State *s, size_t need) {
        size_t size;
        void *p;

        if (need > SIZE_MAX / 4 || s->used > SIZE_MAX / 4)
                return -E2BIG;
        size = (s->used + need + JOURNAL_CHUNK) / JOURNAL_CHUNK * JOURNAL_CHUNK;
        if (fallocate(s->fd, 0, (off_t) s->map_size, (off_t) (size - s->map_size)) < 0)
                return -errno;
        p = mremap(s->map, s->map_size, size, MREMAP_MAYMOVE);
        if (p == MAP_FAILED)
                return -errno;
        s->map = p;
        s->map_size = size;
        return 0;
}

/* Map the journal open in s->fd, s->used bytes long, with room ahead. 0, or -EOPNOTSUPP where the
 * file system cannot allocate ahead (then the journal is appended to with pwrite(2)). */
static int journal_map(State *s) {
        size_t size = (s->used + JOURNAL_CHUNK) / JOURNAL_CHUNK * JOURNAL_CHUNK;
        void *p;

        if (fallocate(s->fd, 0, (off_t) s->used, (off_t) (size - s->used)) < 0)
                return -errno;
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
        if (p == MAP_FAILED) {
                int r = -errno;
                (void) ftruncate(s->fd, (off_t) s->used);
                return r;
        }
        s->map = p;
        s->map_size = size;
        return 0;
}

static int open_journal(State *s) {
        int fd = open(s->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600), r;
        struct stat st;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0) {
                r = -errno;
                close(fd);
                return r;
        }
        if (st.st_size == 0) {
                char hdr[64];
                int n = snprintf(hdr, sizeof hdr, STATE_HEADER " %d next=1\n", STATE_VERSION);
                if (pwrite(fd, hdr, (size_t) n, 0) != n) {
                        close(fd);
                        return -EIO;
                }
                st.st_size = n;
        }
        journal_close(s, false); /* after a rewrite: the old journal, renamed over */
        s->fd = fd;
        s->used = (size_t) st.st_size;
        /* Where the journal cannot be mapped (a file system without fallocate, say), it is written
         * with pwrite(2): slower, the same file. */
        if (journal_map(s) == 0)
                /* Room left allocated by an edfd that was killed: state_load cuts it off before the
                 * journal is opened, but never append after it in any case. */
                while (s->used > 0 && s->map[s->used - 1] == '\0')
                        s->used--;
        return 0;
}

int state_open(State **ret, const char *dir) {
        _cleanup_free_ char *lock = NULL;
        State *s;
        int r;

        r = mkdir_p(dir);
        if (r < 0)
                return r;
        s = calloc(1, sizeof(State));
        if (!s)
                return -ENOMEM;
        s->fd = s->lock_fd = -1;
        s->dir = strdup(dir);
        if (!s->dir || asprintf(&s->path, "%s/state", dir) < 0 || asprintf(&lock, "%s/lock", dir) < 0) {
                s->path = NULL;
                state_free(s);
                return -ENOMEM;
        }
        s->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (s->lock_fd < 0) {
                r = -errno;
                state_free(s);
                return r;
        }
        if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
                r = errno == EWOULDBLOCK ? -EBUSY : -errno;
                state_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

/* --- writing --- */

static int append_line(State *s, const char *body) {
        char line[STATE_LINE_MAX];
        size_t n = strlen(body);
        int k;

        if (n + 16 > sizeof line)
                return -E2BIG;
        if (s->fd < 0) {
                int r = open_journal(s);
                if (r < 0)
                        return r;
        }
        /* body " #" checksum (8 hex digits) "\n", without snprintf (see put_u64). */
        uint32_t sum = line_sum(body, n);
        memcpy(line, body, n);
        line[n] = ' ';
        line[n + 1] = '#';
        for (int i = 0; i < 8; i++)
                line[n + 2 + (size_t) i] = "0123456789abcdef"[(sum >> (28 - 4 * i)) & 0xf];
        line[n + 10] = '\n';
        k = (int) (n + 11);
        if (!s->map) {
                ssize_t w = pwrite(s->fd, line, (size_t) k, (off_t) s->used);
                if (w < 0)
                        return -errno;
                if (w != k)
                        return -EIO; /* a torn line: the next record overwrites it, or a load cuts it off */
        } else {
                /* A store into the file's pages, no system call: this is on the path of every
                 * admission and release. The newline goes last: a crash in the copy leaves a line
                 * without one, which the loader recognises as torn, never a complete line with
                 * bytes missing. /run is tmpfs: nothing to sync (on a disk, the kernel writes the
                 * pages back as it would a write(2)'s). */
                if ((size_t) k > s->map_size - s->used) {
                        int r = journal_grow(s, (size_t) k);
                        if (r < 0)
                                return r;
                }
                memcpy(s->map + s->used, line, (size_t) k - 1);
                atomic_signal_fence(memory_order_release);
                *(volatile char *) (s->map + s->used + k - 1) = '\n';
                /* Stores into a mapping do not change the file's mtime, which says when edfd last
                 * wrote its state (manager.c reads it on a restart): set it, once a second. */
                time_t now = time(NULL);
                if (now != s->touched) {
                        (void) futimens(s->fd, NULL);
                        s->touched = now;
                }
        }
        s->used += (size_t) k;
        s->n_lines++;
        return 0;
}

/* " " and v in decimal at p; returns the end. Records are written on every admission and release,
 * and snprintf was a fifth of their cost. */
static char *put_u64(char *p, uint64_t v) {
        char digits[20];
        size_t n = 0;

        *p++ = ' ';
        do
                digits[n++] = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        while (n > 0)
                *p++ = digits[--n];
        return p;
}

/* The longest record: type, 9 numbers of 20 digits and 3 of 10, the group, 13 separators. */
#define RECORD_MAX (1 + 9 * 20 + 4 * 10 + GROUP_PATH_MAX + 14)
_Static_assert(RECORD_MAX + 16 <= STATE_LINE_MAX, "a record must fit a journal line");

/* "T id pid tid uid identity group runtime deadline period flags donor donated", NUL-terminated;
 * buf holds at least RECORD_MAX + 1 bytes. */
static void format_record(char *buf, char type, const StateRecord *r) {
        size_t glen = strnlen(r->group, GROUP_PATH_MAX);
        char *p = buf;

        *p++ = type;
        p = put_u64(p, r->id);
        p = put_u64(p, r->pid);
        p = put_u64(p, r->tid);
        p = put_u64(p, r->uid);
        p = put_u64(p, r->identity);
        *p++ = ' ';
        memcpy(p, r->group, glen);
        p += glen;
        p = put_u64(p, r->params.runtime);
        p = put_u64(p, r->params.deadline);
        p = put_u64(p, r->params.period);
        p = put_u64(p, r->flags);
        p = put_u64(p, r->donor);
        p = put_u64(p, r->donated);
        if (r->partitioned)
                p = put_u64(p, r->cpu);
        *p = '\0';
}

int state_write_reservation(State *s, bool intent, const StateRecord *r) {
        char body[RECORD_MAX + 1];

        format_record(body, intent ? 'I' : 'A', r);
        return append_line(s, body);
}

int state_write_release(State *s, uint64_t id) {
        char body[32];

        body[0] = 'R';
        *put_u64(body + 1, id) = '\0';
        return append_line(s, body);
}

/* --- a group's users: list (G records) --- */

static bool user_name_plain(const char *name) {
        size_t len = strlen(name);

        if (len == 0 || len > STATE_USER_NAME_MAX || name[0] == '-')
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = name[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                      c == '.' || c == '-' || (c == '$' && i == len - 1)))
                        return false;
        }
        return true;
}

#define USERS_FIELD "users="
_Static_assert(1 + GROUP_PATH_MAX + 2 * 21 + 1 + sizeof USERS_FIELD + STATE_USERS_MAX * (STATE_USER_NAME_MAX + 1) +
                       16 <= STATE_LINE_MAX,
               "a G record with the longest users: list must fit a journal line");

/* "G path runtime period[ users=A,B]" (or O, without users) into buf of STATE_LINE_MAX bytes. */
static int format_group(char *buf, bool override, const char *path, uint64_t runtime, uint64_t period,
                        char *const *users) {
        size_t n, count = 0;

        if (!group_path_valid(path) || (override && users))
                return -EINVAL;
        n = (size_t) snprintf(buf, STATE_LINE_MAX, "%c %s %" PRIu64 " %" PRIu64, override ? 'O' : 'G', path, runtime,
                              period);
        if (!users)
                return 0;
        n += (size_t) snprintf(buf + n, STATE_LINE_MAX - n, " " USERS_FIELD);
        for (char *const *u = users; *u; u++) {
                if (++count > STATE_USERS_MAX || !user_name_plain(*u))
                        return -EINVAL;
                for (char *const *v = users; v < u; v++)
                        if (strcmp(*v, *u) == 0)
                                return -EINVAL; /* a name twice: read back as malformed */
                n += (size_t) snprintf(buf + n, STATE_LINE_MAX - n, "%s%s", u == users ? "" : ",", *u);
        }
        return 0;
}

/* The field after "users=" back into a list (empty: root only). -EINVAL for a name StateGroup does
 * not allow, an empty name, or too many. */
static int parse_users(const char *field, char ***ret) {
        _cleanup_strv_free_ char **l = calloc(STATE_USERS_MAX + 1, sizeof(char *));
        size_t n = 0;

        if (!l)
                return -ENOMEM;
        if (*field == '\0') {
                *ret = l;
                l = NULL;
                return 0;
        }
        for (const char *p = field;; ) {
                const char *comma = strchr(p, ',');
                size_t len = comma ? (size_t) (comma - p) : strlen(p);

                if (n == STATE_USERS_MAX || len == 0 || len > STATE_USER_NAME_MAX)
                        return -EINVAL;
                l[n] = strndup(p, len);
                if (!l[n])
                        return -ENOMEM;
                if (!user_name_plain(l[n++]))
                        return -EINVAL;
                for (size_t i = 0; i + 1 < n; i++)
                        if (strcmp(l[i], l[n - 1]) == 0)
                                return -EINVAL;
                if (!comma)
                        break;
                p = comma + 1;
        }
        *ret = l;
        l = NULL;
        return 0;
}

int state_write_group(State *s, bool override, const char *path, uint64_t runtime, uint64_t period,
                      char *const *users) {
        char body[STATE_LINE_MAX];
        int r = format_group(body, override, path, runtime, period, users);

        return r < 0 ? r : append_line(s, body);
}

int state_write_group_removed(State *s, const char *path) {
        char body[STATE_LINE_MAX];

        if (!group_path_valid(path))
                return -EINVAL;
        snprintf(body, sizeof body, "D %s", path);
        return append_line(s, body);
}

void state_record_from(StateRecord *ret, const Reservation *r) {
        *ret = (StateRecord) {
                .id = r->id,
                .pid = r->pid,
                .tid = r->tid,
                .uid = r->uid,
                .identity = r->identity,
                .params = r->params,
                .flags = r->flags,
                .donor = r->donor,
                .donated = r->donated,
                .partitioned = r->partitioned,
                .cpu = r->cpu,
        };
        snprintf(ret->group, sizeof ret->group, "%s", r->group->path);
}

bool state_wants_rewrite(const State *s, size_t live) {
        return s->n_lines > 1024 + 2 * live;
}

/* --- admissions waiting for their start (W and X records) --- */

/* "W ..." as state.h's StateWatch says, into buf of STATE_LINE_MAX bytes. */
static int format_watch(char *buf, const StateWatch *w) {
        if (w->pid == 0 || !group_path_valid(w->group) || w->base_switches < -1)
                return -EINVAL;
        snprintf(buf, STATE_LINE_MAX,
                 "W %" PRIu32 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu32 " %" PRIu32 " %d %" PRIu64 " %s %" PRIu64
                 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64,
                 w->pid, w->start_time, w->exe_dev, w->exe_ino, w->uid, w->caller_pid, w->may_move ? 1 : 0, w->flags,
                 w->group, w->params.runtime, w->params.deadline, w->params.period, w->bound_ns, w->called_ns,
                 w->expire_ns, w->exec_ns, (uint64_t) (w->base_switches + 1));
        return 0;
}

#define WATCH_FIELDS 18

static int parse_watch(char **f, size_t n, StateWatch *ret) {
        StateWatch w = {};
        uint32_t may_move;
        uint64_t switches;

        if (n != WATCH_FIELDS || parse_u32(f[1], &w.pid, NULL) < 0 || w.pid == 0 ||
            parse_u64(f[2], &w.start_time, NULL) < 0 || parse_u64(f[3], &w.exe_dev, NULL) < 0 ||
            parse_u64(f[4], &w.exe_ino, NULL) < 0 || parse_u32(f[5], &w.uid, NULL) < 0 ||
            parse_u32(f[6], &w.caller_pid, NULL) < 0 || parse_u32(f[7], &may_move, NULL) < 0 || may_move > 1 ||
            parse_u64(f[8], &w.flags, NULL) < 0 || !group_path_valid(f[9]) ||
            parse_u64(f[10], &w.params.runtime, NULL) < 0 || parse_u64(f[11], &w.params.deadline, NULL) < 0 ||
            parse_u64(f[12], &w.params.period, NULL) < 0 || parse_u64(f[13], &w.bound_ns, NULL) < 0 ||
            parse_u64(f[14], &w.called_ns, NULL) < 0 || parse_u64(f[15], &w.expire_ns, NULL) < 0 ||
            parse_u64(f[16], &w.exec_ns, NULL) < 0 || parse_u64(f[17], &switches, NULL) < 0 ||
            switches > (uint64_t) INT64_MAX)
                return -EINVAL;
        w.may_move = may_move == 1;
        w.base_switches = (int64_t) switches - 1;
        snprintf(w.group, sizeof w.group, "%s", f[9]);
        *ret = w;
        return 0;
}

int state_write_watch(State *s, const StateWatch *w) {
        char body[STATE_LINE_MAX];
        int r = format_watch(body, w);

        return r < 0 ? r : append_line(s, body);
}

int state_write_watch_end(State *s, uint32_t pid) {
        char body[32];

        if (pid == 0)
                return -EINVAL;
        body[0] = 'X';
        *put_u64(body + 1, pid) = '\0';
        return append_line(s, body);
}

/* --- origins (P records) --- */

static bool origin_plain(unsigned char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("/._@+:=,~-", c);
}

/* Whether path is a cgroup path as state.h describes it: "/", or "/" and names joined by "/", none
 * empty, "." or "..", none with a control byte, and not edfd-partitions or below it. Where a
 * release writes the process back, nothing but such a path is ever used. */
static bool origin_path_valid(const char *path) {
        static const char own[] = "/" CPUSET_DIR;

        if (!path || path[0] != '/')
                return false;
        if (path[1] == '\0')
                return true; /* the root cgroup */
        if (strncmp(path, own, sizeof own - 1) == 0 && (path[sizeof own - 1] == '\0' || path[sizeof own - 1] == '/'))
                return false;
        for (const char *p = path; *p; ) {
                const char *name = ++p; /* after the '/' */
                size_t len;

                while (*p && *p != '/') {
                        unsigned char c = (unsigned char) *p++;
                        if (c < 0x20 || c == 0x7f)
                                return false;
                }
                len = (size_t) (p - name);
                if (len == 0 || (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
                        return false;
        }
        return true;
}

/* "P pid ESCAPED" into buf (STATE_LINE_MAX). -EINVAL, -ENAMETOOLONG as state_write_origin(). */
static int format_origin(char *buf, uint32_t pid, const char *path) {
        static const char hex[] = "0123456789ABCDEF";
        char esc[STATE_ORIGIN_MAX + 1];
        size_t n = 0;

        if (!origin_path_valid(path))
                return -EINVAL;
        for (const unsigned char *p = (const unsigned char *) path; *p; p++) {
                if (origin_plain(*p)) {
                        if (n + 1 > STATE_ORIGIN_MAX)
                                return -ENAMETOOLONG;
                        esc[n++] = (char) *p;
                } else {
                        if (n + 3 > STATE_ORIGIN_MAX)
                                return -ENAMETOOLONG;
                        esc[n++] = '%';
                        esc[n++] = hex[*p >> 4];
                        esc[n++] = hex[*p & 15];
                }
        }
        esc[n] = '\0';
        snprintf(buf, STATE_LINE_MAX, "P %" PRIu32 " %s", pid, esc);
        return 0;
}

_Static_assert(STATE_ORIGIN_MAX + 24 <= STATE_LINE_MAX, "an origin record must fit a journal line");

static int unhex(char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The escaped form back; -EINVAL for an escape format_origin() would not have written, -EBADF for a
 * path it would have refused. */
static int parse_origin(const char *esc, char *ret, size_t size) {
        size_t n = 0;

        if (esc[0] != '/' || strlen(esc) > STATE_ORIGIN_MAX)
                return -EINVAL;
        for (const char *p = esc; *p; p++) {
                int c = (unsigned char) *p;

                if (c == '%') {
                        int hi = unhex(p[1]), lo = hi < 0 ? -1 : unhex(p[2]);
                        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                                return -EINVAL;
                        c = hi * 16 + lo;
                        p += 2;
                } else if (!origin_plain((unsigned char) c))
                        return -EINVAL;
                if (n + 1 >= size)
                        return -EINVAL;
                ret[n++] = (char) c;
        }
        ret[n] = '\0';
        return origin_path_valid(ret) ? 0 : -EBADF;
}

int state_write_origin(State *s, uint32_t pid, const char *path) {
        char body[STATE_LINE_MAX];
        int r = format_origin(body, pid, path);

        return r < 0 ? r : append_line(s, body);
}

int state_rewrite(State *s, const StateRecord *records, size_t n_records, const StateGroup *groups,
                  size_t n_groups, const StateOrigin *origins, size_t n_origins, const StateWatch *watches,
                  size_t n_watches, uint64_t next_id) {
        _cleanup_free_ char *body = malloc(STATE_LINE_MAX);
        _cleanup_free_ char *tmp = NULL;
        FILE *f;
        int fd, r = 0;

        if (!body || asprintf(&tmp, "%s.new", s->path) < 0)
                return -ENOMEM;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        f = fdopen(fd, "w");
        if (!f) {
                close(fd);
                return -ENOMEM;
        }
        fprintf(f, STATE_HEADER " %d next=%" PRIu64 "\n", STATE_VERSION, next_id);
        for (size_t i = 0; i < n_groups; i++)
                if (format_group(body, groups[i].override, groups[i].path, groups[i].runtime, groups[i].period,
                                 groups[i].override ? NULL : groups[i].users) == 0)
                        fprintf(f, "%s #%08" PRIx32 "\n", body, line_sum(body, strlen(body)));
        for (size_t i = 0; i < n_records; i++) {
                format_record(body, 'A', &records[i]);
                fprintf(f, "%s #%08" PRIx32 "\n", body, line_sum(body, strlen(body)));
        }
        for (size_t i = 0; i < n_origins; i++)
                if (format_origin(body, origins[i].pid, origins[i].path) == 0)
                        fprintf(f, "%s #%08" PRIx32 "\n", body, line_sum(body, strlen(body)));
        for (size_t i = 0; i < n_watches; i++)
                if (format_watch(body, &watches[i]) == 0)
                        fprintf(f, "%s #%08" PRIx32 "\n", body, line_sum(body, strlen(body)));
        if (fflush(f) != 0 || fsync(fileno(f)) < 0)
                r = -errno;
        if (fclose(f) != 0 && r == 0)
                r = -errno;
        if (r == 0 && rename(tmp, s->path) < 0)
                r = -errno;
        if (r < 0) {
                unlink(tmp);
                return r;
        }
        s->n_lines = 0;
        return open_journal(s);
}

/* --- reading --- */

/* Split body into at most max space-separated fields (in place). */
static size_t split_fields(char *body, char **fields, size_t max) {
        size_t n = 0;

        for (char *tok = strtok(body, " "); tok; tok = strtok(NULL, " ")) {
                if (n == max)
                        return max + 1;
                fields[n++] = tok;
        }
        return n;
}

static int parse_record(char **f, size_t n, StateRecord *ret) {
        StateRecord r = {};

        if ((n != 13 && n != 14) || parse_u64(f[1], &r.id, NULL) < 0 || r.id == 0 || parse_u32(f[2], &r.pid, NULL) < 0 ||
            parse_u32(f[3], &r.tid, NULL) < 0 || parse_u32(f[4], &r.uid, NULL) < 0 ||
            parse_u64(f[5], &r.identity, NULL) < 0 || !group_path_valid(f[6]) ||
            parse_u64(f[7], &r.params.runtime, NULL) < 0 || parse_u64(f[8], &r.params.deadline, NULL) < 0 ||
            parse_u64(f[9], &r.params.period, NULL) < 0 || parse_u64(f[10], &r.flags, NULL) < 0 ||
            parse_u64(f[11], &r.donor, NULL) < 0 || parse_u64(f[12], &r.donated, NULL) < 0 ||
            (n == 14 && parse_u32(f[13], &r.cpu, NULL) < 0))
                return -EINVAL;
        r.partitioned = n == 14;
        snprintf(r.group, sizeof r.group, "%s", f[6]);
        *ret = r;
        return 0;
}

typedef struct Loader {
        Hashmap by_id;          /* id -> index+1 into entries */
        StateEntry *entries;
        bool *dead;
        size_t n, allocated;
        StateGroup *groups;
        size_t n_groups;
        StateOrigin *origins;
        size_t n_origins;
        StateWatch *watches;
        size_t n_watches;
        uint64_t next_id;
} Loader;

static void groups_free(StateGroup *groups, size_t n) {
        for (size_t i = 0; i < n; i++)
                strv_free(groups[i].users);
        free(groups);
}

static void loader_done(Loader *l) {
        hashmap_done(&l->by_id);
        free(l->entries);
        free(l->dead);
        groups_free(l->groups, l->n_groups);
        free(l->origins);
        free(l->watches);
        *l = (Loader) {};
}

static StateEntry *loader_entry(Loader *l, uint64_t id) {
        uintptr_t i = (uintptr_t) hashmap_get(&l->by_id, id);

        if (i != 0 && !l->dead[i - 1])
                return &l->entries[i - 1];
        if (l->n == l->allocated) {
                size_t na = l->allocated ? l->allocated * 2 : 64;
                StateEntry *e = reallocarray(l->entries, na, sizeof(StateEntry));
                if (!e)
                        return NULL;
                l->entries = e;
                bool *d = reallocarray(l->dead, na, sizeof(bool));
                if (!d)
                        return NULL;
                l->dead = d;
                l->allocated = na;
        }
        if (hashmap_put(&l->by_id, id, (void *) (uintptr_t) (l->n + 1)) < 0)
                return NULL;
        l->entries[l->n] = (StateEntry) {};
        l->dead[l->n] = false;
        return &l->entries[l->n++];
}

/* A G, O or D record; users (a G's list, or NULL) is taken. */
static int loader_group(Loader *l, const char *path, bool remove, bool override, uint64_t runtime,
                        uint64_t period, char **users) {
        for (size_t i = 0; i < l->n_groups; i++)
                if (strcmp(l->groups[i].path, path) == 0) {
                        strv_free(l->groups[i].users);
                        if (remove) {
                                memmove(&l->groups[i], &l->groups[i + 1],
                                        (l->n_groups - i - 1) * sizeof(StateGroup));
                                l->n_groups--;
                        } else {
                                l->groups[i].runtime = runtime;
                                l->groups[i].period = period;
                                l->groups[i].override = override;
                                l->groups[i].users = users; /* each G says the whole list */
                        }
                        return 0;
                }
        if (remove)
                return 0;
        StateGroup *g = reallocarray(l->groups, l->n_groups + 1, sizeof(StateGroup));
        if (!g) {
                strv_free(users);
                return -ENOMEM;
        }
        l->groups = g;
        g = &l->groups[l->n_groups++];
        *g = (StateGroup) { .runtime = runtime, .period = period, .override = override, .users = users };
        snprintf(g->path, sizeof g->path, "%s", path);
        return 0;
}

/* A W record (replacing the pid's last) or an X (ending it). */
static int loader_watch(Loader *l, const StateWatch *w, uint32_t ended) {
        uint32_t pid = w ? w->pid : ended;
        size_t i;

        for (i = 0; i < l->n_watches && l->watches[i].pid != pid; i++)
                ;
        if (!w) {
                if (i < l->n_watches)
                        l->watches[i] = l->watches[--l->n_watches];
                return 0;
        }
        if (i == l->n_watches) {
                StateWatch *t = reallocarray(l->watches, l->n_watches + 1, sizeof(StateWatch));
                if (!t)
                        return -ENOMEM;
                l->watches = t;
                l->n_watches++;
        }
        l->watches[i] = *w;
        return 0;
}

/* One line without its newline. Returns 0, -EBADMSG for a corrupt line, -ENOMEM. */
static int load_line(Loader *l, char *line, const char **ret_reason) {
        char *hash = strrchr(line, '#'), *f[WATCH_FIELDS + 1];
        uint32_t want;
        size_t n;
        int k;

        if (!hash || hash == line || hash[-1] != ' ' || strlen(hash + 1) != 8)
                return *ret_reason = "a line without its checksum", -EBADMSG;
        hash[-1] = '\0';
        if (sscanf(hash + 1, "%8" SCNx32, &want) != 1 || want != line_sum(line, strlen(line)))
                return *ret_reason = "a line whose checksum does not match", -EBADMSG;

        n = split_fields(line, f, WATCH_FIELDS);
        if (n == 0 || strlen(f[0]) != 1)
                return *ret_reason = "an unknown record", -EBADMSG;
        switch (f[0][0]) {
        case 'A':
        case 'I': {
                StateRecord r;
                StateEntry *e;
                if (parse_record(f, n, &r) < 0)
                        return *ret_reason = "a malformed reservation record", -EBADMSG;
                e = loader_entry(l, r.id);
                if (!e)
                        return -ENOMEM;
                if (f[0][0] == 'A') {
                        e->committed = r;
                        e->has_committed = true;
                        e->has_intent = false;
                } else {
                        /* An intent after an unsettled one: the earlier took effect (see state.h). */
                        if (e->has_intent) {
                                e->committed = e->intent;
                                e->has_committed = true;
                        }
                        e->intent = r;
                        e->has_intent = true;
                }
                if (r.id >= l->next_id)
                        l->next_id = r.id + 1;
                return 0;
        }
        case 'R': {
                uint64_t id;
                uintptr_t i;
                if (n != 2 || parse_u64(f[1], &id, NULL) < 0)
                        return *ret_reason = "a malformed release record", -EBADMSG;
                i = (uintptr_t) hashmap_remove(&l->by_id, id);
                if (i != 0)
                        l->dead[i - 1] = true;
                if (id >= l->next_id)
                        l->next_id = id + 1;
                return 0;
        }
        case 'G':
        case 'O': {
                uint64_t runtime, period;
                char **users = NULL;
                if ((n != 4 && (n != 5 || f[0][0] != 'G')) || !group_path_valid(f[1]) ||
                    parse_u64(f[2], &runtime, NULL) < 0 || parse_u64(f[3], &period, NULL) < 0)
                        return *ret_reason = "a malformed group record", -EBADMSG;
                if (n == 5) {
                        if (strncmp(f[4], USERS_FIELD, strlen(USERS_FIELD)) != 0)
                                return *ret_reason = "a malformed group record", -EBADMSG;
                        k = parse_users(f[4] + strlen(USERS_FIELD), &users);
                        if (k == -EINVAL)
                                return *ret_reason = "a group record whose users: list holds a name edfd does not "
                                                     "accept, one twice, or more than 64", -EBADMSG;
                        if (k < 0)
                                return k;
                }
                return loader_group(l, f[1], false, f[0][0] == 'O', runtime, period, users);
        }
        case 'D':
                if (n != 2 || !group_path_valid(f[1]))
                        return *ret_reason = "a malformed group record", -EBADMSG;
                return loader_group(l, f[1], true, false, 0, 0, NULL);
        case 'W': {
                StateWatch w;
                if (parse_watch(f, n, &w) < 0)
                        return *ret_reason = "a malformed start-up watch record", -EBADMSG;
                return loader_watch(l, &w, 0);
        }
        case 'X': {
                uint32_t pid;
                if (n != 2 || parse_u32(f[1], &pid, NULL) < 0 || pid == 0)
                        return *ret_reason = "a malformed start-up watch record", -EBADMSG;
                return loader_watch(l, NULL, pid);
        }
        case 'P': {
                StateOrigin o = {};
                StateOrigin *t;
                size_t i;
                if (n != 3 || parse_u32(f[1], &o.pid, NULL) < 0 || o.pid == 0)
                        return *ret_reason = "a malformed origin record", -EBADMSG;
                k = parse_origin(f[2], o.path, sizeof o.path);
                if (k == -EBADF)
                        return *ret_reason = "an origin record whose path is no cgroup path edfd writes "
                                             "(an empty, . or .. component, a control byte, or inside "
                                             CPUSET_DIR ")", -EBADMSG;
                if (k < 0)
                        return *ret_reason = "a malformed origin record", -EBADMSG;
                for (i = 0; i < l->n_origins && l->origins[i].pid != o.pid; i++)
                        ;
                if (i == l->n_origins) {
                        t = reallocarray(l->origins, l->n_origins + 1, sizeof(StateOrigin));
                        if (!t)
                                return -ENOMEM;
                        l->origins = t;
                        l->n_origins++;
                }
                l->origins[i] = o; /* the newest for a pid counts */
                return 0;
        }
        default:
                return *ret_reason = "an unknown record", -EBADMSG;
        }
}

/* rename(2) that fails with -EEXIST instead of replacing to. */
static int rename_noreplace(const char *from, const char *to) {
        if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
                return 0;
        if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
                return -errno;
        /* A file system without RENAME_NOREPLACE: link(2) never replaces either. */
        if (link(from, to) < 0)
                return -errno;
        if (unlink(from) < 0) {
                int r = -errno;
                (void) unlink(to);
                return r;
        }
        return 0;
}

/* A kept file is the only evidence of what went wrong: two corruptions within one second must not
 * share a name, so state.corrupt-<seconds> is followed by state.corrupt-<seconds>-1, -2, ... */
#define MOVE_ASIDE_TRIES 1000

static int move_aside(State *s, StateLoaded *ret, const char *reason, unsigned lineno) {
        long long now = (long long) time(NULL);
        char *dest = NULL;
        int r = -EEXIST;

        for (unsigned n = 0; n < MOVE_ASIDE_TRIES && r == -EEXIST; n++) {
                free(dest);
                if ((n == 0 ? asprintf(&dest, "%s.corrupt-%lld", s->path, now)
                            : asprintf(&dest, "%s.corrupt-%lld-%u", s->path, now, n)) < 0)
                        return -ENOMEM;
                r = rename_noreplace(s->path, dest);
        }
        if (r < 0) {
                free(dest);
                return r;
        }
        ret->corrupt_path = dest;
        if (asprintf(&ret->corrupt_reason, "line %u: %s", lineno, reason) < 0)
                ret->corrupt_reason = NULL;
        journal_close(s, false); /* the kept file stays as it was */
        return open_journal(s);
}

/* Put STATE_VERSION where the header's number of len digits is, at offset at, padded with spaces
 * (which the header may hold there): the file keeps its size, and no line moves. */
_Static_assert(STATE_VERSION < 10, "a version of one digit replaces any older one in place");
static int mark_version(const char *path, size_t at, size_t len) {
        char buf[32];
        int fd;
        ssize_t w;

        if (len < 1 || len > sizeof buf)
                return -EINVAL;
        memset(buf, ' ', len);
        buf[0] = (char) ('0' + STATE_VERSION);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        w = pwrite(fd, buf, len, (off_t) at);
        if (w < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        close(fd);
        return (size_t) w == len ? 0 : -EIO;
}

void state_loaded_done(StateLoaded *l) {
        free(l->entries);
        groups_free(l->groups, l->n_groups);
        free(l->origins);
        free(l->watches);
        free(l->corrupt_path);
        free(l->corrupt_reason);
        *l = (StateLoaded) {};
}

int state_load(State *s, StateLoaded *ret) {
        Loader l = { .by_id = HASHMAP_INIT, .next_id = 1 };
        StateLoaded out = {};
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        unsigned lineno = 0;
        off_t good = 0;
        const char *reason = NULL;
        bool cut = false;
        unsigned version = 0;
        char newer[96];
        size_t version_at = 0, version_len = 0; /* where the header's number is, to mark it newer */
        FILE *f;
        int r = 0;

        journal_close(s, true); /* never cut a file that is mapped */
        f = fopen(s->path, "re");
        if (!f) {
                if (errno != ENOENT)
                        return -errno;
                goto done; /* nothing recorded yet */
        }
        while ((len = getline(&line, &cap, f)) >= 0) {
                lineno++;
                if (len == 0 || line[len - 1] != '\n') {
                        /* The end: room allocated ahead (NUL bytes, left by an edfd that was killed),
                         * after a line torn by a crash during its write, if any: a change that was
                         * never answered. */
                        for (ssize_t i = 0; i < len && !out.torn_tail; i++)
                                out.torn_tail = line[i] != '\0';
                        cut = true;
                        break;
                }
                if (memchr(line, '\0', (size_t) len)) {
                        reason = "NUL bytes inside a line";
                        r = -EBADMSG;
                        break;
                }
                good += len;
                line[len - 1] = '\0';
                if (lineno == 1) {
                        int v = 0, at = 0, end = 0;
                        unsigned long long next = 0;
                        if (sscanf(line, STATE_HEADER " %n%d%n next=%llu", &at, &v, &end, &next) != 2) {
                                reason = "no edfd-state header";
                                r = -EBADMSG;
                                break;
                        }
                        if (v < 1) {
                                reason = "an unknown state version";
                                r = -EBADMSG;
                                break;
                        }
                        version = (unsigned) v;
                        if (version > STATE_VERSION) {
                                /* A newer edfd's: records this one may not know, or know otherwise. */
                                snprintf(newer, sizeof newer, "an unknown state version: %u, newer than this "
                                         "edfd's %d (written by a newer edfd)", version, STATE_VERSION);
                                reason = newer;
                                r = -EBADMSG;
                                break;
                        }
                        version_at = (size_t) at;
                        version_len = (size_t) (end - at);
                        l.next_id = MAX(next, 1);
                        continue;
                }
                if ((size_t) len > STATE_LINE_MAX) {
                        reason = "a line too long";
                        r = -EBADMSG;
                        break;
                }
                r = load_line(&l, line, &reason);
                if (r < 0)
                        break;
                s->n_lines++;
        }
        free(line);
        fclose(f);

        /* Cut a torn tail off, or the next append would be glued to it; and the room allocated
         * ahead, which open_journal allocates afresh. */
        if (cut && truncate(s->path, good) < 0) {
                r = -errno;
                goto fail;
        }

        if (r == -EBADMSG) {
                /* Keep the file for inspection; start from what the kernel shows. */
                loader_done(&l);
                s->n_lines = 0;
                out.version = version;
                r = move_aside(s, &out, reason, lineno);
                if (r < 0)
                        return r;
                *ret = out;
                return 0;
        }
        if (r < 0)
                goto fail;

        /* Compact the live entries in id order (they were created in id order, mostly). */
        out.entries = calloc(l.n ? l.n : 1, sizeof(StateEntry));
        if (!out.entries) {
                r = -ENOMEM;
                goto fail;
        }
        for (size_t i = 0; i < l.n; i++)
                if (!l.dead[i])
                        out.entries[out.n_entries++] = l.entries[i];
        out.groups = l.groups;
        out.n_groups = l.n_groups;
        l.groups = NULL;
        out.origins = l.origins;
        out.n_origins = l.n_origins;
        l.origins = NULL;
        out.watches = l.watches;
        out.n_watches = l.n_watches;
        l.watches = NULL;
        out.next_id = l.next_id;
        out.version = version;
        l.n_groups = 0;
        loader_done(&l);
        /* An older version's file says this version before anything is appended that its
         * version does not have (a P, W or X record, a G with users). */
        if (version > 0 && version < STATE_VERSION) {
                r = mark_version(s->path, version_at, version_len);
                if (r < 0) {
                        state_loaded_done(&out);
                        return r;
                }
        }
done:
        if (out.next_id == 0)
                out.next_id = 1;
        if (s->fd < 0) {
                r = open_journal(s);
                if (r < 0) {
                        state_loaded_done(&out);
                        return r;
                }
        }
        *ret = out;
        return 0;
fail:
        loader_done(&l);
        return r;
}
