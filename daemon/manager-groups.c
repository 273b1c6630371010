/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The groups room: groups created, changed and removed at run time, and the cgroup v2 directory of
 * each group (created, its cpu.max written) under the cgroup root. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cgroup.h"
#include "conf.h"
#include "log.h"
#include "basic/macro.h"
#include "manager-bus.h"
#include "manager-internal.h"

void groups_setup(Manager *m) {
        m->groups.usable = cgroup_root_usable(m->groups.root);
        if (!m->groups.usable) {
                /* The root may not exist yet: create it where its parent is cgroup v2. */
                _cleanup_free_ char *parent = strdup(m->groups.root);
                char *slash = parent ? strrchr(parent, '/') : NULL;
                if (slash && slash != parent) {
                        *slash = '\0';
                        if (cgroup_root_usable(parent) && mkdir(m->groups.root, 0755) == 0)
                                m->groups.usable = true;
                }
        }
        if (!m->groups.usable)
                log_notice("%s is not a cgroup v2 directory: groups are not bound to cgroups", m->groups.root);
}

void group_apply_cgroup(Manager *m, const Group *g) {
        int r;

        if (!g->cgroup || !m->groups.usable)
                return;
        r = cgroup_ensure(m->groups.root, g->cgroup);
        if (r < 0) {
                log_warning("Failed to create cgroup %s/%s: %s", m->groups.root, g->cgroup, strerror(-r));
                return;
        }
        r = cgroup_set_cpu_max(m->groups.root, g->cgroup, g->runtime, g->period);
        if (r == -ENOENT) {
                if (!m->groups.cpu_max_missing_reported)
                        log_notice("No cpu.max under %s (the cpu controller is not available in this cgroup v2 "
                                   "hierarchy): groups' normal tasks are not capped",
                                   m->groups.root);
                m->groups.cpu_max_missing_reported = true;
        } else if (r < 0)
                log_warning("Failed to write %s/%s/cpu.max: %s", m->groups.root, g->cgroup, strerror(-r));
}

int manager_group_check_args(const char *path, uint64_t runtime, uint64_t period, OpError *error) {
        Refusal rf;

        if (admission_group_args(path, runtime, period, &rf) != 0)
                return op_refused(error, &rf);
        return 0;
}

int manager_group_check_path(const char *path, OpError *error) {
        Refusal rf;

        if (admission_group_path_arg(path, &rf) != 0)
                return op_refused(error, &rf);
        return 0;
}

/* The journal keeps a group's users: list whole (state.h). */
_Static_assert(MANAGER_GROUP_USERS_MAX <= STATE_USERS_MAX, "a users: list edfd accepts must fit the journal");

int manager_group_check_users(char *const *users, OpError *error) {
        size_t n = 0;

        for (char *const *u = users; *u; u++, n++) {
                const char *why;

                if (n == MANAGER_GROUP_USERS_MAX)
                        return op_fail(error, OP_INVALID, "users: more than %d names", MANAGER_GROUP_USERS_MAX);
                why = conf_user_name_problem(*u, strlen(*u));
                if (why)
                        return op_fail(error, OP_INVALID, "users: name %zu %s", n + 1, why);
                for (char *const *v = users; v < u; v++)
                        if (strcmp(*v, *u) == 0)
                                return op_fail(error, OP_INVALID, "users: name %zu repeats name %zu", n + 1,
                                               (size_t) (v - users) + 1);
        }
        return 0;
}

int manager_group_create(Manager *m, const char *path, uint64_t runtime, uint64_t period, char *const *users,
                         OpError *error) {
        GroupSpec spec = { .runtime = runtime, .period = period, .fork = _FORK_POLICY_UNSET,
                           .threads = _FORK_POLICY_UNSET, .users = users, .dynamic = true };
        Refusal rf;
        Group *g;
        int r;

        r = group_create(m->tree, path, &spec, &g, &rf);
        if (r < 0)
                return op_errno(error, r, "creating the group");
        if (r > 0)
                return op_refused(error, &rf);
        r = state_write_group(m->state, false, path, runtime, period, g->own_users ? g->users : NULL);
        if (r < 0) {
                log_state_failure(r);
                (void) group_remove(m->tree, g, NULL);
                return op_errno(error, r, "recording the group");
        }
        manager_bus_emit_groups_changed(m);
        notify_status(m);
        return 0;
}

int manager_group_set(Manager *m, const char *path, uint64_t runtime, uint64_t period, OpError *error) {
        Group *g = tree_find_group(m->tree, path);
        uint64_t old_runtime, old_period;
        Refusal rf;
        int r;

        if (!g) {
                rf = (Refusal) { .outcome = ADMIT_NO_SUCH_GROUP, .name = path };
                return op_refused(error, &rf);
        }
        old_runtime = g->runtime;
        old_period = g->period;
        r = group_set_bandwidth(m->tree, g, runtime, period, &rf);
        if (r > 0)
                return op_refused(error, &rf);
        r = state_write_group(m->state, !g->dynamic, path, runtime, period,
                              g->dynamic && g->own_users ? g->users : NULL);
        if (r < 0) {
                log_state_failure(r);
                (void) group_set_bandwidth(m->tree, g, old_runtime, old_period, NULL);
                return op_errno(error, r, "recording the group");
        }
        if (!g->dynamic)
                g->overridden = true;
        group_apply_cgroup(m, g);
        manager_bus_emit_groups_changed(m);
        notify_status(m);
        return 0;
}

int manager_group_remove(Manager *m, const char *path, OpError *error) {
        Group *g = tree_find_group(m->tree, path);
        _cleanup_free_ char *cg = NULL;
        Refusal rf;
        bool dynamic;
        int r;

        if (!g) {
                rf = (Refusal) { .outcome = ADMIT_NO_SUCH_GROUP, .name = path };
                return op_refused(error, &rf);
        }
        if (!g->dynamic)
                return op_fail(error, OP_PERMISSION_DENIED,
                               "group %s comes from the configuration: remove it there and reload", path);
        dynamic = g->dynamic;
        cg = g->cgroup ? strdup(g->cgroup) : NULL;
        /* Admissions that wait for their start in it go with it (a container removed before it
         * started): they would have found no group at the start. */
        if (!g->first_child && !g->first_reservation)
                startup_group_removed(m, g);
        r = group_remove(m->tree, g, &rf);
        if (r > 0)
                return op_refused(error, &rf);
        if (dynamic) {
                r = state_write_group_removed(m->state, path);
                if (r < 0)
                        log_state_failure(r);
        }
        if (cg && m->groups.usable)
                (void) cgroup_remove(m->groups.root, cg);
        manager_bus_emit_groups_changed(m);
        notify_status(m);
        return 0;
}
