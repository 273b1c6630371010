/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The group tree and its reservations (tree.h): every rule, with tree_check() after every step. */

#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/bandwidth.h"
#include "core/duration.h"
#include "core/rate.h"
#include "core/tree.h"

#define US NSEC_PER_USEC
#define MS NSEC_PER_MSEC
#define P100 (100 * MS)
/* A period of BW_UNIT ns makes bw_of(x, BW_PERIOD) == x: groups and threads of any exact bandwidth
 * of at least 1024 units. For tiny ones, X_RUNTIME(x) over X_PERIOD is exactly x units. */
#define BW_PERIOD BW_UNIT
#define X_RUNTIME(x) ((uint64_t) (x) << 10)
#define X_PERIOD (UINT64_C(1) << 30)

#define BAD_GROUP ((Group *) (uintptr_t) 0x1234)
#define BAD_RES ((Reservation *) (uintptr_t) 0x5678)

static uint64_t bw(uint64_t runtime, uint64_t period) {
        return (uint64_t) (((unsigned __int128) runtime << BW_SHIFT) / period);
}

/* bw of x% as a group of x ms every 100 ms */
static uint64_t pct(uint64_t x) {
        return bw(x * MS, P100);
}

static void check(const Tree *t) {
        char buf[1024] = "";
        int r;

        r = tree_check(t, buf, sizeof buf);
        cr_assert_eq(r, 0, "tree_check() = %d: %s", r, buf);
}

/* A digest of everything the books say, to prove that a refusal changed nothing. */
static uint64_t mix(uint64_t h, uint64_t x) {
        return (h ^ x) * UINT64_C(0x100000001b3) + 0x9e3779b97f4a7c15;
}

static uint64_t digest(const Tree *t) {
        uint64_t h = mix(t->n_groups, t->n_reservations);

        h = mix(h, t->capacity);
        h = mix(h, t->unmanaged);
        for (const Group *g = t->root; g; g = group_next_preorder(g)) {
                h = mix(h, hash_string(g->path));
                h = mix(h, g->runtime);
                h = mix(h, g->period);
                h = mix(h, g->bw);
                h = mix(h, g->allocated);
                h = mix(h, g->n_children);
                h = mix(h, g->n_reservations);
                h = mix(h, g->held);
                h = mix(h, g->n_held);
                for (const Reservation *r = g->first_reservation; r; r = r->group_next)
                        h = mix(h, r->id);
        }
        for (const Reservation *r = reservation_next(t, NULL); r; r = reservation_next(t, r)) {
                h = mix(h, r->id);
                h = mix(h, r->tid);
                h = mix(h, r->pid);
                h = mix(h, hash_string(r->group->path));
                h = mix(h, r->params.runtime);
                h = mix(h, r->params.deadline);
                h = mix(h, r->params.period);
                h = mix(h, r->bw);
                h = mix(h, r->donor);
        }
        return h;
}

static Tree *new_tree(uint64_t capacity) {
        DlLimits limits = DL_LIMITS_DEFAULT;
        Tree *t = NULL;

        cr_assert_eq(tree_new(&t, capacity, &limits, FORK_SPLIT, FORK_SPLIT, 1024), 0);
        cr_assert_not_null(t);
        check(t);
        return t;
}

static GroupSpec gspec(uint64_t runtime, uint64_t period) {
        return (GroupSpec) {
                .runtime = runtime,
                .period = period,
                .fork = _FORK_POLICY_UNSET,
                .threads = _FORK_POLICY_UNSET,
        };
}

static Group *mkgroup_spec(Tree *t, const char *path, const GroupSpec *spec) {
        Refusal ref = {};
        Group *g = NULL;
        int r;

        r = group_create(t, path, spec, &g, &ref);
        cr_assert_eq(r, 0, "group_create(%s) = %d (%s)", path, r, r > 0 ? admit_outcome_to_string(r) : "errno");
        cr_assert_not_null(g);
        cr_assert_str_eq(g->path, path);
        cr_assert_eq(tree_find_group(t, path), g);
        check(t);
        return g;
}

static Group *mkgroup(Tree *t, const char *path, uint64_t runtime, uint64_t period) {
        GroupSpec spec = gspec(runtime, period);

        return mkgroup_spec(t, path, &spec);
}

static ReservationSpec rspec(uint32_t pid, uint32_t tid, uint64_t runtime, uint64_t deadline, uint64_t period) {
        return (ReservationSpec) {
                .pid = pid,
                .tid = tid,
                .uid = 1000,
                .identity = 4242 + tid,
                .params = { runtime, deadline, period },
                .flags = 7,
        };
}

static Reservation *admit_spec(Tree *t, Group *g, const ReservationSpec *spec) {
        Reservation *res = NULL;
        Refusal ref = {};
        int r;

        r = reservation_admit(t, g, spec, &res, &ref);
        cr_assert_eq(r, 0, "reservation_admit(%s, tid %" PRIu32 ") = %d (%s)", g->path, spec->tid, r,
                     r > 0 ? admit_outcome_to_string(r) : "errno");
        cr_assert_not_null(res);
        cr_assert_eq(res->group, g);
        cr_assert_eq(res->tid, spec->tid);
        cr_assert_eq(tree_find_thread(t, spec->tid), res);
        cr_assert_eq(tree_find_reservation(t, res->id), res);
        check(t);
        return res;
}

static Reservation *admit(Tree *t, Group *g, uint32_t tid, uint64_t runtime, uint64_t deadline, uint64_t period) {
        ReservationSpec spec = rspec(tid, tid, runtime, deadline, period);

        return admit_spec(t, g, &spec);
}

/* A refused admission: outcome, nothing changed, *ret untouched; returns the refusal. */
static Refusal admit_refused(Tree *t, Group *g, const ReservationSpec *spec, AdmitOutcome want) {
        Reservation *res = BAD_RES;
        Refusal ref = {};
        uint64_t before = digest(t);
        int r;

        r = reservation_admit(t, g, spec, &res, &ref);
        cr_assert_eq(r, (int) want, "reservation_admit(%s, tid %" PRIu32 ") = %d (%s), expected %s", g->path,
                     spec->tid, r, r > 0 ? admit_outcome_to_string(r) : "errno", admit_outcome_to_string(want));
        cr_assert_eq(ref.outcome, want, "Refusal.outcome = %d, expected %d", ref.outcome, want);
        cr_assert_eq(res, BAD_RES, "*ret written on a refusal");
        cr_assert_eq(digest(t), before, "a refused admission changed the books");
        check(t);
        return ref;
}

static Refusal create_refused(Tree *t, const char *path, const GroupSpec *spec, AdmitOutcome want) {
        Group *g = BAD_GROUP;
        Refusal ref = {};
        uint64_t before = digest(t);
        int r;

        r = group_create(t, path, spec, &g, &ref);
        cr_assert_eq(r, (int) want, "group_create(\"%s\") = %d (%s), expected %s", path, r,
                     r > 0 ? admit_outcome_to_string(r) : "errno", admit_outcome_to_string(want));
        cr_assert_eq(ref.outcome, want);
        cr_assert_eq(g, BAD_GROUP, "*ret written on a refusal");
        cr_assert_eq(digest(t), before, "a refused group_create changed the books");
        check(t);
        return ref;
}

/* ---- names and strings ---- */

Test(tree, policy_strings) {
        static const struct {
                ForkPolicy p;
                const char *s;
        } names[] = { { FORK_SPLIT, "split" }, { FORK_INHERIT, "inherit" }, { FORK_NONE, "none" } };

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                cr_expect_str_eq(fork_policy_to_string(names[i].p), names[i].s);
                cr_expect_eq(fork_policy_from_string(names[i].s), names[i].p);
        }
        cr_expect_null(fork_policy_to_string(_FORK_POLICY_MAX));
        cr_expect_null(fork_policy_to_string(_FORK_POLICY_UNSET));
        cr_expect_eq(fork_policy_from_string(""), _FORK_POLICY_UNSET);
        cr_expect_eq(fork_policy_from_string("splitx"), _FORK_POLICY_UNSET);
        cr_expect_eq(fork_policy_from_string("spli"), _FORK_POLICY_UNSET);
        cr_expect_eq(fork_policy_from_string("bogus"), _FORK_POLICY_UNSET);
}

Test(tree, outcome_strings) {
        static const char *const names[_ADMIT_MAX] = {
                [ADMIT_OK] = "OK",
                [ADMIT_OVER_BUDGET] = "OVER_BUDGET",
                [ADMIT_BAD_PARAMS] = "BAD_PARAMS",
                [ADMIT_ABOVE_ONE_CPU] = "ABOVE_ONE_CPU",
                [ADMIT_NO_SUCH_GROUP] = "NO_SUCH_GROUP",
                [ADMIT_GROUP_EXISTS] = "GROUP_EXISTS",
                [ADMIT_BAD_GROUP_NAME] = "BAD_GROUP_NAME",
                [ADMIT_NO_SUCH_RESERVATION] = "NO_SUCH_RESERVATION",
                [ADMIT_ALREADY_ADMITTED] = "ALREADY_ADMITTED",
                [ADMIT_ID_IN_USE] = "ID_IN_USE",
                [ADMIT_GROUP_NOT_EMPTY] = "GROUP_NOT_EMPTY",
                [ADMIT_BELOW_ALLOCATED] = "BELOW_ALLOCATED",
                [ADMIT_IS_ROOT] = "IS_ROOT",
                [ADMIT_FORK_NONE] = "FORK_NONE",
                [ADMIT_SPLIT_TOO_SMALL] = "SPLIT_TOO_SMALL",
                [ADMIT_LIMIT_EXCEEDED] = "LIMIT_EXCEEDED",
                [ADMIT_BAD_FLAGS] = "BAD_FLAGS",
                [ADMIT_BAD_PID] = "BAD_PID",
                [ADMIT_PID_ONE] = "PID_ONE",
                [ADMIT_NO_SUCH_THREAD] = "NO_SUCH_THREAD",
                [ADMIT_KERNEL_THREAD] = "KERNEL_THREAD",
                [ADMIT_PROCESS_GONE] = "PROCESS_GONE",
                [ADMIT_NOT_OWNER] = "NOT_OWNER",
                [ADMIT_NOT_ALLOWED] = "NOT_ALLOWED",
                [ADMIT_MOVE_NOT_ALLOWED] = "MOVE_NOT_ALLOWED",
                [ADMIT_NO_CGROUP] = "NO_CGROUP",
                [ADMIT_THREAD_GONE] = "THREAD_GONE",
                [ADMIT_FOREIGN_DEADLINE] = "FOREIGN_DEADLINE",
                [ADMIT_RATE_LIMITED] = "RATE_LIMITED",
                [ADMIT_NOT_YOURS] = "NOT_YOURS",
                [ADMIT_BAD_GROUP_BANDWIDTH] = "BAD_GROUP_BANDWIDTH",
        };

        for (int i = 0; i < _ADMIT_MAX; i++) {
                cr_assert_not_null(names[i], "the test lacks a name for outcome %d", i);
                cr_expect_str_eq(admit_outcome_to_string(i) ?: "(null)", names[i]);
        }
}

Test(tree, path_valid) {
        static const struct {
                const char *path;
                bool valid;
        } cases[] = {
                { "/", true },
                { "audio", true },
                { "audio/pipewire", true },
                { "a", true },
                { "0", true },
                { "A-b_c.d", true },
                { "a..b", true },
                { "cgroups", true },
                { "cgroup", true },
                { "a/b/c/d", true },
                { "", false },
                { ".", false },
                { "..", false },
                { "...", false },
                { ".a", false },
                { "-a", false },
                { "_a", false },
                { "a/..", false },
                { "a/../b", false },
                { "a/./b", false },
                { "a//b", false },
                { "a/", false },
                { "a b", false },
                { "a\tb", false },
                { "a*", false },
                { "a:b", false },
                { "a\\b", false },
                { "\xc3\xa4", false },
                { "cgroup.procs", false },
                { "a/cgroup.subtree_control", false },
        };
        char name64[GROUP_NAME_MAX + 1], name65[GROUP_NAME_MAX + 2];
        char path255[GROUP_PATH_MAX + 1], path256[GROUP_PATH_MAX + 2];
        char deep16[2 * GROUP_DEPTH_MAX], deep17[2 * GROUP_DEPTH_MAX + 2];

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                cr_expect_eq(group_path_valid(cases[i].path), cases[i].valid, "group_path_valid(\"%s\") != %s",
                             cases[i].path, cases[i].valid ? "true" : "false");

        memset(name64, 'n', GROUP_NAME_MAX);
        name64[GROUP_NAME_MAX] = 0;
        memset(name65, 'n', GROUP_NAME_MAX + 1);
        name65[GROUP_NAME_MAX + 1] = 0;
        cr_expect(group_path_valid(name64), "a 64-byte component is valid");
        cr_expect(!group_path_valid(name65), "a 65-byte component is not");

        /* 64 + 1 + 64 + 1 + 64 + 1 + 60 = 255 */
        snprintf(path255, sizeof path255, "%s/%s/%s/%.60s", name64, name64, name64, name64);
        cr_assert_eq(strlen(path255), GROUP_PATH_MAX);
        cr_expect(group_path_valid(path255), "a 255-byte path is valid");
        snprintf(path256, sizeof path256, "%s/%s/%s/%.61s", name64, name64, name64, name64);
        cr_assert_eq(strlen(path256), GROUP_PATH_MAX + 1);
        cr_expect(!group_path_valid(path256), "a 256-byte path is not");

        deep16[0] = 0;
        for (int i = 0; i < GROUP_DEPTH_MAX; i++)
                strcat(deep16, i ? "/a" : "a");
        strcpy(deep17, deep16);
        strcat(deep17, "/a");
        cr_expect(group_path_valid(deep16), "16 deep is valid");
        cr_expect(!group_path_valid(deep17), "17 deep is not");
}

/* ---- tree_new ---- */

Test(tree, new) {
        DlLimits limits = { .period_min = 200 * US, .period_max = 2 * NSEC_PER_SEC };
        Tree *t = NULL;

        cr_assert_eq(tree_new(&t, 2 * 996147, &limits, FORK_INHERIT, FORK_NONE, 3 * MS), 0);
        check(t);
        cr_assert_not_null(t->root);
        cr_expect_str_eq(t->root->path, "/");
        cr_expect_null(t->root->parent);
        cr_expect_eq(t->root->depth, 0);
        cr_expect_eq(t->root->allocated, 0);
        cr_expect_eq(t->root->n_children, 0);
        cr_expect_eq(t->root->n_reservations, 0);
        cr_expect_eq(t->root->fork, FORK_INHERIT);
        cr_expect_eq(t->root->threads, FORK_NONE);
        cr_expect_eq(t->root->min_split_runtime, 3 * MS);
        cr_expect_eq(group_free_bw(t->root), 2 * 996147);
        cr_expect_eq(t->capacity, 2 * 996147);
        cr_expect_eq(t->unmanaged, 0);
        cr_expect_eq(t->n_groups, 1);
        cr_expect_eq(t->n_reservations, 0);
        cr_expect_eq(t->limits.period_min, 200 * US);
        cr_expect_eq(t->limits.period_max, 2 * NSEC_PER_SEC);
        cr_expect_eq(tree_find_group(t, "/"), t->root);
        cr_expect_null(tree_find_group(t, "audio"));
        cr_expect_null(tree_find_group(t, ""));
        cr_expect_null(tree_find_thread(t, 1));
        cr_expect_null(tree_find_process(t, 1));
        cr_expect_null(tree_find_reservation(t, 1));
        cr_expect_null(tree_thread_donor(t, 1));
        cr_expect_null(group_next_preorder(t->root));
        cr_expect(!tree_overcommitted(t));
        cr_expect_gt(tree_memory(t), 0);
        cr_expect_null(tree_free(t));
        cr_expect_null(tree_free(NULL));
}

Test(tree, new_zero_capacity) {
        Tree *t = new_tree(0);
        Group *g = BAD_GROUP;
        Refusal ref = {};
        GroupSpec spec = gspec(1 * MS, P100);

        cr_expect_eq(group_free_bw(t->root), 0);
        cr_expect(!tree_overcommitted(t));
        cr_expect_eq(group_create(t, "a", &spec, &g, &ref), ADMIT_OVER_BUDGET);
        cr_expect_eq(g, BAD_GROUP);
        check(t);
        tree_free(t);
}

/* ---- groups ---- */

Test(tree, group_exact_fit) {
        Tree *t = new_tree(2 * 996147);
        Group *audio, *a, *b, *c, *d;
        GroupSpec spec;
        Refusal ref;

        audio = mkgroup(t, "audio", 40 * MS, P100);
        cr_expect_eq(audio->bw, pct(40));
        cr_expect_eq(audio->runtime, 40 * MS);
        cr_expect_eq(audio->period, P100);
        cr_expect_eq(audio->depth, 1);
        cr_expect_eq(audio->parent, t->root);
        cr_expect_str_eq(audio->name, "audio");
        cr_expect_eq(t->root->allocated, pct(40));
        cr_expect_eq(t->root->n_children, 1);
        cr_expect_eq(t->n_groups, 2);

        a = mkgroup(t, "audio/a", 10 * MS, P100);
        b = mkgroup(t, "audio/b", 15 * MS, P100);
        c = mkgroup(t, "audio/c", 15 * MS, P100);
        cr_expect_eq(a->parent, audio);
        cr_expect_eq(b->depth, 2);
        cr_expect_str_eq(c->name, "c");
        cr_expect_eq(c->name, c->path + strlen("audio/"), "name points into path");
        cr_expect_eq(audio->allocated, pct(10) + 2 * pct(15));
        cr_expect_eq(group_free_bw(audio), pct(40) - pct(10) - 2 * pct(15));
        cr_expect_eq(group_free_bw(audio), 1, "10%% + 15%% + 15%% leaves one unit of 40%%");
        cr_expect_eq(t->root->allocated, pct(40), "the root sees only its child");

        /* two units do not fit, one does, and then nothing */
        spec = gspec(X_RUNTIME(2), X_PERIOD);
        ref = create_refused(t, "audio/d", &spec, ADMIT_OVER_BUDGET);
        cr_expect_eq(ref.free_bw, 1);
        cr_expect_eq(ref.need_bw, 2);
        cr_expect_not_null(ref.name);
        d = mkgroup(t, "audio/d", X_RUNTIME(1), X_PERIOD);
        cr_expect_eq(d->bw, 1);
        cr_expect_eq(group_free_bw(audio), 0);
        spec = gspec(X_RUNTIME(1), X_PERIOD);
        ref = create_refused(t, "audio/e", &spec, ADMIT_OVER_BUDGET);
        cr_expect_eq(ref.free_bw, 0);
        cr_expect_eq(ref.need_bw, 1);
        /* a group of zero bandwidth (rounded down) still fits */
        mkgroup(t, "audio/zero", 1024, 4 * X_PERIOD);
        cr_expect_eq(t->n_groups, 7);
        tree_free(t);
}

Test(tree, group_above_one_cpu) {
        Tree *t = new_tree(pct(180));
        Group *g, *h;
        GroupSpec spec;
        Refusal ref;

        cr_assert_eq(pct(180), 1887436);
        g = mkgroup(t, "big", 150 * MS, P100);
        cr_expect_eq(g->bw, 3 * BW_UNIT / 2);
        h = mkgroup(t, "rest", 30 * MS, P100);
        cr_expect_eq(g->bw + h->bw, pct(180), "150%% + 30%% fills 180%% exactly");
        cr_expect_eq(group_free_bw(t->root), 0);
        spec = gspec(X_RUNTIME(1), X_PERIOD);
        ref = create_refused(t, "more", &spec, ADMIT_OVER_BUDGET);
        cr_expect_eq(ref.free_bw, 0);
        cr_expect_eq(ref.need_bw, 1);
        /* inside the 150% group: a 120% subgroup */
        mkgroup(t, "big/sub", 120 * MS, P100);
        cr_expect_eq(group_free_bw(g), 3 * BW_UNIT / 2 - pct(120));
        tree_free(t);
}

Test(tree, group_create_refusals) {
        Tree *t = new_tree(2 * BW_UNIT);
        GroupSpec spec = gspec(5 * MS, P100);
        char name64[GROUP_NAME_MAX + 1], name65[GROUP_NAME_MAX + 2], path[256];
        static const char *const bad_names[] = {
                "", ".", "..", "a//b", "a/", "a b", "../a", "a/..", "-x", "cgroup.procs", "x\n",
        };
        Refusal ref;
        Group *g;

        mkgroup(t, "a", 50 * MS, P100);
        for (size_t i = 0; i < ELEMENTSOF(bad_names); i++)
                create_refused(t, bad_names[i], &spec, ADMIT_BAD_GROUP_NAME);

        memset(name65, 'n', GROUP_NAME_MAX + 1);
        name65[GROUP_NAME_MAX + 1] = 0;
        create_refused(t, name65, &spec, ADMIT_BAD_GROUP_NAME);
        snprintf(path, sizeof path, "a/%s", name65);
        create_refused(t, path, &spec, ADMIT_BAD_GROUP_NAME);
        memset(name64, 'n', GROUP_NAME_MAX);
        name64[GROUP_NAME_MAX] = 0;
        snprintf(path, sizeof path, "a/%s", name64);
        g = mkgroup(t, path, 5 * MS, P100);
        cr_expect_eq(strlen(g->name), GROUP_NAME_MAX);

        /* the root exists already, or is no name for a new group: either way, refused */
        {
                Group *x = BAD_GROUP;
                uint64_t before = digest(t);
                int r = group_create(t, "/", &spec, &x, &ref);

                cr_expect(r == ADMIT_GROUP_EXISTS || r == ADMIT_BAD_GROUP_NAME, "group_create(\"/\") = %d", r);
                cr_expect_eq(x, BAD_GROUP);
                cr_expect_eq(digest(t), before);
        }

        ref = create_refused(t, "nosuch/x", &spec, ADMIT_NO_SUCH_GROUP);
        ref = create_refused(t, "a/nosuch/x", &spec, ADMIT_NO_SUCH_GROUP);
        create_refused(t, "a", &spec, ADMIT_GROUP_EXISTS);
        create_refused(t, path, &spec, ADMIT_GROUP_EXISTS);

        spec = gspec(0, P100);
        ref = create_refused(t, "b", &spec, ADMIT_BAD_PARAMS);
        spec = gspec(5 * MS, 0);
        ref = create_refused(t, "b", &spec, ADMIT_BAD_PARAMS);
        spec = gspec(0, 0);
        ref = create_refused(t, "b", &spec, ADMIT_BAD_PARAMS);

        /* over budget: 50% of a is taken by 5%, 46% does not fit, 45% does */
        spec = gspec(46 * MS, P100);
        ref = create_refused(t, "a/big", &spec, ADMIT_OVER_BUDGET);
        cr_expect_eq(ref.free_bw, pct(50) - pct(5));
        cr_expect_eq(ref.need_bw, pct(46));
        cr_expect_gt(ref.need_bw, ref.free_bw);
        mkgroup(t, "a/big", 45 * MS, P100);

        /* ret may be NULL */
        spec = gspec(1 * MS, P100);
        cr_expect_eq(group_create(t, "c", &spec, NULL, &ref), 0);
        cr_expect_not_null(tree_find_group(t, "c"));
        check(t);
        tree_free(t);
}

Test(tree, group_depth) {
        Tree *t = new_tree(BW_UNIT);
        GroupSpec spec = gspec(1 * MS, P100);
        char path[2 * GROUP_DEPTH_MAX + 4] = "";
        Group *g = NULL;

        for (int i = 0; i < GROUP_DEPTH_MAX; i++) {
                strcat(path, i ? "/d" : "d");
                g = mkgroup_spec(t, path, &spec);
                cr_expect_eq(g->depth, (unsigned) i + 1);
        }
        strcat(path, "/d");
        create_refused(t, path, &spec, ADMIT_BAD_GROUP_NAME);
        cr_expect_eq(t->n_groups, GROUP_DEPTH_MAX + 1);
        tree_free(t);
}

Test(tree, group_order_and_walk) {
        static const char *const create[] = { "c", "a", "b", "a/z", "a/y", "c/m", "b/x" };
        static const char *const preorder[] = { "/", "a", "a/y", "a/z", "b", "b/x", "c", "c/m" };
        Tree *t = new_tree(2 * BW_UNIT);
        const Group *g;
        size_t i = 0;

        for (size_t k = 0; k < ELEMENTSOF(create); k++)
                mkgroup(t, create[k], strchr(create[k], '/') ? 1 * MS : 10 * MS, P100);
        for (g = t->root; g; g = group_next_preorder(g), i++) {
                cr_assert_lt(i, ELEMENTSOF(preorder), "the walk visits too many groups");
                cr_expect_str_eq(g->path, preorder[i]);
        }
        cr_expect_eq(i, ELEMENTSOF(preorder));
        cr_expect_str_eq(t->root->first_child->path, "a");
        cr_expect_str_eq(t->root->first_child->next_sibling->path, "b");
        cr_expect_str_eq(t->root->first_child->first_child->path, "a/y");
        cr_expect_eq(t->root->n_children, 3);
        cr_expect_eq(tree_find_group(t, "a")->n_children, 2);
        cr_expect_null(tree_find_group(t, "a/x"));
        cr_expect_null(tree_find_group(t, "y"));
        tree_free(t);
}

Test(tree, group_inherits_policies) {
        char *users[] = { (char *) "alice", (char *) "bob", NULL };
        Tree *t = new_tree(2 * BW_UNIT);
        GroupSpec spec = gspec(50 * MS, P100);
        Group *a, *b, *c;

        spec.fork = FORK_INHERIT;
        spec.threads = FORK_NONE;
        spec.min_split_runtime = 2 * MS;
        spec.users = users;
        spec.cgroup = "edfd.slice/a";
        spec.dynamic = true;
        a = mkgroup_spec(t, "a", &spec);
        cr_expect_eq(a->fork, FORK_INHERIT);
        cr_expect_eq(a->threads, FORK_NONE);
        cr_expect_eq(a->min_split_runtime, 2 * MS);
        cr_expect(a->dynamic);
        cr_assert_not_null(a->users);
        cr_expect_neq((void *) a->users, (void *) users, "users are copied");
        cr_expect_str_eq(a->users[0], "alice");
        cr_expect_str_eq(a->users[1], "bob");
        cr_expect_null(a->users[2]);
        cr_assert_not_null(a->cgroup);
        cr_expect_neq((void *) a->cgroup, (void *) spec.cgroup, "cgroup is copied");
        cr_expect_str_eq(a->cgroup, "edfd.slice/a");

        b = mkgroup(t, "a/b", 10 * MS, P100);
        cr_expect_eq(b->fork, FORK_INHERIT);
        cr_expect_eq(b->threads, FORK_NONE);
        cr_expect_eq(b->min_split_runtime, 2 * MS);
        cr_assert_not_null(b->users);
        cr_expect_str_eq(b->users[0], "alice");
        cr_expect(!b->dynamic);

        spec = gspec(5 * MS, P100);
        spec.threads = FORK_SPLIT;
        c = mkgroup_spec(t, "a/b/c", &spec);
        cr_expect_eq(c->fork, FORK_INHERIT);
        cr_expect_eq(c->threads, FORK_SPLIT);

        /* the root's policies flow down to a plain group */
        cr_expect_eq(mkgroup(t, "p", 1 * MS, P100)->fork, FORK_SPLIT);
        cr_expect_eq(tree_find_group(t, "p")->min_split_runtime, 1024);
        cr_expect_null(tree_find_group(t, "p")->users);
        tree_free(t);
}

Test(tree, group_set_bandwidth) {
        Tree *t = new_tree(pct(190));
        Group *audio, *sub;
        Refusal ref = {};
        uint64_t before, free_root;

        audio = mkgroup(t, "audio", 40 * MS, P100);
        sub = mkgroup(t, "audio/sub", 30 * MS, P100);
        admit(t, audio, 10, 5 * MS, 0, P100);
        cr_expect_eq(audio->allocated, pct(30) + pct(5));

        /* the root has only a bandwidth */
        before = digest(t);
        cr_expect_eq(group_set_bandwidth(t, t->root, 10 * MS, P100, &ref), ADMIT_IS_ROOT);
        cr_expect_eq(ref.outcome, ADMIT_IS_ROOT);
        cr_expect_eq(digest(t), before);

        /* below what it holds */
        cr_expect_eq(group_set_bandwidth(t, audio, 30 * MS, P100, &ref), ADMIT_BELOW_ALLOCATED);
        cr_expect_eq(ref.outcome, ADMIT_BELOW_ALLOCATED);
        cr_expect_eq(ref.allocated_bw, pct(30) + pct(5));
        cr_expect_eq(digest(t), before);
        check(t);
        cr_expect_eq(group_set_bandwidth(t, audio, audio->allocated - 1, BW_PERIOD, &ref), ADMIT_BELOW_ALLOCATED);
        cr_expect_eq(digest(t), before);

        /* down to exactly what it holds */
        cr_expect_eq(group_set_bandwidth(t, audio, audio->allocated, BW_PERIOD, &ref), 0);
        check(t);
        cr_expect_eq(audio->bw, pct(30) + pct(5));
        cr_expect_eq(audio->runtime, pct(30) + pct(5));
        cr_expect_eq(audio->period, BW_PERIOD);
        cr_expect_eq(group_free_bw(audio), 0);
        cr_expect_eq(t->root->allocated, pct(30) + pct(5));

        /* above what the parent can give, then exactly that */
        free_root = group_free_bw(t->root);
        before = digest(t);
        cr_expect_eq(group_set_bandwidth(t, audio, audio->bw + free_root + 1, BW_PERIOD, &ref), ADMIT_OVER_BUDGET);
        cr_expect_eq(ref.outcome, ADMIT_OVER_BUDGET);
        cr_expect_gt(ref.need_bw, ref.free_bw);
        cr_expect_eq(digest(t), before);
        check(t);
        cr_expect_eq(group_set_bandwidth(t, audio, audio->bw + free_root, BW_PERIOD, &ref), 0);
        check(t);
        cr_expect_eq(group_free_bw(t->root), 0);
        cr_expect_eq(t->root->allocated, pct(190));

        /* a subgroup is bounded by its parent, not by the root */
        cr_expect_eq(group_set_bandwidth(t, sub, sub->bw + group_free_bw(audio) + 1, BW_PERIOD, &ref),
                     ADMIT_OVER_BUDGET);
        check(t);
        cr_expect_eq(group_set_bandwidth(t, sub, sub->bw + group_free_bw(audio), BW_PERIOD, &ref), 0);
        check(t);
        cr_expect_eq(group_free_bw(audio), 0);

        /* bad numbers */
        before = digest(t);
        cr_expect_eq(group_set_bandwidth(t, sub, 0, P100, &ref), ADMIT_BAD_PARAMS);
        cr_expect_eq(group_set_bandwidth(t, sub, 10 * MS, 0, &ref), ADMIT_BAD_PARAMS);
        cr_expect_eq(ref.outcome, ADMIT_BAD_PARAMS);
        cr_expect_eq(digest(t), before);

        /* shrink: the parent gets the difference back */
        cr_expect_eq(group_set_bandwidth(t, sub, 10 * MS, P100, &ref), 0);
        check(t);
        cr_expect_eq(audio->allocated, pct(10) + pct(5));
        tree_free(t);
}

Test(tree, group_remove) {
        Tree *t = new_tree(BW_UNIT);
        Group *a, *b, *c;
        Reservation *r;
        Refusal ref = {};
        ReleaseEffect eff;
        uint64_t before;

        a = mkgroup(t, "a", 50 * MS, P100);
        b = mkgroup(t, "a/b", 20 * MS, P100);
        c = mkgroup(t, "c", 10 * MS, P100);
        r = admit(t, c, 5, 1 * MS, 0, P100);

        before = digest(t);
        cr_expect_eq(group_remove(t, t->root, &ref), ADMIT_IS_ROOT);
        cr_expect_eq(ref.outcome, ADMIT_IS_ROOT);
        cr_expect_eq(group_remove(t, a, &ref), ADMIT_GROUP_NOT_EMPTY, "a group with a child group");
        cr_expect_eq(ref.outcome, ADMIT_GROUP_NOT_EMPTY);
        cr_expect_eq(group_remove(t, c, &ref), ADMIT_GROUP_NOT_EMPTY, "a group with a reservation");
        cr_expect_eq(digest(t), before);
        check(t);

        cr_expect_eq(group_remove(t, b, &ref), 0);
        check(t);
        cr_expect_null(tree_find_group(t, "a/b"));
        cr_expect_eq(a->allocated, 0);
        cr_expect_eq(a->n_children, 0);
        cr_expect_eq(t->n_groups, 3);
        cr_expect_eq(group_remove(t, a, &ref), 0);
        check(t);
        cr_expect_eq(t->root->allocated, pct(10));

        reservation_release(t, r, &eff);
        check(t);
        cr_expect_eq(group_remove(t, c, &ref), 0);
        check(t);
        cr_expect_eq(t->root->allocated, 0);
        cr_expect_eq(t->n_groups, 1);
        cr_expect_null(t->root->first_child);

        /* the name can be used again */
        a = mkgroup(t, "a", 100 * MS, P100);
        cr_expect_eq(group_free_bw(t->root), 0);
        tree_free(t);
}

/* ---- reservations ---- */

Test(tree, admit_and_release) {
        Tree *t = new_tree(2 * 996147);
        Group *app = mkgroup(t, "app", 25 * MS, P100);
        ReservationSpec spec;
        Reservation *r1, *r2, *r3;
        ReleaseEffect eff;
        Refusal ref;

        r1 = admit(t, app, 101, 10 * MS, 0, P100);
        cr_expect_eq(r1->params.runtime, 10 * MS);
        cr_expect_eq(r1->params.deadline, P100, "deadline 0 means the period");
        cr_expect_eq(r1->params.period, P100);
        cr_expect_eq(r1->bw, pct(10));
        cr_expect_eq(r1->pid, 101);
        cr_expect_eq(r1->uid, 1000);
        cr_expect_eq(r1->identity, 4242 + 101);
        cr_expect_eq(r1->flags, 7);
        cr_expect_eq(r1->donor, 0);
        cr_expect_neq(r1->id, 0);
        cr_expect_eq(app->allocated, pct(10));
        cr_expect_eq(t->root->allocated, pct(25), "reservations inside a group do not touch the root");

        r2 = admit(t, app, 102, 10 * MS, 20 * MS, P100);
        cr_expect_eq(r2->params.deadline, 20 * MS);
        cr_expect_neq(r2->id, r1->id);
        cr_expect_eq(app->allocated, 2 * pct(10));

        /* over budget: the refusal carries the numbers */
        spec = rspec(103, 103, 10 * MS, 0, P100);
        ref = admit_refused(t, app, &spec, ADMIT_OVER_BUDGET);
        cr_expect_eq(ref.free_bw, pct(25) - 2 * pct(10));
        cr_expect_eq(ref.need_bw, pct(10));
        cr_assert_not_null(ref.name);
        cr_expect_str_eq(ref.name, "app");

        /* what is left fits exactly */
        spec = rspec(103, 103, pct(25) - 2 * pct(10), 0, BW_PERIOD);
        r3 = admit_spec(t, app, &spec);
        cr_expect_eq(r3->bw, pct(25) - 2 * pct(10));
        cr_expect_eq(group_free_bw(app), 0);
        cr_expect_eq(app->n_reservations, 3);
        cr_expect_eq(t->n_reservations, 3);
        cr_expect_eq(app->first_reservation, r1);
        cr_expect_eq(app->last_reservation, r3);
        cr_expect_eq(reservation_next(t, NULL), r1);
        cr_expect_eq(reservation_next(t, r1), r2);
        cr_expect_eq(reservation_next(t, r2), r3);
        cr_expect_null(reservation_next(t, r3));

        /* release gives the bandwidth back, and a new one fits again */
        memset(&eff, 0x55, sizeof eff);
        reservation_release(t, r2, &eff);
        check(t);
        cr_expect_null(eff.donor);
        cr_expect_eq(app->allocated, pct(10) + r3->bw);
        cr_expect_eq(app->n_reservations, 2);
        cr_expect_eq(t->n_reservations, 2);
        cr_expect_null(tree_find_thread(t, 102));
        cr_expect_eq(r1->group_next, r3);
        spec = rspec(104, 104, 10 * MS, 0, P100);
        admit_spec(t, app, &spec);
        cr_expect_eq(group_free_bw(app), 0);
        tree_free(t);
}

Test(tree, admit_refusals) {
        Tree *t = new_tree(2 * BW_UNIT);
        Group *a = mkgroup(t, "a", 50 * MS, P100);
        Group *b = mkgroup(t, "b", 50 * MS, P100);
        ReservationSpec spec;
        Reservation *r1;
        Refusal ref;
        static const struct {
                DlParams p;
                ParamsOutcome o;
        } bad[] = {
                { { 10 * MS, 10 * MS, 0 }, PARAMS_PERIOD_ZERO },
                { { 10 * MS, 0, UINT64_C(1) << 63 }, PARAMS_BIT63 },
                { { 0, 0, P100 }, PARAMS_RUNTIME_TOO_SMALL },
                { { 1, 0, P100 }, PARAMS_RUNTIME_TOO_SMALL },
                { { 1023, 0, P100 }, PARAMS_RUNTIME_TOO_SMALL },
                { { 20 * MS, 10 * MS, P100 }, PARAMS_RUNTIME_ABOVE_DEADLINE },
                { { 20 * MS, 0, 10 * MS }, PARAMS_RUNTIME_ABOVE_DEADLINE },
                { { 10 * MS, 200 * MS, P100 }, PARAMS_DEADLINE_ABOVE_PERIOD },
                { { 1024, 0, 100 * US - 1 }, PARAMS_PERIOD_TOO_SHORT },
                { { 1024, 0, UINT64_C(4194304001) }, PARAMS_PERIOD_TOO_LONG },
        };

        r1 = admit(t, a, 10, 1 * MS, 0, P100);

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                spec = rspec(20, 20, 0, 0, 0);
                spec.params = bad[i].p;
                ref = admit_refused(t, a, &spec, ADMIT_BAD_PARAMS);
                cr_expect_eq(ref.params, bad[i].o, "(%" PRIu64 ", %" PRIu64 ", %" PRIu64 "): params %d, expected %d",
                             bad[i].p.runtime, bad[i].p.deadline, bad[i].p.period, ref.params, bad[i].o);
        }

        /* the thread already holds a reservation, here or elsewhere */
        spec = rspec(10, 10, 1 * MS, 0, P100);
        admit_refused(t, a, &spec, ADMIT_ALREADY_ADMITTED);
        admit_refused(t, b, &spec, ADMIT_ALREADY_ADMITTED);
        spec = rspec(99, 10, 1 * MS, 0, P100);
        admit_refused(t, b, &spec, ADMIT_ALREADY_ADMITTED);
        /* even when it would not fit: the thread is the first problem */
        spec = rspec(10, 10, 90 * MS, 0, P100);
        admit_refused(t, b, &spec, ADMIT_ALREADY_ADMITTED);

        /* re-adoption with a taken id */
        spec = rspec(30, 30, 1 * MS, 0, P100);
        spec.id = r1->id;
        admit_refused(t, b, &spec, ADMIT_ID_IN_USE);

        /* ret and a stranger's group are untouched by all of it */
        cr_expect_eq(b->allocated, 0);
        cr_expect_eq(a->allocated, pct(1));
        tree_free(t);
}

Test(tree, one_whole_cpu_thread) {
        Tree *t = new_tree(2 * BW_UNIT);
        Group *big = mkgroup(t, "big", 150 * MS, P100);
        Group *one = mkgroup(t, "one", 50 * MS, P100);
        ReservationSpec spec;
        Reservation *r;
        Refusal ref;

        /* runtime == deadline == period: exactly one CPU, allowed */
        r = admit(t, big, 1, P100, P100, P100);
        cr_expect_eq(r->bw, BW_UNIT);
        cr_expect_eq(big->allocated, BW_UNIT);
        r = admit(t, big, 2, 50 * US, 0, 100 * US);
        cr_expect_eq(r->bw, BW_UNIT / 2);
        cr_expect_eq(group_free_bw(big), 0);
        spec = rspec(3, 3, P100, P100, P100);
        ref = admit_refused(t, one, &spec, ADMIT_OVER_BUDGET);
        cr_expect_eq(ref.need_bw, BW_UNIT);
        cr_expect_eq(ref.free_bw, pct(50));
        tree_free(t);
}

Test(tree, readopt_ids) {
        Tree *t = new_tree(2 * BW_UNIT);
        Group *g = mkgroup(t, "g", 100 * MS, P100);
        ReservationSpec spec;
        Reservation *old, *r[10];

        spec = rspec(1, 1, 1 * MS, 0, P100);
        spec.id = 5;
        old = admit_spec(t, g, &spec);
        cr_expect_eq(old->id, 5);
        spec = rspec(2, 2, 1 * MS, 0, P100);
        spec.id = 1000;
        spec.donor = 5;
        old = admit_spec(t, g, &spec);
        cr_expect_eq(old->id, 1000);
        cr_expect_eq(old->donor, 5, "re-adoption keeps the donor link");
        cr_expect_eq(tree_find_reservation(t, 1000), old);

        for (uint32_t i = 0; i < ELEMENTSOF(r); i++) {
                r[i] = admit(t, g, 100 + i, 1 * MS, 0, P100);
                cr_expect_neq(r[i]->id, 5);
                cr_expect_neq(r[i]->id, 1000);
                cr_expect_neq(r[i]->id, 0);
                for (uint32_t j = 0; j < i; j++)
                        cr_expect_neq(r[i]->id, r[j]->id);
        }
        /* ids are never reused, not even after a release */
        {
                uint64_t gone = r[0]->id;
                ReleaseEffect eff;

                reservation_release(t, r[0], &eff);
                check(t);
                for (uint32_t i = 0; i < 20; i++) {
                        Reservation *x = admit(t, g, 200 + i, 1 * MS, 0, P100);

                        cr_expect_neq(x->id, gone, "id %" PRIu64 " was reused", gone);
                        cr_expect_neq(x->id, 5);
                        cr_expect_neq(x->id, 1000);
                        reservation_release(t, x, &eff);
                        check(t);
                }
        }
        tree_free(t);
}

Test(tree, processes) {
        Tree *t = new_tree(2 * BW_UNIT);
        Group *g = mkgroup(t, "g", 100 * MS, P100);
        ReservationSpec spec;
        Reservation *r[4];
        ReleaseEffect eff;
        unsigned seen;

        for (uint32_t i = 0; i < 4; i++) {
                spec = rspec(500, 500 + i, (i + 1) * MS, 0, P100);
                r[i] = admit_spec(t, g, &spec);
        }
        spec = rspec(600, 600, 1 * MS, 0, P100);
        admit_spec(t, g, &spec);

        seen = 0;
        for (const Reservation *x = tree_find_process(t, 500); x; x = x->proc_next) {
                cr_assert_eq(x->pid, 500);
                for (unsigned i = 0; i < 4; i++)
                        if (x == r[i])
                                seen |= 1u << i;
        }
        cr_expect_eq(seen, 0xf, "every thread of the process is on its chain");

        reservation_release(t, r[0], &eff);
        check(t);
        seen = 0;
        for (const Reservation *x = tree_find_process(t, 500); x; x = x->proc_next)
                seen++;
        cr_expect_eq(seen, 3);
        cr_expect_null(tree_find_process(t, 501));
        cr_expect_eq(tree_find_process(t, 600)->tid, 600);
        tree_free(t);
}

Test(tree, update) {
        Tree *t = new_tree(2 * BW_UNIT);
        Group *g = mkgroup(t, "g", 30 * MS, P100);
        Reservation *r1, *r2;
        Refusal ref = {};
        DlParams p;
        uint64_t before;

        r1 = admit(t, g, 1, 10 * MS, 0, P100);
        r2 = admit(t, g, 2, 10 * MS, 0, P100);

        /* more than is free is refused; exactly what is free fits */
        p = (DlParams) { 21 * MS, 0, P100 };
        before = digest(t);
        cr_expect_eq(reservation_update(t, r1, &p, &ref), ADMIT_OVER_BUDGET, "21%% + 10%% > 30%%");
        cr_expect_eq(ref.outcome, ADMIT_OVER_BUDGET);
        cr_expect_gt(ref.need_bw, ref.free_bw);
        cr_expect_eq(digest(t), before);
        check(t);

        cr_assert_eq(pct(20) + pct(10), pct(30));
        p = (DlParams) { 20 * MS, 0, P100 };
        cr_expect_eq(reservation_update(t, r1, &p, &ref), 0);
        check(t);
        cr_expect_eq(r1->params.runtime, 20 * MS);
        cr_expect_eq(r1->params.deadline, P100, "deadline 0 means the period");
        cr_expect_eq(r1->bw, pct(20));
        cr_expect_eq(g->allocated, pct(30));
        cr_expect_eq(group_free_bw(g), 0);

        /* bad parameters: refused with the reason, nothing changed */
        before = digest(t);
        p = (DlParams) { 1023, 0, P100 };
        cr_expect_eq(reservation_update(t, r1, &p, &ref), ADMIT_BAD_PARAMS);
        cr_expect_eq(ref.outcome, ADMIT_BAD_PARAMS);
        cr_expect_eq(ref.params, PARAMS_RUNTIME_TOO_SMALL);
        p = (DlParams) { 10 * MS, 0, 0 };
        cr_expect_eq(reservation_update(t, r1, &p, &ref), ADMIT_BAD_PARAMS);
        cr_expect_eq(ref.params, PARAMS_PERIOD_ZERO);
        cr_expect_eq(digest(t), before);
        check(t);

        /* shrink, change the period */
        p = (DlParams) { 1 * MS, 5 * MS, 10 * MS };
        cr_expect_eq(reservation_update(t, r2, &p, &ref), 0);
        check(t);
        cr_expect_eq(r2->params.deadline, 5 * MS);
        cr_expect_eq(r2->bw, bw(1 * MS, 10 * MS));
        cr_expect_eq(g->allocated, pct(20) + bw(1 * MS, 10 * MS));

        /* the same parameters again: a no-op that succeeds */
        p = r2->params;
        cr_expect_eq(reservation_update(t, r2, &p, &ref), 0);
        check(t);
        tree_free(t);
}

/* ---- fork split ---- */

static Reservation *split(Tree *t, Reservation *donor, bool is_thread, uint32_t tid, DlParams *ret_old) {
        Reservation *child = NULL;
        DlParams old = {};
        Refusal ref = {};
        int r;

        r = reservation_split(t, donor, is_thread, donor->pid + (is_thread ? 0 : 1000), tid, 777, &child, &old, &ref);
        cr_assert_eq(r, 0, "reservation_split() = %d (%s)", r, r > 0 ? admit_outcome_to_string(r) : "errno");
        cr_assert_not_null(child);
        cr_assert_eq(tree_find_thread(t, tid), child);
        cr_assert_eq(child->tid, tid);
        cr_assert_eq(child->identity, 777);
        cr_assert_eq(child->group, donor->group);
        check(t);
        if (ret_old)
                *ret_old = old;
        return child;
}

static void split_refused(Tree *t, Reservation *donor, bool is_thread, uint32_t tid, AdmitOutcome want,
                          Refusal *ret_ref) {
        Reservation *child = BAD_RES;
        DlParams old = { 1, 2, 3 };
        Refusal ref = {};
        uint64_t before = digest(t);
        int r;

        r = reservation_split(t, donor, is_thread, donor->pid, tid, 777, &child, &old, &ref);
        cr_assert_eq(r, (int) want, "reservation_split() = %d (%s), expected %s", r,
                     r > 0 ? admit_outcome_to_string(r) : "errno", admit_outcome_to_string(want));
        cr_assert_eq(ref.outcome, want);
        cr_assert_eq(child, BAD_RES, "*ret_child written on a refusal");
        cr_assert_eq(digest(t), before, "a refused split changed the books");
        check(t);
        if (ret_ref)
                *ret_ref = ref;
}

Test(tree, split_halves) {
        static const uint64_t runtimes[] = { 20 * MS, 20 * MS + 1, 2048, 2049, 3 * MS + 7, 50 * MS };
        Tree *t = new_tree(2 * BW_UNIT);
        Group *g = mkgroup(t, "w", 50 * MS, P100);

        for (size_t i = 0; i < ELEMENTSOF(runtimes); i++) {
                uint64_t R = runtimes[i], alloc;
                Reservation *d, *c;
                ReleaseEffect eff;
                DlParams old;

                d = admit(t, g, 1, R, 50 * MS, P100);
                alloc = g->allocated;
                c = split(t, d, false, 2, &old);
                cr_expect_eq(old.runtime, R);
                cr_expect_eq(old.deadline, 50 * MS);
                cr_expect_eq(old.period, P100);
                cr_expect_eq(c->params.runtime, R / 2, "runtime %" PRIu64 ": child %" PRIu64, R, c->params.runtime);
                cr_expect_eq(d->params.runtime, R - R / 2, "runtime %" PRIu64 ": donor %" PRIu64, R, d->params.runtime);
                cr_expect_eq(c->params.deadline, 50 * MS);
                cr_expect_eq(c->params.period, P100);
                cr_expect_eq(d->params.deadline, 50 * MS);
                cr_expect_eq(d->bw, bw(R - R / 2, P100));
                cr_expect_eq(c->bw, bw(R / 2, P100));
                cr_expect_eq(c->donor, d->id);
                cr_expect_eq(c->pid, 1001);
                cr_expect_leq(g->allocated, alloc, "a split never grows the group's allocation");
                cr_expect_geq(g->allocated + 1, alloc, "a split loses at most one rounding unit");
                cr_expect_eq(g->allocated, d->bw + c->bw);
                cr_expect_eq(g->n_reservations, 2);

                /* the child's exit gives the donor its full runtime back */
                reservation_release(t, c, &eff);
                check(t);
                cr_expect_eq(eff.donor, d);
                cr_expect_eq(eff.donor_old.runtime, R - R / 2);
                cr_expect_eq(eff.donor_old.period, P100);
                cr_expect_eq(d->params.runtime, R);
                cr_expect_eq(d->bw, bw(R, P100));
                cr_expect_eq(g->allocated, alloc);

                reservation_release(t, d, &eff);
                check(t);
                cr_expect_eq(g->allocated, 0);
        }
        tree_free(t);
}

Test(tree, split_cycles_keep_the_budget) {
        Tree *t = new_tree(2 * BW_UNIT);
        Group *g = mkgroup(t, "w", 20 * MS, P100);
        Reservation *d = admit(t, g, 1, 20 * MS, 0, P100);

        cr_assert_eq(group_free_bw(g), 0, "the donor fills its group");
        for (uint32_t i = 0; i < 200; i++) {
                ReleaseEffect eff;
                Reservation *c = split(t, d, i % 2, 100 + i, NULL);

                cr_expect_eq(g->allocated, 2 * pct(10), "20 ms splits into two 10 ms halves that lose a unit");
                reservation_release(t, c, &eff);
                check(t);
                cr_expect_eq(eff.donor, d);
                cr_assert_eq(d->params.runtime, 20 * MS, "cycle %u: the donor lost budget", i);
                cr_assert_eq(g->allocated, pct(20));
        }
        tree_free(t);
}

Test(tree, split_chain) {
        Tree *t = new_tree(2 * BW_UNIT);
        Group *g = mkgroup(t, "w", 40 * MS, P100);
        Reservation *d = admit(t, g, 1, 40 * MS, 0, P100), *c1, *c2;
        ReleaseEffect eff;

        c1 = split(t, d, false, 2, NULL);
        c2 = split(t, c1, false, 3, NULL);
        cr_expect_eq(d->params.runtime, 20 * MS);
        cr_expect_eq(c1->params.runtime, 10 * MS);
        cr_expect_eq(c2->params.runtime, 10 * MS);
        cr_expect_eq(c2->donor, c1->id);
        reservation_release(t, c2, &eff);
        check(t);
        cr_expect_eq(eff.donor, c1);
        cr_expect_eq(c1->params.runtime, 20 * MS);
        reservation_release(t, c1, &eff);
        check(t);
        cr_expect_eq(eff.donor, d);
        cr_expect_eq(d->params.runtime, 40 * MS);
        cr_expect_eq(g->allocated, pct(40));
        tree_free(t);
}

Test(tree, split_donor_gone_first) {
        Tree *t = new_tree(2 * BW_UNIT);
        Group *g = mkgroup(t, "w", 20 * MS, P100);
        Reservation *d = admit(t, g, 1, 20 * MS, 0, P100), *c, *other;
        ReleaseEffect eff;

        c = split(t, d, false, 2, NULL);
        reservation_release(t, d, &eff);
        check(t);
        cr_expect_null(eff.donor);
        cr_expect_eq(g->allocated, pct(10));
        /* a new thread that happens to get a reservation does not inherit the dead donor's budget */
        other = admit(t, g, 3, 1 * MS, 0, P100);
        reservation_release(t, c, &eff);
        check(t);
        cr_expect_null(eff.donor, "the child's runtime goes back to the group");
        cr_expect_eq(other->params.runtime, 1 * MS);
        cr_expect_eq(g->allocated, pct(1));
        tree_free(t);
}

Test(tree, split_no_return_when_donor_changed) {
        Tree *t = new_tree(2 * BW_UNIT);
        Group *g = mkgroup(t, "w", 50 * MS, P100);
        Reservation *d, *c;
        ReleaseEffect eff;
        Refusal ref = {};
        DlParams p;

        /* the donor's period changed: no return */
        d = admit(t, g, 1, 20 * MS, 0, P100);
        c = split(t, d, false, 2, NULL);
        p = (DlParams) { 5 * MS, 0, 50 * MS };
        cr_assert_eq(reservation_update(t, d, &p, &ref), 0);
        check(t);
        reservation_release(t, c, &eff);
        check(t);
        cr_expect_null(eff.donor, "a donor with another period gets nothing back");
        cr_expect_eq(d->params.runtime, 5 * MS);
        cr_expect_eq(g->allocated, bw(5 * MS, 50 * MS));
        reservation_release(t, d, &eff);
        check(t);

        /* the donor grew so that the child's runtime no longer fits under its deadline */
        d = admit(t, g, 1, 20 * MS, 30 * MS, P100);
        c = split(t, d, false, 2, NULL);
        cr_assert_eq(d->params.runtime, 10 * MS);
        p = (DlParams) { 25 * MS, 30 * MS, P100 };
        cr_assert_eq(reservation_update(t, d, &p, &ref), 0);
        check(t);
        reservation_release(t, c, &eff);
        check(t);
        cr_expect_null(eff.donor, "25 ms + 10 ms does not fit a 30 ms deadline");
        cr_expect_eq(d->params.runtime, 25 * MS);
        cr_expect_eq(g->allocated, pct(25));
        reservation_release(t, d, &eff);
        check(t);

        /* exactly at the deadline is still room */
        d = admit(t, g, 1, 20 * MS, 30 * MS, P100);
        c = split(t, d, false, 2, NULL);
        p = (DlParams) { 20 * MS, 30 * MS, P100 };
        cr_assert_eq(reservation_update(t, d, &p, &ref), 0);
        check(t);
        reservation_release(t, c, &eff);
        check(t);
        cr_expect_eq(eff.donor, d);
        cr_expect_eq(eff.donor_old.runtime, 20 * MS);
        cr_expect_eq(d->params.runtime, 30 * MS);
        tree_free(t);
}

/* 20 ms every 100 ms is 209715 units; its halves are 104857 each: the split frees one unit. If that
 * unit is taken meanwhile, the donor cannot get the child's runtime back. */
Test(tree, split_rounding_unit) {
        Tree *t = new_tree(2 * BW_UNIT);
        Group *g = mkgroup(t, "w", 20 * MS, P100);
        Reservation *d, *c, *filler;
        ReservationSpec spec;
        ReleaseEffect eff;

        cr_assert_eq(pct(20), 2 * pct(10) + 1);
        d = admit(t, g, 1, 20 * MS, 0, P100);
        c = split(t, d, false, 2, NULL);
        cr_expect_eq(group_free_bw(g), 1);
        spec = rspec(3, 3, 1024, 0, NSEC_PER_SEC);
        filler = admit_spec(t, g, &spec);
        cr_assert_eq(filler->bw, 1);
        cr_expect_eq(group_free_bw(g), 0);

        reservation_release(t, c, &eff);
        check(t);
        cr_expect_null(eff.donor, "the group cannot cover the rounding unit");
        cr_expect_eq(d->params.runtime, 10 * MS);
        cr_expect_eq(g->allocated, pct(10) + 1);

        /* with the unit free, the same return succeeds */
        c = split(t, d, false, 2, NULL);
        cr_expect_eq(d->params.runtime, 5 * MS);
        reservation_release(t, filler, &eff);
        check(t);
        reservation_release(t, c, &eff);
        check(t);
        cr_expect_eq(eff.donor, d);
        cr_expect_eq(d->params.runtime, 10 * MS);
        tree_free(t);
}

Test(tree, split_policies) {
        Tree *t = new_tree(2 * BW_UNIT);
        GroupSpec spec = gspec(50 * MS, P100);
        ReservationSpec rs;
        Group *g;
        Reservation *d, *c, *other;
        ReleaseEffect eff;
        Refusal ref;

        /* processes: none, threads: split */
        spec.fork = FORK_NONE;
        spec.threads = FORK_SPLIT;
        g = mkgroup_spec(t, "nofork", &spec);
        d = admit(t, g, 1, 20 * MS, 0, P100);
        split_refused(t, d, false, 2, ADMIT_FORK_NONE, NULL);
        c = split(t, d, true, 3, NULL);
        cr_expect_eq(c->params.runtime, 10 * MS);

        /* processes: split, threads: none */
        spec.fork = FORK_SPLIT;
        spec.threads = FORK_NONE;
        g = mkgroup_spec(t, "nothreads", &spec);
        d = admit(t, g, 11, 20 * MS, 0, P100);
        split_refused(t, d, true, 12, ADMIT_FORK_NONE, NULL);
        c = split(t, d, false, 13, NULL);
        cr_expect_eq(c->params.runtime, 10 * MS);

        /* the child already holds a reservation */
        rs = rspec(20, 20, 1 * MS, 0, P100);
        other = admit_spec(t, g, &rs);
        split_refused(t, d, false, 20, ADMIT_ALREADY_ADMITTED, NULL);
        (void) other;
        (void) eff;
        (void) ref;
        tree_free(t);
}

Test(tree, split_too_small) {
        Tree *t = new_tree(2 * BW_UNIT);
        GroupSpec spec = gspec(50 * MS, P100);
        Group *g;
        Reservation *d, *c;
        Refusal ref = {};

        spec.min_split_runtime = 1 * MS;
        g = mkgroup_spec(t, "w", &spec);
        cr_expect_eq(g->min_split_runtime, 1 * MS);
        d = admit(t, g, 1, 2 * MS - 1, 0, P100);
        split_refused(t, d, false, 2, ADMIT_SPLIT_TOO_SMALL, &ref);
        cr_expect_eq(ref.min_runtime, 1 * MS);
        cr_expect_eq(d->params.runtime, 2 * MS - 1);
        split_refused(t, d, true, 2, ADMIT_SPLIT_TOO_SMALL, NULL);

        /* exactly twice the minimum splits into two minimums */
        d = admit(t, g, 3, 2 * MS, 0, P100);
        c = split(t, d, false, 4, NULL);
        cr_expect_eq(c->params.runtime, 1 * MS);
        cr_expect_eq(d->params.runtime, 1 * MS);
        split_refused(t, d, false, 5, ADMIT_SPLIT_TOO_SMALL, NULL);
        split_refused(t, c, false, 5, ADMIT_SPLIT_TOO_SMALL, NULL);
        tree_free(t);
}

Test(tree, split_inherit) {
        Tree *t = new_tree(2 * BW_UNIT);
        GroupSpec spec = gspec(25 * MS, P100);
        Group *g;
        Reservation *d, *c1, *c2;
        ReleaseEffect eff;
        DlParams old;

        spec.fork = FORK_INHERIT;
        spec.threads = FORK_INHERIT;
        spec.min_split_runtime = 1 * MS;
        g = mkgroup_spec(t, "inh", &spec);
        d = admit(t, g, 1, 10 * MS, 50 * MS, P100);

        /* room: the child gets the donor's full parameters, the donor keeps its own */
        c1 = split(t, d, false, 2, &old);
        cr_expect_eq(c1->params.runtime, 10 * MS);
        cr_expect_eq(c1->params.deadline, 50 * MS);
        cr_expect_eq(c1->params.period, P100);
        cr_expect_eq(d->params.runtime, 10 * MS);
        cr_expect_eq(old.runtime, 10 * MS);
        cr_expect_eq(g->allocated, 2 * pct(10));

        /* no room (5% free, 10% needed): split */
        c2 = split(t, d, true, 3, NULL);
        cr_expect_eq(c2->params.runtime, 5 * MS);
        cr_expect_eq(d->params.runtime, 5 * MS);
        cr_expect_eq(c2->donor, d->id);
        cr_expect_leq(g->allocated, 2 * pct(10));

        /* the split child returns its half; the inherited child's exit does not inflate the donor */
        reservation_release(t, c2, &eff);
        check(t);
        cr_expect_eq(eff.donor, d);
        cr_expect_eq(d->params.runtime, 10 * MS);
        reservation_release(t, c1, &eff);
        check(t);
        cr_expect_eq(d->params.runtime, 10 * MS, "a child with full parameters gives nothing to the donor");
        cr_expect_eq(g->allocated, pct(10));

        /* no room and too small to split */
        cr_assert_eq(reservation_update(t, d, &(DlParams) { 25 * MS - 1, 0, P100 }, &(Refusal) {}), 0);
        cr_expect_eq(group_free_bw(g), pct(25) - bw(25 * MS - 1, P100));
        d = admit(t, g, 10, 1024, 0, NSEC_PER_SEC);
        split_refused(t, d, false, 11, ADMIT_SPLIT_TOO_SMALL, NULL);
        tree_free(t);
}

/* ---- the thread donor ---- */

Test(tree, thread_donor) {
        Tree *t = new_tree(2 * BW_UNIT);
        Group *g = mkgroup(t, "g", 200 * MS, P100);
        ReservationSpec spec;
        Reservation *a, *b, *c;
        ReleaseEffect eff;

        cr_expect_null(tree_thread_donor(t, 500));
        spec = rspec(500, 501, 5 * MS, 0, P100);
        spec.id = 80;
        a = admit_spec(t, g, &spec);
        cr_expect_eq(tree_thread_donor(t, 500), a);

        /* a larger runtime wins, whatever its id */
        spec = rspec(500, 502, 10 * MS, 0, P100);
        spec.id = 95;
        b = admit_spec(t, g, &spec);
        cr_expect_eq(tree_thread_donor(t, 500), b);

        /* a tie goes to the lowest id, not to the first admitted */
        spec = rspec(500, 503, 10 * MS, 0, P100);
        spec.id = 90;
        c = admit_spec(t, g, &spec);
        cr_expect_eq(tree_thread_donor(t, 500), c);

        /* runtime, not bandwidth */
        spec = rspec(500, 504, 9 * MS, 0, 10 * MS);
        spec.id = 70;
        admit_spec(t, g, &spec);
        cr_expect_eq(tree_thread_donor(t, 500), c);

        /* another process does not count */
        spec = rspec(600, 601, 50 * MS, 0, P100);
        admit_spec(t, g, &spec);
        cr_expect_eq(tree_thread_donor(t, 500), c);
        cr_expect_eq(tree_thread_donor(t, 600)->tid, 601);
        cr_expect_null(tree_thread_donor(t, 501), "a thread id is no process id");

        reservation_release(t, c, &eff);
        check(t);
        cr_expect_eq(tree_thread_donor(t, 500), b);
        tree_free(t);
}

/* ---- capacity ---- */

Test(tree, capacity_and_unmanaged) {
        Tree *t = new_tree(pct(180));
        Group *g = mkgroup(t, "g", 100 * MS, P100);
        Reservation *r;
        ReservationSpec spec;
        Refusal ref;

        r = admit(t, t->root, 1, 50 * MS, 0, P100);
        cr_expect_eq(group_free_bw(t->root), pct(180) - pct(100) - pct(50));

        /* unmanaged bandwidth is charged at the root */
        cr_expect(!tree_set_capacity(t, pct(180), pct(10)));
        check(t);
        cr_expect_eq(t->capacity, pct(180));
        cr_expect_eq(t->unmanaged, pct(10));
        cr_expect_eq(group_free_bw(t->root), pct(180) - pct(100) - pct(50) - pct(10));
        spec = rspec(2, 2, 20 * MS + 1 * MS, 0, P100);
        ref = admit_refused(t, t->root, &spec, ADMIT_OVER_BUDGET);
        cr_expect_eq(ref.free_bw, pct(180) - pct(100) - pct(50) - pct(10));
        spec = rspec(2, 2, pct(180) - pct(100) - pct(50) - pct(10), 0, BW_PERIOD);
        admit_spec(t, t->root, &spec);
        cr_expect_eq(group_free_bw(t->root), 0);
        cr_expect(!tree_overcommitted(t));

        /* exactly full is not over-committed; one unit less is */
        cr_expect(!tree_set_capacity(t, pct(180), pct(10)));
        cr_expect(tree_set_capacity(t, pct(180) - 1, pct(10)));
        check(t);
        cr_expect(tree_overcommitted(t));
        cr_expect_eq(group_free_bw(t->root), 0);
        cr_expect_eq(t->n_reservations, 2, "nobody is evicted");

        /* all of it back */
        cr_expect(!tree_set_capacity(t, pct(180), 0));
        check(t);
        cr_expect(!tree_overcommitted(t));
        cr_expect_eq(group_free_bw(t->root), pct(10));
        (void) r;
        (void) g;
        tree_free(t);
}

Test(tree, overcommit) {
        Tree *t = new_tree(pct(180));
        Group *g = mkgroup(t, "g", 100 * MS, P100);
        Reservation *r1, *r2;
        ReservationSpec spec;
        ReleaseEffect eff;
        Refusal ref = {};
        DlParams p;
        uint64_t before;

        r1 = admit(t, t->root, 1, 40 * MS, 0, P100);
        r2 = admit(t, t->root, 2, 30 * MS, 0, P100);
        admit(t, g, 3, 10 * MS, 0, P100);

        /* the kernel shrinks (fewer CPUs, a new fair server, an unmanaged deadline task) */
        cr_expect(tree_set_capacity(t, pct(150), 0), "150%% holds 100%% + 40%% + 30%%: over-committed");
        check(t);
        cr_expect(tree_overcommitted(t));
        cr_expect_eq(group_free_bw(t->root), 0);
        cr_expect_eq(t->n_reservations, 3, "nobody is evicted");
        cr_expect_eq(t->root->allocated, pct(100) + pct(40) + pct(30));

        spec = rspec(10, 10, 1024, 0, NSEC_PER_SEC);
        admit_refused(t, t->root, &spec, ADMIT_OVER_BUDGET);
        create_refused(t, "h", &(GroupSpec) { .runtime = X_RUNTIME(1), .period = X_PERIOD, .fork = _FORK_POLICY_UNSET,
                                              .threads = _FORK_POLICY_UNSET }, ADMIT_OVER_BUDGET);
        before = digest(t);
        p = (DlParams) { 41 * MS, 0, P100 };
        cr_expect_eq(reservation_update(t, r1, &p, &ref), ADMIT_OVER_BUDGET, "no growth while over-committed");
        cr_expect_eq(digest(t), before);
        cr_expect_eq(group_set_bandwidth(t, g, 100 * MS + 1 * MS, P100, &ref), ADMIT_OVER_BUDGET);
        cr_expect_eq(digest(t), before);

        /* shrinking is always allowed */
        p = (DlParams) { 35 * MS, 0, P100 };
        cr_expect_eq(reservation_update(t, r1, &p, &ref), 0);
        check(t);
        cr_expect(tree_overcommitted(t), "135%% + 35%% is still above 150%%");

        /* releases bring it back under */
        reservation_release(t, r2, &eff);
        check(t);
        cr_expect(!tree_overcommitted(t));
        cr_expect_eq(group_free_bw(t->root), pct(150) - pct(100) - pct(35));
        spec = rspec(10, 10, 1024, 0, NSEC_PER_SEC);
        admit_spec(t, t->root, &spec);
        tree_free(t);
}

/* The header: "every admission is then refused until it fits again" - also in a child group that
 * has room of its own. */
Test(tree, overcommit_refuses_everywhere) {
        Tree *t = new_tree(pct(180));
        Group *g = mkgroup(t, "g", 100 * MS, P100);
        ReservationSpec spec;

        admit(t, t->root, 1, 50 * MS, 0, P100);
        cr_assert(tree_set_capacity(t, pct(140), 0));
        cr_assert_eq(group_free_bw(g), pct(100), "g itself has room");
        spec = rspec(10, 10, 10 * MS, 0, P100);
        admit_refused(t, g, &spec, ADMIT_OVER_BUDGET);
        cr_assert(!tree_set_capacity(t, pct(150), 0));
        admit_spec(t, g, &spec);
        tree_free(t);
}

/* ---- refusal text ---- */

static bool contains_pct(const char *text, uint64_t b) {
        char s[DURATION_MAX + 4];
        uint64_t tenths = (uint64_t) (((unsigned __int128) b * 1000) >> BW_SHIFT);

        uint64_t nearest = (uint64_t) (((unsigned __int128) b * 1000 + (BW_UNIT / 2)) >> BW_SHIFT);

        /* bw_format(), or one decimal always, rounded down or to the nearest */
        bw_format(b, s);
        if (strstr(text, s))
                return true;
        snprintf(s, sizeof s, "%" PRIu64 ".%" PRIu64 "%%", tenths / 10, tenths % 10);
        if (strstr(text, s))
                return true;
        snprintf(s, sizeof s, "%" PRIu64 ".%" PRIu64 "%%", nearest / 10, nearest % 10);
        if (strstr(text, s))
                return true;
        snprintf(s, sizeof s, "%" PRIu64 "%%", nearest / 10);
        return nearest % 10 == 0 && strstr(text, s);
}

Test(tree, refusal_format) {
        Tree *t = new_tree(2 * BW_UNIT);
        Group *g = mkgroup(t, "audio", 25 * MS, P100);
        ReservationSpec spec;
        Refusal ref;
        char buf[256], small[8];
        char *p;

        admit(t, g, 1, 12500 * US, 0, P100);
        spec = rspec(2, 2, 20 * MS, 0, P100);
        ref = admit_refused(t, g, &spec, ADMIT_OVER_BUDGET);
        cr_assert_eq(ref.free_bw, pct(25) - bw(12500 * US, P100));
        p = refusal_format(&ref, buf, sizeof buf);
        cr_expect_eq(p, buf);
        cr_expect(strstr(buf, "audio"), "\"%s\" does not name the group", buf);
        cr_expect(contains_pct(buf, ref.free_bw), "\"%s\" does not show what is free (%" PRIu64 ")", buf, ref.free_bw);
        cr_expect(contains_pct(buf, ref.need_bw), "\"%s\" does not show what is needed (%" PRIu64 ")", buf, ref.need_bw);

        /* the header's own example: "audio: 12.5% free, request needs 20.0%" - a request of exactly
         * 20 ms every 100 ms reads as 20%, not as the rounded-down 19.9% */
        cr_expect(strstr(buf, "12.5%"), "\"%s\"", buf);
        cr_expect(strstr(buf, "20.0%") || strstr(buf, "20%"), "a 20%% request shows as \"%s\"", buf);

        memset(small, 'x', sizeof small);
        refusal_format(&ref, small, sizeof small);
        cr_expect_lt(strnlen(small, sizeof small), sizeof small, "refusal_format() overran a small buffer");

        /* every outcome makes some sentence */
        for (int o = 1; o < _ADMIT_MAX; o++) {
                Refusal r = { .outcome = o, .params = PARAMS_RUNTIME_TOO_SMALL, .name = "grp", .free_bw = 1, .need_bw = 2,
                              .min_runtime = 1 * MS };

                buf[0] = 0;
                refusal_format(&r, buf, sizeof buf);
                cr_expect_gt(strlen(buf), 3, "no text for %s", admit_outcome_to_string(o));
        }
        tree_free(t);
}

/* ---- memory ---- */

Test(tree, memory_grows_and_shrinks) {
        Tree *t = new_tree(2 * BW_UNIT);
        Group *g = mkgroup(t, "g", 100 * MS, P100);
        size_t m0 = tree_memory(t), m1;
        Reservation *r[1000];

        for (uint32_t i = 0; i < ELEMENTSOF(r); i++) {
                ReservationSpec spec = rspec(1 + i / 4, 1 + i, 1024, 0, NSEC_PER_SEC);
                Refusal ref;

                cr_assert_eq(reservation_admit(t, g, &spec, &r[i], &ref), 0);
        }
        check(t);
        m1 = tree_memory(t);
        cr_expect_gt(m1, m0 + ELEMENTSOF(r) * sizeof(Reservation), "tree_memory() = %zu after 1000 reservations",
                     m1);
        for (uint32_t i = 0; i < ELEMENTSOF(r); i++) {
                ReleaseEffect eff;

                reservation_release(t, r[i], &eff);
        }
        check(t);
        cr_expect_eq(g->allocated, 0);
        cr_expect_lt(tree_memory(t), m1);
        tree_free(t);
}

/* ---- edges found by reading the rules together ---- */

/* A split must never make a reservation the kernel refuses: with a minimum split of 0 (a tree made
 * with min_split_runtime 0), half of a 2047 ns runtime is 1023 ns, below DL_RUNTIME_MIN. */
Test(tree, split_never_below_kernel_minimum) {
        DlLimits limits = DL_LIMITS_DEFAULT;
        Tree *t = NULL;
        Group *g;
        Reservation *d, *c = NULL;
        DlParams old;
        Refusal ref = {};
        int r;

        cr_assert_eq(tree_new(&t, 2 * BW_UNIT, &limits, FORK_SPLIT, FORK_SPLIT, 0), 0);
        g = mkgroup(t, "g", 50 * MS, P100);
        d = admit(t, g, 1, 2047, 0, P100);
        r = reservation_split(t, d, false, 2, 2, 0, &c, &old, &ref);
        check(t);
        if (r == 0) {
                DlParams p = c->params, q = d->params;

                cr_expect_eq(dl_params_check(&p, &limits), PARAMS_OK, "the child got runtime %" PRIu64
                             ", which the kernel refuses", c->params.runtime);
                cr_expect_eq(dl_params_check(&q, &limits), PARAMS_OK, "the donor got runtime %" PRIu64,
                             d->params.runtime);
        } else
                cr_expect_eq(r, ADMIT_SPLIT_TOO_SMALL);
        tree_free(t);
}

/* Re-adoption with the largest ids: the books stay consistent and new ids stay unique and non-zero. */
Test(tree, readopt_largest_ids) {
        static const uint64_t ids[] = { UINT64_MAX - 1, UINT64_MAX };

        for (size_t i = 0; i < ELEMENTSOF(ids); i++) {
                Tree *t = new_tree(2 * BW_UNIT);
                Group *g = mkgroup(t, "g", 100 * MS, P100);
                ReservationSpec spec = rspec(1, 1, 1 * MS, 0, P100);
                Reservation *res = NULL, *other = NULL;
                Refusal ref = {};
                int r;

                spec.id = ids[i];
                r = reservation_admit(t, g, &spec, &res, &ref);
                check(t);
                if (r != 0) {
                        tree_free(t);
                        continue;
                }
                cr_expect_eq(res->id, ids[i]);
                spec = rspec(2, 2, 1 * MS, 0, P100);
                r = reservation_admit(t, g, &spec, &other, &ref);
                check(t);
                if (r == 0) {
                        cr_expect_neq(other->id, 0, "after re-adopting id %" PRIu64 " a new reservation got id 0",
                                      ids[i]);
                        cr_expect_neq(other->id, ids[i]);
                        cr_expect_eq(tree_find_reservation(t, other->id), other);
                } else
                        cr_expect_lt(r, 0, "a clean error, not a refusal: %d", r);
                tree_free(t);
        }
}

/* --- per-user usage and limits --- */


Test(limits, usage_follows_every_operation) {
        Tree *t = NULL;
        Group *g = NULL;
        Reservation *a = NULL, *b = NULL, *c = NULL;
        DlParams old;
        Refusal rf;
        char buf[256];
        uint64_t bw10;

        cr_assert_eq(tree_new(&t, 2 * BW_UNIT, NULL, FORK_SPLIT, FORK_SPLIT, 1024), 0);
        GroupSpec gs = { .runtime = 50 * NSEC_PER_MSEC, .period = 100 * NSEC_PER_MSEC, .fork = _FORK_POLICY_UNSET,
                         .threads = _FORK_POLICY_UNSET };
        cr_assert_eq(group_create(t, "g", &gs, &g, &rf), 0);
        cr_assert_eq(bw_of(10 * NSEC_PER_MSEC, 100 * NSEC_PER_MSEC, &bw10), 0);

        ReservationSpec s = { .pid = 10, .tid = 10, .uid = 1000,
                              .params = { .runtime = 10 * NSEC_PER_MSEC, .period = 100 * NSEC_PER_MSEC } };
        cr_assert_eq(reservation_admit(t, g, &s, &a, &rf), 0);
        s.tid = 11;
        s.uid = 1001;
        cr_assert_eq(reservation_admit(t, g, &s, &b, &rf), 0);
        cr_assert_eq(tree_user_usage(t, 1000).n, 1);
        cr_assert_eq(tree_user_usage(t, 1000).bw, bw10);
        cr_assert_eq(tree_user_usage(t, 1001).n, 1);
        cr_assert_eq(tree_user_usage(t, 4242).n, 0);
        cr_assert_eq(tree_check(t, buf, sizeof buf), 0, "%s", buf);

        /* A split keeps the owner's total (or one unit less), and charges the child to the owner. */
        cr_assert_eq(reservation_split(t, a, false, 20, 20, 0, &c, &old, &rf), 0);
        cr_assert_eq(c->uid, 1000);
        cr_assert_eq(tree_user_usage(t, 1000).n, 2);
        cr_assert_leq(tree_user_usage(t, 1000).bw, bw10);
        cr_assert_eq(tree_check(t, buf, sizeof buf), 0, "%s", buf);
        reservation_release(t, c, NULL);
        cr_assert_eq(tree_user_usage(t, 1000).n, 1);
        cr_assert_eq(tree_user_usage(t, 1000).bw, bw10);

        DlParams p = { .runtime = 20 * NSEC_PER_MSEC, .period = 100 * NSEC_PER_MSEC };
        cr_assert_eq(reservation_update(t, a, &p, &rf), 0);
        cr_assert_gt(tree_user_usage(t, 1000).bw, bw10);
        cr_assert_eq(tree_check(t, buf, sizeof buf), 0, "%s", buf);

        reservation_release(t, a, NULL);
        reservation_release(t, b, NULL);
        cr_assert_eq(tree_user_usage(t, 1000).n, 0);
        cr_assert_eq(tree_user_usage(t, 1000).bw, 0);
        cr_assert_eq(t->by_uid.n_items, 0);
        cr_assert_eq(tree_check(t, buf, sizeof buf), 0, "%s", buf);
        tree_free(t);
}

Test(limits, check_refuses_with_numbers) {
        Tree *t = NULL;
        Group *g = NULL;
        Refusal rf;
        char buf[256];
        uint64_t bw10;

        cr_assert_eq(tree_new(&t, 2 * BW_UNIT, NULL, FORK_SPLIT, FORK_NONE, 1024), 0);
        GroupSpec gs = { .runtime = 90 * NSEC_PER_MSEC, .period = 100 * NSEC_PER_MSEC, .fork = _FORK_POLICY_UNSET,
                         .threads = _FORK_POLICY_UNSET };
        cr_assert_eq(group_create(t, "g", &gs, &g, &rf), 0);
        cr_assert_eq(bw_of(10 * NSEC_PER_MSEC, 100 * NSEC_PER_MSEC, &bw10), 0);
        ReservationSpec s = { .pid = 10, .tid = 10, .uid = 1000,
                              .params = { .runtime = 10 * NSEC_PER_MSEC, .period = 100 * NSEC_PER_MSEC } };
        cr_assert_eq(reservation_admit(t, g, &s, NULL, &rf), 0);

        UserLimits two = { .bandwidth = 2 * bw10 + 1, .reservations = 2 };
        cr_assert_eq(user_limits_check(t, 1000, &two, bw10, 1, &rf), 0);
        cr_assert_eq(user_limits_check(t, 1000, &two, 2 * bw10, 1, &rf), ADMIT_LIMIT_EXCEEDED);
        cr_assert_str_eq(rf.limit, "bandwidth");
        cr_assert_eq(rf.held_bw, bw10);
        cr_assert_eq(rf.need_bw, 2 * bw10);
        cr_assert_eq(rf.limit_bw, two.bandwidth);
        refusal_format(&rf, buf, sizeof buf);
        cr_assert(strstr(buf, "bandwidth limit 20%") && strstr(buf, "10% held") && strstr(buf, "needs 20%"), "%s", buf);

        UserLimits one = { .bandwidth = UINT64_MAX, .reservations = 1 };
        cr_assert_eq(user_limits_check(t, 1000, &one, 1, 1, &rf), ADMIT_LIMIT_EXCEEDED);
        cr_assert_str_eq(rf.limit, "reservations");
        refusal_format(&rf, buf, sizeof buf);
        cr_assert(strstr(buf, "limit of 1 reservations reached (1 held)"), "%s", buf);
        /* An update adds bandwidth but no reservation. */
        cr_assert_eq(user_limits_check(t, 1000, &one, bw10, 0, &rf), 0);
        /* Another user is not charged for uid 1000. */
        cr_assert_eq(user_limits_check(t, 1001, &one, bw10, 1, &rf), 0);
        UserLimits none = USER_LIMITS_NONE;
        cr_assert_eq(user_limits_check(t, 1000, &none, UINT64_MAX, 1000000, &rf), 0);
        /* Overflow of held + asked is a refusal, not a wrap. */
        UserLimits big = { .bandwidth = UINT64_MAX - 1, .reservations = UINT64_MAX };
        cr_assert_eq(user_limits_check(t, 1000, &big, UINT64_MAX - 2, 0, &rf), ADMIT_LIMIT_EXCEEDED);
        tree_free(t);
}

Test(limits, rate_window) {
        RateWindow w = {};

        /* No limit. */
        for (int i = 0; i < 100; i++)
                cr_assert(rate_window_allow(&w, (uint64_t) i, 0, 10));
        w = (RateWindow) {};
        cr_assert(rate_window_allow(&w, 1000, 3, 100));
        cr_assert(rate_window_allow(&w, 1001, 3, 100));
        cr_assert(rate_window_allow(&w, 1099, 3, 100));
        cr_assert_not(rate_window_allow(&w, 1099, 3, 100));   /* fourth in the window */
        cr_assert_not(rate_window_allow(&w, 1099, 3, 100));   /* refusals are not counted, still full */
        cr_assert(rate_window_allow(&w, 1100, 3, 100));       /* the window closed at 1000 + 100 */
        cr_assert_eq(w.start, 1100);
        cr_assert_eq(w.count, 1);
        /* A clock that went back opens a new window rather than wrapping. */
        cr_assert(rate_window_allow(&w, 5, 3, 100));
        cr_assert_eq(w.start, 5);
        /* Extreme values. */
        w = (RateWindow) {};
        cr_assert(rate_window_allow(&w, UINT64_MAX, 1, UINT64_MAX));
        cr_assert_not(rate_window_allow(&w, UINT64_MAX, 1, UINT64_MAX));
}

/* A split child gives back what it was given, not what an update added since (nor more than it
 * holds, if an update shrank it). */
Test(split, gives_back_what_was_given) {
        Tree *t = NULL;
        Group *g = NULL;
        Reservation *d = NULL, *c = NULL;
        DlParams old;
        Refusal rf;
        char buf[256];

        cr_assert_eq(tree_new(&t, 2 * BW_UNIT, NULL, FORK_SPLIT, FORK_NONE, 1024), 0);
        GroupSpec gs = { .runtime = 50 * NSEC_PER_MSEC, .period = 100 * NSEC_PER_MSEC, .fork = _FORK_POLICY_UNSET,
                         .threads = _FORK_POLICY_UNSET };
        cr_assert_eq(group_create(t, "g", &gs, &g, &rf), 0);
        ReservationSpec s = { .pid = 10, .tid = 10, .params = { .runtime = 10 * NSEC_PER_MSEC, .period = 100 * NSEC_PER_MSEC } };
        cr_assert_eq(reservation_admit(t, g, &s, &d, &rf), 0);

        cr_assert_eq(reservation_split(t, d, false, 11, 11, 0, &c, &old, &rf), 0);
        cr_assert_eq(c->donated, 5 * NSEC_PER_MSEC);
        DlParams more = { .runtime = 8 * NSEC_PER_MSEC, .period = 100 * NSEC_PER_MSEC };
        cr_assert_eq(reservation_update(t, c, &more, &rf), 0);
        ReleaseEffect e;
        reservation_release(t, c, &e);
        cr_assert_eq(e.donor, d);
        cr_assert_eq(d->params.runtime, 10 * NSEC_PER_MSEC, "donor has %" PRIu64, d->params.runtime);
        cr_assert_eq(tree_check(t, buf, sizeof buf), 0, "%s", buf);

        cr_assert_eq(reservation_split(t, d, false, 12, 12, 0, &c, &old, &rf), 0);
        DlParams less = { .runtime = 2 * NSEC_PER_MSEC, .period = 100 * NSEC_PER_MSEC };
        cr_assert_eq(reservation_update(t, c, &less, &rf), 0);
        reservation_release(t, c, &e);
        cr_assert_eq(d->params.runtime, 7 * NSEC_PER_MSEC, "donor has %" PRIu64, d->params.runtime);
        cr_assert_eq(tree_check(t, buf, sizeof buf), 0, "%s", buf);
        tree_free(t);
}

/* ---- holds: bandwidth kept for admissions still to come (an admission at a program's start) ---- */

/* A hold takes the group's room as a reservation of its bandwidth would, is no reservation, keeps
 * the group from being removed or shrunk below it, and goes back whole; a hold that does not fit
 * is refused with the group's room and changes nothing. */
Test(tree, hold_takes_the_room_until_given_back) {
        Tree *t = new_tree(pct(100));
        Group *g = mkgroup(t, "c", 30 * MS, P100);
        ReservationSpec spec = rspec(10, 10, 20 * MS, P100, P100);
        Refusal ref = {};
        uint64_t before;
        char buf[256];

        cr_assert_eq(group_hold(t, g, pct(20), &ref), 0);
        check(t);
        cr_assert_eq(g->allocated, pct(20));
        cr_assert_eq(g->held, pct(20));
        cr_assert_eq(g->n_held, 1);
        cr_assert_eq(t->n_reservations, 0, "a hold is no reservation");
        cr_assert_eq(tree_user_usage(t, 1000).n, 0);

        /* Room for 10% more only: another hold and an admission of 20% are refused. */
        before = digest(t);
        cr_assert_eq(group_hold(t, g, pct(20), &ref), ADMIT_OVER_BUDGET);
        cr_assert_eq(ref.free_bw, pct(10));
        cr_assert_eq(ref.need_bw, pct(20));
        cr_assert_str_eq(refusal_format(&ref, buf, sizeof buf), "c: 10% free, request needs 20%");
        cr_assert_eq(digest(t), before, "a refused hold changed the books");
        admit_refused(t, g, &spec, ADMIT_OVER_BUDGET);
        cr_assert_eq(group_hold(t, g, BW_UNIT + 1, &ref), ADMIT_ABOVE_ONE_CPU);
        cr_assert_eq(digest(t), before);

        /* Not removed, not shrunk below it. */
        cr_assert_eq(group_remove(t, g, &ref), ADMIT_GROUP_NOT_EMPTY);
        cr_assert_eq(ref.n_held, 1);
        cr_assert_str_eq(refusal_format(&ref, buf, sizeof buf),
                         "c: group still holds 0 groups, 0 reservations and 1 admissions waiting for their start");
        cr_assert_eq(group_set_bandwidth(t, g, 10 * MS, P100, &ref), ADMIT_BELOW_ALLOCATED);
        check(t);

        /* Given back: the admission of 20% fits, and the group can go once it is empty. */
        group_unhold(t, g, pct(20));
        check(t);
        cr_assert_eq(g->allocated, 0);
        cr_assert_eq(g->n_held, 0);
        group_unhold(t, g, pct(20)); /* nothing held: nothing changes */
        cr_assert_eq(g->allocated, 0);
        check(t);
        Reservation *res = admit_spec(t, g, &spec);
        reservation_release(t, res, NULL);
        cr_assert_eq(group_remove(t, g, &ref), 0);
        check(t);
        tree_free(t);
}
