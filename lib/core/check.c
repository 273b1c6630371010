/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The consistency checker: recomputes every sum and every index from scratch and compares them
 * with the books. O(groups + reservations); for tests, and for the daemon after a resync. */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/bandwidth.h"
#include "basic/macro.h"
#include "core/tree.h"

_printf_(3, 4) static int fail(char *buf, size_t size, const char *fmt, ...) {
        va_list ap;

        if (buf && size > 0) {
                va_start(ap, fmt);
                vsnprintf(buf, size, fmt, ap);
                va_end(ap);
        }
        return -EUCLEAN;
}

static int check_reservation(const Tree *t, const Group *g, const Reservation *r, char *buf, size_t size) {
        DlParams p = r->params;
        uint64_t bw;
        bool in_chain = false;

        if (r->group != g)
                return fail(buf, size, "reservation %" PRIu64 " in %s points to group %s", r->id, g->path,
                            r->group ? r->group->path : "(null)");
        if (dl_params_check(&p, &t->limits) != PARAMS_OK || p.deadline != r->params.deadline)
                return fail(buf, size, "reservation %" PRIu64 " has invalid parameters", r->id);
        if (bw_of(r->params.runtime, r->params.period, &bw) < 0 || bw != r->bw)
                return fail(buf, size, "reservation %" PRIu64 ": bw %" PRIu64 " but its parameters give %" PRIu64,
                            r->id, r->bw, bw);
        if (r->id == 0 || r->id >= t->next_id)
                return fail(buf, size, "reservation id %" PRIu64 " outside 1..%" PRIu64, r->id, t->next_id - 1);
        if (tree_find_reservation(t, r->id) != r)
                return fail(buf, size, "reservation %" PRIu64 " missing from the id index", r->id);
        if (tree_find_thread(t, r->tid) != r)
                return fail(buf, size, "reservation %" PRIu64 " missing from the thread index", r->id);
        for (const Reservation *i = tree_find_process(t, r->pid); i; i = i->proc_next) {
                if (i->pid != r->pid)
                        return fail(buf, size, "process chain of %" PRIu32 " holds pid %" PRIu32, r->pid, i->pid);
                if (i == r)
                        in_chain = true;
        }
        if (!in_chain)
                return fail(buf, size, "reservation %" PRIu64 " missing from the chain of process %" PRIu32, r->id,
                            r->pid);
        return 0;
}

/* Recompute what each owner holds and compare with by_uid. */
static int check_usage(const Tree *t, char *buf, size_t size) {
        Hashmap seen = HASHMAP_INIT;
        UserUsage *sums = calloc(t->n_reservations + 1, sizeof(UserUsage));
        size_t n_users = 0;
        int k = 0;

        if (!sums)
                return -ENOMEM;
        for (const Reservation *r = reservation_next(t, NULL); r; r = reservation_next(t, r)) {
                uintptr_t i = (uintptr_t) hashmap_get(&seen, (uint64_t) r->uid + 1);
                if (i == 0) {
                        if (hashmap_put(&seen, (uint64_t) r->uid + 1, (void *) (uintptr_t) (n_users + 1)) < 0) {
                                k = -ENOMEM;
                                goto finish;
                        }
                        sums[n_users].uid = r->uid;
                        i = ++n_users;
                }
                sums[i - 1].n++;
                sums[i - 1].bw += r->bw;
        }
        if (n_users != t->by_uid.n_items) {
                k = fail(buf, size, "%zu owners hold reservations, usage index has %zu", n_users, t->by_uid.n_items);
                goto finish;
        }
        for (size_t i = 0; i < n_users; i++) {
                UserUsage u = tree_user_usage(t, sums[i].uid);
                if (u.n != sums[i].n || u.bw != sums[i].bw) {
                        k = fail(buf, size, "uid %" PRIu32 ": usage says %zu reservations / %" PRIu64 ", they sum to %zu / %" PRIu64,
                                 sums[i].uid, u.n, u.bw, sums[i].n, sums[i].bw);
                        goto finish;
                }
        }
finish:
        hashmap_done(&seen);
        free(sums);
        return k;
}

int tree_check(const Tree *t, char *buf, size_t size) {
        size_t n_groups = 0, n_res = 0, n_pids = 0;
        int k;

        if (!t->root || t->root->parent || strcmp(t->root->path, "/") != 0)
                return fail(buf, size, "the root is malformed");
        if (t->root->bw != t->capacity)
                return fail(buf, size, "root bandwidth %" PRIu64 " differs from capacity %" PRIu64, t->root->bw,
                            t->capacity);

        for (const Group *g = t->root; g; g = group_next_preorder(g)) {
                uint64_t sum = g == t->root ? t->unmanaged : 0, bw;
                unsigned n_children = 0;
                size_t n_reservations = 0;
                const Reservation *prev = NULL;

                n_groups++;
                if (tree_find_group(t, g->path) != g)
                        return fail(buf, size, "group %s missing from the path index", g->path);
                if (g != t->root) {
                        if (!group_path_valid(g->path))
                                return fail(buf, size, "group %s has an invalid path", g->path);
                        if (g->depth != g->parent->depth + 1)
                                return fail(buf, size, "group %s has depth %u", g->path, g->depth);
                        if (bw_of(g->runtime, g->period, &bw) < 0 || bw != g->bw)
                                return fail(buf, size, "group %s: bw %" PRIu64 " but runtime/period give %" PRIu64,
                                            g->path, g->bw, bw);
                }
                for (const Group *c = g->first_child; c; c = c->next_sibling) {
                        if (c->parent != g)
                                return fail(buf, size, "group %s has the wrong parent", c->path);
                        if (c->next_sibling && strcmp(c->name, c->next_sibling->name) >= 0)
                                return fail(buf, size, "children of %s are not sorted", g->path);
                        if (__builtin_add_overflow(sum, c->bw, &sum))
                                return fail(buf, size, "group %s: children overflow", g->path);
                        n_children++;
                }
                for (const Reservation *r = g->first_reservation; r; prev = r, r = r->group_next) {
                        if (r->group_prev != prev)
                                return fail(buf, size, "group %s: reservation list is broken", g->path);
                        k = check_reservation(t, g, r, buf, size);
                        if (k < 0)
                                return k;
                        if (__builtin_add_overflow(sum, r->bw, &sum))
                                return fail(buf, size, "group %s: reservations overflow", g->path);
                        if (tree_find_process(t, r->pid) == r)
                                n_pids++;
                        n_reservations++;
                }
                if (__builtin_add_overflow(sum, g->held, &sum))
                        return fail(buf, size, "group %s: held bandwidth overflows", g->path);
                if ((g->held == 0) != (g->n_held == 0))
                        return fail(buf, size, "group %s: held %" PRIu64 " for %zu admissions", g->path, g->held,
                                    g->n_held);
                if (g->last_reservation != prev)
                        return fail(buf, size, "group %s: last reservation is wrong", g->path);
                if (sum != g->allocated)
                        return fail(buf, size, "group %s: allocated %" PRIu64 " but children sum to %" PRIu64, g->path,
                                    g->allocated, sum);
                if (g != t->root && g->allocated > g->bw)
                        return fail(buf, size, "group %s: allocated %" PRIu64 " exceeds its bandwidth %" PRIu64,
                                    g->path, g->allocated, g->bw);
                if (n_children != g->n_children || n_reservations != g->n_reservations)
                        return fail(buf, size, "group %s: counts are wrong", g->path);
                n_res += n_reservations;
        }

        if (n_groups != t->n_groups)
                return fail(buf, size, "%zu groups found, books say %zu", n_groups, t->n_groups);
        if (n_res != t->n_reservations || n_res != t->by_id.n_items || n_res != t->by_tid.n_items)
                return fail(buf, size, "%zu reservations found, books say %zu (indexes %zu, %zu)", n_res,
                            t->n_reservations, t->by_id.n_items, t->by_tid.n_items);
        if (n_pids != t->by_pid.n_items)
                return fail(buf, size, "%zu processes found, index has %zu", n_pids, t->by_pid.n_items);
        return check_usage(t, buf, size);
}
