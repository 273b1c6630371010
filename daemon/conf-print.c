/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A configuration and its tree for people: conf_print() and `edfd --check-config` (conf.h). */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf-internal.h"
#include "core/bandwidth.h"
#include "core/duration.h"

void conf_print(const Config *c, const Tree *t, FILE *out) {
        char a[DURATION_MAX], b[DURATION_MAX], d[DURATION_MAX];
        int w = 4, wc = 6; /* column widths of PATH and CGROUP */

        fprintf(out, "capacity: %s (%s)\n", bw_format(t->capacity, a),
                c->capacity_auto ? "auto: what the kernel admits" : "capped by capacity:");
        fprintf(out, "fork: %s\n", fork_policy_to_string(c->fork) ?: "?");
        fprintf(out, "threads: %s\n", fork_policy_to_string(c->threads) ?: "?");
        fprintf(out, "min-split-runtime: %s\n", duration_format(c->min_split_runtime, a));
        fprintf(out, "reclaim: %s\n", c->reclaim ? "on" : "off");
        fprintf(out, "exec-timeout: %s\n", duration_format(c->exec_timeout, a));
        fprintf(out, "default-group: %s\n", c->default_group ?: "/");
        fprintf(out, "cgroup-root: %s\n", c->cgroup_root ?: CONF_CGROUP_ROOT_DEFAULT);
        fprintf(out, "polkit: %s\n", polkit_mode_to_string(c->polkit) ?: "?");
        fprintf(out, "placement: %s\n", conf_placement_to_string(c->placement) ?: "?");
        fprintf(out, "partitions:%s\n", c->n_partitions == 0 ? " none" : "");
        for (size_t i = 0; i < c->n_partitions; i++) {
                char cpus[CPU_LIST_MAX];

                fprintf(out, "  %s: cpus %s\n", c->partitions[i].name,
                        cpu_mask_format(&c->partitions[i].cpus, cpus, sizeof cpus) ?: "?");
        }
        fprintf(out, "limits:%s\n", c->n_limits == 0 ? " none" : "");
        for (size_t i = 0; i < c->n_limits; i++) {
                const ConfLimit *l = &c->limits[i];
                char rate[2 * DURATION_MAX + 4];

                if (l->rate_count == 0)
                        snprintf(rate, sizeof rate, "unlimited");
                else
                        snprintf(rate, sizeof rate, "%" PRIu64 "/%s", l->rate_count,
                                 duration_format(l->rate_window_ns, d));
                if (l->reservations == CONF_UNLIMITED)
                        snprintf(b, sizeof b, "unlimited");
                else
                        snprintf(b, sizeof b, "%" PRIu64, l->reservations);
                fprintf(out, "  %s: bandwidth %s, reservations %s, rate %s\n", l->user,
                        bw_format(l->bandwidth, a), b, rate);
        }
        for (const Group *g = t->root; g; g = group_next_preorder(g))
                w = MAX(w, (int) strlen(g->path));
        for (const Group *g = t->root; g; g = group_next_preorder(g))
                wc = MAX(wc, g->cgroup ? (int) strlen(g->cgroup) : 0);
        fprintf(out, "groups:\n");
        fprintf(out, "  %-*s %9s %9s %9s %9s %-7s %-7s %9s %-7s %-*s %s\n", w, "PATH", "RUNTIME", "PERIOD",
                "BANDWIDTH", "CHILDREN", "FORK", "THREADS", "MIN-SPLIT", "RECLAIM", wc, "CGROUP", "USERS");
        for (const Group *g = t->root; g; g = group_next_preorder(g)) {
                char rt[DURATION_MAX] = "-", per[DURATION_MAX] = "-", ms[DURATION_MAX];

                if (g->period > 0) {
                        duration_format(g->runtime, rt);
                        duration_format(g->period, per);
                }
                fprintf(out, "  %-*s %9s %9s %9s %9s %-7s %-7s %9s %-7s %-*s ", w, g->path, rt, per,
                        bw_format(g->bw, a), bw_format(g->allocated, b),
                        fork_policy_to_string(g->fork) ?: "?", fork_policy_to_string(g->threads) ?: "?",
                        duration_format(g->min_split_runtime, ms), g->reclaim ? "on" : "off", wc, g->cgroup ?: "-");
                if (!g->users)
                        fprintf(out, "anyone");
                else if (!g->users[0])
                        fprintf(out, "root-only");
                else
                        for (char **u = g->users; *u; u++)
                                fprintf(out, "%s%s", u == g->users ? "" : ",", *u);
                fputc('\n', out);
        }
}

int conf_check_print(FILE *in, const char *filename, uint64_t kernel_capacity, const DlLimits *limits, FILE *out,
                     FILE *err) {
        _cleanup_(conf_freep) Config *c = NULL;
        ConfErrors e = {};
        Tree *t = NULL;
        int r;

        r = conf_parse_file(in, filename, &c, &e);
        if (r >= 0)
                r = conf_build_tree(c, filename, kernel_capacity, limits, &t, &e);
        if (r < 0) {
                for (size_t i = 0; i < e.n; i++)
                        fprintf(err, "%s\n", e.lines[i]);
                if (e.n == 0)
                        fprintf(err, "%s: %s\n", filename ?: "<input>", strerror(-r));
                conf_errors_done(&e);
                return r;
        }
        conf_print(c, t, out);
        tree_free(t);
        conf_errors_done(&e);
        return 0;
}
