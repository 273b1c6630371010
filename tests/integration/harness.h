/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The integration test harness: a private dbus-daemon with a system-bus style policy, a cgroup root
 * of its own, and edfd started on them with its own NOTIFY_SOCKET, plus the kernel-side helpers the
 * tests check edfd against (sched_getattr, a probe of the kernel's free deadline bandwidth, child
 * processes to admit).
 *
 * Every test that starts a harness registers it as the current one, so that the suite's fini
 * (harness_fini) tears it down and prints edfd's log when the test ended early (a failed assertion).
 * A test that reaches its end calls harness_stop(), which also checks that edfd is still alive and
 * exits cleanly on SIGTERM.
 *
 * Environment: EDFD_BINARY (the built daemon) and EDFD_TEST_DIR (this directory, for bus.conf and
 * test-data/), both set by meson. */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <string.h>

#include <systemd/sd-bus.h>

#include "basic/macro.h"
#include "basic/sched-attr.h"
#include "core/bandwidth.h" /* BW_UNIT, BW_SHIFT: the kernel's fixed point */

static inline bool streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}


#define HARNESS_MSEC UINT64_C(1000000)

#define HARNESS_MAX_THREADS 16
#define HARNESS_MAX_CHILDREN 256
#define HARNESS_MAX_SIGNALS 256


/* A child process made by the harness: its main thread plus n_threads - 1 more, all asleep (or
 * spinning a little now and then). tids[0] == pid. */
typedef struct HarnessChild {
        pid_t pid;
        unsigned n_threads;
        pid_t tids[HARNESS_MAX_THREADS];
        bool reaped;
} HarnessChild;

/* A signal edfd emitted, as recorded by the harness's match. */
typedef struct HarnessSignal {
        char member[64];
        uint64_t id;
        uint32_t pid, tid;
        char group[128];
        char reason[32];
        uint64_t seq;         /* the order in which the harness's bus dispatched it (Harness.seq) */
} HarnessSignal;

typedef struct Harness {
        char *dir;            /* temporary directory, removed by harness_stop() */
        char *config_path;    /* edfd's --config */
        char *state_dir;      /* edfd's --state-dir */
        char *cgroup_root;    /* absolute path of edfd's --cgroup-root */
        char *cgroup_rel;     /* the same, relative to the cgroup2 mount ("/edfd-test-123") */
        char *log_path;       /* edfd's stdout and stderr, all runs appended */
        char *dbus_log_path;
        char *bus_address;
        char **extra_args;    /* more edfd arguments, NULL-terminated, or NULL */
        uint64_t watchdog_usec; /* WATCHDOG_USEC for edfd (harness_set_watchdog()); 0: none */

        pid_t dbus_pid;
        pid_t edfd_pid;       /* 0 while edfd is down */
        /* The notify socket is read all the time by a thread of the harness: edfd's sd_notify()
         * blocks once a datagram socket's queue is full. The fields below are under notify_lock;
         * read them through harness_notify_counts(). */
        int notify_fd;
        char *notify_path;
        int notify_stop[2];   /* pipe: a byte stops the thread */
        pthread_t notify_thread;
        bool notify_thread_running;
        pthread_mutex_t notify_lock;
        pthread_cond_t notify_cond;
        bool stopping_seen;   /* STOPPING=1 arrived since the last start */
        unsigned n_ready;     /* READY=1 messages received, all runs */
        unsigned n_reloading; /* RELOADING=1 messages received, all runs */
        unsigned n_watchdog;  /* WATCHDOG=1 messages received, all runs */
        char status[256];     /* the last STATUS= line */
        bool logs_dumped;     /* harness_dump_logs() ran: harness_free() need not print them again */

        sd_bus *bus;          /* client connection, root */
        sd_bus_slot *signal_slot;
        HarnessSignal signals[HARNESS_MAX_SIGNALS];
        size_t n_signals;
        uint64_t seq;         /* messages dispatched to the harness's callbacks so far: a test's own
                               * callbacks count here too, to compare orders */

        HarnessChild *children[HARNESS_MAX_CHILDREN];
        size_t n_children;
} Harness;

/* What ListReservations returns, one entry. The last member, an a{sv}, is read key by key: the keys
 * the harness knows land in their fields (has_* says whether the key was there), the others are
 * only counted in n_unknown, so that a test can say which keys an entry carried. */
typedef struct HarnessReservation {
        uint64_t id;
        uint32_t pid, tid;
        char *group;
        uint64_t runtime, deadline, period, bandwidth, flags, split_from;
        uint32_t uid;
        bool has_donated;
        uint64_t donated;                 /* "donated" (t) */
        unsigned n_unknown;
} HarnessReservation;

/* What ListGroups returns, one entry; its a{sv} read as in HarnessReservation. Who may use the group:
 * anyone (users empty), nobody but root (!anyone and users empty), or the names in users. */
typedef struct HarnessGroup {
        char *path;
        uint64_t runtime, period, bandwidth, allocated;
        uint32_t reservations, groups;
        char *cgroup, *fork, *threads;
        int anyone;
        char **users;                     /* NULL-terminated, never NULL */
        int dynamic;
        bool has_min_split_runtime, has_overridden, has_held;
        uint64_t min_split_runtime;       /* "min_split_runtime" (t) */
        int overridden;                   /* "overridden" (b) */
        uint64_t held;                    /* "held" (t): for admissions waiting for their start */
        unsigned n_unknown;
} HarnessGroup;

/* Read one integer from a file such as /proc/sys/kernel/sched_rt_runtime_us. Returns 0 or a negative
 * errno (-EBADMSG when it holds no number). */
int harness_read_ll(const char *path, long long *ret);

/* Skip the current test (cr_skip_test) unless we are root, SCHED_DEADLINE works on a helper
 * process, a cgroup2 mount exists, dbus-daemon exists and EDFD_BINARY names an executable. First,
 * where the kernel's deadline count is short of what exists (harness_kernel_shortfall), repair it:
 * wait out the 0-lag times and have the kernel recount (it says so on stderr). */
void harness_require(void);

/* For a test that asserts the kernel's exact deadline count: wait until whatever deadline task ended
 * before it (an earlier test's child) is past its 0-lag time (the longest period the kernel allows,
 * sched_deadline_period_max_us), so that edfd's start and the next reads of sched_rt_runtime_us
 * recount exactly; then repair a count that is short already (as harness_require does). */
void harness_settle_kernel_count(void);

/* The contents of EDFD_TEST_DIR/test-data/NAME, newly allocated; NULL (and a message) if unreadable. */
char *harness_read_test_data(const char *name);

/* Start everything: temporary directory, config file with config_yaml_text, dbus-daemon, cgroup
 * root, edfd (with extra_args appended, NULL-terminated, may be NULL), wait for READY=1 and for the
 * bus name, connect the client and subscribe to edfd's signals. Returns 0 and the harness in *ret,
 * or a negative errno after printing why and undoing everything. Makes the harness current. */
int harness_start(Harness **ret, const char *config_yaml_text, const char *const extra_args[]);

/* harness_require(), then harness_start() with test-data/CONFIG_NAME; asserts success. */
Harness *harness_start_or_skip(const char *config_name);

/* Replace edfd's config file with text (for Reload tests). Returns 0 or a negative errno. */
int harness_write_config(Harness *h, const char *text);

/* How many READY=1 and RELOADING=1 edfd sent so far (all runs); either pointer may be NULL. */
void harness_notify_counts(Harness *h, unsigned *ret_ready, unsigned *ret_reloading);

/* How many WATCHDOG=1 edfd sent so far (all runs). */
unsigned harness_notify_watchdogs(Harness *h);

/* From edfd's next start on, give it WATCHDOG_USEC=usec and WATCHDOG_PID=its own pid, as systemd does
 * for a unit with WatchdogSec=; 0 (the default) gives it neither. */
void harness_set_watchdog(Harness *h, uint64_t usec);

/* Wait (at most timeout_usec) until edfd sent n WATCHDOG=1 in all. Returns 0 or -ETIMEDOUT. */
int harness_wait_watchdogs(Harness *h, unsigned n, uint64_t timeout_usec);

/* Wait (at most 10 s) until n_ready >= ready and n_reloading >= reloading. Returns 0 or -ETIMEDOUT. */
int harness_wait_notify(Harness *h, unsigned ready, unsigned reloading);

/* Send sig to edfd and wait for it to exit (SIGKILL after 10 s). Returns the wait status, or a
 * negative errno. edfd is down afterwards. */
int harness_kill_daemon(Harness *h, int sig);

/* Start edfd again on the same config, state dir and cgroup root, wait for READY=1 and its name.
 * Returns 0 or a negative errno (after printing why). */
int harness_start_daemon(Harness *h);

/* SIGKILL (kill9) or SIGTERM edfd, then start it again. Returns 0 or a negative errno; with SIGTERM
 * an exit status other than 0 is an error too. */
int harness_restart_daemon(Harness *h, bool kill9);

/* Normal end of a test: checks (cr_assert) that edfd is alive, stops it with SIGTERM and checks it
 * exited with status 0, then tears everything down. Clears the current harness. */
void harness_stop(Harness *h);

/* Tear down without checking, print edfd's log; NULL is fine. Returns NULL. */
Harness *harness_free(Harness *h);

/* The suite fini: frees the current harness if a test left one behind (printing edfd's log). */
void harness_fini(void);

/* Print edfd's log (and the bus's) to stderr. */
void harness_dump_logs(Harness *h);

/* ---- bus calls ---- */

/* Call an edfd method (types and arguments as sd_bus_call_method). *error is filled on failure;
 * reply may be NULL. Returns 0 or a negative errno. */
int harness_call(Harness *h, sd_bus_error *error, sd_bus_message **reply, const char *member,
                 const char *types, ...);

/* Admit(...). On success *ret_id (may be NULL) gets the id. */
int harness_admit(Harness *h, sd_bus_error *error, uint32_t pid, uint32_t tid, const char *group,
                  uint64_t runtime, uint64_t deadline, uint64_t period, uint64_t flags, uint64_t *ret_id);

/* ListReservations() / ListGroups(); *ret is an array of *ret_n entries, free with the functions below. */
int harness_list_reservations(Harness *h, HarnessReservation **ret, size_t *ret_n);
int harness_list_groups(Harness *h, HarnessGroup **ret, size_t *ret_n);
void harness_reservations_free(HarnessReservation *r, size_t n);
void harness_groups_free(HarnessGroup *g, size_t n);
/* Free what one entry of harness_list_groups() holds (not the entry) and zero it. */
void harness_group_entry_done(HarnessGroup *g);

/* The whole of ListReservations / ListGroups as one canonical, sorted text (one line per entry), for
 * before/after comparisons. Newly allocated; asserts the calls succeed. */
char *harness_books_reservations(Harness *h);
char *harness_books_groups(Harness *h);

/* Both, for "a refusal changes nothing": take them before, assert they are the same after. */
typedef struct HarnessBooks {
        char *reservations;
        char *groups;
} HarnessBooks;
HarnessBooks harness_books_take(Harness *h);
void harness_books_assert_same(Harness *h, const HarnessBooks *before, const char *after_what);
void harness_books_free(HarnessBooks *b);

/* Assert that ListReservations is empty (what: the situation, for the message). */
void harness_assert_no_reservations(Harness *h, const char *what);

/* The entry with that id / path, or NULL. */
const HarnessReservation *harness_find_reservation(const HarnessReservation *r, size_t n, uint64_t id);
const HarnessGroup *harness_find_group(const HarnessGroup *g, size_t n, const char *path);

/* Read a property of the manager interface. */
int harness_get_u64(Harness *h, const char *property, uint64_t *ret);
int harness_get_string(Harness *h, const char *property, char **ret);

/* Process the bus until edfd emitted signal member (with that id unless id is UINT64_MAX, with that
 * reason unless reason is NULL), for at most 5 s. Returns a copy of the recorded signal (removed
 * from the list) in *ret (may be NULL); 0 on success, -ETIMEDOUT otherwise. */
int harness_wait_signal(Harness *h, const char *member, uint64_t id, const char *reason, HarnessSignal *ret);

/* Forget all recorded signals (after processing what is queued). */
void harness_clear_signals(Harness *h);

/* Assertions with a message that names the call, the error expected and the error received. */
void harness_assert_ok_(int r, const sd_bus_error *e, const char *what);
void harness_assert_error_(int r, const sd_bus_error *e, const char *what, const char *name, const char *alt);
#define assert_bus_ok(r, e, what) harness_assert_ok_((r), (e), (what))
#define assert_bus_error(r, e, what, name) harness_assert_error_((r), (e), (what), (name), NULL)
/* Either of two error names is right (where the contract leaves the choice open). */
#define assert_bus_error2(r, e, what, name, alt) harness_assert_error_((r), (e), (what), (name), (alt))

/* Assert that tid is SCHED_DEADLINE with these parameters and SCHED_FLAG_RESET_ON_FORK (plus
 * exactly extra_flags among RECLAIM and DL_OVERRUN). */
void harness_assert_dl(pid_t tid, uint64_t runtime, uint64_t deadline, uint64_t period, uint64_t extra_flags);
/* Assert that tid is SCHED_OTHER. */
void harness_assert_other(pid_t tid);

/* Format a list as harness_books_*() do (sorts it in place). Newly allocated. */
char *harness_format_reservations(HarnessReservation *r, size_t n);
char *harness_format_groups(HarnessGroup *g, size_t n);

/* ---- children ---- */

/* Fork a child with n_threads threads (1..HARNESS_MAX_THREADS) that sleep, or spin ~200 us every
 * 20 ms when spin is set. The child dies with the test (PR_SET_PDEATHSIG) and at harness_stop().
 * Returns 0 or a negative errno. The harness owns *ret. h may be NULL: then free it with
 * harness_child_kill() yourself. */
int harness_spawn_child(Harness *h, unsigned n_threads, bool spin, HarnessChild **ret);

/* SIGKILL the child and reap it. Safe to call twice. */
void harness_child_kill(HarnessChild *c);

/* A pid that no process has (a child's pid after it was reaped), for "no such process" tests. */
pid_t harness_dead_pid(void);

/* The cgroup (v2, "0::" line of /proc/PID/cgroup) of a process, newly allocated, or NULL. */
char *harness_cgroup_of(pid_t pid);

/* ---- kernel ---- */

/* Raw sched_getattr / sched_setattr. Return 0 or a negative errno. */
int harness_sched_getattr(pid_t tid, SchedAttr *ret);
int harness_sched_setattr(pid_t tid, const SchedAttr *attr);

/* Make tid SCHED_DEADLINE ourselves (RESET_ON_FORK | flags). */
int harness_dl_set(pid_t tid, uint64_t runtime, uint64_t deadline, uint64_t period, uint64_t flags);
/* Fill the kernel's deadline pool with the threads of filler (a child of 2 threads does), behind
 * edfd's back (edfd counts deadline threads it does not manage only at start and at a resync, every
 * 10 s): what is left is less than 1 us per 100 ms. Again after 300 ms, for what other tests'
 * threads gave back at their 0-lag time meanwhile. harness_empty_pool() gives it all back. */
void harness_fill_pool(const HarnessChild *filler);
void harness_empty_pool(const HarnessChild *filler);

/* Give tid's deadline bandwidth back without leaving it stuck in the kernel: DL->DL to 1024 ns over
 * 4.19 s (rounds to zero), then SCHED_OTHER. Does nothing if tid is not SCHED_DEADLINE. */
int harness_dl_reset(pid_t tid);

/* The kernel's unit bandwidth of runtime/period: (runtime << BW_SHIFT) / period, as to_ratio(),
 * written out here rather than bw_of()'s so that the tests check the core against the formula. */
uint64_t harness_bw(uint64_t runtime, uint64_t period);

/* The deadline bandwidth the kernel still admits, machine-wide, in BW_UNIT units: binary-searches
 * the largest runtime over 100 ms that sched_setattr admits on sleeping helpers (one after another
 * while each gets a whole CPU), then lowers each to a zero-rounding bandwidth and SCHED_OTHER. */
int harness_probe_headroom(uint64_t *ret);

/* Probe repeatedly (bounded: about 2 s) until the headroom is within tolerance of target. Returns true
 * if it got there; *ret_last gets the last probe. */
bool harness_headroom_settles(uint64_t target, uint64_t tolerance, uint64_t *ret_last);

/* The pool the kernel's own arithmetic gives when nothing is charged to anybody: every online CPU's
 * sched_rt_runtime_us / sched_rt_period_us, less the fair server's 50 ms per 1 s per CPU on 6.12 and
 * later (harness_fair_servers()). 0 when it cannot be known (admission off, an unreadable file). */
uint64_t harness_nominal_pool(void);
uint64_t harness_fair_servers(void);

/* The deadline bandwidth every live SCHED_DEADLINE thread on the machine holds, as the kernel
 * computes it (to_ratio per thread); zombies are left out (the kernel gave theirs back). */
uint64_t harness_dl_bw_on_machine(void);

/* How much less deadline bandwidth the kernel counts than exists: the fair servers plus every
 * SCHED_DEADLINE thread on the machine, less the root domain's dl_bw->total_bw from
 * /sys/kernel/debug/sched/debug (read with debugfs mounted in a private mount namespace, so the
 * machine's mounts stay as they are). 0 when the kernel counts all of it (or more: bandwidth of a
 * thread that just left SCHED_DEADLINE is counted until its 0-lag time). This 6.18 kernel was seen
 * to count 2% of a CPU less for minutes and, once, to go below zero: a recount (which reading
 * sched_rt_runtime_us triggers) that raced an ending deadline task (design.md, "What the kernel
 * does"). A kernel that counts less admits more, whatever edfd computes. Returns 0 or a negative
 * errno (-ENOENT: no debugfs). */
int harness_kernel_shortfall(uint64_t *ret);

/* The root domain's dl_bw->total_bw itself, as above (signed, as the kernel prints it). */
int harness_kernel_total_bw(long long *ret);

/* /proc/sys/kernel/sched_deadline_period_{min,max}_us in ns. */
uint64_t harness_period_min(void);
uint64_t harness_period_max(void);

/* Sleep for usec microseconds (for bounded polling only, never for correctness). */
void harness_usleep(uint64_t usec);
/* A child of the test that becomes uid nobody (65534) and sleeps until killed, or dies with the
 * test; returns once /proc shows it as nobody's (asserts otherwise). The caller kills and reaps it. */
pid_t harness_nobody_sleeper(void);
