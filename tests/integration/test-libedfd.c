/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libedfd against a real edfd on a private bus and the real kernel: every call's success checked
 * against the kernel (sched_getattr) and edfd's books (the harness's own ListReservations), every
 * refusal checked for its errno, its D-Bus error name and edfd's message, and for changing nothing;
 * bad arguments never reach the bus and never abort; edfd not running, edfd restarting under a
 * subscriber, a handle used after fork(), and handles used from two threads at once.
 *
 * The configuration is test-data/basic.yaml: test (30%) with test/a (10%, the default group) and
 * test/b (10%). Everything admitted stays at or below 10% of one CPU. */

#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "edfd/edfd.h"
#include "harness.h"
#include "shared/protocol.h"

#define MS HARNESS_MSEC
#define P100 (100 * MS)

TestSuite(libedfd, .fini = harness_fini, .timeout = 120);

/* The harness, and the library pointed at its bus. */
static Harness *start(void) {
        Harness *h = harness_start_or_skip("basic.yaml");

        cr_assert_eq(setenv("DBUS_SYSTEM_BUS_ADDRESS", h->bus_address, 1), 0);
        return h;
}

static edfd *open_or_die(void) {
        edfd *e = NULL;
        int r = edfd_open(&e);

        cr_assert_eq(r, 0, "edfd_open: %s", strerror(-r));
        cr_assert_not_null(e);
        return e;
}

static edfd_request *request(uint64_t runtime, uint64_t deadline, uint64_t period, const char *group) {
        edfd_request *q = NULL;

        cr_assert_eq(edfd_request_new(&q), 0);
        cr_assert_eq(edfd_request_set_runtime(q, runtime), 0);
        cr_assert_eq(edfd_request_set_deadline(q, deadline), 0);
        cr_assert_eq(edfd_request_set_period(q, period), 0);
        cr_assert_eq(edfd_request_set_group(q, group), 0);
        return q;
}

/* The call returned want (a negative errno) with that D-Bus error name (NULL: a local failure) and
 * a message that contains each of the words. */
static void assert_fails(edfd *e, int r, int want, const char *name, const char *what, const char *word1,
                         const char *word2) {
        const char *got_name = edfd_error_name(e), *message = edfd_error_message(e);

        cr_assert_eq(r, want, "%s: returned %d (%s), expected %d (%s); %s: %s", what, r, strerror(-r), want,
                     strerror(-want), got_name ?: "local", message);
        if (name)
                cr_assert(got_name && streq(got_name, name), "%s: error name %s, expected %s", what,
                          got_name ?: "(none)", name);
        else
                cr_assert_null(got_name, "%s: a local failure has no error name, got %s", what, got_name);
        cr_assert(message && *message, "%s: no message", what);
        if (word1)
                cr_assert(strstr(message, word1), "%s: message \"%s\" does not name \"%s\"", what, message, word1);
        if (word2)
                cr_assert(strstr(message, word2), "%s: message \"%s\" does not name \"%s\"", what, message, word2);
}

static void assert_cleared(edfd *e, const char *what) {
        cr_assert_null(edfd_error_name(e), "%s: the error name is left over", what);
        cr_assert_str_eq(edfd_error_message(e), "", "%s: the message is left over", what);
}

Test(libedfd, bad_arguments_never_reach_the_bus) {
        edfd_request *q = NULL;
        uint64_t id = 0, v;
        edfd_snapshot *s = NULL;
        edfd_split *sp = NULL;

        /* Without any handle or bus. */
        cr_assert_eq(edfd_open(NULL), -EINVAL);
        cr_assert_eq(edfd_request_new(NULL), -EINVAL);
        cr_assert_null(edfd_close(NULL));
        cr_assert_null(edfd_request_free(NULL));
        cr_assert_null(edfd_snapshot_free(NULL));
        cr_assert_null(edfd_split_free(NULL));
        cr_assert_null(edfd_error_name(NULL));
        cr_assert_str_eq(edfd_error_message(NULL), "no handle (NULL)");
        cr_assert_eq(edfd_request_set_runtime(NULL, 1), -EINVAL);
        cr_assert_eq(edfd_request_set_group(NULL, "x"), -EINVAL);
        cr_assert_eq(edfd_admit(NULL, NULL, &id), -EINVAL);
        cr_assert_eq(edfd_release(NULL, 1), -EINVAL);
        cr_assert_eq(edfd_snapshot_fetch(NULL, EDFD_SNAPSHOT_ALL, &s), -EINVAL);
        cr_assert_eq(edfd_subscribe(NULL, NULL, NULL), -EINVAL);
        cr_assert_eq(edfd_get_fd(NULL), -EINVAL);
        cr_assert_eq(edfd_snapshot_n_reservations(NULL), 0);
        cr_assert_null(edfd_snapshot_reservation(NULL, 0));
        cr_assert_eq(edfd_split_id(NULL, 1), 0);

        cr_assert_eq(edfd_request_new(&q), 0);
        cr_assert_eq(edfd_request_set_runtime(q, 0), -EINVAL, "a runtime of 0");
        cr_assert_eq(edfd_request_set_period(q, 0), -EINVAL, "a period of 0");
        cr_assert_eq(edfd_request_set_thread(q, -1, 0), -EINVAL, "a negative pid");
        cr_assert_eq(edfd_request_set_thread(q, 5, -1), -EINVAL, "a negative tid");
        cr_assert_eq(edfd_request_set_thread(q, 0, 5), -EINVAL, "a tid without its pid");

        /* With a handle on a bus where edfd runs: each failure is local (no error name), says what is
         * wrong, and the books do not change. */
        Harness *h = start();
        edfd *e = open_or_die();
        HarnessBooks before = harness_books_take(h);

        assert_fails(e, edfd_admit(e, NULL, &id), -EINVAL, NULL, "admit(NULL request)", "no request", NULL);
        assert_fails(e, edfd_admit(e, q, &id), -EINVAL, NULL, "admit without a runtime", "no runtime",
                     "edfd_request_set_runtime");
        cr_assert_eq(edfd_request_set_runtime(q, MS), 0);
        assert_fails(e, edfd_admit(e, q, &id), -EINVAL, NULL, "admit without a period", "no period", NULL);
        assert_fails(e, edfd_admit_split(e, q, 0, &sp), -EINVAL, NULL, "admit_split without a period", NULL, NULL);
        cr_assert_null(sp);
        assert_fails(e, edfd_snapshot_fetch(e, 0, &s), -EINVAL, NULL, "snapshot of nothing", NULL, NULL);
        assert_fails(e, edfd_snapshot_fetch(e, 64, &s), -EINVAL, NULL, "snapshot of an unknown part", NULL, NULL);
        cr_assert_null(s);
        assert_fails(e, edfd_subscribe(e, NULL, NULL), -EINVAL, NULL, "subscribe without a handler", "handler", NULL);
        assert_fails(e, edfd_group_create(e, NULL, MS, P100), -EINVAL, NULL, "group_create(NULL)", NULL, NULL);
        harness_books_assert_same(h, &before, "bad arguments through libedfd");

        /* A call that succeeds clears the last error. */
        cr_assert_eq(edfd_echo(e, 7, &v), 0);
        cr_assert_eq(v, 7);
        assert_cleared(e, "echo after failures");

        harness_books_free(&before);
        edfd_request_free(q);
        edfd_close(e);
        harness_stop(h);
}

Test(libedfd, refusals_carry_errno_name_and_message) {
        Harness *h = start();
        edfd *e = open_or_die();
        HarnessChild *c;
        edfd_request *q;
        uint64_t id = 0;

        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        HarnessBooks before = harness_books_take(h);

        q = request(20 * MS, 0, 10 * MS, NULL);
        cr_assert_eq(edfd_request_set_thread(q, c->pid, 0), 0);
        assert_fails(e, edfd_admit(e, q, &id), -EINVAL, EDFD_ERROR_INVALID_PARAMETERS, "runtime above period",
                     "runtime", NULL);
        edfd_request_free(q);

        q = request(MS, 0, P100, "no/such");
        cr_assert_eq(edfd_request_set_thread(q, c->pid, c->pid), 0);
        assert_fails(e, edfd_admit(e, q, &id), -ENOENT, EDFD_ERROR_NO_SUCH_GROUP, "an unknown group", "no/such",
                     NULL);
        edfd_request_free(q);

        q = request(20 * MS, 0, P100, "test/a");
        cr_assert_eq(edfd_request_set_thread(q, c->pid, c->pid), 0);
        assert_fails(e, edfd_admit(e, q, &id), -ENOSPC, EDFD_ERROR_OVER_BUDGET, "20% in a group of 10%", "test/a",
                     NULL);
        edfd_request_free(q);

        q = request(MS, 0, P100, NULL);
        cr_assert_eq(edfd_request_set_thread(q, harness_dead_pid(), 0), 0);
        assert_fails(e, edfd_admit(e, q, &id), -ESRCH, EDFD_ERROR_NO_SUCH_THREAD, "a thread that is gone", NULL,
                     NULL);
        edfd_request_free(q);

        assert_fails(e, edfd_release(e, 999999), -ENXIO, EDFD_ERROR_NO_SUCH_RESERVATION, "release of an unknown id",
                     NULL, NULL);
        assert_fails(e, edfd_release_thread(e, c->pid), -ENXIO, EDFD_ERROR_NO_SUCH_RESERVATION,
                     "release_thread of a thread with none", NULL, NULL);
        assert_fails(e, edfd_update(e, 999999, MS, 0, P100), -ENXIO, EDFD_ERROR_NO_SUCH_RESERVATION,
                     "update of an unknown id", NULL, NULL);
        assert_fails(e, edfd_group_create(e, "test/a", MS, P100), -EEXIST, EDFD_ERROR_GROUP_EXISTS,
                     "group_create of an existing group", "test/a", NULL);
        assert_fails(e, edfd_group_create(e, "none/x", MS, P100), -ENOENT, EDFD_ERROR_NO_SUCH_GROUP,
                     "group_create under a missing parent", "none", NULL);
        assert_fails(e, edfd_group_create(e, "test/big", 50 * MS, P100), -ENOSPC, EDFD_ERROR_OVER_BUDGET,
                     "group_create larger than the parent's free", "test", NULL);
        assert_fails(e, edfd_group_remove(e, "test/none"), -ENOENT, EDFD_ERROR_NO_SUCH_GROUP,
                     "group_remove of a missing group", NULL, NULL);
        assert_fails(e, edfd_release_process(e, c->pid), -ENXIO, EDFD_ERROR_NO_SUCH_RESERVATION,
                     "release_process of a process with none", "holds no reservation", NULL);
        harness_books_assert_same(h, &before, "refusals through libedfd");

        harness_books_free(&before);
        edfd_close(e);
        harness_stop(h);
}

Test(libedfd, admit_update_release_as_the_kernel_sees_them) {
        Harness *h = start();
        edfd *e = open_or_die();
        HarnessChild *c;
        edfd_request *q;
        uint64_t id = 0, id2 = 0;
        HarnessReservation *list;
        size_t n;

        cr_assert_eq(harness_spawn_child(h, 2, false, &c), 0);

        /* Another process's thread, in a named group, with a deadline and flags. */
        q = request(2 * MS, 50 * MS, P100, "test/b");
        cr_assert_eq(edfd_request_set_thread(q, c->pid, c->tids[1]), 0);
        cr_assert_eq(edfd_request_set_flags(q, EDFD_ADMIT_RECLAIM), 0);
        cr_assert_eq(edfd_admit(e, q, &id), 0, "admit: %s", edfd_error_message(e));
        assert_cleared(e, "admit");
        harness_assert_dl(c->tids[1], 2 * MS, 50 * MS, P100, SCHED_FLAG_RECLAIM);
        cr_assert_eq(harness_list_reservations(h, &list, &n), 0);
        const HarnessReservation *v = harness_find_reservation(list, n, id);
        cr_assert_not_null(v, "edfd's books have no reservation %" PRIu64, id);
        cr_assert_eq(v->pid, (uint32_t) c->pid);
        cr_assert_eq(v->tid, (uint32_t) c->tids[1]);
        cr_assert_str_eq(v->group, "test/b");
        harness_reservations_free(list, n);
        edfd_request_free(q);

        /* The default group, the main thread (tid 0 means the pid's main thread). */
        q = request(MS, 0, P100, NULL);
        cr_assert_eq(edfd_request_set_thread(q, c->pid, 0), 0);
        cr_assert_eq(edfd_admit(e, q, &id2), 0, "admit: %s", edfd_error_message(e));
        harness_assert_dl(c->pid, MS, P100, P100, 0);
        edfd_request_free(q);

        cr_assert_eq(edfd_update(e, id, 3 * MS, 0, P100), 0, "update: %s", edfd_error_message(e));
        harness_assert_dl(c->tids[1], 3 * MS, P100, P100, SCHED_FLAG_RECLAIM);
        cr_assert_eq(edfd_release(e, id), 0, "release: %s", edfd_error_message(e));
        harness_assert_other(c->tids[1]);
        assert_fails(e, edfd_release(e, id), -ENXIO, EDFD_ERROR_NO_SUCH_RESERVATION, "a second release", NULL, NULL);
        cr_assert_eq(edfd_release_process(e, c->pid), 1, "release_process: one released");
        harness_assert_other(c->pid);
        harness_assert_no_reservations(h, "after the releases");

        /* The calling thread itself (pid 0): admitted while it waits awake, then one job done. */
        q = request(5 * MS, 0, P100, NULL);
        cr_assert_eq(edfd_admit(e, q, &id), 0, "admit of the calling thread: %s", edfd_error_message(e));
        harness_assert_dl(gettid(), 5 * MS, P100, P100, 0);
        cr_assert_eq(edfd_job_done(), 0);
        cr_assert_eq(edfd_release_thread(e, gettid()), 0, "release_thread: %s", edfd_error_message(e));
        harness_assert_other(gettid());
        edfd_request_free(q);

        harness_assert_no_reservations(h, "at the end");
        edfd_close(e);
        harness_stop(h);
}

Test(libedfd, snapshot_matches_the_books) {
        Harness *h = start();
        edfd *e = open_or_die();
        HarnessChild *c;
        edfd_request *q;
        edfd_snapshot *s = NULL;
        uint64_t id = 0;
        bool seen_a = false;

        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        q = request(5 * MS, 0, P100, "test/a");
        cr_assert_eq(edfd_request_set_thread(q, c->pid, c->pid), 0);
        cr_assert_eq(edfd_admit(e, q, &id), 0, "admit: %s", edfd_error_message(e));
        edfd_request_free(q);

        cr_assert_eq(edfd_snapshot_fetch(e, EDFD_SNAPSHOT_ALL, &s), 0, "snapshot: %s", edfd_error_message(e));
        cr_assert_eq(edfd_snapshot_n_reservations(s), 1);
        const edfd_reservation *v = edfd_snapshot_reservation(s, 0);
        cr_assert_eq(edfd_reservation_id(v), id);
        cr_assert_eq(edfd_reservation_pid(v), c->pid);
        cr_assert_eq(edfd_reservation_tid(v), c->pid);
        cr_assert_str_eq(edfd_reservation_group(v), "test/a");
        cr_assert_eq(edfd_reservation_runtime(v), 5 * MS);
        cr_assert_eq(edfd_reservation_deadline(v), P100);
        cr_assert_eq(edfd_reservation_period(v), P100);
        cr_assert_eq(edfd_reservation_bandwidth(v), EDFD_BW_UNIT / 20);
        cr_assert_eq(edfd_reservation_uid(v), 0);
        cr_assert_null(edfd_snapshot_reservation(s, 1), "past the end is NULL");

        /* The root "/" and the three of basic.yaml. */
        cr_assert_eq(edfd_snapshot_n_groups(s), 4, "%zu groups, the first %s, the last %s", edfd_snapshot_n_groups(s),
                     edfd_group_path(edfd_snapshot_group(s, 0)),
                     edfd_group_path(edfd_snapshot_group(s, edfd_snapshot_n_groups(s) - 1)));
        for (size_t i = 0; i < edfd_snapshot_n_groups(s); i++) {
                const edfd_group *g = edfd_snapshot_group(s, i);
                if (streq(edfd_group_path(g), "test/a")) {
                        seen_a = true;
                        cr_assert_eq(edfd_group_bandwidth(g), EDFD_BW_UNIT / 10);
                        cr_assert_eq(edfd_group_allocated(g), EDFD_BW_UNIT / 20);
                        cr_assert_eq(edfd_group_n_reservations(g), 1);
                        cr_assert_str_eq(edfd_group_cgroup(g), "");
                }
                if (streq(edfd_group_path(g), "test/b"))
                        cr_assert_str_neq(edfd_group_cgroup(g), "", "test/b is bound to a cgroup");
        }
        cr_assert(seen_a, "the snapshot has group test/a");

        cr_assert_str_eq(edfd_status_version(s), EDFD_VERSION);
        cr_assert_eq(edfd_status_n_reservations(s), 1);
        cr_assert_eq(edfd_status_n_groups(s), 3, "status: %u groups (the root is not counted)", edfd_status_n_groups(s));
        cr_assert_geq(edfd_status_allocated(s), EDFD_BW_UNIT / 20);
        cr_assert_gt(edfd_status_capacity(s), 0);
        s = edfd_snapshot_free(s);

        /* Only what was asked: groups alone. */
        cr_assert_eq(edfd_snapshot_fetch(e, EDFD_SNAPSHOT_GROUPS, &s), 0);
        cr_assert_eq(edfd_snapshot_n_reservations(s), 0);
        cr_assert_eq(edfd_snapshot_n_groups(s), 4);
        edfd_snapshot_free(s);

        cr_assert_eq(edfd_release(e, id), 0);
        edfd_close(e);
        harness_stop(h);
}

/* Events, recorded by the handler. */
typedef struct Recorded {
        edfd_event_type type;
        uint64_t id;
        pid_t pid;
        int cpu;
        char group[64], reason[64];
} Recorded;

typedef struct Recorder {
        Recorded ev[64];
        size_t n;
} Recorder;

static int record(edfd *e, const edfd_event *ev, void *userdata) {
        Recorder *rec = userdata;

        if (rec->n < sizeof rec->ev / sizeof rec->ev[0]) {
                Recorded *x = &rec->ev[rec->n++];
                x->type = edfd_event_get_type(ev);
                x->id = edfd_event_id(ev);
                x->pid = edfd_event_pid(ev);
                x->cpu = edfd_event_cpu(ev);
                snprintf(x->group, sizeof x->group, "%s", edfd_event_group(ev));
                snprintf(x->reason, sizeof x->reason, "%s", edfd_event_reason(ev));
        }
        return 0;
}

/* Process events until one of type (with that id unless 0) was recorded, for at most 5 s. */
static const Recorded *wait_event(edfd *e, Recorder *rec, edfd_event_type type, uint64_t id) {
        for (int round = 0; round < 100; round++) {
                for (size_t i = 0; i < rec->n; i++)
                        if (rec->ev[i].type == type && (id == 0 || rec->ev[i].id == id))
                                return &rec->ev[i];
                int r = edfd_wait(e, 50000);
                cr_assert_geq(r, 0, "edfd_wait: %s", strerror(-r));
                while ((r = edfd_process(e)) > 0)
                        ;
                cr_assert_geq(r, 0, "edfd_process: %s", strerror(-r));
        }
        cr_assert_fail("no event of type %d (id %" PRIu64 ") within 5 s; %zu events seen", type, id, rec->n);
        return NULL;
}

Test(libedfd, events_follow_edfd_across_a_restart) {
        Harness *h = start();
        edfd *e = open_or_die(), *caller = open_or_die();
        Recorder rec = {};
        HarnessChild *c;
        edfd_request *q;
        uint64_t id = 0, timeout;
        const Recorded *x;

        cr_assert_eq(edfd_subscribe(e, record, &rec), 0, "subscribe: %s", edfd_error_message(e));
        cr_assert_geq(edfd_get_fd(e), 0);
        cr_assert_geq(edfd_get_events(e), 0); /* 0 while messages wait to be processed */
        cr_assert_eq(edfd_get_timeout(e, &timeout), 0);
        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);

        q = request(MS, 0, P100, NULL);
        cr_assert_eq(edfd_request_set_thread(q, c->pid, 0), 0);
        cr_assert_eq(edfd_admit(caller, q, &id), 0, "admit: %s", edfd_error_message(caller));
        x = wait_event(e, &rec, EDFD_EVENT_ADDED, id);
        cr_assert_eq(x->pid, c->pid);
        cr_assert_str_eq(x->group, "test/a");
        cr_assert_str_eq(x->reason, "requested");
        cr_assert_eq(x->cpu, -1, "global placement: no CPU in the event, got %d", x->cpu);

        cr_assert_eq(edfd_update(caller, id, 2 * MS, 0, P100), 0);
        x = wait_event(e, &rec, EDFD_EVENT_CHANGED, id);
        cr_assert_eq(x->cpu, -1, "global placement: no CPU in the change, got %d", x->cpu);
        cr_assert_eq(edfd_group_create(caller, "test/c", MS, P100), 0, "group_create: %s", edfd_error_message(caller));
        wait_event(e, &rec, EDFD_EVENT_GROUPS_CHANGED, 0);
        cr_assert_eq(edfd_group_remove(caller, "test/c"), 0);

        /* edfd goes away and comes back: the subscriber hears both, and is subscribed again. */
        cr_assert_eq(harness_kill_daemon(h, SIGTERM), 0);
        wait_event(e, &rec, EDFD_EVENT_DAEMON_STOPPED, 0);
        assert_fails(caller, edfd_release(caller, id), -EHOSTUNREACH, SD_BUS_ERROR_SERVICE_UNKNOWN,
                     "release while edfd is down", NULL, NULL);
        cr_assert_eq(harness_start_daemon(h), 0);
        x = wait_event(e, &rec, EDFD_EVENT_DAEMON_STARTED, 0);
        cr_assert(x->reason[0] == ':', "DAEMON_STARTED names the unique name, got \"%s\"", x->reason);

        /* The restarted edfd kept the reservation; its release reaches the subscriber. */
        cr_assert_eq(edfd_release(caller, id), 0, "release after the restart: %s", edfd_error_message(caller));
        x = wait_event(e, &rec, EDFD_EVENT_REMOVED, id);
        cr_assert_str_eq(x->reason, "requested");

        cr_assert_eq(edfd_unsubscribe(e), 0);
        edfd_request_free(q);
        edfd_close(caller);
        edfd_close(e);
        harness_stop(h);
}

Test(libedfd, a_handle_belongs_to_the_process_that_opened_it) {
        Harness *h = start();
        edfd *e = open_or_die();
        uint64_t v = 0;
        int status;
        pid_t pid;

        /* The parent's ids are cached before the fork (an admission of the calling thread). */
        edfd_request *self = request(MS, 0, P100, NULL);
        uint64_t self_id = 0;
        cr_assert_eq(edfd_admit(e, self, &self_id), 0, "admit: %s", edfd_error_message(e));
        cr_assert_eq(edfd_release(e, self_id), 0);
        edfd_request_free(self);

        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                /* The child: the inherited handle refuses with -ECHILD and says why; a new one works. */
                edfd *mine = NULL;
                uint64_t w = 0;
                int code = 0;

                if (edfd_echo(e, 1, &w) != -ECHILD || !strstr(edfd_error_message(e), "fork"))
                        code |= 1;
                edfd_close(e);
                if (edfd_open(&mine) < 0 || edfd_echo(mine, 2, &w) < 0 || w != 2)
                        code |= 2;
                /* The calling thread is the child's own (the library forgets the parent's ids at
                 * fork): admitted, edfd's books show the child's pid and tid. */
                edfd_request *q = NULL;
                edfd_snapshot *s = NULL;
                uint64_t id = 0;
                if (edfd_request_new(&q) < 0 || edfd_request_set_runtime(q, MS) < 0 ||
                    edfd_request_set_period(q, P100) < 0 || edfd_admit(mine, q, &id) < 0 ||
                    edfd_snapshot_fetch(mine, EDFD_SNAPSHOT_RESERVATIONS, &s) < 0 ||
                    edfd_snapshot_n_reservations(s) != 1 ||
                    edfd_reservation_pid(edfd_snapshot_reservation(s, 0)) != getpid() ||
                    edfd_reservation_tid(edfd_snapshot_reservation(s, 0)) != gettid() ||
                    edfd_release(mine, id) < 0)
                        code |= 4;
                edfd_snapshot_free(s);
                edfd_request_free(q);
                edfd_close(mine);
                _exit(code);
        }
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "child: inherited handle %s, own handle %s, self-admission %s",
                  WEXITSTATUS(status) & 1 ? "did not refuse" : "refused", WEXITSTATUS(status) & 2 ? "failed" : "worked",
                  WEXITSTATUS(status) & 4 ? "failed or had the wrong ids" : "had the child's ids");
        harness_assert_no_reservations(h, "after the child released its own reservation");
        /* The child's close did not touch the parent's connection. */
        cr_assert_eq(edfd_echo(e, 3, &v), 0, "echo in the parent after the child closed: %s", edfd_error_message(e));
        cr_assert_eq(v, 3);
        edfd_close(e);
        harness_stop(h);
}

/* Two threads, a handle each, admitting and releasing at once. */
typedef struct Worker {
        HarnessChild *child;
        int failures;
        char why[256];
} Worker;

static void *worker(void *p) {
        Worker *w = p;
        edfd *e = NULL;
        edfd_request *q = NULL;
        uint64_t id;

        if (edfd_open(&e) < 0 || edfd_request_new(&q) < 0 || edfd_request_set_runtime(q, MS) < 0 ||
            edfd_request_set_period(q, P100) < 0 || edfd_request_set_thread(q, w->child->pid, 0) < 0) {
                w->failures = 1;
                snprintf(w->why, sizeof w->why, "setup failed");
        }
        for (int i = 0; i < 50 && !w->failures; i++) {
                if (edfd_admit(e, q, &id) < 0 || edfd_release(e, id) < 0) {
                        w->failures++;
                        snprintf(w->why, sizeof w->why, "round %d: %s", i, edfd_error_message(e));
                }
        }
        edfd_request_free(q);
        edfd_close(e);
        return NULL;
}

Test(libedfd, one_handle_per_thread) {
        Harness *h = start();
        Worker w[2] = {};
        pthread_t t[2];

        for (int i = 0; i < 2; i++) {
                cr_assert_eq(harness_spawn_child(h, 1, false, &w[i].child), 0);
                cr_assert_eq(pthread_create(&t[i], NULL, worker, &w[i]), 0);
        }
        for (int i = 0; i < 2; i++) {
                cr_assert_eq(pthread_join(t[i], NULL), 0);
                cr_assert_eq(w[i].failures, 0, "thread %d: %s", i, w[i].why);
        }
        harness_assert_no_reservations(h, "after two threads admitted and released 50 times each");
        harness_stop(h);
}

Test(libedfd, no_bus_is_an_error_not_an_abort) {
        edfd *e = NULL;
        char path[] = "/tmp/libedfd-no-bus-XXXXXX";
        char address[128];

        cr_assert_not_null(mkdtemp(path));
        snprintf(address, sizeof address, "unix:path=%s/none", path);
        cr_assert_eq(setenv("DBUS_SYSTEM_BUS_ADDRESS", address, 1), 0);
        int r = edfd_open(&e);
        cr_assert_lt(r, 0, "edfd_open on a bus that does not exist succeeded");
        cr_assert_null(e);
        cr_assert_eq(rmdir(path), 0);
}

/* A process that waits for a word on fd, then execs argv (a program that has not started yet, as a
 * container's runtime init is at createRuntime). */
static pid_t spawn_parked(int *ret_go, char *const argv[]) {
        int p[2];
        pid_t pid;

        cr_assert_eq(pipe(p), 0);
        pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) {
                char c;
                close(p[1]);
                if (read(p[0], &c, 1) == 1)
                        execv(argv[0], argv);
                _exit(127);
        }
        close(p[0]);
        *ret_go = p[1];
        return pid;
}

/* The reservation of thread tid in edfd's books, waited for up to timeout_ms: its id, or 0. */
static uint64_t wait_admitted(Harness *h, pid_t tid, unsigned timeout_ms) {
        for (unsigned t = 0; t <= timeout_ms; t += 5) {
                HarnessReservation *list;
                size_t n;
                uint64_t id = 0;

                cr_assert_eq(harness_list_reservations(h, &list, &n), 0);
                for (size_t i = 0; i < n; i++)
                        if (list[i].tid == (uint32_t) tid)
                                id = list[i].id;
                harness_reservations_free(list, n);
                if (id)
                        return id;
                usleep(5000);
        }
        return 0;
}

/* edfd's WaitingAtStart, through a status snapshot. */
static unsigned waiting(edfd *e) {
        edfd_snapshot *s = NULL;
        unsigned n;

        cr_assert_eq(edfd_snapshot_fetch(e, EDFD_SNAPSHOT_STATUS, &s), 0, "status: %s", edfd_error_message(e));
        n = edfd_status_waiting_at_start(s);
        edfd_snapshot_free(s);
        return n;
}

Test(libedfd, admit_at_start_waits_for_the_exec_and_the_first_sleep) {
        Harness *h = start();
        edfd *e = open_or_die();
        char *sleeper[] = { (char *) "/bin/sleep", (char *) "30", NULL };
        char *spinner[] = { (char *) "/bin/sh", (char *) "-c", (char *) "while :; do :; done", NULL };
        edfd_request *q;
        int go, go2, status;
        pid_t child = spawn_parked(&go, sleeper), child2;
        char comm[64] = "";
        FILE *f;

        /* Refused at the call, by name, and nothing watched or admitted. */
        q = request(MS, 0, P100, NULL);
        assert_fails(e, edfd_admit_at_start(e, q, 0), -EINVAL, NULL, "a bound of 0", "bound", NULL);
        cr_assert_eq(edfd_request_set_thread(q, child, child + 1), 0);
        assert_fails(e, edfd_admit_at_start(e, q, 1000 * MS), -EINVAL, NULL, "another thread than the main one",
                     "main thread", NULL);
        cr_assert_eq(edfd_request_set_thread(q, child, 0), 0);
        assert_fails(e, edfd_admit_at_start(e, q, 3601 * 1000 * MS), -EINVAL, EDFD_ERROR_INVALID_PARAMETERS,
                     "a bound above an hour", "at most 1h", NULL);
        cr_assert_eq(edfd_request_set_group(q, "test/nosuch"), 0);
        assert_fails(e, edfd_admit_at_start(e, q, 1000 * MS), -ENOENT, EDFD_ERROR_NO_SUCH_GROUP, "an unknown group",
                     "test/nosuch", NULL);
        cr_assert_eq(edfd_request_set_group(q, NULL), 0);
        cr_assert_eq(edfd_request_set_runtime(q, 2 * P100), 0);
        assert_fails(e, edfd_admit_at_start(e, q, 1000 * MS), -EINVAL, EDFD_ERROR_INVALID_PARAMETERS,
                     "a runtime above the period", NULL, NULL);
        cr_assert_eq(edfd_request_set_runtime(q, 20 * MS), 0); /* 20% in test/a, which has 10% */
        cr_assert_eq(edfd_request_set_thread(q, child, 0), 0);
        assert_fails(e, edfd_admit_at_start(e, q, 1000 * MS), -ENOSPC, EDFD_ERROR_OVER_BUDGET,
                     "more than the group has: decided at the call", "test/a", NULL);
        cr_assert_eq(edfd_request_set_runtime(q, MS), 0);
        cr_assert_eq(edfd_request_set_thread(q, 4194304, 0), 0); /* above the kernel's pid_max */
        assert_fails(e, edfd_admit_at_start(e, q, 1000 * MS), -ESRCH, EDFD_ERROR_NO_SUCH_THREAD, "no such process",
                     "4194304", NULL);
        harness_assert_no_reservations(h, "after the refusals");

        /* Watched: nothing admitted before the exec, the same process refused a second watch. */
        cr_assert_eq(edfd_request_set_thread(q, child, 0), 0);
        cr_assert_eq(edfd_admit_at_start(e, q, 1000 * MS), 0, "admit at start: %s", edfd_error_message(e));
        assert_cleared(e, "admit at start");
        assert_fails(e, edfd_admit_at_start(e, q, 1000 * MS), -EINVAL, EDFD_ERROR_INVALID_PARAMETERS,
                     "a second watch of one process", "already waits for its start", NULL);
        usleep(50 * 1000);
        harness_assert_no_reservations(h, "before the exec");
        harness_assert_other(child);
        cr_assert_eq(waiting(e), 1, "status: one process waits for its start");

        /* The exec, then its first sleep: admitted, as the program (sleep). */
        cr_assert_eq(write(go, "g", 1), 1);
        close(go);
        cr_assert_neq(wait_admitted(h, child, 2000), 0, "not admitted within 2 s of its exec");
        harness_assert_dl(child, MS, P100, P100, 0);
        cr_assert_eq(waiting(e), 0, "status: nothing waits after the admission");
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/comm", (int) child);
        f = fopen(path, "r");
        cr_assert_not_null(f);
        cr_assert_not_null(fgets(comm, sizeof comm, f));
        fclose(f);
        cr_assert_str_eq(comm, "sleep\n", "admitted before its exec: comm %s", comm);
        cr_assert_eq(edfd_release_process(e, child), 1);
        kill(child, SIGKILL);
        waitpid(child, &status, 0);

        /* A program that never sleeps: admitted only because its bound passed (it has no first
         * sleep), and not at its exec: the books are empty right after it is let go. */
        child2 = spawn_parked(&go2, spinner);
        cr_assert_eq(edfd_request_set_thread(q, child2, 0), 0);
        cr_assert_eq(edfd_admit_at_start(e, q, 300 * MS), 0, "admit at start: %s", edfd_error_message(e));
        cr_assert_eq(write(go2, "g", 1), 1);
        close(go2);
        harness_assert_no_reservations(h, "right after the spinner was let go, long before its bound");
        cr_assert_neq(wait_admitted(h, child2, 3000), 0, "not admitted within 3 s");
        harness_assert_dl(child2, MS, P100, P100, 0);
        kill(child2, SIGKILL);
        waitpid(child2, &status, 0);

        /* One that ends before its exec: the watch ends with it, and the pid may be watched no more. */
        child = spawn_parked(&go, sleeper);
        cr_assert_eq(edfd_request_set_thread(q, child, 0), 0);
        cr_assert_eq(edfd_admit_at_start(e, q, 1000 * MS), 0, "admit at start: %s", edfd_error_message(e));
        close(go); /* EOF: it exits without an exec */
        waitpid(child, &status, 0);
        usleep(50 * 1000);
        harness_assert_no_reservations(h, "after a watched process ended before its exec");

        edfd_request_free(q);
        edfd_close(e);
        harness_stop(h);
}
