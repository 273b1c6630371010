/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The state journal (daemon/state.c) in a temporary directory: what a clean stop, a kill -9 at the
 * end of a record or in the middle of one, a journal too big for its file system and a file system
 * that cannot allocate ahead each leave behind, and what the next load makes of it. Files on tmpfs
 * (/dev/shm, as /run is) and on /tmp. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/macro.h"
#include "state.h"

static char dir[64], path[96];

static void setup_in(const char *base) {
        snprintf(dir, sizeof dir, "%s/edfd-test-state.XXXXXX", base);
        cr_assert(mkdtemp(dir), "mkdtemp in %s: %s", base, strerror(errno));
        snprintf(path, sizeof path, "%s/state", dir);
}

static void setup_shm(void) {
        setup_in("/dev/shm");
}

static void setup_tmp(void) {
        setup_in("/tmp");
}

static void teardown(void) {
        char cmd[128];

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        (void) system(cmd);
}

static StateRecord rec(uint64_t id) {
        StateRecord r = {
                .id = id, .pid = (uint32_t) (1000 + id), .tid = (uint32_t) (2000 + id), .uid = 1000,
                .identity = 0x4000000000000000ULL + id, .params = { 1000000 + id, 10000000, 10000000 }, .flags = 1,
        };
        snprintf(r.group, sizeof r.group, "test/g%" PRIu64, id % 3);
        return r;
}

static char *slurp(size_t *ret_len) {
        FILE *f = fopen(path, "re");
        char *buf = NULL;
        size_t cap = 0, len = 0, n;

        cr_assert(f, "cannot read %s: %s", path, strerror(errno));
        do {
                if (len + 4096 + 1 > cap) {
                        cap = (len + 4096 + 1) * 2;
                        buf = realloc(buf, cap);
                        cr_assert(buf);
                }
                n = fread(buf + len, 1, cap - len - 1, f);
                len += n;
        } while (n > 0);
        fclose(f);
        buf[len] = '\0';
        *ret_len = len;
        return buf;
}

static size_t count_nul(const char *buf, size_t len) {
        size_t n = 0;

        for (size_t i = 0; i < len; i++)
                n += buf[i] == '\0';
        return n;
}

static State *open_loaded(StateLoaded *l) {
        State *s = NULL;

        cr_assert_eq(state_open(&s, dir), 0);
        cr_assert_eq(state_load(s, l), 0);
        cr_assert_null(l->corrupt_path, "the journal was found corrupt: %s", l->corrupt_reason);
        return s;
}

/* Records 1..n admitted, the odd ones released again, and a group: what every load must find. */
static void write_records(State *s, uint64_t n) {
        for (uint64_t id = 1; id <= n; id++) {
                StateRecord r = rec(id);
                cr_assert_eq(state_write_reservation(s, true, &r), 0, "record %" PRIu64, id);
                if (id % 2 == 1)
                        cr_assert_eq(state_write_release(s, id), 0);
        }
        cr_assert_eq(state_write_group(s, false, "test/dyn", 2000000, 10000000, NULL), 0);
}

static void assert_records(const StateLoaded *l, uint64_t n) {
        cr_assert_eq(l->n_entries, n / 2, "%zu reservations loaded, %" PRIu64 " written", l->n_entries, n / 2);
        for (size_t i = 0; i < l->n_entries; i++) {
                StateRecord want = rec(2 * (i + 1));
                const StateEntry *e = &l->entries[i];
                cr_assert(e->has_intent && !e->has_committed);
                cr_assert_eq(e->intent.id, want.id);
                cr_assert_eq(e->intent.tid, want.tid);
                cr_assert_eq(e->intent.identity, want.identity);
                cr_assert_eq(e->intent.params.runtime, want.params.runtime);
                cr_assert_str_eq(e->intent.group, want.group);
        }
        cr_assert_eq(l->n_groups, 1);
        cr_assert_str_eq(l->groups[0].path, "test/dyn");
        cr_assert_eq(l->next_id, n + 1);
}

/* Open, load, write n records, and die by SIGKILL: the journal as a killed edfd leaves it. */
static void killed_writer(uint64_t n) {
        pid_t pid = fork();
        int status;

        cr_assert_geq(pid, 0);
        if (pid == 0) {
                StateLoaded l;
                State *s = NULL;
                if (state_open(&s, dir) < 0 || state_load(s, &l) < 0)
                        _exit(1);
                write_records(s, n);
                raise(SIGKILL);
                _exit(2);
        }
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the writer ended with status 0x%x",
                  (unsigned) status);
}

static void clean_stop_leaves_only_records(void) {
        StateLoaded l;
        State *s;
        size_t len;
        char *text;

        s = open_loaded(&l);
        state_loaded_done(&l);
        write_records(s, 10);
        state_free(s);

        text = slurp(&len);
        cr_assert_eq(count_nul(text, len), 0, "a clean stop left %zu NUL bytes in the journal", count_nul(text, len));
        cr_assert(len > 0 && text[len - 1] == '\n', "the journal does not end with a complete line");
        cr_assert_eq(strncmp(text, "edfd-state 3 next=1\n", 20), 0, "%.40s", text);
        free(text);

        s = open_loaded(&l);
        cr_assert(!l.torn_tail);
        assert_records(&l, 10);
        state_loaded_done(&l);
        state_free(s);
}

Test(state, clean_stop_leaves_only_records_tmpfs, .init = setup_shm, .fini = teardown) {
        clean_stop_leaves_only_records();
}

Test(state, clean_stop_leaves_only_records_tmp, .init = setup_tmp, .fini = teardown) {
        clean_stop_leaves_only_records();
}

/* kill -9 right after a record: every record is there, the room allocated ahead is not taken for a
 * torn line, and the load cuts it off so that the next record follows the last one. */
Test(state, kill9_keeps_every_record, .init = setup_shm, .fini = teardown) {
        StateLoaded l;
        State *s;
        size_t len, len2;
        char *text, *text2;

        killed_writer(10);
        text = slurp(&len);
        cr_assert_gt(count_nul(text, len), 0, "a killed writer left no room allocated ahead (not mapped?)");

        s = open_loaded(&l);
        cr_assert(!l.torn_tail, "the room allocated ahead was taken for a torn line");
        assert_records(&l, 10);
        state_loaded_done(&l);
        StateRecord r = rec(11);
        cr_assert_eq(state_write_reservation(s, false, &r), 0);
        state_free(s);

        text2 = slurp(&len2);
        cr_assert_eq(count_nul(text2, len2), 0);
        const char *end = memchr(text, '\0', len);
        size_t content = end ? (size_t) (end - text) : len;
        cr_assert(len2 > content && memcmp(text, text2, content) == 0 && strncmp(text2 + content, "A 11 ", 5) == 0,
                  "the record after a restart does not follow the last one:\n%s", text2 + (content > 200 ? content - 200 : 0));
        free(text);
        free(text2);
}

/* kill -9 in the middle of storing a record (here: half a line, then NUL bytes): the half line is
 * torn, ignored and cut off; everything before it stays. */
Test(state, kill9_in_a_record_is_a_torn_tail, .init = setup_shm, .fini = teardown) {
        StateLoaded l;
        State *s;
        size_t len;
        char *text;
        int fd;

        killed_writer(6);
        text = slurp(&len);
        const char *nul = memchr(text, '\0', len);
        cr_assert(nul, "no room allocated ahead");
        fd = open(path, O_WRONLY | O_CLOEXEC);
        cr_assert_geq(fd, 0);
        cr_assert_eq(pwrite(fd, "I 7 1007 20", 11, nul - text), 11);
        close(fd);

        s = open_loaded(&l);
        cr_assert(l.torn_tail, "half a record was not recognised as torn");
        assert_records(&l, 6);
        state_loaded_done(&l);
        state_free(s);
        free(text);
        text = slurp(&len);
        cr_assert_eq(count_nul(text, len), 0);
        cr_assert_null(strstr(text, "I 7 "), "the torn record is still in the journal");
        free(text);
}

/* A journal many times the room allocated at a time: it grows, and a killed writer loses nothing. */
Test(state, journal_grows_past_its_room, .init = setup_shm, .fini = teardown) {
        StateLoaded l;
        State *s;
        size_t len;
        char *text;

        killed_writer(3000); /* some 4,500 lines, 400 KiB: several times the 64 KiB allocated at a time */
        text = slurp(&len);
        cr_assert_gt(len, 256 * 1024, "the journal is only %zu bytes", len);
        free(text);
        s = open_loaded(&l);
        cr_assert(!l.torn_tail);
        assert_records(&l, 3000);
        state_loaded_done(&l);
        state_free(s);
}

/* A NUL byte inside a complete line is nothing edfd writes: the file is kept aside as corrupt. */
Test(state, nul_inside_a_line_is_corrupt, .init = setup_shm, .fini = teardown) {
        StateLoaded l;
        State *s = NULL;
        size_t len;
        char *text;
        FILE *f;

        killed_writer(4);
        text = slurp(&len);
        char *nul = memchr(text, '\0', len);
        cr_assert(nul);
        f = fopen(path, "we");
        cr_assert(f);
        fwrite(text, 1, (size_t) (nul - text), f);
        fwrite("R 2\0 #00000000\n", 1, 15, f);
        fclose(f);

        cr_assert_eq(state_open(&s, dir), 0);
        cr_assert_eq(state_load(s, &l), 0);
        cr_assert_not_null(l.corrupt_path, "a line with a NUL byte was accepted");
        cr_assert(strstr(l.corrupt_reason, "NUL"), "the reason does not say what was wrong: %s", l.corrupt_reason);
        cr_assert_eq(l.n_entries, 0);
        state_loaded_done(&l);
        state_free(s);
        free(text);
}

/* The journal's mtime says when edfd last wrote it (a restart counts from it): stores into the
 * mapping do not set it by themselves. */
Test(state, a_record_sets_the_mtime, .init = setup_shm, .fini = teardown) {
        struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
        StateLoaded l;
        struct stat st;
        State *s;

        s = open_loaded(&l);
        state_loaded_done(&l);
        cr_assert_eq(utimensat(AT_FDCWD, path, old, 0), 0);
        StateRecord r = rec(1);
        cr_assert_eq(state_write_reservation(s, true, &r), 0);
        cr_assert_eq(stat(path, &st), 0);
        cr_assert_geq(st.st_mtime, time(NULL) - 2, "the journal's mtime stayed at %lld after a record",
                      (long long) st.st_mtime);
        state_free(s);
}

/* A file system that cannot allocate ahead (here: a file size limit below the room, so fallocate(2)
 * fails with EFBIG) gets its records with pwrite(2): the same journal, nothing allocated ahead. A
 * record that does not fit is refused, and the ones before it stay. */
static void limited_writer(rlim_t limit, uint64_t n, int *ret_failed_at) {
        int p[2], status, failed_at = 0;
        pid_t pid;

        cr_assert_eq(pipe(p), 0);
        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                struct rlimit rl = { limit, limit };
                StateLoaded l;
                State *s = NULL;
                int at = 0;
                close(p[0]);
                signal(SIGXFSZ, SIG_IGN);
                if (setrlimit(RLIMIT_FSIZE, &rl) < 0 || state_open(&s, dir) < 0 || state_load(s, &l) < 0)
                        _exit(1);
                for (uint64_t id = 1; id <= n && at == 0; id++) {
                        StateRecord r = rec(id);
                        if (state_write_reservation(s, true, &r) < 0 || (id % 2 == 1 && state_write_release(s, id) < 0))
                                at = (int) id;
                }
                if (write(p[1], &at, sizeof at) != sizeof at)
                        _exit(1);
                raise(SIGKILL);
                _exit(2);
        }
        close(p[1]);
        cr_assert_eq(read(p[0], &failed_at, sizeof failed_at), (ssize_t) sizeof failed_at, "the writer failed");
        close(p[0]);
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        *ret_failed_at = failed_at;
}

Test(state, without_room_ahead_records_are_written, .init = setup_shm, .fini = teardown) {
        StateLoaded l;
        State *s;
        size_t len;
        char *text;
        int failed_at;

        limited_writer(32 * 1024, 50, &failed_at);
        cr_assert_eq(failed_at, 0, "record %d was refused below the file size limit", failed_at);
        text = slurp(&len);
        cr_assert_eq(count_nul(text, len), 0, "room was allocated ahead although fallocate could not");
        free(text);
        s = open_loaded(&l);
        cr_assert(!l.torn_tail);
        cr_assert_eq(l.n_entries, 25);
        state_loaded_done(&l);
        state_free(s);
}

Test(state, a_journal_that_cannot_grow_refuses_the_record, .init = setup_shm, .fini = teardown) {
        StateLoaded l;
        State *s;
        int failed_at;

        /* Room for the first 64 KiB, not for the next. */
        limited_writer(100 * 1024, 5000, &failed_at);
        cr_assert_gt(failed_at, 100, "refused at record %d", failed_at);
        s = open_loaded(&l);
        cr_assert(!l.torn_tail);
        /* Every record before the refused one, none after: the refused one is an admission's I (then
         * the last id seen is failed_at - 1) or a release's R (then its I is there, live). */
        uint64_t at = (uint64_t) failed_at, live = 0;
        cr_assert(l.next_id == at || (at % 2 == 1 && l.next_id == at + 1), "next id %" PRIu64 " after a refusal at %"
                  PRIu64, l.next_id, at);
        for (uint64_t id = 2; id < at; id += 2)
                live++;
        if (l.next_id == at + 1)
                live++;
        cr_assert_eq(l.n_entries, live, "%zu reservations loaded, %" PRIu64 " written", l.n_entries, live);
        state_loaded_done(&l);
        state_free(s);
}

/* A reservation of partitioned placement keeps its CPU (a 14th field); a global one writes the
 * 13 fields of older journals, which load as global. */
Test(state, the_cpu_of_a_partitioned_reservation, .init = setup_shm, .fini = teardown) {
        StateLoaded l = {};
        State *s = open_loaded(&l);
        StateRecord global = rec(1), placed = rec(2);
        size_t len;
        char *buf;

        state_loaded_done(&l);
        placed.partitioned = true;
        placed.cpu = 3;
        cr_assert_eq(state_write_reservation(s, false, &global), 0);
        cr_assert_eq(state_write_reservation(s, false, &placed), 0);
        state_free(s);
        buf = slurp(&len);
        /* flags 1, donor 0, donated 0, then the checksum (global) or the CPU (partitioned). */
        cr_assert(strstr(buf, " 1 0 0 #") && strstr(buf, " 1 0 0 3 #"), "the records: %s", buf);
        free(buf);
        s = open_loaded(&l);
        cr_assert_eq(l.n_entries, 2);
        cr_assert(l.entries[0].has_committed && !l.entries[0].committed.partitioned);
        cr_assert(l.entries[1].committed.partitioned);
        cr_assert_eq(l.entries[1].committed.cpu, 3);
        state_loaded_done(&l);
        state_free(s);
}

/* Where a process moved into the v2 partitions came from: kept over a restart (P records),
 * escaped, the newest per pid, through a rewrite; refused when too long, not absolute, or not a
 * plain cgroup path (a_malformed_origin_is_corrupt has those). */
Test(state, origins, .init = setup_shm, .fini = teardown) {
        StateLoaded l = {};
        State *s = open_loaded(&l);
        char long_path[STATE_ORIGIN_MAX + 2];
        size_t len;
        char *buf;

        state_loaded_done(&l);
        cr_assert_eq(state_write_origin(s, 42, "/system.slice/old.service"), 0);
        cr_assert_eq(state_write_origin(s, 42, "/system.slice/a b#%\xc3\xa9.service"), 0, "a newer one for pid 42");
        cr_assert_eq(state_write_origin(s, 7, "/"), 0);
        cr_assert_eq(state_write_origin(s, 8, "relative"), -EINVAL);
        cr_assert_eq(state_write_origin(s, 8, NULL), -EINVAL);
        memset(long_path, 'x', sizeof long_path - 1);
        long_path[0] = '/';
        long_path[sizeof long_path - 1] = '\0';
        cr_assert_eq(state_write_origin(s, 9, long_path), -ENAMETOOLONG);
        long_path[STATE_ORIGIN_MAX / 3 + 2] = '\0';
        memset(long_path + 1, ' ', STATE_ORIGIN_MAX / 3 + 1); /* each space is %20: 3 bytes */
        cr_assert_eq(state_write_origin(s, 9, long_path), -ENAMETOOLONG, "too long once escaped");
        state_free(s);
        buf = slurp(&len);
        cr_assert(strstr(buf, "P 42 /system.slice/a%20b%23%25%C3%A9.service #"), "escaped: %s", buf);
        cr_assert_null(strstr(buf, "P 9 "), "nothing written for what was refused: %s", buf);
        free(buf);

        s = open_loaded(&l);
        cr_assert_eq(l.n_origins, 2);
        for (size_t i = 0; i < l.n_origins; i++)
                if (l.origins[i].pid == 42)
                        cr_assert_str_eq(l.origins[i].path, "/system.slice/a b#%\xc3\xa9.service");
                else {
                        cr_assert_eq(l.origins[i].pid, 7);
                        cr_assert_str_eq(l.origins[i].path, "/");
                }
        /* A rewrite keeps what it is given, and only that. */
        StateOrigin keep = { .pid = 42 };
        snprintf(keep.path, sizeof keep.path, "%s", "/u s");
        cr_assert_eq(state_rewrite(s, NULL, 0, NULL, 0, &keep, 1, NULL, 0, l.next_id), 0);
        state_loaded_done(&l);
        state_free(s);
        s = open_loaded(&l);
        cr_assert_eq(l.n_origins, 1);
        cr_assert_eq(l.origins[0].pid, 42);
        cr_assert_str_eq(l.origins[0].path, "/u s");
        state_loaded_done(&l);
        state_free(s);
}

/* FNV-1a, as the journal's checksum: to write a line the loader reads as intact. */
static uint32_t fnv(const char *s) {
        uint32_t h = UINT32_C(2166136261);

        for (; *s; s++) {
                h ^= (unsigned char) *s;
                h *= UINT32_C(16777619);
        }
        return h;
}

/* A P record edfd would not write is malformed, and a malformed record makes the file corrupt (it is
 * kept aside whole: state.h). Among them the paths a release must never write a process back to:
 * `..` or `.` components, empty ones, control bytes (an escaped newline), escaped or not, and
 * edfd's own edfd-partitions. */
Test(state, a_malformed_origin_is_corrupt, .init = setup_shm, .fini = teardown) {
        static const char *const bad[] = {
                "P 0 /x", "P 5 x", "P 5 /a%2", "P 5 /a%00", "P 5 /a%zz", "P 5 /a b", "P 5", "P x /a", "P 5 /a\x7f",
                "P 5 /system.slice/../../etc%0Ax", "P 5 /a/../b", "P 5 /..", "P 5 /a/..", "P 5 /a/./b", "P 5 /.",
                "P 5 //a", "P 5 /a//b", "P 5 /a/", "P 5 /a%0Ab", "P 5 /a%09b", "P 5 /a%7F", "P 5 /a%01",
                "P 5 /a%2F..%2Fb", "P 5 /a/%2E%2E/b", "P 5 /a/%2e", "P 5 /a%2F", "P 5 /edfd-partitions",
                "P 5 /edfd-partitions/cpu1", "P 5 /edfd-partitions%2Fcpu1",
        };

        static const char good[] = "A 1 1001 1001 1000 77 apps 1000000 10000000 10000000 1 0 0";

        for (unsigned version = 1; version <= 3; version++) /* b770680 wrote P into version-1 files */
                for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                        StateLoaded l = {};
                        State *s = NULL;
                        char *text;
                        size_t len;
                        FILE *f;

                        f = fopen(path, "we");
                        cr_assert(f);
                        fprintf(f, "edfd-state %u next=1\n%s #%08" PRIx32 "\n%s #%08" PRIx32 "\n", version, good,
                                fnv(good), bad[i], fnv(bad[i]));
                        fclose(f);
                        cr_assert_eq(state_open(&s, dir), 0);
                        cr_assert_eq(state_load(s, &l), 0);
                        cr_assert_not_null(l.corrupt_path, "version %u: accepted: %s", version, bad[i]);
                        cr_assert(strstr(l.corrupt_reason, "line 3: ") && strstr(l.corrupt_reason, "origin record"),
                                  "%s: %s", bad[i], l.corrupt_reason);
                        cr_assert_eq(l.n_entries, 0, "the reservation before the bad record is not kept aside with it");
                        cr_assert_eq(l.n_origins, 0);
                        unlink(l.corrupt_path);
                        state_loaded_done(&l);
                        state_free(s);
                        text = slurp(&len);
                        cr_assert_eq(strncmp(text, "edfd-state 3 next=1\n", 20), 0, "not started afresh: %s", text);
                        free(text);
                }
}

/* What a P record may hold and state_write_origin() refuses (-EINVAL, nothing written): the
 * paths a_malformed_origin_is_corrupt reads as malformed, unescaped; and what is a plain cgroup
 * path although it looks close to one of them, written and read back as it was. */
Test(state, origin_paths, .init = setup_shm, .fini = teardown) {
        static const char *const refused[] = {
                "/system.slice/../../etc\nx", "/a/../b", "/..", "/a/..", "/a/./b", "/.", "//a", "/a//b", "/a/",
                "/a\nb", "/a\tb", "/a\x7f", "/a\x01", "/edfd-partitions", "/edfd-partitions/cpu1", "", "a/b",
        };
        static const char *const kept[] = {
                "/", "/a/..b", "/a/.b", "/a../b", "/...", "/a.", "/edfd-partitions-old", "/edfd-partitionsx/y",
                "/user.slice/user-1000.slice/caf\xc3\xa9.scope",
        };
        StateLoaded l = {};
        State *s = open_loaded(&l);
        size_t len;
        char *buf;

        state_loaded_done(&l);
        for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
                cr_assert_eq(state_write_origin(s, 5, refused[i]), -EINVAL, "accepted: \"%s\"", refused[i]);
        for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
                cr_assert_eq(state_write_origin(s, (uint32_t) (100 + i), kept[i]), 0, "refused: \"%s\"", kept[i]);
        state_free(s);
        buf = slurp(&len);
        cr_assert_null(strstr(buf, "P 5 "), "something refused was written: %s", buf);
        free(buf);

        s = open_loaded(&l);
        cr_assert_eq(l.n_origins, sizeof kept / sizeof kept[0]);
        for (size_t i = 0; i < l.n_origins; i++) {
                cr_assert(l.origins[i].pid >= 100 && l.origins[i].pid < 100 + sizeof kept / sizeof kept[0]);
                cr_assert_str_eq(l.origins[i].path, kept[l.origins[i].pid - 100]);
        }
        state_loaded_done(&l);
        state_free(s);
}

static void put_file(const char *text) {
        FILE *f = fopen(path, "we");

        cr_assert(f, "%s: %s", path, strerror(errno));
        cr_assert_geq(fputs(text, f), 0);
        cr_assert_eq(fclose(f), 0);
}

/* Journals as earlier edfds wrote them, each by that version's own daemon/state.c (its
 * state_write_*() and state_rewrite() calls, the output kept byte for byte):
 *
 * - b770680 (0.2.0 in development): P records in a file marked version 1, a reservation of
 *   partitioned placement (the 14th field), an intent settled by its A, a split child's intent
 *   (donor 1), a released reservation, dynamic groups created and removed, an override; */
static const char journal_b770680[] =
        "edfd-state 1 next=1\n"
        "G apps/dyn 2000000 10000000 #1f86eea1\n"
        "O apps 3000000 10000000 #272ef8b8\n"
        "G apps/gone 1000000 10000000 #29fd1218\n"
        "D apps/gone #c4c11845\n"
        "I 1 1001 1001 1000 77 apps 1000000 10000000 10000000 1 0 0 #beb84930\n"
        "A 1 1001 1001 1000 77 apps 1000000 10000000 10000000 1 0 0 #a176a028\n"
        "I 2 1001 1002 1000 77 apps 500000 10000000 10000000 1 1 0 #22cdf5b1\n"
        "I 3 1003 1003 1000 77 rt/part 1000000 10000000 10000000 1 0 0 1 #0282ba33\n"
        "P 1003 /system.slice/rt%20app.service #92d2bce1\n"
        "I 4 1004 1004 1000 77 apps 1000000 10000000 10000000 1 0 0 #da26c653\n"
        "R 4 #68edb861\n";
/* - b770680's snapshot (state_rewrite(): the header's next id, A records, P records); */
static const char snapshot_b770680[] =
        "edfd-state 1 next=5\n"
        "G apps/dyn 2000000 10000000 #1f86eea1\n"
        "A 3 1003 1003 1000 77 rt/part 1000000 10000000 10000000 1 0 0 1 #438c090b\n"
        "P 1003 /system.slice/rt%20app.service #92d2bce1\n";
/* - 576a407, before partitioned placement: 13 fields, no P. */
static const char journal_576a407[] =
        "edfd-state 1 next=1\n"
        "G apps/dyn 2000000 10000000 #1f86eea1\n"
        "O apps 3000000 10000000 #272ef8b8\n"
        "I 1 1001 1001 1000 77 apps 1000000 10000000 10000000 1 0 0 #beb84930\n"
        "A 1 1001 1001 1000 77 apps 1000000 10000000 10000000 1 0 0 #a176a028\n"
        "I 2 1001 1002 1000 77 apps 500000 10000000 10000000 1 1 0 #22cdf5b1\n"
        "I 4 1004 1004 1000 77 apps 1000000 10000000 10000000 1 0 0 #da26c653\n"
        "R 4 #68edb861\n";

/* - f71a750 (version 2, the last before W, X and G's users): the calls of the b770680 journal, by
 *   its own state.c, wrote exactly that journal under the header of version 2 (checked when this
 *   test was written). A copy, to be freed. */
static char *journal_f71a750(void) {
        char *j = strdup(journal_b770680);

        cr_assert_not_null(j);
        cr_assert_eq(strncmp(j, "edfd-state 1 ", 13), 0);
        j[11] = '2';
        return j;
}

static void assert_group(const StateLoaded *l, size_t i, const char *path_, bool override, uint64_t runtime) {
        cr_assert_lt(i, l->n_groups);
        cr_assert_str_eq(l->groups[i].path, path_);
        cr_assert_eq(l->groups[i].override, override, "%s", path_);
        cr_assert_eq(l->groups[i].runtime, runtime, "%s", path_);
        cr_assert_eq(l->groups[i].period, 10000000, "%s", path_);
}

/* Reservations 1 (committed) and 2 (a split child's intent) as both older journals hold them. */
static void assert_reservations_1_2(const StateLoaded *l) {
        cr_assert(l->entries[0].has_committed && !l->entries[0].has_intent);
        cr_assert_eq(l->entries[0].committed.id, 1);
        cr_assert_eq(l->entries[0].committed.tid, 1001);
        cr_assert_eq(l->entries[0].committed.identity, 77);
        cr_assert_str_eq(l->entries[0].committed.group, "apps");
        cr_assert_eq(l->entries[0].committed.params.runtime, 1000000);
        cr_assert(!l->entries[0].committed.partitioned);
        cr_assert(l->entries[1].has_intent && !l->entries[1].has_committed);
        cr_assert_eq(l->entries[1].intent.id, 2);
        cr_assert_eq(l->entries[1].intent.tid, 1002);
        cr_assert_eq(l->entries[1].intent.donor, 1);
        cr_assert_eq(l->entries[1].intent.params.runtime, 500000);
}

/* The file as given, but for the header's version: now this edfd's. Then a record appended, and
 * all of it read again. */
static void assert_marked_and_appendable(State *s, const char *was) {
        StateLoaded l = {};
        size_t len;
        char *buf = slurp(&len);

        len -= count_nul(buf, len); /* the room allocated ahead for appending */
        cr_assert_eq(len, strlen(was), "the records changed size when they were read:\n%s", buf);
        cr_assert_eq(strncmp(buf, "edfd-state 3 ", 13), 0, "not marked version 3: %.30s", buf);
        cr_assert_eq(memcmp(buf + 13, was + 13, len - 13), 0, "more changed than the version:\n%s", buf);
        free(buf);
        cr_assert_eq(state_write_origin(s, 1004, "/user.slice"), 0);
        state_free(s);
        s = open_loaded(&l);
        cr_assert_eq(l.version, 3);
        cr_assert_eq(l.origins[l.n_origins - 1].pid, 1004);
        state_loaded_done(&l);
        state_free(s);
}

/* The records of the b770680 journal, as a file of that version (1) or of f71a750 (2) holds them. */
static void reads_the_b770680_records(const char *journal, unsigned version) {
        StateLoaded l = {};
        State *s;

        put_file(journal);
        s = open_loaded(&l);
        cr_assert_eq(l.version, version);
        cr_assert_eq(l.n_entries, 3, "%zu reservations", l.n_entries);
        assert_reservations_1_2(&l);
        cr_assert(l.entries[2].has_intent && !l.entries[2].has_committed);
        cr_assert_eq(l.entries[2].intent.id, 3);
        cr_assert_str_eq(l.entries[2].intent.group, "rt/part");
        cr_assert(l.entries[2].intent.partitioned);
        cr_assert_eq(l.entries[2].intent.cpu, 1);
        cr_assert_eq(l.n_groups, 2);
        assert_group(&l, 0, "apps/dyn", false, 2000000);
        cr_assert_null(l.groups[0].users, "a group of an older version has its parent's users");
        assert_group(&l, 1, "apps", true, 3000000);
        cr_assert_eq(l.n_origins, 1);
        cr_assert_eq(l.origins[0].pid, 1003);
        cr_assert_str_eq(l.origins[0].path, "/system.slice/rt app.service");
        cr_assert_eq(l.n_watches, 0);
        cr_assert_eq(l.next_id, 5);
        state_loaded_done(&l);
        assert_marked_and_appendable(s, journal);
}

Test(state, reads_the_journal_of_b770680, .init = setup_shm, .fini = teardown) {
        reads_the_b770680_records(journal_b770680, 1);
}

Test(state, reads_the_journal_of_f71a750, .init = setup_shm, .fini = teardown) {
        _cleanup_free_ char *journal = journal_f71a750();

        reads_the_b770680_records(journal, 2);
}

Test(state, reads_a_snapshot_of_b770680, .init = setup_shm, .fini = teardown) {
        StateLoaded l = {};
        State *s;

        put_file(snapshot_b770680);
        s = open_loaded(&l);
        cr_assert_eq(l.version, 1);
        cr_assert_eq(l.n_entries, 1);
        cr_assert(l.entries[0].has_committed && l.entries[0].committed.partitioned && l.entries[0].committed.cpu == 1);
        cr_assert_eq(l.n_groups, 1);
        assert_group(&l, 0, "apps/dyn", false, 2000000);
        cr_assert_eq(l.n_origins, 1);
        cr_assert_str_eq(l.origins[0].path, "/system.slice/rt app.service");
        cr_assert_eq(l.next_id, 5);
        state_loaded_done(&l);
        assert_marked_and_appendable(s, snapshot_b770680);
}

Test(state, reads_a_journal_from_before_partitions, .init = setup_shm, .fini = teardown) {
        StateLoaded l = {};
        State *s;

        put_file(journal_576a407);
        s = open_loaded(&l);
        cr_assert_eq(l.version, 1);
        cr_assert_eq(l.n_entries, 2);
        assert_reservations_1_2(&l);
        cr_assert_eq(l.n_groups, 2);
        assert_group(&l, 0, "apps/dyn", false, 2000000);
        assert_group(&l, 1, "apps", true, 3000000);
        cr_assert_eq(l.n_origins, 0);
        cr_assert_eq(l.next_id, 5);
        state_loaded_done(&l);
        assert_marked_and_appendable(s, journal_576a407);
}

/* A file this edfd writes says version 3, from the start and after a rewrite. */
Test(state, writes_version_3, .init = setup_shm, .fini = teardown) {
        StateLoaded l = {};
        State *s = open_loaded(&l);
        StateRecord r = rec(1);
        size_t len;
        char *buf;

        cr_assert_eq(l.version, 0, "no file yet");
        state_loaded_done(&l);
        cr_assert_eq(state_write_reservation(s, false, &r), 0);
        buf = slurp(&len);
        cr_assert_eq(strncmp(buf, "edfd-state 3 next=1\n", 20), 0, "%.30s", buf);
        free(buf);
        cr_assert_eq(state_rewrite(s, &r, 1, NULL, 0, NULL, 0, NULL, 0, 2), 0);
        state_free(s);
        buf = slurp(&len);
        cr_assert_eq(strncmp(buf, "edfd-state 3 next=2\n", 20), 0, "%.30s", buf);
        free(buf);
        s = open_loaded(&l);
        cr_assert_eq(l.version, 3);
        state_loaded_done(&l);
        state_free(s);
}

/* A newer edfd's journal (a version above 3, a record this one does not know): not read, kept aside
 * byte for byte with a reason that names both versions, and a fresh journal of version 3 in its
 * place. */
Test(state, a_newer_version_is_kept_aside, .init = setup_shm, .fini = teardown) {
        static const char *const newer[] = { "edfd-state 4 next=9\nZ 9 1234 /x 0 #00000000\n", "edfd-state 10 next=1\n" };
        static const char *const why[] = { "line 1: an unknown state version: 4, newer than this edfd's 3",
                                           "line 1: an unknown state version: 10, newer than this edfd's 3" };
        static const unsigned want[] = { 4, 10 };

        for (size_t i = 0; i < 2; i++) {
                StateLoaded l = {};
                State *s = NULL;
                size_t len;
                char *buf;

                put_file(newer[i]);
                cr_assert_eq(state_open(&s, dir), 0);
                cr_assert_eq(state_load(s, &l), 0);
                cr_assert_not_null(l.corrupt_path, "version %u was read", want[i]);
                cr_assert_eq(strncmp(l.corrupt_reason, why[i], strlen(why[i])), 0, "%s", l.corrupt_reason);
                cr_assert_eq(l.version, want[i]);
                cr_assert_eq(l.n_entries + l.n_groups + l.n_origins + l.n_watches, 0);
                state_free(s);
                buf = slurp(&len);
                cr_assert_eq(strncmp(buf, "edfd-state 3 next=1\n", 20), 0, "%.30s", buf);
                free(buf);
                snprintf(path, sizeof path, "%s", l.corrupt_path);
                buf = slurp(&len);
                cr_assert_str_eq(buf, newer[i], "the newer journal was not kept as it was");
                free(buf);
                unlink(l.corrupt_path);
                snprintf(path, sizeof path, "%s/state", dir);
                state_loaded_done(&l);
        }
}

/* An empty file, and one cut in the middle of its header: nothing was recorded, and a journal of
 * version 3 begins. */
Test(state, an_empty_or_torn_header_starts_afresh, .init = setup_shm, .fini = teardown) {
        static const char *const files[] = { "", "edfd-state 1 ne" };

        for (size_t i = 0; i < 2; i++) {
                StateLoaded l = {};
                State *s;
                StateRecord r = rec(1);
                size_t len;
                char *buf;

                put_file(files[i]);
                s = open_loaded(&l);
                cr_assert_eq(l.n_entries, 0);
                state_loaded_done(&l);
                cr_assert_eq(state_write_reservation(s, false, &r), 0);
                state_free(s);
                buf = slurp(&len);
                cr_assert_eq(strncmp(buf, "edfd-state 3 next=1\nA 1 ", 24), 0, "%.40s", buf);
                free(buf);
        }
}

/* A version below 1 is nothing any edfd wrote: corrupt, as before. */
Test(state, version_0_is_corrupt, .init = setup_shm, .fini = teardown) {
        StateLoaded l = {};
        State *s = NULL;

        put_file("edfd-state 0 next=1\n");
        cr_assert_eq(state_open(&s, dir), 0);
        cr_assert_eq(state_load(s, &l), 0);
        cr_assert_not_null(l.corrupt_path);
        cr_assert(strstr(l.corrupt_reason, "version"), "%s", l.corrupt_reason);
        unlink(l.corrupt_path);
        state_loaded_done(&l);
        state_free(s);
}

static StateWatch watch_of(uint32_t pid) {
        StateWatch w = {
                .pid = pid, .start_time = 123456789ULL + pid, .exe_dev = 0x803, .exe_ino = 99999 + pid, .uid = 65534,
                .caller_pid = 4242, .may_move = pid % 2, .flags = 0x5, .params = { 2000000, 10000000, 10000000 },
                .bound_ns = 20000000000ULL, .called_ns = 1000000000ULL * pid, .expire_ns = 1000000000ULL * pid + 60000000000ULL,
                .exec_ns = 0, .base_switches = -1,
        };
        snprintf(w.group, sizeof w.group, "containers/c%" PRIu32, pid);
        return w;
}

static void assert_watch_eq(const StateWatch *a, const StateWatch *b) {
        cr_assert_eq(a->pid, b->pid);
        cr_assert_eq(a->start_time, b->start_time, "pid %" PRIu32, a->pid);
        cr_assert_eq(a->exe_dev, b->exe_dev);
        cr_assert_eq(a->exe_ino, b->exe_ino);
        cr_assert_eq(a->uid, b->uid);
        cr_assert_eq(a->caller_pid, b->caller_pid);
        cr_assert_eq(a->may_move, b->may_move);
        cr_assert_eq(a->flags, b->flags);
        cr_assert_str_eq(a->group, b->group);
        cr_assert_eq(a->params.runtime, b->params.runtime);
        cr_assert_eq(a->params.deadline, b->params.deadline);
        cr_assert_eq(a->params.period, b->params.period);
        cr_assert_eq(a->bound_ns, b->bound_ns);
        cr_assert_eq(a->called_ns, b->called_ns);
        cr_assert_eq(a->expire_ns, b->expire_ns);
        cr_assert_eq(a->exec_ns, b->exec_ns, "pid %" PRIu32, a->pid);
        cr_assert_eq(a->base_switches, b->base_switches, "pid %" PRIu32, a->pid);
}

static const StateWatch *find_watch(const StateLoaded *l, uint32_t pid) {
        for (size_t i = 0; i < l->n_watches; i++)
                if (l->watches[i].pid == pid)
                        return &l->watches[i];
        return NULL;
}

/* W and X records: the last W of a pid is its watch (its exec seen, in a second W), an X ends it;
 * the same after a kill -9 (the room ahead left as NUL bytes) and through a rewrite, which keeps
 * what it is given. */
Test(state, watches_round_trip, .init = setup_shm, .fini = teardown) {
        StateWatch w1 = watch_of(101), w2 = watch_of(102), w3 = watch_of(103);
        StateLoaded l = {};
        State *s = open_loaded(&l);

        state_loaded_done(&l);
        cr_assert_eq(state_write_watch(s, &w1), 0);
        cr_assert_eq(state_write_watch(s, &w2), 0);
        cr_assert_eq(state_write_watch(s, &w3), 0);
        w2.exec_ns = 555000000000ULL;
        w2.base_switches = 0;
        cr_assert_eq(state_write_watch(s, &w2), 0, "the exec seen");
        w1.base_switches = 77;
        w1.exec_ns = 1;
        cr_assert_eq(state_write_watch(s, &w1), 0);
        cr_assert_eq(state_write_watch_end(s, 103), 0);
        cr_assert_eq(state_write_watch_end(s, 104), 0, "the end of a watch never recorded is harmless");
        /* What is refused writes nothing. */
        StateWatch bad = watch_of(0);
        cr_assert_eq(state_write_watch(s, &bad), -EINVAL, "pid 0");
        bad = watch_of(7);
        snprintf(bad.group, sizeof bad.group, "%s", "../x");
        cr_assert_eq(state_write_watch(s, &bad), -EINVAL, "a group path edfd refuses");
        cr_assert_eq(state_write_watch_end(s, 0), -EINVAL);

        state_free(s);
        /* One more by an edfd killed after it (the room ahead left as NUL bytes). */
        {
                pid_t pid = fork();
                int status;
                cr_assert_geq(pid, 0);
                if (pid == 0) {
                        StateWatch w = watch_of(105);
                        StateLoaded k;
                        State *ks = NULL;
                        if (state_open(&ks, dir) < 0 || state_load(ks, &k) < 0 || state_write_watch(ks, &w) < 0)
                                _exit(1);
                        raise(SIGKILL);
                        _exit(2);
                }
                cr_assert_eq(waitpid(pid, &status, 0), pid);
                cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the writer did not die by SIGKILL: %d",
                          status);
        }
        s = open_loaded(&l);
        cr_assert_eq(l.n_watches, 3, "%zu watches loaded", l.n_watches);
        cr_assert_not_null(find_watch(&l, 101));
        assert_watch_eq(find_watch(&l, 101), &w1);
        cr_assert_not_null(find_watch(&l, 102));
        assert_watch_eq(find_watch(&l, 102), &w2);
        cr_assert_null(find_watch(&l, 103), "an ended watch came back");
        cr_assert_not_null(find_watch(&l, 105), "the watch written just before a kill -9 is lost");
        cr_assert_eq(l.n_entries + l.n_groups + l.n_origins, 0);

        /* A rewrite keeps exactly the watches it is given. */
        cr_assert_eq(state_rewrite(s, NULL, 0, NULL, 0, NULL, 0, &w2, 1, l.next_id), 0);
        state_loaded_done(&l);
        state_free(s);
        s = open_loaded(&l);
        cr_assert_eq(l.n_watches, 1);
        assert_watch_eq(&l.watches[0], &w2);
        state_loaded_done(&l);
        state_free(s);
}

/* G records with a users: list (a group's own: names, or none at all: root only) and without (its
 * parent's), each G the whole list again; through a rewrite; refused where a name is not one edfd
 * accepts, where there are more than 64, and for an override. */
Test(state, group_users_round_trip, .init = setup_shm, .fini = teardown) {
        char *names[] = { (char *) "alice", (char *) "svc-rt_1.x", (char *) "machine$", NULL };
        char *none[] = { NULL };
        char *one[] = { (char *) "bob", NULL };
        char *bad1[] = { (char *) "a,b", NULL }, *bad2[] = { (char *) "a b", NULL }, *bad3[] = { (char *) "", NULL },
             *bad4[] = { (char *) "-x", NULL }, *bad5[] = { (char *) "a", (char *) "a", NULL };
        char *const *bad[] = { bad1, bad2, bad3, bad4, bad5 };
        char *many[STATE_USERS_MAX + 2], longest[STATE_USERS_MAX][STATE_USER_NAME_MAX + 1];
        StateLoaded l = {};
        State *s = open_loaded(&l);

        state_loaded_done(&l);
        for (size_t i = 0; i < STATE_USERS_MAX; i++) {
                memset(longest[i], 'u', STATE_USER_NAME_MAX);
                snprintf(longest[i], 8, "u%05zu", i);
                longest[i][7] = 'u';
                longest[i][STATE_USER_NAME_MAX] = '\0';
                many[i] = longest[i];
        }
        many[STATE_USERS_MAX] = NULL;
        cr_assert_eq(state_write_group(s, false, "c/names", 1000000, 10000000, names), 0);
        cr_assert_eq(state_write_group(s, false, "c/root", 1000000, 10000000, none), 0);
        cr_assert_eq(state_write_group(s, false, "c/parents", 1000000, 10000000, NULL), 0);
        cr_assert_eq(state_write_group(s, false, "c/longest", 1000000, 10000000, many), 0, "64 names of 256 bytes");
        cr_assert_eq(state_write_group(s, false, "c/changed", 1000000, 10000000, one), 0);
        cr_assert_eq(state_write_group(s, false, "c/changed", 2000000, 10000000, names), 0, "a new list replaces");
        cr_assert_eq(state_write_group(s, false, "c/dropped", 1000000, 10000000, one), 0);
        cr_assert_eq(state_write_group(s, false, "c/dropped", 2000000, 10000000, NULL), 0, "no list: its parent's");
        many[STATE_USERS_MAX] = (char *) "onemore";
        many[STATE_USERS_MAX + 1] = NULL;
        cr_assert_eq(state_write_group(s, false, "c/toomany", 1000000, 10000000, many), -EINVAL, "65 names");
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                cr_assert_eq(state_write_group(s, false, "c/bad", 1000000, 10000000, bad[i]), -EINVAL, "bad list %zu", i);
        cr_assert_eq(state_write_group(s, true, "c/names", 1000000, 10000000, names), -EINVAL, "an override with users");
        state_free(s);

        for (unsigned pass = 0; pass < 2; pass++) {
                s = open_loaded(&l);
                cr_assert_eq(l.n_groups, 6, "pass %u: %zu groups", pass, l.n_groups);
                for (size_t i = 0; i < l.n_groups; i++) {
                        const StateGroup *g = &l.groups[i];
                        if (strcmp(g->path, "c/names") == 0 || strcmp(g->path, "c/changed") == 0) {
                                cr_assert_not_null(g->users, "%s", g->path);
                                for (size_t k = 0; k < 4; k++)
                                        cr_assert(names[k] ? g->users[k] && strcmp(g->users[k], names[k]) == 0 : !g->users[k],
                                                  "%s: name %zu", g->path, k);
                        } else if (strcmp(g->path, "c/root") == 0)
                                cr_assert(g->users && !g->users[0], "c/root: not an empty list");
                        else if (strcmp(g->path, "c/longest") == 0) {
                                size_t k;
                                cr_assert_not_null(g->users);
                                for (k = 0; g->users[k]; k++)
                                        cr_assert_str_eq(g->users[k], longest[k]);
                                cr_assert_eq(k, STATE_USERS_MAX);
                        } else
                                cr_assert_null(g->users, "%s has a list", g->path);
                }
                if (pass == 0)
                        cr_assert_eq(state_rewrite(s, NULL, 0, l.groups, l.n_groups, NULL, 0, NULL, 0, l.next_id), 0);
                state_loaded_done(&l);
                state_free(s);
        }
}

/* Records of version 3 that edfd would not write make the file corrupt, kept aside whole. */
Test(state, malformed_watches_and_users_are_corrupt, .init = setup_shm, .fini = teardown) {
        static const char *const bad[] = {
                "W 5 1 2 3 65534 1 0 0 c/x 1000000 10000000 10000000 1 1 1 0",       /* 17 fields */
                "W 5 1 2 3 65534 1 0 0 c/x 1000000 10000000 10000000 1 1 1 0 0 9",   /* 19 */
                "W 0 1 2 3 65534 1 0 0 c/x 1000000 10000000 10000000 1 1 1 0 0",     /* pid 0 */
                "W 5 1 2 3 65534 1 2 0 c/x 1000000 10000000 10000000 1 1 1 0 0",     /* may-move 2 */
                "W 5 1 2 3 65534 1 0 0 ../x 1000000 10000000 10000000 1 1 1 0 0",    /* a bad group */
                "W 5 1 2 3 65534 1 0 0 c/x 1000000 10000000 10000000 1 1 1 0 -1",    /* switches */
                "X 0", "X", "X 5 6", "X x",
                "G c/x 1 2 users=a,,b", "G c/x 1 2 users=,a", "G c/x 1 2 users=a,", "G c/x 1 2 users=a,a",
                "G c/x 1 2 users=a%b", "G c/x 1 2 nobody", "O c/x 1 2 users=a", "G c/x 1 2 users=a extra",
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                StateLoaded l = {};
                State *s = NULL;
                FILE *f = fopen(path, "we");

                cr_assert(f);
                fprintf(f, "edfd-state 3 next=1\nG c/ok 1 2 users=a #%08" PRIx32 "\n%s #%08" PRIx32 "\n",
                        fnv("G c/ok 1 2 users=a"), bad[i], fnv(bad[i]));
                fclose(f);
                cr_assert_eq(state_open(&s, dir), 0);
                cr_assert_eq(state_load(s, &l), 0);
                cr_assert_not_null(l.corrupt_path, "accepted: %s", bad[i]);
                cr_assert(strstr(l.corrupt_reason, "line 3: "), "%s: %s", bad[i], l.corrupt_reason);
                cr_assert_eq(l.n_groups + l.n_watches, 0, "%s: kept part of a corrupt file", bad[i]);
                unlink(l.corrupt_path);
                state_loaded_done(&l);
                state_free(s);
        }
}
