/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* edfd on a private bus against the real kernel: admission applies real SCHED_DEADLINE parameters,
 * every refusal changes nothing (neither the books nor the kernel), release gives the kernel its
 * bandwidth back, groups and reloads follow their rules. The tree is test-data/basic.yaml: "test"
 * (30%) with "test/a" (10%, the default group) and "test/b" (10%, bound to a cgroup). Each test
 * takes at most a few percent of one CPU of deadline bandwidth. */

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "shared/protocol.h"

#define MS HARNESS_MSEC
#define P100 (100 * MS)

TestSuite(daemon, .fini = harness_fini, .timeout = 120);

static const HarnessGroup *group_or_fail(const HarnessGroup *g, size_t n, const char *path) {
        const HarnessGroup *x = harness_find_group(g, n, path);

        cr_assert(x, "ListGroups has no group %s", path);
        return x;
}

Test(daemon, admit_applies_parameters) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessChild *c;
        HarnessReservation *l;
        HarnessGroup *g;
        const HarnessReservation *x;
        HarnessSignal sig;
        size_t n, ng;
        uint64_t id, id2, id3;
        int r;

        cr_assert_eq(harness_spawn_child(h, 2, false, &c), 0);

        r = harness_admit(h, &e, c->pid, 0, "test/a", 2 * MS, 50 * MS, P100, 0, &id);
        assert_bus_ok(r, &e, "Admit(child, main thread, test/a, 2ms/50ms/100ms)");
        harness_assert_dl(c->pid, 2 * MS, 50 * MS, P100, 0);
        harness_assert_other(c->tids[1]); /* only the thread asked for */

        cr_assert_eq(harness_list_reservations(h, &l, &n), 0);
        cr_assert_eq(n, 1, "ListReservations has %zu entries, expected 1", n);
        x = harness_find_reservation(l, n, id);
        cr_assert(x, "the id Admit returned (%" PRIu64 ") is not in ListReservations", id);
        cr_assert_eq(x->pid, (uint32_t) c->pid);
        cr_assert_eq(x->tid, (uint32_t) c->pid, "tid 0 must mean the main thread");
        cr_assert_str_eq(x->group, "test/a");
        cr_assert_eq(x->runtime, 2 * MS);
        cr_assert_eq(x->deadline, 50 * MS);
        cr_assert_eq(x->period, P100);
        cr_assert_eq(x->bandwidth, harness_bw(2 * MS, P100), "bandwidth %" PRIu64 ", kernel's to_ratio gives %" PRIu64,
                     x->bandwidth, harness_bw(2 * MS, P100));
        cr_assert_eq(x->flags, 0);
        cr_assert_eq(x->uid, 0, "the caller is root");
        harness_reservations_free(l, n);

        cr_assert_eq(harness_list_groups(h, &g, &ng), 0);
        cr_assert_eq(group_or_fail(g, ng, "test/a")->allocated, harness_bw(2 * MS, P100));
        cr_assert_eq(group_or_fail(g, ng, "test/a")->reservations, 1);
        cr_assert_eq(group_or_fail(g, ng, "test/b")->allocated, 0);
        harness_groups_free(g, ng);

        cr_assert_eq(harness_wait_signal(h, "ReservationAdded", id, NULL, &sig), 0, "no ReservationAdded for %" PRIu64, id);
        cr_assert_str_eq(sig.reason, "requested");
        cr_assert_eq(sig.pid, (uint32_t) c->pid);
        cr_assert_eq(sig.tid, (uint32_t) c->pid);
        cr_assert_str_eq(sig.group, "test/a");

        /* The second thread: empty group = default-group, deadline 0 = period, reclaim + overrun. */
        r = harness_admit(h, &e, c->pid, c->tids[1], "", 1 * MS, 0, P100, EDFD_ADMIT_RECLAIM | EDFD_ADMIT_OVERRUN_SIGNAL,
                          &id2);
        assert_bus_ok(r, &e, "Admit(child, second thread, default group, 1ms/0/100ms, reclaim|overrun)");
        cr_assert_neq(id2, id, "two reservations got the same id");
        harness_assert_dl(c->tids[1], 1 * MS, P100, P100, SCHED_FLAG_RECLAIM | SCHED_FLAG_DL_OVERRUN);
        harness_assert_dl(c->pid, 2 * MS, 50 * MS, P100, 0);

        cr_assert_eq(harness_list_reservations(h, &l, &n), 0);
        x = harness_find_reservation(l, n, id2);
        cr_assert(x, "id %" PRIu64 " not listed", id2);
        cr_assert_str_eq(x->group, "test/a", "an empty group must mean default-group test/a");
        cr_assert_eq(x->tid, (uint32_t) c->tids[1]);
        cr_assert_eq(x->deadline, P100, "deadline 0 must mean the period");
        cr_assert_eq(x->flags, EDFD_ADMIT_RECLAIM | EDFD_ADMIT_OVERRUN_SIGNAL);
        harness_reservations_free(l, n);

        /* The smallest runtime the kernel takes is admitted too. */
        HarnessChild *c2;
        cr_assert_eq(harness_spawn_child(h, 1, false, &c2), 0);
        r = harness_admit(h, &e, c2->pid, c2->pid, "test/b", 1024, 0, P100, 0, &id3);
        assert_bus_ok(r, &e, "Admit(runtime 1024ns, the kernel's minimum)");
        harness_assert_dl(c2->pid, 1024, P100, P100, 0);

        harness_stop(h);
}

Test(daemon, admitted_thread_can_fork) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessChild *c;
        uint64_t id;
        int r;

        /* A spinning child: admitted, it keeps running (and may be throttled), never breaks. */
        cr_assert_eq(harness_spawn_child(h, 1, true, &c), 0);
        r = harness_admit(h, &e, c->pid, 0, "test/a", 2 * MS, 0, P100, 0, &id);
        assert_bus_ok(r, &e, "Admit(spinning child)");
        harness_assert_dl(c->pid, 2 * MS, P100, P100, 0);
        cr_assert_eq(kill(c->pid, 0), 0, "the admitted child died");
        harness_stop(h);
}

Test(daemon, over_budget_changes_nothing) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessChild *c, *c2;
        HarnessBooks before;
        uint64_t id;
        int r;

        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        cr_assert_eq(harness_spawn_child(h, 1, false, &c2), 0);

        before = harness_books_take(h);
        r = harness_admit(h, &e, c->pid, 0, "test/a", 11 * MS, 0, P100, 0, NULL);
        assert_bus_error(r, &e, "Admit(11% into test/a of 10%)", EDFD_ERROR_OVER_BUDGET);
        cr_assert(strstr(e.message, "test/a"), "the refusal does not name the group: %s", e.message);
        cr_assert(strstr(e.message, "11%") || strstr(e.message, "11.0%") || strstr(e.message, "11000000"),
                  "the refusal does not carry the request's size (11%%): %s", e.message);
        /* 10% is 104857.6 units, so the group holds 104857: "9.9%" when rounded down for display. */
        cr_assert(strstr(e.message, "10%") || strstr(e.message, "10.0%") || strstr(e.message, "9.9%"),
                  "the refusal does not carry the group's free bandwidth (10%%): %s", e.message);
        harness_books_assert_same(h, &before, "an over-budget Admit");
        harness_assert_other(c->pid);
        harness_books_free(&before);

        /* Fits alone, not beside what is there: 2% + 9% > 10%. */
        r = harness_admit(h, &e, c->pid, 0, "test/a", 2 * MS, 0, P100, 0, &id);
        assert_bus_ok(r, &e, "Admit(2% into test/a)");
        before = harness_books_take(h);
        r = harness_admit(h, &e, c2->pid, 0, "test/a", 9 * MS, 0, P100, 0, NULL);
        assert_bus_error(r, &e, "Admit(9% beside 2% into test/a of 10%)", EDFD_ERROR_OVER_BUDGET);
        harness_books_assert_same(h, &before, "a second, over-budget Admit");
        harness_assert_other(c2->pid);
        harness_assert_dl(c->pid, 2 * MS, P100, P100, 0);

        /* Update is admission-checked too, and a refused Update leaves the kernel alone. */
        r = harness_call(h, &e, NULL, "Update", "tttt", id, 11 * MS, UINT64_C(0), P100);
        assert_bus_error(r, &e, "Update(to 11% in test/a)", EDFD_ERROR_OVER_BUDGET);
        harness_books_assert_same(h, &before, "an over-budget Update");
        harness_assert_dl(c->pid, 2 * MS, P100, P100, 0);
        harness_books_free(&before);

        harness_stop(h);
}

enum { PID_CHILD, PID_DEAD, PID_HUGE, PID_SELF };
enum { TID_MAIN, TID_SECOND, TID_OTHER_PROCESS, TID_DEAD };
#define PERIOD_MAX_PLUS_1 UINT64_C(0xfffffffffffffff1)
#define PERIOD_MIN_MINUS_1 UINT64_C(0xfffffffffffffff2)

typedef struct BadAdmit {
        const char *what;
        int pid, tid;
        const char *group;
        uint64_t runtime, deadline, period, flags;
        const char *error, *alt;
} BadAdmit;

static const BadAdmit bad_admits[] = {
        { "runtime 0", PID_CHILD, TID_MAIN, "test/a", 0, 0, P100, 0, EDFD_ERROR_INVALID_PARAMETERS, NULL },
        { "runtime 1", PID_CHILD, TID_MAIN, "test/a", 1, 0, P100, 0, EDFD_ERROR_INVALID_PARAMETERS, NULL },
        { "runtime 1023", PID_CHILD, TID_MAIN, "test/a", 1023, 0, P100, 0, EDFD_ERROR_INVALID_PARAMETERS, NULL },
        { "runtime above deadline", PID_CHILD, TID_MAIN, "test/a", 6 * MS, 5 * MS, P100, 0,
          EDFD_ERROR_INVALID_PARAMETERS, NULL },
        { "deadline above period", PID_CHILD, TID_MAIN, "test/a", 2 * MS, 101 * MS, P100, 0,
          EDFD_ERROR_INVALID_PARAMETERS, NULL },
        { "period 0", PID_CHILD, TID_MAIN, "test/a", 2 * MS, 0, 0, 0, EDFD_ERROR_INVALID_PARAMETERS, NULL },
        { "period 0 with a deadline", PID_CHILD, TID_MAIN, "test/a", 2 * MS, 10 * MS, 0, 0,
          EDFD_ERROR_INVALID_PARAMETERS, NULL },
        { "period above the kernel's maximum", PID_CHILD, TID_MAIN, "test/a", 2 * MS, 0, PERIOD_MAX_PLUS_1, 0,
          EDFD_ERROR_INVALID_PARAMETERS, NULL },
        { "period below the kernel's minimum", PID_CHILD, TID_MAIN, "test/a", 1024, 0, PERIOD_MIN_MINUS_1, 0,
          EDFD_ERROR_INVALID_PARAMETERS, NULL },
        { "bit 63 in the period", PID_CHILD, TID_MAIN, "test/a", 2 * MS, 0, (UINT64_C(1) << 63) | P100, 0,
          EDFD_ERROR_INVALID_PARAMETERS, NULL },
        { "bit 63 in the deadline", PID_CHILD, TID_MAIN, "test/a", 2 * MS, (UINT64_C(1) << 63) | (50 * MS), P100, 0,
          EDFD_ERROR_INVALID_PARAMETERS, NULL },
        { "bit 63 in the runtime", PID_CHILD, TID_MAIN, "test/a", (UINT64_C(1) << 63) | (2 * MS), 0, P100, 0,
          EDFD_ERROR_INVALID_PARAMETERS, NULL },
        { "UINT64_MAX everywhere", PID_CHILD, TID_MAIN, "test/a", UINT64_MAX, UINT64_MAX, UINT64_MAX, 0,
          EDFD_ERROR_INVALID_PARAMETERS, NULL },
        { "unknown flag 8", PID_CHILD, TID_MAIN, "test/a", 2 * MS, 0, P100, 8, EDFD_ERROR_INVALID_PARAMETERS, NULL },
        { "unknown flag bit 63", PID_CHILD, TID_MAIN, "test/a", 2 * MS, 0, P100, UINT64_C(1) << 63,
          EDFD_ERROR_INVALID_PARAMETERS, NULL },
        { "nonexistent pid", PID_DEAD, TID_MAIN, "test/a", 2 * MS, 0, P100, 0, EDFD_ERROR_NO_SUCH_THREAD, NULL },
        { "pid beyond any pid", PID_HUGE, TID_MAIN, "test/a", 2 * MS, 0, P100, 0, EDFD_ERROR_NO_SUCH_THREAD,
          EDFD_ERROR_INVALID_PARAMETERS },
        { "nonexistent tid", PID_CHILD, TID_DEAD, "test/a", 2 * MS, 0, P100, 0, EDFD_ERROR_NO_SUCH_THREAD, NULL },
        { "tid of another process", PID_CHILD, TID_OTHER_PROCESS, "test/a", 2 * MS, 0, P100, 0,
          EDFD_ERROR_NO_SUCH_THREAD, EDFD_ERROR_INVALID_PARAMETERS },
        { "pid 0 (the caller) with another process's tid", PID_SELF, TID_OTHER_PROCESS, "test/a", 2 * MS, 0, P100, 0,
          EDFD_ERROR_NO_SUCH_THREAD, EDFD_ERROR_INVALID_PARAMETERS },
        { "unknown group", PID_CHILD, TID_MAIN, "nope", 2 * MS, 0, P100, 0, EDFD_ERROR_NO_SUCH_GROUP, NULL },
        { "unknown child group", PID_CHILD, TID_MAIN, "test/zz", 2 * MS, 0, P100, 0, EDFD_ERROR_NO_SUCH_GROUP, NULL },
        { "group with an empty component", PID_CHILD, TID_MAIN, "test//a", 2 * MS, 0, P100, 0,
          EDFD_ERROR_NO_SUCH_GROUP, EDFD_ERROR_INVALID_PARAMETERS },
};

Test(daemon, invalid_admits_are_refused_by_name) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessChild *c, *other;
        pid_t dead = harness_dead_pid();
        HarnessBooks before;

        cr_assert_eq(harness_spawn_child(h, 2, false, &c), 0);
        cr_assert_eq(harness_spawn_child(h, 1, false, &other), 0);
        cr_assert_neq(kill(dead, 0), 0, "the dead pid %d is alive again", (int) dead);
        before = harness_books_take(h);

        for (size_t i = 0; i < ELEMENTSOF(bad_admits); i++) {
                const BadAdmit *t = &bad_admits[i];
                uint32_t pid, tid;
                uint64_t period = t->period;
                char what[256];
                int r;

                pid = t->pid == PID_CHILD ? (uint32_t) c->pid
                      : t->pid == PID_DEAD ? (uint32_t) dead
                      : t->pid == PID_HUGE ? UINT32_MAX
                                           : 0;
                tid = t->tid == TID_MAIN ? 0
                      : t->tid == TID_SECOND ? (uint32_t) c->tids[1]
                      : t->tid == TID_OTHER_PROCESS ? (uint32_t) other->pid
                                                    : (uint32_t) dead;
                if (period == PERIOD_MAX_PLUS_1)
                        period = harness_period_max() + 1;
                else if (period == PERIOD_MIN_MINUS_1)
                        period = harness_period_min() - 1;

                snprintf(what, sizeof what, "Admit with %s (pid %" PRIu32 " tid %" PRIu32 " group \"%s\" %" PRIu64
                         "/%" PRIu64 "/%" PRIu64 " flags 0x%" PRIx64 ")", t->what, pid, tid, t->group, t->runtime,
                         t->deadline, period, t->flags);
                r = harness_admit(h, &e, pid, tid, t->group, t->runtime, t->deadline, period, t->flags, NULL);
                harness_assert_error_(r, &e, what, t->error, t->alt);
                harness_books_assert_same(h, &before, what);
                harness_assert_other(c->pid);
                harness_assert_other(c->tids[1]);
                harness_assert_other(other->pid);
        }
        harness_books_free(&before);
        harness_stop(h);
}

Test(daemon, invalid_updates_are_refused_by_name) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessChild *c;
        HarnessBooks before;
        uint64_t id;
        int r;

        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        r = harness_admit(h, &e, c->pid, 0, "test/a", 2 * MS, 0, P100, 0, &id);
        assert_bus_ok(r, &e, "Admit");
        harness_clear_signals(h);
        before = harness_books_take(h);

        static const struct {
                const char *what;
                uint64_t runtime, deadline, period;
        } bad[] = {
                { "runtime 0", 0, 0, P100 },
                { "runtime 1023", 1023, 0, P100 },
                { "runtime above deadline", 6 * MS, 5 * MS, P100 },
                { "deadline above period", 2 * MS, 101 * MS, P100 },
                { "period 0", 2 * MS, 0, 0 },
                { "bit 63 in the period", 2 * MS, 0, (UINT64_C(1) << 63) | P100 },
                { "UINT64_MAX everywhere", UINT64_MAX, UINT64_MAX, UINT64_MAX },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char what[128];

                snprintf(what, sizeof what, "Update with %s", bad[i].what);
                r = harness_call(h, &e, NULL, "Update", "tttt", id, bad[i].runtime, bad[i].deadline, bad[i].period);
                assert_bus_error(r, &e, what, EDFD_ERROR_INVALID_PARAMETERS);
                harness_books_assert_same(h, &before, what);
                harness_assert_dl(c->pid, 2 * MS, P100, P100, 0);
        }
        r = harness_call(h, &e, NULL, "Update", "tttt", id, 2 * MS, UINT64_C(0), harness_period_max() + 1);
        assert_bus_error(r, &e, "Update with a period above the kernel's maximum", EDFD_ERROR_INVALID_PARAMETERS);
        r = harness_call(h, &e, NULL, "Update", "tttt", id + 1000, 2 * MS, UINT64_C(0), P100);
        assert_bus_error(r, &e, "Update of an unknown id", EDFD_ERROR_NO_SUCH_RESERVATION);
        harness_books_assert_same(h, &before, "the refused Updates");
        harness_books_free(&before);

        /* A good one changes kernel and books. */
        r = harness_call(h, &e, NULL, "Update", "tttt", id, 3 * MS, 50 * MS, P100);
        assert_bus_ok(r, &e, "Update(3ms/50ms/100ms)");
        harness_assert_dl(c->pid, 3 * MS, 50 * MS, P100, 0);
        {
                HarnessReservation *l;
                HarnessGroup *g;
                size_t n, ng;
                const HarnessReservation *x;

                cr_assert_eq(harness_list_reservations(h, &l, &n), 0);
                x = harness_find_reservation(l, n, id);
                cr_assert(x, "the reservation is gone after Update");
                cr_assert(x->runtime == 3 * MS && x->deadline == 50 * MS && x->period == P100,
                          "ListReservations shows %" PRIu64 "/%" PRIu64 "/%" PRIu64 " after Update", x->runtime,
                          x->deadline, x->period);
                cr_assert_eq(x->bandwidth, harness_bw(3 * MS, P100));
                harness_reservations_free(l, n);
                cr_assert_eq(harness_list_groups(h, &g, &ng), 0);
                cr_assert_eq(group_or_fail(g, ng, "test/a")->allocated, harness_bw(3 * MS, P100));
                harness_groups_free(g, ng);
        }
        cr_assert_eq(harness_wait_signal(h, "ReservationChanged", id, "requested", NULL), 0,
                     "no ReservationChanged(requested) after Update");
        harness_stop(h);
}

/* Admit, measure that the kernel's headroom went down by what was admitted, release, and check that
 * the thread is SCHED_OTHER again and the kernel got all of it back. */
static void check_release_restores(bool spin) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessChild *c;
        uint64_t before, during, after, id;
        uint64_t bw = harness_bw(2 * MS, P100), tolerance = bw / 4;
        HarnessGroup *g;
        size_t ng;
        int r;

        cr_assert_eq(harness_spawn_child(h, 1, spin, &c), 0);
        cr_assert_eq(harness_probe_headroom(&before), 0);
        cr_assert_gt(before, bw, "the kernel admits less than %" PRIu64 " units: cannot test", bw);

        r = harness_admit(h, &e, c->pid, 0, "test/a", 2 * MS, 0, P100, 0, &id);
        assert_bus_ok(r, &e, "Admit");
        cr_assert_eq(harness_probe_headroom(&during), 0);
        cr_assert(during + bw <= before + tolerance && during + bw + tolerance >= before,
                  "headroom went from %" PRIu64 " to %" PRIu64 " on admitting %" PRIu64 ": the probe or edfd is wrong",
                  before, during, bw);

        r = harness_call(h, &e, NULL, "Release", "t", id);
        assert_bus_ok(r, &e, "Release");
        harness_assert_other(c->pid);
        cr_assert(harness_headroom_settles(before, tolerance, &after),
                  "the kernel's headroom is %" PRIu64 " after Release, was %" PRIu64 " before Admit: %" PRId64
                  " units (of %" PRIu64 " admitted) stuck in the kernel",
                  after, before, (int64_t) (before - after), bw);

        cr_assert_eq(harness_wait_signal(h, "ReservationRemoved", id, "requested", NULL), 0,
                     "no ReservationRemoved(requested) after Release");
        harness_assert_no_reservations(h, "after Release");
        cr_assert_eq(harness_list_groups(h, &g, &ng), 0);
        cr_assert_eq(group_or_fail(g, ng, "test/a")->allocated, 0);
        cr_assert_eq(group_or_fail(g, ng, "test/a")->reservations, 0);
        harness_groups_free(g, ng);
        harness_stop(h);
}

Test(daemon, release_restores_sleeping) {
        check_release_restores(false);
}

Test(daemon, release_restores_running) {
        check_release_restores(true);
}

Test(daemon, release_thread_and_process) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessChild *c;
        uint64_t ids[3];
        uint32_t released;
        HarnessReservation *l;
        size_t n;
        int r;

        cr_assert_eq(harness_spawn_child(h, 3, false, &c), 0);
        for (unsigned i = 0; i < 3; i++) {
                r = harness_admit(h, &e, c->pid, c->tids[i], "test/a", 1 * MS, 0, P100, 0, &ids[i]);
                assert_bus_ok(r, &e, "Admit");
                harness_assert_dl(c->tids[i], 1 * MS, P100, P100, 0);
        }
        harness_clear_signals(h);

        r = harness_call(h, &e, NULL, "ReleaseThread", "u", (uint32_t) c->tids[1]);
        assert_bus_ok(r, &e, "ReleaseThread(second thread)");
        harness_assert_other(c->tids[1]);
        harness_assert_dl(c->tids[0], 1 * MS, P100, P100, 0);
        harness_assert_dl(c->tids[2], 1 * MS, P100, P100, 0);
        cr_assert_eq(harness_wait_signal(h, "ReservationRemoved", ids[1], "requested", NULL), 0);
        cr_assert_eq(harness_list_reservations(h, &l, &n), 0);
        cr_assert_eq(n, 2);
        cr_assert_null(harness_find_reservation(l, n, ids[1]));
        harness_reservations_free(l, n);

        r = harness_call(h, &e, NULL, "ReleaseThread", "u", (uint32_t) c->tids[1]);
        assert_bus_error(r, &e, "ReleaseThread of a thread that holds nothing", EDFD_ERROR_NO_SUCH_RESERVATION);
        r = harness_call(h, &e, NULL, "Release", "t", ids[1]);
        assert_bus_error(r, &e, "Release of a released id", EDFD_ERROR_NO_SUCH_RESERVATION);
        r = harness_call(h, &e, NULL, "Release", "t", UINT64_MAX);
        assert_bus_error(r, &e, "Release(UINT64_MAX)", EDFD_ERROR_NO_SUCH_RESERVATION);
        r = harness_call(h, &e, NULL, "Release", "t", UINT64_C(0));
        assert_bus_error(r, &e, "Release(0)", EDFD_ERROR_NO_SUCH_RESERVATION);

        r = harness_call(h, &e, &reply, "ReleaseProcess", "u", (uint32_t) c->pid);
        assert_bus_ok(r, &e, "ReleaseProcess");
        cr_assert_eq(sd_bus_message_read(reply, "u", &released), 1);
        cr_assert_eq(released, 2, "ReleaseProcess released %" PRIu32 ", the process held 2", released);
        for (unsigned i = 0; i < 3; i++)
                harness_assert_other(c->tids[i]);
        cr_assert_eq(harness_wait_signal(h, "ReservationRemoved", ids[0], "requested", NULL), 0);
        cr_assert_eq(harness_wait_signal(h, "ReservationRemoved", ids[2], "requested", NULL), 0);
        harness_assert_no_reservations(h, "after ReleaseProcess");

        reply = sd_bus_message_unref(reply);
        r = harness_call(h, &e, &reply, "ReleaseProcess", "u", (uint32_t) c->pid);
        if (r >= 0) {
                cr_assert_eq(sd_bus_message_read(reply, "u", &released), 1);
                cr_assert_eq(released, 0, "ReleaseProcess of a process holding nothing released %" PRIu32, released);
        } else
                assert_bus_error(r, &e, "ReleaseProcess of a process holding nothing", EDFD_ERROR_NO_SUCH_RESERVATION);
        harness_stop(h);
}

typedef struct ReplySeen {
        Harness *h;
        uint64_t seq;              /* when the reply was dispatched, in Harness.seq's order; 0: not yet */
        bool error;
} ReplySeen;

static int on_reply_seen(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        ReplySeen *s = userdata;

        s->seq = ++s->h->seq;
        s->error = sd_bus_message_is_method_error(m, NULL);
        return 0;
}

/* The signals a method call causes go out after its reply, however many: ReleaseProcess of 12
 * reservations emits 12 ReservationRemoved (edfd once held back 8 and sent the rest before the
 * reply, without notice). The harness's bus dispatches messages in the order they arrived. */
Test(daemon, signals_follow_the_reply_however_many) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        ReplySeen seen = { .h = h };
        HarnessChild *c;
        uint64_t ids[12];
        int r;

        cr_assert_eq(harness_spawn_child(h, 12, false, &c), 0);
        for (unsigned i = 0; i < 12; i++) {
                r = harness_admit(h, &e, c->pid, c->tids[i], "test/a", HARNESS_MSEC / 2, 0, P100, 0, &ids[i]);
                assert_bus_ok(r, &e, "Admit");
        }
        harness_clear_signals(h);
        r = sd_bus_call_method_async(h->bus, &slot, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "ReleaseProcess",
                                     on_reply_seen, &seen, "u", (uint32_t) c->pid);
        cr_assert_geq(r, 0, "ReleaseProcess sent: %s", strerror(-r));
        for (unsigned k = 0; seen.seq == 0 && k < 1000; k++) {
                r = sd_bus_process(h->bus, NULL);
                cr_assert_geq(r, 0, "sd_bus_process: %s", strerror(-r));
                if (r == 0)
                        (void) sd_bus_wait(h->bus, 10000);
        }
        cr_assert_neq(seen.seq, 0, "no reply to ReleaseProcess within 10 s");
        cr_assert(!seen.error, "ReleaseProcess failed");
        for (unsigned i = 0; i < 12; i++) {
                HarnessSignal s;

                cr_assert_eq(harness_wait_signal(h, "ReservationRemoved", ids[i], "requested", &s), 0,
                             "no ReservationRemoved for #%" PRIu64, ids[i]);
                cr_assert_gt(s.seq, seen.seq, "ReservationRemoved #%" PRIu64 " (the %u. of 12) came before the reply",
                             ids[i], i + 1);
        }
        harness_assert_no_reservations(h, "after ReleaseProcess");
        harness_stop(h);
}

Test(daemon, double_admit_is_refused) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessChild *c;
        HarnessBooks before;
        int r;

        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        r = harness_admit(h, &e, c->pid, 0, "test/a", 2 * MS, 0, P100, 0, NULL);
        assert_bus_ok(r, &e, "Admit");
        before = harness_books_take(h);

        r = harness_admit(h, &e, c->pid, 0, "test/a", 2 * MS, 0, P100, 0, NULL);
        assert_bus_error(r, &e, "the same Admit twice", EDFD_ERROR_ALREADY_ADMITTED);
        r = harness_admit(h, &e, c->pid, c->pid, "test/b", 1 * MS, 0, 50 * MS, 0, NULL);
        assert_bus_error(r, &e, "Admit of an admitted thread into another group", EDFD_ERROR_ALREADY_ADMITTED);
        harness_books_assert_same(h, &before, "a double Admit");
        harness_assert_dl(c->pid, 2 * MS, P100, P100, 0);
        harness_books_free(&before);
        harness_stop(h);
}

Test(daemon, foreign_deadline_is_refused) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessChild *c;
        HarnessBooks before;
        int r;

        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        r = harness_dl_set(c->pid, 1 * MS, P100, P100, 0);
        cr_assert_eq(r, 0, "cannot make the child SCHED_DEADLINE: %s", strerror(-r));
        before = harness_books_take(h);

        r = harness_admit(h, &e, c->pid, 0, "test/a", 2 * MS, 0, P100, 0, NULL);
        harness_assert_error_(r, &e, "Admit of a thread made SCHED_DEADLINE outside edfd", EDFD_ERROR_FOREIGN_DEADLINE,
                              NULL);
        harness_books_assert_same(h, &before, "Admit of a foreign deadline thread");
        harness_assert_dl(c->pid, 1 * MS, P100, P100, 0); /* edfd left it alone */
        harness_books_free(&before);

        cr_assert_eq(harness_dl_reset(c->pid), 0);
        harness_stop(h);
}

Test(daemon, group_rules) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessChild *c;
        HarnessGroup *g;
        size_t ng;
        const HarnessGroup *x;
        char *initial, *final;
        HarnessBooks before;
        uint64_t id, test_allocated;
        int r;

        initial = harness_books_groups(h);
        cr_assert_eq(harness_list_groups(h, &g, &ng), 0);
        test_allocated = group_or_fail(g, ng, "test")->allocated;
        cr_assert_eq(test_allocated, group_or_fail(g, ng, "test/a")->bandwidth + group_or_fail(g, ng, "test/b")->bandwidth,
                     "test's allocated is not the sum of test/a and test/b");
        cr_assert_eq(group_or_fail(g, ng, "test/a")->dynamic, 0);
        harness_groups_free(g, ng);
        harness_clear_signals(h);

        r = harness_call(h, &e, NULL, "CreateGroup", "stt", "test/c", 5 * MS, P100);
        assert_bus_ok(r, &e, "CreateGroup(test/c, 5ms/100ms)");
        cr_assert_eq(harness_wait_signal(h, "GroupsChanged", UINT64_MAX, NULL, NULL), 0, "no GroupsChanged");
        cr_assert_eq(harness_list_groups(h, &g, &ng), 0);
        x = group_or_fail(g, ng, "test/c");
        cr_assert(x->runtime == 5 * MS && x->period == P100, "test/c is %" PRIu64 "/%" PRIu64, x->runtime, x->period);
        cr_assert_eq(x->bandwidth, harness_bw(5 * MS, P100));
        cr_assert_eq(x->allocated, 0);
        cr_assert_neq(x->dynamic, 0, "a group made by CreateGroup is not marked dynamic");
        cr_assert_eq(group_or_fail(g, ng, "test")->allocated, test_allocated + harness_bw(5 * MS, P100));
        cr_assert_eq(group_or_fail(g, ng, "test")->groups, 3);
        harness_groups_free(g, ng);

        before = harness_books_take(h);
        static const struct {
                const char *what, *method, *path;
                uint64_t runtime, period;
                const char *error, *alt;
        } bad[] = {
                { "CreateGroup of an existing dynamic group", "CreateGroup", "test/c", 1 * MS, P100,
                  EDFD_ERROR_GROUP_EXISTS, NULL },
                { "CreateGroup of an existing configured group", "CreateGroup", "test/a", 1 * MS, P100,
                  EDFD_ERROR_GROUP_EXISTS, NULL },
                { "CreateGroup without a parent", "CreateGroup", "nope/x", 1 * MS, P100, EDFD_ERROR_NO_SUCH_GROUP, NULL },
                { "CreateGroup over the parent's budget (6% of 5% free)", "CreateGroup", "test/d", 6 * MS, P100,
                  EDFD_ERROR_OVER_BUDGET, NULL },
                { "CreateGroup with runtime 0", "CreateGroup", "test/d", 0, P100, EDFD_ERROR_INVALID_PARAMETERS, NULL },
                { "CreateGroup with period 0", "CreateGroup", "test/d", 1 * MS, 0, EDFD_ERROR_INVALID_PARAMETERS, NULL },
                { "CreateGroup with runtime 1023", "CreateGroup", "test/d", 1023, P100, EDFD_ERROR_INVALID_PARAMETERS,
                  NULL },
                { "CreateGroup with UINT64_MAX", "CreateGroup", "test/d", UINT64_MAX, UINT64_MAX,
                  EDFD_ERROR_INVALID_PARAMETERS, EDFD_ERROR_OVER_BUDGET },
                { "CreateGroup of 200% (runtime twice the period) in test of 30%", "CreateGroup", "test/d", 200 * MS,
                  P100, EDFD_ERROR_OVER_BUDGET, NULL },
                { "CreateGroup with an empty path", "CreateGroup", "", 1 * MS, P100, EDFD_ERROR_INVALID_PARAMETERS,
                  EDFD_ERROR_GROUP_EXISTS },
                { "CreateGroup with an empty component", "CreateGroup", "test//d", 1 * MS, P100,
                  EDFD_ERROR_INVALID_PARAMETERS, EDFD_ERROR_NO_SUCH_GROUP },
                { "CreateGroup with a trailing slash", "CreateGroup", "test/d/", 1 * MS, P100,
                  EDFD_ERROR_INVALID_PARAMETERS, EDFD_ERROR_NO_SUCH_GROUP },
                { "CreateGroup with ..", "CreateGroup", "test/../d", 1 * MS, P100, EDFD_ERROR_INVALID_PARAMETERS,
                  EDFD_ERROR_NO_SUCH_GROUP },
                { "SetGroup over the parent's budget (11% where 10% can be had)", "SetGroup", "test/c", 11 * MS, P100,
                  EDFD_ERROR_OVER_BUDGET, NULL },
                { "SetGroup of an unknown group", "SetGroup", "nope", 1 * MS, P100, EDFD_ERROR_NO_SUCH_GROUP, NULL },
                { "SetGroup with runtime 0", "SetGroup", "test/c", 0, P100, EDFD_ERROR_INVALID_PARAMETERS, NULL },
                { "RemoveGroup of an unknown group", "RemoveGroup", "nope", 0, 0, EDFD_ERROR_NO_SUCH_GROUP, NULL },
                { "RemoveGroup of a configured group with children", "RemoveGroup", "test", 0, 0,
                  EDFD_ERROR_PERMISSION_DENIED, EDFD_ERROR_GROUP_NOT_EMPTY },
                { "RemoveGroup of a configured group", "RemoveGroup", "test/a", 0, 0, EDFD_ERROR_PERMISSION_DENIED,
                  NULL },
                { "RemoveGroup of the root", "RemoveGroup", "/", 0, 0, EDFD_ERROR_INVALID_PARAMETERS,
                  EDFD_ERROR_PERMISSION_DENIED },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                if (streq(bad[i].method, "RemoveGroup"))
                        r = harness_call(h, &e, NULL, "RemoveGroup", "s", bad[i].path);
                else
                        r = harness_call(h, &e, NULL, bad[i].method, "stt", bad[i].path, bad[i].runtime, bad[i].period);
                harness_assert_error_(r, &e, bad[i].what, bad[i].error, bad[i].alt);
                harness_books_assert_same(h, &before, bad[i].what);
        }
        harness_books_free(&before);

        /* A group that holds a reservation can neither shrink below it nor go. */
        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        r = harness_admit(h, &e, c->pid, 0, "test/c", 2 * MS, 0, P100, 0, &id);
        assert_bus_ok(r, &e, "Admit into the dynamic group test/c");
        harness_assert_dl(c->pid, 2 * MS, P100, P100, 0);
        before = harness_books_take(h);
        r = harness_call(h, &e, NULL, "SetGroup", "stt", "test/c", 1 * MS, P100);
        assert_bus_error2(r, &e, "SetGroup below what the group holds", EDFD_ERROR_OVER_BUDGET,
                          EDFD_ERROR_INVALID_PARAMETERS);
        r = harness_call(h, &e, NULL, "RemoveGroup", "s", "test/c");
        assert_bus_error(r, &e, "RemoveGroup of a group holding a reservation", EDFD_ERROR_GROUP_NOT_EMPTY);
        harness_books_assert_same(h, &before, "the refused SetGroup/RemoveGroup");
        harness_books_free(&before);

        /* Growing within the parent works. */
        r = harness_call(h, &e, NULL, "SetGroup", "stt", "test/c", 8 * MS, P100);
        assert_bus_ok(r, &e, "SetGroup(test/c, 8ms/100ms)");
        cr_assert_eq(harness_list_groups(h, &g, &ng), 0);
        x = group_or_fail(g, ng, "test/c");
        cr_assert(x->runtime == 8 * MS && x->bandwidth == harness_bw(8 * MS, P100), "SetGroup did not take");
        cr_assert_eq(x->allocated, harness_bw(2 * MS, P100));
        harness_groups_free(g, ng);

        /* Nested dynamic groups; a parent goes only after its children. */
        r = harness_call(h, &e, NULL, "CreateGroup", "stt", "test/c/x", 1 * MS, P100);
        assert_bus_ok(r, &e, "CreateGroup(test/c/x)");
        r = harness_call(h, &e, NULL, "CreateGroup", "stt", "test/c/y", 6 * MS, P100);
        assert_bus_error(r, &e, "CreateGroup(test/c/y, 6%) in test/c with 8% - 2% - 1% = 5% free",
                         EDFD_ERROR_OVER_BUDGET);

        r = harness_call(h, &e, NULL, "Release", "t", id);
        assert_bus_ok(r, &e, "Release");
        r = harness_call(h, &e, NULL, "RemoveGroup", "s", "test/c");
        assert_bus_error(r, &e, "RemoveGroup of a group with a child group", EDFD_ERROR_GROUP_NOT_EMPTY);
        r = harness_call(h, &e, NULL, "RemoveGroup", "s", "test/c/x");
        assert_bus_ok(r, &e, "RemoveGroup(test/c/x)");
        r = harness_call(h, &e, NULL, "RemoveGroup", "s", "test/c");
        assert_bus_ok(r, &e, "RemoveGroup(test/c)");
        r = harness_admit(h, &e, c->pid, 0, "test/c", 1 * MS, 0, P100, 0, NULL);
        assert_bus_error(r, &e, "Admit into a removed group", EDFD_ERROR_NO_SUCH_GROUP);

        final = harness_books_groups(h);
        cr_assert_str_eq(final, initial, "ListGroups is not what it was after create/remove");
        free(initial);
        free(final);
        harness_stop(h);
}

static void write_config(Harness *h, const char *name) {
        char *text = harness_read_test_data(name);

        cr_assert(text, "cannot read test-data/%s", name);
        cr_assert_eq(harness_write_config(h, text), 0);
        free(text);
}

Test(daemon, bad_reload_keeps_the_old_tree) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessChild *c;
        HarnessGroup *g;
        size_t ng;
        HarnessBooks before;
        char *reservations;
        int r;

        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        r = harness_admit(h, &e, c->pid, 0, "test/a", 2 * MS, 0, P100, 0, NULL);
        assert_bus_ok(r, &e, "Admit");
        r = harness_call(h, &e, NULL, "CreateGroup", "stt", "test/c", 1 * MS, P100);
        assert_bus_ok(r, &e, "CreateGroup(test/c)");
        before = harness_books_take(h);

        static const struct {
                const char *file, *what, *mention;
        } bad[] = {
                { "reload-no-a.yaml", "a reload in which test/a (holding a reservation) vanishes", "test/a" },
                { "reload-a-small.yaml", "a reload that shrinks test/a (1%) below what it holds (2%)", "test/a" },
                { "reload-broken.yaml", "a reload of a file that is not YAML", NULL },
                { "reload-unknown-key.yaml", "a reload with an unknown key", "colour" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                write_config(h, bad[i].file);
                r = harness_call(h, &e, NULL, "Reload", "");
                assert_bus_error(r, &e, bad[i].what, EDFD_ERROR_INVALID_CONFIG);
                if (bad[i].mention)
                        cr_assert(strstr(e.message, bad[i].mention), "%s: the error does not mention %s: %s",
                                  bad[i].what, bad[i].mention, e.message);
                harness_books_assert_same(h, &before, bad[i].what);
                harness_assert_dl(c->pid, 2 * MS, P100, P100, 0);
        }

        /* A good reload applies, keeps the reservations and the dynamic group. */
        write_config(h, "reload-b-bigger.yaml");
        r = harness_call(h, &e, NULL, "Reload", "");
        assert_bus_ok(r, &e, "Reload of a good config (test/b 15%)");
        reservations = harness_books_reservations(h);
        cr_assert_str_eq(reservations, before.reservations, "a good Reload changed the reservations");
        free(reservations);
        cr_assert_eq(harness_list_groups(h, &g, &ng), 0);
        cr_assert_eq(group_or_fail(g, ng, "test/b")->bandwidth, harness_bw(15 * MS, P100),
                     "test/b is not 15%% after the reload");
        cr_assert_eq(group_or_fail(g, ng, "test/a")->allocated, harness_bw(2 * MS, P100));
        cr_assert_neq(group_or_fail(g, ng, "test/c")->dynamic, 0, "the dynamic group did not survive the reload");
        harness_groups_free(g, ng);
        harness_assert_dl(c->pid, 2 * MS, P100, P100, 0);
        harness_books_free(&before);

        /* SIGHUP with a bad file: refused the same way, the daemon lives on. */
        before = harness_books_take(h);
        write_config(h, "reload-no-a.yaml");
        {
                unsigned ready, reloading, ready2, reloading2;

                harness_notify_counts(h, &ready, &reloading);
                cr_assert_eq(kill(h->edfd_pid, SIGHUP), 0);
                r = harness_wait_notify(h, ready + 1, reloading + 1);
                harness_notify_counts(h, &ready2, &reloading2);
                cr_assert_eq(r, 0, "no RELOADING=1 and READY=1 after SIGHUP (READY=1 %u -> %u, RELOADING=1 %u -> %u)",
                             ready, ready2, reloading, reloading2);
        }
        harness_books_assert_same(h, &before, "SIGHUP with a bad config");

        /* The dynamic group test/c survives reloads: a tree without room for it is refused too. */
        write_config(h, "reload-c-clash.yaml");
        r = harness_call(h, &e, NULL, "Reload", "");
        assert_bus_error(r, &e, "a reload whose test (20%) has no room left for the dynamic test/c",
                         EDFD_ERROR_INVALID_CONFIG);
        harness_books_assert_same(h, &before, "a reload without room for a dynamic group");
        harness_books_free(&before);
        harness_stop(h);
}

/* ListGroups' typed fields. Who may use a group is (b anyone, as users): all three meanings, and a
 * list of 40 names of 60 bytes (2.4 KiB, more than the 1024 bytes the comma-separated string of 0.1
 * was cut at) comes back whole and in order. The entry's a{sv} carries the effective
 * min_split_runtime (set, inherited, the top-level default) and overridden: false for every group
 * of the config, true for a configured group SetGroup resized (through a restart too, until the
 * next reload gives it the config's size again), never for a dynamic group. */
#define CROWD_USERS 40
#define CROWD_NAME_LEN 60

static const HarnessGroup *typed_group(const HarnessGroup *g, size_t n, const char *path, uint64_t min_split,
                                       int overridden) {
        const HarnessGroup *x = group_or_fail(g, n, path);

        cr_assert(x->has_min_split_runtime && x->has_overridden,
                  "%s: the a{sv} lacks %s", path, x->has_min_split_runtime ? "overridden" : "min_split_runtime");
        cr_assert_eq(x->min_split_runtime, min_split, "%s: min_split_runtime is %" PRIu64 ", expected %" PRIu64, path,
                     x->min_split_runtime, min_split);
        cr_assert_eq(!!x->overridden, overridden, "%s: overridden is %d, expected %d", path, x->overridden,
                     overridden);
        return x;
}

Test(daemon, list_groups_typed_fields) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        char names[CROWD_USERS][CROWD_NAME_LEN + 1];
        char *config = NULL, *list = NULL;
        size_t list_len = 0;
        uint64_t a_bandwidth;
        const HarnessGroup *x;
        HarnessGroup *g;
        Harness *h;
        size_t n;
        int r;

        for (size_t i = 0; i < CROWD_USERS; i++) {
                /* Names need not exist: the list is only compared with the caller's name. */
                int k = snprintf(names[i], sizeof names[i], "crowd-user-%02zu-", i);
                memset(names[i] + k, 'a' + (char) (i % 26), CROWD_NAME_LEN - (size_t) k);
                names[i][CROWD_NAME_LEN] = '\0';
                list_len += strlen(names[i]) + 1;
        }
        cr_assert_gt(list_len, 1024 + 1);
        list = calloc(1, list_len + 1);
        cr_assert(list);
        for (size_t i = 0; i < CROWD_USERS; i++) {
                strcat(list, i ? "," : "");
                strcat(list, names[i]);
        }
        cr_assert_geq(asprintf(&config,
                               "capacity: auto\n"
                               "default-group: test/a\n"
                               "min-split-runtime: 2ms\n"
                               "groups:\n"
                               "  test:\n"
                               "    bandwidth: 30%%\n"
                               "    min-split-runtime: 3ms\n"
                               "    groups:\n"
                               "      a:\n"
                               "        bandwidth: 10%%\n"
                               "      crowd:\n"
                               "        bandwidth: 1%%\n"
                               "        users: [%s]\n"
                               "      sealed:\n"
                               "        bandwidth: 1%%\n"
                               "        users: []\n"
                               "  other:\n"
                               "    bandwidth: 1%%\n",
                               list),
                      0);
        harness_require();
        r = harness_start(&h, config, NULL);
        cr_assert_eq(r, 0, "edfd did not start on a config with 40 long user names: %s", strerror(-r));

        cr_assert_eq(harness_list_groups(h, &g, &n), 0);
        x = typed_group(g, n, "/", 2 * MS, 0);
        cr_assert(x->anyone && !x->users[0], "the root is not listed as anyone's");
        x = typed_group(g, n, "test", 3 * MS, 0);
        cr_assert(x->anyone && !x->users[0], "test (no users:) is not listed as anyone's");
        a_bandwidth = typed_group(g, n, "test/a", 3 * MS, 0)->bandwidth;
        typed_group(g, n, "other", 2 * MS, 0);
        x = typed_group(g, n, "test/sealed", 3 * MS, 0);
        cr_assert(!x->anyone && !x->users[0], "test/sealed (users: []) is not listed as nobody's but root's");
        x = typed_group(g, n, "test/crowd", 3 * MS, 0);
        cr_assert(!x->anyone, "test/crowd (40 users) is listed as anyone's");
        for (size_t i = 0; i < CROWD_USERS; i++) {
                cr_assert(x->users[i], "test/crowd lists %zu users, the config %d", i, CROWD_USERS);
                cr_assert_str_eq(x->users[i], names[i], "test/crowd: user %zu", i);
        }
        cr_assert_null(x->users[CROWD_USERS], "test/crowd lists more than the %d users of the config", CROWD_USERS);
        harness_groups_free(g, n);

        /* SetGroup makes a configured group overridden, not its parent; a dynamic group never is. */
        r = harness_call(h, &e, NULL, "SetGroup", "stt", "test/a", 8 * MS, P100);
        assert_bus_ok(r, &e, "SetGroup(test/a, 8ms/100ms)");
        r = harness_call(h, &e, NULL, "CreateGroup", "stt", "test/dyn", 1 * MS, P100);
        assert_bus_ok(r, &e, "CreateGroup(test/dyn)");
        r = harness_call(h, &e, NULL, "SetGroup", "stt", "test/dyn", 2 * MS, P100);
        assert_bus_ok(r, &e, "SetGroup(test/dyn, 2ms/100ms)");
        for (unsigned round = 0; round < 3; round++) {
                static const char *const when[] = { "after SetGroup", "after a restart", "after a Reload" };
                if (round == 1)
                        cr_assert_eq(harness_restart_daemon(h, false), 0, "edfd did not restart");
                else if (round == 2) {
                        r = harness_call(h, &e, NULL, "Reload", "");
                        assert_bus_ok(r, &e, "Reload");
                }
                cr_assert_eq(harness_list_groups(h, &g, &n), 0);
                /* A reload gives the configured group the config's size again: no longer overridden. */
                x = typed_group(g, n, "test/a", 3 * MS, round < 2);
                if (round < 2)
                        cr_assert(x->runtime == 8 * MS && x->period == P100, "test/a is %" PRIu64 "/%" PRIu64 " %s",
                                  x->runtime, x->period, when[round]);
                else
                        cr_assert_eq(x->bandwidth, a_bandwidth, "test/a does not have its configured size %s",
                                     when[round]);
                typed_group(g, n, "test", 3 * MS, 0);
                x = typed_group(g, n, "test/dyn", 3 * MS, 0);
                cr_assert(x->dynamic && x->runtime == 2 * MS, "test/dyn is not the dynamic 2ms/100ms group %s",
                          when[round]);
                harness_groups_free(g, n);
        }
        free(list);
        free(config);
        harness_stop(h);
}

Test(daemon, properties) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        uint64_t capacity, allocated, kernel_capacity, headroom, echo, shortfall = 0;
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        char *version;
        HarnessGroup *g;
        size_t ng;
        const HarnessGroup *root, *test;
        int r;

        cr_assert_eq(harness_get_u64(h, "Capacity", &capacity), 0);
        cr_assert_eq(harness_get_u64(h, "Allocated", &allocated), 0);
        cr_assert_eq(harness_get_u64(h, "KernelCapacity", &kernel_capacity), 0);
        cr_assert_eq(harness_get_string(h, "Version", &version), 0);
        cr_assert(version[0] >= '0' && version[0] <= '9', "Version \"%s\" does not look like a version", version);
        free(version);

        cr_assert_gt(capacity, 0);
        cr_assert_leq(capacity, (uint64_t) ncpu * BW_UNIT * 95 / 100 + 1,
                      "Capacity %" PRIu64 " is above %ld CPUs x 95%%", capacity, ncpu);
        cr_assert_leq(capacity, kernel_capacity, "Capacity %" PRIu64 " is above KernelCapacity %" PRIu64, capacity,
                      kernel_capacity);
        /* The kernel admits what its own count (dl_bw->total_bw) leaves: 6.18 was seen to count 2%
         * of a CPU less than its fair servers and deadline threads hold, for minutes, and then
         * admits that much more whatever edfd computes. So the probe may exceed Capacity by the
         * shortfall the kernel's own count shows, and by nothing else: an edfd that computes too
         * little still fails here. Without debugfs, only all of five probes failing counts. */
        for (unsigned i = 0; i < 5; i++) {
                cr_assert_eq(harness_probe_headroom(&headroom), 0);
                if (headroom <= capacity + BW_UNIT / 100)
                        break;
                if (harness_kernel_shortfall(&shortfall) == 0 && headroom <= capacity + BW_UNIT / 100 + shortfall) {
                        cr_log_info("the kernel counts %" PRIu64 " less deadline bandwidth than its fair servers "
                                    "and deadline threads hold, so it admits %" PRIu64 " for edfd's %" PRIu64,
                                    shortfall, headroom, capacity);
                        break;
                }
                harness_usleep(200 * 1000);
        }
        cr_assert_leq(headroom, capacity + BW_UNIT / 100 + shortfall,
                      "the kernel admits %" PRIu64 " but edfd's Capacity (auto) is only %" PRIu64
                      " (the kernel's own count is short by %" PRIu64 ")", headroom, capacity, shortfall);

        cr_assert_eq(harness_list_groups(h, &g, &ng), 0);
        test = group_or_fail(g, ng, "test");
        cr_assert_eq(test->bandwidth, harness_bw(30 * MS, P100), "test is not 30%%");
        cr_assert_geq(allocated, test->bandwidth, "Allocated %" PRIu64 " is below the 30%% configured", allocated);
        cr_assert_leq(allocated, capacity);
        root = harness_find_group(g, ng, "/");
        if (root) {
                cr_assert_eq(root->bandwidth, capacity, "the root's bandwidth is not Capacity");
                cr_assert_eq(root->allocated, allocated, "the root's allocated is not Allocated");
        }
        harness_groups_free(g, ng);

        r = harness_call(h, &e, &reply, "Echo", "t", UINT64_C(0xfeedface12345678));
        assert_bus_ok(r, &e, "Echo");
        cr_assert_eq(sd_bus_message_read(reply, "t", &echo), 1);
        cr_assert_eq(echo, UINT64_C(0xfeedface12345678));
        harness_stop(h);
}

/* What a second client's match received. */
typedef struct Heard {
        uint64_t ids[64];
        size_t n;
} Heard;

static int on_heard(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Heard *heard = userdata;
        uint64_t id;

        if (sd_bus_message_is_signal(m, EDFD_BUS_INTERFACE, "ReservationAdded") ||
            sd_bus_message_is_signal(m, EDFD_BUS_INTERFACE, "ReservationRemoved")) {
                if (sd_bus_message_read(m, "t", &id) > 0 && heard->n < ELEMENTSOF(heard->ids))
                        heard->ids[heard->n++] = id;
        } else if (heard->n < ELEMENTSOF(heard->ids))
                heard->ids[heard->n++] = 0; /* any other signal */
        return 0;
}

static bool heard_id(const Heard *heard, uint64_t id) {
        for (size_t i = 0; i < heard->n; i++)
                if (heard->ids[i] == id)
                        return true;
        return false;
}

static uint32_t subscribers(Harness *h) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        uint32_t n = UINT32_MAX;

        cr_assert_geq(sd_bus_get_property_trivial(h->bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE,
                                                  "Subscribers", &e, 'u', &n),
                      0, "Subscribers: %s", e.message);
        return n;
}

/* Signals go out only while someone is subscribed; a subscription ends with Unsubscribe or when its
 * client leaves the bus. No sleeps: a bus delivers one sender's messages in order, so a signal of the
 * first admission, had it been sent, would reach the listener before the reply to its Subscribe. */
Test(daemon, signals_only_to_subscribers) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        sd_bus *listener = NULL;
        Heard heard = {};
        HarnessChild *c;
        uint64_t quiet, loud;
        int r;

        cr_assert_eq(subscribers(h), 1, "the harness's client is subscribed");
        r = harness_call(h, &e, NULL, "Unsubscribe", "");
        assert_bus_ok(r, &e, "Unsubscribe");
        r = harness_call(h, &e, NULL, "Unsubscribe", "");
        assert_bus_ok(r, &e, "Unsubscribe when not subscribed");
        cr_assert_eq(subscribers(h), 0);

        cr_assert_geq(sd_bus_new(&listener), 0);
        cr_assert_geq(sd_bus_set_address(listener, h->bus_address), 0);
        cr_assert_geq(sd_bus_set_bus_client(listener, 1), 0);
        cr_assert_geq(sd_bus_start(listener), 0);
        cr_assert_geq(sd_bus_match_signal(listener, NULL, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, NULL,
                                          on_heard, &heard),
                      0);

        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        r = harness_admit(h, &e, c->pid, 0, "test/a", 1 * MS, 0, P100, 0, &quiet);
        assert_bus_ok(r, &e, "Admit without subscribers");
        r = harness_call(h, &e, NULL, "Release", "t", quiet);
        assert_bus_ok(r, &e, "Release without subscribers");

        for (int i = 0; i < 2; i++)
                cr_assert_geq(sd_bus_call_method(listener, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE,
                                                 "Subscribe", &e, NULL, ""),
                              0, "Subscribe: %s", e.message);
        cr_assert_eq(subscribers(h), 1, "subscribing twice is subscribing once");
        r = harness_admit(h, &e, c->pid, 0, "test/a", 1 * MS, 0, P100, 0, &loud);
        assert_bus_ok(r, &e, "Admit with a subscriber");
        for (unsigned i = 0; i < 500 && !heard_id(&heard, loud); i++) {
                while (sd_bus_process(listener, NULL) > 0)
                        ;
                if (!heard_id(&heard, loud))
                        (void) sd_bus_wait(listener, 10000);
        }
        cr_assert(heard_id(&heard, loud), "the subscriber got no ReservationAdded for %" PRIu64, loud);
        cr_assert(!heard_id(&heard, quiet), "reservation %" PRIu64 "'s signals were sent with nobody subscribed", quiet);
        cr_assert_eq(heard.n, 1, "%zu signals, one expected", heard.n);

        /* The listener leaves the bus: edfd forgets it (NameOwnerChanged; bounded wait). */
        listener = sd_bus_flush_close_unref(listener);
        uint32_t n = 1;
        for (unsigned i = 0; i < 500 && (n = subscribers(h)) != 0; i++)
                harness_usleep(10000);
        cr_assert_eq(n, 0, "a subscriber that left the bus is still counted");

        r = harness_call(h, &e, NULL, "Release", "t", loud);
        assert_bus_ok(r, &e, "Release");
        harness_child_kill(c);
        harness_stop(h);
}

/* ---- the kernel says EBUSY although the books have room ---- */

typedef struct Answer {
        unsigned order; /* 0: not yet; else its place among the answers */
        uint64_t id;
        char error[512];
} Answer;

static unsigned answers;

static int on_answer(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Answer *a = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);

        a->order = ++answers;
        if (e)
                snprintf(a->error, sizeof a->error, "%s: %s", e->name, e->message ? e->message : "");
        else
                (void) sd_bus_message_read(m, "t", &a->id);
        return 0;
}

static void wait_answer(Harness *h, const Answer *a) {
        for (unsigned i = 0; i < 500 && !a->order; i++) {
                while (sd_bus_process(h->bus, NULL) > 0)
                        ;
                if (!a->order)
                        (void) sd_bus_wait(h->bus, 10000);
        }
        cr_assert(a->order, "no answer within 5 s");
}

/* Fill the pool, then send an Admit of c's main thread (1 ms / 100 ms into test/a) and an Echo on the
 * same connection, and assert the Echo is answered first: edfd waits for the kernel in the
 * background. The Admit's answer comes into *admit later. */
static void admit_into_full_pool(Harness *h, const HarnessChild *c, const HarnessChild *filler, Answer *admit) {
        Answer echo = {};

        harness_fill_pool(filler);
        answers = 0;
        harness_clear_signals(h);
        cr_assert_geq(sd_bus_call_method_async(h->bus, NULL, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "Admit",
                                               on_answer, admit, "uustttt", (uint32_t) c->pid, UINT32_C(0), "test/a",
                                               1 * MS, UINT64_C(0), P100, UINT64_C(0)),
                      0);
        cr_assert_geq(sd_bus_call_method_async(h->bus, NULL, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "Echo",
                                               on_answer, &echo, "t", UINT64_C(7)),
                      0);
        wait_answer(h, &echo);
        cr_assert(!admit->order, "the Admit was answered (%s) before the Echo sent after it: edfd did not wait in "
                  "the background", admit->error[0] ? admit->error : "ok");
        harness_assert_other(c->pid);
}

/* While the kernel refuses, edfd retries from a timer and answers everyone else meanwhile: an Echo
 * sent after the Admit on the same connection (edfd takes them in order) is answered first; when the
 * bandwidth comes back within the retry window, the Admit succeeds. */
Test(daemon, kernel_busy_admit_waits_without_stalling) {
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessChild *c, *filler;
        Answer admit = {};

        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        cr_assert_eq(harness_spawn_child(h, 2, false, &filler), 0);
        admit_into_full_pool(h, c, filler, &admit);
        harness_empty_pool(filler);
        wait_answer(h, &admit);
        cr_assert(!admit.error[0], "the Admit failed after the bandwidth came back: %s", admit.error);
        harness_assert_dl(c->pid, 1 * MS, P100, P100, 0);
        cr_assert_eq(harness_wait_signal(h, "ReservationAdded", admit.id, "requested", NULL), 0);
        cr_assert_geq(harness_call(h, NULL, NULL, "Release", "t", admit.id), 0);
        harness_child_kill(filler);
        harness_child_kill(c);
        harness_stop(h);
}

/* The thread exits while its admission waits: the answer is NoSuchThread, and no signal speaks of a
 * reservation that was never announced. */
Test(daemon, kernel_busy_admit_of_an_exiting_thread) {
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessChild *c, *filler;
        Answer admit = {};

        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        cr_assert_eq(harness_spawn_child(h, 2, false, &filler), 0);
        admit_into_full_pool(h, c, filler, &admit);
        harness_child_kill(c);
        wait_answer(h, &admit);
        cr_assert(strstr(admit.error, EDFD_ERROR_NO_SUCH_THREAD), "the Admit of a thread that exited: %s",
                  admit.error[0] ? admit.error : "succeeded");
        for (size_t i = 0; i < h->n_signals; i++)
                cr_assert(strcmp(h->signals[i].member, "ReservationRemoved") != 0 &&
                          strcmp(h->signals[i].member, "ReservationAdded") != 0,
                          "%s about a reservation never announced", h->signals[i].member);
        harness_assert_no_reservations(h, "after the waiting admission's thread exited");
        harness_empty_pool(filler);
        harness_child_kill(filler);
        harness_stop(h);
}

/* When the bandwidth does not come back within the window, edfd looks for deadline threads it does not
 * manage at once: here the filler's, which now hold the pool, so the request no longer fits the books
 * and the answer is their own OverBudget, naming the filler's threads; no reservation changed. */
Test(daemon, kernel_busy_admit_ends_refused) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessChild *c, *filler;
        char *before, *after, who[64];
        uint64_t id = 0;
        int r;

        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        cr_assert_eq(harness_spawn_child(h, 2, false, &filler), 0);
        before = harness_books_reservations(h);
        harness_fill_pool(filler);
        r = harness_admit(h, &e, c->pid, 0, "test/a", 1 * MS, 0, P100, 0, &id);
        assert_bus_error2(r, &e, "Admit into a full kernel pool", EDFD_ERROR_OVER_BUDGET, EDFD_ERROR_KERNEL_REFUSED);
        if (sd_bus_error_has_name(&e, EDFD_ERROR_KERNEL_REFUSED))
                cr_expect(strstr(e.message, "EBUSY"), "the message does not say EBUSY: %s", e.message);
        snprintf(who, sizeof who, "of pid %d (", (int) filler->pid);
        cr_expect(strstr(e.message, who) && strstr(e.message, "outside edfd"),
                  "the answer does not name the filler's threads (pid %d): %s", (int) filler->pid, e.message);
        harness_assert_other(c->pid);
        after = harness_books_reservations(h);
        cr_expect_str_eq(after, before, "the refused Admit changed the reservations");
        free(before);
        free(after);
        harness_empty_pool(filler);
        harness_child_kill(filler);
        harness_child_kill(c);
        harness_stop(h);
}

Test(daemon, exit_is_noticed) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessChild *c;
        HarnessSignal sig;
        uint64_t id;
        int r;

        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        r = harness_admit(h, &e, c->pid, 0, "test/a", 1 * MS, 0, P100, 0, &id);
        assert_bus_ok(r, &e, "Admit");
        cr_assert_eq(harness_wait_signal(h, "ReservationAdded", id, "requested", NULL), 0);
        harness_child_kill(c);
        cr_assert_eq(harness_wait_signal(h, "ReservationRemoved", id, NULL, &sig), 0,
                     "no ReservationRemoved after the admitted process exited");
        cr_assert_str_eq(sig.reason, "exited");
        harness_assert_no_reservations(h, "after the process exited");
        harness_stop(h);
}

Test(daemon, admit_moves_into_cgroup) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessChild *c;
        HarnessGroup *g;
        size_t ng;
        char *cg, *prefix;
        int r;

        cr_assert_eq(harness_list_groups(h, &g, &ng), 0);
        cr_assert_neq(group_or_fail(g, ng, "test/b")->cgroup[0], 0, "test/b has no cgroup although configured");
        cr_assert_eq(group_or_fail(g, ng, "test/a")->cgroup[0], 0, "test/a has a cgroup although none configured");
        harness_groups_free(g, ng);

        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        r = harness_admit(h, &e, c->pid, 0, "test/b", 1 * MS, 0, P100, EDFD_ADMIT_MOVE, NULL);
        assert_bus_ok(r, &e, "Admit(test/b, move into its cgroup)");
        harness_assert_dl(c->pid, 1 * MS, P100, P100, 0);
        cg = harness_cgroup_of(c->pid);
        cr_assert(cg, "cannot read the child's cgroup");
        cr_assert(asprintf(&prefix, "%s/", h->cgroup_rel) > 0);
        cr_assert(strncmp(cg, prefix, strlen(prefix)) == 0, "the child is in %s, not below edfd's cgroup root %s",
                  cg, h->cgroup_rel);
        free(cg);
        free(prefix);
        harness_stop(h);
}

/* An unprivileged program (uid 65534) asks for itself: that is the point of edfd. The bus policy in
 * bus.conf lets it call edfd but not own edfd's name (or any name); edfd lets it admit and release
 * its own thread, and refuses what needs root. The child reports each step by its exit code. */
enum {
        UNPRIV_OK,
        UNPRIV_SETUID,
        UNPRIV_CONNECT,
        UNPRIV_ECHO,
        UNPRIV_OWN_EDFD,
        UNPRIV_OWN_OTHER,
        UNPRIV_LIST,
        UNPRIV_ADMIT,
        UNPRIV_NOT_DL,
        UNPRIV_CREATE_GROUP,
        UNPRIV_RELEASE,
        UNPRIV_STILL_DL,
};

static const char *const unpriv_what[] = {
        [UNPRIV_SETUID] = "cannot drop privileges",
        [UNPRIV_CONNECT] = "cannot connect to the bus",
        [UNPRIV_ECHO] = "may not call Echo",
        [UNPRIV_OWN_EDFD] = "could own org.edfd.Admission1 (bus.conf)",
        [UNPRIV_OWN_OTHER] = "could own another name (bus.conf)",
        [UNPRIV_LIST] = "may not call ListReservations",
        [UNPRIV_ADMIT] = "may not Admit its own main thread (pid 0, tid 0)",
        [UNPRIV_NOT_DL] = "is not SCHED_DEADLINE after a successful Admit",
        [UNPRIV_CREATE_GROUP] = "got something other than PermissionDenied from CreateGroup",
        [UNPRIV_RELEASE] = "may not Release its own reservation",
        [UNPRIV_STILL_DL] = "is still SCHED_DEADLINE after Release",
};

_Noreturn static void unprivileged_client(const char *address) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        sd_bus *bus = NULL;
        SchedAttr a;
        uint64_t v = 0, id;

#define CALL(code, member, ...)                                                                               \
        do {                                                                                                  \
                sd_bus_error_free(&e);                                                                        \
                reply = sd_bus_message_unref(reply);                                                          \
                if (sd_bus_call_method(bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, member, &e,     \
                                       &reply, __VA_ARGS__) < 0) {                                            \
                        fprintf(stderr, "unprivileged %s: %s: %s\n", member, e.name, e.message);              \
                        _exit(code);                                                                          \
                }                                                                                             \
        } while (0)

        if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
                _exit(UNPRIV_SETUID);
        if (sd_bus_new(&bus) < 0 || sd_bus_set_address(bus, address) < 0 || sd_bus_set_bus_client(bus, 1) < 0 ||
            sd_bus_start(bus) < 0)
                _exit(UNPRIV_CONNECT);
        CALL(UNPRIV_ECHO, "Echo", "t", UINT64_C(5));
        if (sd_bus_message_read(reply, "t", &v) < 0 || v != 5)
                _exit(UNPRIV_ECHO);
        if (sd_bus_request_name(bus, EDFD_BUS_NAME, 0) >= 0)
                _exit(UNPRIV_OWN_EDFD);
        if (sd_bus_request_name(bus, "org.example.Other", 0) >= 0)
                _exit(UNPRIV_OWN_OTHER);
        CALL(UNPRIV_LIST, "ListReservations", "");

        CALL(UNPRIV_ADMIT, "Admit", "uustttt", UINT32_C(0), UINT32_C(0), "test/a", 1 * MS, UINT64_C(0), P100,
             UINT64_C(0));
        if (sd_bus_message_read(reply, "t", &id) < 0)
                _exit(UNPRIV_ADMIT);
        if (harness_sched_getattr(0, &a) < 0 || a.sched_policy != SCHED_DEADLINE || a.sched_runtime != 1 * MS)
                _exit(UNPRIV_NOT_DL);

        sd_bus_error_free(&e);
        if (sd_bus_call_method(bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "CreateGroup", &e, NULL, "stt",
                               "test/x", 1 * MS, P100) >= 0 ||
            !sd_bus_error_has_name(&e, EDFD_ERROR_PERMISSION_DENIED)) {
                fprintf(stderr, "unprivileged CreateGroup: %s: %s\n", e.name ? e.name : "success",
                        e.message ? e.message : "");
                _exit(UNPRIV_CREATE_GROUP);
        }

        CALL(UNPRIV_RELEASE, "Release", "t", id);
        if (harness_sched_getattr(0, &a) < 0 || a.sched_policy != 0)
                _exit(UNPRIV_STILL_DL);
        _exit(UNPRIV_OK);
#undef CALL
}

Test(daemon, unprivileged_client) {
        Harness *h = harness_start_or_skip("basic.yaml");
        pid_t pid;
        int status;

        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0)
                unprivileged_client(h->bus_address);
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFEXITED(status), "the unprivileged client crashed");
        cr_assert_eq(WEXITSTATUS(status), UNPRIV_OK, "the unprivileged client %s",
                     (size_t) WEXITSTATUS(status) < ELEMENTSOF(unpriv_what) && unpriv_what[WEXITSTATUS(status)]
                             ? unpriv_what[WEXITSTATUS(status)]
                             : "failed");
        harness_assert_no_reservations(h, "after the unprivileged client released");
        harness_stop(h);
}

/* Under a unit with WatchdogSec= edfd pings systemd (sd_event_set_watchdog): WATCHDOG=1 on its
 * NOTIFY_SOCKET, several times per WATCHDOG_USEC. Without WATCHDOG_USEC it sends none. Counts only,
 * with a generous bound: not a measure of timing. */
#define WATCHDOG_USEC (200 * UINT64_C(1000))
#define WATCHDOG_QUIET_USEC (2 * UINT64_C(1000000))
#define WATCHDOG_BOUND_USEC (10 * UINT64_C(1000000))

Test(daemon, watchdog_pings_only_when_asked) {
        Harness *h = harness_start_or_skip("basic.yaml");
        unsigned n;
        int r;

        /* Started as every other test starts it: no WATCHDOG_USEC, no ping. */
        harness_usleep(WATCHDOG_QUIET_USEC);
        n = harness_notify_watchdogs(h);
        cr_assert_eq(n, 0, "edfd sent %u WATCHDOG=1 without WATCHDOG_USEC", n);

        /* WATCHDOG_USEC=200ms and WATCHDOG_PID=its pid, as systemd sets them: pings, again and again. */
        harness_set_watchdog(h, WATCHDOG_USEC);
        cr_assert_eq(harness_restart_daemon(h, false), 0);
        r = harness_wait_watchdogs(h, 2, WATCHDOG_BOUND_USEC);
        n = harness_notify_watchdogs(h);
        cr_assert_eq(r, 0, "edfd sent %u WATCHDOG=1 in 10 s with WATCHDOG_USEC=%" PRIu64 ", expected at least 2", n,
                     WATCHDOG_USEC);

        /* And off again: the count stays. */
        harness_set_watchdog(h, 0);
        cr_assert_eq(harness_restart_daemon(h, false), 0);
        n = harness_notify_watchdogs(h);
        harness_usleep(WATCHDOG_QUIET_USEC);
        cr_assert_eq(harness_notify_watchdogs(h), n, "edfd sent WATCHDOG=1 after it was started without "
                     "WATCHDOG_USEC");
        harness_stop(h);
}
