/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the configuration: conf_parse_buffer(), conf_build_tree(), conf_print() and
 * conf_check_print() over arbitrary bytes.
 *
 * The input is copied into a heap block of exactly its size (no NUL after it), so that ASan catches
 * any read past the end. Checked besides the sanitizers, for every input:
 * - the parse returns 0 with a Config and no error, or -EINVAL with 1..CONF_ERRORS_MAX + 1 error
 *   lines, each starting with the file name, and leaves *ret untouched;
 * - a parsed Config keeps the limits: groups at most GROUP_DEPTH_MAX deep and CONF_GROUPS_MAX in
 *   all, each name a valid group name, each bandwidth above zero;
 * - the tree builds against one and two CPUs, or fails with errors; a built tree passes
 *   tree_check() and holds exactly the configured groups;
 * - conf_check_print() reading the same bytes from a FILE agrees with the buffer parse and build.
 *
 * Build (from the top directory):
 *   clang -g -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -Idaemon -Ilib \
 *         daemon/conf*.c lib/basic/[a-z]*.c lib/core/[a-z]*.c lib/yaml/[a-z]*.c tests/fuzz/fuzz-conf.c -lyaml \
 *         -o fuzz-conf
 *   ./fuzz-conf -max_total_time=30 -max_len=4096 corpus-conf/ */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bandwidth.h"
#include "conf.h"
#include "core/tree.h"

#define FILENAME "fuzz.yaml"
#define SENTINEL_CONFIG ((Config *) (uintptr_t) 0x1234)
#define SENTINEL_TREE ((Tree *) (uintptr_t) 0x5678)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what) {
        fprintf(stderr, "fuzz-conf: %s\n", what);
        abort();
}

static void check_errors(int r, const ConfErrors *e) {
        if (r == 0 && e->n != 0)
                fail("success with error lines");
        if (r == -EINVAL && (e->n == 0 || e->n > CONF_ERRORS_MAX + 1))
                fail("-EINVAL without errors, or too many");
        if (r != 0 && r != -EINVAL && r != -ENOMEM)
                fail("unexpected return value");
        for (size_t i = 0; i < e->n; i++)
                if (!e->lines[i] || strncmp(e->lines[i], FILENAME ":", strlen(FILENAME ":")) != 0)
                        fail("an error line without the file name");
}

/* Check the groups and count them. */
static size_t check_groups(const ConfGroup *gs, size_t n, unsigned depth) {
        size_t total = n;

        if (n > 0 && depth > GROUP_DEPTH_MAX)
                fail("groups nested too deep");
        for (size_t i = 0; i < n; i++) {
                uint64_t bw;

                if (!gs[i].name || !group_path_valid(gs[i].name) || strchr(gs[i].name, '/'))
                        fail("invalid group name accepted");
                if (gs[i].period == 0 || gs[i].runtime < 1024 || bw_of(gs[i].runtime, gs[i].period, &bw) < 0 ||
                    bw == 0)
                        fail("group without bandwidth accepted");
                if (gs[i].cgroup && !group_path_valid(gs[i].cgroup))
                        fail("invalid cgroup path accepted");
                total += check_groups(gs[i].children, gs[i].n_children, depth + 1);
        }
        return total;
}

static int check_print(const char *buf, size_t size, uint64_t capacity, FILE *null) {
        FILE *in = fmemopen((void *) (size ? buf : ""), size, "r");
        int r;

        if (!in)
                return -ENOMEM;
        r = conf_check_print(in, FILENAME, capacity, NULL, null, null);
        fclose(in);
        return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const uint64_t capacities[] = { 943718 /* 90% */, 1887436 /* 180% */ };
        static FILE *null;
        ConfErrors e = {};
        Config *c = SENTINEL_CONFIG;
        char *buf;
        size_t n_groups;
        int r;

        if (!null)
                null = fopen("/dev/null", "we");
        if (!null)
                fail("cannot open /dev/null");

        buf = malloc(size ? size : 1);
        if (!buf)
                return 0;
        memcpy(buf, data, size);

        r = conf_parse_buffer(buf, size, FILENAME, &c, &e);
        check_errors(r, &e);
        conf_errors_done(&e);
        if (r < 0) {
                if (c != SENTINEL_CONFIG)
                        fail("ret written on failure");
                if (r == -EINVAL && check_print(buf, size, capacities[0], null) != -EINVAL)
                        fail("conf_check_print() disagrees with conf_parse_buffer()");
                free(buf);
                return 0;
        }
        if (!c || c == SENTINEL_CONFIG || !c->cgroup_root)
                fail("success without a Config");

        n_groups = check_groups(c->groups, c->n_groups, 1);
        if (n_groups > CONF_GROUPS_MAX)
                fail("more groups than CONF_GROUPS_MAX");

        for (size_t i = 0; i < sizeof capacities / sizeof capacities[0]; i++) {
                Tree *t = SENTINEL_TREE;
                char msg[1024];

                r = conf_build_tree(c, FILENAME, capacities[i], NULL, &t, &e);
                check_errors(r, &e);
                conf_errors_done(&e);
                if (r < 0 && t != SENTINEL_TREE)
                        fail("tree written on failure");
                if (r == 0) {
                        if (tree_check(t, msg, sizeof msg) < 0) {
                                fprintf(stderr, "fuzz-conf: tree_check: %s\n", msg);
                                abort();
                        }
                        if (t->n_groups != n_groups + 1)
                                fail("built tree lacks configured groups");
                        if (t->root->allocated > t->root->bw)
                                fail("built tree over-committed");
                        conf_print(c, t, null);
                        tree_free(t);
                }
                if (r != -ENOMEM && check_print(buf, size, capacities[i], null) != r)
                        fail("conf_check_print() disagrees with conf_build_tree()");
        }
        conf_free(c);
        free(buf);
        return 0;
}
