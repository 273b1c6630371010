/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The Plan method against a hostile caller (issue 41), on the real daemon: one Plan of 1,024
 * tasks from nobody used to run the exact test and the split search on every CPU of a partitioned
 * group for seconds on the event loop, booked as root's. Now:
 * - a Plan over its work limit is refused (LimitExceeded) with the limit named, and changes nothing;
 * - repeated costly Plans use up the caller's budget, and the refusal says so;
 * - a Plan within its limit still decides as before, and root's calls are answered after it;
 * - the plan's tasks are decided against the caller's own rules: the group's users: list and the
 *   per-user limits (the plan's earlier tasks counted as the caller's), not root's.
 *
 * The costly case needs partitions: it makes them on this machine's cgroup v1 cpusets (one per CPU),
 * so it runs through test-cpuset.sh, which saves the cpuset state and restores it afterwards, even
 * when this binary fails. It skips, with the reason, where no v1 cpuset hierarchy or fewer than two
 * CPUs exist (the VM test covers cgroup v2). The Plans run in children that drop to nobody and call
 * edfd on their own connection (the agent's calls take no arrays). */

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "agent.h"
#include "harness.h"
#include "shared/protocol.h"

#define MS HARNESS_MSEC
#define US (HARNESS_MSEC / 1000)
#define NOBODY 65534
#define V1_CPUSET "/sys/fs/cgroup/cpuset"

TestSuite(hostile_plan, .fini = harness_fini, .timeout = 300);

typedef struct Task {
        const char *name, *group;
        uint64_t runtime, deadline, period;
        bool split;
} Task;

#define RESULTS_MAX 16
typedef struct PlanReply {
        int r;
        char error[128];
        char message[640];
        unsigned n;                   /* results */
        char outcome[RESULTS_MAX][16];
        uint32_t cpu[RESULTS_MAX];
        char reason[RESULTS_MAX][256];
} PlanReply;

static int plan_call(sd_bus *bus, const Task *t, size_t n, PlanReply *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        int r;

        *ret = (PlanReply) {};
        r = sd_bus_message_new_method_call(bus, &m, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "Plan");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sstttb)");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append(m, "(sstttb)", t[i].name, t[i].group, t[i].runtime, t[i].deadline,
                                          t[i].period, (int) t[i].split);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r < 0)
                return ret->r = r;
        r = sd_bus_call(bus, m, 120 * 1000000ULL, &e, &reply);
        ret->r = r;
        if (r < 0) {
                snprintf(ret->error, sizeof ret->error, "%s", e.name ?: "?");
                snprintf(ret->message, sizeof ret->message, "%s", e.message ?: strerror(-r));
                return r;
        }
        r = sd_bus_message_enter_container(reply, 'a', "(ssuuttss)");
        while (r >= 0) {
                const char *outcome, *group, *test, *reason;
                uint32_t cpu, cpu_b;
                uint64_t r1, r2;

                r = sd_bus_message_read(reply, "(ssuuttss)", &outcome, &group, &cpu, &cpu_b, &r1, &r2, &test, &reason);
                if (r <= 0)
                        break;
                if (ret->n < RESULTS_MAX) {
                        snprintf(ret->outcome[ret->n], sizeof ret->outcome[0], "%s", outcome);
                        snprintf(ret->reason[ret->n], sizeof ret->reason[0], "%s", reason);
                        ret->cpu[ret->n] = cpu;
                }
                ret->n++;
        }
        return ret->r = r < 0 ? r : 0;
}

/* Plan as uid, from a child of that uid on its own connection; the reply comes back over a socket. */
static PlanReply plan_as(Harness *h, uid_t uid, const Task *t, size_t n) {
        PlanReply rep = {};
        pid_t parent = getpid(), pid;
        int sv[2], st;

        cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                sd_bus *bus = NULL;
                int fd = agent_keep_only_fd(sv[1]);

                rep.r = agent_drop_to(uid);
                agent_die_with_parent(parent);
                if (rep.r == 0 && (rep.r = sd_bus_new(&bus)) >= 0 &&
                    (rep.r = sd_bus_set_address(bus, h->bus_address)) >= 0 &&
                    (rep.r = sd_bus_set_bus_client(bus, 1)) >= 0 && (rep.r = sd_bus_start(bus)) >= 0)
                        (void) plan_call(bus, t, n, &rep);
                else
                        snprintf(rep.message, sizeof rep.message, "cannot connect as uid %d: %s", (int) uid,
                                 strerror(-rep.r));
                (void) send(fd, &rep, sizeof rep, 0);
                _exit(0);
        }
        close(sv[1]);
        cr_assert_eq(recv(sv[0], &rep, sizeof rep, 0), (ssize_t) sizeof rep, "the planning child died");
        close(sv[0]);
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        return rep;
}

static void assert_answers(Harness *h, const char *after_what) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        uint64_t v = 0;
        int r;

        r = harness_call(h, &e, &reply, "Echo", "t", UINT64_C(0x5eed));
        cr_assert(r >= 0 && sd_bus_message_read(reply, "t", &v) >= 0 && v == 0x5eed,
                  "edfd does not answer root's Echo after %s: %s", after_what, e.message ? e.message : strerror(-r));
}

/* A costly Plan of the kind the review found: 1,024 small tasks with constrained deadlines and
 * periods that share no small factor, 90% of a CPU in all, each decided by the processor-demand
 * walk on every CPU, over more and more tasks as the plan books them. Offline (`edfctl plan`) this
 * takes about 300 million work units, half a second of this machine; on the event loop, seconds. */
static Task *costly_plan(size_t *ret_n) {
        static char names[1024][12];
        size_t n = 1024;
        Task *t = calloc(n, sizeof *t);

        cr_assert(t);
        for (size_t i = 0; i < n; i++) {
                uint64_t period = 10000 + (i * 7919) % 9973; /* us */

                snprintf(names[i], sizeof names[i], "t%zu", i);
                t[i] = (Task) { names[i], "rt", period * 9 / 10 / n * US, (period / 2 + (i * 31) % 97) * US,
                                period * US, true };
        }
        *ret_n = n;
        return t;
}

static const char partitioned_config[] =
        "placement: partitioned\n"
        "partitions:\n"
        "  rt0: { cpus: \"0\" }\n"
        "  rt1: { cpus: \"1\" }\n"
        "groups:\n"
        "  rt:\n"
        "    bandwidth: 180%\n";

/* Skip unless edfd can make partitions here; then start it with them and check that it did. */
static Harness *start_partitioned(void) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *note = NULL;
        unsigned n = 0;
        struct stat st;
        Harness *h;

        if (stat(V1_CPUSET "/cpuset.sched_load_balance", &st) < 0)
                cr_skip_test("no cgroup v1 cpuset hierarchy at " V1_CPUSET " (the VM test covers cgroup v2)");
        if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
                cr_skip_test("needs two CPUs for two partitions");
        harness_require();
        cr_assert_eq(harness_start(&h, partitioned_config, NULL), 0);
        cr_assert_geq(harness_call(h, &e, &reply, "ListPartitions", ""), 0, "ListPartitions: %s", e.message);
        cr_assert_geq(sd_bus_message_read(reply, "s", &note), 0);
        cr_assert_geq(sd_bus_message_enter_container(reply, 'a', "(" EDFD_PARTITION_ENTRY ")"), 0);
        while (sd_bus_message_skip(reply, "(" EDFD_PARTITION_ENTRY ")") > 0)
                n++;
        cr_assert_eq(n, 2, "edfd made %u partitions, not 2: %s", n, note ? note : "");
        return h;
}

Test(hostile_plan, costly_plan_refused_with_its_limit) {
        Harness *h = start_partitioned();
        size_t n;
        _cleanup_free_ Task *worst = costly_plan(&n);
        HarnessBooks before = harness_books_take(h);
        PlanReply rep;
        unsigned used_up_after = 0;

        rep = plan_as(h, NOBODY, worst, n);
        cr_assert_eq(rep.r < 0, true,
                     "nobody's plan of %zu costly tasks was answered (%u results: %s %s, %s %s): it must be refused", n,
                     rep.n, rep.outcome[0], rep.reason[0], rep.outcome[1], rep.reason[1]);
        cr_assert_str_eq(rep.error, EDFD_ERROR_LIMIT_EXCEEDED, "%s", rep.message);
        cr_assert(strstr(rep.message, "plan too costly: more than 2000000 work units by task ") &&
                          strstr(rep.message, "limit 2000000 per call"),
                  "the refusal names the limit: %s", rep.message);
        assert_answers(h, "a costly plan");
        harness_books_assert_same(h, &before, "a costly plan refused");

        /* A plan within its limit still works, for nobody too, and decides as Admit would. */
        Task small[] = {
                { "a", "rt", 5 * MS, 10 * MS, 10 * MS, false },
                { "b", "rt", 5 * MS, 10 * MS, 10 * MS, false },
                { "c", "rt", 9 * MS, 10 * MS, 10 * MS, false },
        };
        rep = plan_as(h, 0, small, ELEMENTSOF(small));
        cr_assert_eq(rep.r, 0, "root's small plan: %s %s", rep.error, rep.message);
        rep = plan_as(h, NOBODY, small, ELEMENTSOF(small));
        cr_assert_eq(rep.r, 0, "nobody's small plan: %s %s", rep.error, rep.message);
        cr_assert_eq(rep.n, 3);
        cr_assert_str_eq(rep.outcome[0], "placed");
        cr_assert_str_eq(rep.outcome[1], "placed");
        cr_assert_neq(rep.cpu[0], rep.cpu[1], "two halves of a CPU each: one on each CPU");
        cr_assert_str_eq(rep.outcome[2], "refused", "90%% on CPUs with 45%% left: %s", rep.reason[2]);
        harness_books_assert_same(h, &before, "plans");

        /* Costly plans again: the budget per user runs out, and the refusal says so. */
        for (unsigned i = 1; i <= 20 && !used_up_after; i++) {
                rep = plan_as(h, NOBODY, worst, n);
                cr_assert_str_eq(rep.error, EDFD_ERROR_LIMIT_EXCEEDED, "costly plan %u: %s", i, rep.message);
                if (strstr(rep.message, "plan budget used up"))
                        used_up_after = i;
                else
                        cr_assert(strstr(rep.message, "plan too costly"), "costly plan %u: %s", i, rep.message);
        }
        cr_assert_gt(used_up_after, 0, "20 costly plans in a row never used up nobody's budget");
        cr_assert(strstr(rep.message, "user nobody: plan budget used up: 10000000 work units per 10 s"), "%s",
                  rep.message);
        /* Root has no budget: its plans are still answered. */
        rep = plan_as(h, 0, small, ELEMENTSOF(small));
        cr_assert_eq(rep.r, 0, "root's plan after nobody's budget ran out: %s %s", rep.error, rep.message);
        assert_answers(h, "the budget ran out");
        harness_books_assert_same(h, &before, "costly plans refused");
        harness_books_free(&before);
        harness_stop(h);
}

/* Global placement, no partitions needed: the tasks are decided against the caller's own rules. */
static const char limits_config[] =
        "default-group: open\n"
        "limits:\n"
        "  nobody:\n"
        "    reservations: 3\n"
        "    bandwidth: 25%\n"
        "groups:\n"
        "  open:\n"
        "    bandwidth: 80%\n"
        "  closed:\n"
        "    bandwidth: 10%\n"
        "    users: [root]\n";

Test(hostile_plan, tasks_checked_as_the_callers) {
        Harness *h;
        HarnessBooks before;
        PlanReply rep;
        Task t[] = {
                { "one", "open", 1 * MS, 0, 100 * MS, false },
                { "two", "open", 1 * MS, 0, 100 * MS, false },
                { "big", "open", 30 * MS, 0, 100 * MS, false },
                { "three", "open", 1 * MS, 0, 100 * MS, false },
                { "four", "open", 1 * MS, 0, 100 * MS, false },
                { "shut", "closed", 1 * MS, 0, 100 * MS, false },
        };

        harness_require();
        cr_assert_eq(harness_start(&h, limits_config, NULL), 0);
        before = harness_books_take(h);

        rep = plan_as(h, NOBODY, t, ELEMENTSOF(t));
        cr_assert_eq(rep.r, 0, "%s %s", rep.error, rep.message);
        cr_assert_eq(rep.n, ELEMENTSOF(t));
        cr_assert_str_eq(rep.outcome[0], "placed");
        cr_assert_str_eq(rep.outcome[1], "placed");
        cr_assert_str_eq(rep.outcome[2], "refused", "30%% is above nobody's 25%%");
        cr_assert(strstr(rep.reason[2], "user nobody") && strstr(rep.reason[2], "bandwidth"), "%s", rep.reason[2]);
        cr_assert_str_eq(rep.outcome[3], "placed");
        cr_assert_str_eq(rep.outcome[4], "refused", "a fourth reservation is above nobody's 3");
        cr_assert(strstr(rep.reason[4], "user nobody") && strstr(rep.reason[4], "reservations"), "%s", rep.reason[4]);
        cr_assert_str_eq(rep.outcome[5], "refused", "closed's users: leave nobody out");
        cr_assert(strstr(rep.reason[5], "does not allow uid 65534"), "%s", rep.reason[5]);

        /* Root's plan of the same tasks: no per-user limits, every group open to it. */
        rep = plan_as(h, 0, t, ELEMENTSOF(t));
        cr_assert_eq(rep.r, 0, "%s %s", rep.error, rep.message);
        for (size_t i = 0; i < ELEMENTSOF(t); i++)
                cr_assert_str_eq(rep.outcome[i], "placed", "root's task %zu: %s", i, rep.reason[i]);
        harness_books_assert_same(h, &before, "plans as nobody and root");
        harness_books_free(&before);
        harness_stop(h);
}
