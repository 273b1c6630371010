/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The configuration (conf.h), fed from memory: every key, every kind of error with its exact
 * position and key path, malformed and hostile YAML, the fit of children in their parents, and the
 * shipped conf/edfd.yaml. Every tree that builds goes through tree_check(). */

#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bandwidth.h"
#include "basic/strv.h"
#include "conf.h"
#include "core/duration.h"
#include "core/tree.h"

#define US NSEC_PER_USEC
#define MS NSEC_PER_MSEC
#define FILENAME "t.yaml"

/* bw of x% as the parser computes it: x ms every 100 ms */
static uint64_t pct(uint64_t x) {
        uint64_t bw;

        cr_assert_eq(bw_of(x * MS, 100 * MS, &bw), 0);
        return bw;
}

#define CAP_1CPU (pct(90))   /* one CPU on kernels with the fair server */
#define CAP_2CPU (pct(180))

static void dump(const ConfErrors *e) {
        for (size_t i = 0; i < e->n; i++)
                cr_log_info("error %zu: %s", i, e->lines[i]);
}

static Config *parse_ok(const char *yaml) {
        ConfErrors e = {};
        Config *c = NULL;
        int r;

        r = conf_parse_buffer(yaml, strlen(yaml), FILENAME, &c, &e);
        dump(&e);
        cr_assert_eq(r, 0, "conf_parse_buffer() = %d for:\n%s\nfirst error: %s", r, yaml, e.n ? e.lines[0] : "-");
        cr_assert_eq(e.n, 0);
        cr_assert_not_null(c);
        conf_errors_done(&e);
        return c;
}

/* Parse yaml expecting failure; *ret_config must stay untouched. */
static void parse_fail(const char *yaml, size_t len, ConfErrors *e) {
        Config *sentinel = (Config *) (uintptr_t) 0x1234, *c = sentinel;
        int r;

        r = conf_parse_buffer(yaml, len, FILENAME, &c, e);
        cr_assert_eq(r, -EINVAL, "conf_parse_buffer() = %d, expected -EINVAL for:\n%.300s", r, yaml);
        cr_assert_eq(c, sentinel, "ret written on failure");
        cr_assert_gt(e->n, 0, "failure without an error line");
}

static void check_tree(const Tree *t) {
        char buf[1024] = "";
        int r;

        r = tree_check(t, buf, sizeof buf);
        cr_assert_eq(r, 0, "tree_check() = %d: %s", r, buf);
}

static Tree *build_ok(const Config *c, uint64_t capacity) {
        ConfErrors e = {};
        Tree *t = NULL;
        int r;

        r = conf_build_tree(c, FILENAME, capacity, NULL, &t, &e);
        dump(&e);
        cr_assert_eq(r, 0, "conf_build_tree() = %d, first error: %s", r, e.n ? e.lines[0] : "-");
        cr_assert_not_null(t);
        check_tree(t);
        conf_errors_done(&e);
        return t;
}

static void build_fail(const Config *c, uint64_t capacity, ConfErrors *e) {
        Tree *sentinel = (Tree *) (uintptr_t) 0x5678, *t = sentinel;
        int r;

        r = conf_build_tree(c, FILENAME, capacity, NULL, &t, e);
        cr_assert_eq(r, -EINVAL, "conf_build_tree() = %d, expected -EINVAL", r);
        cr_assert_eq(t, sentinel, "ret written on failure");
}

/* --- defaults and every key --- */

static void check_defaults(const Config *c) {
        cr_expect(c->capacity_auto);
        cr_expect_eq(c->capacity, CONF_UNLIMITED);
        cr_expect_eq(c->fork, FORK_SPLIT);
        cr_expect_eq(c->threads, FORK_NONE);
        cr_expect_eq(c->min_split_runtime, CONF_MIN_SPLIT_RUNTIME_DEFAULT);
        cr_expect_eq(c->min_split_runtime, 500 * US);
        cr_expect_null(c->default_group);
        cr_expect_str_eq(c->cgroup_root, CONF_CGROUP_ROOT_DEFAULT);
        cr_expect_eq(c->polkit, POLKIT_AUTO);
        cr_expect_eq(c->n_limits, 0);
        cr_expect_eq(c->n_groups, 0);
}

Test(conf, empty_documents_are_defaults) {
        static const char *const docs[] = {
                "", "\n", "# nothing but a comment\n", "---\n", "---\n...\n", "~\n", "null\n", "\xEF\xBB\xBF",
                "groups:\nlimits:\n", "groups: {}\nlimits: {}\n", "groups: ~\n",
        };

        for (size_t i = 0; i < ELEMENTSOF(docs); i++) {
                Config *c = parse_ok(docs[i]);
                Tree *t;

                check_defaults(c);
                t = build_ok(c, CAP_2CPU);
                cr_expect_eq(t->n_groups, 1);
                cr_expect_eq(t->root->bw, CAP_2CPU);
                tree_free(t);
                conf_free(c);
        }
}

Test(conf, null_buffer) {
        Config *c = NULL;

        cr_assert_eq(conf_parse_buffer(NULL, 0, NULL, &c, NULL), 0);
        check_defaults(c);
        conf_free(c);
        cr_assert_null(conf_free(NULL));
}

static const char full[] =
        "capacity: 150%\n"
        "fork: inherit\n"
        "threads: split\n"
        "min-split-runtime: 2ms\n"
        "default-group: audio/pipewire\n"
        "cgroup-root: /sys/fs/cgroup/test.d\n"
        "polkit: required\n"
        "limits:\n"
        "  default:\n"
        "    bandwidth: 20%\n"
        "    reservations: 8\n"
        "    rate: 20/10s\n"
        "  alice:\n"
        "    bandwidth: 12.5%\n"
        "  bob: {reservations: 0, rate: unlimited, bandwidth: unlimited}\n"
        "  svc$: {}\n"
        "groups:\n"
        "  audio:\n"
        "    bandwidth: 40%\n"
        "    threads: inherit\n"
        "    users: [alice, bob]\n"
        "    cgroup: true\n"
        "    groups:\n"
        "      pipewire:\n"
        "        runtime: 1.5ms\n"
        "        period: 5ms\n"
        "        fork: none\n"
        "        min-split-runtime: 250us\n"
        "        cgroup: media/pw\n"
        "      jack:\n"
        "        bandwidth: 5%\n"
        "        users: []\n"
        "        cgroup: false\n"
        "  control:\n"
        "    runtime: 110ms\n"
        "    period: 100ms\n";

Test(conf, every_key) {
        Config *c = parse_ok(full);
        const ConfGroup *audio, *pw, *jack, *control;

        cr_expect_not(c->capacity_auto);
        cr_expect_eq(c->capacity, pct(150));
        cr_expect_eq(c->fork, FORK_INHERIT);
        cr_expect_eq(c->threads, FORK_SPLIT);
        cr_expect_eq(c->min_split_runtime, 2 * MS);
        cr_expect_str_eq(c->default_group, "audio/pipewire");
        cr_expect_eq(c->default_group_line, 5);
        cr_expect_eq(c->default_group_column, 16);
        cr_expect_str_eq(c->cgroup_root, "/sys/fs/cgroup/test.d");
        cr_expect_eq(c->polkit, POLKIT_REQUIRED);

        cr_assert_eq(c->n_limits, 4);
        cr_expect_str_eq(c->limits[0].user, "default");
        cr_expect_eq(c->limits[0].bandwidth, pct(20));
        cr_expect_eq(c->limits[0].reservations, 8);
        cr_expect_eq(c->limits[0].rate_count, 20);
        cr_expect_eq(c->limits[0].rate_window_ns, 10 * NSEC_PER_SEC);
        cr_expect_eq(c->limits[0].line, 9);
        cr_expect_eq(c->limits[0].column, 3);
        /* alice: her own bandwidth, the rest from default */
        cr_expect_str_eq(c->limits[1].user, "alice");
        cr_expect_eq(c->limits[1].bandwidth, (uint64_t) ((UINT64_C(125) * MS / 10 << BW_SHIFT) / (100 * MS)));
        cr_expect_eq(c->limits[1].reservations, 8);
        cr_expect_eq(c->limits[1].rate_count, 20);
        cr_expect_eq(c->limits[1].rate_window_ns, 10 * NSEC_PER_SEC);
        /* bob: everything of his own */
        cr_expect_str_eq(c->limits[2].user, "bob");
        cr_expect_eq(c->limits[2].bandwidth, CONF_UNLIMITED);
        cr_expect_eq(c->limits[2].reservations, 0);
        cr_expect_eq(c->limits[2].rate_count, 0);
        cr_expect_eq(c->limits[2].rate_window_ns, 0);
        /* an empty entry is all default */
        cr_expect_str_eq(c->limits[3].user, "svc$");
        cr_expect_eq(c->limits[3].bandwidth, pct(20));
        cr_expect_eq(c->limits[3].reservations, 8);

        cr_expect_eq(conf_find_limit(c, "alice"), &c->limits[1]);
        cr_expect_eq(conf_find_limit(c, "mallory"), &c->limits[0]);
        cr_expect_eq(conf_find_limit(c, NULL), &c->limits[0]);

        cr_assert_eq(c->n_groups, 2);
        cr_expect_eq(c->groups_line, 17);
        cr_expect_eq(c->groups_column, 1);
        audio = &c->groups[0];
        control = &c->groups[1];
        cr_expect_str_eq(audio->name, "audio");
        cr_expect_eq(audio->line, 18);
        cr_expect_eq(audio->column, 3);
        cr_expect_eq(audio->runtime, 40 * MS);
        cr_expect_eq(audio->period, 100 * MS);
        cr_expect_eq(audio->fork, _FORK_POLICY_UNSET);
        cr_expect_eq(audio->threads, FORK_INHERIT);
        cr_expect_eq(audio->min_split_runtime, 0);
        cr_assert_not_null(audio->users);
        cr_expect_str_eq(audio->users[0], "alice");
        cr_expect_str_eq(audio->users[1], "bob");
        cr_expect_null(audio->users[2]);
        cr_expect_str_eq(audio->cgroup, "audio");
        cr_assert_eq(audio->n_children, 2);

        pw = &audio->children[0];
        cr_expect_str_eq(pw->name, "pipewire");
        cr_expect_eq(pw->line, 24);
        cr_expect_eq(pw->column, 7);
        cr_expect_eq(pw->runtime, 1500 * US);
        cr_expect_eq(pw->period, 5 * MS);
        cr_expect_eq(pw->fork, FORK_NONE);
        cr_expect_eq(pw->threads, _FORK_POLICY_UNSET);
        cr_expect_eq(pw->min_split_runtime, 250 * US);
        cr_expect_null(pw->users);
        cr_expect_str_eq(pw->cgroup, "media/pw");

        jack = &audio->children[1];
        cr_expect_str_eq(jack->name, "jack");
        cr_assert_not_null(jack->users);
        cr_expect_null(jack->users[0]);
        cr_expect_null(jack->cgroup);

        cr_expect_str_eq(control->name, "control");
        cr_expect_eq(control->runtime, 110 * MS);
        cr_expect_eq(control->period, 100 * MS);
        cr_expect_eq(control->n_children, 0);
        cr_expect_null(control->cgroup);
        conf_free(c);
}

Test(conf, every_key_builds) {
        Config *c = parse_ok(full);
        Tree *t = build_ok(c, CAP_2CPU);
        Group *audio, *pw, *jack, *control;
        uint64_t bw;

        /* capacity: 150% caps the 180% the kernel admits */
        cr_expect_eq(t->root->bw, pct(150));
        cr_expect_eq(t->n_groups, 5);
        audio = tree_find_group(t, "audio");
        pw = tree_find_group(t, "audio/pipewire");
        jack = tree_find_group(t, "audio/jack");
        control = tree_find_group(t, "control");
        cr_assert(audio && pw && jack && control);

        cr_expect_eq(audio->bw, pct(40));
        cr_expect_eq(audio->fork, FORK_INHERIT);   /* from the root */
        cr_expect_eq(audio->threads, FORK_INHERIT);
        cr_expect_eq(audio->min_split_runtime, 2 * MS);
        cr_expect_str_eq(audio->cgroup, "audio");
        cr_assert_not_null(audio->users);
        cr_expect_str_eq(audio->users[1], "bob");

        cr_assert_eq(bw_of(1500 * US, 5 * MS, &bw), 0);
        cr_expect_eq(pw->bw, bw);
        cr_expect_eq(pw->fork, FORK_NONE);
        cr_expect_eq(pw->threads, FORK_INHERIT);    /* from audio */
        cr_expect_eq(pw->min_split_runtime, 250 * US);
        cr_expect_str_eq(pw->cgroup, "media/pw");
        cr_assert_not_null(pw->users);              /* from audio */
        cr_expect_str_eq(pw->users[0], "alice");

        cr_assert_not_null(jack->users);
        cr_expect_null(jack->users[0]);            /* nobody */
        cr_expect_null(jack->cgroup);
        cr_expect_eq(audio->allocated, pw->bw + jack->bw);

        /* a group may hold more than one CPU; 40% + 110% fill the 150% exactly */
        cr_assert_eq(bw_of(110 * MS, 100 * MS, &bw), 0);
        cr_expect_eq(control->bw, bw);
        cr_expect_gt(control->bw, BW_UNIT);
        cr_expect_null(control->users);            /* the root lets anyone */
        cr_expect_eq(t->root->allocated, audio->bw + control->bw);
        cr_expect_leq(t->root->allocated, t->root->bw);
        tree_free(t);
        conf_free(c);
}

/* capacity, fork policies and polkit modes, one value at a time */
typedef struct KeyCase {
        const char *yaml;
        bool capacity_auto;
        uint64_t capacity;
        ForkPolicy fork, threads;
        PolkitMode polkit;
} KeyCase;

Test(conf, scalar_values) {
        const KeyCase cases[] = {
                { "capacity: auto\n", true, CONF_UNLIMITED, FORK_SPLIT, FORK_NONE, POLKIT_AUTO },
                { "capacity: 100%\n", false, BW_UNIT, FORK_SPLIT, FORK_NONE, POLKIT_AUTO },
                { "capacity: 0.5%\n", false, BW_UNIT / 200, FORK_SPLIT, FORK_NONE, POLKIT_AUTO },
                { "capacity: \"150%\"\n", false, 3 * BW_UNIT / 2, FORK_SPLIT, FORK_NONE, POLKIT_AUTO },
                { "capacity: 800%\n", false, 8 * BW_UNIT, FORK_SPLIT, FORK_NONE, POLKIT_AUTO },
                { "fork: none\nthreads: inherit\n", true, CONF_UNLIMITED, FORK_NONE, FORK_INHERIT, POLKIT_AUTO },
                { "fork: 'split'\nthreads: split\n", true, CONF_UNLIMITED, FORK_SPLIT, FORK_SPLIT, POLKIT_AUTO },
                { "polkit: required\n", true, CONF_UNLIMITED, FORK_SPLIT, FORK_NONE, POLKIT_REQUIRED },
                { "polkit: off\n", true, CONF_UNLIMITED, FORK_SPLIT, FORK_NONE, POLKIT_OFF },
                { "polkit: auto\n", true, CONF_UNLIMITED, FORK_SPLIT, FORK_NONE, POLKIT_AUTO },
                { "{fork: inherit, polkit: off}\n", true, CONF_UNLIMITED, FORK_INHERIT, FORK_NONE, POLKIT_OFF },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Config *c = parse_ok(cases[i].yaml);

                cr_expect_eq(c->capacity_auto, cases[i].capacity_auto, "%s", cases[i].yaml);
                cr_expect_eq(c->capacity, cases[i].capacity, "%s", cases[i].yaml);
                cr_expect_eq(c->fork, cases[i].fork, "%s", cases[i].yaml);
                cr_expect_eq(c->threads, cases[i].threads, "%s", cases[i].yaml);
                cr_expect_eq(c->polkit, cases[i].polkit, "%s", cases[i].yaml);
                conf_free(c);
        }
        cr_expect_str_eq(polkit_mode_to_string(POLKIT_REQUIRED), "required");
        cr_expect_null(polkit_mode_to_string(_POLKIT_MODE_MAX));
        cr_expect_null(polkit_mode_to_string(_POLKIT_MODE_INVALID));
        cr_expect_eq(polkit_mode_from_string("off"), POLKIT_OFF);
        cr_expect_eq(polkit_mode_from_string("Off"), _POLKIT_MODE_INVALID);
        cr_expect_eq(polkit_mode_from_string(NULL), _POLKIT_MODE_INVALID);
}

typedef struct DurationCase {
        const char *value;
        uint64_t ns;
} DurationCase;

Test(conf, durations_and_numbers) {
        const DurationCase runtimes[] = {
                { "1024ns", 1024 }, { "1.024us", 1024 }, { "1ms", MS }, { "1.5ms", 1500 * US }, { "4s", 4 * NSEC_PER_SEC },
        };
        const DurationCase counts[] = {
                { "0", 0 }, { "1", 1 }, { "1023", 1023 }, { "1024", 1024 },
                { "18446744073709551614", UINT64_MAX - 1 }, { "unlimited", UINT64_MAX },
        };
        char yaml[256];

        for (size_t i = 0; i < ELEMENTSOF(runtimes); i++) {
                Config *c;

                snprintf(yaml, sizeof yaml, "min-split-runtime: %s\n", runtimes[i].value);
                c = parse_ok(yaml);
                cr_expect_eq(c->min_split_runtime, runtimes[i].ns, "%s", yaml);
                conf_free(c);

                snprintf(yaml, sizeof yaml, "groups:\n  g:\n    runtime: %s\n    period: 1s\n", runtimes[i].value);
                c = parse_ok(yaml);
                cr_expect_eq(c->groups[0].runtime, runtimes[i].ns, "%s", yaml);
                cr_expect_eq(c->groups[0].period, NSEC_PER_SEC, "%s", yaml);
                conf_free(c);
        }
        for (size_t i = 0; i < ELEMENTSOF(counts); i++) {
                Config *c;

                snprintf(yaml, sizeof yaml, "limits:\n  default:\n    reservations: %s\n", counts[i].value);
                c = parse_ok(yaml);
                cr_expect_eq(c->limits[0].reservations, counts[i].ns, "%s", yaml);
                conf_free(c);
        }
}

/* exec-timeout: its default, and the range's ends taken. */
Test(conf, exec_timeout) {
        Config *c = parse_ok("");

        cr_expect_eq(c->exec_timeout, CONF_EXEC_TIMEOUT_DEFAULT);
        cr_expect_eq(c->exec_timeout, 60 * NSEC_PER_SEC);
        conf_free(c);
        c = parse_ok("exec-timeout: 1ms\n");
        cr_expect_eq(c->exec_timeout, NSEC_PER_MSEC);
        conf_free(c);
        c = parse_ok("exec-timeout: 3600s\n");
        cr_expect_eq(c->exec_timeout, 3600 * NSEC_PER_SEC);
        conf_free(c);
        c = parse_ok("exec-timeout: 250ms\n");
        cr_expect_eq(c->exec_timeout, 250 * NSEC_PER_MSEC);
        conf_free(c);
}

Test(conf, limits_without_default_are_unlimited) {
        Config *c = parse_ok("limits:\n  alice:\n    rate: 1/1ns\n");

        cr_assert_eq(c->n_limits, 1);
        cr_expect_eq(c->limits[0].bandwidth, CONF_UNLIMITED);
        cr_expect_eq(c->limits[0].reservations, CONF_UNLIMITED);
        cr_expect_eq(c->limits[0].rate_count, 1);
        cr_expect_eq(c->limits[0].rate_window_ns, 1);
        cr_expect_null(conf_find_limit(c, "bob"));
        cr_expect_eq(conf_find_limit(c, "alice"), &c->limits[0]);
        conf_free(c);
}

Test(conf, default_group) {
        const char *const good[] = {
                "default-group: /\n",
                "default-group: a\ngroups:\n  a: {bandwidth: 1%}\n",
                "groups:\n  a:\n    bandwidth: 2%\n    groups:\n      b: {bandwidth: 1%}\ndefault-group: a/b\n",
        };

        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                Config *c = parse_ok(good[i]);
                Tree *t = build_ok(c, CAP_1CPU);

                cr_expect_not_null(tree_find_group(t, c->default_group));
                tree_free(t);
                conf_free(c);
        }
}

Test(conf, crlf_and_flow_positions) {
        ConfErrors e = {};
        const char *yaml = "fork: split\r\ngroups: {a: {bandwidth: 1%, period: 1ms}}\r\n";

        parse_fail(yaml, strlen(yaml), &e);
        cr_assert_eq(e.n, 1);
        cr_expect_str_eq(e.lines[0], "t.yaml:2:14: groups.a.bandwidth: give either bandwidth or runtime and period, "
                                     "not both");
        conf_errors_done(&e);
}

/* --- errors: every kind, with its exact line --- */

typedef struct ErrorCase {
        const char *yaml;
        size_t n;                 /* how many errors */
        const char *first;        /* the first error line, exactly */
        const char *last;         /* the last one when n > 1, or NULL */
} ErrorCase;

static void check_errors(const ErrorCase *cases, size_t n_cases) {
        for (size_t i = 0; i < n_cases; i++) {
                ConfErrors e = {};

                parse_fail(cases[i].yaml, strlen(cases[i].yaml), &e);
                dump(&e);
                cr_expect_eq(e.n, cases[i].n, "case %zu: %zu errors, expected %zu:\n%s", i, e.n, cases[i].n,
                             cases[i].yaml);
                if (e.n > 0)
                        cr_expect_str_eq(e.lines[0], cases[i].first, "case %zu:\n%s\nfirst:    %s\nexpected: %s", i,
                                         cases[i].yaml, e.lines[0], cases[i].first);
                if (cases[i].last && e.n > 0)
                        cr_expect_str_eq(e.lines[e.n - 1], cases[i].last, "case %zu:\n%s\nlast:     %s\nexpected: %s",
                                         i, cases[i].yaml, e.lines[e.n - 1], cases[i].last);
                conf_errors_done(&e);
                cr_expect_eq(e.n, 0);
                cr_expect_null(e.lines);
        }
}

Test(conf, value_errors) {
        static const ErrorCase cases[] = {
                { "groups:\n  audio:\n    runtime: 10ms\n    period: 100\n", 1,
                  "t.yaml:4:13: groups.audio.period: \"100\" has no unit (write it as 10ms, 250us, 1.5s)" },
                { "groups:\n  audio:\n    runtime: 10h\n    period: 1s\n", 1,
                  "t.yaml:3:14: groups.audio.runtime: \"10h\" has an unknown unit (use ns, us, ms or s)" },
                { "groups:\n  a:\n    runtime: 1023ns\n    period: 1s\n", 1,
                  "t.yaml:3:14: groups.a.runtime: must be at least 1.024us (the kernel's smallest runtime)" },
                { "groups:\n  a:\n    runtime: 1ms\n    period: 0ms\n", 1,
                  "t.yaml:4:13: groups.a.period: must not be zero" },
                { "groups:\n  a:\n    runtime: 1024ns\n    period: 4194304s\n", 1,
                  "t.yaml:3:5: groups.a.runtime: runtime/period is too small: it rounds to no bandwidth at all" },
                { "groups:\n  a:\n    runtime: 20000s\n    period: 1s\n", 1,
                  "t.yaml:3:5: groups.a.runtime: is too large (the largest is 2^44 ns, about 4.9 hours)" },
                { "groups:\n  a:\n    bandwidth: 20\n", 1,
                  "t.yaml:3:16: groups.a.bandwidth: \"20\" has no % sign (write it as 20%)" },
                { "groups:\n  a:\n    bandwidth: 0%\n", 1,
                  "t.yaml:3:16: groups.a.bandwidth: must be at least 0.001024% (1.024us of every 100ms, the "
                  "kernel's smallest runtime)" },
                { "groups:\n  a:\n    bandwidth: -5%\n", 1,
                  "t.yaml:3:16: groups.a.bandwidth: \"-5%\" is negative" },
                { "groups:\n  a:\n    bandwidth: 10%\n    fork: always\n", 1,
                  "t.yaml:4:11: groups.a.fork: \"always\" is not a fork policy (expected split, inherit or none)" },
                { "groups:\n  a:\n    bandwidth: 10%\n    threads: [split]\n", 1,
                  "t.yaml:4:14: groups.a.threads: expected split, inherit or none, not a sequence" },
                { "groups:\n  a:\n    bandwidth: 10%\n    min-split-runtime: 5\n", 1,
                  "t.yaml:4:24: groups.a.min-split-runtime: \"5\" has no unit (write it as 10ms, 250us, 1.5s)" },
                { "groups:\n  a:\n    bandwidth:\n", 1,
                  "t.yaml:3:15: groups.a.bandwidth: has no value (expected a percentage such as 20%)" },
                { "groups:\n  a:\n    bandwidth: {x: 1}\n", 1,
                  "t.yaml:3:16: groups.a.bandwidth: expected a percentage such as 20%, not a mapping" },
                { "groups:\n  a: 10%\n", 1,
                  "t.yaml:2:6: groups.a: expected a mapping with bandwidth: (or runtime: and period:), not a "
                  "single value" },
                { "groups:\n  a:\n", 1,
                  "t.yaml:2:5: groups.a: has no value (expected a mapping with bandwidth: (or runtime: and "
                  "period:))" },
                { "groups: [a, b]\n", 1, "t.yaml:1:9: groups: expected a mapping of group names, not a sequence" },
                { "groups:\n  a:\n    bandwidth: 1%\n    users: alice\n", 1,
                  "t.yaml:4:12: groups.a.users: expected a sequence of user names such as [alice, bob], not a "
                  "single value" },
                { "groups:\n  a:\n    bandwidth: 1%\n    users:\n", 1,
                  "t.yaml:4:11: groups.a.users: has no value (list user names such as [alice, bob], write [] for "
                  "nobody, or leave the key out for anyone)" },
                { "groups:\n  a:\n    bandwidth: 1%\n    users: [alice, alice, 42, -x, \"a b\", [c]]\n", 5,
                  "t.yaml:4:20: groups.a.users: duplicate user \"alice\" (first given at 4:13)",
                  "t.yaml:4:42: groups.a.users: expected a user name, not a sequence" },
                { "groups:\n  a:\n    bandwidth: 1%\n    cgroup: yes\n", 1,
                  "t.yaml:4:13: groups.a.cgroup: \"yes\" is ambiguous: write true, false, or a quoted path" },
                { "groups:\n  a:\n    bandwidth: 1%\n    cgroup: /abs\n", 1,
                  "t.yaml:4:13: groups.a.cgroup: \"/abs\" must be relative to cgroup-root (no leading /)" },
                { "groups:\n  a:\n    bandwidth: 1%\n    cgroup: a/../b\n", 1,
                  "t.yaml:4:13: groups.a.cgroup: \"a/../b\" is not a valid cgroup path (names of letters, digits, "
                  "_ . - separated by /, at most 16 deep and 255 bytes)" },
                { "capacity: 0%\n", 1, "t.yaml:1:11: capacity: must be above 0% (or auto)" },
                { "capacity: all\n", 1, "t.yaml:1:11: capacity: \"all\" is not a percentage (write it as 20%)" },
                { "polkit: maybe\n", 1,
                  "t.yaml:1:9: polkit: \"maybe\" is not a polkit mode (expected auto, required or off)" },
                { "cgroup-root: relative/path\n", 1,
                  "t.yaml:1:14: cgroup-root: \"relative/path\" must be an absolute path such as /sys/fs/cgroup/edfd" },
                { "cgroup-root: /a//b\n", 1, "t.yaml:1:14: cgroup-root: \"/a//b\" contains an empty component (//)" },
                { "cgroup-root: /a/../b\n", 1,
                  "t.yaml:1:14: cgroup-root: \"/a/../b\" must not contain . or .. components" },
                { "cgroup-root: /\n", 1, "t.yaml:1:14: cgroup-root: \"/\" must not be / itself" },
                { "cgroup-root: /a/\n", 1, "t.yaml:1:14: cgroup-root: \"/a/\" must not end with /" },
                { "min-split-runtime: 0ns\n", 1,
                  "t.yaml:1:20: min-split-runtime: must be at least 1.024us (the kernel's smallest runtime)" },
                { "exec-timeout: 999us\n", 1, "t.yaml:1:15: exec-timeout: must be from 1ms to 3600s" },
                { "exec-timeout: 3601s\n", 1, "t.yaml:1:15: exec-timeout: must be from 1ms to 3600s" },
                { "exec-timeout: soon\n", 1,
                  "t.yaml:1:15: exec-timeout: \"soon\" is not a duration (write it as 10ms, 250us, 1.5s)" },
                { "default-group: a//b\n", 1, "t.yaml:1:16: default-group: \"a//b\" is not a valid group path" },
                { "default-group: nope\ngroups:\n  a: {bandwidth: 1%}\n", 1,
                  "t.yaml:1:16: default-group: no group \"nope\" under groups:" },
                { "default-group: a/b\ngroups:\n  a: {bandwidth: 1%}\n", 1,
                  "t.yaml:1:16: default-group: no group \"a/b\" under groups:" },
                { "limits:\n  default:\n    reservations: -1\n", 1,
                  "t.yaml:3:19: limits.default.reservations: \"-1\" is negative" },
                { "limits:\n  default:\n    reservations: 1.5\n", 1,
                  "t.yaml:3:19: limits.default.reservations: \"1.5\" is not a whole number" },
                { "limits:\n  default:\n    reservations: 010\n", 1,
                  "t.yaml:3:19: limits.default.reservations: \"010\" has a leading zero (write it without, as in 10)" },
                { "limits:\n  default:\n    bandwidth: lots\n", 1,
                  "t.yaml:3:16: limits.default.bandwidth: \"lots\" is not a percentage (write it as 20%)" },
                { "limits:\n  default:\n    rate: 20\n", 1,
                  "t.yaml:3:11: limits.default.rate: \"20\" is not a rate (write it as 20/10s: 20 requests every 10 "
                  "seconds)" },
                { "limits:\n  default:\n    rate: 0/1s\n", 1,
                  "t.yaml:3:11: limits.default.rate: \"0/1s\" allows no request at all (to forbid reservations "
                  "write reservations: 0)" },
                { "limits:\n  default:\n    rate: 5/0s\n", 1,
                  "t.yaml:3:11: limits.default.rate: \"5/0s\": the window must not be zero" },
                { "limits:\n  default:\n    rate: 5/10\n", 1,
                  "t.yaml:3:11: limits.default.rate: \"5/10\": the window has no unit (write it as 10ms, 250us, "
                  "1.5s)" },
                { "limits:\n  default:\n    rate: /1s\n", 1,
                  "t.yaml:3:11: limits.default.rate: \"/1s\": the count is empty" },
                { "limits:\n  default: 5\n", 1,
                  "t.yaml:2:12: limits.default: expected a mapping of bandwidth, reservations and rate, not a "
                  "single value" },
                { "limits:\n  \"1000\": {}\n", 1,
                  "t.yaml:2:3: limits.1000: \"1000\" is a number: write the user's name, not a uid" },
                { "limits:\n  \"a b\": {}\n", 1,
                  "t.yaml:2:3: limits.a b: \"a b\" is not a user name (letters, digits, _ . - only)" },
                { "- a\n- b\n", 1,
                  "t.yaml:1:1: the configuration must be a mapping of keys (capacity, fork, threads, "
                  "min-split-runtime, reclaim, exec-timeout, default-group, cgroup-root, polkit, limits, placement, partitions, partition-shared-cpus, groups), not a sequence" },
                { "just a string\n", 1,
                  "t.yaml:1:1: the configuration must be a mapping of keys (capacity, fork, threads, "
                  "min-split-runtime, reclaim, exec-timeout, default-group, cgroup-root, polkit, limits, placement, partitions, partition-shared-cpus, groups), not a single value" },
                { "fork: \"sp\\0lit\"\n", 1, "t.yaml:1:7: fork: contains a NUL character" },
        };

        check_errors(cases, ELEMENTSOF(cases));
}

Test(conf, structure_errors) {
        static const ErrorCase cases[] = {
                /* unknown keys, at every level */
                { "capasity: auto\n", 1,
                  "t.yaml:1:1: capasity: unknown key (expected one of: capacity, fork, threads, min-split-runtime, "
                  "reclaim, exec-timeout, default-group, cgroup-root, polkit, limits, placement, partitions, "
                  "partition-shared-cpus, groups)" },
                { "groups:\n  a:\n    bandwidth: 1%\n    perod: 1ms\n", 1,
                  "t.yaml:4:5: groups.a.perod: unknown key (expected one of: runtime, period, bandwidth, fork, "
                  "threads, min-split-runtime, reclaim, users, cgroup, placement, groups)" },
                { "limits:\n  default:\n    bw: 1%\n", 1,
                  "t.yaml:3:5: limits.default.bw: unknown key (expected one of: bandwidth, reservations, rate)" },
                /* duplicate keys, at every level, each reported at its second occurrence */
                { "capacity: auto\nfork: none\ncapacity: 50%\n", 1,
                  "t.yaml:3:1: capacity: duplicate key \"capacity\" (first given at 1:1)" },
                { "groups:\n  a: {bandwidth: 1%}\n  b: {bandwidth: 1%}\n  a: {bandwidth: 2%}\n", 1,
                  "t.yaml:4:3: groups.a: duplicate key \"a\" (first given at 2:3)" },
                { "groups:\n  a:\n    bandwidth: 1%\n    bandwidth: 2%\n", 1,
                  "t.yaml:4:5: groups.a.bandwidth: duplicate key \"bandwidth\" (first given at 3:5)" },
                { "limits:\n  bob: {}\n  bob: {}\n  bob: {}\n", 2,
                  "t.yaml:3:3: limits.bob: duplicate key \"bob\" (first given at 2:3)",
                  "t.yaml:4:3: limits.bob: duplicate key \"bob\" (first given at 2:3)" },
                /* runtime/period/bandwidth combinations */
                { "groups:\n  a:\n    bandwidth: 10%\n    runtime: 1ms\n    period: 2ms\n", 1,
                  "t.yaml:3:5: groups.a.bandwidth: give either bandwidth or runtime and period, not both" },
                { "groups:\n  a:\n    period: 2ms\n    bandwidth: 10%\n", 1,
                  "t.yaml:4:5: groups.a.bandwidth: give either bandwidth or runtime and period, not both" },
                { "groups:\n  a:\n    runtime: 1ms\n", 1,
                  "t.yaml:3:5: groups.a.runtime: runtime needs a period (or write bandwidth: 20% instead)" },
                { "groups:\n  a:\n    period: 1ms\n", 1,
                  "t.yaml:3:5: groups.a.period: period needs a runtime (or write bandwidth: 20% instead)" },
                { "groups:\n  a: {}\n", 1,
                  "t.yaml:2:3: groups.a: no bandwidth: give bandwidth: (a percentage such as 20%) or runtime: and "
                  "period:" },
                { "groups:\n  a:\n    fork: none\n", 1,
                  "t.yaml:2:3: groups.a: no bandwidth: give bandwidth: (a percentage such as 20%) or runtime: and "
                  "period:" },
                /* group names */
                { "groups:\n  \"bad name\": {bandwidth: 1%}\n", 1,
                  "t.yaml:2:3: groups.bad name: the group name \"bad name\" may hold only letters, digits, _ . and - "
                  "(no / or spaces)" },
                { "groups:\n  a/b: {bandwidth: 1%}\n", 1,
                  "t.yaml:2:3: groups.a/b: the group name \"a/b\" may hold only letters, digits, _ . and - (no / or "
                  "spaces)" },
                { "groups:\n  .hidden: {bandwidth: 1%}\n", 1,
                  "t.yaml:2:3: groups..hidden: the group name \".hidden\" must start with a letter or a digit" },
                { "groups:\n  \"\": {bandwidth: 1%}\n", 1, "t.yaml:2:3: groups.: the group name \"\" is empty" },
                { "groups:\n  cgroup.procs: {bandwidth: 1%}\n", 1,
                  "t.yaml:2:3: groups.cgroup.procs: the group name \"cgroup.procs\" must not start with \"cgroup.\" "
                  "(the kernel's own files)" },
                { "groups:\n  "
                  "a1234567890123456789012345678901234567890123456789012345678901234: {bandwidth: 1%}\n",
                  1,
                  "t.yaml:2:3: groups.a123456789012345678901234567890123456789012345678901234567890123...: the "
                  "group name \"a123456789012345678901234567890123456789012345678901234567890123...\" is longer than "
                  "64 bytes" },
                /* keys that are not names */
                { "? [a, b]\n: 1\n", 1, "t.yaml:1:3: a key must be a name, not a sequence" },
                { "groups:\n  {a: 1}: x\n", 1, "t.yaml:2:3: groups: a key must be a name, not a mapping" },
                /* errors everywhere are all collected, in one pass */
                { "capacity: x\nfork: y\ngroups:\n  a:\n    runtime: 1\n    period: 2\n  b: {}\npolkit: z\n", 6,
                  "t.yaml:1:11: capacity: \"x\" is not a percentage (write it as 20%)",
                  "t.yaml:8:9: polkit: \"z\" is not a polkit mode (expected auto, required or off)" },
        };

        check_errors(cases, ELEMENTSOF(cases));
}

/* --- malformed and hostile YAML --- */

Test(conf, malformed_yaml) {
        static const ErrorCase cases[] = {
                { "groups:\n\taudio: {bandwidth: 1%}\n", 1,
                  "t.yaml:2:1: groups: a tab character: YAML indents with spaces only" },
                { "groups:\n  a:\n    bandwidth: 1%\n\tfork: none\n", 1,
                  "t.yaml:4:1: groups.a.bandwidth: a tab character: YAML indents with spaces only" },
                { "fork: \"split\n", 1,
                  "t.yaml:1:7: fork: unterminated quoted string: the file ends before its closing quote" },
                { "groups:\n  a:\n    bandwidth: '10%\n", 1,
                  "t.yaml:3:16: groups.a.bandwidth: unterminated quoted string: the file ends before its closing "
                  "quote" },
                { "fork: split\n---\nfork: none\n", 1,
                  "t.yaml:2:1: a second YAML document: only one is read; remove this \"---\" and merge what "
                  "follows into the first" },
                { "groups:\n  a: &x {bandwidth: 10%}\n  b: *x\n", 2,
                  "t.yaml:2:6: groups.a: anchors (&x) are not supported: write each value out in full",
                  "t.yaml:3:6: groups.b: aliases (*x) are not supported: write the value out in full" },
                { "fork: &f split\n", 1, "t.yaml:1:7: fork: anchors (&f) are not supported: write each value out in full" },
                { "fork: !!str split\n", 1,
                  "t.yaml:1:7: fork: tags (tag:yaml.org,2002:str) are not supported: quote a value to make it a "
                  "string" },
                { "groups: {a: {bandwidth: 1%}\n", 1,
                  "t.yaml:2:1: groups: did not find expected ',' or '}', while parsing a flow mapping at 1:9" },
                { "fork: split\n  threads: none\n", 1,
                  "t.yaml:2:10: mapping values are not allowed in this context" },
                { "groups:\n  a:\n    bandwidth: 1%\n   fork: none\n", 1,
                  "t.yaml:4:4: groups: did not find expected key, while parsing a block mapping at 2:3" },
                { "fork: spl\xC3\x28it\n", 1,
                  "t.yaml:1:11: invalid trailing UTF-8 octet (byte 0x28): the file must be UTF-8 text" },
                { "fork: \x01\n", 1,
                  "t.yaml:1:7: control characters are not allowed (byte 0x01): the file must be UTF-8 text" },
        };

        check_errors(cases, ELEMENTSOF(cases));
}

Test(conf, nul_byte_in_input) {
        static const char yaml[] = "fork: split\0threads: none\n";
        ConfErrors e = {};

        parse_fail(yaml, sizeof yaml - 1, &e);
        cr_assert_eq(e.n, 1);
        cr_expect_str_eq(e.lines[0], "t.yaml:1:12: control characters are not allowed (byte 0x00): the file must be "
                                     "UTF-8 text");
        conf_errors_done(&e);
}

Test(conf, utf16_refused) {
        static const char yaml[] = "\xFF\xFE" "f\0o\0:\0 \0x\0\n\0";
        ConfErrors e = {};

        parse_fail(yaml, sizeof yaml - 1, &e);
        cr_assert_eq(e.n, 1);
        cr_expect_str_eq(e.lines[0], "t.yaml: the file must be UTF-8 text, not UTF-16");
        conf_errors_done(&e);
}

Test(conf, forty_digit_numbers) {
        static const ErrorCase cases[] = {
                { "limits:\n  default:\n    reservations: 1234567890123456789012345678901234567890\n", 1,
                  "t.yaml:3:19: limits.default.reservations: \"1234567890123456789012345678901234567890\" is too "
                  "large (the largest is 18446744073709551615)" },
                { "limits:\n  default:\n    reservations: 18446744073709551616\n", 1,
                  "t.yaml:3:19: limits.default.reservations: \"18446744073709551616\" is too large (the largest is "
                  "18446744073709551615)" },
                { "limits:\n  default:\n    rate: 1234567890123456789012345678901234567890/1s\n", 1,
                  "t.yaml:3:11: limits.default.rate: \"1234567890123456789012345678901234567890/1s\": the count is "
                  "too large (the largest is 18446744073709551615)" },
                { "min-split-runtime: 1234567890123456789012345678901234567890ns\n", 1,
                  "t.yaml:1:20: min-split-runtime: \"1234567890123456789012345678901234567890ns\" is too large" },
                { "capacity: 1234567890123456789012345678901234567890%\n", 1,
                  "t.yaml:1:11: capacity: \"1234567890123456789012345678901234567890%\" is too large" },
                { "capacity: 99999999%\n", 1, "t.yaml:1:11: capacity: \"99999999%\" is too large" },
        };

        check_errors(cases, ELEMENTSOF(cases));
}

/* A YAML block of groups nested n deep: g0 contains g1 contains ... */
static char *nested_groups(unsigned n) {
        char *s = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&s, &size);

        cr_assert_not_null(f);
        fputs("groups:\n", f);
        for (unsigned i = 0; i < n; i++) {
                fprintf(f, "%*sg%u:\n", 4 * i + 2, "", i);
                fprintf(f, "%*sbandwidth: 1%%\n", 4 * i + 4, "");
                if (i + 1 < n)
                        fprintf(f, "%*sgroups:\n", 4 * i + 4, "");
        }
        cr_assert_eq(fclose(f), 0);
        return s;
}

Test(conf, thousand_levels_of_nesting) {
        char *flow, *block = nested_groups(1000);
        ConfErrors e = {};

        parse_fail(block, strlen(block), &e);
        cr_assert_eq(e.n, 1);
        cr_expect(strstr(e.lines[0], ": nested deeper than 40 levels"), "%s", e.lines[0]);
        cr_expect_eq(strncmp(e.lines[0], "t.yaml:", 7), 0, "%s", e.lines[0]);
        conf_errors_done(&e);
        free(block);

        /* 1,000 flow sequences, and 10 MB of them: refused at the 41st, long before the end */
        for (size_t n = 1000; n <= 10u << 20; n = n < 1000000 ? 10u << 20 : SIZE_MAX) {
                flow = malloc(n + 8);
                cr_assert_not_null(flow);
                memcpy(flow, "fork: ", 6);
                memset(flow + 6, '[', n);
                parse_fail(flow, n + 6, &e);
                cr_assert_eq(e.n, 1);
                cr_expect_str_eq(e.lines[0], "t.yaml:1:46: fork: nested deeper than 40 levels");
                conf_errors_done(&e);
                free(flow);
        }
}

Test(conf, group_depth) {
        char *ok = nested_groups(GROUP_DEPTH_MAX), *deep = nested_groups(GROUP_DEPTH_MAX + 1);
        ConfErrors e = {};
        Config *c;
        Tree *t;
        const Group *g;

        c = parse_ok(ok);
        t = build_ok(c, CAP_1CPU);
        cr_expect_eq(t->n_groups, GROUP_DEPTH_MAX + 1);
        g = tree_find_group(t, "g0/g1/g2/g3/g4/g5/g6/g7/g8/g9/g10/g11/g12/g13/g14/g15");
        cr_assert_not_null(g);
        cr_expect_eq(g->depth, GROUP_DEPTH_MAX);
        tree_free(t);
        conf_free(c);

        parse_fail(deep, strlen(deep), &e);
        cr_assert_eq(e.n, 1);
        cr_expect_str_eq(e.lines[0], "t.yaml:50:67: groups.g0.groups.g1.groups.g2.groups.g3.groups.g4.groups.g5.groups.g6."
                                     "groups.g7.groups.g8.groups.g9.groups.g10.groups.g11.groups.g12.groups.g13.groups."
                                     "g14.groups.g15.groups.g16: groups are nested deeper than 16 levels");
        conf_errors_done(&e);
        free(ok);
        free(deep);
}

Test(conf, group_path_too_long) {
        char name[65], yaml[2048];
        size_t o = 0;
        ConfErrors e = {};

        memset(name, 'n', 64);
        name[64] = '\0';
        /* four names of 64 bytes and their slashes: 259 > GROUP_PATH_MAX */
        o += (size_t) snprintf(yaml + o, sizeof yaml - o, "groups:\n");
        for (unsigned i = 0; i < 4; i++) {
                o += (size_t) snprintf(yaml + o, sizeof yaml - o, "%*s%s:\n", 4 * i + 2, "", name);
                o += (size_t) snprintf(yaml + o, sizeof yaml - o, "%*sbandwidth: 1%%\n", 4 * i + 4, "");
                if (i < 3)
                        o += (size_t) snprintf(yaml + o, sizeof yaml - o, "%*sgroups:\n", 4 * i + 4, "");
        }
        parse_fail(yaml, o, &e);
        cr_assert_eq(e.n, 1);
        cr_expect(strstr(e.lines[0], "t.yaml:11:15: groups."), "%s", e.lines[0]);
        cr_expect(strstr(e.lines[0], ": the group path is longer than 255 bytes"), "%s", e.lines[0]);
        conf_errors_done(&e);
}

#define TEN_MB (10u << 20)

/* groups: a with `users` of n names, and `children` groups inside it that inherit them */
static char *users_yaml(size_t n, size_t children, size_t min_size) {
        char *s = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&s, &size);

        cr_assert_not_null(f);
        fputs("groups:\n  a:\n    bandwidth: 50%\n    groups:\n", f);
        for (size_t i = 0; i < children; i++)
                fprintf(f, "      c%zu: {bandwidth: 0.01%%}\n", i);
        fputs("    users:\n", f);
        for (size_t i = 0; i < n || (size_t) ftell(f) < min_size; i++)
                fprintf(f, "      - u%zu\n", i);
        cr_assert_eq(fclose(f), 0);
        return s;
}

Test(conf, many_users) {
        char *s = users_yaml(CONF_USERS_MAX, 0, 0), last[32];
        ConfErrors e = {};
        Config *c;
        Tree *t;

        c = parse_ok(s);
        cr_assert_eq(strv_length(c->groups[0].users), CONF_USERS_MAX);
        snprintf(last, sizeof last, "u%d", CONF_USERS_MAX - 1);
        cr_expect_str_eq(c->groups[0].users[CONF_USERS_MAX - 1], last);
        t = build_ok(c, CAP_1CPU);
        cr_expect_eq(strv_length(tree_find_group(t, "a")->users), CONF_USERS_MAX);
        tree_free(t);
        conf_free(c);
        free(s);

        /* one more is refused, at the group */
        s = users_yaml(CONF_USERS_MAX + 1, 0, 0);
        parse_fail(s, strlen(s), &e);
        cr_assert_eq(e.n, 1);
        cr_expect_str_eq(e.lines[0], "t.yaml:2:3: groups.a: the groups' user lists add up to more than 65536 names (a "
                                     "group without users: repeats its parent's list)");
        conf_errors_done(&e);
        free(s);

        /* and so are copies: 1,000 names inherited by 100 children would be 101,000 in the tree */
        s = users_yaml(1000, 100, 0);
        parse_fail(s, strlen(s), &e);
        cr_assert_eq(e.n, 1);
        cr_expect_str_eq(e.lines[0], "t.yaml:69:7: groups.a.groups.c64: the groups' user lists add up to more than "
                                     "65536 names (a group without users: repeats its parent's list)");
        conf_errors_done(&e);
        free(s);
}

Test(conf, ten_megabytes_of_users) {
        char *s = users_yaml(0, 0, TEN_MB);
        ConfErrors e = {};

        cr_assert_geq(strlen(s), TEN_MB);
        parse_fail(s, strlen(s), &e);
        cr_assert_eq(e.n, 1);
        cr_expect_str_eq(e.lines[0], "t.yaml:2:3: groups.a: the groups' user lists add up to more than 65536 names (a "
                                     "group without users: repeats its parent's list)");
        conf_errors_done(&e);
        free(s);
}

Test(conf, ten_megabytes_of_groups) {
        char *s = NULL;
        size_t size = 0, n = 0;
        FILE *f = open_memstream(&s, &size);
        ConfErrors e = {};
        char expect[128];

        cr_assert_not_null(f);
        fputs("groups:\n", f);
        while ((size_t) ftell(f) < TEN_MB)
                fprintf(f, "  g%zu: {bandwidth: 0.01%%}\n", n++);
        cr_assert_eq(fclose(f), 0);
        cr_assert_gt(n, CONF_GROUPS_MAX);
        parse_fail(s, size, &e);
        cr_assert_eq(e.n, 1);
        snprintf(expect, sizeof expect, "t.yaml:%d:3: groups.g%d: more than %d groups", CONF_GROUPS_MAX + 2,
                 CONF_GROUPS_MAX, CONF_GROUPS_MAX);
        cr_expect_str_eq(e.lines[0], expect);
        conf_errors_done(&e);
        free(s);
}

Test(conf, ten_megabytes_of_errors) {
        char *s = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&s, &size);
        ConfErrors e = {};
        char expect[128];

        cr_assert_not_null(f);
        while ((size_t) ftell(f) < TEN_MB)
                fputs("fork: split\n", f);
        cr_assert_eq(fclose(f), 0);
        parse_fail(s, size, &e);
        cr_assert_eq(e.n, CONF_ERRORS_MAX + 1);
        cr_expect_str_eq(e.lines[0], "t.yaml:2:1: fork: duplicate key \"fork\" (first given at 1:1)");
        snprintf(expect, sizeof expect, "t.yaml:%d:1: fork: duplicate key \"fork\" (first given at 1:1)",
                 CONF_ERRORS_MAX + 1);
        cr_expect_str_eq(e.lines[CONF_ERRORS_MAX - 1], expect);
        snprintf(expect, sizeof expect, "t.yaml: too many errors, stopping after the first %d", CONF_ERRORS_MAX);
        cr_expect_str_eq(e.lines[CONF_ERRORS_MAX], expect);
        conf_errors_done(&e);
        free(s);
}

Test(conf, ten_megabyte_values) {
        const size_t n = TEN_MB;
        char *s = malloc(n + 64);
        ConfErrors e = {};
        size_t o;

        cr_assert_not_null(s);
        /* one huge scalar: quoted back in a message, cut to 64 bytes */
        o = (size_t) sprintf(s, "fork: ");
        memset(s + o, 'x', n);
        o += n;
        o += (size_t) sprintf(s + o, "\n");
        parse_fail(s, o, &e);
        cr_assert_eq(e.n, 1);
        cr_expect_str_eq(e.lines[0], "t.yaml:1:7: fork: \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                                     "...\" is not a fork policy (expected split, inherit or none)");
        conf_errors_done(&e);

        /* a huge comment is nothing */
        o = (size_t) sprintf(s, "# ");
        memset(s + o, 'c', n);
        o += n;
        o += (size_t) sprintf(s + o, "\nfork: none\n");
        {
                Config *c = NULL;

                cr_assert_eq(conf_parse_buffer(s, o, FILENAME, &c, &e), 0);
                cr_expect_eq(c->fork, FORK_NONE);
                conf_free(c);
        }
        free(s);
}

Test(conf, errors_may_be_discarded) {
        Config *c = NULL;

        cr_expect_eq(conf_parse_buffer("fork: x\n", 8, FILENAME, &c, NULL), -EINVAL);
        cr_expect_null(c);
}

/* --- files --- */

Test(conf, parse_file) {
        FILE *f = fmemopen((void *) full, strlen(full), "r");
        Config *c = NULL;
        ConfErrors e = {};

        cr_assert_not_null(f);
        cr_assert_eq(conf_parse_file(f, FILENAME, &c, &e), 0);
        cr_expect_eq(c->n_groups, 2);
        cr_expect_eq(c->polkit, POLKIT_REQUIRED);
        conf_free(c);
        fclose(f);

        f = fmemopen((void *) "fork: nope\n", 11, "r");
        cr_assert_not_null(f);
        cr_assert_eq(conf_parse_file(f, "x.yaml", &c, &e), -EINVAL);
        cr_assert_eq(e.n, 1);
        cr_expect_str_eq(e.lines[0], "x.yaml:1:7: fork: \"nope\" is not a fork policy (expected split, inherit or none)");
        conf_errors_done(&e);
        fclose(f);
}

Test(conf, file_too_large) {
        FILE *f = fopen("/dev/zero", "re");
        Config *c = NULL;
        ConfErrors e = {};

        if (!f)
                cr_skip_test("/dev/zero cannot be opened");
        cr_assert_eq(conf_parse_file(f, "zero", &c, &e), -EINVAL);
        cr_assert_eq(e.n, 1);
        cr_expect_str_eq(e.lines[0], "zero: is larger than 32 MiB");
        conf_errors_done(&e);
        fclose(f);
}

Test(conf, file_read_error) {
        FILE *f = fopen("/proc/self/mem", "re"); /* reading offset 0 fails with EIO */
        Config *c = NULL;
        ConfErrors e = {};

        if (!f)
                cr_skip_test("/proc/self/mem cannot be opened");
        cr_assert_eq(conf_parse_file(f, "mem", &c, &e), -EIO);
        cr_assert_eq(e.n, 1);
        cr_expect_str_eq(e.lines[0], "mem: cannot read: Input/output error");
        conf_errors_done(&e);
        fclose(f);
}

/* --- the tree --- */

static void build_errors(const char *yaml, uint64_t capacity, size_t n, const char *first, const char *last) {
        Config *c = parse_ok(yaml);
        ConfErrors e = {};

        build_fail(c, capacity, &e);
        dump(&e);
        cr_expect_eq(e.n, n, "%zu errors, expected %zu", e.n, n);
        if (e.n > 0)
                cr_expect_str_eq(e.lines[0], first);
        if (e.n > 0 && last)
                cr_expect_str_eq(e.lines[e.n - 1], last);
        conf_errors_done(&e);
        conf_free(c);
}

Test(conf, children_exceeding_parent) {
        build_errors("groups:\n"
                     "  audio:\n"
                     "    bandwidth: 40%\n"
                     "    groups:\n"
                     "      a: {bandwidth: 20%}\n"
                     "      b: {bandwidth: 25%}\n",
                     CAP_1CPU, 1, "t.yaml:2:3: groups.audio: children need 45%, group has 40%", NULL);
        /* one unit too many still shows as a difference */
        build_errors("groups:\n"
                     "  p:\n"
                     "    runtime: 1048576ns\n"
                     "    period: 1048576ns\n"
                     "    groups:\n"
                     "      a: {runtime: 524288ns, period: 1048576ns}\n"
                     "      b: {runtime: 524289ns, period: 1048576ns}\n",
                     CAP_2CPU, 1, "t.yaml:2:3: groups.p: children need 100.0001%, group has 100%", NULL);
        /* every group that does not fit, at every level, in one go */
        build_errors("groups:\n"
                     "  a:\n"
                     "    bandwidth: 10%\n"
                     "    groups:\n"
                     "      x: {bandwidth: 11%}\n"
                     "  b:\n"
                     "    bandwidth: 30%\n"
                     "    groups:\n"
                     "      y:\n"
                     "        bandwidth: 20%\n"
                     "        groups:\n"
                     "          z: {bandwidth: 20.5%}\n",
                     CAP_1CPU, 2, "t.yaml:2:3: groups.a: children need 11%, group has 10%",
                     "t.yaml:9:7: groups.b.groups.y: children need 20.5%, group has 20%");
}

Test(conf, top_level_exceeding_capacity) {
        static const char yaml[] = "groups:\n  a: {bandwidth: 50%}\n  b: {bandwidth: 45%}\n";
        char expect[256];
        Config *c;
        Tree *t;

        build_errors(yaml, CAP_1CPU, 1,
                     "t.yaml:1:1: groups: top-level groups need 95%, the root has 90% (what the kernel admits on this "
                     "machine)",
                     NULL);
        /* fits 95% (Debian's 6.1 kernel, no fair server), exactly */
        c = parse_ok(yaml);
        t = build_ok(c, pct(95));
        cr_expect_eq(t->root->allocated, pct(50) + pct(45));
        cr_expect_leq(t->root->allocated, t->root->bw);
        tree_free(t);
        /* kernel admission off: everything fits */
        t = build_ok(c, UINT64_MAX);
        tree_free(t);
        conf_free(c);

        /* a capacity cap below what the kernel admits */
        snprintf(expect, sizeof expect,
                 "t.yaml:2:1: groups: top-level groups need 95%%, the root has 60%% (capped by capacity:, the kernel "
                 "admits 180%%)");
        build_errors("capacity: 60%\ngroups:\n  a: {bandwidth: 50%}\n  b: {bandwidth: 45%}\n", CAP_2CPU, 1, expect,
                     NULL);
        /* a cap above it changes nothing: the kernel's number is the one */
        build_errors("capacity: 500%\ngroups:\n  a: {bandwidth: 50%}\n  b: {bandwidth: 45%}\n", CAP_1CPU, 1,
                     "t.yaml:2:1: groups: top-level groups need 95%, the root has 90% (what the kernel admits on this "
                     "machine)",
                     NULL);
        /* both the root and a group */
        build_errors("groups:\n  a:\n    bandwidth: 95%\n    groups:\n      b: {bandwidth: 96%}\n", CAP_1CPU, 2,
                     "t.yaml:1:1: groups: top-level groups need 95%, the root has 90% (what the kernel admits on this "
                     "machine)",
                     "t.yaml:2:3: groups.a: children need 96%, group has 95%");
}

Test(conf, exactly_fitting_children) {
        Config *c = parse_ok("groups:\n"
                             "  audio:\n"
                             "    bandwidth: 40%\n"
                             "    groups:\n"
                             "      a: {bandwidth: 10%}\n"
                             "      b: {bandwidth: 15%}\n"
                             "      c: {bandwidth: 15%}\n"
                             "  rest: {bandwidth: 50%}\n");
        Tree *t = build_ok(c, CAP_1CPU);
        Group *audio = tree_find_group(t, "audio");

        cr_assert_not_null(audio);
        cr_expect_eq(audio->bw, pct(40));
        cr_expect_eq(audio->allocated, pct(10) + 2 * pct(15));
        cr_expect_leq(audio->allocated, audio->bw);
        cr_expect_eq(audio->n_children, 3);
        cr_expect_eq(t->root->allocated, pct(40) + pct(50));
        cr_expect_leq(t->root->allocated, t->root->bw); /* 90% in 90% */
        tree_free(t);
        conf_free(c);
}

Test(conf, core_refusals_are_reported) {
        /* A Config made by hand, not by the parser: the core refuses what the parser never lets through. */
        ConfGroup kids[] = {
                { .name = (char *) "ok", .runtime = MS, .period = 100 * MS, .fork = _FORK_POLICY_UNSET,
                  .threads = _FORK_POLICY_UNSET, .line = 3, .column = 5 },
                { .name = (char *) "tiny", .runtime = 1, .period = 100 * MS, .fork = _FORK_POLICY_UNSET,
                  .threads = _FORK_POLICY_UNSET, .line = 4, .column = 5 },
                { .name = (char *) "bad name", .runtime = MS, .period = 100 * MS, .fork = _FORK_POLICY_UNSET,
                  .threads = _FORK_POLICY_UNSET, .line = 5, .column = 5 },
        };
        ConfGroup top = { .name = (char *) "top", .runtime = 10 * MS, .period = 100 * MS, .fork = _FORK_POLICY_UNSET,
                          .threads = _FORK_POLICY_UNSET, .children = kids, .n_children = ELEMENTSOF(kids),
                          .line = 2, .column = 3 };
        Config c = { .capacity_auto = true, .capacity = CONF_UNLIMITED, .fork = FORK_SPLIT, .threads = FORK_NONE,
                     .min_split_runtime = 500 * US, .polkit = POLKIT_AUTO, .groups = &top, .n_groups = 1,
                     .default_group = (char *) "missing", .default_group_line = 1, .default_group_column = 16 };
        ConfErrors e = {};
        Tree *t = NULL;

        cr_assert_eq(conf_build_tree(&c, FILENAME, CAP_1CPU, NULL, &t, &e), -EINVAL);
        dump(&e);
        cr_assert_null(t);
        cr_assert_eq(e.n, 3);
        cr_expect_str_eq(e.lines[0], "t.yaml:4:5: groups.top.groups.tiny: invalid parameters: runtime is below 1024ns, "
                                     "the kernel's minimum");
        cr_expect(strstr(e.lines[1], "t.yaml:5:5: groups.top.groups.bad name: \"top/bad name\" is not a valid group path"),
                  "%s", e.lines[1]);
        cr_expect_str_eq(e.lines[2], "t.yaml:1:16: default-group: no group \"missing\" in the tree");
        conf_errors_done(&e);
}

/* --- the shipped configuration --- */

static FILE *open_shipped(char *path, size_t size) {
        const char *const candidates[] = {
#ifdef SOURCE_ROOT
                SOURCE_ROOT "/conf/edfd.yaml",
#endif
                "../conf/edfd.yaml",
                "../../conf/edfd.yaml",
                "../../../conf/edfd.yaml",
                "conf/edfd.yaml",
        };
        const char *root = getenv("MESON_SOURCE_ROOT");
        FILE *f;

        if (root) {
                snprintf(path, size, "%s/conf/edfd.yaml", root);
                f = fopen(path, "re");
                if (f)
                        return f;
        }
        for (size_t i = 0; i < ELEMENTSOF(candidates); i++) {
                snprintf(path, size, "%s", candidates[i]);
                f = fopen(path, "re");
                if (f)
                        return f;
        }
        cr_assert_fail("conf/edfd.yaml not found: define SOURCE_ROOT, set MESON_SOURCE_ROOT, or run from the build "
                       "directory");
        return NULL;
}

Test(conf, shipped_config) {
        /* 1 CPU with the fair server (90%), without it (95%), 2 CPUs (180%), admission off */
        const uint64_t capacities[] = { pct(90), pct(95), pct(180), UINT64_MAX };
        char path[4096];
        FILE *f = open_shipped(path, sizeof path);
        ConfErrors e = {};
        Config *c = NULL;
        uint64_t sum = 0;
        int r;

        cr_log_info("shipped configuration: %s", path);
        r = conf_parse_file(f, path, &c, &e);
        dump(&e);
        cr_assert_eq(r, 0, "%s: %s", path, e.n ? e.lines[0] : "?");
        fclose(f);

        cr_expect(c->capacity_auto);
        cr_expect_str_eq(c->default_group, "default");
        cr_expect_str_eq(c->cgroup_root, CONF_CGROUP_ROOT_DEFAULT);
        cr_expect_eq(c->min_split_runtime, CONF_MIN_SPLIT_RUNTIME_DEFAULT);
        cr_expect_not_null(conf_find_limit(c, "anyone"));
        for (size_t i = 0; i < c->n_groups; i++) {
                uint64_t bw;

                cr_assert_eq(bw_of(c->groups[i].runtime, c->groups[i].period, &bw), 0);
                sum += bw;
        }
        cr_expect_leq(sum, pct(90), "the shipped groups must load on one CPU");

        for (size_t i = 0; i < ELEMENTSOF(capacities); i++) {
                Tree *t = build_ok(c, capacities[i]);

                cr_expect_not_null(tree_find_group(t, "audio"));
                cr_expect_not_null(tree_find_group(t, "audio/pipewire"));
                cr_expect_not_null(tree_find_group(t, "video"));
                cr_expect_not_null(tree_find_group(t, "control"));
                cr_expect_not_null(tree_find_group(t, c->default_group));
                cr_expect_eq(t->root->allocated, sum);
                tree_free(t);
        }
        conf_free(c);
}

/* --- edfd --check-config --- */

static char *run_check(const char *yaml, uint64_t capacity, int *ret_r, char **ret_err) {
        FILE *in = fmemopen((void *) yaml, strlen(yaml), "r"), *out, *err;
        char *o = NULL, *er = NULL;
        size_t no = 0, ne = 0;

        cr_assert_not_null(in);
        out = open_memstream(&o, &no);
        err = open_memstream(&er, &ne);
        cr_assert(out && err);
        *ret_r = conf_check_print(in, "c.yaml", capacity, NULL, out, err);
        fclose(in);
        fclose(out);
        fclose(err);
        *ret_err = er;
        return o;
}

Test(conf, check_print) {
        char *out, *err;
        int r;

        out = run_check(full, CAP_2CPU, &r, &err);
        cr_assert_eq(r, 0, "%s", err);
        cr_expect_str_eq(err, "");
        cr_expect(strstr(out, "capacity: 150% (capped by capacity:)\n"), "%s", out);
        cr_expect(strstr(out, "fork: inherit\n"), "%s", out);
        cr_expect(strstr(out, "threads: split\n"), "%s", out);
        cr_expect(strstr(out, "min-split-runtime: 2ms\n"), "%s", out);
        cr_expect(strstr(out, "reclaim: on\n"), "%s", out);
        cr_expect(strstr(out, "default-group: audio/pipewire\n"), "%s", out);
        cr_expect(strstr(out, "cgroup-root: /sys/fs/cgroup/test.d\n"), "%s", out);
        cr_expect(strstr(out, "polkit: required\n"), "%s", out);
        cr_expect(strstr(out, "  alice: bandwidth 12.5%, reservations 8, rate 20/10s\n"), "%s", out);
        cr_expect(strstr(out, "  bob: bandwidth unlimited, reservations 0, rate unlimited\n"), "%s", out);
        /* every group with its path, numbers, policies, cgroup and users (inherited ones resolved) */
        cr_expect(strstr(out, "groups:\n"
                              "  PATH             RUNTIME    PERIOD BANDWIDTH  CHILDREN FORK    THREADS MIN-SPLIT "
                              "RECLAIM CGROUP   USERS\n"
                              "  /                      -         -      150%      150% inherit split         2ms "
                              "on      -        anyone\n"
                              "  audio               40ms     100ms       40%       35% inherit inherit       2ms "
                              "on      audio    alice,bob\n"
                              "  audio/jack           5ms     100ms        5%        0% inherit inherit       2ms "
                              "on      -        root-only\n"
                              "  audio/pipewire     1.5ms       5ms       30%        0% none    inherit     250us "
                              "on      media/pw alice,bob\n"
                              "  control            110ms     100ms      110%        0% inherit split         2ms "
                              "on      -        anyone\n"),
                  "%s", out);
        free(out);
        free(err);

        out = run_check("groups:\n  a: {bandwidth: 10%}\n  b:\n    bandwidth: x\n", CAP_2CPU, &r, &err);
        cr_expect_eq(r, -EINVAL);
        cr_expect_str_eq(out, "");
        cr_expect_str_eq(err, "c.yaml:4:16: groups.b.bandwidth: \"x\" is not a percentage (write it as 20%)\n");
        free(out);
        free(err);

        out = run_check("groups:\n  a: {bandwidth: 10%}\n", pct(5), &r, &err);
        cr_expect_eq(r, -EINVAL);
        cr_expect_str_eq(out, "");
        cr_expect_str_eq(err, "c.yaml:1:1: groups: top-level groups need 10%, the root has 5% (what the kernel admits "
                              "on this machine)\n");
        free(out);
        free(err);
}

/* --- partitions and placement (issue 21) --- */

Test(conf, partitions_and_placement) {
        Config *c = parse_ok("placement: partitioned\n"
                             "partitions:\n"
                             "  rt0: {cpus: \"1\"}\n"
                             "  rt1:\n"
                             "    cpus: 2-3,5\n"
                             "groups:\n"
                             "  audio:\n"
                             "    bandwidth: 20%\n"
                             "    placement: global\n"
                             "    groups:\n"
                             "      pw: {bandwidth: 10%}\n"
                             "      jack: {bandwidth: 10%, placement: partitioned}\n"
                             "  video: {bandwidth: 10%}\n");
        char buf[CPU_LIST_MAX];

        cr_assert_eq(c->n_partitions, 2);
        cr_assert_str_eq(c->partitions[0].name, "rt0");
        cr_assert_str_eq(cpu_mask_format(&c->partitions[0].cpus, buf, sizeof buf), "1");
        cr_assert_eq(c->partitions[0].line, 3);
        cr_assert_str_eq(c->partitions[1].name, "rt1");
        cr_assert_str_eq(cpu_mask_format(&c->partitions[1].cpus, buf, sizeof buf), "2-3,5");
        cr_assert_eq(c->placement, CONF_PLACEMENT_PARTITIONED);
        cr_assert_eq(conf_placement_of(c, "/"), CONF_PLACEMENT_PARTITIONED);
        cr_assert_eq(conf_placement_of(c, NULL), CONF_PLACEMENT_PARTITIONED);
        cr_assert_eq(conf_placement_of(c, "audio"), CONF_PLACEMENT_GLOBAL);
        cr_assert_eq(conf_placement_of(c, "audio/pw"), CONF_PLACEMENT_GLOBAL, "inherited from audio");
        cr_assert_eq(conf_placement_of(c, "audio/jack"), CONF_PLACEMENT_PARTITIONED);
        cr_assert_eq(conf_placement_of(c, "video"), CONF_PLACEMENT_PARTITIONED, "inherited from the top");
        cr_assert_eq(conf_placement_of(c, "nope"), CONF_PLACEMENT_UNSET);
        cr_assert_eq(conf_placement_of(c, "audio/nope"), CONF_PLACEMENT_UNSET);
        conf_free(c);

        c = parse_ok("partition-shared-cpus: \"1\"\npartitions:\n  rt0: {cpus: 2}\n  rt1: {cpus: 3}\n");
        cr_assert_str_eq(cpu_mask_format(&c->partition_shared, buf, sizeof buf), "1");
        cr_assert_eq(c->n_partitions, 2);
        conf_free(c);

        c = parse_ok("partitions:\n");
        cr_assert_eq(c->n_partitions, 0);
        cr_assert(cpu_mask_empty(&c->partition_shared), "no shared CPU unless configured");
        cr_assert_eq(c->placement, CONF_PLACEMENT_GLOBAL, "the shipped default is global");
        cr_assert_str_eq(conf_placement_to_string(CONF_PLACEMENT_PARTITIONED), "partitioned");
        cr_assert_null(conf_placement_to_string(CONF_PLACEMENT_UNSET));
        conf_free(c);
}

/* --- reclaim (issue 35) --- */

Test(conf, reclaim_inherited_and_default_on) {
        Config *c = parse_ok("groups:\n"
                             "  audio:\n"
                             "    bandwidth: 20%\n"
                             "    reclaim: off\n"
                             "    groups:\n"
                             "      pw: {bandwidth: 10%}\n"
                             "      jack: {bandwidth: 5%, reclaim: on}\n"
                             "  video: {bandwidth: 10%}\n");
        Tree *t;

        cr_assert(c->reclaim, "a configuration that does not say reclaims");
        t = build_ok(c, CAP_2CPU);
        cr_assert(t->root->reclaim);
        cr_assert(!tree_find_group(t, "audio")->reclaim);
        cr_assert(!tree_find_group(t, "audio/pw")->reclaim, "inherited from audio");
        cr_assert(tree_find_group(t, "audio/jack")->reclaim);
        cr_assert(tree_find_group(t, "video")->reclaim, "inherited from the root");
        tree_free(t);
        conf_free(c);

        c = parse_ok("reclaim: off\ngroups:\n  a: {bandwidth: 10%}\n  b: {bandwidth: 10%, reclaim: true}\n");
        cr_assert(!c->reclaim);
        t = build_ok(c, CAP_2CPU);
        cr_assert(!t->root->reclaim);
        cr_assert(!tree_find_group(t, "a")->reclaim);
        cr_assert(tree_find_group(t, "b")->reclaim, "true is on");
        tree_free(t);
        conf_free(c);
}

Test(conf, reclaim_errors) {
        static const ErrorCase cases[] = {
                { "reclaim: yes please\n", 1, "t.yaml:1:10: reclaim: \"yes please\" is neither on nor off" },
                { "reclaim: [on]\n", 1, "t.yaml:1:10: reclaim: expected on or off, not a sequence" },
                { "groups:\n  a: {bandwidth: 1%, reclaim: 1}\n", 1,
                  "t.yaml:2:31: groups.a.reclaim: \"1\" is neither on nor off" },
        };

        check_errors(cases, ELEMENTSOF(cases));
}

Test(conf, partition_errors) {
        static const ErrorCase cases[] = {
                { "placement: local\n", 1,
                  "t.yaml:1:12: placement: \"local\" is not a placement (expected global or partitioned)" },
                { "groups:\n  a: {bandwidth: 1%, placement: [x]}\n", 1,
                  "t.yaml:2:33: groups.a.placement: expected global or partitioned, not a sequence" },
                { "partitions: [rt0]\n", 1, "t.yaml:1:13: partitions: expected a mapping of partition names, not a "
                  "sequence" },
                { "partitions:\n  rt0: 1\n", 1,
                  "t.yaml:2:8: partitions.rt0: expected a mapping with cpus: (such as cpus: \"1\"), not a single "
                  "value" },
                { "partitions:\n  rt0: {}\n", 1,
                  "t.yaml:2:3: partitions.rt0: a partition needs cpus: (such as cpus: \"1\")" },
                { "partitions:\n  rt0: {cpus: \"1\", mems: 0}\n", 1,
                  "t.yaml:2:20: partitions.rt0.mems: unknown key (expected one of: cpus)" },
                { "partitions:\n  rt0: {cpus: \"3-1\"}\n", 1,
                  "t.yaml:2:15: partitions.rt0.cpus: \"3-1\" has a reversed range" },
                { "partitions:\n  rt0: {cpus: \"\"}\n", 1, "t.yaml:2:15: partitions.rt0.cpus: names no CPU" },
                { "partitions:\n  rt0: {cpus: 1024}\n", 1,
                  "t.yaml:2:15: partitions.rt0.cpus: \"1024\" names a CPU above 1023" },
                { "partitions:\n  rt0: {cpus: one}\n", 1,
                  "t.yaml:2:15: partitions.rt0.cpus: \"one\" is not a CPU list (write it as 1 or 2-3,5)" },
                { "partitions:\n  _rt: {cpus: 1}\n", 1,
                  "t.yaml:2:3: partitions._rt: the partition name \"_rt\" must start with a letter or a digit" },
                { "partitions:\n  \"r/t\": {cpus: 1}\n", 1,
                  "t.yaml:2:3: partitions.r/t: the partition name \"r/t\" may hold only letters, digits, _ . and -" },
                { "partitions:\n  rt0: {cpus: 1-2}\n  rt1: {cpus: \"0,2\"}\n", 1,
                  "t.yaml:3:3: partitions.rt1: CPU 2 is in partition \"rt0\" (2:3) too: partitions cannot share a "
                  "CPU" },
                { "partitions:\n  rt0: {cpus: 1}\n  rt0: {cpus: 2}\n", 1,
                  "t.yaml:3:3: partitions.rt0: duplicate key \"rt0\" (first given at 2:3)" },
                { "partition-shared-cpus: \"1-2\"\npartitions:\n  rt0: {cpus: 2}\n", 1,
                  "t.yaml:1:24: partition-shared-cpus: CPU 2 is in partition \"rt0\" (3:3) too: the shared CPUs are "
                  "in no partition" },
                { "partitions:\n  rt0: {cpus: 2}\npartition-shared-cpus: 2\n", 1,
                  "t.yaml:3:24: partition-shared-cpus: CPU 2 is in partition \"rt0\" (2:3) too: the shared CPUs are "
                  "in no partition" },
                { "partition-shared-cpus: \"\"\n", 1, "t.yaml:1:24: partition-shared-cpus: names no CPU" },
                { "partition-shared-cpus: x\n", 1,
                  "t.yaml:1:24: partition-shared-cpus: \"x\" is not a CPU list (write it as 1 or 2-3,5)" },
                { "partition-shared-cpus: [1]\n", 1,
                  "t.yaml:1:24: partition-shared-cpus: expected a CPU list such as \"1\" or \"2-3\", not a sequence" },
        };

        check_errors(cases, ELEMENTSOF(cases));
}
