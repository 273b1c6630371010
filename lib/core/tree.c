/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/admission.h"
#include "core/bandwidth.h"
#include "core/duration.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "core/tree.h"

static const char *const fork_policy_table[_FORK_POLICY_MAX] = {
        [FORK_SPLIT] = "split",
        [FORK_INHERIT] = "inherit",
        [FORK_NONE] = "none",
};

const char *fork_policy_to_string(ForkPolicy p) {
        if (p < 0 || p >= _FORK_POLICY_MAX)
                return NULL;
        return fork_policy_table[p];
}

ForkPolicy fork_policy_from_string(const char *s) {
        for (int i = 0; s && i < _FORK_POLICY_MAX; i++)
                if (strcmp(s, fork_policy_table[i]) == 0)
                        return (ForkPolicy) i;
        return _FORK_POLICY_UNSET;
}

const char *admit_outcome_to_string(AdmitOutcome o) {
        static const char *const table[_ADMIT_MAX] = {
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
        if ((unsigned) o >= _ADMIT_MAX)
                return "UNKNOWN";
        return table[o];
}

char *refusal_format(const Refusal *r, char *buf, size_t size) {
        char a[DURATION_MAX], b[DURATION_MAX], c[DURATION_MAX];
        const char *name = r->name ? r->name : "?";
        size_t n = 0;

        /* Per-user limits name the user when the caller knows the name. */
        if (r->user && (r->outcome == ADMIT_LIMIT_EXCEEDED || r->outcome == ADMIT_RATE_LIMITED)) {
                int k = snprintf(buf, size, "user %s: ", r->user);
                n = k < 0 ? 0 : MIN((size_t) k, size > 0 ? size - 1 : 0);
                buf += n;
                size -= n;
        }

        switch (r->outcome) {
        case ADMIT_OK:
                snprintf(buf, size, "accepted");
                break;
        case ADMIT_OVER_BUDGET:
                snprintf(buf, size, "%s: %s free, request needs %s", name, bw_format(r->free_bw, a),
                         bw_format_up(r->need_bw, b));
                break;
        case ADMIT_BAD_PARAMS:
                snprintf(buf, size, "invalid parameters: %s", params_outcome_to_string(r->params));
                break;
        case ADMIT_ABOVE_ONE_CPU:
                snprintf(buf, size, "a single thread cannot hold more than 100%% of one CPU (request needs %s)",
                         bw_format_up(r->need_bw, b));
                break;
        case ADMIT_NO_SUCH_GROUP:
                snprintf(buf, size, "no group \"%s\"", name);
                break;
        case ADMIT_GROUP_EXISTS:
                snprintf(buf, size, "group \"%s\" exists already", name);
                break;
        case ADMIT_BAD_GROUP_NAME:
                snprintf(buf, size,
                         "\"%s\" is not a valid group path (components of A-Z a-z 0-9 _ . - that start with a "
                         "letter or digit, at most %d bytes each, %d deep, not cgroup.*)",
                         name, GROUP_NAME_MAX, GROUP_DEPTH_MAX);
                break;
        case ADMIT_NO_SUCH_RESERVATION:
                snprintf(buf, size, "no reservation %" PRIu64, r->id);
                break;
        case ADMIT_ALREADY_ADMITTED:
                snprintf(buf, size, "the thread holds a reservation already (id %" PRIu64 ")", r->id);
                break;
        case ADMIT_ID_IN_USE:
                snprintf(buf, size, "reservation id %" PRIu64 " is in use", r->id);
                break;
        case ADMIT_GROUP_NOT_EMPTY:
                if (r->n_held)
                        snprintf(buf, size, "%s: group still holds %" PRIu64 " groups, %" PRIu64 " reservations and "
                                 "%" PRIu64 " admissions waiting for their start", name, r->n_groups, r->n_reservations,
                                 r->n_held);
                else
                        snprintf(buf, size, "%s: group still holds %" PRIu64 " groups and %" PRIu64 " reservations",
                                 name, r->n_groups, r->n_reservations);
                break;
        case ADMIT_BELOW_ALLOCATED:
                snprintf(buf, size, "%s: %s is allocated, cannot shrink to %s", name, bw_format(r->allocated_bw, a),
                         bw_format(r->size_bw, b));
                break;
        case ADMIT_IS_ROOT:
                snprintf(buf, size, "the root group cannot be changed or removed");
                break;
        case ADMIT_FORK_NONE:
                snprintf(buf, size, "%s: fork policy is none", name);
                break;
        case ADMIT_SPLIT_TOO_SMALL:
                snprintf(buf, size, "%s: a split would leave %s, below the minimum of %s", name,
                         duration_format(r->split_runtime, c), duration_format(r->min_runtime, a));
                break;
        case ADMIT_LIMIT_EXCEEDED:
                if (r->limit && strcmp(r->limit, "reservations") == 0)
                        snprintf(buf, size, "per-user limit of %" PRIu64 " reservations reached (%" PRIu64 " held)",
                                 r->limit_count, r->held_count);
                else
                        snprintf(buf, size, "per-user bandwidth limit %s: %s held, request needs %s",
                                 bw_format(r->limit_bw, c), bw_format(r->held_bw, a), bw_format_up(r->need_bw, b));
                break;
        case ADMIT_BAD_FLAGS:
                snprintf(buf, size, "unknown flags 0x%" PRIx64 " (known: 1 reclaim, 2 overrun signal, 4 move)", r->flags);
                break;
        case ADMIT_BAD_PID:
        case ADMIT_NO_SUCH_THREAD:
                snprintf(buf, size, "no thread %" PRIu64 " in process %" PRIu64, r->tid, r->pid);
                break;
        case ADMIT_PID_ONE:
                snprintf(buf, size, "pid 1 is never admitted: under a fork policy every process it starts would be split");
                break;
        case ADMIT_KERNEL_THREAD:
                snprintf(buf, size, "process %" PRIu64 " is a kernel thread: not edfd's to change", r->pid);
                break;
        case ADMIT_PROCESS_GONE:
                snprintf(buf, size, "process %" PRIu64 " is gone", r->pid);
                break;
        case ADMIT_NOT_OWNER:
                snprintf(buf, size, "thread %" PRIu64 " belongs to uid %u, not to you (uid %u)", r->tid,
                         (unsigned) r->owner, (unsigned) r->uid);
                break;
        case ADMIT_NOT_ALLOWED:
                snprintf(buf, size, "group %s does not allow uid %u (see its users: list)", name, (unsigned) r->uid);
                break;
        case ADMIT_MOVE_NOT_ALLOWED:
                if (r->flags == 0 && r->name)
                        snprintf(buf, size,
                                 "%s: partitioned placement on cgroup v2 moves the whole process into edfd's "
                                 "cgroups, which needs root or polkit's org.edfd.Admission1.manage: it would leave "
                                 "its user slice's limits", name);
                else
                        snprintf(buf, size,
                                 "moving a process into edfd's cgroups (flag 4) needs root or polkit's "
                                 "org.edfd.Admission1.manage: it would leave its user slice's limits");
                break;
        case ADMIT_NO_CGROUP:
                snprintf(buf, size, "group %s has no cgroup to move into%s", name,
                         r->cgroup_root_unusable ? " (the cgroup root is not usable)" : "");
                break;
        case ADMIT_THREAD_GONE:
                snprintf(buf, size, "thread %" PRIu64 " is gone", r->tid);
                break;
        case ADMIT_FOREIGN_DEADLINE:
                snprintf(buf, size, "thread %" PRIu64 " is SCHED_DEADLINE already (%s/%s), set outside edfd", r->tid,
                         duration_format(r->foreign.runtime, a), duration_format(r->foreign.period, b));
                break;
        case ADMIT_RATE_LIMITED:
                snprintf(buf, size, "rate limit of %" PRIu64 " requests per %s reached; try again later", r->limit_count,
                         duration_format(r->window, a));
                break;
        case ADMIT_NOT_YOURS:
                snprintf(buf, size, "reservation %" PRIu64 " is not yours", r->id);
                break;
        case ADMIT_BAD_GROUP_BANDWIDTH:
                snprintf(buf, size,
                         "group bandwidth needs a period > 0 and a runtime of at least %" PRIu64 " ns "
                         "(and below 2^%d ns)",
                         DL_RUNTIME_MIN, 64 - BW_SHIFT);
                break;
        default:
                snprintf(buf, size, "refused");
        }
        return buf - n;
}

/* A refusal that names only a group. */
static int refuse(Refusal *ret, AdmitOutcome o, const char *name) {
        if (ret)
                *ret = (Refusal) { .outcome = o, .name = name };
        return (int) o;
}

/* "the thread holds other already", refused in g. */
static int refuse_admitted(Refusal *ret, const Group *g, const Reservation *other) {
        if (ret)
                *ret = (Refusal) { .outcome = ADMIT_ALREADY_ADMITTED, .name = g->path, .id = other->id };
        return ADMIT_ALREADY_ADMITTED;
}

uint64_t group_free_bw(const Group *g) {
        return g->allocated >= g->bw ? 0 : g->bw - g->allocated;
}

bool group_has_room(const Tree *t, const Group *g, uint64_t less, uint64_t more) {
        uint64_t after;

        if (t->root->allocated > t->root->bw)
                return false;
        after = g->allocated - less; /* less is always part of allocated */
        if (__builtin_add_overflow(after, more, &after))
                return false;
        return after <= g->bw;
}

int group_refuse_budget(const Tree *t, const Group *g, uint64_t need, Refusal *ret) {
        bool over = t->root->allocated > t->root->bw;

        if (ret)
                *ret = (Refusal) { .outcome = ADMIT_OVER_BUDGET, .name = over ? t->root->path : g->path,
                                   .free_bw = over ? 0 : group_free_bw(g), .need_bw = need };
        return ADMIT_OVER_BUDGET;
}

/* --- groups --- */

/* The rule for a component is the admission module's. */
static bool component_valid(const char *s, size_t n) {
        return admission_group_name_problem(s, n) == NULL;
}

bool group_path_valid(const char *path) {
        size_t len;
        unsigned depth = 0;

        if (!path)
                return false;
        if (strcmp(path, "/") == 0)
                return true;
        len = strnlen(path, GROUP_PATH_MAX + 1);
        if (len == 0 || len > GROUP_PATH_MAX)
                return false;
        for (const char *p = path;;) {
                const char *slash = strchr(p, '/');
                size_t n = slash ? (size_t) (slash - p) : strlen(p);
                if (!component_valid(p, n) || ++depth > GROUP_DEPTH_MAX)
                        return false;
                if (!slash)
                        return true;
                p = slash + 1;
        }
}

Group *tree_find_group(const Tree *t, const char *path) {
        if (!path)
                return NULL;
        for (Group *g = hashmap_get(&t->groups, hash_string(path)); g; g = g->hash_next)
                if (strcmp(g->path, path) == 0)
                        return g;
        return NULL;
}

static int groups_index_add(Tree *t, Group *g) {
        uint64_t h = hash_string(g->path);
        Group *head = hashmap_get(&t->groups, h);
        int r;

        r = hashmap_put(&t->groups, h, g);
        if (r < 0)
                return r;
        g->hash_next = head;
        return 0;
}

static void groups_index_remove(Tree *t, Group *g) {
        uint64_t h = hash_string(g->path);
        Group *head = hashmap_get(&t->groups, h);

        if (head == g) {
                if (g->hash_next)
                        (void) hashmap_put(&t->groups, h, g->hash_next); /* replaces: cannot fail */
                else
                        hashmap_remove(&t->groups, h);
                return;
        }
        for (Group *i = head; i; i = i->hash_next)
                if (i->hash_next == g) {
                        i->hash_next = g->hash_next;
                        return;
                }
}

static Group *group_free(Group *g) {
        if (!g)
                return NULL;
        free(g->path);
        strv_free(g->users);
        free(g->cgroup);
        free(g);
        return NULL;
}

static void group_link_child(Group *parent, Group *g) {
        Group **p = &parent->first_child;

        while (*p && strcmp((*p)->name, g->name) < 0)
                p = &(*p)->next_sibling;
        g->next_sibling = *p;
        *p = g;
        parent->n_children++;
}

static void group_unlink_child(Group *parent, Group *g) {
        for (Group **p = &parent->first_child; *p; p = &(*p)->next_sibling)
                if (*p == g) {
                        *p = g->next_sibling;
                        parent->n_children--;
                        return;
                }
}

Group *group_next_preorder(const Group *g) {
        if (g->first_child)
                return g->first_child;
        for (; g; g = g->parent)
                if (g->next_sibling)
                        return g->next_sibling;
        return NULL;
}

int tree_new(Tree **ret, uint64_t capacity, const DlLimits *limits, ForkPolicy fork, ForkPolicy threads,
             uint64_t min_split_runtime) {
        Tree *t;
        Group *root;

        t = calloc(1, sizeof(Tree));
        if (!t)
                return -ENOMEM;
        root = calloc(1, sizeof(Group));
        if (!root)
                goto oom;
        t->root = root;
        root->path = strdup("/");
        if (!root->path)
                goto oom;
        root->name = root->path;
        root->bw = capacity;
        root->fork = fork == _FORK_POLICY_UNSET ? FORK_SPLIT : fork;
        root->threads = threads == _FORK_POLICY_UNSET ? FORK_NONE : threads;
        root->min_split_runtime = MAX(min_split_runtime, DL_RUNTIME_MIN);
        if (groups_index_add(t, root) < 0)
                goto oom;
        t->capacity = capacity;
        t->limits = limits ? *limits : DL_LIMITS_DEFAULT;
        t->next_id = 1;
        t->n_groups = 1;
        *ret = t;
        return 0;
oom:
        tree_free(t);
        return -ENOMEM;
}

/* Post-order; the recursion is bounded by GROUP_DEPTH_MAX. */
static void group_free_subtree(Group *g) {
        for (Group *c = g->first_child, *next; c; c = next) {
                next = c->next_sibling;
                group_free_subtree(c);
        }
        for (Reservation *r = g->first_reservation, *next; r; r = next) {
                next = r->group_next;
                free(r);
        }
        group_free(g);
}

void tree_set_root_reclaim(Tree *t, bool on) {
        t->root->reclaim = on;
}

Tree *tree_free(Tree *t) {
        if (!t)
                return NULL;
        if (t->root)
                group_free_subtree(t->root);
        hashmap_done(&t->groups);
        hashmap_done(&t->by_id);
        hashmap_done(&t->by_tid);
        hashmap_done(&t->by_pid);
        hashmap_done_free(&t->by_uid, free);
        free(t);
        return NULL;
}

bool tree_set_capacity(Tree *t, uint64_t capacity, uint64_t unmanaged) {
        t->root->allocated = t->root->allocated - t->unmanaged + unmanaged;
        t->root->bw = capacity;
        t->capacity = capacity;
        t->unmanaged = unmanaged;
        return tree_overcommitted(t);
}

bool tree_overcommitted(const Tree *t) {
        return t->root->allocated > t->root->bw;
}

static char *path_join(const Group *parent, const char *name) {
        char *p;

        if (parent->depth == 0)
                return strdup(name);
        if (asprintf(&p, "%s/%s", parent->path, name) < 0)
                return NULL;
        return p;
}

int group_create(Tree *t, const char *path, const GroupSpec *spec, Group **ret, Refusal *ret_refusal) {
        _cleanup_free_ char *parent_path = NULL;
        Group *parent, *g;
        const char *slash;
        uint64_t bw;
        int k;

        if (!group_path_valid(path) || strcmp(path, "/") == 0)
                return refuse(ret_refusal, ADMIT_BAD_GROUP_NAME, path);
        if (tree_find_group(t, path))
                return refuse(ret_refusal, ADMIT_GROUP_EXISTS, path);

        slash = strrchr(path, '/');
        if (slash) {
                parent_path = strndup(path, (size_t) (slash - path));
                if (!parent_path)
                        return -ENOMEM;
                parent = tree_find_group(t, parent_path);
                if (!parent)
                        return refuse(ret_refusal, ADMIT_NO_SUCH_GROUP, path);
        } else
                parent = t->root;

        k = admission_group_bandwidth(spec->runtime, spec->period, &bw, ret_refusal);
        if (k != 0)
                return k;
        if (!group_has_room(t, parent, 0, bw))
                return group_refuse_budget(t, parent, bw, ret_refusal);

        if (hashmap_reserve(&t->groups, t->groups.n_items + 1) < 0)
                return -ENOMEM;
        g = calloc(1, sizeof(Group));
        if (!g)
                return -ENOMEM;
        g->path = path_join(parent, slash ? slash + 1 : path);
        if (!g->path)
                return group_free(g), -ENOMEM;
        if (spec->users) {
                g->users = strv_copy(spec->users);
                if (!g->users)
                        return group_free(g), -ENOMEM;
                g->own_users = true;
        } else if (parent->users) {
                g->users = strv_copy(parent->users);
                if (!g->users)
                        return group_free(g), -ENOMEM;
        }
        if (spec->cgroup) {
                g->cgroup = strdup(spec->cgroup);
                if (!g->cgroup)
                        return group_free(g), -ENOMEM;
        }
        slash = strrchr(g->path, '/');
        g->name = slash ? slash + 1 : g->path;
        g->parent = parent;
        g->depth = parent->depth + 1;
        g->runtime = spec->runtime;
        g->period = spec->period;
        g->bw = bw;
        g->fork = spec->fork == _FORK_POLICY_UNSET ? parent->fork : spec->fork;
        g->threads = spec->threads == _FORK_POLICY_UNSET ? parent->threads : spec->threads;
        g->min_split_runtime = spec->min_split_runtime == 0 ? parent->min_split_runtime
                                                            : MAX(spec->min_split_runtime, DL_RUNTIME_MIN);
        g->reclaim = spec->reclaim == RECLAIM_INHERIT ? parent->reclaim : spec->reclaim == RECLAIM_ON;
        g->dynamic = spec->dynamic;

        (void) groups_index_add(t, g); /* reserved above: cannot fail */
        group_link_child(parent, g);
        parent->allocated += bw;
        t->n_groups++;
        if (ret)
                *ret = g;
        return 0;
}

int group_set_bandwidth(Tree *t, Group *g, uint64_t runtime, uint64_t period, Refusal *ret_refusal) {
        uint64_t bw;
        int k;

        if (g == t->root)
                return refuse(ret_refusal, ADMIT_IS_ROOT, g->path);
        k = admission_group_bandwidth(runtime, period, &bw, ret_refusal);
        if (k != 0)
                return k;
        if (bw < g->allocated) {
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_BELOW_ALLOCATED, .name = g->path,
                                                   .allocated_bw = g->allocated, .size_bw = bw };
                return ADMIT_BELOW_ALLOCATED;
        }
        if (bw > g->bw && !group_has_room(t, g->parent, g->bw, bw))
                return group_refuse_budget(t, g->parent, bw - g->bw, ret_refusal);

        g->parent->allocated = g->parent->allocated - g->bw + bw;
        g->runtime = runtime;
        g->period = period;
        g->bw = bw;
        return 0;
}

int group_remove(Tree *t, Group *g, Refusal *ret_refusal) {
        if (g == t->root)
                return refuse(ret_refusal, ADMIT_IS_ROOT, g->path);
        if (g->first_child || g->first_reservation || g->n_held) {
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_GROUP_NOT_EMPTY, .name = g->path,
                                                   .n_groups = g->n_children, .n_reservations = g->n_reservations,
                                                   .n_held = g->n_held };
                return ADMIT_GROUP_NOT_EMPTY;
        }

        groups_index_remove(t, g);
        group_unlink_child(g->parent, g);
        g->parent->allocated -= g->bw;
        t->n_groups--;
        group_free(g);
        return 0;
}

int group_hold(Tree *t, Group *g, uint64_t bw, Refusal *ret_refusal) {
        if (bw > BW_UNIT) {
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_ABOVE_ONE_CPU, .name = g->path, .need_bw = bw };
                return ADMIT_ABOVE_ONE_CPU;
        }
        if (!group_has_room(t, g, 0, bw))
                return group_refuse_budget(t, g, bw, ret_refusal);
        g->allocated += bw;
        g->held += bw;
        g->n_held++;
        return 0;
}

void group_unhold(Tree *t, Group *g, uint64_t bw) {
        (void) t;
        if (g->n_held == 0 || bw > g->held)
                return; /* never held: nothing to give back */
        g->allocated -= bw;
        g->held -= bw;
        g->n_held--;
}

/* --- per-user usage --- */

static uint64_t uid_key(uint32_t uid) {
        return (uint64_t) uid + 1;
}

UserUsage tree_user_usage(const Tree *t, uint32_t uid) {
        const UserUsage *u = hashmap_get(&t->by_uid, uid_key(uid));

        return u ? *u : (UserUsage) { .uid = uid };
}

int user_limits_check(const Tree *t, uint32_t uid, const UserLimits *limits, uint64_t add_bw, size_t add_n,
                      Refusal *ret_refusal) {
        UserUsage u = tree_user_usage(t, uid);
        uint64_t bw;

        if (add_n > 0 && limits->reservations != UINT64_MAX && (uint64_t) u.n + add_n > limits->reservations) {
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_LIMIT_EXCEEDED, .limit = "reservations",
                                                   .held_count = u.n, .need_count = add_n,
                                                   .limit_count = limits->reservations };
                return ADMIT_LIMIT_EXCEEDED;
        }
        if (add_bw > 0 && limits->bandwidth != UINT64_MAX &&
            (__builtin_add_overflow(u.bw, add_bw, &bw) || bw > limits->bandwidth)) {
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_LIMIT_EXCEEDED, .limit = "bandwidth",
                                                   .held_bw = u.bw, .need_bw = add_bw, .limit_bw = limits->bandwidth };
                return ADMIT_LIMIT_EXCEEDED;
        }
        return 0;
}

/* Charge (or with negative n, credit) uid. The entry is made before the books change (so this
 * cannot fail once they do: see usage_reserve) and dropped when it holds nothing. */
static int usage_reserve(Tree *t, uint32_t uid) {
        UserUsage *u;

        if (hashmap_get(&t->by_uid, uid_key(uid)))
                return 0;
        u = calloc(1, sizeof(UserUsage));
        if (!u)
                return -ENOMEM;
        u->uid = uid;
        if (hashmap_put(&t->by_uid, uid_key(uid), u) < 0) {
                free(u);
                return -ENOMEM;
        }
        return 0;
}

static void usage_add(Tree *t, uint32_t uid, int n, uint64_t add_bw, uint64_t sub_bw) {
        UserUsage *u = hashmap_get(&t->by_uid, uid_key(uid));

        if (!u)
                return; /* reserved beforehand: cannot happen */
        if (n < 0)
                u->n -= (size_t) -n;
        else
                u->n += (size_t) n;
        u->bw = u->bw + add_bw - sub_bw;
        if (u->n == 0) {
                hashmap_remove(&t->by_uid, uid_key(uid));
                free(u);
        }
}

/* --- reservations --- */

Reservation *tree_find_reservation(const Tree *t, uint64_t id) {
        return hashmap_get(&t->by_id, id);
}

/* Index keys must be non-zero: pids and tids are, but shift them anyway so 0 maps to something. */
static uint64_t key_of(uint32_t v) {
        return (uint64_t) v + 1;
}

Reservation *tree_find_thread(const Tree *t, uint32_t tid) {
        return hashmap_get(&t->by_tid, key_of(tid));
}

Reservation *tree_find_process(const Tree *t, uint32_t pid) {
        return hashmap_get(&t->by_pid, key_of(pid));
}

Reservation *tree_thread_donor(const Tree *t, uint32_t pid) {
        Reservation *best = NULL;

        for (Reservation *r = tree_find_process(t, pid); r; r = r->proc_next)
                if (!best || r->params.runtime > best->params.runtime ||
                    (r->params.runtime == best->params.runtime && r->id < best->id))
                        best = r;
        return best;
}

Reservation *reservation_next(const Tree *t, const Reservation *r) {
        const Group *g;

        if (r && r->group_next)
                return r->group_next;
        for (g = r ? group_next_preorder(r->group) : t->root; g; g = group_next_preorder(g))
                if (g->first_reservation)
                        return g->first_reservation;
        return NULL;
}

static int indexes_reserve(Tree *t, uint32_t uid) {
        if (usage_reserve(t, uid) < 0 || hashmap_reserve(&t->by_id, t->n_reservations + 1) < 0 ||
            hashmap_reserve(&t->by_tid, t->n_reservations + 1) < 0 ||
            hashmap_reserve(&t->by_pid, t->n_reservations + 1) < 0)
                return -ENOMEM;
        return 0;
}

/* Link a fully built reservation into its group and the indexes (reserved beforehand). */
static void reservation_link(Tree *t, Reservation *r) {
        Group *g = r->group;

        r->group_prev = g->last_reservation;
        if (g->last_reservation)
                g->last_reservation->group_next = r;
        else
                g->first_reservation = r;
        g->last_reservation = r;
        g->n_reservations++;
        g->allocated += r->bw;
        usage_add(t, r->uid, +1, r->bw, 0);

        (void) hashmap_put(&t->by_id, r->id, r);
        (void) hashmap_put(&t->by_tid, key_of(r->tid), r);
        /* Append to the process chain so that it stays in admission order. */
        Reservation *head = tree_find_process(t, r->pid);
        if (!head)
                (void) hashmap_put(&t->by_pid, key_of(r->pid), r);
        else {
                while (head->proc_next)
                        head = head->proc_next;
                head->proc_next = r;
        }
        if (r->id >= t->next_id)
                t->next_id = r->id + 1;
        t->n_reservations++;
}

static void reservation_unlink(Tree *t, Reservation *r) {
        Group *g = r->group;

        if (r->group_prev)
                r->group_prev->group_next = r->group_next;
        else
                g->first_reservation = r->group_next;
        if (r->group_next)
                r->group_next->group_prev = r->group_prev;
        else
                g->last_reservation = r->group_prev;
        g->n_reservations--;
        g->allocated -= r->bw;
        usage_add(t, r->uid, -1, 0, r->bw);

        hashmap_remove(&t->by_id, r->id);
        hashmap_remove(&t->by_tid, key_of(r->tid));
        Reservation *head = tree_find_process(t, r->pid);
        if (head == r) {
                if (r->proc_next)
                        (void) hashmap_put(&t->by_pid, key_of(r->pid), r->proc_next); /* replaces */
                else
                        hashmap_remove(&t->by_pid, key_of(r->pid));
        } else
                for (; head; head = head->proc_next)
                        if (head->proc_next == r) {
                                head->proc_next = r->proc_next;
                                break;
                        }
        t->n_reservations--;
}

/* Check params and compute their bandwidth (the admission module's rule); a refusal or 0. */
static int params_bw(const Tree *t, DlParams *p, uint64_t *ret_bw, Refusal *ret_refusal) {
        return admission_params(&t->limits, p, ret_bw, ret_refusal);
}

int reservation_admit(Tree *t, Group *g, const ReservationSpec *spec, Reservation **ret, Refusal *ret_refusal) {
        DlParams p = spec->params;
        Reservation *r, *other;
        uint64_t bw;
        int k;

        k = params_bw(t, &p, &bw, ret_refusal);
        if (k != 0)
                return k;
        other = tree_find_thread(t, spec->tid);
        if (other)
                return refuse_admitted(ret_refusal, g, other);
        /* UINT64_MAX is never an id: next_id must stay above every id without wrapping. */
        if (spec->id == UINT64_MAX || (spec->id != 0 && tree_find_reservation(t, spec->id))) {
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_ID_IN_USE, .name = g->path, .id = spec->id };
                return ADMIT_ID_IN_USE;
        }
        if (spec->id == 0 && t->next_id == UINT64_MAX)
                return -EOVERFLOW; /* after 2^64 admissions; keeps ids unique forever */
        if (!group_has_room(t, g, 0, bw))
                return group_refuse_budget(t, g, bw, ret_refusal);

        if (indexes_reserve(t, spec->uid) < 0)
                return -ENOMEM;
        r = calloc(1, sizeof(Reservation));
        if (!r)
                return -ENOMEM;
        *r = (Reservation) {
                .id = spec->id != 0 ? spec->id : t->next_id,
                .group = g,
                .pid = spec->pid,
                .tid = spec->tid,
                .uid = spec->uid,
                .identity = spec->identity,
                .params = p,
                .bw = bw,
                .flags = spec->flags,
                .donor = spec->donor,
                .donated = spec->donor ? spec->donated : 0,
                .partitioned = spec->partitioned,
                .cpu = spec->partitioned ? spec->cpu : 0,
        };
        reservation_link(t, r);
        if (ret)
                *ret = r;
        return 0;
}

void reservation_release(Tree *t, Reservation *r, ReleaseEffect *ret_effect) {
        ReleaseEffect e = {};
        Reservation *d = r->donor ? tree_find_reservation(t, r->donor) : NULL;
        Group *g = r->group;

        reservation_unlink(t, r);

        /* The donor rule (see tree.h). */
        if (d && d->group == g && d->params.period == r->params.period) {
                /* Give back what was given, not what an update may have added since. */
                uint64_t back = r->donated ? MIN(r->donated, r->params.runtime) : r->params.runtime, runtime, bw;
                if (!__builtin_add_overflow(d->params.runtime, back, &runtime) &&
                    runtime <= d->params.deadline && bw_of(runtime, d->params.period, &bw) == 0 &&
                    group_has_room(t, g, d->bw, bw)) {
                        e.donor = d;
                        e.donor_old = d->params;
                        g->allocated = g->allocated - d->bw + bw;
                        usage_add(t, d->uid, 0, bw, d->bw);
                        d->params.runtime = runtime;
                        d->bw = bw;
                }
        }
        free(r);
        if (ret_effect)
                *ret_effect = e;
}

int reservation_update(Tree *t, Reservation *r, const DlParams *params, Refusal *ret_refusal) {
        DlParams p = *params;
        uint64_t bw;
        int k;

        k = params_bw(t, &p, &bw, ret_refusal);
        if (k != 0)
                return k;
        if (bw > r->bw && !group_has_room(t, r->group, r->bw, bw))
                return group_refuse_budget(t, r->group, bw, ret_refusal);
        r->group->allocated = r->group->allocated - r->bw + bw;
        usage_add(t, r->uid, 0, bw, r->bw);
        r->params = p;
        r->bw = bw;
        return 0;
}

int reservation_split(Tree *t, Reservation *donor, bool is_thread, uint32_t child_pid, uint32_t child_tid,
                      uint64_t child_identity, Reservation **ret_child, DlParams *ret_donor_old,
                      Refusal *ret_refusal) {
        return reservation_split_as(t, donor, is_thread ? donor->group->threads : donor->group->fork, child_pid,
                                    child_tid, child_identity, ret_child, ret_donor_old, ret_refusal);
}

int reservation_split_as(Tree *t, Reservation *donor, ForkPolicy policy, uint32_t child_pid, uint32_t child_tid,
                         uint64_t child_identity, Reservation **ret_child, DlParams *ret_donor_old,
                         Refusal *ret_refusal) {
        Group *g = donor->group;
        DlParams old = donor->params, half;
        uint64_t donor_bw, child_bw;
        Reservation *c, *other;

        if (policy == FORK_NONE)
                return refuse(ret_refusal, ADMIT_FORK_NONE, g->path);
        other = tree_find_thread(t, child_tid);
        if (other)
                return refuse_admitted(ret_refusal, g, other);
        if (t->next_id == UINT64_MAX)
                return -EOVERFLOW;
        if (indexes_reserve(t, donor->uid) < 0)
                return -ENOMEM;
        c = calloc(1, sizeof(Reservation));
        if (!c)
                return -ENOMEM;
        *c = (Reservation) {
                .id = t->next_id,
                .group = g,
                .pid = child_pid,
                .tid = child_tid,
                .uid = donor->uid,
                .identity = child_identity,
                .params = donor->params,
                .bw = donor->bw,
                .flags = donor->flags,
                .partitioned = donor->partitioned, /* the child runs where its parent runs (its cpuset) */
                .cpu = donor->cpu,
        };

        if (policy == FORK_INHERIT && group_has_room(t, g, 0, donor->bw)) {
                reservation_link(t, c);
                goto done;
        }

        half = donor->params;
        half.runtime = donor->params.runtime / 2;
        if (half.runtime < g->min_split_runtime) {
                free(c);
                if (ret_refusal)
                        *ret_refusal = (Refusal) { .outcome = ADMIT_SPLIT_TOO_SMALL, .name = g->path,
                                                   .split_runtime = half.runtime, .min_runtime = g->min_split_runtime };
                return ADMIT_SPLIT_TOO_SMALL;
        }
        /* Both halves keep runtime <= deadline <= period and a period within limits. */
        (void) bw_of(half.runtime, half.period, &child_bw);
        (void) bw_of(donor->params.runtime - half.runtime, half.period, &donor_bw);

        g->allocated = g->allocated - donor->bw + donor_bw;
        usage_add(t, donor->uid, 0, donor_bw, donor->bw);
        donor->params.runtime -= half.runtime;
        donor->bw = donor_bw;
        c->params = half;
        c->bw = child_bw;
        c->donor = donor->id;
        c->donated = half.runtime;
        reservation_link(t, c);
done:
        if (ret_child)
                *ret_child = c;
        if (ret_donor_old)
                *ret_donor_old = old;
        return 0;
}

size_t tree_memory(const Tree *t) {
        size_t m = sizeof(Tree);

        for (const Group *g = t->root; g; g = group_next_preorder(g)) {
                m += sizeof(Group) + strlen(g->path) + 1 + (g->cgroup ? strlen(g->cgroup) + 1 : 0);
                for (char **u = g->users; u && *u; u++)
                        m += sizeof(char *) + strlen(*u) + 1;
        }
        m += t->n_reservations * sizeof(Reservation);
        m += hashmap_memory(&t->groups) + hashmap_memory(&t->by_id) + hashmap_memory(&t->by_tid) +
             hashmap_memory(&t->by_pid) + hashmap_memory(&t->by_uid) + t->by_uid.n_items * sizeof(UserUsage);
        return m;
}
