/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The placement room: the partitions of the configuration (made at start through the cpuset adapter)
 * and, for a group whose placement is partitioned, the CPU each reservation runs on. The decision is
 * the core's (core/placement.h: the exact per-CPU EDF test, best fit); this room builds each CPU's
 * task set from the books, moves the thread into its CPU's partition, and waits until it has run
 * there (the kernel admits a thread against the root domain of the CPU it last ran on).
 *
 * Each partition used for partitioned placement is one CPU: a partition of several CPUs is one root
 * domain where the kernel runs global EDF again, which is what partitioned placement is there to
 * avoid; such a partition is refused for it at start, by name. */

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/proc.h"
#include "basic/strv.h"
#include "core/bandwidth.h"
#include "core/duration.h"
#include "core/placement.h"
#include "cpuset.h"
#include "log.h"
#include "manager-bus.h"
#include "manager-internal.h"
#include "manager-plan.h"

/* How long the room waits for a moved thread to run on its new CPU. */
#define PLACE_RUN_WAIT_NSEC (200 * NSEC_PER_MSEC)
/* Room by one move: how long a thread to be moved may take to fall asleep, and how many moves the
 * kernel may refuse for one request before it is refused. */
#define PLACE_ROOM_SLEEP_WAIT_NSEC (20 * NSEC_PER_MSEC)
#define PLACE_ROOM_ATTEMPTS 4u

static void set_unavailable(Manager *m, const char *fmt, ...) _printf_(2, 3);
static void set_unavailable(Manager *m, const char *fmt, ...) {
        va_list ap;
        char *s = NULL;

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        free(m->place.unavailable);
        m->place.unavailable = s;
}

static bool config_wants_partitioned(const Config *c) {
        if (c->placement == CONF_PLACEMENT_PARTITIONED)
                return true;
        /* A group below may say so: walk the configuration's groups. */
        const ConfGroup *stack[CONF_NESTING_MAX * 4];
        size_t n = 0;

        for (size_t i = 0; i < c->n_groups && n < ELEMENTSOF(stack); i++)
                stack[n++] = &c->groups[i];
        while (n > 0) {
                const ConfGroup *g = stack[--n];
                if (g->placement == CONF_PLACEMENT_PARTITIONED)
                        return true;
                for (size_t i = 0; i < g->n_children && n < ELEMENTSOF(stack); i++)
                        stack[n++] = &g->children[i];
        }
        return false;
}

/* What one CPU admits for deadline tasks (BW units), the fair server's share already taken off, and
 * the server as the demand test sees it. */
static int cpu_supply(Manager *m, EdfSupply *ret) {
        const KernelCapacity *kc = capacity_kernel(m->capacity);
        DlParams server = EDF_FAIR_SERVER_DEFAULT;
        uint64_t per_cpu_server = kc->ncpus > 0 ? kc->fair_server / kc->ncpus : 0;

        if (per_cpu_server == 0)
                return edf_supply_from_kernel(kc->rt_runtime_us, kc->rt_period_us, NULL, ret);
        /* The server's runtime per 1 s from its measured or implied share (50 ms by default). */
        server.runtime = (per_cpu_server * server.period) >> BW_SHIFT;
        if (server.runtime < DL_RUNTIME_MIN)
                server.runtime = DL_RUNTIME_MIN;
        return edf_supply_from_kernel(kc->rt_runtime_us, kc->rt_period_us, &server, ret);
}

void place_setup(Manager *m) {
        const Config *c = m->config;
        _cleanup_free_ CpusetSpec *specs = NULL;
        char **errors = NULL, **notes = NULL, *error = NULL;
        EdfSupply supply;
        int r;

        m->place.active = false;
        m->place.n_cpus = 0;
        if (!config_wants_partitioned(c) && c->n_partitions == 0) {
                set_unavailable(m, "the configuration names no partitions");
                /* Leftovers of an earlier configuration (a crash, a changed file) are repaired. */
                if (cpusets_open(&m->place.cpusets, m->place.v1_mount, m->place.v2_mount) == 0 &&
                    cpusets_backend(m->place.cpusets) != CPUSET_BACKEND_NONE) {
                        r = cpusets_apply(m->place.cpusets, NULL, 0, UINT64_MAX, &error, NULL);
                        if (r < 0)
                                log_warning("Cannot remove the partitions an earlier edfd left: %s", error ?: strerror(-r));
                        free(error);
                }
                return;
        }
        r = cpusets_open(&m->place.cpusets, m->place.v1_mount, m->place.v2_mount);
        if (r < 0) {
                set_unavailable(m, "the cpuset adapter cannot start: %s", strerror(-r));
                log_error("Partitions: %s", m->place.unavailable);
                return;
        }
        if (cpusets_unavailable(m->place.cpusets)) {
                set_unavailable(m, "no partition can be made here: %s", cpusets_unavailable(m->place.cpusets));
                log_error("Partitions: %s; partitioned requests will be refused", m->place.unavailable);
                return;
        }
        if (c->n_partitions == 0) {
                set_unavailable(m, "placement is partitioned but the configuration names no partitions");
                log_error("%s", m->place.unavailable);
                return;
        }
        specs = calloc(c->n_partitions, sizeof(*specs));
        m->place.cpus = calloc(c->n_partitions, sizeof(*m->place.cpus));
        if (!specs || !m->place.cpus) {
                set_unavailable(m, "out of memory");
                return;
        }
        for (size_t i = 0; i < c->n_partitions; i++) {
                const ConfPartition *p = &c->partitions[i];
                if (cpu_mask_count(&p->cpus) != 1) {
                        char list[256];
                        set_unavailable(m, "partition %s has CPUs %s: partitioned placement needs partitions of one CPU each "
                                        "(several CPUs are one root domain, where the kernel runs global EDF)",
                                        p->name, cpu_mask_format(&p->cpus, list, sizeof list));
                        log_error("%s", m->place.unavailable);
                        return;
                }
                specs[i] = (CpusetSpec) { .name = p->name, .cpus = p->cpus };
                m->place.cpus[i].cpu = (uint32_t) cpu_mask_first(&p->cpus);
                snprintf(m->place.cpus[i].name, sizeof m->place.cpus[i].name, "%s", p->name);
        }
        /* v2: CPUs of edfd-partitions' own for the other threads of the processes it moves in. */
        if (!cpu_mask_empty(&c->partition_shared) && cpusets_backend(m->place.cpusets) != CPUSET_BACKEND_V2)
                log_notice("Partitions: partition-shared-cpus is ignored on %s (it moves threads alone)",
                           cpuset_backend_to_string(cpusets_backend(m->place.cpusets)));
        cpusets_set_shared(m->place.cpusets, &c->partition_shared);
        /* Its notes come again from cpusets_apply(), which says them. */
        r = cpusets_check(m->place.cpusets, specs, c->n_partitions, &errors, &notes);
        if (r < 0) {
                set_unavailable(m, "%s", errors && errors[0] ? errors[0] : strerror(-r));
                for (char **l = errors; l && *l; l++)
                        log_error("Partitions: %s", *l);
                strv_free(errors);
                strv_free(notes);
                return;
        }
        strv_free(errors);
        strv_free(notes);
        notes = NULL;
        r = cpu_supply(m, &supply);
        if (r < 0) {
                set_unavailable(m, "the per-CPU capacity cannot be computed: %s", strerror(-r));
                return;
        }
        r = cpusets_apply(m->place.cpusets, specs, c->n_partitions,
                          supply.cap_bw == UINT64_MAX ? UINT64_MAX : supply.cap_bw, &error, &notes);
        for (char **l = notes; l && *l; l++)
                log_notice("Partitions: %s", *l);
        strv_free(notes);
        if (r < 0) {
                /* Under the shipped unit the cgroup tree is read-only and its root not writable: the
                 * partitions need the drop-in that opens them (units/edfd-partitions.conf). */
                const char *hint = (r == -EROFS || r == -EACCES || r == -EPERM) && getenv("INVOCATION_ID")
                                           ? " (under systemd, partitions need the cgroup tree writable: install "
                                             EDFD_PARTITIONS_DROPIN " as /etc/systemd/system/edfd.service.d/"
                                             "partitions.conf and restart edfd)"
                                           : "";
                set_unavailable(m, "the partitions cannot be made: %s%s", error ?: strerror(-r), hint);
                log_error("%s; partitioned requests will be refused", m->place.unavailable);
                free(error);
                return;
        }
        m->place.n_cpus = c->n_partitions;
        m->place.active = true;
        CpuMask rest = *cpusets_online(m->place.cpusets);
        for (size_t i = 0; i < c->n_partitions; i++)
                cpu_mask_andnot(&rest, &c->partitions[i].cpus);
        if (cpusets_backend(m->place.cpusets) == CPUSET_BACKEND_V2) {
                cpu_mask_andnot(&rest, &c->partition_shared);
                if (cpu_mask_empty(&c->partition_shared))
                        /* Seen in the VM on 6.1 (docs/design.md): rebuild_root_domains() skips a cpuset
                         * without effective CPUs and its children. */
                        log_warning("Partitions: %s keeps no CPU of its own (partition-shared-cpus: is not set): where "
                                    "the kernel's root-domain rebuild skips a cpuset without CPUs (seen on 6.1), a "
                                    "rebuild (a cpuset change, CPU hotplug) stops counting the partitions' deadline "
                                    "threads, and the kernel may then let a partition's CPU go offline under them "
                                    "(edfd's own books still refuse what does not fit)",
                                    CPUSET_DIR);
        }
        m->place.global_none = cpu_mask_empty(&rest);
        free(m->place.unavailable);
        m->place.unavailable = NULL;
        log_info("Partitions: %zu made (%s backend); partitioned groups place each reservation on one of their CPUs",
                 c->n_partitions, cpuset_backend_to_string(cpusets_backend(m->place.cpusets)));
}

void place_free(Manager *m) {
        free(m->place.repin_warned);
        m->place.repin_warned = NULL;
        m->place.n_repin_warned = 0;
        m->place.poll_timer = sd_event_source_disable_unref(m->place.poll_timer);
        m->place.cpusets = cpusets_free(m->place.cpusets);
        free(m->place.cpus);
        m->place.cpus = NULL;
        free(m->place.unavailable);
        m->place.unavailable = NULL;
}

bool place_partitioned(const Manager *m, const Group *g) {
        return m->config && conf_placement_of(m->config, g->path) == CONF_PLACEMENT_PARTITIONED;
}

bool manager_admission_moves_process(Manager *m, const char *group) {
        const char *path = group && *group ? group : m->config && m->config->default_group ? m->config->default_group : "/";
        const Group *g = tree_find_group(m->tree, path);

        /* Where no partition is made the admission is refused, and moves nothing. */
        return g && place_partitioned(m, g) && m->place.active && m->place.cpusets &&
               cpusets_backend(m->place.cpusets) == CPUSET_BACKEND_V2;
}

const char *place_cpu_name(const Manager *m, uint32_t cpu) {
        for (size_t i = 0; i < m->place.n_cpus; i++)
                if (m->place.cpus[i].cpu == cpu)
                        return m->place.cpus[i].name;
        return NULL;
}

/* The task sets of the partitions' CPUs, from the books: arrays owned by the caller (free each
 * tasks array, then cpus). */
/* Each valid partition's CPU with the reservations placed there. ret_res, when not NULL, receives
 * for each CPU the reservations in the order of its tasks (freed with views_free()'s sets: one
 * allocation per CPU holds both). */
static int cpu_views_of(Manager *m, PlaceCpu **ret, DlParams ***ret_sets, Reservation ****ret_res, size_t *ret_n) {
        size_t n = m->place.n_cpus;
        PlaceCpu *cpus = calloc(n, sizeof(*cpus));
        DlParams **sets = calloc(n, sizeof(*sets));
        Reservation ***res_of = ret_res ? calloc(n, sizeof(*res_of)) : NULL;
        size_t *alloc = calloc(n, sizeof(*alloc));
        EdfSupply supply;
        int r;

        if (!cpus || !sets || !alloc || (ret_res && !res_of)) {
                r = -ENOMEM;
                goto fail;
        }
        r = cpu_supply(m, &supply);
        if (r < 0)
                goto fail;
        for (size_t i = 0; i < n; i++)
                cpus[i] = (PlaceCpu) { .id = m->place.cpus[i].cpu, .supply = supply };
        /* A partition the poll found invalid takes nothing: leave its CPU out (compacting). */
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
                if (!m->place.cpus[i].invalid)
                        cpus[k++] = cpus[i];
        n = k;
        for (Reservation *res = reservation_next(m->tree, NULL); res; res = reservation_next(m->tree, res)) {
                if (!res->partitioned)
                        continue;
                for (size_t i = 0; i < n; i++) {
                        if (cpus[i].id != res->cpu)
                                continue;
                        if (cpus[i].n_tasks == alloc[i]) {
                                size_t a = alloc[i] ? alloc[i] * 2 : 8;
                                DlParams *t = realloc(sets[i], a * sizeof(*t));
                                if (!t) {
                                        r = -ENOMEM;
                                        goto fail;
                                }
                                sets[i] = t;
                                if (res_of) {
                                        Reservation **q = reallocarray(res_of[i], a, sizeof(*q));
                                        if (!q) {
                                                r = -ENOMEM;
                                                goto fail;
                                        }
                                        res_of[i] = q;
                                }
                                alloc[i] = a;
                        }
                        if (res_of)
                                res_of[i][cpus[i].n_tasks] = res;
                        sets[i][cpus[i].n_tasks++] = res->params;
                        cpus[i].tasks = sets[i];
                        break;
                }
        }
        free(alloc);
        *ret = cpus;
        *ret_sets = sets;
        if (ret_res)
                *ret_res = res_of;
        *ret_n = n;
        return 0;
fail:
        for (size_t i = 0; sets && i < m->place.n_cpus; i++) {
                free(sets[i]);
                if (res_of)
                        free(res_of[i]);
        }
        free(sets);
        free(res_of);
        free(cpus);
        free(alloc);
        return r;
}

static int cpu_views(Manager *m, PlaceCpu **ret, DlParams ***ret_sets, size_t *ret_n) {
        return cpu_views_of(m, ret, ret_sets, NULL, ret_n);
}

static void views_free(const Manager *m, PlaceCpu *cpus, DlParams **sets) {
        for (size_t i = 0; sets && i < m->place.n_cpus; i++)
                free(sets[i]);
        free(sets);
        free(cpus);
}

/* The refusal of a partitioned request where no partition is made. Returns -1. */
static int refuse_unavailable(Manager *m, const Group *g, OpError *e) {
        op_fail(e, OP_REFUSED, "%s: placement is partitioned, but %s", g->path, m->place.unavailable ?: "no partition is made");
        e->refusal.outcome = ADMIT_OVER_BUDGET; /* an admission refused: OverBudget on the bus */
        return -1;
}

/* --- room by one move (core/placement.h, place_make_room()) --- */

static uint64_t mono_ns(void);

/* Wait until thread tid sleeps, at most PLACE_ROOM_SLEEP_WAIT_NSEC: moved while it sleeps, it wakes on
 * its new CPU under the kernel's wake-up rule (a deadline too close for its runtime left starts a new
 * period there), so it arrives as the sporadic task the new CPU's test counted. A job moved while it
 * runs would carry its deadline and runtime left across, which no test on the new CPU counted. */
static bool wait_asleep(uint32_t pid, uint32_t tid) {
        uint64_t until = mono_ns() + PLACE_ROOM_SLEEP_WAIT_NSEC;
        ProcStat st;

        for (;;) {
                if (proc_read_stat((pid_t) pid, (pid_t) tid, PROC_STAT_STATE, &st) < 0)
                        return false;
                if (st.state == 'S' || st.state == 'D')
                        return true;
                if (mono_ns() >= until)
                        return false;
                (void) nanosleep(&(struct timespec) { .tv_nsec = 200000 }, NULL);
        }
}

/* A reservation edfd may move for room: a partitioned thread of a real process (a dry run's
 * reservations have ids above 2^31 and no thread). */
static bool room_movable(const Reservation *res) {
        return res->tid > 0 && res->tid <= INT32_MAX;
}

/* Where no CPU takes p whole: move one placed reservation to another CPU where the exact test passes
 * with it, when p then passes on the CPU it left. The move is the kernel's cpuset move of a deadline
 * thread (admitted by the kernel in the destination root domain, or refused: then the next
 * candidate), made while the thread sleeps, journaled, logged and signalled (ReservationChanged,
 * reason "room"). Returns 0 with *ret_cpu, the CPU p may take now; -ENOSPC when no move makes room;
 * or an error. */
static int make_room(Manager *m, const Group *g, const DlParams *p, uint32_t *ret_cpu) {
        _cleanup_free_ bool *pins = NULL;
        PlaceCpu *cpus = NULL;
        DlParams **sets = NULL;
        Reservation ***res = NULL;
        size_t nv = 0, total = 0, tried = 0, refused = 0;
        int r;

        r = cpu_views_of(m, &cpus, &sets, &res, &nv);
        if (r < 0)
                return r;
        for (size_t i = 0; i < nv; i++)
                total += cpus[i].n_tasks;
        pins = calloc(total ? total : 1, sizeof(*pins));
        if (!pins) {
                r = -ENOMEM;
                goto finish;
        }
        for (size_t i = 0, k = 0; i < nv; k += cpus[i].n_tasks, i++) {
                for (size_t t = 0; t < cpus[i].n_tasks; t++)
                        pins[k + t] = !room_movable(res[i][t]);
                cpus[i].pinned = pins + k;
        }
        /* A candidate the kernel refuses (or that does not sleep in time) is pinned and the search
         * runs again: at most PLACE_ROOM_ATTEMPTS moves are tried for one request. */
        for (unsigned attempt = 0; attempt < PLACE_ROOM_ATTEMPTS; attempt++) {
                PlaceMove mv;
                size_t n_tries = 0;

                r = place_make_room(cpus, nv, p, PLACE_FIT_BEST, 0, &mv, &n_tries);
                tried += n_tries;
                if (r < 0)
                        break;
                Reservation *x = res[mv.from][mv.task];
                uint32_t from = cpus[mv.from].id, to = cpus[mv.to].id;
                const char *name = place_cpu_name(m, to);

                if (!wait_asleep(x->pid, x->tid))
                        r = -EBUSY;
                else
                        r = name ? cpusets_move_thread(m->place.cpusets, name, (pid_t) x->tid) : -ENOENT;
                if (r < 0) {
                        log_info("Room for %s: reservation %" PRIu64 " (thread %" PRIu32 ") could not move from cpu%" PRIu32
                                 " to cpu%" PRIu32 ": %s", g->path, x->id, x->tid, from, to,
                                 r == -EBUSY ? "it did not sleep in time, or the kernel refused" : strerror(-r));
                        ((bool *) cpus[mv.from].pinned)[mv.task] = true;
                        refused++;
                        continue;
                }
                x->cpu = to;
                if (record(m, false, x) < 0)
                        log_warning("Reservation %" PRIu64 " moved to cpu%" PRIu32 " but not recorded", x->id, to);
                log_notice("Reservation %" PRIu64 " (thread %" PRIu32 ") moved from cpu%" PRIu32 " to cpu%" PRIu32
                           " to make room for a request of %s that no CPU took whole (%zu candidates tried)",
                           x->id, x->tid, from, to, g->path, tried);
                manager_bus_emit_changed(m, x, "room");
                *ret_cpu = from;
                r = 0;
                goto finish;
        }
        if (r == 0 || (r == -ENOSPC && refused > 0))
                r = -ENOSPC;
finish:
        for (size_t i = 0; i < m->place.n_cpus && sets; i++)
                free(res ? res[i] : NULL);
        free(res);
        views_free(m, cpus, sets);
        return r;
}

int place_decide(Manager *m, const Group *g, const DlParams *p, const uint32_t *forced_cpu, bool *ret_partitioned,
                 uint32_t *ret_cpu, OpError *e) {
        _cleanup_free_ EdfVerdict *verdicts = NULL;
        PlaceCpu *cpus = NULL;
        DlParams **sets = NULL;
        size_t at, nv = 0;
        uint32_t at_cpu = 0;
        int r;

        *ret_partitioned = false;
        *ret_cpu = 0;
        if (!place_partitioned(m, g)) {
                if (!m->place.active || !m->place.global_none)
                        return 0;
                op_fail(e, OP_REFUSED, "%s: placement is global, but edfd's partitions take every CPU: none is left "
                        "for global placement (make the group partitioned, or leave a CPU out of the partitions)",
                        g->path);
                e->refusal.outcome = ADMIT_OVER_BUDGET;
                return -1;
        }
        if (!m->place.active)
                return refuse_unavailable(m, g, e);
        r = cpu_views(m, &cpus, &sets, &nv);
        if (r < 0)
                return op_errno(e, r, "placement");
        verdicts = calloc(m->place.n_cpus, sizeof(*verdicts));
        if (!verdicts)
                r = -ENOMEM;
        else if (forced_cpu) {
                /* A stage of a split: the CPU the split chose, checked again on its own. */
                r = -ENOSPC;
                for (at = 0; at < nv && cpus[at].id != *forced_cpu; at++)
                        ;
                if (at < nv) {
                        r = edf_check(cpus[at].tasks, cpus[at].n_tasks, p, 1, &cpus[at].supply, &verdicts[at]);
                        if (r == 0 && !verdicts[at].schedulable)
                                r = -ENOSPC;
                }
        } else if (nv == 0)
                r = -ENOSPC;
        else
                r = place_choose(cpus, nv, p, PLACE_FIT_BEST, &at, verdicts);
        if (r == -ENOSPC && !forced_cpu && nv >= 2) {
                char why[512];

                place_format_refusal(cpus, nv, p, verdicts, why, sizeof why);
                r = make_room(m, g, p, &at_cpu);
                if (r == 0) {
                        views_free(m, cpus, sets);
                        *ret_partitioned = true;
                        *ret_cpu = at_cpu;
                        return 0;
                }
                if (r == -ENOSPC)
                        op_fail(e, OP_REFUSED, "%s: %s; nor does moving one reservation make room", g->path, why);
                else
                        op_errno(e, r, "placement");
                e->refusal.outcome = ADMIT_OVER_BUDGET;
                views_free(m, cpus, sets);
                return -1;
        }
        if (r == 0) {
                *ret_partitioned = true;
                *ret_cpu = cpus[at].id;
                log_debug("Placement: %s -> cpu%u by %s", g->path, cpus[at].id, edf_test_to_string(verdicts[at].test));
        } else if (r == -ENOSPC && forced_cpu) {
                op_fail(e, OP_REFUSED, "%s: cpu%" PRIu32 " cannot take this stage any more", g->path, *forced_cpu);
                e->refusal.outcome = ADMIT_OVER_BUDGET;
        } else if (r == -ENOSPC && nv == 0) {
                op_fail(e, OP_REFUSED, "%s: every partition is invalid (%s)", g->path, place_note(m));
                e->refusal.outcome = ADMIT_OVER_BUDGET;
        } else if (r == -ENOSPC) {
                char why[512];
                place_format_refusal(cpus, nv, p, verdicts, why, sizeof why);
                op_fail(e, OP_REFUSED, "%s: %s", g->path, why);
                e->refusal.outcome = ADMIT_OVER_BUDGET;
        } else
                op_errno(e, r, "placement");
        views_free(m, cpus, sets);
        return r == 0 ? 0 : -1;
}

static uint64_t mono_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

int place_move_in(Manager *m, uint32_t cpu, uint32_t pid, uint32_t tid, OpError *e) {
        const char *name = place_cpu_name(m, cpu);
        int r;

        if (!name)
                return op_fail(e, OP_REFUSED, "cpu%" PRIu32 " is in no partition of edfd's", cpu);
        bool known = cpusets_origin_of(m->place.cpusets, (pid_t) pid) != NULL;

        /* v2: the process enters edfd-partitions once (a second admitted thread of it must not pull
         * the first back out of its partition), whole into this partition where edfd-partitions has
         * no CPU of its own; then the thread. */
        r = cpusets_move_in(m->place.cpusets, name, (pid_t) pid, (pid_t) tid);
        if (r < 0)
                return op_errno(e, r, "moving the thread into its CPU's partition");
        /* Where it came from, in the journal: a restarted edfd still puts it back there. */
        const char *origin = known ? NULL : cpusets_origin_of(m->place.cpusets, (pid_t) pid);
        if (origin) {
                r = state_write_origin(m->state, pid, origin);
                if (r == -ENAMETOOLONG)
                        log_notice("Process %" PRIu32 " came from a cgroup whose path is too long to keep over a "
                                   "restart (%s): after one, its release puts it in the root cgroup", pid, origin);
                else if (r < 0)
                        log_warning("Cannot record where process %" PRIu32 " came from (%s): %s", pid, origin,
                                    strerror(-r));
        }
        return 0;
}

int place_origins(const Manager *m, StateOrigin **ret, size_t *ret_n) {
        StateOrigin *v = NULL;
        const char *path;
        size_t n = 0;
        pid_t pid;

        for (size_t i = 0; (path = cpusets_origin_at(m->place.cpusets, i, &pid)); i++) {
                StateOrigin *t;

                if (strlen(path) > STATE_ORIGIN_MAX)
                        continue; /* never written either (state_write_origin()) */
                t = reallocarray(v, n + 1, sizeof(*v));
                if (!t) {
                        free(v);
                        return -ENOMEM;
                }
                v = t;
                v[n] = (StateOrigin) { .pid = (uint32_t) pid };
                snprintf(v[n].path, sizeof v[n].path, "%s", path);
                n++;
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

void place_restore_origins(Manager *m, const StateOrigin *origins, size_t n) {
        for (size_t i = 0; i < n; i++) {
                bool held = false;

                for (const Reservation *res = reservation_next(m->tree, NULL); res && !held;
                     res = reservation_next(m->tree, res))
                        held = res->partitioned && res->pid == origins[i].pid;
                if (held && cpusets_origin_restore(m->place.cpusets, (pid_t) origins[i].pid, origins[i].path) < 0)
                        log_warning("Cannot remember where process %" PRIu32 " came from", origins[i].pid);
        }
}

bool place_wait_ran(uint32_t cpu, uint32_t pid, uint32_t tid) {
        uint64_t until = mono_ns() + PLACE_RUN_WAIT_NSEC;
        ProcStat st;

        /* The kernel admits against the root domain of the CPU the thread last ran on (EPERM while
         * that is not its partition's): a running thread migrates at once, a sleeping one when it
         * wakes. Asked only after EPERM, so the usual admission reads no /proc file for it. */
        for (;;) {
                if (proc_read_stat((pid_t) pid, (pid_t) tid, PROC_STAT_PROCESSOR, &st) < 0)
                        return false;
                if (st.processor == cpu)
                        return true;
                if (mono_ns() >= until)
                        break;
                (void) nanosleep(&(struct timespec) { .tv_nsec = 1000000 }, NULL);
        }
        log_debug("Thread %" PRIu32 " has not run on cpu%" PRIu32 " within %" PRIu64 " ms of its move", tid, cpu,
                  (uint64_t) (PLACE_RUN_WAIT_NSEC / NSEC_PER_MSEC));
        return false; /* the kernel decides: EPERM when it has not run there yet */
}

void place_move_out(Manager *m, uint32_t pid, uint32_t tid) {
        int r;

        if (!m->place.cpusets || cpusets_backend(m->place.cpusets) == CPUSET_BACKEND_NONE)
                return;
        /* v2 moves the whole process: not while another of its threads holds a partitioned
         * reservation (it would leave its partition). This thread stays where it is meanwhile. */
        if (cpusets_backend(m->place.cpusets) == CPUSET_BACKEND_V2)
                for (const Reservation *o = reservation_next(m->tree, NULL); o; o = reservation_next(m->tree, o))
                        if (o->partitioned && o->pid == pid && o->tid != tid) {
                                log_debug("Thread %" PRIu32 " stays in edfd's partitions: thread %" PRIu32
                                          " of its process holds reservation %" PRIu64 " there", tid, o->tid, o->id);
                                return;
                        }
        if (cpusets_backend(m->place.cpusets) == CPUSET_BACKEND_V1) {
                r = cpusets_move_out(m->place.cpusets, (pid_t) tid);
                if (r < 0 && r != -ESRCH)
                        log_warning("Cannot move thread %" PRIu32 " out of its partition: %s", tid, strerror(-r));
                return;
        }
        /* v2: back to its cgroup, or the nearest ancestor that takes it, never the root cgroup. */
        const char *o = cpusets_origin_of(m->place.cpusets, (pid_t) pid);
        _cleanup_free_ char *origin = o ? strdup(o) : NULL;
        char where[PATH_MAX];

        r = cpusets_move_out_to(m->place.cpusets, (pid_t) pid, where, sizeof where);
        if (r == 0 && origin && strcmp(where, origin) != 0)
                log_warning("Process %" PRIu32 " could not go back to its cgroup %s: moved to %s, the nearest ancestor "
                            "that takes it", pid, origin, where);
        else if (r == -ENOENT)
                log_warning("Process %" PRIu32 " stays in %s: edfd does not know which cgroup it came from, and never "
                            "moves a process into the root cgroup", pid, CPUSET_DIR);
        else if (r < 0 && r != -ESRCH)
                log_warning("Process %" PRIu32 " stays in %s: neither its cgroup %s nor an ancestor of it below the root "
                            "takes it (%s); edfd never moves a process into the root cgroup (where it came from is "
                            "kept for a later release)", pid, CPUSET_DIR, origin ?: where, strerror(-r));
}

int manager_admit_split(Manager *m, const SplitRequest *req, SplitResult *ret, OpError *e) {
        const char *path = req->group && *req->group ? req->group : (m->config && m->config->default_group ? m->config->default_group : "/");
        Group *g = tree_find_group(m->tree, path);
        DlParams p = req->params;
        PlaceCpu *cpus = NULL;
        DlParams **sets = NULL;
        PlaceSplit sp;
        ParamsOutcome o;
        uint64_t id1 = 0, id2 = 0;
        size_t nv = 0;
        int r;

        if (!g) {
                Refusal rf = { .outcome = ADMIT_NO_SUCH_GROUP, .name = path };
                return op_refused(e, &rf);
        }
        if (!place_partitioned(m, g))
                return op_fail(e, OP_INVALID, "%s: a split reservation needs a group of partitioned placement", g->path);
        if (!m->place.active)
                return refuse_unavailable(m, g, e);
        if (req->tid1 == req->tid2 || req->tid1 == 0 || req->tid2 == 0)
                return op_fail(e, OP_INVALID, "a split needs two different threads, one for each stage");
        o = dl_params_check(&p, &capacity_kernel(m->capacity)->limits);
        if (o != PARAMS_OK) {
                Refusal rf = { .outcome = ADMIT_BAD_PARAMS, .params = o, .name = g->path };
                return op_refused(e, &rf);
        }
        if (p.runtime / 2 < MAX(g->min_split_runtime, DL_RUNTIME_MIN)) {
                char a[DURATION_MAX], b[DURATION_MAX];
                return op_fail(e, OP_INVALID, "%s: a split leaves each stage at least min-split-runtime (%s): a runtime of %s "
                               "cannot be split", g->path, duration_format(MAX(g->min_split_runtime, DL_RUNTIME_MIN), a),
                               duration_format(p.runtime, b));
        }
        r = cpu_views(m, &cpus, &sets, &nv);
        if (r < 0)
                return op_errno(e, r, "placement");
        r = nv > 0 ? place_split(cpus, nv, &p, PLACE_FIT_BEST, g->min_split_runtime, &sp) : -ENOSPC;
        if (r == 0) {
                sp.index_a = cpus[sp.index_a].id;
                sp.index_b = cpus[sp.index_b].id;
        }
        views_free(m, cpus, sets);
        if (r == -ENOSPC) {
                char bw[DURATION_MAX];
                uint64_t need = 0;
                (void) bw_of(p.runtime, p.period, &need);
                op_fail(e, OP_REFUSED, "%s: no two CPUs can take %s split in two stages", g->path, bw_format_up(need, bw));
                e->refusal.outcome = ADMIT_OVER_BUDGET;
                return -1;
        }
        if (r < 0)
                return op_errno(e, r, "placement");

        uint32_t cpu_a = (uint32_t) sp.index_a, cpu_b = (uint32_t) sp.index_b;
        AdmitRequest a = { .pid = req->pid, .tid = req->tid1, .group = g->path, .params = sp.stage1, .flags = req->flags,
                           .caller = req->caller, .may_move = req->may_move, .forced_cpu = &cpu_a };
        if (manager_admit(m, &a, &id1, e) < 0)
                return -1;
        AdmitRequest b = a;
        b.tid = req->tid2;
        b.params = sp.stage2;
        b.forced_cpu = &cpu_b;
        if (manager_admit(m, &b, &id2, e) < 0) {
                Reservation *res = tree_find_reservation(m->tree, id1);
                OpError ignored = {};
                if (res)
                        (void) manager_release(m, NULL, res, "requested", &ignored);
                return -1;
        }
        *ret = (SplitResult) { .id1 = id1, .id2 = id2, .stage1 = sp.stage1, .stage2 = sp.stage2, .cpu1 = cpu_a,
                               .cpu2 = cpu_b };
        log_info("Split admission in %s: #%" PRIu64 " on cpu%" PRIu32 " and #%" PRIu64 " on cpu%" PRIu32, g->path, id1,
                 cpu_a, id2, cpu_b);
        return 0;
}

/* place_plan()'s move for room: make_room()'s search, with the move made in the books only and
 * remembered for place_plan_undo(). */
static int plan_room(Manager *m, const DlParams *p, EdfMeter *meter, PlanEntry *ret) {
        PlaceCpu *cpus = NULL;
        DlParams **sets = NULL;
        Reservation ***res = NULL;
        size_t nv = 0;
        PlaceMove mv;
        int r;

        r = cpu_views_of(m, &cpus, &sets, &res, &nv);
        if (r < 0)
                return r;
        for (size_t i = 0; i < nv; i++)
                cpus[i].meter = meter;
        r = place_make_room(cpus, nv, p, PLACE_FIT_BEST, 0, &mv, NULL);
        if (r == 0) {
                Reservation *x = res[mv.from][mv.task];
                struct PlaceUndo *u = reallocarray(m->place.plan_moves, m->place.n_plan_moves + 1, sizeof(*u));

                if (!u)
                        r = -ENOMEM;
                else {
                        m->place.plan_moves = u;
                        u[m->place.n_plan_moves++] = (struct PlaceUndo) { .id = x->id, .cpu = x->cpu };
                        x->cpu = cpus[mv.to].id;
                        *ret = (PlanEntry) { .outcome = PLAN_PLACED, .cpu = cpus[mv.from].id, .verdict = mv.verdict_from,
                                             .room = true, .room_task = (size_t) x->id, .room_from = cpus[mv.from].id,
                                             .room_to = cpus[mv.to].id };
                        if (x->tid >= PLAN_TID_BASE)
                                snprintf(ret->reason, sizeof ret->reason, "after moving an earlier task of this plan from "
                                         "cpu%u to cpu%u", ret->room_from, ret->room_to);
                        else
                                snprintf(ret->reason, sizeof ret->reason, "after moving reservation %" PRIu64 " (thread %"
                                         PRIu32 ") from cpu%u to cpu%u", x->id, x->tid, ret->room_from, ret->room_to);
                }
        }
        for (size_t i = 0; i < m->place.n_cpus && sets; i++)
                free(res ? res[i] : NULL);
        free(res);
        views_free(m, cpus, sets);
        return r;
}

void place_plan_undo(Manager *m) {
        while (m->place.n_plan_moves > 0) {
                struct PlaceUndo *u = &m->place.plan_moves[--m->place.n_plan_moves];
                Reservation *x = tree_find_reservation(m->tree, u->id);

                if (x)
                        x->cpu = u->cpu;
        }
        free(m->place.plan_moves);
        m->place.plan_moves = NULL;
}

int place_plan(Manager *m, const Group *g, const DlParams *p, bool may_split, EdfMeter *meter, PlanEntry *ret,
               bool *ret_partitioned, OpError *e) {
        _cleanup_free_ EdfVerdict *verdicts = NULL;
        PlaceCpu *cpus = NULL;
        DlParams **sets = NULL;
        size_t at, nv = 0;
        PlaceSplit sp;
        int r;

        *ret = (PlanEntry) { .outcome = PLAN_REFUSED };
        *ret_partitioned = false;
        if (!place_partitioned(m, g) || !m->place.active) {
                /* Global placement, or partitioned where no partition is made: place_decide() says
                 * which, with Admit's words. */
                OpError why = {};
                bool partitioned;
                uint32_t cpu;

                if (place_decide(m, g, p, NULL, &partitioned, &cpu, &why) == 0) {
                        ret->outcome = PLAN_PLACED;
                        return 0;
                }
                if (why.kind != OP_REFUSED) {
                        *e = why;
                        return -1;
                }
                snprintf(ret->reason, sizeof ret->reason, "%s", why.message);
                return 0;
        }
        /* The walk over the books that builds the CPUs' task sets, then the tests on them. */
        if (!edf_meter_charge(meter, m->tree->n_reservations + 1))
                return op_errno(e, -EDQUOT, "placement");
        r = cpu_views(m, &cpus, &sets, &nv);
        if (r < 0)
                return op_errno(e, r, "placement");
        for (size_t i = 0; i < nv; i++)
                cpus[i].meter = meter;
        verdicts = calloc(nv ? nv : 1, sizeof(*verdicts));
        r = !verdicts ? -ENOMEM : nv == 0 ? -ENOSPC : place_choose(cpus, nv, p, PLACE_FIT_BEST, &at, verdicts);
        if (r == 0) {
                *ret = (PlanEntry) { .outcome = PLAN_PLACED, .cpu = cpus[at].id, .verdict = verdicts[at] };
                *ret_partitioned = true;
        } else if (r == -ENOSPC) {
                char why[PLAN_REASON_MAX - 128];

                if (nv == 0)
                        snprintf(why, sizeof why, "every partition is invalid (%s)", place_note(m));
                else
                        place_format_refusal(cpus, nv, p, verdicts, why, sizeof why);
                r = nv >= 2 ? plan_room(m, p, meter, ret) : -ENOSPC;
                if (r == 0) {
                        *ret_partitioned = true;
                        views_free(m, cpus, sets);
                        return 0;
                }
                if (r == -ENOSPC && may_split && nv >= 2)
                        r = place_split(cpus, nv, p, PLACE_FIT_BEST, g->min_split_runtime, &sp);
                if (r == 0) {
                        *ret = (PlanEntry) { .outcome = PLAN_SPLIT, .cpu = cpus[sp.index_a].id, .cpu_b = cpus[sp.index_b].id,
                                             .stage1 = sp.stage1, .stage2 = sp.stage2, .verdict = sp.verdict_b };
                        *ret_partitioned = true;
                } else if (r != -EDQUOT && r != -ENOMEM) { /* the split's other failures are its refusal */
                        snprintf(ret->reason, sizeof ret->reason, "%s: %s; nor does moving one reservation make room%s",
                                 g->path, why, may_split ? "; nor do two CPUs take it split in two stages" : "");
                        r = 0;
                }
        }
        views_free(m, cpus, sets);
        return r < 0 ? op_errno(e, r, "placement") : 0;
}

int place_loads(Manager *m, PlaceLoad **ret, size_t *ret_n) {
        PlaceCpu *cpus = NULL;
        DlParams **sets = NULL;
        PlaceLoad *loads;
        size_t nv = 0;
        int r;

        *ret = NULL;
        *ret_n = 0;
        if (!m->place.active)
                return 0;
        r = cpu_views(m, &cpus, &sets, &nv);
        if (r < 0)
                return r;
        loads = calloc(nv ?: 1, sizeof(*loads));
        for (size_t i = 0; loads && i < nv; i++) {
                EdfVerdict v = {};
                (void) edf_check(cpus[i].tasks, cpus[i].n_tasks, NULL, 0, &cpus[i].supply, &v);
                loads[i] = (PlaceLoad) { .name = place_cpu_name(m, cpus[i].id), .cpu = cpus[i].id,
                                         .capacity = place_left(&cpus[i], 0), .allocated = v.bw_total,
                                         .reservations = (uint32_t) cpus[i].n_tasks };
        }
        views_free(m, cpus, sets);
        if (!loads)
                return -ENOMEM;
        *ret = loads;
        *ret_n = nv;
        return 0;
}

const char *place_note(const Manager *m) {
        if (m->place.active && m->place.unavailable) /* the poll's last finding */
                return m->place.unavailable;
        if (m->place.active)
                return m->place.global_none ? "global placement has no CPU: the partitions take every CPU" : "";
        return m->place.unavailable ?: "";
}

/* --- partitions that turn invalid --- */

#define PLACE_POLL_USEC (2 * UINT64_C(1000000))

/* Move res off a partition that is no more: to another CPU where the exact test passes (the
 * kernel moves a deadline thread between root domains when it has the room, or refuses), else
 * release it. */
static void evacuate(Manager *m, Reservation *res) {
        PlaceCpu *cpus = NULL;
        DlParams **sets = NULL;
        size_t nv = 0, at;
        uint32_t from = res->cpu;
        int r;

        r = cpu_views(m, &cpus, &sets, &nv);
        if (r == 0 && nv > 0)
                r = place_choose(cpus, nv, &res->params, PLACE_FIT_BEST, &at, NULL);
        else if (r == 0)
                r = -ENOSPC;
        if (r == 0) {
                const char *name = place_cpu_name(m, cpus[at].id);
                uint32_t to = cpus[at].id;
                r = name ? cpusets_move_thread(m->place.cpusets, name, (pid_t) res->tid) : -ENOENT;
                if (r == 0) {
                        res->cpu = to;
                        if (record(m, false, res) < 0)
                                log_warning("Reservation %" PRIu64 " moved to cpu%" PRIu32 " but not recorded", res->id, to);
                        log_warning("Reservation %" PRIu64 " (thread %" PRIu32 ") moved from cpu%" PRIu32 " to cpu%" PRIu32
                                    ": its partition is no longer valid", res->id, res->tid, from, to);
                        manager_bus_emit_changed(m, res, "partition");
                }
        }
        views_free(m, cpus, sets);
        if (r == 0)
                return;
        log_warning("Reservation %" PRIu64 " (thread %" PRIu32 ") released: its partition (cpu%" PRIu32 ") is no longer "
                    "valid and no other CPU can take it", res->id, res->tid, from);
        (void) manager_release(m, NULL, res, "partition", NULL);
}

static void on_partition_change(const CpusetPartition *now, CpusetState was, void *userdata) {
        Manager *m = userdata;
        PlaceCpuInfo *info = NULL;

        for (size_t i = 0; i < m->place.n_cpus; i++)
                if (strcmp(m->place.cpus[i].name, now->name) == 0)
                        info = &m->place.cpus[i];
        if (!info)
                return;
        if (now->state == CPUSET_STATE_VALID) {
                if (info->invalid)
                        log_notice("Partition %s (cpu%" PRIu32 ") is valid again", now->name, info->cpu);
                info->invalid = false;
                free(m->place.unavailable);
                m->place.unavailable = NULL;
                return;
        }
        if (was != CPUSET_STATE_VALID && info->invalid)
                return;
        info->invalid = true;
        set_unavailable(m, "partition %s (cpu%" PRIu32 ") is %s: %s", now->name, info->cpu,
                        cpuset_state_to_string(now->state), now->reason[0] ? now->reason : "changed from outside");
        log_warning("Partition: %s; moving its reservations", m->place.unavailable);
        for (;;) {
                Reservation *res = NULL;
                for (Reservation *r = reservation_next(m->tree, NULL); r; r = reservation_next(m->tree, r))
                        if (r->partitioned && r->cpu == info->cpu) {
                                res = r;
                                break;
                        }
                if (!res)
                        break;
                uint32_t before = res->cpu;
                uint64_t id = res->id;
                evacuate(m, res);
                Reservation *again = tree_find_reservation(m->tree, id);
                if (again && again->cpu == before) /* neither moved nor released: give up on it */
                        break;
        }
}

/* v2: a process moved out of its service's cgroup into a partition is out of reach of the service's
 * stop (systemd kills the processes of the unit's cgroup, and its main process). Once the cgroup it
 * came from is gone (the unit has stopped and systemd removed it), the process has outlived its
 * service: it is ended as the stop would have ended it. Without CAP_KILL only root's processes can
 * be signalled; another user's is named in the journal. */
static void end_orphans(Manager *m) {
        _cleanup_free_ CpusetOrphan *o = NULL;
        size_t n = 0;

        if (cpusets_backend(m->place.cpusets) != CPUSET_BACKEND_V2 || cpusets_orphans(m->place.cpusets, &o, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                bool ours = false;

                for (const Reservation *r = reservation_next(m->tree, NULL); r && !ours; r = reservation_next(m->tree, r))
                        ours = r->partitioned && r->pid == (uint32_t) o[i].pid;
                if (!ours)
                        continue;
                if (kill(o[i].pid, SIGKILL) < 0)
                        log_warning("Process %d outlived its cgroup %s (its unit has stopped) but cannot be ended: %s",
                                    (int) o[i].pid, o[i].origin, strerror(errno));
                else
                        log_warning("Process %d outlived its cgroup %s (its unit has stopped): ended with SIGKILL",
                                    (int) o[i].pid, o[i].origin);
        }
}

/* A partitioned thread must stay on its CPU. The kernel widens it behind edfd's back: a refused
 * offline of its CPU (EBUSY, the deadline bandwidth) first pushed it off that CPU, and the fallback
 * set its affinity to every possible CPU ("process N no longer affine to cpuN", seen in the VM on
 * 6.1), while it stays in its partition's cgroup. Each poll pins such a thread to its CPU again;
 * where the kernel refuses that (EBUSY: the thread now sits in another root domain, seen on 6.1) it
 * is said once per reservation (m->place.repin_warned, the ids). */

static bool repin_warn_once(Manager *m, uint64_t id) {
        PlaceRoom *p = &m->place;
        uint64_t *n;

        for (size_t i = 0; i < p->n_repin_warned; i++)
                if (p->repin_warned[i] == id)
                        return false;
        n = realloc(p->repin_warned, (p->n_repin_warned + 1) * sizeof(*n));
        if (!n)
                return true;
        p->repin_warned = n;
        p->repin_warned[p->n_repin_warned++] = id;
        return true;
}

static void repin(Manager *m) {
        for (const Reservation *res = reservation_next(m->tree, NULL); res; res = reservation_next(m->tree, res)) {
                char path[96], buf[4096], list[CPU_LIST_MAX];
                const char *l;
                CpuMask now = {}, want = {};
                cpu_set_t set;

                if (!res->partitioned)
                        continue;
                snprintf(path, sizeof path, "/proc/%" PRIu32 "/task/%" PRIu32 "/status", res->pid, res->tid);
                if (proc_read_file(AT_FDCWD, path, PROC_READ_TRUNCATE, buf, sizeof buf, NULL) < 0)
                        continue;
                l = strstr(buf, "\nCpus_allowed_list:");
                if (!l)
                        continue;
                l += strlen("\nCpus_allowed_list:");
                l += strspn(l, " \t");
                if (cpu_mask_parse(l, strcspn(l, "\n"), &now, NULL) < 0)
                        continue;
                cpu_mask_set(&want, res->cpu);
                if (memcmp(&now, &want, sizeof now) == 0)
                        continue;
                CPU_ZERO(&set);
                CPU_SET(res->cpu, &set);
                if (sched_setaffinity((pid_t) res->tid, sizeof set, &set) < 0) {
                        if (repin_warn_once(m, res->id))
                                log_error("Thread %" PRIu32 " of reservation %" PRIu64 " may run on CPUs %s, not only cpu%" PRIu32
                                          " (the kernel widened it, as after a refused offline of cpu%" PRIu32 "), and cannot "
                                          "be pinned again: %s%s", res->tid, res->id,
                                          cpu_mask_format(&now, list, sizeof list) ?: "?", res->cpu, res->cpu, strerror(errno),
                                          errno == EBUSY ? " (it runs outside its partition's root domain now; its "
                                                           "reservation no longer has its CPU to itself)" : "");
                } else
                        log_warning("Thread %" PRIu32 " of reservation %" PRIu64 " could run on CPUs %s (the kernel widened "
                                    "it): pinned to cpu%" PRIu32 " again", res->tid, res->id,
                                    cpu_mask_format(&now, list, sizeof list) ?: "?", res->cpu);
        }
}

static int on_place_poll(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        int r;

        manager_bus_defer_begin(m);
        r = cpusets_poll(m->place.cpusets, on_partition_change, m);
        end_orphans(m);
        repin(m);
        manager_bus_defer_end(m);
        if (r < 0)
                log_debug("Polling the partitions: %s", strerror(-r));
        (void) sd_event_source_set_time_relative(s, PLACE_POLL_USEC);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

void place_start(Manager *m) {
        int r;

        if (!m->place.active || !m->event)
                return;
        (void) cpusets_poll(m->place.cpusets, NULL, NULL); /* the state now, as the baseline */
        r = sd_event_add_time_relative(m->event, &m->place.poll_timer, CLOCK_MONOTONIC, PLACE_POLL_USEC, 0,
                                       on_place_poll, m);
        if (r < 0)
                log_warning("Cannot poll the partitions: %s", strerror(-r));
}
