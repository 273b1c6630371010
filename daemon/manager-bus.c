/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The bus object: the vtable and the method handlers. Each handler reads its arguments, checks
 * them, finds out who is calling, and hands the decision and its application to a manager_*
 * operation; then it replies. This is the only place where outcomes become D-Bus error names.
 *
 * Its state is its own (ManagerBus, m->bus_half), and the manager reaches it only through
 * manager-bus.h:
 * - signals emitted while a deferral scope is open (a method call being handled, or a waiting
 *   Admit being answered) wait in a queue that grows as needed, and go out in order when the
 *   outermost scope ends, after the reply;
 * - the subscribers are an sd_bus_track: sd-bus watches each subscriber's name and drops it when
 *   it leaves the bus, and the track's count says whether anyone listens;
 * - the callers' cached credentials forget a name that left the bus through the cache's own
 *   NameOwnerChanged match (authz_cache_attach(): one match for every name, where a track would
 *   only say when all of its names are gone);
 * - the post source that drains the bus (on_bus_drain). */

#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "basic/strv.h"
#include "core/bandwidth.h"
#include "log.h"
#include "manager.h"
#include "manager-bus.h"
#include "manager-plan.h"
#include "shared/protocol.h"

struct ManagerBus {
        CredsCache creds;
        PolkitRegistry polkit;
        sd_bus_track *subscribers;     /* the unique names that called Subscribe(); NULL for none */
        unsigned defer_depth;          /* open deferral scopes: signals wait while > 0 */
        sd_bus_message **deferred;     /* the signals waiting, oldest first */
        size_t n_deferred, n_deferred_alloc;
        sd_event_source *drain;        /* see on_bus_drain */
};

static int reply_error(sd_bus_error *ret_error, const OpError *e) {
        const char *name;

        switch (e->kind) {
        case OP_REFUSED:
                switch (e->refusal.outcome) {
                case ADMIT_OVER_BUDGET:
                case ADMIT_BELOW_ALLOCATED: /* its children would not fit: a refusal, not bad input */
                        name = EDFD_ERROR_OVER_BUDGET;
                        break;
                case ADMIT_NO_SUCH_GROUP:
                        name = EDFD_ERROR_NO_SUCH_GROUP;
                        break;
                case ADMIT_GROUP_EXISTS:
                        name = EDFD_ERROR_GROUP_EXISTS;
                        break;
                case ADMIT_NO_SUCH_RESERVATION:
                        name = EDFD_ERROR_NO_SUCH_RESERVATION;
                        break;
                case ADMIT_ALREADY_ADMITTED:
                case ADMIT_ID_IN_USE:
                        name = EDFD_ERROR_ALREADY_ADMITTED;
                        break;
                case ADMIT_GROUP_NOT_EMPTY:
                        name = EDFD_ERROR_GROUP_NOT_EMPTY;
                        break;
                default:
                        name = EDFD_ERROR_INVALID_PARAMETERS;
                }
                break;
        case OP_INVALID:
                name = EDFD_ERROR_INVALID_PARAMETERS;
                break;
        case OP_NO_SUCH_THREAD:
                name = EDFD_ERROR_NO_SUCH_THREAD;
                break;
        case OP_NO_SUCH_RESERVATION:
                name = EDFD_ERROR_NO_SUCH_RESERVATION;
                break;
        case OP_FOREIGN_DEADLINE:
                name = EDFD_ERROR_FOREIGN_DEADLINE;
                break;
        case OP_KERNEL_REFUSED:
                name = EDFD_ERROR_KERNEL_REFUSED;
                break;
        case OP_PERMISSION_DENIED:
                name = EDFD_ERROR_PERMISSION_DENIED;
                break;
        case OP_LIMIT_EXCEEDED:
                name = EDFD_ERROR_LIMIT_EXCEEDED;
                break;
        case OP_INVALID_CONFIG:
                name = EDFD_ERROR_INVALID_CONFIG;
                break;
        default:
                return sd_bus_error_set_errnof(ret_error, e->err ? -e->err : EIO, "%s", e->message);
        }
        return sd_bus_error_set(ret_error, name, e->message);
}

static int caller_of(Manager *m, sd_bus_message *msg, Caller *ret, sd_bus_error *ret_error) {
        int r = authz_caller(&m->bus_half->creds, msg, ret);

        if (r < 0)
                return sd_bus_error_setf(ret_error, EDFD_ERROR_PERMISSION_DENIED,
                                         "cannot establish the caller's credentials: %s", strerror(-r));
        return 0;
}

#define ACTION_ADMIT "org.edfd.Admission1.admit"
#define ACTION_MANAGE "org.edfd.Admission1.manage"

/* Whether c may do action: 1 yes, 0 polkit was asked (the handler returns 1 and is called again
 * with the answer), negative with ret_error set for no. Root may do everything. */
static int authorize(Manager *m, sd_bus_message *msg, const Caller *c, const char *action, const char *what,
                     sd_bus_message_handler_t handler, sd_bus_error *ret_error) {
        bool manage = strcmp(action, ACTION_MANAGE) == 0;

        if (c->uid == 0)
                return 1;
        switch (m->config->polkit) {
        case POLKIT_OFF:
                if (manage)
                        return sd_bus_error_setf(ret_error, EDFD_ERROR_PERMISSION_DENIED,
                                                 "%s needs root (polkit: off in the configuration)", what);
                return 1;
        case POLKIT_REQUIRED:
                return authz_polkit_check(&m->bus_half->polkit, msg, c->uid, action, false,
                                          "polkit is not running, and the configuration says polkit: required", handler,
                                          m, ret_error);
        default: /* auto: without polkit, admissions follow the bus policy and the limits */
                return authz_polkit_check(&m->bus_half->polkit, msg, c->uid, action, !manage,
                                          "this needs root, or polkit's org.edfd.Admission1.manage (polkit is not "
                                          "running)",
                                          handler, m, ret_error);
        }
}

/* The caller, authorized for the manage action. 1 go on, 0 pending, negative refused. */
static int require_manage(Manager *m, sd_bus_message *msg, const char *what, sd_bus_message_handler_t handler,
                          sd_bus_error *ret_error) {
        Caller c;
        int r = caller_of(m, msg, &c, ret_error);

        if (r < 0)
                return r;
        return authorize(m, msg, &c, ACTION_MANAGE, what, handler, ret_error);
}

/* The answer to an Admit that waited for the kernel (manager_admit() returned 1); the signals its
 * success emitted go out after it (the manager holds them in a deferral scope around this call). */
static void admit_done(Manager *m, void *userdata, uint64_t id, const OpError *error) {
        sd_bus_message *msg = userdata;

        if (error) {
                _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
                int r = reply_error(&e, error);

                if (sd_bus_error_is_set(&e))
                        (void) sd_bus_reply_method_error(msg, &e);
                else
                        (void) sd_bus_reply_method_errno(msg, r, NULL);
        } else
                (void) sd_bus_reply_method_return(msg, "t", id);
        sd_bus_message_unref(msg);
}

/* Who asks for an admission, and may they: the caller, the rate limit (counted once, before polkit
 * is asked, so that a burst is cut short here), polkit's admit action, and its manage action for the
 * move flag and for an admission into group that moves the whole process into edfd's cgroups
 * (partitioned placement on cgroup v2: as the flag, it takes the process out of its user slice's
 * limits). Returns 1 to go on (with *ret_caller and *ret_may_move), 0 when polkit's answer is
 * awaited (the call comes again through handler), or a negative errno / the error reply. */
static int authorize_admission(Manager *m, sd_bus_message *msg, uint64_t flags, const char *group, const char *what,
                               sd_bus_message_handler_t handler, Caller *ret_caller, bool *ret_may_move,
                               sd_bus_error *ret_error) {
        OpError e = {};
        int r;

        r = caller_of(m, msg, ret_caller, ret_error);
        if (r < 0)
                return r;
        if (!authz_polkit_known(&m->bus_half->polkit, msg) && manager_rate_check(m, ret_caller, &e) < 0)
                return reply_error(ret_error, &e);
        r = authorize(m, msg, ret_caller, ACTION_ADMIT, what, handler, ret_error);
        if (r <= 0)
                return r;
        *ret_may_move = false;
        if (flags & EDFD_ADMIT_MOVE) {
                r = authorize(m, msg, ret_caller, ACTION_MANAGE, "moving a process into edfd's cgroups (flag 4)",
                              handler, ret_error);
                if (r <= 0)
                        return r;
                *ret_may_move = true;
        } else if (manager_admission_moves_process(m, group)) {
                r = authorize(m, msg, ret_caller, ACTION_MANAGE,
                              "an admission into a partitioned group on cgroup v2 (it moves the whole process into "
                              "edfd's cgroups, out of its user slice's limits)",
                              handler, ret_error);
                if (r <= 0)
                        return r;
                *ret_may_move = true;
        }
        return 1;
}

static int method_admit(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        uint32_t pid, tid;
        uint64_t runtime, deadline, period, flags, id;
        const char *group;
        AdmitRequest req;
        OpError e = {};
        int r;

        r = sd_bus_message_read(msg, "uustttt", &pid, &tid, &group, &runtime, &deadline, &period, &flags);
        if (r < 0)
                return r;
        req = (AdmitRequest) { .pid = pid, .tid = tid, .group = group, .params = { runtime, deadline, period },
                               .flags = flags };
        if (manager_admit_check_args(&req, &e) < 0)
                return reply_error(ret_error, &e);
        r = authorize_admission(m, msg, flags, group, "admission", method_admit, &req.caller, &req.may_move,
                                ret_error);
        if (r <= 0)
                return r < 0 ? r : 1;
        req.done = admit_done;
        req.done_userdata = sd_bus_message_ref(msg);
        r = manager_admit(m, &req, &id, &e);
        if (r > 0)
                return 1; /* waiting for the kernel: admit_done() answers */
        sd_bus_message_unref(msg);
        if (r < 0)
                return reply_error(ret_error, &e);
        return sd_bus_reply_method_return(msg, "t", id);
}

static int method_admit_at_start(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        uint32_t pid;
        uint64_t runtime, deadline, period, flags, bound;
        const char *group;
        AdmitRequest req;
        OpError e = {};
        int r;

        r = sd_bus_message_read(msg, "ustttt", &pid, &group, &runtime, &deadline, &period, &flags);
        if (r >= 0)
                r = sd_bus_message_read(msg, "t", &bound);
        if (r < 0)
                return r;
        req = (AdmitRequest) { .pid = pid, .tid = pid, .group = group, .params = { runtime, deadline, period },
                               .flags = flags };
        if (manager_admit_check_args(&req, &e) < 0)
                return reply_error(ret_error, &e);
        r = authorize_admission(m, msg, flags, group, "an admission at start", method_admit_at_start, &req.caller,
                                &req.may_move, ret_error);
        if (r <= 0)
                return r < 0 ? r : 1;
        if (req.pid == 0) /* the caller's own process, which is to exec next */
                req.pid = req.tid = req.caller.pid;
        if (manager_admit_at_start(m, &req, bound, &e) < 0)
                return reply_error(ret_error, &e);
        return sd_bus_reply_method_return(msg, "");
}

static int method_admit_split(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        uint32_t pid, tid1, tid2;
        uint64_t runtime, deadline, period, flags;
        const char *group;
        SplitRequest req;
        SplitResult res;
        OpError e = {};
        int r;

        r = sd_bus_message_read(msg, "uuustttt", &pid, &tid1, &tid2, &group, &runtime, &deadline, &period, &flags);
        if (r < 0)
                return r;
        /* The arguments as Admit checks them, once per stage's thread. */
        AdmitRequest check1 = { .pid = pid, .tid = tid1, .group = group, .flags = flags };
        AdmitRequest check2 = { .pid = pid, .tid = tid2, .group = group, .flags = flags };
        if (manager_admit_check_args(&check1, &e) < 0 || manager_admit_check_args(&check2, &e) < 0)
                return reply_error(ret_error, &e);
        req = (SplitRequest) { .pid = pid, .tid1 = tid1, .tid2 = tid2, .group = group,
                               .params = { runtime, deadline, period }, .flags = flags };
        r = authorize_admission(m, msg, flags, group, "a split admission", method_admit_split, &req.caller,
                                &req.may_move, ret_error);
        if (r <= 0)
                return r < 0 ? r : 1;
        if (manager_admit_split(m, &req, &res, &e) < 0)
                return reply_error(ret_error, &e);
        /* Stage 1's deadline and stage 2's release offset are both runtime1; stage 2's deadline is
         * deadline - runtime1. */
        return sd_bus_reply_method_return(msg, "ttuttu", res.id1, res.stage1.runtime, res.cpu1, res.id2,
                                          res.stage2.runtime, res.cpu2);
}

static int method_update(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        uint64_t id, runtime, deadline, period;
        OpError e = {};
        Caller c;
        int r;

        r = sd_bus_message_read(msg, "tttt", &id, &runtime, &deadline, &period);
        if (r < 0)
                return r;
        r = caller_of(m, msg, &c, ret_error);
        if (r < 0)
                return r;
        if (!authz_polkit_known(&m->bus_half->polkit, msg) && manager_rate_check(m, &c, &e) < 0)
                return reply_error(ret_error, &e);
        r = authorize(m, msg, &c, ACTION_ADMIT, "an update", method_update, ret_error);
        if (r <= 0)
                return r < 0 ? r : 1;
        if (manager_update(m, &c, id, &(DlParams) { runtime, deadline, period }, &e) < 0)
                return reply_error(ret_error, &e);
        return sd_bus_reply_method_return(msg, "");
}

static int release_one(Manager *m, sd_bus_message *msg, Reservation *res, sd_bus_error *ret_error) {
        OpError e = {};
        Caller c;
        int r;

        r = caller_of(m, msg, &c, ret_error);
        if (r < 0)
                return r;
        if (manager_release(m, &c, res, "requested", &e) < 0)
                return reply_error(ret_error, &e);
        return sd_bus_reply_method_return(msg, "");
}

static int method_release(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        Reservation *res;
        uint64_t id;
        int r;

        r = sd_bus_message_read(msg, "t", &id);
        if (r < 0)
                return r;
        res = tree_find_reservation(m->tree, id);
        if (!res)
                return sd_bus_error_setf(ret_error, EDFD_ERROR_NO_SUCH_RESERVATION, "no reservation %" PRIu64, id);
        return release_one(m, msg, res, ret_error);
}

static int method_release_thread(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        Reservation *res;
        uint32_t tid;
        int r;

        r = sd_bus_message_read(msg, "u", &tid);
        if (r < 0)
                return r;
        res = tid <= INT32_MAX ? tree_find_thread(m->tree, tid) : NULL;
        if (!res)
                return sd_bus_error_setf(ret_error, EDFD_ERROR_NO_SUCH_RESERVATION,
                                         "thread %" PRIu32 " holds no reservation", tid);
        return release_one(m, msg, res, ret_error);
}

static int method_release_process(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        Reservation *res;
        uint32_t pid, n = 0;
        OpError e = {};
        Caller c;
        int r;

        r = sd_bus_message_read(msg, "u", &pid);
        if (r < 0)
                return r;
        res = pid <= INT32_MAX ? tree_find_process(m->tree, pid) : NULL;
        if (!res)
                return sd_bus_error_setf(ret_error, EDFD_ERROR_NO_SUCH_RESERVATION,
                                         "process %" PRIu32 " holds no reservation", pid);
        r = caller_of(m, msg, &c, ret_error);
        if (r < 0)
                return r;
        if (manager_release_process(m, &c, pid, &n, &e) < 0)
                return reply_error(ret_error, &e);
        return sd_bus_reply_method_return(msg, "u", n);
}

static int method_list_reservations(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Manager *m = userdata;
        ThrottleCounts counts;
        bool lock_waits = strcmp(throttles_lock_state(m->throttles), "on") == 0;
        int r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(" EDFD_RESERVATION_ENTRY ")");
        if (r < 0)
                return r;
        for (const Reservation *res = reservation_next(m->tree, NULL); res; res = reservation_next(m->tree, res)) {
                /* The entry's last member, a{sv}, carries what is added later without breaking clients. */
                r = sd_bus_message_open_container(reply, 'r', EDFD_RESERVATION_ENTRY);
                if (r >= 0)
                        r = sd_bus_message_append(reply, "tuusttttttu", res->id, res->pid, res->tid, res->group->path,
                                                  res->params.runtime, res->params.deadline, res->params.period, res->bw,
                                                  res->flags, res->donor, res->uid);
                if (r >= 0)
                        r = sd_bus_message_open_container(reply, 'a', "{sv}");
                if (r >= 0 && res->donor)
                        r = sd_bus_message_append(reply, "{sv}", "donated", "t", res->donated);
                if (r >= 0 && res->partitioned)
                        r = sd_bus_message_append(reply, "{sv}", "cpu", "u", res->cpu);
                if (r >= 0 && throttles_read(m->throttles, res->tid, &counts) >= 0) {
                        r = sd_bus_message_append(reply, "{sv}", "throttles", "t", counts.throttles);
                        if (r >= 0 && lock_waits)
                                r = sd_bus_message_append(reply, "{sv}", "lock_waits", "t", counts.lock_waits);
                }
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_list_partitions(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ PlaceLoad *loads = NULL;
        Manager *m = userdata;
        size_t n = 0;
        int r;

        r = place_loads(m, &loads, &n);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "s", place_note(m));
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(" EDFD_PARTITION_ENTRY ")");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append(reply, "(" EDFD_PARTITION_ENTRY ")", loads[i].name, loads[i].cpu,
                                          loads[i].capacity, loads[i].allocated, loads[i].reservations, 0);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_list_groups(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Manager *m = userdata;
        int r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(" EDFD_GROUP_ENTRY ")");
        if (r < 0)
                return r;
        for (const Group *g = m->tree->root; g; g = group_next_preorder(g)) {
                r = sd_bus_message_open_container(reply, 'r', EDFD_GROUP_ENTRY);
                if (r < 0)
                        return r;
                r = sd_bus_message_append(reply, "sttttuusss", g->path, g->runtime, g->period, g->bw, g->allocated,
                                          (uint32_t) g->n_reservations, (uint32_t) g->n_children,
                                          g->cgroup ? g->cgroup : "", fork_policy_to_string(g->fork),
                                          fork_policy_to_string(g->threads));
                if (r < 0)
                        return r;
                /* Who may use it: anyone (users NULL), nobody but root (an empty list), or the names. */
                r = sd_bus_message_append(reply, "b", !g->users);
                if (r >= 0)
                        r = sd_bus_message_append_strv(reply, g->users ?: (char *[]) { NULL });
                /* How it places and whether it reclaims: what `edfctl status` tells its promise from. */
                if (r >= 0)
                        r = sd_bus_message_append(reply, "ba{sv}", g->dynamic, 5, "min_split_runtime", "t",
                                                  g->min_split_runtime, "overridden", "b", g->overridden, "reclaim",
                                                  "b", g->reclaim, "placement", "s",
                                                  place_partitioned(m, g) ? "partitioned" : "global", "held", "t",
                                                  g->held);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* CreateGroup, CreateGroupWithUsers and SetGroup: the same arguments (with_users: and a users list,
 * the new group's own instead of its parent's), the same checks, one operation apart. */
static int group_method(sd_bus_message *msg, Manager *m, bool create, bool with_users, sd_bus_message_handler_t self,
                        sd_bus_error *ret_error) {
        _cleanup_strv_free_ char **users = NULL;
        uint64_t runtime, period;
        const char *path;
        OpError e = {};
        int r;

        r = sd_bus_message_read(msg, "stt", &path, &runtime, &period);
        if (r < 0)
                return r;
        if (with_users) {
                r = sd_bus_message_read_strv(msg, &users);
                if (r < 0)
                        return r;
                if (!users) {
                        users = calloc(1, sizeof(char *)); /* an empty array: root only */
                        if (!users)
                                return -ENOMEM;
                }
        }
        if (manager_group_check_args(path, runtime, period, &e) < 0 ||
            (users && manager_group_check_users(users, &e) < 0))
                return reply_error(ret_error, &e);
        r = require_manage(m, msg, create ? "creating a group" : "changing a group", self, ret_error);
        if (r <= 0)
                return r < 0 ? r : 1;
        r = create ? manager_group_create(m, path, runtime, period, users, &e)
                   : manager_group_set(m, path, runtime, period, &e);
        if (r < 0)
                return reply_error(ret_error, &e);
        return sd_bus_reply_method_return(msg, "");
}

static int method_create_group(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        return group_method(msg, userdata, true, false, method_create_group, ret_error);
}

static int method_create_group_with_users(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        return group_method(msg, userdata, true, true, method_create_group_with_users, ret_error);
}

static int method_set_group(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        return group_method(msg, userdata, false, false, method_set_group, ret_error);
}

static int method_remove_group(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        const char *path;
        OpError e = {};
        int r;

        r = sd_bus_message_read(msg, "s", &path);
        if (r < 0)
                return r;
        if (manager_group_check_path(path, &e) < 0)
                return reply_error(ret_error, &e);
        r = require_manage(m, msg, "removing a group", method_remove_group, ret_error);
        if (r <= 0)
                return r < 0 ? r : 1;
        if (manager_group_remove(m, path, &e) < 0)
                return reply_error(ret_error, &e);
        return sd_bus_reply_method_return(msg, "");
}

static int method_reload(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        OpError e = {};
        int r;

        r = require_manage(m, msg, "reloading the configuration", method_reload, ret_error);
        if (r <= 0)
                return r < 0 ? r : 1;
        if (manager_reload(m, &e) < 0)
                return reply_error(ret_error, &e);
        return sd_bus_reply_method_return(msg, "");
}

static int method_echo(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        uint64_t v;
        int r;

        r = sd_bus_message_read(msg, "t", &v);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, "t", v);
}

/* --- subscriptions ---
 *
 * Signals cost the bus: dbus-daemon parses each one and matches it against every connection's
 * rules, and a fork storm emits three per fork. Like systemd's Manager.Subscribe(), edfd sends them
 * only while some client has asked for them; a subscription ends with Unsubscribe() or when the
 * client leaves the bus. */

/* The track exists while someone is subscribed: sd-bus calls this when its last name has gone, and
 * it goes too (as systemd does with its units' tracks; a track kept empty is dispatched again). */
static int on_subscribers_empty(sd_bus_track *t, void *userdata) {
        ManagerBus *b = userdata;

        b->subscribers = sd_bus_track_unref(b->subscribers);
        log_debug("No subscriber left: signals are off");
        return 0;
}

static int method_subscribe(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        ManagerBus *b = m->bus_half;
        const char *sender = sd_bus_message_get_sender(msg);
        int r;

        if (!sender)
                return sd_bus_error_set(ret_error, EDFD_ERROR_INVALID_PARAMETERS, "Subscribe needs a bus sender name");
        if (sd_bus_track_contains(b->subscribers, sender))
                return sd_bus_reply_method_return(msg, ""); /* already: nothing to do */
        if (sd_bus_track_count(b->subscribers) >= EDFD_SUBSCRIBERS_MAX)
                return sd_bus_error_setf(ret_error, EDFD_ERROR_LIMIT_EXCEEDED,
                                         "edfd already has %d subscribers, the most it keeps", EDFD_SUBSCRIBERS_MAX);
        if (!b->subscribers) {
                r = sd_bus_track_new(m->bus, &b->subscribers, on_subscribers_empty, b);
                if (r < 0)
                        return r;
        }
        r = sd_bus_track_add_name(b->subscribers, sender);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, "");
}

static int method_unsubscribe(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        const char *sender = sd_bus_message_get_sender(msg);

        if (sender)
                (void) sd_bus_track_remove_name(m->bus_half->subscribers, sender);
        return sd_bus_reply_method_return(msg, "");
}

#define PROPERTY_U64(fn, expr)                                                                                \
        static int fn(sd_bus *bus, const char *path, const char *interface, const char *property,            \
                      sd_bus_message *reply, void *userdata, sd_bus_error *error) {                           \
                Manager *m = userdata;                                                                        \
                return sd_bus_message_append(reply, "t", (uint64_t) (expr));                                  \
        }

PROPERTY_U64(property_capacity, m->tree->root->bw)
PROPERTY_U64(property_allocated, m->tree->root->allocated)
PROPERTY_U64(property_unmanaged, capacity_unmanaged(m->capacity))
PROPERTY_U64(property_kernel_capacity, capacity_kernel(m->capacity)->raw)
PROPERTY_U64(property_events_seen, m->procs.events_seen)
PROPERTY_U64(property_events_lost, m->procs.events_lost)
PROPERTY_U64(property_resyncs, m->procs.resyncs)
PROPERTY_U64(property_unseen_children, m->procs.unseen_children)

static int property_counts(sd_bus *bus, const char *path, const char *interface, const char *property,
                           sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;

        if (strcmp(property, "Reservations") == 0)
                return sd_bus_message_append(reply, "u", (uint32_t) m->tree->n_reservations);
        if (strcmp(property, "Subscribers") == 0)
                return sd_bus_message_append(reply, "u", (uint32_t) sd_bus_track_count(m->bus_half->subscribers));
        if (strcmp(property, "WaitingAtStart") == 0)
                return sd_bus_message_append(reply, "u", (uint32_t) m->startup.n);
        return sd_bus_message_append(reply, "u", (uint32_t) (m->tree->n_groups - 1));
}

static int property_bools(sd_bus *bus, const char *path, const char *interface, const char *property,
                          sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;

        if (strcmp(property, "KernelAdmission") == 0)
                return sd_bus_message_append(reply, "b", !capacity_kernel(m->capacity)->admission_off);
        return sd_bus_message_append(reply, "b", tree_overcommitted(m->tree));
}

static int property_throttle_counting(sd_bus *bus, const char *path, const char *interface, const char *property,
                                      sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;

        if (strcmp(property, "LockWaitCounting") == 0)
                return sd_bus_message_append(reply, "s", throttles_lock_state(m->throttles));
        return sd_bus_message_append(reply, "s", throttles_state(m->throttles));
}

static int property_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                            sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", EDFD_VERSION);
}

/* The methods that change something run with their signals deferred until after the reply. */
/* Plan: the dry run (manager-plan.c). Anyone may ask: it changes nothing and tells no more than
 * ListGroups and ListReservations do; the rate limit and the work limits (manager-plan.h) keep one
 * caller from keeping edfd busy. */
static int method_plan(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ PlanTask *tasks = NULL;
        _cleanup_free_ LivePlanEntry *out = NULL;
        Manager *m = userdata;
        size_t n = 0, cap = 0;
        OpError e = {};
        Caller c;
        int r;

        r = caller_of(m, msg, &c, ret_error);
        if (r < 0)
                return r;
        if (manager_rate_check(m, &c, &e) < 0)
                return reply_error(ret_error, &e);
        r = sd_bus_message_enter_container(msg, 'a', "(sstttb)");
        if (r < 0)
                return r;
        for (;;) {
                const char *name, *group;
                uint64_t runtime, deadline, period;
                int split;

                r = sd_bus_message_read(msg, "(sstttb)", &name, &group, &runtime, &deadline, &period, &split);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                if (n == MANAGER_PLAN_TASKS_MAX)
                        return sd_bus_error_setf(ret_error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "a plan takes at most %d tasks", MANAGER_PLAN_TASKS_MAX);
                if (n == cap) {
                        size_t want = cap ? cap * 2 : 16;
                        PlanTask *grown = realloc(tasks, want * sizeof(*grown));
                        if (!grown)
                                return -ENOMEM;
                        tasks = grown, cap = want;
                }
                tasks[n++] = (PlanTask) { .name = name, .group = group, .params = { runtime, deadline, period },
                                          .split = split };
        }
        r = sd_bus_message_exit_container(msg);
        if (r < 0)
                return r;
        out = calloc(n ? n : 1, sizeof(*out));
        if (!out)
                return -ENOMEM;
        if (manager_plan(m, &c, tasks, n, out, NULL, &e) < 0)
                return reply_error(ret_error, &e);

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(ssuuttss)");
        for (size_t i = 0; r >= 0 && i < n; i++) {
                const PlanEntry *x = &out[i].entry;
                bool on_cpu = x->outcome == PLAN_SPLIT || (x->outcome == PLAN_PLACED && out[i].partitioned);

                r = sd_bus_message_append(reply, "(ssuuttss)", plan_outcome_to_string(x->outcome), out[i].group ?: "",
                                          on_cpu ? (uint32_t) x->cpu : UINT32_MAX,
                                          x->outcome == PLAN_SPLIT ? (uint32_t) x->cpu_b : UINT32_MAX,
                                          x->outcome == PLAN_SPLIT ? x->stage1.runtime : x->outcome == PLAN_PLACED ? tasks[i].params.runtime : 0,
                                          x->outcome == PLAN_SPLIT ? x->stage2.runtime : 0, out[i].test ?: "-",
                                          x->outcome == PLAN_REFUSED || x->room ? x->reason : "");
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

#define DEFERRING(name)                                                                                      \
        static int name##_deferred(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {           \
                Manager *m = userdata;                                                                        \
                manager_bus_defer_begin(m);                                                                   \
                int r = name(msg, userdata, ret_error);                                                       \
                manager_bus_defer_end(m); /* after a reply; before an error reply, sent on return */         \
                return r;                                                                                     \
        }
DEFERRING(method_admit)
DEFERRING(method_admit_split)
DEFERRING(method_admit_at_start)
DEFERRING(method_update)
DEFERRING(method_release)
DEFERRING(method_release_thread)
DEFERRING(method_release_process)
DEFERRING(method_create_group)
DEFERRING(method_create_group_with_users)
DEFERRING(method_set_group)
DEFERRING(method_remove_group)
DEFERRING(method_reload)

/* Every method is SD_BUS_VTABLE_UNPRIVILEGED: anyone may call, and each handler decides (reads are
 * open to all, changes are checked against the caller). */
static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Version", "s", property_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Capacity", "t", property_capacity, 0, 0),
        SD_BUS_PROPERTY("Allocated", "t", property_allocated, 0, 0),
        SD_BUS_PROPERTY("Unmanaged", "t", property_unmanaged, 0, 0),
        SD_BUS_PROPERTY("KernelCapacity", "t", property_kernel_capacity, 0, 0),
        SD_BUS_PROPERTY("KernelAdmission", "b", property_bools, 0, 0),
        SD_BUS_PROPERTY("Overcommitted", "b", property_bools, 0, 0),
        SD_BUS_PROPERTY("Reservations", "u", property_counts, 0, 0),
        SD_BUS_PROPERTY("Groups", "u", property_counts, 0, 0),
        SD_BUS_PROPERTY("Subscribers", "u", property_counts, 0, 0),
        SD_BUS_PROPERTY("EventsSeen", "t", property_events_seen, 0, 0),
        SD_BUS_PROPERTY("EventsLost", "t", property_events_lost, 0, 0),
        SD_BUS_PROPERTY("Resyncs", "t", property_resyncs, 0, 0),
        SD_BUS_PROPERTY("UnseenChildren", "t", property_unseen_children, 0, 0),
        SD_BUS_PROPERTY("WaitingAtStart", "u", property_counts, 0, 0),
        SD_BUS_PROPERTY("ThrottleCounting", "s", property_throttle_counting, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("LockWaitCounting", "s", property_throttle_counting, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_METHOD_WITH_NAMES("Admit", "uustttt",
                                 SD_BUS_PARAM(pid) SD_BUS_PARAM(tid) SD_BUS_PARAM(group) SD_BUS_PARAM(runtime)
                                 SD_BUS_PARAM(deadline) SD_BUS_PARAM(period) SD_BUS_PARAM(flags),
                                 "t", SD_BUS_PARAM(id), method_admit_deferred, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("AdmitSplit", "uuustttt",
                                 SD_BUS_PARAM(pid) SD_BUS_PARAM(tid1) SD_BUS_PARAM(tid2) SD_BUS_PARAM(group)
                                 SD_BUS_PARAM(runtime) SD_BUS_PARAM(deadline) SD_BUS_PARAM(period) SD_BUS_PARAM(flags),
                                 "ttuttu",
                                 SD_BUS_PARAM(id1) SD_BUS_PARAM(runtime1) SD_BUS_PARAM(cpu1)
                                 SD_BUS_PARAM(id2) SD_BUS_PARAM(runtime2) SD_BUS_PARAM(cpu2),
                                 method_admit_split_deferred, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("AdmitAtStart", "usttttt",
                                 SD_BUS_PARAM(pid) SD_BUS_PARAM(group) SD_BUS_PARAM(runtime) SD_BUS_PARAM(deadline)
                                 SD_BUS_PARAM(period) SD_BUS_PARAM(flags) SD_BUS_PARAM(bound),
                                 "", , method_admit_at_start_deferred, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Update", "tttt",
                                 SD_BUS_PARAM(id) SD_BUS_PARAM(runtime) SD_BUS_PARAM(deadline) SD_BUS_PARAM(period),
                                 "", , method_update_deferred, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Release", "t", SD_BUS_PARAM(id), "", , method_release_deferred, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ReleaseThread", "u", SD_BUS_PARAM(tid), "", , method_release_thread_deferred, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ReleaseProcess", "u", SD_BUS_PARAM(pid), "u", SD_BUS_PARAM(released),
                                 method_release_process_deferred, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ListReservations", "", , "a(" EDFD_RESERVATION_ENTRY ")", SD_BUS_PARAM(reservations),
                                 method_list_reservations, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ListGroups", "", , "a(" EDFD_GROUP_ENTRY ")", SD_BUS_PARAM(groups), method_list_groups, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ListPartitions", "", , "sa(" EDFD_PARTITION_ENTRY ")", SD_BUS_PARAM(note) SD_BUS_PARAM(partitions),
                                 method_list_partitions, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Plan", "a(sstttb)", SD_BUS_PARAM(tasks), "a(ssuuttss)", SD_BUS_PARAM(results),
                                 method_plan, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("CreateGroup", "stt", SD_BUS_PARAM(path) SD_BUS_PARAM(runtime) SD_BUS_PARAM(period),
                                 "", , method_create_group_deferred, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("CreateGroupWithUsers", "sttas",
                                 SD_BUS_PARAM(path) SD_BUS_PARAM(runtime) SD_BUS_PARAM(period) SD_BUS_PARAM(users), "", ,
                                 method_create_group_with_users_deferred, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("SetGroup", "stt", SD_BUS_PARAM(path) SD_BUS_PARAM(runtime) SD_BUS_PARAM(period), "",
                                 , method_set_group_deferred, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("RemoveGroup", "s", SD_BUS_PARAM(path), "", , method_remove_group_deferred, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Reload", "", "", method_reload_deferred, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Subscribe", "", "", method_subscribe, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Unsubscribe", "", "", method_unsubscribe, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Echo", "t", SD_BUS_PARAM(value), "t", SD_BUS_PARAM(value), method_echo, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_NAMES("ReservationAdded", "tuussa{sv}",
                                 SD_BUS_PARAM(id) SD_BUS_PARAM(pid) SD_BUS_PARAM(tid) SD_BUS_PARAM(group)
                                 SD_BUS_PARAM(reason) SD_BUS_PARAM(fields), 0),
        SD_BUS_SIGNAL_WITH_NAMES("ReservationRemoved", "tuuss",
                                 SD_BUS_PARAM(id) SD_BUS_PARAM(pid) SD_BUS_PARAM(tid) SD_BUS_PARAM(group)
                                 SD_BUS_PARAM(reason), 0),
        SD_BUS_SIGNAL_WITH_NAMES("ReservationChanged", "ttttsa{sv}",
                                 SD_BUS_PARAM(id) SD_BUS_PARAM(runtime) SD_BUS_PARAM(deadline) SD_BUS_PARAM(period)
                                 SD_BUS_PARAM(reason) SD_BUS_PARAM(fields), 0),
        SD_BUS_SIGNAL_WITH_NAMES("Split", "tt", SD_BUS_PARAM(donor_id) SD_BUS_PARAM(child_id), 0),
        SD_BUS_SIGNAL("GroupsChanged", "", 0),
        SD_BUS_SIGNAL_WITH_NAMES("ReservationThrottled", "tuut",
                                 SD_BUS_PARAM(id) SD_BUS_PARAM(pid) SD_BUS_PARAM(tid) SD_BUS_PARAM(throttles), 0),
        SD_BUS_SIGNAL_WITH_NAMES("ReservationLockWaits", "tuut",
                                 SD_BUS_PARAM(id) SD_BUS_PARAM(pid) SD_BUS_PARAM(tid) SD_BUS_PARAM(lock_waits), 0),
        SD_BUS_VTABLE_END,
};

int manager_bus_new(Manager *m) {
        m->bus_half = calloc(1, sizeof(ManagerBus));
        return m->bus_half ? 0 : -ENOMEM;
}

void manager_bus_free(Manager *m) {
        ManagerBus *b = m->bus_half;

        if (!b)
                return;
        sd_event_source_disable_unref(b->drain);
        for (size_t i = 0; i < b->n_deferred; i++)
                sd_bus_message_unref(b->deferred[i]);
        free(b->deferred);
        sd_bus_track_unref(b->subscribers);
        authz_polkit_done(&b->polkit);
        authz_cache_done(&b->creds);
        free(b);
        m->bus_half = NULL;
}

int manager_bus_register(Manager *m) {
        ManagerBus *b = m->bus_half;
        int r;

        r = sd_bus_add_object_vtable(m->bus, NULL, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, manager_vtable, m);
        if (r < 0)
                return r;
        return authz_cache_attach(&b->creds, m->bus);
}

/* At most this many bus messages more per event loop iteration (see on_bus_drain). */
#define BUS_DRAIN_MAX 32

/* Calls often come several at a time (a client with many in flight, several clients at once), and
 * sd-bus takes one message per event loop iteration: an epoll_wait(2) and more around each. Take
 * the ones waiting now, up to BUS_DRAIN_MAX, in the same iteration. A post source: it runs after
 * every iteration that dispatched something, so where nothing waits it costs the one recvmsg(2)
 * that says so; the bound keeps the kernel's events (the proc connector's, of higher priority)
 * from waiting long behind a flood of calls. */
static int on_bus_drain(sd_event_source *s, void *userdata) {
        Manager *m = userdata;

        for (unsigned i = 0; m->bus && i < BUS_DRAIN_MAX; i++)
                if (sd_bus_process(m->bus, NULL) <= 0)
                        break; /* nothing waiting; or an error, which sd-bus's own handler sees too */
        return 0;
}

int manager_bus_attach(Manager *m) {
        int r;

        r = sd_bus_attach_event(m->bus, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return r;
        return sd_event_add_post(m->event, &m->bus_half->drain, on_bus_drain, m);
}

/* Hold sig (a reference taken from the caller) until the deferral scope ends. 0, or -ENOMEM. */
static int defer_push(ManagerBus *b, sd_bus_message *sig) {
        if (b->n_deferred == b->n_deferred_alloc) {
                size_t n = b->n_deferred_alloc ? b->n_deferred_alloc * 2 : 8;
                sd_bus_message **v = reallocarray(b->deferred, n, sizeof *v);

                if (!v)
                        return -ENOMEM;
                b->deferred = v;
                b->n_deferred_alloc = n;
        }
        b->deferred[b->n_deferred++] = sig;
        return 0;
}

/* Send a signal now, or after the reply of the method call being handled: the caller gets its
 * answer one bus message sooner. */
static void emit(Manager *m, const char *member, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *sig = NULL;
        va_list ap;
        int r;

        if (!m->bus || !m->bus_half || sd_bus_track_count(m->bus_half->subscribers) == 0)
                return;
        r = sd_bus_message_new_signal(m->bus, &sig, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, member);
        if (r < 0)
                return;
        va_start(ap, types);
        r = sd_bus_message_appendv(sig, types, ap);
        va_end(ap);
        if (r < 0)
                return;
        if (m->bus_half->defer_depth > 0 && defer_push(m->bus_half, sig) >= 0) {
                sig = NULL; /* the queue has it */
                return;
        }
        (void) sd_bus_send(m->bus, sig, NULL); /* not deferred; or no memory to hold it: now, not never */
}

void manager_bus_defer_begin(Manager *m) {
        if (m->bus_half)
                m->bus_half->defer_depth++;
}

void manager_bus_defer_end(Manager *m) {
        ManagerBus *b = m->bus_half;

        if (!b || b->defer_depth == 0 || --b->defer_depth > 0)
                return;
        for (size_t i = 0; i < b->n_deferred; i++) {
                if (m->bus)
                        (void) sd_bus_send(m->bus, b->deferred[i], NULL);
                sd_bus_message_unref(b->deferred[i]);
        }
        b->n_deferred = 0;
}

/* The further fields of ReservationAdded and ReservationChanged: "cpu" (u) for a reservation of
 * partitioned placement, nothing for global placement. */
void manager_bus_emit_added(Manager *m, const Reservation *r, const char *reason) {
        if (r->partitioned)
                emit(m, "ReservationAdded", "tuussa{sv}", r->id, r->pid, r->tid, r->group->path, reason, (unsigned) 1,
                     "cpu", "u", r->cpu);
        else
                emit(m, "ReservationAdded", "tuussa{sv}", r->id, r->pid, r->tid, r->group->path, reason, (unsigned) 0);
}

void manager_bus_emit_removed(Manager *m, uint64_t id, uint32_t pid, uint32_t tid, const char *group,
                              const char *reason) {
        emit(m, "ReservationRemoved", "tuuss", id, pid, tid, group, reason);
}

void manager_bus_emit_changed(Manager *m, const Reservation *r, const char *reason) {
        if (r->partitioned)
                emit(m, "ReservationChanged", "ttttsa{sv}", r->id, r->params.runtime, r->params.deadline,
                     r->params.period, reason, (unsigned) 1, "cpu", "u", r->cpu);
        else
                emit(m, "ReservationChanged", "ttttsa{sv}", r->id, r->params.runtime, r->params.deadline,
                     r->params.period, reason, (unsigned) 0);
}

void manager_bus_emit_split(Manager *m, uint64_t donor, uint64_t child) {
        emit(m, "Split", "tt", donor, child);
}

void manager_bus_emit_groups_changed(Manager *m) {
        emit(m, "GroupsChanged", "");
}

void manager_bus_emit_throttled(Manager *m, const Reservation *r, uint64_t throttles) {
        emit(m, "ReservationThrottled", "tuut", r->id, r->pid, r->tid, throttles);
}

void manager_bus_emit_lock_waits(Manager *m, const Reservation *r, uint64_t lock_waits) {
        emit(m, "ReservationLockWaits", "tuut", r->id, r->pid, r->tid, lock_waits);
}

bool manager_bus_subscribed(const Manager *m) {
        return m->bus && m->bus_half && sd_bus_track_count(m->bus_half->subscribers) > 0;
}
