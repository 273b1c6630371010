/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The adoption room: after a restart, the state journal says what edfd had admitted; what the
 * kernel still shows as edfd left it is adopted again, the rest is finished (a release cut short)
 * or given back to its donor. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "basic/macro.h"
#include "manager-internal.h"
#include "sched-dl.h"

int adopt_load(Manager *m, StateLoaded *ret, uint64_t *ret_down_since) {
        _cleanup_free_ char *errors = NULL;
        int r;

        *ret = (StateLoaded) {};
        r = state_open(&m->state, m->state_dir);
        if (r == -EBUSY) {
                log_error("Another edfd holds %s/lock", m->state_dir);
                return r;
        }
        if (r < 0) {
                log_error("Cannot open the state directory %s: %s", m->state_dir, strerror(-r));
                return r;
        }
        /* When edfd last wrote its state, in /proc's clock (ticks since boot): the journal's mtime,
         * which state.c sets to within a second of its last record. */
        uint64_t down_since = boot_ticks();
        {
                _cleanup_free_ char *path = NULL;
                struct stat st;
                long hz = sysconf(_SC_CLK_TCK);
                time_t now = time(NULL);
                if (asprintf(&path, "%s/state", m->state_dir) >= 0 && stat(path, &st) == 0 && now >= st.st_mtime) {
                        uint64_t ago = (uint64_t) (now - st.st_mtime + 2) * (uint64_t) (hz > 0 ? hz : 100);
                        down_since = down_since > ago ? down_since - ago : 0;
                }
        }
        r = state_load(m->state, ret);
        if (r < 0) {
                log_error("Cannot read the state in %s: %s", m->state_dir, strerror(-r));
                return r;
        }
        if (ret->corrupt_path)
                log_error("The state file was corrupt (%s): kept as %s; starting from what the kernel shows",
                          ret->corrupt_reason ? ret->corrupt_reason : "unreadable", ret->corrupt_path);
        if (ret->torn_tail)
                log_notice("The last state record was torn by a crash; the change it began was never answered");

        /* With reservations to re-adopt, a capacity that fell while edfd was down must not stop it: it
         * starts over-committed. Without, a configuration too large for this machine is an error. */
        r = tree_build(m, m->config, m->config_path ? m->config_path : "(embedded edfd.yaml)", ret->groups,
                       ret->n_groups, false, ret->n_entries > 0, &m->tree, &errors);
        if (r < 0) {
                log_error("The configuration does not fit this machine:\n%s", errors ? errors : strerror(-r));
                state_loaded_done(ret);
                return r;
        }
        *ret_down_since = down_since;
        return 0;
}

static bool record_matches(const StateRecord *rec, bool same_thread, const SchedInfo *si) {
        return same_thread && same_params(si, &rec->params, rec->flags);
}

/* A split child that ended while edfd was down: give its runtime back to its re-adopted donor, as
 * the donor rule would have had edfd seen the exit (books first, through the core's rule, then the
 * kernel). Donors have lower ids than their children, so they are adopted first. */
static void return_to_donor(Manager *m, const StateRecord *rec) {
        Reservation *d = rec->donor ? tree_find_reservation(m->tree, rec->donor) : NULL, *tmp;
        Group *g = tree_find_group(m->tree, rec->group);
        ReleaseEffect e;
        SchedTarget *dt;

        if (!d || !g)
                return;
        ReservationSpec spec = { .id = rec->id, .pid = rec->pid, .tid = rec->tid, .uid = rec->uid,
                                 .identity = rec->identity, .params = rec->params, .flags = rec->flags,
                                 .donor = rec->donor, .donated = rec->donated, .partitioned = rec->partitioned,
                                 .cpu = rec->cpu };
        if (reservation_admit(m->tree, g, &spec, &tmp, NULL) != 0)
                return;
        reservation_release(m->tree, tmp, &e);
        if (!e.donor)
                return;
        dt = target_get(m, e.donor->id);
        if (!dt || apply_with_retry(dt, &e.donor->params, e.donor->flags) < 0) {
                (void) reservation_update(m->tree, e.donor, &e.donor_old, NULL);
                return;
        }
        log_info("Reservation %" PRIu64 " ended while edfd was down: its runtime went back to %" PRIu64, rec->id,
                 e.donor->id);
}

void adopt(Manager *m, const StateLoaded *l) {
        unsigned adopted = 0, gone = 0;

        for (size_t i = 0; i < l->n_entries; i++) {
                const StateEntry *e = &l->entries[i];
                const StateRecord *rec = e->has_intent ? &e->intent : &e->committed;
                SchedTarget t = SCHED_TARGET_NULL;
                SchedInfo si;
                Group *g;
                Refusal rf;
                char buf[256];
                int r, same = 0;

                r = sched_target_pin((pid_t) rec->pid, (pid_t) rec->tid, &t);
                if (r < 0 || sched_get((pid_t) rec->tid, &si) < 0 || (same = sched_target_is(&t, rec->identity)) < 0) {
                        sched_target_done(&t);
                        return_to_donor(m, rec);
                        gone++;
                        continue;
                }
                /* Parked at the zero-rounding bandwidth: edfd died in the middle of a release. Finish
                 * it, or the thread would crawl at 1024 ns every 4.19 s. */
                if (same && si.policy == SCHED_DEADLINE && si.runtime == SCHED_PARK_RUNTIME &&
                    si.period == SCHED_PARK_PERIOD) {
                        log_notice("Thread %" PRIu32 " was being released when edfd stopped: release finished", rec->tid);
                        (void) sched_release(&t);
                        sched_target_done(&t);
                        return_to_donor(m, rec);
                        gone++;
                        continue;
                }
                /* An unsettled intent: the kernel shows either it or the last committed record. */
                if (!record_matches(rec, same, &si)) {
                        if (e->has_intent && e->has_committed && record_matches(&e->committed, same, &si))
                                rec = &e->committed;
                        else {
                                if (same && si.policy == SCHED_DEADLINE)
                                        log_notice("Thread %" PRIu32 " has parameters edfd did not give it: not "
                                                   "re-adopted (counted as unmanaged)",
                                                   rec->tid);
                                sched_target_done(&t);
                                return_to_donor(m, rec);
                                gone++;
                                continue;
                        }
                }
                g = tree_find_group(m->tree, rec->group);
                /* The thread's identity as this kernel gives it (a record may hold a start time). */
                ReservationSpec spec = { .id = rec->id, .pid = rec->pid, .tid = rec->tid, .uid = rec->uid,
                                         .identity = t.identity, .params = rec->params, .flags = rec->flags,
                                         .donor = rec->donor, .donated = rec->donated, .partitioned = rec->partitioned,
                                 .cpu = rec->cpu };
                r = g ? reservation_admit(m->tree, g, &spec, NULL, &rf) : -1;
                if (r != 0) {
                        log_warning("Thread %" PRIu32 " (reservation %" PRIu64 ") cannot be re-adopted into %s: %s; "
                                    "putting it back to SCHED_OTHER",
                                    rec->tid, rec->id, rec->group,
                                    !g ? "the group no longer exists" : r > 0 ? refusal_format(&rf, buf, sizeof buf) : strerror(-r));
                        (void) sched_release(&t);
                        sched_target_done(&t);
                        return_to_donor(m, rec);
                        gone++;
                        continue;
                }
                if (target_put(m, rec->id, &t) < 0)
                        sched_target_done(&t);
                adopted++;
        }
        m->tree->next_id = MAX(m->tree->next_id, l->next_id);
        if (adopted || gone)
                log_info("Re-adopted %u reservations from %s; %u were gone", adopted, m->state_dir, gone);
}
