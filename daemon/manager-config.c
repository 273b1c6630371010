/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The configuration room: loading and reloading the configuration, building the tree from it (with
 * the groups made at run time), and the state journal's snapshots and compaction. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "core/bandwidth.h"
#include "core/duration.h"
#include "log.h"
#include "basic/macro.h"
#include "manager-bus.h"
#include "manager-internal.h"

extern const char edfd_default_config[];

/* The configuration's error lines as one message (NULL without memory); frees the errors. */
static char *errors_join(ConfErrors *errors) {
        size_t len = 1;
        char *msg;

        for (size_t i = 0; i < errors->n; i++)
                len += strlen(errors->lines[i]) + 1;
        msg = calloc(1, len);
        for (size_t i = 0; msg && i < errors->n; i++) {
                strcat(msg, errors->lines[i]);
                if (i + 1 < errors->n)
                        strcat(msg, "\n");
        }
        conf_errors_done(errors);
        return msg;
}

int config_load(const char *path, Config **ret, char **ret_errors) {
        ConfErrors errors = {};
        Config *c = NULL;
        int r;

        if (path) {
                FILE *f = fopen(path, "re");
                if (!f)
                        return -errno;
                r = conf_parse_file(f, path, &c, &errors);
                fclose(f);
        } else
                r = conf_parse_buffer(edfd_default_config, strlen(edfd_default_config), "(embedded edfd.yaml)", &c,
                                      &errors);
        if (r < 0) {
                *ret_errors = errors_join(&errors);
                return r;
        }
        conf_errors_done(&errors);
        *ret = c;
        return 0;
}

/* Build a tree from c with the dynamic groups and overrides of `extra` (a StateLoaded's groups, or
 * the live tree's dynamic groups); NULL error string on success. A dynamic group made with its own
 * users: list (CreateGroupWithUsers: a container's, root only) keeps it: extra carries it, from the
 * live tree on a reload and from the journal after a restart.
 *
 * The root of the tree returned has no limit yet: what was admitted is re-admitted into it, and only
 * then does the caller set the kernel's capacity (tree_set_capacity). When the kernel admits less than
 * it did (CPUs offline, sched_rt_runtime_us lowered), the tree is then overcommitted: it refuses every
 * admission until the capacity is back and evicts nobody. Failing instead would leave a restarted edfd
 * unable to re-adopt what it admitted (and systemd restarting it in a loop). With allow_short, the
 * configuration's top-level groups may need more than the kernel admits; every group below the root
 * must still fit its parent. */
int tree_build(Manager *m, const Config *c, const char *filename, const StateGroup *extra, size_t n_extra,
               bool strict, bool allow_short, Tree **ret, char **ret_errors) {
        const KernelCapacity *kc = capacity_kernel(m->capacity);
        ConfErrors errors = {};
        Tree *t = NULL;
        int r;

        r = conf_build_tree(c, filename, kc->usable, &kc->limits, &t, &errors);
        if (r == -EINVAL && allow_short && kc->usable != UINT64_MAX) {
                /* Does it fit a root with no limit? Then only the kernel's capacity is short. */
                ConfErrors unbounded = {};

                if (conf_build_tree(c, filename, UINT64_MAX, &kc->limits, &t, &unbounded) == 0) {
                        conf_errors_done(&errors);
                        r = 0;
                }
                conf_errors_done(&unbounded);
        }
        if (r < 0) {
                *ret_errors = errors_join(&errors);
                return r;
        }
        conf_errors_done(&errors);
        tree_set_capacity(t, UINT64_MAX, capacity_unmanaged(m->capacity));

        for (size_t i = 0; i < n_extra; i++) {
                Refusal rf;
                char buf[256];
                int k;
                if (extra[i].override) {
                        Group *g = tree_find_group(t, extra[i].path);
                        if (!g)
                                continue; /* the configured group is gone: the override with it */
                        k = group_set_bandwidth(t, g, extra[i].runtime, extra[i].period, &rf);
                        if (k == 0)
                                g->overridden = true;
                } else {
                        GroupSpec spec = { .runtime = extra[i].runtime, .period = extra[i].period,
                                           .fork = _FORK_POLICY_UNSET, .threads = _FORK_POLICY_UNSET,
                                           .users = extra[i].users, .dynamic = true };
                        k = group_create(t, extra[i].path, &spec, NULL, &rf);
                }
                if (k < 0) {
                        tree_free(t);
                        return k;
                }
                if (k > 0 && strict) {
                        /* A reload must keep every group created at run time, or fail. */
                        if (asprintf(ret_errors, "group %s (created at run time) does not fit the new configuration: %s",
                                     extra[i].path, refusal_format(&rf, buf, sizeof buf)) < 0)
                                *ret_errors = NULL;
                        tree_free(t);
                        return -EINVAL;
                }
                if (k > 0)
                        log_warning("Group %s from the state directory does not fit: %s", extra[i].path,
                                    refusal_format(&rf, buf, sizeof buf));
        }
        *ret = t;
        return 0;
}

/* The dynamic groups (and, if with_overrides, the configured groups whose bandwidth was changed at
 * run time) of the live tree, parents first. */
static int collect_groups(const Tree *t, bool with_overrides, StateGroup **ret, size_t *ret_n) {
        StateGroup *v = calloc(t->n_groups, sizeof(StateGroup));
        size_t n = 0;

        if (!v)
                return -ENOMEM;
        for (const Group *g = t->root->first_child; g; g = group_next_preorder(g))
                if (g->dynamic || (with_overrides && g->overridden)) {
                        v[n] = (StateGroup) { .runtime = g->runtime, .period = g->period, .override = !g->dynamic,
                                              .users = g->dynamic && g->own_users ? g->users : NULL }; /* borrowed */
                        snprintf(v[n].path, sizeof v[n].path, "%s", g->path);
                        n++;
                }
        *ret = v;
        *ret_n = n;
        return 0;
}

static int collect_records(const Tree *t, StateRecord **ret, size_t *ret_n) {
        StateRecord *v = calloc(t->n_reservations ? t->n_reservations : 1, sizeof(StateRecord));
        size_t n = 0;

        if (!v)
                return -ENOMEM;
        for (const Reservation *r = reservation_next(t, NULL); r; r = reservation_next(t, r))
                state_record_from(&v[n++], r);
        *ret = v;
        *ret_n = n;
        return 0;
}

int snapshot(Manager *m, bool with_overrides) {
        _cleanup_free_ StateRecord *recs = NULL;
        _cleanup_free_ StateGroup *groups = NULL;
        _cleanup_free_ StateOrigin *origins = NULL;
        _cleanup_free_ StateWatch *watches = NULL;
        size_t nr, ng, no, nw;
        int r;

        r = collect_records(m->tree, &recs, &nr);
        if (r < 0)
                return r;
        r = collect_groups(m->tree, with_overrides, &groups, &ng);
        if (r < 0)
                return r;
        r = place_origins(m, &origins, &no);
        if (r < 0)
                return r;
        r = startup_watches(m, &watches, &nw);
        if (r < 0)
                return r;
        return state_rewrite(m->state, recs, nr, groups, ng, origins, no, watches, nw, m->tree->next_id);
}

void maybe_compact(Manager *m) {
        int r;

        if (!state_wants_rewrite(m->state, m->tree->n_reservations + m->tree->n_groups + m->startup.n))
                return;
        r = snapshot(m, true);
        if (r < 0)
                log_warning("Failed to compact the state file: %s", strerror(-r));
}

int manager_reload(Manager *m, OpError *error) {
        _cleanup_free_ char *errors = NULL;
        _cleanup_free_ StateGroup *dyn = NULL;
        Config *c = NULL;
        Tree *t = NULL;
        bool capacity_short;
        size_t n_dyn;
        int r;

        sd_notify(false, "RELOADING=1");
        authz_names_flush(&m->names);
        r = config_load(m->config_path, &c, &errors);
        if (r < 0) {
                sd_notify(false, "READY=1");
                return op_fail(error, OP_INVALID_CONFIG, "%s", errors ? errors : strerror(-r));
        }
        (void) capacity_update(m->capacity, true); /* asked for: read the sysctls now */
        /* Has the kernel's capacity fallen below what is allocated? Then the new tree may be short too. */
        capacity_short = m->tree->root->allocated > root_capacity(m);
        r = collect_groups(m->tree, false, &dyn, &n_dyn);
        if (r >= 0)
                r = tree_build(m, c, m->config_path ? m->config_path : "(embedded edfd.yaml)", dyn, n_dyn, true,
                               capacity_short, &t, &errors);
        if (r < 0) {
                conf_free(c);
                sd_notify(false, "READY=1");
                return op_fail(error, OP_INVALID_CONFIG, "%s", errors ? errors : strerror(-r));
        }

        /* Every live reservation must find its group, and fit, in the new tree. */
        for (const Reservation *res = reservation_next(m->tree, NULL); res; res = reservation_next(m->tree, res)) {
                Group *g = tree_find_group(t, res->group->path);
                ReservationSpec spec = { .id = res->id, .pid = res->pid, .tid = res->tid, .uid = res->uid,
                                         .identity = res->identity, .params = res->params, .flags = res->flags,
                                         .donor = res->donor, .donated = res->donated,
                                         .partitioned = res->partitioned, .cpu = res->cpu };
                Refusal rf;
                char buf[256];

                if (!g) {
                        op_fail(error, OP_INVALID_CONFIG,
                                "the new configuration has no group %s, which holds reservation %" PRIu64, res->group->path,
                                res->id);
                        goto fail;
                }
                r = reservation_admit(t, g, &spec, NULL, &rf);
                if (r != 0) {
                        op_fail(error, OP_INVALID_CONFIG, "reservation %" PRIu64 " does not fit the new configuration: %s",
                                res->id, r > 0 ? refusal_format(&rf, buf, sizeof buf) : strerror(-r));
                        goto fail;
                }
        }
        /* And every admission waiting for its start keeps its bandwidth held there. */
        if (startup_hold_in(m, t, error) < 0)
                goto fail;
        t->next_id = MAX(t->next_id, m->tree->next_id);
        /* While the kernel's capacity is short, a reload may keep or shrink the overcommit, never grow
         * it: the same file reloads, a larger tree waits until the capacity is back. */
        if (tree_set_capacity(t, root_capacity(m), capacity_unmanaged(m->capacity)) && t->root->allocated > m->tree->root->allocated) {
                char a[DURATION_MAX], b[DURATION_MAX], d[DURATION_MAX];
                op_fail(error, OP_INVALID_CONFIG,
                        "the new configuration needs %s at the root, the kernel admits only %s now, and the running "
                        "one needs %s: while the capacity is short a reload may not ask for more",
                        bw_format(t->root->allocated, a), bw_format(t->root->bw, b),
                        bw_format(m->tree->root->allocated, d));
                goto fail;
        }

        tree_free(m->tree);
        m->tree = t;
        conf_free(m->config);
        m->config = c;
        for (const Group *g = t->root; g; g = group_next_preorder(g))
                group_apply_cgroup(m, g);
        r = snapshot(m, false);
        if (r < 0)
                log_state_failure(r);
        log_info("Configuration reloaded: %zu groups", t->n_groups - 1);
        manager_bus_emit_groups_changed(m);
        notify_status(m);
        sd_notify(false, "READY=1");
        return 0;
fail:
        tree_free(t);
        conf_free(c);
        sd_notify(false, "READY=1");
        return -1;
}
