/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The manager's lifecycle (new, start, run, free, signals), its status to systemd, and what its
 * rooms share: failures, the pinned targets, the state records. The operations themselves live in
 * the rooms: manager-admit.c, manager-release.c, manager-groups.c, manager-config.c,
 * manager-procs.c and manager-adopt.c (see manager-internal.h for what they share). */

#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "core/bandwidth.h"
#include "core/duration.h"
#include "log.h"
#include "basic/macro.h"
#include "manager-bus.h"
#include "manager-internal.h"
#include "shared/protocol.h"
#include "sched-dl.h"

#define DEFAULT_STATE_DIR "/run/edfd"
#define OVERCOMMIT_LOG_INTERVAL_NSEC (60 * NSEC_PER_SEC)

int op_fail(OpError *e, OpFailure kind, const char *fmt, ...) {
        va_list ap;

        e->kind = kind;
        va_start(ap, fmt);
        vsnprintf(e->message, sizeof e->message, fmt, ap);
        va_end(ap);
        return -1;
}

static OpFailure failure_of(AdmitOutcome o) {
        switch (o) {
        case ADMIT_BAD_PID:
        case ADMIT_NO_SUCH_THREAD:
        case ADMIT_PROCESS_GONE:
        case ADMIT_THREAD_GONE:
                return OP_NO_SUCH_THREAD;
        case ADMIT_PID_ONE:
        case ADMIT_KERNEL_THREAD:
        case ADMIT_NOT_OWNER:
        case ADMIT_NOT_ALLOWED:
        case ADMIT_MOVE_NOT_ALLOWED:
        case ADMIT_NOT_YOURS:
                return OP_PERMISSION_DENIED;
        case ADMIT_BAD_GROUP_NAME:
        case ADMIT_BAD_FLAGS:
        case ADMIT_NO_CGROUP:
        case ADMIT_BAD_GROUP_BANDWIDTH:
                return OP_INVALID;
        case ADMIT_FOREIGN_DEADLINE:
                return OP_FOREIGN_DEADLINE;
        case ADMIT_LIMIT_EXCEEDED:
        case ADMIT_RATE_LIMITED:
                return OP_LIMIT_EXCEEDED;
        case ADMIT_NO_SUCH_RESERVATION:
                return OP_NO_SUCH_RESERVATION;
        default:
                return OP_REFUSED; /* manager-bus.c's reply_error() names these by outcome */
        }
}

int op_refused(OpError *e, const Refusal *r) {
        e->kind = failure_of(r->outcome);
        e->refusal = *r;
        refusal_format(r, e->message, sizeof e->message);
        return -1;
}

int op_errno(OpError *e, int err, const char *what) {
        e->kind = OP_ERRNO;
        e->err = err;
        snprintf(e->message, sizeof e->message, "%s: %s", what, strerror(-err));
        return -1;
}

/* --- targets: the pinned threads of reservations --- */

SchedTarget *target_get(Manager *m, uint64_t id) {
        return hashmap_get(&m->targets, id);
}

/* A reservation's thread is counted (throttle.h) from the moment it has its target until the target
 * goes: every room books and releases threads through these two. */
int target_put(Manager *m, uint64_t id, const SchedTarget *t) {
        SchedTarget *copy = malloc(sizeof *copy);
        int r;

        if (!copy)
                return -ENOMEM;
        *copy = *t;
        r = hashmap_put(&m->targets, id, copy);
        if (r < 0) {
                free(copy);
                return r;
        }
        r = throttles_track(m->throttles, (uint32_t) t->tid);
        if (r < 0 && r != -EOPNOTSUPP)
                log_debug("Throttles of thread %d are not counted: %s", (int) t->tid, strerror(-r));
        return 0;
}

static void target_free(void *p) {
        SchedTarget *t = p;

        if (t) {
                sched_target_done(t);
                free(t);
        }
}

void target_drop(Manager *m, uint64_t id) {
        SchedTarget *t = hashmap_remove(&m->targets, id);

        if (t)
                throttles_untrack(m->throttles, (uint32_t) t->tid);
        target_free(t);
}

uint64_t sched_flags_of(uint64_t admit_flags) {
        return ((admit_flags & EDFD_ADMIT_RECLAIM) ? SCHED_FLAG_RECLAIM : 0) |
               ((admit_flags & EDFD_ADMIT_OVERRUN_SIGNAL) ? SCHED_FLAG_DL_OVERRUN : 0);
}

uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

/* sched_apply_deadline, retrying EBUSY briefly: the books say it fits, so the kernel is still
 * holding bandwidth that is on its way back. */
int apply_with_retry(const SchedTarget *t, const DlParams *p, uint64_t flags) {
        uint64_t until = now_ns() + EBUSY_RETRY_NSEC;
        int r;

        for (unsigned i = 0;; i++) {
                r = sched_apply_deadline(t, p->runtime, p->deadline, p->period, sched_flags_of(flags));
                if (r != -EBUSY || now_ns() >= until)
                        return r;
                /* 50 us, doubling up to 5 ms. */
                struct timespec ts = { 0, (long) MIN(50000UL << MIN(i, 7u), 5000000UL) };
                nanosleep(&ts, NULL);
        }
}

int kernel_failure(OpError *e, int r, const char *what) {
        switch (r) {
        case -EBUSY:
                return op_fail(e, OP_KERNEL_REFUSED,
                               "%s: the kernel refused the bandwidth (EBUSY) although edfd's books have room: a "
                               "deadline thread edfd does not manage may hold it",
                               what);
        case -EPERM:
                return op_fail(e, OP_KERNEL_REFUSED,
                               "%s: the kernel refused (EPERM): the thread's CPU affinity must span its whole root "
                               "domain, and edfd needs CAP_SYS_NICE",
                               what);
        case -ESRCH:
        case -ENOENT:
                return op_fail(e, OP_NO_SUCH_THREAD, "%s: the thread is gone", what);
        case -EINVAL:
                return op_fail(e, OP_KERNEL_REFUSED, "%s: the kernel refused the parameters (EINVAL)", what);
        default:
                return op_errno(e, r, what);
        }
}

/* --- state --- */

int record(Manager *m, bool intent, const Reservation *r) {
        StateRecord rec;

        state_record_from(&rec, r);
        return state_write_reservation(m->state, intent, &rec);
}

void log_state_failure(int r) {
        log_error("Failed to record a change in the state directory: %s", strerror(-r));
}

/* --- status --- */

static void send_status(Manager *m) {
        char a[DURATION_MAX], b[DURATION_MAX];
        size_t n_groups = m->tree->n_groups - 1;

        sd_notifyf(false,
                   "STATUS=%zu reservations in %zu groups, %s of %s allocated%s%s%s; events %" PRIu64 " seen, %" PRIu64
                   " lost, %" PRIu64 " resyncs, %" PRIu64 " unseen children",
                   m->tree->n_reservations, n_groups, bw_format(m->tree->root->allocated, a),
                   bw_format(m->tree->root->bw, b),
                   tree_overcommitted(m->tree) ? " (OVERCOMMITTED: admissions refused)" : "",
                   capacity_kernel(m->capacity)->admission_off ? " (kernel admission OFF)" : "",
                   capacity_count_negative(m->capacity)
                           ? " (the kernel's deadline count is below zero: it refuses every admission)"
                           : "",
                   m->procs.events_seen,
                   m->procs.events_lost, m->procs.resyncs, m->procs.unseen_children);
}

static int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        send_status(userdata);
        return 0;
}

/* Tell systemd the new STATUS=, at most every STATUS_INTERVAL_USEC: a burst of admissions or a
 * fork storm should not cost systemd a message each. */
#define STATUS_INTERVAL_USEC (250 * UINT64_C(1000))
void notify_status(Manager *m) {
        uint64_t now;
        int r;

        if (!m->event) {
                send_status(m);
                return;
        }
        if (m->status_timer) {
                int enabled = SD_EVENT_OFF;
                (void) sd_event_source_get_enabled(m->status_timer, &enabled);
                if (enabled != SD_EVENT_OFF)
                        return; /* one is due already */
        }
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        if (!m->status_timer) {
                r = sd_event_add_time(m->event, &m->status_timer, CLOCK_MONOTONIC, now + STATUS_INTERVAL_USEC, 0,
                                      on_status_timer, m);
                if (r < 0)
                        send_status(m);
                else
                        (void) sd_event_source_set_enabled(m->status_timer, SD_EVENT_ONESHOT);
                return;
        }
        (void) sd_event_source_set_time(m->status_timer, now + STATUS_INTERVAL_USEC);
        (void) sd_event_source_set_enabled(m->status_timer, SD_EVENT_ONESHOT);
}

/* --- what the rooms share: callers, limits, the root's capacity --- */

/* The configuration's limits for uid (its own entry, else "default", else none). */
UserLimits limits_of(Manager *m, uid_t uid, const ConfLimit **ret_conf) {
        const ConfLimit *l;

        l = conf_find_limit(m->config, authz_user_name(&m->names, uid));
        if (ret_conf)
                *ret_conf = l;
        return l ? (UserLimits) { .bandwidth = l->bandwidth, .reservations = l->reservations } : USER_LIMITS_NONE;
}

/* The root's bandwidth: what the kernel admits, or the configuration's cap on what edfd hands out.
 * Unmanaged threads are charged to the root's allocation, so a cap counts on top of them (never
 * above what the kernel admits): "capacity: 50%" means edfd hands out at most 50%. */
uint64_t root_capacity(const Manager *m) {
        return capacity_root(m->capacity, !m->config || m->config->capacity_auto, m->config ? m->config->capacity : 0);
}

/* Does the kernel show what edfd gave: the parameters, and the flags of admit_flags plus
 * RESET_ON_FORK? A thread that cleared RECLAIM or RESET_ON_FORK changed its scheduling too. */
bool same_params(const SchedInfo *si, const DlParams *p, uint64_t admit_flags) {
        return si->policy == SCHED_DEADLINE && si->runtime == p->runtime && si->deadline == p->deadline &&
               si->period == p->period &&
               (si->flags & SCHED_APPLY_FLAGS) == (sched_flags_of(admit_flags) | SCHED_FLAG_RESET_ON_FORK);
}

/* --- the capacity, to the tree and to the operator --- */

/* Measure the capacity again (capacity_refresh()), say what changed, and give the root of the tree
 * what the kernel admits now. */
void capacity_refresh_all(Manager *m) {
        const KernelCapacity *kc;
        CapacityReport rep;
        uint64_t cap, unmanaged;
        char a[DURATION_MAX], b[DURATION_MAX];

        capacity_refresh(m->capacity, m->tree, &rep);
        kc = capacity_kernel(m->capacity);
        unmanaged = capacity_unmanaged(m->capacity);
        if (rep.count_negative_changed && capacity_count_negative(m->capacity))
                log_error("The kernel's count of deadline bandwidth (dl_bw->total_bw in debugfs) is below zero: it "
                          "subtracted more than it added, and refuses every SCHED_DEADLINE change that needs "
                          "bandwidth (edfd answers KernelRefused) until it recounts, which edfd has it do as soon as "
                          "none of its deadline threads is ending (reading sched_rt_runtime_us; see design.md, "
                          "\"What the kernel does\")");
        else if (rep.count_negative_changed)
                log_notice("The kernel's count of deadline bandwidth is above zero again");
        if (rep.count_negative_changed)
                notify_status(m);
        if (rep.unmanaged_changed)
                log_info("%u deadline threads not managed by edfd hold %s", capacity_unmanaged_threads(m->capacity),
                         bw_format(unmanaged, a));
        if (rep.fair_first)
                log_info("The kernel's fair servers hold %s (measured in debugfs; their settings say %s)",
                         bw_format(rep.fair_measured, a), bw_format(rep.fair_set, b));
        if (rep.fair_uncounted_changed && kc->fair_server_uncounted > 0)
                log_warning("The kernel counts %s less deadline bandwidth than its fair servers are set to take (%s): "
                            "dl_bw->total_bw in debugfs lacks them (a root-domain rebuild emptied it of them on 6.12), "
                            "so the kernel admits more than the servers leave; edfd keeps the servers' share out of "
                            "what it promises",
                            bw_format(kc->fair_server_uncounted, a), bw_format(kc->fair_server, b));
        else if (rep.fair_uncounted_changed)
                log_notice("The kernel counts its fair servers' bandwidth again");
        cap = root_capacity(m);
        if (rep.admission_off_began)
                log_warning("Kernel deadline admission is OFF (sched_rt_runtime_us = -1): edfd's books are the only "
                            "protection against overload");
        else if (rep.admission_off_ended)
                log_notice("Kernel deadline admission is on again (sched_rt_runtime_us = %" PRId64 ")",
                           kc->rt_runtime_us);
        if (tree_set_capacity(m->tree, cap, unmanaged)) {
                /* Loud until it fits again: an error at once, then again every minute. */
                uint64_t now = now_ns();
                if (!m->overcommit_reported || now - m->overcommit_logged_ns >= OVERCOMMIT_LOG_INTERVAL_NSEC) {
                        log_error("Capacity is below what is allocated: %s allocated (%s of it unmanaged) of %s that "
                                  "the kernel admits on %u CPUs (sched_rt_runtime_us %" PRId64 "); admissions are "
                                  "refused until it fits again, nobody is evicted",
                                  bw_format(m->tree->root->allocated, a), bw_format(unmanaged, b),
                                  bw_format(cap, (char[DURATION_MAX]) {}), kc->ncpus, kc->rt_runtime_us);
                        m->overcommit_logged_ns = now;
                }
                m->overcommit_reported = true;
        } else if (m->overcommit_reported) {
                log_notice("Capacity covers the allocation again: admissions are accepted");
                m->overcommit_reported = false;
        }
}

/* --- lifecycle --- */

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        if (si->ssi_signo == SIGHUP) {
                OpError e = {};
                if (manager_reload(m, &e) < 0)
                        log_error("Reload failed, keeping the old configuration: %s", e.message);
                return 0;
        }
        sd_notify(false, "STOPPING=1");
        m->stopping = true;
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

/* The recount timer found the sysctls changed: the whole refresh. */
static void on_capacity_changed(Capacity *c, void *userdata) {
        capacity_refresh_all(userdata);
}

int manager_new(Manager **ret, const ManagerOptions *opts) {
        _cleanup_free_ char *errors = NULL;
        StateLoaded loaded = {};
        uint64_t down_since;
        Manager *m;
        struct rlimit rl;
        int r;

        m = calloc(1, sizeof(Manager));
        if (!m)
                return log_oom();
        m->procs.fd = -1;
        sched_pin_cache_init(&m->pins);
        if (manager_bus_new(m) < 0) {
                manager_free(m);
                return log_oom();
        }

        /* One pidfd per admitted thread: lift the soft fd limit. */
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }

        if (opts->config_path)
                m->config_path = strdup(opts->config_path);
        else if (!opts->embedded_config && access(EDFD_CONFIG_PATH, F_OK) == 0)
                m->config_path = strdup(EDFD_CONFIG_PATH);
        m->state_dir = strdup(opts->state_dir ? opts->state_dir : DEFAULT_STATE_DIR);
        if (!m->state_dir || ((opts->config_path || m->config_path) && !m->config_path)) {
                manager_free(m);
                return log_oom();
        }

        r = config_load(m->config_path, &m->config, &errors);
        if (r < 0) {
                log_error("Invalid configuration %s:\n%s", m->config_path ? m->config_path : "(embedded)",
                          errors ? errors : strerror(-r));
                manager_free(m);
                return r;
        }
        if (!m->config_path)
                log_info("Using the embedded default configuration%s",
                         opts->embedded_config ? "" : " (there is no " EDFD_CONFIG_PATH ")");

        m->groups.root = strdup(opts->cgroup_root ? opts->cgroup_root : m->config->cgroup_root);
        m->groups.root_forced = opts->cgroup_root;
        if (!m->groups.root) {
                manager_free(m);
                return log_oom();
        }

        r = capacity_new(&m->capacity);
        if (r < 0) {
                log_error("Cannot read the kernel's deadline capacity: %s", strerror(-r));
                manager_free(m);
                return r;
        }

        /* Before adopt(): the re-adopted threads are counted too. */
        if (throttles_new(&m->throttles, opts->no_throttle_count ? "turned off (--no-throttle-count)" : NULL,
                          true) < 0) {
                manager_free(m);
                return log_oom();
        }
        if (throttles_on(m->throttles))
                log_info("Counting throttles of managed threads (BPF on the sched_switch tracepoint)");
        else
                log_notice("Throttles are not counted: %s", throttles_state(m->throttles));
        if (strcmp(throttles_lock_state(m->throttles), "on") == 0)
                log_info("Counting possible lock waits of managed threads (BPF on the sched_waking tracepoint)");
        else if (throttles_on(m->throttles))
                log_notice("Lock waits are not counted: %s", throttles_lock_state(m->throttles));
        /* The counter is attached for good: what only its load needed goes now. */
        {
                char note[256];

                if (throttles_seal(m->throttles, note, sizeof note) < 0)
                        log_notice("%s", note);
                else if (note[0])
                        log_info("Dropped CAP_BPF and CAP_PERFMON; %s", note);
                else
                        log_debug("Dropped CAP_BPF and CAP_PERFMON from every capability set");
        }

        r = adopt_load(m, &loaded, &down_since);
        if (r < 0) {
                manager_free(m);
                return r;
        }
        groups_setup(m);
        place_setup(m);
        procs_open(m);
        adopt(m, &loaded);
        place_restore_origins(m, loaded.origins, loaded.n_origins);
        startup_restore(m, loaded.watches, loaded.n_watches);
        state_loaded_done(&loaded);
        /* Children born while edfd was down (since the state was last written) were not raised. */
        count_unseen_children(m, down_since);
        capacity_refresh_all(m);
        r = snapshot(m, true);
        if (r < 0)
                log_warning("Failed to rewrite the state file: %s", strerror(-r));
        for (const Group *g = m->tree->root; g; g = group_next_preorder(g))
                group_apply_cgroup(m, g);

        *ret = m;
        return 0;
}

/* --- throttles and lock waits: the counts seen once a second, a signal for each reservation whose
 * count grew --- */

#define THROTTLE_POLL_USEC UINT64_C(1000000)

static void on_thread_counted(void *userdata, uint32_t tid, const ThrottleCounts *total, unsigned what) {
        Manager *m = userdata;
        const Reservation *r = tree_find_thread(m->tree, tid);

        if (!r)
                return;
        if (what & THROTTLE_GREW_THROTTLES)
                manager_bus_emit_throttled(m, r, total->throttles);
        if (what & THROTTLE_GREW_LOCK_WAITS)
                manager_bus_emit_lock_waits(m, r, total->lock_waits);
}

/* Nobody subscribed: nothing is read (the next subscriber's first second reports what grew since). */
static int on_throttle_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        if (manager_bus_subscribed(m))
                (void) throttles_poll(m->throttles, on_thread_counted, m);
        (void) sd_event_source_set_time_relative(s, THROTTLE_POLL_USEC);
        return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static void throttles_start(Manager *m) {
        int r;

        if (!throttles_on(m->throttles))
                return;
        r = sd_event_add_time_relative(m->event, &m->throttle_timer, CLOCK_MONOTONIC, THROTTLE_POLL_USEC,
                                       THROTTLE_POLL_USEC / 10, on_throttle_timer, m);
        if (r < 0)
                log_warning("Throttles are counted but not signalled: %s", strerror(-r));
}

int manager_start(Manager *m) {
        int r;

        r = sd_event_default(&m->event);
        if (r < 0)
                return r;
        capacity_attach_event(m->capacity, m->event, on_capacity_changed, m);
        sigset_t ss;
        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGHUP);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        (void) sd_event_add_signal(m->event, &m->sigterm, SIGTERM, on_signal, m);
        (void) sd_event_add_signal(m->event, &m->sigint, SIGINT, on_signal, m);
        (void) sd_event_add_signal(m->event, &m->sighup, SIGHUP, on_signal, m);
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                log_warning("Failed to enable the watchdog: %s", strerror(-r));

        r = procs_start(m);
        if (r < 0)
                return r;
        startup_start(m);
        place_start(m);
        throttles_start(m);

        r = sd_bus_open_system(&m->bus);
        if (r < 0) {
                log_error("Cannot connect to the system bus: %s", strerror(-r));
                return r;
        }
        r = manager_bus_register(m);
        if (r < 0)
                return r;
        r = manager_bus_attach(m);
        if (r < 0)
                return r;
        r = sd_bus_request_name(m->bus, EDFD_BUS_NAME, 0);
        if (r < 0) {
                log_error("Cannot own %s on the bus: %s", EDFD_BUS_NAME, strerror(-r));
                return r;
        }
        /* Drain anything that happened while the state was read. */
        manager_resync(m, "start");
        sd_notify(false, "READY=1");
        send_status(m);
        log_info("edfd " EDFD_VERSION " ready: %zu groups, %zu reservations", m->tree->n_groups - 1,
                 m->tree->n_reservations);
        return 0;
}

int manager_run(Manager *m) {
        return sd_event_loop(m->event);
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        sd_event_source_unref(m->sigterm);
        sd_event_source_unref(m->sigint);
        sd_event_source_unref(m->sighup);
        sd_event_source_unref(m->status_timer);
        procs_free(m);
        place_free(m);
        hashmap_done_free(&m->plan.budgets, free);
        m->capacity = capacity_free(m->capacity);
        release_stop(m);
        startup_stop(m);
        admit_stop(m);             /* answers the waiting admissions: before the bus half goes */
        manager_bus_free(m);
        sd_bus_flush_close_unref(m->bus);
        sd_event_unref(m->event);
        hashmap_done_free(&m->targets, target_free);
        sd_event_source_unref(m->throttle_timer);
        m->throttles = throttles_free(m->throttles);
        sched_pin_cache_prune(&m->pins, true);
        authz_names_flush(&m->names);
        tree_free(m->tree);
        conf_free(m->config);
        state_free(m->state);
        free(m->config_path);
        free(m->state_dir);
        free(m->groups.root);
        free(m);
        return NULL;
}
