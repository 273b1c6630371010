/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* core/calibration.h: the file's text both ways, every refusal, staleness, quantiles and the
 * budget rule with its overflow checks. */

#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/calibration.h"
#include "core/duration.h"

static Calibration sample(void) {
        Calibration c = { .hz = 250, .measured = 1796605687, .period = 10000000, .jobs = 840, .overhead = 98877,
                          .p50 = 30065, .p99 = 50345, .max = 98877 };
        snprintf(c.machine.kernel, sizeof c.machine.kernel, "6.18.44-fc-v1300 #1 SMP PREEMPT_DYNAMIC @0");
        snprintf(c.machine.cpu_model, sizeof c.machine.cpu_model, "AMD EPYC");
        c.machine.cpus = 2;
        return c;
}

Test(calibration, format_then_parse_gives_it_back) {
        Calibration c = sample(), back;
        char text[CALIBRATION_TEXT_MAX];
        const char *reason = NULL;
        unsigned line = 99;

        cr_assert_gt(calibration_format(&c, text, sizeof text), 0);
        cr_assert_eq(calibration_parse(text, &back, &line, &reason), 0, "%s", reason);
        cr_assert_eq(memcmp(&c, &back, sizeof c), 0);
        /* The kernel's version holds a '#': a value, not a comment. */
        cr_assert_str_eq(back.machine.kernel, "6.18.44-fc-v1300 #1 SMP PREEMPT_DYNAMIC @0");
}

Test(calibration, format_refuses_a_small_buffer) {
        Calibration c = sample();
        char text[64];

        cr_assert_eq(calibration_format(&c, text, sizeof text), -ENOSPC);
}

Test(calibration, blanks_comments_and_crlf_are_read) {
        const char *text = "# a comment\r\n\n  version = 1  \r\nkernel=k 1\ncpu-model =  m\ncpus = 1\nhz = 0\n"
                           "measured = 0\nperiod = 1\njobs = 1\noverhead = 3\np50 = 1\np99 = 2\nmax = 4";
        const char *reason = NULL;
        Calibration c;
        unsigned line;

        cr_assert_eq(calibration_parse(text, &c, &line, &reason), 0, "%s", reason);
        cr_assert_str_eq(c.machine.kernel, "k 1");
        cr_assert_str_eq(c.machine.cpu_model, "m");
        cr_assert_eq(c.overhead, 3);
        cr_assert_eq(c.max, 4);
}

typedef struct Bad {
        const char *replace, *with; /* in sample()'s text */
        unsigned line;              /* expected, 0: the file as a whole */
        const char *words;
} Bad;

static const Bad bad[] = {
        { "version = 1", "version = 2", 5, "version" },
        { "version = 1\n", "", 0, "no version" },
        { "cpus = 2", "cpus = 0", 8, "CPU count" },
        { "cpus = 2", "cpus = 4294967296", 8, "CPU count" },
        { "cpus = 2", "cpus = two", 8, "" },
        { "cpus = 2", "cpus = -2", 8, "" },
        { "cpus = 2", "cpus =", 8, "" },
        { "hz = 250", "hz = 99999999999999999999", 9, "" },
        { "hz = 250", "hertz = 250", 9, "unknown key" },
        { "hz = 250", "hz 250", 9, "key = value" },
        { "hz = 250", "hz = 250\nhz = 250", 10, "repeats" },
        { "measured = 1796605687", "measured = 9223372036854775808", 10, "64" },
        { "kernel = 6.18.44-fc-v1300 #1 SMP PREEMPT_DYNAMIC @0", "kernel =", 6, "empty" },
        { "cpu-model = AMD EPYC",
          "cpu-model = AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
          "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
          7, "longer" },
        { "max = 98877\n", "", 0, "lacks a key" },
        { "period = 10000000", "period = 0", 0, "period" },
        { "jobs = 840", "jobs = 0", 0, "job count" },
        { "p50 = 30065", "p50 = 60000", 0, "out of order" },
        { "max = 98877", "max = 1", 0, "out of order" },
        { "overhead = 98877", "overhead = 50000", 0, "out of order" },
};

Test(calibration, every_bad_file_is_refused_with_its_line_and_reason) {
        Calibration c = sample(), out;
        char text[CALIBRATION_TEXT_MAX], edited[2 * CALIBRATION_TEXT_MAX];

        cr_assert_gt(calibration_format(&c, text, sizeof text), 0);
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                const char *at = strstr(text, bad[i].replace), *reason = NULL;
                unsigned line = 99;

                cr_assert_not_null(at, "case %zu: \"%s\" not in the text", i, bad[i].replace);
                snprintf(edited, sizeof edited, "%.*s%s%s", (int) (at - text), text, bad[i].with,
                         at + strlen(bad[i].replace));
                cr_assert_eq(calibration_parse(edited, &out, &line, &reason), -EINVAL, "case %zu parsed", i);
                cr_assert_eq(line, bad[i].line, "case %zu: line %u, expected %u (%s)", i, line, bad[i].line, reason);
                cr_assert_not_null(reason);
                cr_assert(strstr(reason, bad[i].words), "case %zu: \"%s\" does not say \"%s\"", i, reason, bad[i].words);
        }
        cr_assert_eq(calibration_parse("", &out, &(unsigned) { 0 }, &(const char *) { NULL }), -EINVAL);
}

Test(calibration, stale_names_what_changed) {
        Calibration c = sample();
        MachineId now = c.machine;
        char buf[512];

        cr_assert_null(calibration_stale(&c, &now, buf, sizeof buf));
        snprintf(now.kernel, sizeof now.kernel, "6.1.0-27-amd64 #1 SMP");
        cr_assert_not_null(strstr(calibration_stale(&c, &now, buf, sizeof buf), "kernel \"6.18.44"));
        now = c.machine;
        snprintf(now.cpu_model, sizeof now.cpu_model, "Intel Xeon");
        cr_assert_not_null(strstr(calibration_stale(&c, &now, buf, sizeof buf), "this is \"Intel Xeon\""));
        now = c.machine;
        now.cpus = 4;
        cr_assert_not_null(strstr(calibration_stale(&c, &now, buf, sizeof buf), "2 CPUs online, 4"));
}

Test(calibration, quantiles_by_nearest_rank) {
        uint64_t v[1000];

        for (size_t i = 0; i < 1000; i++)
                v[i] = 1000 - i; /* unsorted on purpose */
        cr_assert_eq(quantile_permille(v, 1000, 500), 500);
        cr_assert_eq(quantile_permille(v, 1000, 990), 990);
        cr_assert_eq(quantile_permille(v, 1000, 999), 999);
        cr_assert_eq(quantile_permille(v, 1000, 1000), 1000);
        cr_assert_eq(quantile_permille(v, 1000, 0), 1);
        cr_assert_eq(quantile_permille(v, 1000, 5000), 1000);
        cr_assert_eq(quantile_permille(v, 0, 500), 0);
        uint64_t three[] = { 7, 3, 5 };
        cr_assert_eq(quantile_permille(three, 3, 999), 7); /* few values: the 99.9th is the largest */
        cr_assert_eq(quantile_permille(three, 3, 500), 5);
}

Test(calibration, budget_is_work_plus_margin_plus_overhead) {
        uint64_t r, ten;

        cr_assert_eq(percent_parse("10%", &ten, &(const char *) { NULL }), 0);
        cr_assert_eq(budget_from_work(1000000, 0, 0, &r), 0);
        cr_assert_eq(r, 1000000);
        cr_assert_eq(budget_from_work(1000000, ten, 0, &r), 0);
        cr_assert_eq(r, 1100000);
        cr_assert_eq(budget_from_work(1000000, ten, 74842, &r), 0);
        cr_assert_eq(r, 1174842); /* the margin scales the work, not the overhead */
        cr_assert_eq(budget_from_work(3, ten, 0, &r), 0);
        cr_assert_eq(r, 4);       /* 0.3 ns rounds up, never away */
        cr_assert_eq(budget_from_work(UINT64_MAX, ten, 0, &r), -ERANGE);
        cr_assert_eq(budget_from_work(UINT64_MAX - 5, 0, 6, &r), -ERANGE);
        cr_assert_eq(budget_from_work(UINT64_MAX - 5, 0, 5, &r), 0);
        cr_assert_eq(r, UINT64_MAX);
}
