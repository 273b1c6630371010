/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/basic: the hashmap's iterator and value-free callback, the integer parsers, and the /proc
 * reader, stat parser and walker (the parser table-driven over buffers; the reader and the walker
 * on this test's own process). */

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/cpulist.h"
#include "basic/hashmap.h"
#include "basic/macro.h"
#include "basic/parse.h"
#include "basic/proc.h"

/* ---- hashmap ---- */

Test(hashmap, iterate_empty) {
        Hashmap m = HASHMAP_INIT;
        HashmapIter i = HASHMAP_ITER_INIT;
        uint64_t key = 7;
        void *v = &key;
        unsigned n = 0;

        cr_expect_not(hashmap_iterate(&m, &i, &key, &v));
        cr_expect_eq(key, 7, "key written at the end");
        cr_expect_eq(v, &key, "value written at the end");
        HASHMAP_FOREACH(v, &m, it)
                n++;
        cr_expect_eq(n, 0);
        /* Emptied again after growing: slots but no item. */
        cr_assert_eq(hashmap_put(&m, 5, &n), 0);
        cr_assert_eq(hashmap_remove(&m, 5), &n);
        HASHMAP_FOREACH(v, &m, it)
                n++;
        cr_expect_eq(n, 0);
        hashmap_done(&m);
}

/* Every item once, with its own key, across growth and removals (backward shifts). */
Test(hashmap, iterate_each_once) {
        static const size_t counts[] = { 1, 2, 12, 13, 1023, 1024, 5000 };

        for (size_t c = 0; c < ELEMENTSOF(counts); c++) {
                size_t n = counts[c], met = 0, live = 0;
                Hashmap m = HASHMAP_INIT;
                unsigned char *seen = calloc(n + 1, 1);
                uint64_t *vals = calloc(n + 1, sizeof *vals);
                uint64_t key, *v;

                cr_assert(seen && vals);
                for (uint64_t k = 1; k <= n; k++) {
                        vals[k] = k * 3;
                        cr_assert_eq(hashmap_put(&m, k, &vals[k]), 0);
                }
                for (uint64_t k = 3; k <= n; k += 3) /* every third goes */
                        cr_assert_eq(hashmap_remove(&m, k), &vals[k]);
                HASHMAP_FOREACH_KEY(v, key, &m, it) {
                        cr_assert(key >= 1 && key <= n, "key %" PRIu64, key);
                        cr_assert_eq(key % 3 != 0, true, "removed key %" PRIu64 " met", key);
                        cr_assert_eq(seen[key], 0, "key %" PRIu64 " met twice", key);
                        cr_assert_eq(*v, key * 3);
                        seen[key] = 1;
                        met++;
                }
                for (uint64_t k = 1; k <= n; k++)
                        live += k % 3 != 0;
                cr_expect_eq(met, live, "%zu items: met %zu of %zu", n, met, live);
                cr_expect_eq(met, m.n_items);
                hashmap_done(&m);
                free(seen);
                free(vals);
        }
}

/* Replacing the current value during the iteration is allowed. */
Test(hashmap, iterate_replace_current) {
        Hashmap m = HASHMAP_INIT;
        int a = 1, b = 2;
        uint64_t key;
        int *v;
        unsigned n = 0;

        for (uint64_t k = 1; k <= 100; k++)
                cr_assert_eq(hashmap_put(&m, k, &a), 0);
        HASHMAP_FOREACH_KEY(v, key, &m, it) {
                cr_assert_eq(v, &a);
                cr_assert_eq(hashmap_put(&m, key, &b), 0);
                n++;
        }
        cr_expect_eq(n, 100);
        for (uint64_t k = 1; k <= 100; k++)
                cr_expect_eq(hashmap_get(&m, k), &b);
        hashmap_done(&m);
}

static unsigned n_freed;

static void count_free(void *p) {
        n_freed++;
        free(p);
}

Test(hashmap, done_free) {
        Hashmap m = HASHMAP_INIT;

        /* Empty, never allocated. */
        n_freed = 0;
        hashmap_done_free(&m, count_free);
        cr_expect_eq(n_freed, 0);

        for (uint64_t k = 1; k <= 1024; k++) {
                int *p = malloc(sizeof *p);
                cr_assert_not_null(p);
                cr_assert_eq(hashmap_put(&m, k, p), 0);
        }
        cr_assert_eq(hashmap_put(&m, 2000, NULL), 0); /* a NULL value is not passed on */
        free(hashmap_remove(&m, 17));
        hashmap_done_free(&m, count_free);
        cr_expect_eq(n_freed, 1023);
        cr_expect_eq(m.n_items, 0);
        cr_expect_eq(m.n_slots, 0);
        cr_expect_null(m.slots);

        /* Reusable afterwards; NULL free_value frees only the slots. */
        cr_assert_eq(hashmap_put(&m, 1, &n_freed), 0);
        hashmap_done_free(&m, NULL);
        cr_expect_eq(m.n_items, 0);

        /* The standard free() fits the callback's type. */
        cr_assert_eq(hashmap_put(&m, 1, malloc(8)), 0);
        hashmap_done_free(&m, free);
}

/* ---- integer parsers ---- */

typedef struct ParseCase {
        const char *s;
        size_t len; /* 0: strlen(s) */
        int r;
        uint64_t v;
        const char *reason;
} ParseCase;

#define LEADING "has a leading zero (write it without, as in 10)"

static const ParseCase u64_cases[] = {
        { "0",                       0, 0,       0,          NULL },
        { "1",                       0, 0,       1,          NULL },
        { "1023",                    0, 0,       1023,       NULL },
        { "1024",                    0, 0,       1024,       NULL },
        { "18446744073709551615",    0, 0,       UINT64_MAX, NULL },
        { "18446744073709551616",    0, -ERANGE, 0,          "is too large (the largest is 18446744073709551615)" },
        { "99999999999999999999999", 0, -ERANGE, 0,          "is too large (the largest is 18446744073709551615)" },
        { "",                        0, -EINVAL, 0,          "is empty" },
        { "-1",                      0, -EINVAL, 0,          "is negative" },
        { "-0",                      0, -EINVAL, 0,          "is negative" },
        { "+1",                      0, -EINVAL, 0,          "is not a decimal number" },
        { " 1",                      0, -EINVAL, 0,          "is not a decimal number" },
        { "1 ",                      0, -EINVAL, 0,          "is not a decimal number" },
        { "x1",                      0, -EINVAL, 0,          "is not a decimal number" },
        { "12x",                     0, -EINVAL, 0,          "is not a decimal number" },
        { "0x10",                    0, -EINVAL, 0,          "is not a decimal number" },
        { "1e3",                     0, -EINVAL, 0,          "is not a decimal number" },
        { "1.5",                     0, -EINVAL, 0,          "is not a whole number" },
        { "1.",                      0, -EINVAL, 0,          "is not a decimal number" },
        { ".5",                      0, -EINVAL, 0,          "is not a decimal number" },
        { "1.2.3",                   0, -EINVAL, 0,          "is not a decimal number" },
        { "00",                      0, -EINVAL, 0,          LEADING },
        { "007",                     0, -EINVAL, 0,          LEADING },
        { "010",                     0, -EINVAL, 0,          LEADING },
        { "018446744073709551616",   0, -EINVAL, 0,          LEADING },
        /* slices */
        { "123456",                  3, 0,       123,        NULL },
        { "20/10s",                  2, 0,       20,         NULL },
        { "0/1s",                    1, 0,       0,          NULL },
        { "1\0" "2",                 3, -EINVAL, 0,          "is not a decimal number" },
};

Test(parse, u64) {
        for (size_t i = 0; i < ELEMENTSOF(u64_cases); i++) {
                const ParseCase *c = &u64_cases[i];
                size_t len = c->len ?: strlen(c->s);
                const char *reason = NULL;
                uint64_t v = 777;
                int r;

                r = parse_u64_slice(c->s, len, &v, &reason);
                cr_expect_eq(r, c->r, "parse_u64_slice(\"%.*s\") = %d, expected %d", (int) len, c->s, r, c->r);
                if (c->r == 0) {
                        cr_expect_eq(v, c->v, "\"%s\": %" PRIu64, c->s, v);
                        cr_expect_null(reason, "\"%s\": a reason on success", c->s);
                } else {
                        cr_expect_eq(v, 777, "\"%s\": *ret written on failure", c->s);
                        cr_expect_str_eq(reason ?: "(null)", c->reason, "\"%s\": \"%s\"", c->s, reason);
                }
                if (c->len == 0) { /* the NUL-terminated form says the same */
                        uint64_t w = 777;
                        cr_expect_eq(parse_u64(c->s, &w, NULL), c->r, "parse_u64(\"%s\")", c->s);
                        cr_expect_eq(w, c->r == 0 ? c->v : 777);
                }
        }
        cr_expect_eq(parse_u64(NULL, &(uint64_t) { 0 }, NULL), -EINVAL);
        cr_expect_eq(parse_u64_slice(NULL, 0, &(uint64_t) { 0 }, NULL), -EINVAL);
}

Test(parse, u32) {
        const char *reason = NULL;
        uint32_t v = 777;

        cr_expect_eq(parse_u32("0", &v, NULL), 0);
        cr_expect_eq(v, 0);
        cr_expect_eq(parse_u32("4294967295", &v, NULL), 0);
        cr_expect_eq(v, UINT32_MAX);
        v = 777;
        cr_expect_eq(parse_u32("4294967296", &v, &reason), -ERANGE);
        cr_expect_str_eq(reason, "is too large (the largest is 4294967295)");
        cr_expect_eq(parse_u32("18446744073709551616", &v, &reason), -ERANGE);
        cr_expect_eq(parse_u32("007", &v, &reason), -EINVAL);
        cr_expect_str_eq(reason, LEADING);
        cr_expect_eq(parse_u32("-1", &v, &reason), -EINVAL);
        cr_expect_str_eq(reason, "is negative");
        cr_expect_eq(v, 777, "*ret written on failure");
        cr_expect_eq(parse_u32_slice("42 43", 2, &v, NULL), 0);
        cr_expect_eq(v, 42);
}

/* ---- the stat parser ---- */

Test(proc, stat_parse_start_time) {
        static const char tail[] = " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 4242 20 21 22\n";
        static const struct {
                const char *comm; /* between the parentheses */
                const char *rest; /* NULL: tail */
                int ret;
                uint64_t v;
        } cases[] = {
                { "bash", NULL, 0, 4242 },
                { "a b c", NULL, 0, 4242 },
                { "x) 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 99", NULL, 0, 4242 },
                { ")", NULL, 0, 4242 },
                { ") (", NULL, 0, 4242 },
                { "((", NULL, 0, 4242 },
                { "", NULL, 0, 4242 },
                { "ok", " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 0", 0, 0 },
                { "ok", " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 18446744073709551615", 0, UINT64_MAX },
                { "ok", " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 18446744073709551616", -EBADMSG, 0 },
                { "ok", " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 -1", -EBADMSG, 0 },
                { "ok", " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 12x", -EBADMSG, 0 },
                { "ok", " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 012", -EBADMSG, 0 },
                { "ok", " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18", -EBADMSG, 0 },
                { "ok", " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 ", -EBADMSG, 0 },
                { "ok", " S 1  2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19", -EBADMSG, 0 },
                { "ok", " S 1 2 3 4 5 6 7 8", -EBADMSG, 0 },
                { "ok", " S", -EBADMSG, 0 },
                { "ok", "S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19", -EBADMSG, 0 },
                { "ok", "", -EBADMSG, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                ProcStat st = { .start_time = 777 };
                char buf[256];
                int len = snprintf(buf, sizeof(buf), "123 (%s)%s", cases[i].comm, cases[i].rest ?: tail);
                int r;

                r = proc_stat_parse(buf, (size_t) len, PROC_STAT_START_TIME, &st);
                cr_expect_eq(r, cases[i].ret, "case %zu \"%s\": %d", i, buf, r);
                if (r == 0)
                        cr_expect_eq(st.start_time, cases[i].v, "case %zu: %" PRIu64, i, st.start_time);
                else
                        cr_expect_eq(st.start_time, 777, "case %zu: ret written on failure", i);
        }
        ProcStat st;
        cr_expect_eq(proc_stat_parse("no parens at all", 16, PROC_STAT_START_TIME, &st), -EBADMSG);
        cr_expect_eq(proc_stat_parse("1 x) S", 6, PROC_STAT_START_TIME, &st), -EBADMSG, "')' without '('");
        cr_expect_eq(proc_stat_parse("", 0, PROC_STAT_START_TIME, &st), -EBADMSG);
        cr_expect_eq(proc_stat_parse(NULL, 0, PROC_STAT_START_TIME, &st), -EINVAL);
}

/* Field 39, the CPU a thread last ran on: only read (and required) when asked for. */
Test(proc, stat_parse_processor) {
        static const char line[] = "4711 (a) b) R 1 4711 4711 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 98765 "
                                   "10000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n";
        const char *end22 = strstr(line, "98765") + 5;
        ProcStat st = {};

        cr_assert_eq(proc_stat_parse(line, sizeof line - 1, PROC_STAT_PROCESSOR | PROC_STAT_START_TIME, &st), 0);
        cr_expect_eq(st.processor, 3);
        cr_expect_eq(st.start_time, 98765);
        /* A line that ends after field 22 is fine without the processor, refused with it. */
        cr_expect_eq(proc_stat_parse(line, (size_t) (end22 - line), PROC_STAT_START_TIME, &st), 0);
        cr_expect_eq(proc_stat_parse(line, (size_t) (end22 - line), PROC_STAT_PROCESSOR, &st), -EBADMSG);
        cr_expect_eq(proc_stat_parse(line, (size_t) (strstr(line, " 17 ") - line) + 3, PROC_STAT_PROCESSOR, &st), -EBADMSG);
        /* This very thread: a CPU that exists. */
        cr_assert_eq(proc_read_stat(getpid(), getpid(), PROC_STAT_PROCESSOR, &st), 0);
        cr_expect_lt(st.processor, (uint32_t) sysconf(_SC_NPROCESSORS_CONF));
}

/* A line cut anywhere (a short read) is refused, never read as a smaller number. */
Test(proc, stat_parse_truncated) {
        static const char line[] = "4711 (a) b) R 1 4711 4711 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 98765 "
                                   "10000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n";
        const char *end22 = strstr(line, "98765") + 5;
        ProcStat st;

        cr_assert_eq(proc_stat_parse(line, sizeof line - 1, PROC_STAT_START_TIME, &st), 0);
        cr_expect_eq(st.start_time, 98765);
        for (size_t len = 0; len < (size_t) (end22 - line); len++) {
                int r = proc_stat_parse(line, len, PROC_STAT_START_TIME, &st);
                /* Cut inside field 22, the number is shorter but still a number: the one case the
                 * text cannot tell; every shorter cut fails. */
                if (len > (size_t) (end22 - line) - 5)
                        cr_expect(r == 0 && st.start_time < 98765, "cut at %zu: %d", len, r);
                else
                        cr_expect_eq(r, -EBADMSG, "cut at %zu: %d", len, r);
        }
}

Test(proc, stat_parse_fields) {
        static const char ok[] = "7 (kworker/0:1) I 2 0 0 0 -1 69238880 0 0 0 0 0 0 0 0 20 0 1 0 42 0 0\n";
        static const char bad_flags[] = "7 (k) I 2 0 0 0 -1 6923x880 0 0 0 0 0 0 0 0 20 0 1 0 42 0 0\n";
        static const char bad_state[] = "7 (k) IS 2 0 0 0 -1 1 0 0 0 0 0 0 0 0 20 0 1 0 42 0 0\n";
        static const char bad_ppid[] = "7 (k) S 4294967296 0 0 0 -1 1 0 0 0 0 0 0 0 0 20 0 1 0 42 0 0\n";
        const unsigned all = PROC_STAT_COMM | PROC_STAT_STATE | PROC_STAT_PPID | PROC_STAT_FLAGS |
                             PROC_STAT_START_TIME;
        ProcStat st;

        cr_assert_eq(proc_stat_parse(ok, sizeof ok - 1, all, &st), 0);
        cr_expect_str_eq(st.comm, "kworker/0:1");
        cr_expect_eq(st.state, 'I');
        cr_expect_eq(st.ppid, 2);
        cr_expect_eq(st.flags, 69238880);
        cr_expect(st.flags & PROC_PF_KTHREAD, "69238880 has PF_KTHREAD");
        cr_expect_eq(st.start_time, 42);

        /* A bad field fails the line only when it is asked for. */
        cr_expect_eq(proc_stat_parse(bad_flags, sizeof bad_flags - 1, PROC_STAT_START_TIME | PROC_STAT_FLAGS, &st),
                     -EBADMSG);
        cr_expect_eq(proc_stat_parse(bad_flags, sizeof bad_flags - 1, PROC_STAT_START_TIME, &st), 0);
        cr_expect_eq(st.start_time, 42);
        cr_expect_eq(proc_stat_parse(bad_state, sizeof bad_state - 1, PROC_STAT_STATE, &st), -EBADMSG);
        cr_expect_eq(proc_stat_parse(bad_state, sizeof bad_state - 1, PROC_STAT_FLAGS, &st), 0);
        cr_expect_eq(proc_stat_parse(bad_ppid, sizeof bad_ppid - 1, PROC_STAT_PPID, &st), -EBADMSG);
        cr_expect_eq(proc_stat_parse(bad_ppid, sizeof bad_ppid - 1, PROC_STAT_STATE, &st), 0);
        cr_expect_eq(st.state, 'S');
        /* Fields not asked for are zero, not garbage. */
        cr_expect_eq(st.start_time, 0);
        cr_expect_str_eq(st.comm, "");
}

Test(proc, stat_parse_comm) {
        static const struct {
                const char *line;
                const char *comm;
        } cases[] = {
                { "1 (systemd) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 3 0 0", "systemd" },
                { "1 (a b) S 0 1 1 0 -1 1 0 0 0 0 0 0 0 0 20 0 1 0 3 0 0", "a b" },
                { "1 (x) S 1 2 (y) S 0 1 1 0 -1 1 0 0 0 0 0 0 0 0 20 0 1 0 3 0 0", "x) S 1 2 (y" },
                { "1 ()) S 0 1 1 0 -1 1 0 0 0 0 0 0 0 0 20 0 1 0 3 0 0", ")" },
                { "1 () S 0 1 1 0 -1 1 0 0 0 0 0 0 0 0 20 0 1 0 3 0 0", "" },
                { "1 (0123456789012345678901234567890123456789012345678901234567890123456789) S 0 1 1 0 -1 1 0 0 "
                  "0 0 0 0 0 0 20 0 1 0 3 0 0",
                  "0123456789012345678901234567890123456789012345678901234567890123" }, /* cut at 64 */
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                ProcStat st;

                cr_assert_eq(proc_stat_parse(cases[i].line, strlen(cases[i].line), PROC_STAT_COMM | PROC_STAT_STATE,
                                             &st), 0, "case %zu", i);
                cr_expect_str_eq(st.comm, cases[i].comm, "case %zu", i);
                cr_expect_eq(st.state, 'S', "case %zu", i);
        }
}

/* ---- the reader ---- */

static char tmpdir[] = "/tmp/edfd-test-basic-XXXXXX";

static int tmp_file(const char *name, const char *text, size_t len) {
        char path[128];
        int fd;

        snprintf(path, sizeof path, "%s/%s", tmpdir, name);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        cr_assert_geq(fd, 0);
        cr_assert_eq(write(fd, text, len), (ssize_t) len);
        close(fd);
        return 0;
}

Test(proc, read_file) {
        char buf[8], path[128];
        int dir;
        size_t len = 99;

        cr_assert_not_null(mkdtemp(tmpdir));
        dir = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        cr_assert_geq(dir, 0);
        tmp_file("seven", "1234567", 7);
        tmp_file("eight", "12345678", 8);
        tmp_file("lines", "ab\ncd\n", 6);
        tmp_file("empty", "", 0);

        cr_expect_eq(proc_read_file(dir, "seven", 0, buf, sizeof buf, &len), 0);
        cr_expect_eq(len, 7);
        cr_expect_str_eq(buf, "1234567");
        len = 99;
        cr_expect_eq(proc_read_file(dir, "eight", 0, buf, sizeof buf, &len), -EFBIG);
        cr_expect_eq(len, 99, "length written on failure");
        cr_expect_eq(proc_read_file(dir, "eight", PROC_READ_TRUNCATE, buf, sizeof buf, &len), 0);
        cr_expect_str_eq(buf, "1234567");
        cr_expect_eq(proc_read_file(dir, "lines", PROC_READ_LINE, buf, sizeof buf, &len), 0);
        cr_expect_str_eq(buf, "ab\ncd\n", "one read returns both lines: they are kept");
        cr_expect_eq(proc_read_file(dir, "empty", 0, buf, sizeof buf, &len), 0);
        cr_expect_eq(len, 0);
        cr_expect_str_eq(buf, "");
        cr_expect_eq(proc_read_file(dir, "missing", 0, buf, sizeof buf, &len), -ENOENT);
        cr_expect_eq(proc_read_file(dir, "seven", 0, buf, 0, &len), -EINVAL);
        cr_expect_eq(proc_read_file(dir, "seven", 0, buf, 1, &len), -EFBIG);
        snprintf(path, sizeof path, "%s/seven", tmpdir);
        cr_expect_eq(proc_read_file(AT_FDCWD, path, 0, buf, sizeof buf, NULL), 0);
        cr_expect_str_eq(buf, "1234567");

        for (const char *n = "seven\0eight\0lines\0empty\0"; *n; n += strlen(n) + 1)
                unlinkat(dir, n, 0);
        close(dir);
        rmdir(tmpdir);
}

Test(proc, read_stat_self) {
        char buf[4096];
        size_t len;
        ProcStat st, st2;
        const char *p;
        unsigned long long v = 0;

        cr_assert_eq(proc_read_stat(getpid(), getpid(), PROC_STAT_STATE | PROC_STAT_PPID | PROC_STAT_START_TIME |
                                    PROC_STAT_COMM, &st), 0);
        cr_expect_eq(st.state, 'R');
        cr_expect_eq(st.ppid, (uint32_t) getppid());
        cr_expect_str_eq(st.comm, "test-basic");
        /* Independently: field 22 counted from the end of the last ')'. */
        cr_assert_eq(proc_read_file(AT_FDCWD, "/proc/self/stat", 0, buf, sizeof buf, &len), 0);
        p = strrchr(buf, ')');
        cr_assert_not_null(p);
        cr_assert_eq(sscanf(p + 2, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
                                   "%*s %*s %*s %llu", &v), 1);
        cr_expect_eq(st.start_time, v);
        cr_assert_eq(proc_stat_parse(buf, len, PROC_STAT_START_TIME, &st2), 0);
        cr_expect_eq(st2.start_time, v);

        cr_expect_eq(proc_read_stat(getpid(), INT32_MAX, PROC_STAT_START_TIME, &st), -ENOENT);
        cr_expect_eq(proc_read_stat(INT32_MAX, INT32_MAX, PROC_STAT_START_TIME, &st), -ENOENT);
        cr_expect_eq(proc_read_stat(0, 1, PROC_STAT_START_TIME, &st), -EINVAL);
        cr_expect_eq(proc_read_stat(1, -1, PROC_STAT_START_TIME, &st), -EINVAL);
}

/* ---- the walker ---- */

typedef struct Seen {
        pid_t want_tid;
        unsigned n, self, mine, other_pid;
        int stop_after; /* > 0: return -ECANCELED at that call */
} Seen;

static int count_entry(const ProcEntry *e, void *userdata) {
        Seen *s = userdata;
        ProcStat st;

        s->n++;
        if (e->pid == getpid()) {
                s->mine++;
                if (e->tid == s->want_tid) {
                        cr_expect_eq(proc_entry_stat(e, PROC_STAT_PPID, &st), 0);
                        cr_expect_eq(st.ppid, (uint32_t) getppid());
                        s->self++;
                }
        } else if (e->tid == s->want_tid)
                s->other_pid++;
        if (s->stop_after > 0 && s->n == (unsigned) s->stop_after)
                return -ECANCELED;
        return 1; /* anything not negative goes on */
}

static void *sleep_thread(void *arg) {
        int *fds = arg;
        pid_t tid = (pid_t) syscall(SYS_gettid);
        char c;

        cr_assert_eq(write(fds[1], &tid, sizeof tid), (ssize_t) sizeof tid);
        (void) read(fds[0], &c, 1);
        return NULL;
}

Test(proc, walk) {
        int to_thread[2], from_thread[2], fds[2];
        pthread_t th;
        pid_t tid;
        Seen s;
        unsigned mine;
        char buf[64];

        cr_assert_eq(pipe2(to_thread, O_CLOEXEC), 0);
        cr_assert_eq(pipe2(from_thread, O_CLOEXEC), 0);
        fds[0] = to_thread[0];
        fds[1] = from_thread[1];
        cr_assert_eq(pthread_create(&th, NULL, sleep_thread, fds), 0);
        cr_assert_eq(read(from_thread[0], &tid, sizeof tid), (ssize_t) sizeof tid);

        s = (Seen) { .want_tid = getpid() };
        cr_expect_eq(proc_walk_processes(count_entry, &s), 0);
        cr_expect_eq(s.self, 1, "this process met once");
        cr_expect_eq(s.mine, 1, "a walk of processes meets no thread");
        cr_expect_gt(s.n, 1);

        s = (Seen) { .want_tid = tid };
        cr_expect_eq(proc_walk_all_threads(count_entry, &s), 0);
        cr_expect_eq(s.self, 1, "the second thread met once");
        cr_expect_geq(s.mine, 2, "both threads of this process (and the runner's, if any)");
        cr_expect_eq(s.other_pid, 0);
        mine = s.mine;

        s = (Seen) { .want_tid = tid };
        cr_expect_eq(proc_walk_threads(getpid(), count_entry, &s), 0);
        cr_expect_eq(s.n, mine, "the same threads as in the walk of all");
        cr_expect_eq(s.self, 1);

        s = (Seen) { .want_tid = tid };
        cr_expect_eq(proc_walk_threads(tid, count_entry, &s), 0, "a thread id has a task directory too");
        cr_expect_eq(proc_walk_threads(INT32_MAX, count_entry, &s), -ENOENT);
        cr_expect_eq(proc_walk_threads(0, count_entry, &s), -EINVAL);

        s = (Seen) { .want_tid = tid, .stop_after = 2 };
        cr_expect_eq(proc_walk_all_threads(count_entry, &s), -ECANCELED);
        cr_expect_eq(s.n, 2, "the walk stops at a negative return");

        /* proc_entry_read() of a file beside stat. */
        s = (Seen) { .want_tid = tid };
        ProcEntry e = { .pid = getpid(), .tid = getpid(), .dir_fd = AT_FDCWD, .name = "/proc/self" };
        cr_expect_eq(proc_entry_read(&e, "comm", PROC_READ_LINE, buf, sizeof buf, NULL), 0);
        cr_expect_str_eq(buf, "test-basic\n");

        cr_assert_eq(write(to_thread[1], "x", 1), 1);
        pthread_join(th, NULL);
        close(to_thread[0]);
        close(to_thread[1]);
        close(from_thread[0]);
        close(from_thread[1]);
}

/* --- CPU lists --- */

Test(cpulist, parse_and_format_round_trip) {
        static const struct {
                const char *in, *out;
                unsigned count;
        } ok[] = {
                { "", "", 0 },          { "\n", "", 0 },          { "0", "0", 1 },
                { "1\n", "1", 1 },      { "0-1", "0-1", 2 },      { "2-3,5", "2-3,5", 3 },
                { "5,2-3", "2-3,5", 3 }, { "1,2,3", "1-3", 3 },   { "0-1023", "0-1023", 1024 },
                { "1023", "1023", 1 },  { "3-3", "3", 1 },        { "0,2,4", "0,2,4", 3 },
        };
        for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
                CpuMask m;
                char buf[CPU_LIST_MAX];

                cr_assert_eq(cpu_mask_parse(ok[i].in, strlen(ok[i].in), &m, NULL), 0, "%s", ok[i].in);
                cr_assert_eq(cpu_mask_count(&m), ok[i].count, "%s", ok[i].in);
                cr_assert_str_eq(cpu_mask_format(&m, buf, sizeof buf), ok[i].out);
        }
}

Test(cpulist, refusals_say_why) {
        static const struct {
                const char *in, *reason;
                int r;
        } bad[] = {
                { "a", "is not a CPU list", -EINVAL },    { "1,", "is not a CPU list", -EINVAL },
                { ",1", "is not a CPU list", -EINVAL },   { "1,,2", "is not a CPU list", -EINVAL },
                { "-1", "is not a CPU list", -EINVAL },   { "1-", "is not a CPU list", -EINVAL },
                { "01", "is not a CPU list", -EINVAL },   { " 1", "is not a CPU list", -EINVAL },
                { "1-2-3", "is not a CPU list", -EINVAL }, { "3-1", "has a reversed range", -EINVAL },
                { "1024", "names a CPU above 1023", -ERANGE },
                { "0-99999999999", "names a CPU above 1023", -ERANGE },
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                CpuMask m = { .w = { 42 } };
                const char *reason = NULL;

                cr_assert_eq(cpu_mask_parse(bad[i].in, strlen(bad[i].in), &m, &reason), bad[i].r, "%s", bad[i].in);
                cr_assert(reason && strstr(reason, bad[i].reason), "%s: %s", bad[i].in, reason ?: "(none)");
                cr_assert_eq(m.w[0], 42, "written on failure: %s", bad[i].in);
        }
}

Test(cpulist, set_operations) {
        CpuMask a, b, c;
        unsigned cpu = 0;
        char buf[16];

        cr_assert_eq(cpu_mask_parse("1-3", 3, &a, NULL), 0);
        cr_assert_eq(cpu_mask_parse("3,70", 4, &b, NULL), 0);
        cr_assert(cpu_mask_overlap(&a, &b, &cpu));
        cr_assert_eq(cpu, 3);
        cr_assert_not(cpu_mask_subset(&b, &a, &cpu));
        cr_assert_eq(cpu, 70);
        c = a;
        cpu_mask_andnot(&c, &b);
        cr_assert_str_eq(cpu_mask_format(&c, buf, sizeof buf), "1-2");
        cr_assert_not(cpu_mask_overlap(&c, &b, NULL));
        cr_assert(cpu_mask_subset(&c, &a, NULL));
        cpu_mask_or(&c, &b);
        cr_assert_str_eq(cpu_mask_format(&c, buf, sizeof buf), "1-3,70");
        cr_assert_eq(cpu_mask_first(&c), 1);
        cr_assert_null(cpu_mask_format(&c, buf, 4), "a list that does not fit is refused");
        c = (CpuMask) {};
        cr_assert(cpu_mask_empty(&c));
        cr_assert_eq(cpu_mask_first(&c), -1);
}
