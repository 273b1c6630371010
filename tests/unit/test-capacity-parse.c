/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* capacity_parse_total_bw(): the root domain's dl_bw->total_bw in the text of
 * /sys/kernel/debug/sched/debug, table-driven. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "capacity.h"

/* Two CPUs of one root domain, as kernel 6.18 prints them (abridged). */
#define CPU(n, total)                                                                                        \
        "cpu#" #n "\n"                                                                                       \
        "  .nr_running                    : 1\n"                                                             \
        "dl_rq[" #n "]:\n"                                                                                   \
        "  .dl_nr_running                 : 0\n"                                                             \
        "  .dl_bw->bw                     : 996147\n"                                                        \
        "  .dl_bw->total_bw               : " total "\n"

typedef struct Case {
        const char *name, *text;
        int r;
        uint64_t value;
} Case;

static const Case cases[] = {
        { "two CPUs, one root domain", "Sched Debug Version: v0.11\n" CPU(0, "104856") CPU(1, "104856"), 0, 104856 },
        { "one CPU", CPU(0, "52428"), 0, 52428 },
        { "zero", CPU(0, "0") CPU(1, "0"), 0, 0 },
        { "UINT64_MAX", CPU(0, "18446744073709551615"), 0, UINT64_MAX },
        { "trailing blanks and CR", "  .dl_bw->total_bw : 7 \r\n", 0, 7 },
        { "no newline at the end", "  .dl_bw->total_bw : 9", 0, 9 },
        { "two root domains", CPU(0, "52428") CPU(1, "73400"), -EDOM, 0 },
        { "none", "Sched Debug Version: v0.11\n  .dl_bw->bw : 996147\n", -ENODATA, 0 },
        { "empty", "", -ENODATA, 0 },
        { "overflow", CPU(0, "18446744073709551616"), -EBADMSG, 0 },
        { "negative: the kernel's count wrapped", CPU(0, "-209716") CPU(1, "-209716"), -ERANGE, 0 },
        { "minus one", CPU(0, "-1"), -ERANGE, 0 },
        { "minus zero is zero", CPU(0, "-0"), 0, 0 },
        { "a minus alone", CPU(0, "-"), -EBADMSG, 0 },
        { "two minuses", CPU(0, "--5"), -EBADMSG, 0 },
        { "minus and more", CPU(0, "-5x"), -EBADMSG, 0 },
        { "not a number", CPU(0, "lots"), -EBADMSG, 0 },
        { "a number and more", CPU(0, "12x"), -EBADMSG, 0 },
        { "no value", "  .dl_bw->total_bw               :\n", -EBADMSG, 0 },
        { "no colon", "  .dl_bw->total_bw               12\n", -EBADMSG, 0 },
        { "a longer key is another key", "  .dl_bw->total_bw_x : 12\n", -ENODATA, 0 },
        { "a longer key beside the key", "  .dl_bw->total_bw_x : 12\n  .dl_bw->total_bw : 3\n", 0, 3 },
};

Test(capacity_parse, table) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                const Case *c = &cases[i];
                uint64_t v = 12345;
                int r = capacity_parse_total_bw(c->text, strlen(c->text), &v);

                cr_expect_eq(r, c->r, "%s: returned %d, expected %d", c->name, r, c->r);
                if (c->r == 0)
                        cr_expect_eq(v, c->value, "%s: %llu, expected %llu", c->name, (unsigned long long) v,
                                     (unsigned long long) c->value);
                else
                        cr_expect_eq(v, 12345, "%s: *ret written on failure", c->name);
        }
}

/* The length is honoured: a value cut off by len is not read past it. */
Test(capacity_parse, length_is_the_end) {
        static const char text[] = "  .dl_bw->total_bw : 1234";
        uint64_t v = 0;

        cr_expect_eq(capacity_parse_total_bw(text, strlen(text) - 2, &v), 0);
        cr_expect_eq(v, 12);
        cr_expect_eq(capacity_parse_total_bw(text, 5, &v), -ENODATA);
}

/* capacity_parse_dl_bw(): dl_bw->bw, the share deadline tasks may hold per CPU; -1 while the
 * kernel's admission is off. */
Test(capacity_parse, dl_bw) {
        static const struct {
                const char *name, *text;
                int r;
                int64_t value;
        } c[] = {
                { "two CPUs", CPU(0, "104856") CPU(1, "104856"), 0, 996147 },
                { "admission off", "  .dl_bw->bw : -1\n  .dl_bw->total_bw : 0\n", 0, -1 },
                { "minus two", "  .dl_bw->bw : -2\n", -EBADMSG, 0 },
                { "above INT64_MAX", "  .dl_bw->bw : 9223372036854775808\n", -EBADMSG, 0 },
                { "two root domains", "  .dl_bw->bw : 996147\n  .dl_bw->bw : 524288\n", -EDOM, 0 },
                { "only total_bw", "  .dl_bw->total_bw : 5\n", -ENODATA, 0 },
                { "a longer key", "  .dl_bw->bwx : 5\n", -ENODATA, 0 },
        };

        for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
                int64_t v = 12345;
                int r = capacity_parse_dl_bw(c[i].text, strlen(c[i].text), &v);

                cr_expect_eq(r, c[i].r, "%s: returned %d, expected %d", c[i].name, r, c[i].r);
                cr_expect_eq(v, c[i].r == 0 ? c[i].value : 12345, "%s: %lld", c[i].name, (long long) v);
        }
}
