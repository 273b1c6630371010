/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A parsed configuration -> the core's group tree (conf_build_tree(), conf.h): first every group
 * whose children need more than it has is reported with its position and the numbers, then each
 * group goes through group_create(), which names any other refusal. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf-internal.h"
#include "core/admission.h"
#include "core/bandwidth.h"
#include "core/duration.h"

/* need and have for a message, with enough decimals to tell them apart. */
static void pct_pair(uint64_t need, uint64_t have, char a[static DURATION_MAX], char b[static DURATION_MAX]) {
        for (unsigned d = 1; d <= 4; d++) {
                bw_format_percent(need, d, BW_ROUND_NEAREST, a);
                bw_format_percent(have, d, BW_ROUND_NEAREST, b);
                if (strcmp(a, b) != 0)
                        return;
        }
}

/* The bandwidth of a configured group (0 when it has none: group_create() refuses it). */
static uint64_t conf_group_bw(const ConfGroup *g) {
        uint64_t bw;

        if (g->period == 0 || bw_of(g->runtime, g->period, &bw) < 0)
                return 0;
        return bw;
}

static char *group_keypath(const char *parent_keypath, const char *name) {
        char *s;

        if (asprintf(&s, "%s%sgroups.%s", parent_keypath ?: "", parent_keypath ? "." : "", name) < 0)
                return NULL;
        return s;
}

/* Report every group (and the root, as `groups`) whose children need more than it has. */
static void fit_check(Ctx *c, const ConfGroup *gs, size_t n, uint64_t have, const char *keypath, unsigned line,
                      unsigned column, const char *root_note, unsigned depth) {
        bool root = root_note != NULL;
        char a[DURATION_MAX], b[DURATION_MAX];
        uint64_t need = 0;
        bool overflow = false;

        for (size_t i = 0; i < n; i++)
                if (bw_add(need, conf_group_bw(&gs[i]), &need) < 0)
                        overflow = true;
        if (overflow)
                conf_error_path(c, line, column, keypath, "%s add up to more than can be counted",
                           root ? "the top-level groups" : "children");
        else if (need > have) {
                pct_pair(need, have, a, b);
                if (root)
                        conf_error_path(c, line, column, keypath, "top-level groups need %s, the root has %s (%s)", a, b,
                                   root_note);
                else
                        conf_error_path(c, line, column, keypath, "children need %s, group has %s", a, b);
        }
        if (depth >= GROUP_DEPTH_MAX)
                return;
        for (size_t i = 0; i < n && !c->oom; i++) {
                _cleanup_free_ char *kp = NULL;

                if (gs[i].n_children == 0)
                        continue;
                kp = group_keypath(root ? NULL : keypath, gs[i].name);
                if (!kp) {
                        c->oom = true;
                        return;
                }
                fit_check(c, gs[i].children, gs[i].n_children, conf_group_bw(&gs[i]), kp, gs[i].line,
                          gs[i].column, NULL, depth + 1);
        }
}

static int create_groups(Ctx *c, Tree *t, const ConfGroup *gs, size_t n, const char *parent_path,
                         const char *parent_keypath, unsigned depth) {
        for (size_t i = 0; i < n; i++) {
                const ConfGroup *g = &gs[i];
                _cleanup_free_ char *path = NULL, *kp = NULL;
                char buf[512];
                GroupSpec spec = {
                        .runtime = g->runtime,
                        .period = g->period,
                        .fork = g->fork,
                        .threads = g->threads,
                        .min_split_runtime = g->min_split_runtime,
                        .reclaim = g->reclaim,
                        .users = g->users,
                        .cgroup = g->cgroup,
                };
                Refusal refusal = {};
                int r;

                kp = group_keypath(parent_keypath, g->name ?: "?");
                if (!kp || asprintf(&path, "%s%s%s", parent_path ?: "", parent_path ? "/" : "", g->name ?: "") < 0)
                        return -ENOMEM;
                r = group_create(t, path, &spec, NULL, &refusal);
                if (r < 0)
                        return r;
                if (r > 0) {
                        conf_error_path(c, g->line, g->column, kp, "%s", refusal_format(&refusal, buf, sizeof buf));
                        continue;
                }
                if (depth < GROUP_DEPTH_MAX) {
                        r = create_groups(c, t, g->children, g->n_children, path, kp, depth + 1);
                        if (r < 0)
                                return r;
                } else if (g->n_children > 0)
                        conf_error_path(c, g->line, g->column, kp, "groups are nested deeper than %d levels",
                                   GROUP_DEPTH_MAX);
        }
        return 0;
}

int conf_build_tree(const Config *c, const char *filename, uint64_t kernel_capacity, const DlLimits *limits,
                    Tree **ret, ConfErrors *errors) {
        Ctx ctx = { .filename = filename, .errors = errors };
        DlLimits l = limits ? *limits : DL_LIMITS_DEFAULT;
        uint64_t capacity = c->capacity_auto ? kernel_capacity : MIN(kernel_capacity, c->capacity);
        char note[3 * DURATION_MAX + 64], a[DURATION_MAX];
        Tree *t = NULL;
        int r;

        if (c->capacity_auto || kernel_capacity <= c->capacity)
                snprintf(note, sizeof note, "what the kernel admits on this machine");
        else
                snprintf(note, sizeof note, "capped by capacity:, the kernel admits %s",
                         bw_format(kernel_capacity, a));
        fit_check(&ctx, c->groups, c->n_groups, capacity, "groups", c->groups_line, c->groups_column, note, 1);
        if (ctx.oom || ctx.n_errors > 0)
                return ctx.oom ? -ENOMEM : -EINVAL;

        r = tree_new(&t, capacity, &l, c->fork, c->threads, c->min_split_runtime);
        if (r < 0)
                return r;
        tree_set_root_reclaim(t, c->reclaim);
        r = create_groups(&ctx, t, c->groups, c->n_groups, NULL, NULL, 1);
        if (r < 0) {
                tree_free(t);
                return r;
        }
        if (c->default_group && !tree_find_group(t, c->default_group))
                conf_error_path(&ctx, c->default_group_line, c->default_group_column, "default-group",
                           "no group \"%s\" in the tree", c->default_group);
        if (ctx.oom || ctx.n_errors > 0) {
                tree_free(t);
                return ctx.oom ? -ENOMEM : -EINVAL;
        }
        *ret = t;
        return 0;
}
