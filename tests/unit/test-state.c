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
        cr_assert_eq(state_write_group(s, false, "test/dyn", 2000000, 10000000), 0);
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
        cr_assert_eq(strncmp(text, "edfd-state 1 next=1\n", 20), 0, "%.40s", text);
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
 * escaped, the newest per pid, through a rewrite; refused when too long or not absolute. */
Test(state, origins, .init = setup_shm, .fini = teardown) {
        StateLoaded l = {};
        State *s = open_loaded(&l);
        char long_path[STATE_ORIGIN_MAX + 2];
        size_t len;
        char *buf;

        state_loaded_done(&l);
        cr_assert_eq(state_write_origin(s, 42, "/system.slice/old.service"), 0);
        cr_assert_eq(state_write_origin(s, 42, "/system.slice/a b#%\x01.service"), 0, "a newer one for pid 42");
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
        cr_assert(strstr(buf, "P 42 /system.slice/a%20b%23%25%01.service #"), "escaped: %s", buf);
        cr_assert_null(strstr(buf, "P 9 "), "nothing written for what was refused: %s", buf);
        free(buf);

        s = open_loaded(&l);
        cr_assert_eq(l.n_origins, 2);
        for (size_t i = 0; i < l.n_origins; i++)
                if (l.origins[i].pid == 42)
                        cr_assert_str_eq(l.origins[i].path, "/system.slice/a b#%\x01.service");
                else {
                        cr_assert_eq(l.origins[i].pid, 7);
                        cr_assert_str_eq(l.origins[i].path, "/");
                }
        /* A rewrite keeps what it is given, and only that. */
        StateOrigin keep = { .pid = 42 };
        snprintf(keep.path, sizeof keep.path, "%s", "/u s");
        cr_assert_eq(state_rewrite(s, NULL, 0, NULL, 0, &keep, 1, l.next_id), 0);
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

Test(state, a_malformed_origin_is_corrupt, .init = setup_shm, .fini = teardown) {
        static const char *const bad[] = { "P 0 /x", "P 5 x", "P 5 /a%2", "P 5 /a%00", "P 5 /a%zz", "P 5 /a b",
                                           "P 5", "P x /a", "P 5 /a\x7f" };

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                StateLoaded l = {};
                State *s = open_loaded(&l);
                FILE *f;

                state_loaded_done(&l);
                state_free(s);
                f = fopen(path, "we");
                cr_assert(f);
                fprintf(f, "edfd-state 1 next=1\n%s #%08" PRIx32 "\n", bad[i], fnv(bad[i]));
                fclose(f);
                cr_assert_eq(state_open(&s, dir), 0);
                cr_assert_eq(state_load(s, &l), 0);
                cr_assert_not_null(l.corrupt_path, "accepted: %s", bad[i]);
                cr_assert(strstr(l.corrupt_reason, "origin") || strstr(l.corrupt_reason, "unknown"), "%s: %s", bad[i],
                          l.corrupt_reason);
                cr_assert_eq(l.n_origins, 0);
                unlink(l.corrupt_path);
                state_loaded_done(&l);
                state_free(s);
        }
}
