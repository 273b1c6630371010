/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The admission module (core/admission.h): every refusal, the order of the checks (a request that
 * breaks two rules gets the first one's outcome), the edges, and the daemon's messages of today,
 * byte for byte. No root, no kernel: the thread's facts come from the table. */

#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/admission.h"
#include "core/bandwidth.h"
#include "core/duration.h"
#include "shared/protocol.h"

#define US NSEC_PER_USEC
#define MS NSEC_PER_MSEC
#define P100 (100 * MS)
#define PMIN (100 * US)
#define PMAX UINT64_C(4194304000)
#define I32 UINT64_C(2147483647)

/* The kernel's to_ratio(), as a constant expression for the tables. */
#define BW(runtime, period) ((uint64_t) (((unsigned __int128) (runtime) << BW_SHIFT) / (period)))

static uint64_t bw(uint64_t runtime, uint64_t period) {
        return BW(runtime, period);
}

/* ---- the fixture ----
 *
 *   /        400%
 *   open     50%, cgroup "open", anyone; holds reservation 1 (pid = tid = 500, uid 1000, 10%)
 *   audio    50%, users: [bob]
 *   nobody   10%, users: [] (nobody but root)
 *   small    5% */

static Group *mkgroup(Tree *t, const char *path, uint64_t runtime, char *const *users, const char *cgroup) {
        GroupSpec spec = { .runtime = runtime, .period = P100, .fork = _FORK_POLICY_UNSET,
                           .threads = _FORK_POLICY_UNSET, .users = users, .cgroup = cgroup };
        Refusal rf;
        Group *g = NULL;

        cr_assert_eq(group_create(t, path, &spec, &g, &rf), 0, "group %s", path);
        return g;
}

static Tree *fixture(const DlLimits *limits) {
        static char *const bob[] = { (char *) "bob", NULL };
        static char *const none[] = { NULL };
        Tree *t = NULL;
        Group *open;
        Refusal rf;

        cr_assert_eq(tree_new(&t, 4 * BW_UNIT, limits ? limits : &DL_LIMITS_DEFAULT, FORK_SPLIT, FORK_NONE, 0), 0);
        open = mkgroup(t, "open", 50 * MS, NULL, "open");
        mkgroup(t, "audio", 50 * MS, bob, NULL);
        mkgroup(t, "nobody", 10 * MS, none, NULL);
        mkgroup(t, "small", 5 * MS, NULL, NULL);
        ReservationSpec s = { .pid = 500, .tid = 500, .uid = 1000, .params = { 10 * MS, 0, P100 } };
        cr_assert_eq(reservation_admit(t, open, &s, NULL, &rf), 0);
        return t;
}

/* ---- the probe ---- */

typedef struct Probe {
        int ret;
        ThreadFacts facts;
        unsigned calls;
        uint32_t pid, tid;
} Probe;

static int probe(void *userdata, uint32_t pid, uint32_t tid, ThreadFacts *ret) {
        Probe *p = userdata;

        p->calls++;
        p->pid = pid;
        p->tid = tid;
        if (p->ret < 0)
                return p->ret;
        *ret = p->facts;
        return 0;
}

/* ---- Admit: the table ---- */

typedef struct DecideCase {
        const char *name;
        uint64_t pid, tid;
        const char *group, *default_group;
        DlParams params;
        uint64_t flags;
        AdmissionCaller caller;
        bool may_move, cgroups_usable, moves_process;
        int probe_ret;
        ThreadFacts facts;
        uint64_t next_id;           /* 0: the tree's */
        int want;                   /* 0, an outcome, or a negative errno */
        ParamsOutcome want_params;  /* for ADMIT_BAD_PARAMS */
        bool want_probe;            /* the probe is asked */
        const char *want_msg;       /* refusal_format(), NULL: not compared */
        uint32_t want_pid, want_tid; /* on success */
} DecideCase;

/* USER_LIMITS_NONE as a plain initializer (a compound literal cannot be overridden). */
#define NOLIM { UINT64_MAX, UINT64_MAX }

/* A request that is admitted: later designators in a case override these (GCC's documented rule
 * for repeated designators). */
#define BASE                                                                                                 \
        .pid = 100, .tid = 100, .group = "open", .params = { 10 * MS, 0, P100 },                             \
        .caller = { .uid = 1000, .pid = 100, .user = "alice", .limits = NOLIM },                             \
        .cgroups_usable = true, .facts = { .owner = 1000 }, .want_probe = true, .want_pid = 100, .want_tid = 100

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
static void decide_cases(const DecideCase **ret, size_t *ret_n) {
        static DecideCase cases[128];
        static size_t n;
        const DecideCase c[] = {
                /* 0: admitted, and the edges that are admitted */
                { BASE, .name = "admitted" },
                { BASE, .name = "pid 0 is the caller's process, tid 0 its pid", .pid = 0, .tid = 0,
                  .caller = { .uid = 1000, .pid = 4242, .user = "alice", .limits = NOLIM },
                  .want_pid = 4242, .want_tid = 4242 },
                { BASE, .name = "tid 0 is the pid", .pid = 77, .tid = 0, .want_pid = 77, .want_tid = 77 },
                { BASE, .name = "pid and tid INT32_MAX", .pid = I32, .tid = I32, .want_pid = (uint32_t) I32,
                  .want_tid = (uint32_t) I32 },
                { BASE, .name = "runtime 1024 (the minimum), period the kernel's minimum", .params = { 1024, 0, PMIN } },
                { BASE, .name = "runtime == deadline == period: one whole CPU, in the root", .group = "/",
                  .params = { P100, P100, P100 } },
                { BASE, .name = "the default group", .group = "", .default_group = "small",
                  .params = { 5 * MS, 0, P100 } },
                { BASE, .name = "no default group: the root", .group = NULL },
                { BASE, .name = "root may use a group of nobody, and any owner", .group = "nobody",
                  .caller = { .uid = 0, .pid = 1, .user = "root", .limits = { 0, 0 } }, .facts = { .owner = 1001 } },
                { BASE, .name = "bob is on audio's list", .group = "audio",
                  .caller = { .uid = 1001, .pid = 100, .user = "bob", .limits = NOLIM },
                  .facts = { .owner = 1001 } },
                { BASE, .name = "move with polkit's manage", .flags = ADMISSION_FLAG_MOVE, .may_move = true },
                { BASE, .name = "root moves without polkit", .flags = ADMISSION_FLAGS_KNOWN,
                  .caller = { .uid = 0, .pid = 1, .user = "root", .limits = NOLIM }, .facts = { .owner = 0 } },
                { BASE, .name = "limits that just fit", .caller = { .uid = 1000, .pid = 100, .user = "alice",
                  .limits = { .bandwidth = 2 * bw(10 * MS, P100), .reservations = 2 } } },
                { BASE, .name = "the group's room exactly", .params = { 40 * MS, 0, P100 } },

                /* 1: pid and tid range (before the group path and the flags) */
                { BASE, .name = "pid INT32_MAX + 1", .pid = I32 + 1, .want = ADMIT_BAD_PID, .want_probe = false,
                  .want_msg = "no thread 100 in process 2147483648" },
                { BASE, .name = "tid INT32_MAX + 1, bad group, bad flags", .tid = I32 + 1, .group = "a//b",
                  .flags = 8, .want = ADMIT_BAD_PID, .want_probe = false },
                { BASE, .name = "pid UINT64_MAX", .pid = UINT64_MAX, .want = ADMIT_BAD_PID, .want_probe = false },
                /* 2: the group path (before the flags) */
                { BASE, .name = "a bad group path, bad flags", .group = "a//b", .flags = 8,
                  .want = ADMIT_BAD_GROUP_NAME, .want_probe = false },
                { BASE, .name = "a hidden group name", .group = ".x", .want = ADMIT_BAD_GROUP_NAME, .want_probe = false },
                /* 3: the flags (before the group's existence) */
                { BASE, .name = "flag 8, missing group", .flags = 8, .group = "missing", .want = ADMIT_BAD_FLAGS,
                  .want_probe = false, .want_msg = "unknown flags 0x8 (known: 1 reclaim, 2 overrun signal, 4 move)" },
                { BASE, .name = "every flag", .flags = UINT64_MAX, .want = ADMIT_BAD_FLAGS, .want_probe = false,
                  .want_msg = "unknown flags 0xfffffffffffffff8 (known: 1 reclaim, 2 overrun signal, 4 move)" },
                /* 5: the group (before the parameters) */
                { BASE, .name = "missing group, bad parameters", .group = "missing", .params = { 0, 0, 0 },
                  .want = ADMIT_NO_SUCH_GROUP, .want_probe = false, .want_msg = "no group \"missing\"" },
                { BASE, .name = "missing default group", .group = "", .default_group = "gone",
                  .want = ADMIT_NO_SUCH_GROUP, .want_probe = false, .want_msg = "no group \"(default group)\"" },
                /* 6: the caller's pid out of range */
                { BASE, .name = "pid 0 of a caller beyond INT32_MAX", .pid = 0,
                  .caller = { .uid = 1000, .pid = (uint32_t) I32 + 1, .user = "alice", .limits = NOLIM },
                  .want = ADMIT_BAD_PID, .want_probe = false },
                /* 7: the parameters (before already admitted) */
                { BASE, .name = "runtime 1023, already admitted", .tid = 500, .params = { 1023, 0, P100 },
                  .want = ADMIT_BAD_PARAMS, .want_params = PARAMS_RUNTIME_TOO_SMALL, .want_probe = false,
                  .want_msg = "invalid parameters: runtime is below 1024ns, the kernel's minimum" },
                { BASE, .name = "period 0", .params = { 1024, 0, 0 }, .want = ADMIT_BAD_PARAMS,
                  .want_params = PARAMS_PERIOD_ZERO, .want_probe = false },
                { BASE, .name = "all zero", .params = { 0, 0, 0 }, .want = ADMIT_BAD_PARAMS,
                  .want_params = PARAMS_PERIOD_ZERO, .want_probe = false },
                { BASE, .name = "UINT64_MAX everywhere", .params = { UINT64_MAX, UINT64_MAX, UINT64_MAX },
                  .want = ADMIT_BAD_PARAMS, .want_params = PARAMS_BIT63, .want_probe = false },
                { BASE, .name = "deadline above period", .params = { 1024, P100 + 1, P100 }, .want = ADMIT_BAD_PARAMS,
                  .want_params = PARAMS_DEADLINE_ABOVE_PERIOD, .want_probe = false },
                { BASE, .name = "period below the kernel's minimum", .params = { 1024, 0, PMIN - 1 },
                  .want = ADMIT_BAD_PARAMS, .want_params = PARAMS_PERIOD_TOO_SHORT, .want_probe = false },
                { BASE, .name = "period above the kernel's maximum", .params = { 1024, 0, PMAX + 1 },
                  .want = ADMIT_BAD_PARAMS, .want_params = PARAMS_PERIOD_TOO_LONG, .want_probe = false },
                /* 8: already admitted (before pid 1) */
                { BASE, .name = "already admitted, pid 1", .pid = 1, .tid = 500, .want = ADMIT_ALREADY_ADMITTED,
                  .want_probe = false, .want_msg = "the thread holds a reservation already (id 1)" },
                /* 9: pid 1 (before the probe) */
                { BASE, .name = "pid 1", .pid = 1, .tid = 0, .probe_ret = -ESRCH, .want = ADMIT_PID_ONE,
                  .want_probe = false,
                  .want_msg = "pid 1 is never admitted: under a fork policy every process it starts would be split" },
                { BASE, .name = "a thread of pid 1, even for root", .pid = 1, .tid = 2,
                  .caller = { .uid = 0, .pid = 1, .user = "root", .limits = NOLIM }, .want = ADMIT_PID_ONE,
                  .want_probe = false },
                /* 10: the probe */
                { BASE, .name = "no such thread (ESRCH)", .probe_ret = -ESRCH, .want = ADMIT_NO_SUCH_THREAD,
                  .want_msg = "no thread 100 in process 100" },
                { BASE, .name = "no such thread (ENOENT)", .probe_ret = -ENOENT, .want = ADMIT_NO_SUCH_THREAD },
                { BASE, .name = "the probe's own error", .probe_ret = -EMFILE, .want = -EMFILE },
                /* 11: kernel threads (before the owner) */
                { BASE, .name = "a kernel thread whose owner is unknown", .facts = { .kernel_thread = true,
                  .owner_error = -ESRCH }, .want = ADMIT_KERNEL_THREAD,
                  .want_msg = "process 100 is a kernel thread: not edfd's to change" },
                { BASE, .name = "a kernel thread, for root", .facts = { .kernel_thread = true },
                  .caller = { .uid = 0, .pid = 1, .user = "root", .limits = NOLIM },
                  .want = ADMIT_KERNEL_THREAD },
                /* 12: the owner could not be read */
                { BASE, .name = "the process ended, deadline too", .facts = { .owner_error = -ENOENT, .deadline = true },
                  .want = ADMIT_PROCESS_GONE, .want_msg = "process 100 is gone" },
                /* 13: not the caller's (before the group's users) */
                { BASE, .name = "another user's thread, in a group that refuses alice", .group = "audio",
                  .facts = { .owner = 1001 }, .want = ADMIT_NOT_OWNER,
                  .want_msg = "thread 100 belongs to uid 1001, not to you (uid 1000)" },
                { BASE, .name = "root's thread", .facts = { .owner = 0 }, .want = ADMIT_NOT_OWNER },
                /* 14: the group's users (before the move) */
                { BASE, .name = "audio refuses alice, and a move without polkit", .group = "audio",
                  .flags = ADMISSION_FLAG_MOVE, .want = ADMIT_NOT_ALLOWED,
                  .want_msg = "group audio does not allow uid 1000 (see its users: list)" },
                { BASE, .name = "users: [] refuses everyone but root", .group = "nobody", .want = ADMIT_NOT_ALLOWED },
                { BASE, .name = "a user without a name", .group = "audio",
                  .caller = { .uid = 1000, .pid = 100, .user = NULL, .limits = NOLIM },
                  .want = ADMIT_NOT_ALLOWED },
                /* 15: the move's permission (before the cgroup) */
                { BASE, .name = "a move without polkit's manage, into a group without a cgroup", .group = "small",
                  .flags = ADMISSION_FLAG_MOVE, .want = ADMIT_MOVE_NOT_ALLOWED,
                  .want_msg = "moving a process into edfd's cgroups (flag 4) needs root or polkit's "
                              "org.edfd.Admission1.manage: it would leave its user slice's limits" },
                /* 15: a placement that moves the whole process (partitioned, cgroup v2) is a move */
                { BASE, .name = "a partitioned placement that moves the process, without polkit's manage",
                  .moves_process = true, .want = ADMIT_MOVE_NOT_ALLOWED,
                  .want_msg = "open: partitioned placement on cgroup v2 moves the whole process into edfd's "
                              "cgroups, which needs root or polkit's org.edfd.Admission1.manage: it would leave "
                              "its user slice's limits" },
                { BASE, .name = "a partitioned placement that moves the process of another user (not the owner "
                  "first)", .moves_process = true, .facts = { .owner = 1001 }, .want = ADMIT_NOT_OWNER },
                { BASE, .name = "a partitioned placement that moves the process, with polkit's manage",
                  .moves_process = true, .may_move = true },
                { BASE, .name = "root's partitioned placement moves without polkit", .moves_process = true,
                  .caller = { .uid = 0, .pid = 1, .user = "root", .limits = NOLIM }, .facts = { .owner = 1000 } },
                { BASE, .name = "a placement that moves needs no cgroup of the group's", .group = "small",
                  .params = { 1 * MS, 0, P100 }, .moves_process = true, .may_move = true },
                /* 16: the cgroup (before the thread's policy) */
                { BASE, .name = "a move into a group without a cgroup, thread gone", .group = "small",
                  .flags = ADMISSION_FLAG_MOVE, .may_move = true, .facts = { .owner = 1000, .sched_error = -ESRCH },
                  .want = ADMIT_NO_CGROUP, .want_msg = "group small has no cgroup to move into" },
                { BASE, .name = "a move while the cgroup root is unusable", .flags = ADMISSION_FLAG_MOVE,
                  .may_move = true, .cgroups_usable = false, .want = ADMIT_NO_CGROUP,
                  .want_msg = "group open has no cgroup to move into (the cgroup root is not usable)" },
                { BASE, .name = "no move, unusable cgroups do not matter", .cgroups_usable = false },
                /* 17: the thread's policy could not be read (before foreign deadline) */
                { BASE, .name = "the thread ended", .facts = { .owner = 1000, .sched_error = -ESRCH, .deadline = true },
                  .want = ADMIT_THREAD_GONE, .want_msg = "thread 100 is gone" },
                /* 18: SCHED_DEADLINE already (before the limits) */
                { BASE, .name = "foreign deadline, over the limits", .facts = { .owner = 1000, .deadline = true,
                  .current = { 1 * MS, 10 * MS, 10 * MS } },
                  .caller = { .uid = 1000, .pid = 100, .user = "alice", .limits = { 0, 0 } },
                  .want = ADMIT_FOREIGN_DEADLINE },
                /* 19: the limits (reservations before bandwidth; before the room) */
                { BASE, .name = "alice holds 1 of 1, asks for more than the group has",
                  .params = { 60 * MS, 0, P100 },
                  .caller = { .uid = 1000, .pid = 100, .user = "alice", .limits = { 0, 1 } },
                  .want = ADMIT_LIMIT_EXCEEDED,
                  .want_msg = "user alice: per-user limit of 1 reservations reached (1 held)" },
                { BASE, .name = "bandwidth limit one unit short",
                  .caller = { .uid = 1000, .pid = 100, .user = "alice",
                              .limits = { 2 * bw(10 * MS, P100) - 1, UINT64_MAX } },
                  .want = ADMIT_LIMIT_EXCEEDED,
                  .want_msg = "user alice: per-user bandwidth limit 20%: 10% held, request needs 10%" },
                { BASE, .name = "a limit of 0 reservations", .caller = { .uid = 1000, .pid = 100, .user = "alice",
                  .limits = { UINT64_MAX, 0 } }, .want = ADMIT_LIMIT_EXCEEDED },
                /* 20, 22: the room */
                { BASE, .name = "one whole CPU in a 50% group", .params = { P100, P100, P100 },
                  .want = ADMIT_OVER_BUDGET, .want_msg = "open: 40% free, request needs 100%" },
                { BASE, .name = "one unit more than the room (a period of BW_UNIT ns: runtime = bw)",
                  .params = { BW(50 * MS, P100) - BW(10 * MS, P100) + 1, 0, BW_UNIT }, .want = ADMIT_OVER_BUDGET },
                { BASE, .name = "the room to the unit",
                  .params = { BW(50 * MS, P100) - BW(10 * MS, P100), 0, BW_UNIT } },
                /* 21 */
                { BASE, .name = "ids exhausted", .next_id = UINT64_MAX, .want = -EOVERFLOW },
        };

        cr_assert_leq(ELEMENTSOF(c), ELEMENTSOF(cases));
        memcpy(cases, c, sizeof c);
        n = ELEMENTSOF(c);
        *ret = cases;
        *ret_n = n;
}
#pragma GCC diagnostic pop

static AdmissionRequest request_of(const DecideCase *c, Probe *p) {
        *p = (Probe) { .ret = c->probe_ret, .facts = c->facts };
        return (AdmissionRequest) {
                .pid = c->pid, .tid = c->tid, .group = c->group, .default_group = c->default_group,
                .params = c->params, .flags = c->flags, .caller = c->caller, .may_move = c->may_move,
                .moves_process = c->moves_process, .cgroups_usable = c->cgroups_usable, .probe = probe,
                .probe_userdata = p,
        };
}

Test(admission, decide_table) {
        const DecideCase *cases;
        size_t n;
        unsigned refusals = 0;

        decide_cases(&cases, &n);
        for (size_t i = 0; i < n; i++) {
                const DecideCase *c = &cases[i];
                Tree *t = fixture(NULL);
                Refusal rf = { .outcome = _ADMIT_MAX };
                AdmissionDecision d = { .pid = 12345 };
                Probe p;
                AdmissionRequest req = request_of(c, &p);
                char buf[512];
                int k;

                if (c->next_id)
                        t->next_id = c->next_id;
                k = admission_decide(t, &req, &d, &rf);
                cr_expect_eq(k, c->want, "%s: admission_decide() = %d (%s), want %d", c->name, k,
                             k > 0 ? refusal_format(&rf, buf, sizeof buf) : "-", c->want);
                cr_expect_eq(p.calls, c->want_probe ? 1u : 0u, "%s: the probe was asked %u times", c->name, p.calls);
                if (k == 0 && c->want == 0) {
                        uint64_t b;
                        cr_expect_eq(d.pid, c->want_pid, "%s: pid %" PRIu32, c->name, d.pid);
                        cr_expect_eq(d.tid, c->want_tid, "%s: tid %" PRIu32, c->name, d.tid);
                        cr_expect_eq(p.pid, c->want_pid, "%s: probed pid %" PRIu32, c->name, p.pid);
                        cr_expect_eq(p.tid, c->want_tid, "%s: probed tid %" PRIu32, c->name, p.tid);
                        cr_expect_eq(d.owner, c->facts.owner, "%s", c->name);
                        cr_expect_eq(d.flags, c->flags, "%s", c->name);
                        cr_expect_eq(d.move, (c->flags & ADMISSION_FLAG_MOVE) != 0, "%s", c->name);
                        cr_expect_eq(d.params.deadline, c->params.deadline ? c->params.deadline : c->params.period,
                                     "%s: the deadline is filled in", c->name);
                        cr_assert_eq(bw_of(c->params.runtime, c->params.period, &b), 0);
                        cr_expect_eq(d.bw, b, "%s", c->name);
                        cr_assert_not_null(d.group);
                        /* What was decided is what the books take. */
                        ReservationSpec s = { .pid = d.pid, .tid = d.tid, .uid = d.owner, .params = d.params,
                                              .flags = d.flags };
                        cr_expect_eq(reservation_admit(t, d.group, &s, NULL, &rf), 0, "%s: the books refuse: %s",
                                     c->name, refusal_format(&rf, buf, sizeof buf));
                } else {
                        cr_expect_eq(d.pid, 12345, "%s: *ret written on a refusal", c->name);
                        if (k > 0) {
                                refusals++;
                                cr_expect_eq(rf.outcome, (AdmitOutcome) k, "%s: Refusal.outcome %d", c->name, rf.outcome);
                        } else
                                cr_expect_eq(rf.outcome, _ADMIT_MAX, "%s: *ret_refusal written on an error", c->name);
                        if (c->want == ADMIT_BAD_PARAMS)
                                cr_expect_eq(rf.params, c->want_params, "%s: params %d", c->name, rf.params);
                        if (c->want_msg && k > 0)
                                cr_expect_str_eq(refusal_format(&rf, buf, sizeof buf), c->want_msg, "%s", c->name);
                }
                /* A decision changes nothing; and NULL outputs are fine. */
                Probe p2;
                AdmissionRequest req2 = request_of(c, &p2);
                cr_expect_eq(admission_decide(t, &req2, NULL, NULL), k == 0 ? (c->want == 0 ? ADMIT_ALREADY_ADMITTED : 0) : k,
                             "%s: a second decision", c->name);
                tree_free(t);
        }
        cr_expect_gt(refusals, 30);
}

/* Every outcome admission_decide() can return has a case above. */
Test(admission, decide_table_covers_every_outcome) {
        static const AdmitOutcome outcomes[] = {
                ADMIT_BAD_PID, ADMIT_BAD_GROUP_NAME, ADMIT_BAD_FLAGS, ADMIT_NO_SUCH_GROUP, ADMIT_BAD_PARAMS,
                ADMIT_ALREADY_ADMITTED, ADMIT_PID_ONE, ADMIT_NO_SUCH_THREAD, ADMIT_KERNEL_THREAD, ADMIT_PROCESS_GONE,
                ADMIT_NOT_OWNER, ADMIT_NOT_ALLOWED, ADMIT_MOVE_NOT_ALLOWED, ADMIT_NO_CGROUP, ADMIT_THREAD_GONE,
                ADMIT_FOREIGN_DEADLINE, ADMIT_LIMIT_EXCEEDED, ADMIT_OVER_BUDGET,
        };
        const DecideCase *cases;
        size_t n;

        decide_cases(&cases, &n);
        for (size_t o = 0; o < ELEMENTSOF(outcomes); o++) {
                bool found = false;
                for (size_t i = 0; i < n; i++)
                        found = found || cases[i].want == (int) outcomes[o];
                cr_expect(found, "no case for %s", admit_outcome_to_string(outcomes[o]));
        }
}

/* The message of a foreign deadline, as manager.c writes it today. */
Test(admission, foreign_deadline_message) {
        Tree *t = fixture(NULL);
        Probe p = { .facts = { .owner = 1000, .deadline = true, .current = { 1500 * US, 10 * MS, 10 * MS } } };
        AdmissionRequest req = { .pid = 100, .tid = 101, .group = "open", .params = { 10 * MS, 0, P100 },
                                 .caller = { .uid = 1000, .pid = 100, .user = "alice", .limits = USER_LIMITS_NONE },
                                 .cgroups_usable = true, .probe = probe, .probe_userdata = &p };
        char buf[256], want[256], a[DURATION_MAX], b[DURATION_MAX];
        Refusal rf;

        cr_assert_eq(admission_decide(t, &req, NULL, &rf), ADMIT_FOREIGN_DEADLINE);
        snprintf(want, sizeof want, "thread %" PRIu32 " is SCHED_DEADLINE already (%s/%s), set outside edfd", 101,
                 duration_format(1500 * US, a), duration_format(10 * MS, b));
        cr_expect_str_eq(refusal_format(&rf, buf, sizeof buf), want);
        cr_expect_eq(rf.foreign.runtime, 1500 * US);
        cr_expect_eq(rf.foreign.period, 10 * MS);
        tree_free(t);
}

/* A group's reclaim policy (inherited) adds RECLAIM to what the request asks; a request's own
 * RECLAIM holds in a group that does not reclaim. */
Test(admission, group_reclaim_adds_the_flag) {
        Tree *t = fixture(NULL);
        GroupSpec on = { .runtime = 10 * MS, .period = P100, .fork = _FORK_POLICY_UNSET, .threads = _FORK_POLICY_UNSET,
                         .reclaim = RECLAIM_ON };
        GroupSpec inherit = { .runtime = 5 * MS, .period = P100, .fork = _FORK_POLICY_UNSET,
                              .threads = _FORK_POLICY_UNSET };
        Probe p = { .facts = { .owner = 1000 } };
        AdmissionRequest req = { .pid = 100, .tid = 100, .params = { 1 * MS, 0, P100 },
                                 .caller = { .uid = 0, .pid = 1, .user = "root", .limits = USER_LIMITS_NONE },
                                 .cgroups_usable = true, .probe = probe, .probe_userdata = &p };
        AdmissionDecision d;

        cr_assert_eq(group_create(t, "rt", &on, NULL, NULL), 0);
        cr_assert_eq(group_create(t, "rt/inner", &inherit, NULL, NULL), 0);
        cr_assert(!tree_find_group(t, "open")->reclaim, "a new tree's root does not reclaim");
        const struct { const char *group; uint64_t flags, want; } cases[] = {
                { "open", 0, 0 },
                { "open", ADMISSION_FLAG_RECLAIM, ADMISSION_FLAG_RECLAIM },
                { "open", ADMISSION_FLAG_OVERRUN_SIGNAL, ADMISSION_FLAG_OVERRUN_SIGNAL },
                { "rt", 0, ADMISSION_FLAG_RECLAIM },
                { "rt", ADMISSION_FLAG_OVERRUN_SIGNAL, ADMISSION_FLAG_RECLAIM | ADMISSION_FLAG_OVERRUN_SIGNAL },
                { "rt/inner", 0, ADMISSION_FLAG_RECLAIM },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                req.group = cases[i].group;
                req.flags = cases[i].flags;
                cr_assert_eq(admission_decide(t, &req, &d, NULL), 0, "case %zu", i);
                cr_expect_eq(d.flags, cases[i].want, "case %zu: flags 0x%" PRIx64, i, d.flags);
        }
        tree_free(t);

        cr_assert_eq(tree_new(&t, 4 * BW_UNIT, &DL_LIMITS_DEFAULT, FORK_SPLIT, FORK_NONE, 0), 0);
        tree_set_root_reclaim(t, true);
        GroupSpec off = inherit;
        off.reclaim = RECLAIM_OFF;
        cr_assert_eq(group_create(t, "a", &inherit, NULL, NULL), 0);
        cr_assert_eq(group_create(t, "b", &off, NULL, NULL), 0);
        cr_expect(tree_find_group(t, "a")->reclaim, "inherited from the root");
        cr_expect(!tree_find_group(t, "b")->reclaim);
        tree_free(t);
}

/* A bandwidth that dl_params_check() lets through but that is not a number (a period_max raised
 * past 2^44 ns): the limits see 0 and refuse first; without limits it is BAD_PARAMS (bit 63). */
Test(admission, bandwidth_not_a_number_after_the_limits) {
        DlLimits wide = { .period_min = 1, .period_max = UINT64_C(1) << 62 };
        Tree *t = fixture(&wide);
        uint64_t big = UINT64_C(1) << 44;
        Probe p = { .facts = { .owner = 1000 } };
        AdmissionRequest req = { .pid = 100, .tid = 100, .group = "open", .params = { big, big, big },
                                 .caller = { .uid = 1000, .pid = 100, .user = "alice", .limits = { 0, 1 } },
                                 .cgroups_usable = true, .probe = probe, .probe_userdata = &p };
        Refusal rf;

        cr_expect_eq(admission_decide(t, &req, NULL, &rf), ADMIT_LIMIT_EXCEEDED);
        /* a bandwidth limit of 0 does not see it: the bandwidth counts as 0 */
        req.caller.limits = (UserLimits) { 0, UINT64_MAX };
        cr_expect_eq(admission_decide(t, &req, NULL, &rf), ADMIT_BAD_PARAMS);
        cr_expect_eq(rf.params, PARAMS_BIT63);
        req.caller.limits = USER_LIMITS_NONE;
        cr_expect_eq(admission_decide(t, &req, NULL, &rf), ADMIT_BAD_PARAMS);
        cr_expect_eq(rf.params, PARAMS_BIT63);
        /* one below is a number, and one CPU at most */
        req.params = (DlParams) { big - 1, big - 1, big - 1 };
        cr_expect_eq(admission_decide(t, &req, NULL, &rf), ADMIT_OVER_BUDGET);
        tree_free(t);
}

Test(admission, overcommitted_root_refuses_everything) {
        Tree *t = fixture(NULL);
        Probe p = { .facts = { .owner = 0 } };
        AdmissionRequest req = { .pid = 100, .tid = 100, .group = "small", .params = { 1024, 0, P100 },
                                 .caller = { .uid = 0, .pid = 1, .user = "root", .limits = USER_LIMITS_NONE },
                                 .cgroups_usable = true, .probe = probe, .probe_userdata = &p };
        char buf[256];
        Refusal rf;

        cr_expect(tree_set_capacity(t, BW_UNIT / 2, 0));
        cr_expect_eq(admission_decide(t, &req, NULL, &rf), ADMIT_OVER_BUDGET);
        cr_expect_str_eq(rf.name, "/");
        cr_expect_eq(rf.free_bw, 0);
        cr_expect(strncmp(refusal_format(&rf, buf, sizeof buf), "/: 0% free, request needs ", 26) == 0, "%s", buf);
        tree_free(t);
}

Test(admission, no_probe_is_an_error) {
        Tree *t = fixture(NULL);
        AdmissionRequest req = { .pid = 100, .tid = 100, .group = "open", .params = { 1024, 0, P100 },
                                 .caller = { .uid = 0, .user = "root", .limits = USER_LIMITS_NONE } };

        cr_expect_eq(admission_decide(t, &req, NULL, NULL), -EINVAL);
        tree_free(t);
}

/* The bus's checks are the first three of the decision, in the same order. */
Test(admission, check_args) {
        static const struct {
                uint64_t pid, tid;
                const char *group;
                uint64_t flags;
                int want;
        } cases[] = {
                { 0, 0, NULL, 0, 0 },
                { 0, 0, "", 0, 0 },
                { 0, 0, "/", 0, 0 },
                { I32, I32, "a/b", ADMISSION_FLAGS_KNOWN, 0 },
                { I32 + 1, 0, NULL, 0, ADMIT_BAD_PID },
                { 0, I32 + 1, "a//b", 8, ADMIT_BAD_PID },
                { UINT64_MAX, UINT64_MAX, NULL, 0, ADMIT_BAD_PID },
                { 1, 1, "a//b", 8, ADMIT_BAD_GROUP_NAME },
                { 1, 1, "cgroup.procs", 0, ADMIT_BAD_GROUP_NAME },
                { 1, 1, "missing", 8, ADMIT_BAD_FLAGS },
                { 1, 1, NULL, UINT64_C(1) << 63, ADMIT_BAD_FLAGS },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                AdmissionRequest req = { .pid = cases[i].pid, .tid = cases[i].tid, .group = cases[i].group,
                                         .flags = cases[i].flags };
                Refusal rf = {};

                cr_expect_eq(admission_check_args(&req, &rf), cases[i].want, "case %zu", i);
                if (cases[i].want)
                        cr_expect_eq(rf.outcome, (AdmitOutcome) cases[i].want, "case %zu", i);
        }
}

Test(admission, flags_are_the_bus_flags) {
        cr_expect_eq(ADMISSION_FLAG_RECLAIM, EDFD_ADMIT_RECLAIM);
        cr_expect_eq(ADMISSION_FLAG_OVERRUN_SIGNAL, EDFD_ADMIT_OVERRUN_SIGNAL);
        cr_expect_eq(ADMISSION_FLAG_MOVE, EDFD_ADMIT_MOVE);
        cr_expect_eq(ADMISSION_FLAGS_KNOWN, EDFD_ADMIT_ALL);
}

/* ---- Update ---- */

Test(admission, update_table) {
        const struct {
                const char *name;
                uint64_t id;
                DlParams params;
                uint32_t uid;
                UserLimits limits;
                int want;
                const char *want_msg;
        } cases[] = {
                { "the same", 1, { 10 * MS, 0, P100 }, 1000, { 0, 0 }, 0, NULL },
                { "smaller under a limit of 0", 1, { 5 * MS, 0, P100 }, 1000, { 0, 0 }, 0, NULL },
                { "the whole group, to the unit", 1, { BW(50 * MS, P100), 0, BW_UNIT }, 1000, { UINT64_MAX, UINT64_MAX }, 0, NULL },
                { "root, over any limit", 1, { 50 * MS, 0, P100 }, 0, { 0, 0 }, 0, NULL },
                { "runtime == deadline == period: over the group", 1, { P100, P100, P100 }, 0, { 0, 0 },
                  ADMIT_OVER_BUDGET, "open: 40% free, request needs 100%" },
                { "id 0", 0, { 10 * MS, 0, P100 }, 0, { 0, 0 }, ADMIT_NO_SUCH_RESERVATION, "no reservation 0" },
                { "no reservation, another user", 7, { 0, 0, 0 }, 1001, { 0, 0 }, ADMIT_NO_SUCH_RESERVATION,
                  "no reservation 7" },
                { "UINT64_MAX", UINT64_MAX, { 0, 0, 0 }, 0, { 0, 0 }, ADMIT_NO_SUCH_RESERVATION, NULL },
                { "not yours, bad params", 1, { 0, 0, 0 }, 1001, { 0, 0 }, ADMIT_NOT_YOURS,
                  "reservation 1 is not yours" },
                { "more than the limit, over the group", 1, { 60 * MS, 0, P100 }, 1000, { BW(20 * MS, P100), 9 },
                  ADMIT_LIMIT_EXCEEDED, "user alice: per-user bandwidth limit 20%: 10% held, request needs 50%" },
                { "bad params skip the limit", 1, { 1023, 0, P100 }, 1000, { 0, 0 }, ADMIT_BAD_PARAMS,
                  "invalid parameters: runtime is below 1024ns, the kernel's minimum" },
                { "period 0", 1, { 1024, 0, 0 }, 0, { 0, 0 }, ADMIT_BAD_PARAMS, NULL },
                { "bit 63", 1, { UINT64_MAX, 0, UINT64_MAX }, 0, { 0, 0 }, ADMIT_BAD_PARAMS, NULL },
                { "one unit over the group", 1, { BW(50 * MS, P100) + 1, 0, BW_UNIT }, 1000, USER_LIMITS_NONE, ADMIT_OVER_BUDGET,
                  NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Tree *t = fixture(NULL);
                AdmissionUpdate u = { .id = cases[i].id, .params = cases[i].params,
                                      .caller = { .uid = cases[i].uid, .user = "alice", .limits = cases[i].limits } };
                AdmissionUpdateDecision d = {};
                Refusal rf = {};
                char buf[256];
                int k;

                k = admission_update_decide(t, &u, &d, &rf);
                cr_expect_eq(k, cases[i].want, "%s: %d (%s)", cases[i].name, k,
                             k > 0 ? refusal_format(&rf, buf, sizeof buf) : "-");
                if (k == 0) {
                        cr_assert_not_null(d.reservation);
                        cr_expect_eq(d.reservation->id, 1);
                        cr_expect_eq(d.params.deadline, cases[i].params.period);
                        cr_expect_eq(d.bw, bw(cases[i].params.runtime, cases[i].params.period));
                        cr_expect_eq(reservation_update(t, d.reservation, &d.params, &rf), 0, "%s", cases[i].name);
                } else if (cases[i].want_msg)
                        cr_expect_str_eq(refusal_format(&rf, buf, sizeof buf), cases[i].want_msg, "%s", cases[i].name);
                tree_free(t);
        }
}

/* ---- rate ---- */

Test(admission, rate) {
        AdmissionCaller alice = { .uid = 1000, .user = "alice", .limits = USER_LIMITS_NONE,
                                  .rate = { .count = 3, .window = NSEC_PER_SEC } };
        AdmissionCaller root = alice, unlimited = alice, no_window = alice;
        RateWindow w = {};
        char buf[256], want[256], a[DURATION_MAX];
        Refusal rf;

        root.uid = 0;
        unlimited.rate.count = 0;
        no_window.rate.window = 0;
        cr_expect(admission_rate_applies(&alice));
        cr_expect(!admission_rate_applies(&root));
        cr_expect(!admission_rate_applies(&unlimited));
        cr_expect(!admission_rate_applies(&no_window));
        cr_expect_eq(admission_rate_check(&root, NULL, 0, &rf), 0);
        cr_expect_eq(admission_rate_check(&unlimited, NULL, 0, &rf), 0);

        for (int i = 0; i < 3; i++)
                cr_expect_eq(admission_rate_check(&alice, &w, 10 + (uint64_t) i, &rf), 0, "request %d", i);
        cr_expect_eq(admission_rate_check(&alice, &w, 20, &rf), ADMIT_RATE_LIMITED);
        snprintf(want, sizeof want, "user alice: rate limit of 3 requests per %s reached; try again later",
                 duration_format(NSEC_PER_SEC, a));
        cr_expect_str_eq(refusal_format(&rf, buf, sizeof buf), want);
        cr_expect_eq(rf.limit_count, 3);
        cr_expect_eq(rf.window, NSEC_PER_SEC);
        /* the refused request is not counted; the window closes one window after it opened */
        cr_expect_eq(admission_rate_check(&alice, &w, 10 + NSEC_PER_SEC - 1, &rf), ADMIT_RATE_LIMITED);
        cr_expect_eq(admission_rate_check(&alice, &w, 10 + NSEC_PER_SEC, &rf), 0);
        /* root is never counted, even with a window */
        for (int i = 0; i < 10; i++)
                cr_expect_eq(admission_rate_check(&root, &w, 10 + NSEC_PER_SEC, &rf), 0);
        cr_expect_eq(w.count, 1);
        /* a clock that goes back opens a new window */
        cr_expect_eq(admission_rate_check(&alice, &w, 0, &rf), 0);
        cr_expect_eq(w.count, 1);
        /* UINT64_MAX */
        cr_expect_eq(admission_rate_check(&alice, &w, UINT64_MAX, &rf), 0);
}

/* ---- fork ---- */

Test(admission, fork_table) {
        static const struct {
                const char *name;
                ForkPolicy fork, threads;
                bool is_thread;
                uint32_t uid;
                UserLimits limits;
                bool null_limits;
                int want;
                ForkPolicy want_policy;
        } cases[] = {
                { "split", FORK_SPLIT, FORK_NONE, false, 1000, USER_LIMITS_NONE, false, 0, FORK_SPLIT },
                { "inherit", FORK_INHERIT, FORK_NONE, false, 1000, USER_LIMITS_NONE, false, 0, FORK_INHERIT },
                { "inherit, no limits given", FORK_INHERIT, FORK_NONE, false, 1000, { 0, 0 }, true, 0, FORK_INHERIT },
                { "inherit within the bandwidth limit", FORK_INHERIT, FORK_NONE, false, 1000,
                  { 2 * BW(10 * MS, P100), UINT64_MAX }, false, 0, FORK_INHERIT },
                { "inherit one unit over: split", FORK_INHERIT, FORK_NONE, false, 1000,
                  { 2 * BW(10 * MS, P100) - 1, UINT64_MAX }, false, 0, FORK_SPLIT },
                { "inherit, the count full: refused", FORK_INHERIT, FORK_NONE, false, 1000, { UINT64_MAX, 1 }, false,
                  ADMIT_LIMIT_EXCEEDED, 0 },
                { "split, the count full", FORK_SPLIT, FORK_NONE, false, 1000, { UINT64_MAX, 1 }, false,
                  ADMIT_LIMIT_EXCEEDED, 0 },
                { "split, a bandwidth limit of 0 does not matter", FORK_SPLIT, FORK_NONE, false, 1000,
                  { 0, UINT64_MAX }, false, 0, FORK_SPLIT },
                { "root is never limited", FORK_INHERIT, FORK_NONE, false, 0, { 0, 0 }, false, 0, FORK_INHERIT },
                { "none", FORK_NONE, FORK_SPLIT, false, 0, USER_LIMITS_NONE, false, ADMIT_FORK_NONE, 0 },
                { "none before the limits", FORK_NONE, FORK_SPLIT, false, 1000, { 0, 0 }, false, ADMIT_FORK_NONE, 0 },
                { "a thread: threads policy", FORK_NONE, FORK_SPLIT, true, 1000, USER_LIMITS_NONE, false, 0,
                  FORK_SPLIT },
                { "a thread under threads none", FORK_SPLIT, FORK_NONE, true, 1000, USER_LIMITS_NONE, false,
                  ADMIT_FORK_NONE, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Tree *t = NULL;
                Group *g;
                Reservation *d;
                Refusal rf = {};
                ForkPolicy policy = _FORK_POLICY_UNSET;
                int k;

                cr_assert_eq(tree_new(&t, 2 * BW_UNIT, NULL, cases[i].fork, cases[i].threads, 0), 0);
                g = mkgroup(t, "g", 50 * MS, NULL, NULL);
                ReservationSpec s = { .pid = 9, .tid = 9, .uid = cases[i].uid, .params = { 10 * MS, 0, P100 } };
                cr_assert_eq(reservation_admit(t, g, &s, &d, &rf), 0);
                k = admission_fork_decide(t, d, cases[i].is_thread, cases[i].null_limits ? NULL : &cases[i].limits,
                                          &policy, &rf);
                cr_expect_eq(k, cases[i].want, "%s: %d", cases[i].name, k);
                if (k == 0)
                        cr_expect_eq(policy, cases[i].want_policy, "%s: policy %d", cases[i].name, policy);
                else {
                        cr_expect_eq(policy, _FORK_POLICY_UNSET, "%s: *ret_policy written on a refusal", cases[i].name);
                        cr_expect_eq(rf.outcome, (AdmitOutcome) k, "%s", cases[i].name);
                }
                tree_free(t);
        }
}

/* ---- groups ---- */

Test(admission, group_args) {
        static const struct {
                const char *path;
                uint64_t runtime, period;
                int want;
                ParamsOutcome want_params;
        } cases[] = {
                { "a", 1024, 1, 0, 0 },
                { "a/b", 3 * P100, P100, 0, 0 },                  /* a group may span several CPUs */
                { "a", (UINT64_C(1) << 44) - 1, 1, 0, 0 },
                { "a", P100, P100, 0, 0 },
                { "/", 1024, 1, ADMIT_BAD_GROUP_NAME, 0 },
                { "", 1024, 1, ADMIT_BAD_GROUP_NAME, 0 },
                { "a//b", 0, 0, ADMIT_BAD_GROUP_NAME, 0 },         /* the path before the numbers */
                { "/a", 1024, 1, ADMIT_BAD_GROUP_NAME, 0 },
                { "a/", 1024, 1, ADMIT_BAD_GROUP_NAME, 0 },
                { "a", 1024, 0, ADMIT_BAD_GROUP_BANDWIDTH, PARAMS_PERIOD_ZERO },
                { "a", 0, 0, ADMIT_BAD_GROUP_BANDWIDTH, PARAMS_PERIOD_ZERO },
                { "a", 0, 1, ADMIT_BAD_GROUP_BANDWIDTH, PARAMS_RUNTIME_TOO_SMALL },
                { "a", 1, 1, ADMIT_BAD_GROUP_BANDWIDTH, PARAMS_RUNTIME_TOO_SMALL },
                { "a", 1023, P100, ADMIT_BAD_GROUP_BANDWIDTH, PARAMS_RUNTIME_TOO_SMALL },
                { "a", UINT64_C(1) << 44, UINT64_MAX, ADMIT_BAD_GROUP_BANDWIDTH, PARAMS_BIT63 },
                { "a", UINT64_MAX, UINT64_MAX, ADMIT_BAD_GROUP_BANDWIDTH, PARAMS_BIT63 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Refusal rf = {};
                char buf[256];
                int k = admission_group_args(cases[i].path, cases[i].runtime, cases[i].period, &rf);

                cr_expect_eq(k, cases[i].want, "case %zu (%s): %d", i, cases[i].path, k);
                if (k == ADMIT_BAD_GROUP_BANDWIDTH) {
                        cr_expect_eq(rf.params, cases[i].want_params, "case %zu", i);
                        /* byte for byte the bus's message of today */
                        cr_expect_str_eq(refusal_format(&rf, buf, sizeof buf),
                                         "group bandwidth needs a period > 0 and a runtime of at least 1024 ns "
                                         "(and below 2^44 ns)");
                }
                if (k == ADMIT_BAD_GROUP_NAME)
                        cr_expect_str_eq(rf.name, cases[i].path);
                /* RemoveGroup checks the path only */
                cr_expect_eq(admission_group_path_arg(cases[i].path, NULL),
                             k == ADMIT_BAD_GROUP_NAME ? ADMIT_BAD_GROUP_NAME : 0, "case %zu", i);
                /* the same bandwidth rule as the books' */
                if (k != ADMIT_BAD_GROUP_NAME) {
                        uint64_t b = 0;
                        int g = admission_group_bandwidth(cases[i].runtime, cases[i].period, &b, &rf);
                        cr_expect_eq(g, k == 0 ? 0 : ADMIT_BAD_PARAMS, "case %zu", i);
                        if (g == 0)
                                cr_expect_eq(b, bw(cases[i].runtime, cases[i].period));
                }
        }
}

/* The group-name rule: one function, whose fragments conf.c shows, and which group_path_valid()
 * applies to every component. */
Test(admission, group_name_rule) {
        static const struct {
                const char *name;
                const char *want;
        } cases[] = {
                { "a", NULL },
                { "0", NULL },
                { "A-Z.0_9", NULL },
                { "cgroup", NULL },
                { "cgroupx", NULL },
                { "cgroup-x", NULL },
                { "a12345678901234567890123456789012345678901234567890123456789012b", NULL }, /* 64 bytes */
                { "a123456789012345678901234567890123456789012345678901234567890123b", "is longer than 64 bytes" },
                { "", "is empty" },
                { ".x", "must start with a letter or a digit" },
                { "..", "must start with a letter or a digit" },
                { "_leaf", "must start with a letter or a digit" },
                { "-a", "must start with a letter or a digit" },
                { "cgroup.", "must not start with \"cgroup.\" (the kernel's own files)" },
                { "cgroup.procs", "must not start with \"cgroup.\" (the kernel's own files)" },
                { "a b", "may hold only letters, digits, _ . and - (no / or spaces)" },
                { "a/b", "may hold only letters, digits, _ . and - (no / or spaces)" },
                { "a\xc3\xa9", "may hold only letters, digits, _ . and - (no / or spaces)" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const char *why = admission_group_name_problem(cases[i].name, strlen(cases[i].name));

                if (cases[i].want)
                        cr_expect_str_eq(why ?: "(valid)", cases[i].want, "\"%s\"", cases[i].name);
                else
                        cr_expect_null(why, "\"%s\": %s", cases[i].name, why);
                if (strchr(cases[i].name, '/'))
                        continue;
                cr_expect_eq(group_path_valid(cases[i].name), cases[i].want == NULL, "\"%s\"", cases[i].name);
        }
        /* only the first len bytes count */
        cr_expect_null(admission_group_name_problem("ab/c", 2));
        cr_expect_str_eq(admission_group_name_problem("ab", 0), "is empty");
}

/* ---- the small rules ---- */

Test(admission, params_rule) {
        DlParams p = { P100, P100, P100 };
        uint64_t b = 0;
        Refusal rf;

        cr_expect_eq(admission_params(&DL_LIMITS_DEFAULT, &p, &b, &rf), 0);
        cr_expect_eq(b, BW_UNIT, "runtime == deadline == period is one CPU");
        p = (DlParams) { 1024, 0, PMIN };
        cr_expect_eq(admission_params(&DL_LIMITS_DEFAULT, &p, &b, &rf), 0);
        cr_expect_eq(p.deadline, PMIN);
        p = (DlParams) { 1023, 0, PMIN };
        cr_expect_eq(admission_params(&DL_LIMITS_DEFAULT, &p, &b, &rf), ADMIT_BAD_PARAMS);
        cr_expect_eq(rf.params, PARAMS_RUNTIME_TOO_SMALL);
        cr_expect_eq(p.deadline, 0, "p as it was on a refusal");
        p = (DlParams) { UINT64_MAX, 0, UINT64_MAX };
        cr_expect_eq(admission_params(NULL, &p, NULL, NULL), ADMIT_BAD_PARAMS);
        /* no limits: a period past 2^44 ns passes the rules but its bandwidth is not a number */
        p = (DlParams) { UINT64_C(1) << 44, 0, UINT64_C(1) << 44 };
        cr_expect_eq(admission_params(NULL, &p, NULL, &rf), ADMIT_BAD_PARAMS);
        cr_expect_eq(rf.params, PARAMS_BIT63);
}

Test(admission, may_touch_and_group_allows) {
        static char *const bob[] = { (char *) "bob", NULL };
        static char *const none[] = { NULL };
        Reservation r = { .uid = 1000 };
        Group anyone = { .users = NULL }, bobs = { .users = (char **) bob }, nobody = { .users = (char **) none };

        cr_expect(admission_may_touch(0, &r));
        cr_expect(admission_may_touch(1000, &r));
        cr_expect(!admission_may_touch(1001, &r));
        cr_expect(!admission_may_touch(UINT32_MAX, &r));

        cr_expect(admission_group_allows(&anyone, 1000, "alice"));
        cr_expect(admission_group_allows(&bobs, 1001, "bob"));
        cr_expect(!admission_group_allows(&bobs, 1000, "alice"));
        cr_expect(!admission_group_allows(&bobs, 1000, NULL));
        cr_expect(!admission_group_allows(&bobs, 1000, "bobby"));
        cr_expect(admission_group_allows(&bobs, 0, "root"));
        cr_expect(!admission_group_allows(&nobody, 1000, "alice"));
        cr_expect(admission_group_allows(&nobody, 0, NULL));
}

/* The messages of the new outcomes are the daemon's of today (manager.c's op_fail() texts). */
Test(admission, messages) {
        static const struct {
                Refusal r;
                const char *want;
        } cases[] = {
                { { .outcome = ADMIT_BAD_PID, .pid = I32 + 1, .tid = 5 }, "no thread 5 in process 2147483648" },
                { { .outcome = ADMIT_NO_SUCH_THREAD, .pid = 4, .tid = 5 }, "no thread 5 in process 4" },
                { { .outcome = ADMIT_KERNEL_THREAD, .pid = 2 }, "process 2 is a kernel thread: not edfd's to change" },
                { { .outcome = ADMIT_PROCESS_GONE, .pid = 9 }, "process 9 is gone" },
                { { .outcome = ADMIT_THREAD_GONE, .tid = 9 }, "thread 9 is gone" },
                { { .outcome = ADMIT_NOT_OWNER, .tid = 7, .owner = 0, .uid = 4294967295u },
                  "thread 7 belongs to uid 0, not to you (uid 4294967295)" },
                { { .outcome = ADMIT_NOT_YOURS, .id = UINT64_MAX }, "reservation 18446744073709551615 is not yours" },
                { { .outcome = ADMIT_NO_SUCH_RESERVATION, .id = 3 }, "no reservation 3" },
                { { .outcome = ADMIT_NO_SUCH_RESERVATION }, "no reservation 0" },
                { { .outcome = ADMIT_LIMIT_EXCEEDED, .limit = "reservations", .limit_count = 4, .held_count = 4,
                    .need_count = 1 }, "per-user limit of 4 reservations reached (4 held)" },
                { { .outcome = ADMIT_LIMIT_EXCEEDED, .user = "bob", .limit = "reservations", .limit_count = 0 },
                  "user bob: per-user limit of 0 reservations reached (0 held)" },
                { { .outcome = ADMIT_LIMIT_EXCEEDED, .user = "bob", .limit = "bandwidth", .limit_bw = BW_UNIT / 8,
                    .held_bw = BW_UNIT / 8, .need_bw = 1 },
                  "user bob: per-user bandwidth limit 12.5%: 12.5% held, request needs 0.1%" },
                /* the user is shown only where a limit is */
                { { .outcome = ADMIT_PID_ONE, .user = "bob" },
                  "pid 1 is never admitted: under a fork policy every process it starts would be split" },
        };
        char buf[256], small[12];

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                cr_expect_str_eq(refusal_format(&cases[i].r, buf, sizeof buf), cases[i].want, "case %zu", i);

        /* a small buffer is cut, never overrun, also with the user's prefix */
        Refusal r = { .outcome = ADMIT_LIMIT_EXCEEDED, .user = "a-rather-long-name", .limit = "reservations" };
        memset(small, 'x', sizeof small);
        cr_expect_eq(refusal_format(&r, small, sizeof small), small);
        cr_expect_str_eq(small, "user a-rath");
        memset(small, 'x', sizeof small);
        r.user = "bob";
        refusal_format(&r, small, sizeof small);
        cr_expect_str_eq(small, "user bob: p");
}
