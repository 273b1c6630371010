/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The release room: Release (put the thread back, then the books), the end of a reservation however
 * it came (release_books()), and the runtime that goes back to a split child's donor, with the timer
 * that retries the returns the kernel refused for the moment. */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "basic/macro.h"
#include "manager-bus.h"
#include "manager-internal.h"
#include "sched-dl.h"

/* --- returns to a donor that the kernel refused for the moment --- */

/* A child that exits gives its bandwidth back to the kernel only at its 0-lag time when it was not
 * running (up to one period later), so in a fork storm the kernel's pool fills with children that
 * have ended, and giving their runtime back to the donor gets EBUSY although the books balance.
 * edfd does not wait for that in the event loop: the runtime stays with the group, and a timer gives
 * it back as soon as the kernel has the room (first after RETURN_RETRY_MIN_USEC, backing off to
 * RETURN_RETRY_MAX_USEC while the kernel keeps refusing), for as long as the donor lives with the
 * same deadline and period. The donor may change meanwhile (split again by another fork, or given
 * another child's runtime): what comes back is the runtime the child held, added to what the donor
 * has then. */
#define RETURN_RETRY_MIN_USEC (50 * UINT64_C(1000))
#define RETURN_RETRY_MAX_USEC (2 * UINT64_C(1000000))

typedef struct PendingReturn {
        uint64_t donor_id;
        uint64_t runtime;          /* what goes back */
        uint64_t deadline, period; /* the donor's when it was refused */
        struct PendingReturn *next;
} PendingReturn;

/* One attempt: 1 done (returned, or no longer possible: the donor is gone, its deadline or period
 * changed, or its group gave the room away), 0 to try again. */
static int return_try(Manager *m, PendingReturn *p) {
        Reservation *donor = tree_find_reservation(m->tree, p->donor_id);
        SchedTarget *dt = donor ? target_get(m, donor->id) : NULL;
        DlParams from, to;
        Refusal rf;
        int r;

        if (!donor || !dt || donor->params.deadline != p->deadline || donor->params.period != p->period)
                return 1;
        from = to = donor->params;
        if (__builtin_add_overflow(from.runtime, p->runtime, &to.runtime) || to.runtime > to.deadline ||
            reservation_update(m->tree, donor, &to, &rf) != 0) {
                log_notice("Reservation %" PRIu64 " does not get %" PRIu64 " ns of runtime back: group %s has given the "
                           "room away, or the donor changed",
                           donor->id, p->runtime, donor->group->path);
                return 1;
        }
        (void) record(m, true, donor);
        r = sched_apply_deadline(dt, to.runtime, to.deadline, to.period, sched_flags_of(donor->flags));
        if (r < 0) {
                (void) reservation_update(m->tree, donor, &from, NULL);
                (void) record(m, false, donor);
                if (r == -EBUSY)
                        return 0;
                log_notice("The kernel would not give reservation %" PRIu64 " back its runtime (%s): it stays with "
                           "group %s",
                           donor->id, strerror(-r), donor->group->path);
                return 1;
        }
        (void) record(m, false, donor);
        log_debug("Reservation %" PRIu64 " has %" PRIu64 " ns of runtime back: the kernel had room again", donor->id,
                  p->runtime);
        manager_bus_emit_changed(m, donor, "returned");
        notify_status(m);
        return 1;
}

static int on_return_timer(sd_event_source *s, uint64_t usec, void *userdata);

static void return_timer_arm(Manager *m, uint64_t delay_usec) {
        uint64_t now;

        if (!m->event || sd_event_now(m->event, CLOCK_MONOTONIC, &now) < 0)
                return;
        m->release.delay_usec = delay_usec;
        if (!m->release.timer) {
                if (sd_event_add_time(m->event, &m->release.timer, CLOCK_MONOTONIC, now + delay_usec, 0,
                                      on_return_timer, m) < 0)
                        log_warning("Cannot arm the timer that gives donors their runtime back");
                return;
        }
        (void) sd_event_source_set_time(m->release.timer, now + delay_usec);
        (void) sd_event_source_set_enabled(m->release.timer, SD_EVENT_ONESHOT);
}

static int on_return_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        bool progress = false;

        for (PendingReturn **q = &m->release.pending; *q;) {
                PendingReturn *p = *q;
                if (return_try(m, p) == 0) {
                        q = &p->next;
                        continue;
                }
                progress = true;
                *q = p->next;
                free(p);
        }
        if (m->release.pending)
                return_timer_arm(m, progress ? RETURN_RETRY_MIN_USEC
                                             : MIN(m->release.delay_usec * 2, RETURN_RETRY_MAX_USEC));
        return 0;
}

static void return_later(Manager *m, const Reservation *donor, uint64_t runtime) {
        PendingReturn *p = calloc(1, sizeof *p);

        if (!p) {
                (void) log_oom();
                return;
        }
        *p = (PendingReturn) { .donor_id = donor->id, .runtime = runtime, .deadline = donor->params.deadline,
                               .period = donor->params.period, .next = m->release.pending };
        m->release.pending = p;
        return_timer_arm(m, RETURN_RETRY_MIN_USEC);
}

/* The core's donor rule has given a child's runtime back to its donor in the books (e): give it in
 * the kernel too. One try: on EBUSY the kernel still holds the child's bandwidth (until its 0-lag
 * time), so the books go back to e->donor_old and return_later() waits for the room from a timer, not
 * here; on another error the runtime stays with the group. Returns true when the donor has it now. */
bool donor_give_back(Manager *m, const ReleaseEffect *e, uint64_t child_id) {
        SchedTarget *dt = target_get(m, e->donor->id);
        uint64_t back = e->donor->params.runtime - e->donor_old.runtime;
        int r;

        (void) record(m, true, e->donor);
        r = dt ? sched_apply_deadline(dt, e->donor->params.runtime, e->donor->params.deadline, e->donor->params.period,
                                      sched_flags_of(e->donor->flags))
               : -ESRCH;
        if (r < 0) {
                if (r == -EBUSY)
                        log_debug("The kernel has no room yet to give reservation %" PRIu64 " back the runtime of %" PRIu64
                                  ": it waits with group %s",
                                  e->donor->id, child_id, e->donor->group->path);
                else
                        log_notice("The kernel would not give reservation %" PRIu64 " back the runtime of %" PRIu64
                                   " (%s): it stays with group %s",
                                   e->donor->id, child_id, strerror(-r), e->donor->group->path);
                (void) reservation_update(m->tree, e->donor, &e->donor_old, NULL);
                (void) record(m, false, e->donor);
                if (r == -EBUSY)
                        return_later(m, e->donor, back);
                return false;
        }
        (void) record(m, false, e->donor);
        return true;
}

/* Release from the books (the thread was already put back, or is gone), give runtime back to the
 * donor where the rule says so, record and signal. */
void release_books(Manager *m, Reservation *res, const char *reason) {
        uint64_t id = res->id;
        uint32_t pid = res->pid, tid = res->tid;
        char group[GROUP_PATH_MAX + 1];
        ReleaseEffect e;
        int r;

        snprintf(group, sizeof group, "%s", res->group->path);
        if (strcmp(reason, "requested") != 0) /* else manager_release() parked it: nothing is left to come back */
                capacity_recount_unsafe_for(m->capacity, res->params.period);
        reservation_release(m->tree, res, &e);
        target_drop(m, id);
        r = state_write_release(m->state, id);
        if (r < 0)
                log_state_failure(r);

        if (e.donor && donor_give_back(m, &e, id))
                manager_bus_emit_changed(m, e.donor, "returned");
        if (!admit_pending(m, id)) /* one never announced ends unannounced */
                manager_bus_emit_removed(m, id, pid, tid, group, reason);
        notify_status(m);
        maybe_compact(m);
}

int manager_release(Manager *m, const Caller *c, Reservation *res, const char *reason, OpError *error) {
        SchedTarget *t;
        bool parked = false;
        int r;

        if (c && !admission_may_touch(c->uid, res)) {
                Refusal rf = { .outcome = ADMIT_NOT_YOURS, .id = res->id };
                return op_refused(error, &rf);
        }
        t = target_get(m, res->id);
        if (t) {
                SchedInfo had = { .policy = SCHED_DEADLINE, .flags = sched_flags_of(res->flags) | SCHED_FLAG_RESET_ON_FORK,
                                  .runtime = res->params.runtime, .deadline = res->params.deadline,
                                  .period = res->params.period };
                r = sched_release_known(t, &had);
                if (r < 0 && r != -ESRCH) {
                        log_warning("Failed to put thread %" PRIu32 " back to SCHED_OTHER: %s", res->tid, strerror(-r));
                        if (error)
                                return kernel_failure(error, r, "release");
                        return -1;
                }
                parked = r == 0;
                if (parked && res->partitioned)
                        place_move_out(m, res->pid, res->tid);
                if (parked) {
                        /* Alive and released: its pin is kept for an Admit of the same thread. */
                        t = hashmap_remove(&m->targets, res->id);
                        sched_pin_cache_put(&m->pins, t);
                        free(t);
                }
        }
        if (!parked) /* it has ended, or may have (see release_books()) */
                capacity_recount_unsafe_for(m->capacity, res->params.period);
        release_books(m, res, reason);
        return 0;
}

int manager_release_process(Manager *m, const Caller *c, uint32_t pid, uint32_t *ret_n, OpError *error) {
        Reservation *res;
        uint32_t n = 0;

        /* All or nothing on permission: check every one first. */
        for (res = tree_find_process(m->tree, pid); res; res = res->proc_next)
                if (!admission_may_touch(c->uid, res)) {
                        Refusal rf = { .outcome = ADMIT_NOT_YOURS, .id = res->id };
                        return op_refused(error, &rf);
                }
        while ((res = tree_find_process(m->tree, pid))) {
                if (manager_release(m, c, res, "requested", error) < 0)
                        return -1;
                n++;
        }
        *ret_n = n;
        return 0;
}

void release_stop(Manager *m) {
        m->release.timer = sd_event_source_unref(m->release.timer);
        while (m->release.pending) {
                PendingReturn *p = m->release.pending;
                m->release.pending = p->next;
                free(p);
        }
}
