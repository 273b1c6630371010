/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The procs room: the proc connector's forks (a child split from its donor, or given a copy, as its
 * group's policy says), exits, and execs and exits for the start-up room's watches, the look in /proc
 * for children nobody saw when events were lost or edfd was down, and the resync that checks every
 * reservation against the kernel and measures the capacity again. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/bandwidth.h"
#include "core/duration.h"
#include "log.h"
#include "basic/macro.h"
#include "basic/proc.h"
#include "manager-bus.h"
#include "manager-internal.h"
#include "sched-dl.h"

#define RESYNC_INTERVAL_USEC (10 * UINT64_C(1000000))

/* Clock ticks since boot, the unit of /proc start times. */
uint64_t boot_ticks(void) {
        struct timespec ts;
        long hz = sysconf(_SC_CLK_TCK);

        clock_gettime(CLOCK_BOOTTIME, &ts);
        return (uint64_t) ts.tv_sec * (uint64_t) (hz > 0 ? hz : 100) +
               (uint64_t) ts.tv_nsec / (NSEC_PER_SEC / (uint64_t) (hz > 0 ? hz : 100));
}

/* A child edfd saw and decided to leave SCHED_OTHER: not "unseen" at the next look. */
static void note_unraised(Manager *m, pid_t pid) {
        (void) hashmap_put(&m->procs.unraised, (uint64_t) pid + 1, (void *) (uintptr_t) 1);
}

/* One candidate: born since `since`, holds no reservation, was not seen and left alone. */
static void count_if_unseen(Manager *m, pid_t tid, uint64_t start_time, uint64_t since) {
        if (tree_find_thread(m->tree, (uint32_t) tid) || hashmap_get(&m->procs.unraised, (uint64_t) tid + 1))
                return;
        if (start_time >= since)
                m->procs.unseen_children++;
}

typedef struct UnseenLook {
        Manager *m;
        uint64_t since;
} UnseenLook;

static int look_at_thread(const ProcEntry *e, void *userdata) {
        UnseenLook *l = userdata;
        ProcStat st;

        if (e->tid != e->pid && proc_entry_stat(e, PROC_STAT_START_TIME, &st) == 0)
                count_if_unseen(l->m, e->tid, st.start_time, l->since);
        return 0;
}

static int look_at_process(const ProcEntry *e, void *userdata) {
        UnseenLook *l = userdata;
        const Reservation *parent;
        ProcStat st;

        if (proc_entry_stat(e, PROC_STAT_PPID | PROC_STAT_START_TIME, &st) < 0 || st.ppid == 0)
                return 0;
        /* New threads of an admitted process. */
        parent = tree_find_process(l->m->tree, (uint32_t) e->pid);
        if (parent && parent->group->threads != FORK_NONE)
                (void) proc_walk_threads(e->pid, look_at_thread, l);
        /* A new process whose parent is admitted. */
        parent = tree_find_process(l->m->tree, (uint32_t) st.ppid);
        if (parent && parent->group->fork != FORK_NONE && !tree_find_process(l->m->tree, (uint32_t) e->pid))
                count_if_unseen(l->m, e->pid, st.start_time, l->since);
        return 0;
}

/* After lost events, or a restart: children of admitted threads born since the last look (new
 * processes whose parent is admitted, new threads of admitted processes) that hold no reservation
 * although their group's policy would have raised them, and that edfd did not see and refuse. They
 * stay SCHED_OTHER (edfd cannot know what the donor looked like when they were born) and are
 * counted. */
void count_unseen_children(Manager *m, uint64_t since) {
        UnseenLook l = { .m = m, .since = since };

        m->procs.last_look_ticks = boot_ticks();
        if (m->tree->n_reservations > 0)
                (void) proc_walk_processes(look_at_process, &l);
        hashmap_done(&m->procs.unraised);
}

int manager_resync(Manager *m, const char *why) {
        Reservation *res, *next;
        char buf[512];

        m->procs.resyncs++;
        log_debug("Resync (%s)", why);
        authz_names_flush(&m->names);
        sched_pin_cache_prune(&m->pins, false);
        for (res = reservation_next(m->tree, NULL); res; res = next) {
                SchedTarget *t = target_get(m, res->id);
                SchedInfo si;

                next = reservation_next(m->tree, res);
                if (!t && admit_pending(m, res->id))
                        continue; /* not applied yet: the retry timer settles it */
                if (!t || sched_target_verify(t) < 0) {
                        /* next may be a split child whose donor this is; that is fine: only res goes. */
                        release_books(m, res, "vanished");
                        continue;
                }
                if (sched_get(res->tid, &si) < 0) {
                        release_books(m, res, "vanished");
                        continue;
                }
                if (!same_params(&si, &res->params, res->flags)) {
                        /* Changed by itself or someone else: the books follow the kernel. If it is still
                         * SCHED_DEADLINE its bandwidth is now unmanaged (counted below). */
                        log_notice("Thread %" PRIu32 " changed its scheduling outside edfd: reservation %" PRIu64
                                   " released",
                                   res->tid, res->id);
                        release_books(m, res, "changed");
                        continue;
                }
        }
        capacity_refresh_all(m);
        if (tree_check(m->tree, buf, sizeof buf) < 0)
                log_error("Books inconsistent after resync: %s", buf);
        notify_status(m);
        return 0;
}

/* --- fork and exit --- */

static void handle_exit(Manager *m, const ProcEvent *ev) {
        Reservation *res = tree_find_thread(m->tree, (uint32_t) ev->pid);

        if (!res || res->pid != (uint32_t) ev->tgid)
                return;
        release_books(m, res, "exited");
}

static void handle_fork(Manager *m, const ProcEvent *ev) {
        bool is_thread = ev->pid != ev->tgid;
        Reservation *donor, *child;
        SchedTarget t = SCHED_TARGET_NULL, *dt;
        DlParams old;
        Refusal rf;
        int r;

        if (is_thread)
                /* The kernel does not say which thread created it (parent_pid names the process's
                 * parent): the donor is chosen by tree_thread_donor()'s rule. */
                donor = tree_thread_donor(m->tree, (uint32_t) ev->tgid);
        else {
                donor = tree_find_thread(m->tree, (uint32_t) ev->parent_pid);
                if (donor && donor->pid != (uint32_t) ev->parent_tgid)
                        donor = NULL;
        }
        if (!donor)
                return;
        /* The group's policy and the owner's limits (core/admission.h): a full copy (inherit) only
         * within them, a split only within the owner's number of reservations; root's children are
         * not limited, as root's requests are not. */
        ForkPolicy policy;
        UserLimits lim = donor->uid == 0 ? USER_LIMITS_NONE : limits_of(m, donor->uid, NULL);
        r = admission_fork_decide(m->tree, donor, is_thread, &lim, &policy, &rf);
        if (r == ADMIT_FORK_NONE)
                return;
        if (r != 0) {
                log_debug("New %s %d stays SCHED_OTHER: its owner's reservation limit is reached",
                          is_thread ? "thread" : "process", ev->pid);
                note_unraised(m, ev->pid);
                return;
        }
        dt = target_get(m, donor->id);
        if (!dt)
                return;
        r = sched_target_pin(ev->tgid, ev->pid, &t);
        if (r < 0)
                return; /* the child is gone already: the donor keeps everything */

        /* A partitioned child starts on its parent's CPU (it inherits the cpuset): a full copy there
         * would double the demand on that CPU without its test; a split keeps it as it was. */
        if (donor->partitioned && policy == FORK_INHERIT)
                policy = FORK_SPLIT;
        r = reservation_split_as(m->tree, donor, policy, (uint32_t) ev->tgid, (uint32_t) ev->pid, t.identity,
                                 &child, &old, &rf);
        if (r != 0) {
                char buf[256];
                log_debug("No reservation for new %s %d: %s", is_thread ? "thread" : "process", ev->pid,
                          r > 0 ? refusal_format(&rf, buf, sizeof buf) : strerror(-r));
                note_unraised(m, ev->pid);
                sched_target_done(&t);
                return;
        }
        (void) record(m, true, donor);
        (void) record(m, true, child);

        /* Shrink the donor first, raise the child second: the kernel's total never exceeds what was
         * granted. */
        if (donor->params.runtime != old.runtime) {
                r = apply_with_retry(dt, &donor->params, donor->flags);
                if (r < 0) {
                        /* The kernel still has the donor whole: so must the books. */
                        uint64_t cid = child->id;
                        reservation_release(m->tree, child, NULL);
                        (void) state_write_release(m->state, cid);
                        if (donor->params.runtime != old.runtime)
                                (void) reservation_update(m->tree, donor, &old, NULL);
                        (void) record(m, false, donor);
                        note_unraised(m, ev->pid);
                        sched_target_done(&t);
                        return;
                }
        }
        /* A child raised in a storm may end before its exit event is read: whatever ends meanwhile
         * is covered from here (see Manager.recount_unsafe_until_ns). */
        capacity_recount_unsafe_for(m->capacity, child->params.period);
        r = apply_with_retry(&t, &child->params, child->flags);
        if (r < 0) {
                uint64_t cid = child->id;
                ReleaseEffect e;
                log_debug("Could not raise new %s %d: %s", is_thread ? "thread" : "process", ev->pid, strerror(-r));
                reservation_release(m->tree, child, &e);
                (void) state_write_release(m->state, cid);
                if (e.donor)
                        (void) donor_give_back(m, &e, cid);
                (void) record(m, false, donor);
                note_unraised(m, ev->pid);
                sched_target_done(&t);
                return;
        }
        (void) record(m, false, donor);
        (void) record(m, false, child);
        if (target_put(m, child->id, &t) < 0)
                sched_target_done(&t);
        if (donor->params.runtime != old.runtime)
                manager_bus_emit_changed(m, donor, "split");
        manager_bus_emit_added(m, child, child->donor ? "split" : "inherited");
        if (child->donor)
                manager_bus_emit_split(m, donor->id, child->id);
        notify_status(m);
        maybe_compact(m);
}

static int on_procmon(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        ProcEvent ev[8];
        size_t n;
        bool overflow = false;

        for (unsigned rounds = 0; rounds < 4096; rounds++) {
                int r = procmon_receive_full(fd, ev, ELEMENTSOF(ev), &n, &m->procs.stats);
                if (r == -EAGAIN)
                        break;
                if (r == -ENOBUFS) {
                        m->procs.events_lost++;
                        overflow = true;
                        continue;
                }
                if (r < 0)
                        continue;
                for (size_t i = 0; i < n; i++) {
                        m->procs.events_seen++;
                        if (ev[i].type == PROCMON_FORK)
                                handle_fork(m, &ev[i]);
                        else if (ev[i].type == PROCMON_EXIT) {
                                handle_exit(m, &ev[i]);
                                startup_on_exit(m, ev[i].pid, ev[i].tgid);
                        } else if (ev[i].type == PROCMON_EXEC)
                                startup_on_exec(m, ev[i].pid, ev[i].tgid);
                }
        }
        if (overflow) {
                /* Children of any of them may have ended unseen, with the parent's period. */
                for (Reservation *res = reservation_next(m->tree, NULL); res; res = reservation_next(m->tree, res))
                        capacity_recount_unsafe_for(m->capacity, res->params.period);
                count_unseen_children(m, m->procs.last_look_ticks);
                startup_events_lost(m);
                manager_resync(m, "events lost");
        }
        return 0;
}

static int on_resync_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        manager_resync(m, "periodic");
        sd_event_source_set_time(s, usec + RESYNC_INTERVAL_USEC);
        sd_event_source_set_enabled(s, SD_EVENT_ON);
        return 0;
}

void procs_open(Manager *m) {
        /* Listen before looking, so that no fork between the scan and the first event is missed. */
        int r = procmon_open(&m->procs.fd, 0);

        if (r < 0)
                log_warning("Cannot listen to the proc connector (%s): forks and exits are seen only by the "
                            "periodic resync",
                            strerror(-r));
}

int procs_start(Manager *m) {
        uint64_t now;
        int r;

        if (m->procs.fd >= 0) {
                r = sd_event_add_io(m->event, &m->procs.source, m->procs.fd, EPOLLIN, on_procmon, m);
                if (r < 0)
                        return r;
                /* Forks and exits first: a late exit event makes admissions fail for no reason. */
                (void) sd_event_source_set_priority(m->procs.source, SD_EVENT_PRIORITY_IMPORTANT);
        }
        sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        return sd_event_add_time(m->event, &m->procs.resync_timer, CLOCK_MONOTONIC, now + RESYNC_INTERVAL_USEC, 0,
                                 on_resync_timer, m);
}

void procs_free(Manager *m) {
        m->procs.source = sd_event_source_unref(m->procs.source);
        m->procs.resync_timer = sd_event_source_unref(m->procs.resync_timer);
        if (m->procs.fd >= 0)
                close(m->procs.fd);
        m->procs.fd = -1;
        hashmap_done(&m->procs.unraised);
}
