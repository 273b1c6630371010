/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The sentences edfd answers an EBUSY with: the strangers (largest first, a few named, "and N
 * more"), and the bandwidth of deadline threads that ended. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/bandwidth.h"
#include "core/holders.h"

static Holder holder(uint32_t pid, uint32_t tid, uint64_t bw, const char *comm) {
        Holder h = { .pid = pid, .tid = tid, .bw = bw };

        strncpy(h.comm, comm, HOLDER_COMM_MAX);
        return h;
}

static void add(Holders *hs, uint32_t pid, uint32_t tid, uint64_t bw, const char *comm) {
        Holder h = holder(pid, tid, bw, comm);

        holders_add(hs, &h);
}

Test(holders, none) {
        Holders hs = {};
        char buf[256] = "x";

        cr_assert_str_eq(holders_format(&hs, buf, sizeof buf), "");
}

Test(holders, one) {
        Holders hs = {};
        char buf[256];

        add(&hs, 1234, 1234, BW_UNIT / 2, "chrt");
        cr_assert_str_eq(holders_format(&hs, buf, sizeof buf), "pid 1234 (chrt) holds 50% outside edfd");
        cr_assert_eq(hs.n, 1);
        cr_assert_eq(hs.total_bw, BW_UNIT / 2);
}

Test(holders, a_thread_of_a_process) {
        Holders hs = {};
        char buf[256];

        add(&hs, 10, 12, BW_UNIT / 10, "worker 2");
        cr_assert_str_eq(holders_format(&hs, buf, sizeof buf), "thread 12 of pid 10 (worker 2) holds 10% outside edfd");
}

/* Added smallest first: named largest first, the rest summed. */
Test(holders, several_largest_first_and_more) {
        Holders hs = {};
        char buf[512];

        add(&hs, 1, 1, BW_UNIT / 100, "a");
        add(&hs, 2, 2, BW_UNIT / 20, "b");
        add(&hs, 3, 3, BW_UNIT / 10, "c");
        add(&hs, 4, 4, BW_UNIT / 5, "d");
        cr_assert_str_eq(holders_format(&hs, buf, sizeof buf),
                         "pid 4 (d) holds 20%, pid 3 (c) holds 10%, pid 2 (b) holds 5% and 1 more holds 1% "
                         "outside edfd");
        add(&hs, 5, 5, BW_UNIT / 50, "e");
        cr_assert_str_eq(holders_format(&hs, buf, sizeof buf),
                         "pid 4 (d) holds 20%, pid 3 (c) holds 10%, pid 2 (b) holds 5% and 2 more hold 3% "
                         "outside edfd");
        cr_assert_eq(hs.n, 5);
        cr_assert_eq(hs.n_top, HOLDERS_MAX);
}

/* Equal bandwidths: the lower tid first, whatever the order met. */
Test(holders, ties_by_tid) {
        Holders hs = {};
        char buf[256];

        add(&hs, 9, 9, 1024, "z");
        add(&hs, 7, 7, 1024, "y");
        cr_assert_str_eq(holders_format(&hs, buf, sizeof buf), "pid 7 (y) holds 0.1%, pid 9 (z) holds 0.1% outside edfd");
}

Test(holders, saturates_and_cuts) {
        Holders hs = {};
        char buf[16];

        add(&hs, 1, 1, UINT64_MAX, "big");
        add(&hs, 2, 2, UINT64_MAX, "big");
        cr_assert_eq(hs.total_bw, UINT64_MAX);
        holders_format(&hs, buf, sizeof buf);
        cr_assert_eq(strlen(buf), sizeof buf - 1);
        cr_assert_str_eq(buf, "pid 1 (big) hol");
}

Test(holders, ended) {
        char buf[256];

        cr_assert_str_eq(holders_format_ended(0, buf, sizeof buf), "not held by any thread edfd can see; see docs/design.md");
        cr_assert_str_eq(holders_format_ended(1, buf, sizeof buf),
                         "most likely still held for deadline threads that ended (the kernel gives it back at their "
                         "0-lag time): expected back within 1 ms");
        cr_assert(strstr(holders_format_ended(850000000, buf, sizeof buf), "within 850 ms"));
        cr_assert(strstr(holders_format_ended(850000001, buf, sizeof buf), "within 851 ms"));
}
