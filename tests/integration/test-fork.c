/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Issue 6 on the real kernel, the real proc connector and a private bus: edfd follows the forks and
 * exits of admitted threads.
 *
 * The processes that fork are our own "forkers": a child of the test that waits on a socket for
 * commands (fork a child, start a thread, end either, lower a thread to SCHED_OTHER, fork storm,
 * exit) and answers with the ids it made, so every fork happens after edfd admitted the forker. The
 * children a forker forks sleep until SIGTERM (exit), SIGUSR1 (lower themselves to SCHED_OTHER) or
 * SIGUSR2 (fork a sleeper of their own); all of them also poll a "lifeline" pipe whose only writer is
 * the test process, so nothing outlives a test that dies. Threads a forker starts take commands
 * through a pipe of their own.
 *
 * What "edfd promises" here comes from protocol.h (signals and their reasons, properties) and
 * core/tree.h (the split: the donor keeps runtime - runtime / 2, the child gets runtime / 2 with the
 * same deadline and period, both in the donor's group; the donor rule on return; the thread donor:
 * the largest runtime, the lowest id among equals). Numbers are checked exactly, against the kernel
 * (sched_getattr) and the books (ListReservations, ListGroups). Every test keeps what it really
 * admits at or below 20% of one CPU.
 *
 * To check that something did NOT happen (a child that must stay SCHED_OTHER), a test first passes
 * a barrier: a short-lived process admitted into `sync` and killed; its ReservationRemoved("exited")
 * means edfd has handled every proc event queued before that exit, ours included. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "shared/protocol.h"

#define MS HARNESS_MSEC
#define P100 (100 * MS)
#define P_MIN (100 * UINT64_C(1000)) /* sched_deadline_period_min_us' default */
#define USEC_PER_SEC UINT64_C(1000000)
#define ANY UINT64_MAX

/* How long a signal may take: edfd answers forks in well under a millisecond, this is for a loaded
 * machine. The periodic resync runs every 10 s: 15 s covers it from any starting point. */
#define SIGNAL_WAIT_USEC (5 * USEC_PER_SEC)
#define RESYNC_WAIT_USEC (15 * USEC_PER_SEC)
#define STORM_FORKS 10000
/* Headroom probes resolve to a few units; a leaked 500us/100ms child would be 5242. */
#define HEADROOM_TOLERANCE (BW_UNIT / 1000)

TestSuite(fork, .fini = harness_fini, .timeout = 180);

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

static uint64_t bw(uint64_t runtime, uint64_t period) {
        return harness_bw(runtime, period);
}

/* ---- a recorder of edfd's signals with all their arguments (the harness keeps fewer) ---- */

#define REC_MAX 4096
#define REC_COUNTERS 32

typedef struct Sig {
        char member[24];
        uint64_t id;                        /* Added, Removed, Changed: the reservation; Split: the donor */
        uint64_t child;                     /* Split: the child */
        uint64_t runtime, deadline, period; /* Changed */
        uint32_t pid, tid;                  /* Added, Removed */
        char group[64];
        char reason[16];
        bool taken;                         /* consumed by a wait */
} Sig;

typedef struct Counter {
        char key[48]; /* "Member/reason", or "Split" */
        uint64_t n;
} Counter;

static struct {
        Sig sigs[REC_MAX];
        size_t n;
        uint64_t dropped; /* beyond REC_MAX: counted only */
        Counter counters[REC_COUNTERS];
        size_t n_counters;
} rec;

static void rec_count(const char *member, const char *reason) {
        char key[48];

        snprintf(key, sizeof key, "%s%s%s", member, reason ? "/" : "", reason ? reason : "");
        for (size_t i = 0; i < rec.n_counters; i++)
                if (streq(rec.counters[i].key, key)) {
                        rec.counters[i].n++;
                        return;
                }
        if (rec.n_counters < REC_COUNTERS) {
                snprintf(rec.counters[rec.n_counters].key, sizeof rec.counters[0].key, "%s", key);
                rec.counters[rec.n_counters++].n = 1;
        }
}

static uint64_t rec_counter(const char *key) {
        for (size_t i = 0; i < rec.n_counters; i++)
                if (streq(rec.counters[i].key, key))
                        return rec.counters[i].n;
        return 0;
}

static int on_edfd_signal(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *member = sd_bus_message_get_member(m), *group = NULL, *reason = NULL;
        Sig s = {};
        int r = 0;

        if (!member)
                return 0;
        snprintf(s.member, sizeof s.member, "%s", member);
        if (streq(member, "ReservationAdded") || streq(member, "ReservationRemoved"))
                r = sd_bus_message_read(m, "tuuss", &s.id, &s.pid, &s.tid, &group, &reason);
        else if (streq(member, "ReservationChanged"))
                r = sd_bus_message_read(m, "tttts", &s.id, &s.runtime, &s.deadline, &s.period, &reason);
        else if (streq(member, "Split"))
                r = sd_bus_message_read(m, "tt", &s.id, &s.child);
        if (r < 0) {
                fprintf(stderr, "test-fork: cannot parse signal %s: %s\n", member, strerror(-r));
                snprintf(s.reason, sizeof s.reason, "<unparsable>");
        }
        if (group)
                snprintf(s.group, sizeof s.group, "%s", group);
        if (reason)
                snprintf(s.reason, sizeof s.reason, "%s", reason);
        rec_count(member, reason);
        if (rec.n < REC_MAX)
                rec.sigs[rec.n++] = s;
        else
                rec.dropped++;
        return 0;
}

/* Start recording (once per harness, right after it started). */
static void rec_attach(Harness *h) {
        int r;

        memset(&rec, 0, sizeof rec);
        r = sd_bus_match_signal(h->bus, NULL, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, NULL,
                                on_edfd_signal, NULL);
        cr_assert_geq(r, 0, "cannot subscribe to edfd's signals: %s", strerror(-r));
}

/* Dispatch whatever the bus has queued, waiting at most wait_usec for the first message. */
static void rec_pump(Harness *h, uint64_t wait_usec) {
        int r;

        while ((r = sd_bus_process(h->bus, NULL)) > 0)
                ;
        cr_assert_geq(r, 0, "sd_bus_process: %s", strerror(-r));
        if (wait_usec == 0)
                return;
        (void) sd_bus_wait(h->bus, wait_usec);
        while ((r = sd_bus_process(h->bus, NULL)) > 0)
                ;
}

/* Forget every recorded signal (after dispatching what is queued). */
static void rec_reset(Harness *h) {
        rec_pump(h, 0);
        memset(&rec, 0, sizeof rec);
}

/* What a wait looks for: member always; ANY / 0 / NULL for "any". */
typedef struct Want {
        const char *member;
        uint64_t id, child;
        uint32_t pid, tid;
        const char *reason;
} Want;

static Want want(const char *member, uint64_t id, const char *reason) {
        return (Want) { .member = member, .id = id, .child = ANY, .reason = reason };
}

static Want want_thread(const char *member, uint32_t pid, uint32_t tid, const char *reason) {
        return (Want) { .member = member, .id = ANY, .child = ANY, .pid = pid, .tid = tid, .reason = reason };
}

static Want want_split(uint64_t donor, uint64_t child) {
        return (Want) { .member = "Split", .id = donor, .child = child };
}

static const char *want_describe(const Want *w, char *buf, size_t size) {
        snprintf(buf, size, "%s(id %s%" PRIu64 ", child %s%" PRIu64 ", pid %" PRIu32 ", tid %" PRIu32 ", reason %s)",
                 w->member, w->id == ANY ? "any:" : "", w->id == ANY ? 0 : w->id, w->child == ANY ? "any:" : "",
                 w->child == ANY ? 0 : w->child, w->pid, w->tid, w->reason ? w->reason : "any");
        return buf;
}

static bool want_matches(const Sig *s, const Want *w) {
        return !s->taken && streq(s->member, w->member) && (w->id == ANY || s->id == w->id) &&
               (w->child == ANY || s->child == w->child) && (w->pid == 0 || s->pid == w->pid) &&
               (w->tid == 0 || s->tid == w->tid) && (!w->reason || streq(s->reason, w->reason));
}

static Sig *rec_find(const Want *w) {
        for (size_t i = 0; i < rec.n; i++)
                if (want_matches(&rec.sigs[i], w))
                        return &rec.sigs[i];
        return NULL;
}

/* Wait (bounded) for a signal that matches w; it is consumed. Returns 0 or -ETIMEDOUT. */
static int rec_wait(Harness *h, const Want *w, uint64_t timeout_usec, Sig *ret) {
        uint64_t end = now_usec() + timeout_usec;

        for (;;) {
                Sig *s = rec_find(w);
                uint64_t n;
                int r;

                if (s) {
                        s->taken = true;
                        if (ret)
                                *ret = *s;
                        return 0;
                }
                r = sd_bus_process(h->bus, NULL);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                n = now_usec();
                if (n >= end)
                        return -ETIMEDOUT;
                r = sd_bus_wait(h->bus, end - n);
                if (r < 0 && r != -EINTR)
                        return r;
        }
}

static Sig expect_sig_within(Harness *h, Want w, uint64_t timeout_usec, const char *what) {
        char buf[256];
        Sig s = {};
        int r;

        r = rec_wait(h, &w, timeout_usec, &s);
        cr_assert_eq(r, 0, "%s: no %s within %" PRIu64 " ms: %s", what, want_describe(&w, buf, sizeof buf),
                     timeout_usec / 1000, strerror(-r));
        return s;
}

static Sig expect_sig(Harness *h, Want w, const char *what) {
        return expect_sig_within(h, w, SIGNAL_WAIT_USEC, what);
}

/* After a barrier: no such signal was emitted. */
static void expect_no_sig(Harness *h, Want w, const char *what) {
        char buf[256];
        Sig *s;

        rec_pump(h, 0);
        s = rec_find(&w);
        cr_assert(!s, "%s: unexpected %s (got id %" PRIu64 ", child %" PRIu64 ", pid %" PRIu32 ", tid %" PRIu32
                  ", reason %s)", what, want_describe(&w, buf, sizeof buf), s ? s->id : 0, s ? s->child : 0,
                  s ? s->pid : 0, s ? s->tid : 0, s ? s->reason : "");
}

/* ---- the books ---- */

typedef struct Res {
        uint64_t id, runtime, deadline, period, bandwidth, flags, split_from;
        uint32_t pid, tid, uid;
        char group[64];
        bool has_donated;  /* the entry's a{sv} carries "donated" */
        uint64_t donated;
} Res;

#define RES_MAX 64

/* ListReservations into out[0..RES_MAX); returns how many. */
static size_t res_list(Harness *h, Res *out) {
        HarnessReservation *l = NULL;
        size_t n = 0;
        int r;

        r = harness_list_reservations(h, &l, &n);
        cr_assert_eq(r, 0, "ListReservations: %s", strerror(-r));
        cr_assert_leq(n, RES_MAX, "ListReservations has %zu entries", n);
        for (size_t i = 0; i < n; i++) {
                out[i] = (Res) { .id = l[i].id, .runtime = l[i].runtime, .deadline = l[i].deadline,
                                 .period = l[i].period, .bandwidth = l[i].bandwidth, .flags = l[i].flags,
                                 .split_from = l[i].split_from, .pid = l[i].pid, .tid = l[i].tid, .uid = l[i].uid,
                                 .has_donated = l[i].has_donated, .donated = l[i].donated };
                snprintf(out[i].group, sizeof out[i].group, "%s", l[i].group);
        }
        harness_reservations_free(l, n);
        return n;
}

/* The listed reservation with that id; asserts it is there. */
static Res res_get(Harness *h, uint64_t id, const char *what) {
        Res l[RES_MAX];
        size_t n = res_list(h, l);

        for (size_t i = 0; i < n; i++)
                if (l[i].id == id)
                        return l[i];
        cr_assert_fail("%s: reservation %" PRIu64 " is not in ListReservations", what, id);
        return (Res) {};
}

static size_t res_count(Harness *h) {
        Res l[RES_MAX];

        return res_list(h, l);
}

/* Whether any listed reservation is for thread tid. */
static bool res_has_tid(Harness *h, uint32_t tid) {
        Res l[RES_MAX];
        size_t n = res_list(h, l);

        for (size_t i = 0; i < n; i++)
                if (l[i].tid == tid)
                        return true;
        return false;
}

/* A group's allocated bandwidth and number of reservations, from ListGroups. */
static uint64_t group_allocated(Harness *h, const char *path, uint32_t *ret_n) {
        HarnessGroup *g = NULL;
        const HarnessGroup *x;
        size_t n = 0;
        uint64_t a;
        int r;

        r = harness_list_groups(h, &g, &n);
        cr_assert_eq(r, 0, "ListGroups: %s", strerror(-r));
        x = harness_find_group(g, n, path);
        cr_assert(x, "ListGroups has no group %s", path);
        a = x->allocated;
        if (ret_n)
                *ret_n = x->reservations;
        harness_groups_free(g, n);
        return a;
}

/* ListGroups as text without the root: the root's allocation includes the deadline bandwidth of
 * threads edfd does not manage (our own headroom probes among them, seen by whichever resync runs
 * while a probe holds it), which is not this test's to compare. */
static char *groups_text(Harness *h) {
        HarnessGroup *g = NULL;
        size_t n = 0, k = 0;
        char *s;
        int r;

        r = harness_list_groups(h, &g, &n);
        cr_assert_eq(r, 0, "ListGroups: %s", strerror(-r));
        for (size_t i = 0; i < n; i++) {
                if (streq(g[i].path, "/")) {
                        harness_group_entry_done(&g[i]);
                        continue;
                }
                g[k++] = g[i];
        }
        s = harness_format_groups(g, k);
        harness_groups_free(g, k);
        return s;
}

static void assert_res(const Res *x, uint32_t pid, uint32_t tid, const char *group, uint64_t runtime,
                       uint64_t deadline, uint64_t period, uint64_t split_from, const char *what) {
        cr_assert_eq(x->pid, pid, "%s: reservation %" PRIu64 " has pid %" PRIu32 ", expected %" PRIu32, what, x->id,
                     x->pid, pid);
        cr_assert_eq(x->tid, tid, "%s: reservation %" PRIu64 " has tid %" PRIu32 ", expected %" PRIu32, what, x->id,
                     x->tid, tid);
        cr_assert_str_eq(x->group, group, "%s: reservation %" PRIu64 " is in %s, expected %s", what, x->id, x->group,
                         group);
        cr_assert(x->runtime == runtime && x->deadline == deadline && x->period == period,
                  "%s: reservation %" PRIu64 " lists %" PRIu64 "/%" PRIu64 "/%" PRIu64 ", expected %" PRIu64 "/%" PRIu64
                  "/%" PRIu64, what, x->id, x->runtime, x->deadline, x->period, runtime, deadline, period);
        cr_assert_eq(x->bandwidth, bw(runtime, period), "%s: reservation %" PRIu64 " lists bandwidth %" PRIu64
                     ", the kernel's to_ratio gives %" PRIu64, what, x->id, x->bandwidth, bw(runtime, period));
        cr_assert_eq(x->split_from, split_from, "%s: reservation %" PRIu64 " lists split_from %" PRIu64 ", expected %"
                     PRIu64, what, x->id, x->split_from, split_from);
        cr_assert_eq(x->uid, 0, "%s: reservation %" PRIu64 " is owned by uid %" PRIu32 ", not root", what, x->id,
                     x->uid);
        /* The entry's a{sv} says what the donor gave a split child, and carries nothing for others. */
        cr_assert_eq(x->has_donated, split_from != 0, "%s: reservation %" PRIu64 " (split_from %" PRIu64 ") %s "
                     "\"donated\" in its a{sv}", what, x->id, split_from, x->has_donated ? "carries" : "lacks");
}

/* A split child's "donated", from its entry's a{sv}: what its donor gave it at the split. */
static void assert_donated(const Res *x, uint64_t donated, const char *what) {
        cr_assert(x->has_donated, "%s: reservation %" PRIu64 " has no \"donated\" in its a{sv}", what, x->id);
        cr_assert_eq(x->donated, donated, "%s: reservation %" PRIu64 " lists donated %" PRIu64 ", expected %" PRIu64,
                     what, x->id, x->donated, donated);
}

/* ---- forkers ---- */

enum {
        OP_FORK = 1,     /* arg 1: an orphan-to-be (no PDEATHSIG); reply id: the child's pid */
        OP_WAIT,         /* arg: a child's pid; waitpid; reply a: the wait status */
        OP_THREAD,       /* reply id: the new thread's tid */
        OP_THREAD_EXIT,  /* arg: a tid; the thread returns, the forker joins it */
        OP_OTHER,        /* arg: a tid (0: the main thread); that thread sets itself SCHED_OTHER */
        OP_STORM,        /* arg: n; n forks, each child exits at once, all reaped; a: forked, b: ns taken */
        OP_STORM_LINGER, /* the same, paced: a fork every 1 ms, each child lives 3 ms */
        OP_EXIT,         /* answer, then exit the whole process */
        OP_FORK_EXIT,    /* fork an orphan-to-be, answer with its pid, exit at once */
};

typedef struct Cmd {
        int32_t op;
        int32_t arg;
} Cmd;

typedef struct Reply {
        int32_t r; /* 0 or -errno */
        int32_t id;
        uint64_t a, b;
} Reply;

#define FORKER_THREADS 8
#define FORKERS_MAX 8

typedef struct Forker {
        pid_t pid;
        int sock;
        bool reaped;
} Forker;

static int lifeline[2] = { -1, -1 };
static Forker *forkers[FORKERS_MAX];

typedef struct ForkerThread {
        pid_t tid;
        int cmd[2];
        int ack;
        pthread_t thread;
        bool live;
} ForkerThread;

static int set_self_other(void) {
        SchedAttr a = { .sched_policy = 0 };

        return harness_sched_setattr(0, &a);
}

/* Default dispositions, and every signal unblocked except those in keep (may be NULL). */
static void common_child_setup(pid_t parent, bool pdeathsig, const sigset_t *keep) {
        sigset_t ss;

        if (pdeathsig) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() != parent)
                        _exit(1);
        }
        for (int sig = 1; sig < _NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        signal(sig, SIG_DFL);
        if (keep)
                ss = *keep;
        else
                sigemptyset(&ss);
        sigprocmask(SIG_SETMASK, &ss, NULL);
}

/* The signals a sleeper acts on (sleeper_main()). */
static void sleeper_signals(sigset_t *ret) {
        sigemptyset(ret);
        sigaddset(ret, SIGTERM);
        sigaddset(ret, SIGUSR1);
        sigaddset(ret, SIGUSR2);
        sigaddset(ret, SIGCHLD);
}

/* fork() for a sleeper: the child starts with the sleeper's signals blocked, so that one sent as soon
 * as its pid is known waits for its signalfd instead of killing it with the default action. */
static pid_t fork_sleeper(void) {
        sigset_t ss, old;
        pid_t p;

        sleeper_signals(&ss);
        sigprocmask(SIG_BLOCK, &ss, &old);
        p = fork();
        if (p != 0)
                sigprocmask(SIG_SETMASK, &old, NULL);
        return p;
}

/* A forked child: sleeps until SIGTERM (exits 0), lowers itself to SCHED_OTHER on SIGUSR1, forks a
 * sleeper of its own on SIGUSR2 (and reaps it when it ends), exits when the lifeline breaks. */
_Noreturn static void sleeper_main(pid_t parent, bool orphan) {
        for (;;) {
                struct signalfd_siginfo si;
                bool forked = false;
                sigset_t ss;
                int sfd;

                sleeper_signals(&ss);
                common_child_setup(parent, !orphan, &ss);
                sfd = signalfd(-1, &ss, SFD_CLOEXEC);
                if (sfd < 0)
                        _exit(2);
                while (!forked) {
                        struct pollfd p[2] = { { .fd = sfd, .events = POLLIN },
                                               { .fd = lifeline[0], .events = POLLIN } };

                        if (poll(p, 2, -1) < 0)
                                continue;
                        if (p[1].revents)
                                _exit(0);
                        if (!(p[0].revents & POLLIN) || read(sfd, &si, sizeof si) != sizeof si)
                                continue;
                        if (si.ssi_signo == SIGTERM)
                                _exit(0);
                        if (si.ssi_signo == SIGUSR1)
                                (void) set_self_other();
                        if (si.ssi_signo == SIGUSR2) {
                                pid_t me = getpid();
                                if (fork() == 0) {
                                        /* The new child starts over as a sleeper of its own. */
                                        close(sfd);
                                        parent = me;
                                        orphan = false;
                                        forked = true;
                                }
                        }
                        if (si.ssi_signo == SIGCHLD)
                                while (waitpid(-1, NULL, WNOHANG) > 0)
                                        ;
                }
        }
}

static void *forker_thread_main(void *userdata) {
        ForkerThread *t = userdata;
        pid_t tid = (pid_t) syscall(SYS_gettid);

        if (write(t->ack, &tid, sizeof tid) != sizeof tid)
                _exit(3);
        for (;;) {
                char c;
                int r;

                if (read(t->cmd[0], &c, 1) != 1)
                        _exit(3);
                if (c == 'x')
                        return NULL;
                r = set_self_other();
                if (write(t->ack, &r, sizeof r) != sizeof r)
                        _exit(3);
        }
}

static ForkerThread *find_thread(ForkerThread *threads, pid_t tid) {
        for (unsigned i = 0; i < FORKER_THREADS; i++)
                if (threads[i].live && threads[i].tid == tid)
                        return &threads[i];
        return NULL;
}

static void storm(int n, uint64_t linger_usec, uint64_t pace_usec, Reply *rp) {
        uint64_t start = now_usec();
        int forked = 0, reaped = 0, first_err = 0;

        /* Only storm children exist now (the storm tests fork nothing else), so waitpid(-1) is ours. */
        for (int i = 0; i < n; i++) {
                pid_t p = fork();

                if (p == 0) {
                        if (linger_usec > 0)
                                harness_usleep(linger_usec);
                        _exit(0);
                }
                if (p < 0) {
                        if (!first_err)
                                first_err = errno;
                        if (reaped < forked && waitpid(-1, NULL, 0) > 0)
                                reaped++;
                        continue;
                }
                forked++;
                while (reaped < forked && waitpid(-1, NULL, WNOHANG) > 0)
                        reaped++;
                if (pace_usec > 0)
                        harness_usleep(pace_usec);
        }
        while (reaped < forked && waitpid(-1, NULL, 0) > 0)
                reaped++;
        rp->r = first_err ? -first_err : 0;
        rp->a = (uint64_t) forked;
        rp->b = (now_usec() - start) * 1000;
}

_Noreturn static void forker_main(pid_t parent, int sock) {
        ForkerThread threads[FORKER_THREADS] = {};
        int ack[2];

        common_child_setup(parent, true, NULL);
        close(lifeline[1]);
        if (pipe2(ack, O_CLOEXEC) < 0)
                _exit(4);

        for (;;) {
                Reply rp = {};
                ForkerThread *t;
                Cmd c;
                ssize_t n = recv(sock, &c, sizeof c, 0);
                int status;

                if (n == 0)
                        _exit(0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n != sizeof c)
                        _exit(4);
                switch (c.op) {
                case OP_FORK: {
                        pid_t me = getpid(), p = fork_sleeper();
                        if (p == 0) {
                                close(sock);
                                sleeper_main(me, c.arg == 1);
                        }
                        if (p < 0)
                                rp.r = -errno;
                        rp.id = p;
                        break;
                }
                case OP_WAIT:
                        if (waitpid(c.arg, &status, 0) < 0)
                                rp.r = -errno;
                        else
                                rp.a = (uint64_t) status;
                        break;
                case OP_THREAD:
                        t = NULL;
                        for (unsigned i = 0; i < FORKER_THREADS && !t; i++)
                                if (!threads[i].live)
                                        t = &threads[i];
                        if (!t) {
                                rp.r = -ENOSPC;
                                break;
                        }
                        *t = (ForkerThread) { .ack = ack[1] };
                        if (pipe2(t->cmd, O_CLOEXEC) < 0) {
                                rp.r = -errno;
                                break;
                        }
                        if (pthread_create(&t->thread, NULL, forker_thread_main, t) != 0) {
                                rp.r = -EAGAIN;
                                break;
                        }
                        if (read(ack[0], &t->tid, sizeof t->tid) != sizeof t->tid)
                                _exit(4);
                        t->live = true;
                        rp.id = t->tid;
                        break;
                case OP_THREAD_EXIT:
                        t = find_thread(threads, c.arg);
                        if (!t) {
                                rp.r = -ESRCH;
                                break;
                        }
                        if (write(t->cmd[1], "x", 1) != 1)
                                _exit(4);
                        pthread_join(t->thread, NULL);
                        close(t->cmd[0]);
                        close(t->cmd[1]);
                        t->live = false;
                        break;
                case OP_OTHER:
                        if (c.arg == 0 || c.arg == getpid()) {
                                rp.r = set_self_other();
                                break;
                        }
                        t = find_thread(threads, c.arg);
                        if (!t) {
                                rp.r = -ESRCH;
                                break;
                        }
                        if (write(t->cmd[1], "o", 1) != 1 || read(ack[0], &rp.r, sizeof rp.r) != sizeof rp.r)
                                _exit(4);
                        break;
                case OP_STORM:
                        storm(c.arg, 0, 0, &rp);
                        break;
                case OP_STORM_LINGER:
                        storm(c.arg, 3000, 1000, &rp);
                        break;
                case OP_EXIT:
                        (void) send(sock, &rp, sizeof rp, MSG_NOSIGNAL);
                        _exit(0);
                case OP_FORK_EXIT: {
                        pid_t me = getpid(), p = fork_sleeper();
                        if (p == 0) {
                                close(sock);
                                sleeper_main(me, true);
                        }
                        rp.r = p < 0 ? -errno : 0;
                        rp.id = p;
                        (void) send(sock, &rp, sizeof rp, MSG_NOSIGNAL);
                        _exit(0);
                }
                default:
                        rp.r = -EINVAL;
                }
                if (send(sock, &rp, sizeof rp, MSG_NOSIGNAL) != sizeof rp)
                        _exit(4);
        }
}

static void forker_start(Forker *f) {
        pid_t parent = getpid();
        int sv[2];
        unsigned slot = FORKERS_MAX;

        for (unsigned i = 0; i < FORKERS_MAX; i++)
                if (!forkers[i]) {
                        slot = i;
                        break;
                }
        cr_assert_lt(slot, FORKERS_MAX, "too many forkers");
        if (lifeline[0] < 0)
                cr_assert_eq(pipe2(lifeline, O_CLOEXEC), 0, "pipe2: %m");
        cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0, "socketpair: %m");
        *f = (Forker) { .sock = sv[0] };
        f->pid = fork();
        cr_assert_geq(f->pid, 0, "fork: %m");
        if (f->pid == 0) {
                close(sv[0]);
                forker_main(parent, sv[1]);
        }
        close(sv[1]);
        forkers[slot] = f;
}

/* Send a command and wait (bounded) for the answer. Returns the forker's result (0 or -errno). */
static int forker_cmd_timeout(Forker *f, int op, int arg, Reply *ret, uint64_t timeout_usec) {
        Cmd c = { .op = op, .arg = arg };
        struct pollfd p = { .fd = f->sock, .events = POLLIN };
        Reply rp;
        int k;

        cr_assert_eq(send(f->sock, &c, sizeof c, MSG_NOSIGNAL), (ssize_t) sizeof c, "forker %d: send: %m",
                     (int) f->pid);
        do
                k = poll(&p, 1, (int) (timeout_usec / 1000));
        while (k < 0 && errno == EINTR);
        cr_assert_eq(k, 1, "forker %d did not answer command %d within %" PRIu64 " s", (int) f->pid, op,
                     timeout_usec / USEC_PER_SEC);
        cr_assert_eq(recv(f->sock, &rp, sizeof rp, 0), (ssize_t) sizeof rp, "forker %d: no answer to command %d",
                     (int) f->pid, op);
        if (ret)
                *ret = rp;
        return rp.r;
}

static int forker_cmd(Forker *f, int op, int arg, Reply *ret) {
        return forker_cmd_timeout(f, op, arg, ret, 10 * USEC_PER_SEC);
}

static pid_t forker_fork(Forker *f, bool orphan) {
        Reply rp;
        int r = forker_cmd(f, OP_FORK, orphan ? 1 : 0, &rp);

        cr_assert_eq(r, 0, "the admitted forker %d could not fork: %s", (int) f->pid, strerror(-r));
        return rp.id;
}

static pid_t forker_thread(Forker *f) {
        Reply rp;
        int r = forker_cmd(f, OP_THREAD, 0, &rp);

        cr_assert_eq(r, 0, "the admitted forker %d could not start a thread: %s", (int) f->pid, strerror(-r));
        return rp.id;
}

/* End a forked child (SIGTERM) and reap it. */
static void forker_end_child(Forker *f, pid_t child) {
        int r;

        cr_assert_eq(kill(child, SIGTERM), 0, "kill(%d): %m", (int) child);
        r = forker_cmd(f, OP_WAIT, child, NULL);
        cr_assert_eq(r, 0, "waitpid(%d) in the forker: %s", (int) child, strerror(-r));
}

static void forker_end_thread(Forker *f, pid_t tid) {
        int r = forker_cmd(f, OP_THREAD_EXIT, tid, NULL);

        cr_assert_eq(r, 0, "ending thread %d of forker %d: %s", (int) tid, (int) f->pid, strerror(-r));
}

static void forker_reap(Forker *f) {
        while (!f->reaped && waitpid(f->pid, NULL, 0) < 0 && errno == EINTR)
                ;
        f->reaped = true;
}

static void forker_kill(Forker *f) {
        if (!f->reaped) {
                kill(f->pid, SIGKILL);
                forker_reap(f);
        }
        if (f->sock >= 0)
                close(f->sock);
        f->sock = -1;
        for (unsigned i = 0; i < FORKERS_MAX; i++)
                if (forkers[i] == f)
                        forkers[i] = NULL;
}

/* End of a test: every forker (and with it every child but the orphans) goes, then the harness. */
static void stop_all(Harness *h) {
        for (unsigned i = 0; i < FORKERS_MAX; i++)
                if (forkers[i])
                        forker_kill(forkers[i]);
        harness_stop(h);
}

/* ---- common steps ---- */

static Harness *start(const char *config) {
        Harness *h = harness_start_or_skip(config);

        rec_attach(h);
        return h;
}

static uint64_t admit_flags(Harness *h, pid_t pid, pid_t tid, const char *group, uint64_t runtime,
                            uint64_t deadline, uint64_t period, uint64_t flags, const char *what) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        uint64_t id = 0;
        int r;

        r = harness_admit(h, &e, pid, tid, group, runtime, deadline, period, flags, &id);
        assert_bus_ok(r, &e, what);
        expect_sig(h, want("ReservationAdded", id, "requested"), what);
        return id;
}

static uint64_t admit(Harness *h, pid_t pid, pid_t tid, const char *group, uint64_t runtime, uint64_t deadline,
                      uint64_t period, const char *what) {
        return admit_flags(h, pid, tid, group, runtime, deadline, period, 0, what);
}

static void release(Harness *h, uint64_t id, const char *what) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        int r;

        r = harness_call(h, &e, NULL, "Release", "t", id);
        assert_bus_ok(r, &e, what);
        expect_sig(h, want("ReservationRemoved", id, "requested"), what);
}

/* Every proc event queued before this call has been handled by edfd when it returns. */
static void barrier(Harness *h) {
        HarnessChild *c;
        uint64_t id;
        int r;

        r = harness_spawn_child(h, 1, false, &c);
        cr_assert_eq(r, 0, "barrier: cannot spawn a child: %s", strerror(-r));
        id = admit(h, c->pid, 0, "sync", 1 * MS, 0, P100, "barrier: Admit into sync");
        harness_child_kill(c);
        expect_sig(h, want("ReservationRemoved", id, "exited"), "barrier: the admitted child was killed");
}

static uint64_t get_u64(Harness *h, const char *property) {
        uint64_t v = 0;
        int r = harness_get_u64(h, property, &v);

        cr_assert_eq(r, 0, "property %s: %s", property, strerror(-r));
        return v;
}

/* The kernel's deadline pool as far as it can be seen: the headroom it still admits plus what every
 * deadline thread holds. It stays the same whoever admits or releases what (other tests on the
 * machine included) and drops only when bandwidth leaks: charged in the kernel to nobody. false if
 * the deadline threads changed during the probe. */
static bool pool_sample(uint64_t *ret) {
        uint64_t before, after, free_bw = 0;
        int r;

        before = harness_dl_bw_on_machine();
        r = harness_probe_headroom(&free_bw);
        /* Its helpers ask next to nothing (1024 ns per period_max): EBUSY says the pool is full
         * for the moment, with what the previous test's threads gave back still charged until
         * their 0-lag time (a CI run got it at the start of a test). Not a sample: try again. */
        if (r == -EBUSY)
                return false;
        cr_assert_eq(r, 0, "headroom probe: %s", strerror(-r));
        after = harness_dl_bw_on_machine();
        if (before != after)
                return false;
        *ret = free_bw + before;
        return true;
}

static uint64_t pool_total(void) {
        uint64_t v = 0;

        for (unsigned i = 0; i < 20; i++) {
                if (pool_sample(&v))
                        return v;
                harness_usleep(50 * 1000);
        }
        cr_assert_fail("the machine's deadline threads never held still during a headroom probe (or the pool "
                       "stayed full: EBUSY for a 1024 ns reservation)");
        return 0;
}

/* The pool before a test: bandwidth the previous test gave back by leaving SCHED_DEADLINE stays
 * charged until the thread's 0-lag time (up to a period, 200 ms at most in these tests), so sample
 * until two samples 250 ms apart agree. */
static uint64_t pool_baseline(void) {
        uint64_t v = pool_total();

        for (unsigned i = 0; i < 10; i++) {
                uint64_t w;

                harness_usleep(250 * 1000);
                w = pool_total();
                if (w + HEADROOM_TOLERANCE >= v && w <= v + HEADROOM_TOLERANCE)
                        return w;
                v = w;
        }
        cr_assert_fail("the kernel's deadline pool never settled before the test (last %" PRIu64 ")", v);
        return 0;
}

/* Bounded (about 2 s): the pool comes back to target (bandwidth of a running task that left
 * SCHED_DEADLINE comes back at its 0-lag time, within its period). What fails is a leak: bandwidth
 * charged in the kernel to no thread. A pool larger than before is not edfd's doing (it cannot
 * enlarge the kernel's pool); the 6.18 kernel was seen to admit 2-4% of a CPU more for seconds, as
 * if part of a fair server's reserve were missing, and that is logged, not failed. The same
 * anomaly during the baseline makes the target too high: a pool smaller than the target but at the
 * kernel's nominal pool (harness_nominal_pool()) holds nothing leaked, and is logged too. */
static void assert_pool_settles(uint64_t target, const char *what) {
        uint64_t v = 0, nominal = harness_nominal_pool();
        bool ok = false;

        for (unsigned i = 0; i < 40 && !ok; i++) {
                ok = pool_sample(&v) && v + HEADROOM_TOLERANCE >= target && v <= target + HEADROOM_TOLERANCE;
                if (!ok)
                        harness_usleep(50 * 1000);
        }
        if (!ok && v > target) {
                cr_log_info("%s: the kernel's deadline pool is %" PRIu64 ", more than the %" PRIu64 " before: the "
                            "kernel admits more than it did (not a leak)", what, v, target);
                return;
        }
        if (!ok && nominal > 0 && v + HEADROOM_TOLERANCE >= nominal && target > nominal + HEADROOM_TOLERANCE) {
                cr_log_info("%s: the kernel's deadline pool is %" PRIu64 ", less than the %" PRIu64 " before but at "
                            "its nominal %" PRIu64 ": the pool was larger than nominal before (not a leak)",
                            what, v, target, nominal);
                return;
        }
        cr_assert(ok, "%s: the kernel's deadline pool (headroom + every deadline thread) is %" PRIu64 ", it was %"
                  PRIu64 " (+-%" PRIu64 ", nominal %" PRIu64 "): bandwidth leaked (charged to no thread)", what,
                  v, target, (uint64_t) HEADROOM_TOLERANCE, nominal);
}

/* edfd logs "Books inconsistent after resync: ..." when tree_check() fails at a resync. */
static void assert_log_clean(Harness *h) {
        FILE *fp = fopen(h->log_path, "re");
        char *line = NULL;
        size_t cap = 0;

        cr_assert(fp, "cannot read edfd's log %s: %m", h->log_path);
        while (getline(&line, &cap, fp) >= 0)
                cr_assert(!strstr(line, "inconsistent"), "edfd's consistency check failed: %s", line);
        free(line);
        fclose(fp);
}

/* ---- one fork or thread, its exit, and the books around them ---- */

typedef enum ChildKind {
        CHILD_PROCESS,
        CHILD_THREAD,
} ChildKind;

typedef struct Row {
        const char *group;
        uint64_t runtime, deadline, period;
        ChildKind kind;
        bool split; /* else the child must stay SCHED_OTHER and the parent keep everything */
} Row;

static void run_cycle(Harness *h, const Row *row, const char *name) {
        _cleanup_free_ char *g0 = NULL, *g_end = NULL;
        const uint64_t rt = row->runtime, dl = row->deadline, per = row->period;
        const uint64_t half = rt / 2, kept = rt - rt / 2;
        uint64_t id_p, a0, a1, a2;
        uint32_t n_res;
        pid_t cpid, ctid;
        Forker f;
        Res p, k;

        forker_start(&f);
        g0 = groups_text(h);
        a0 = group_allocated(h, row->group, NULL);
        id_p = admit(h, f.pid, 0, row->group, rt, dl, per, name);
        a1 = group_allocated(h, row->group, NULL);
        cr_assert_eq(a1, a0 + bw(rt, per), "%s: admitting the parent moved %s from %" PRIu64 " to %" PRIu64, name,
                     row->group, a0, a1);

        if (row->kind == CHILD_PROCESS) {
                cpid = ctid = forker_fork(&f, false);
        } else {
                cpid = f.pid;
                ctid = forker_thread(&f);
        }

        if (row->split) {
                Sig changed = expect_sig(h, want("ReservationChanged", id_p, "split"), name);
                Sig added = expect_sig(h, want_thread("ReservationAdded", (uint32_t) cpid, (uint32_t) ctid, "split"),
                                       name);
                uint64_t id_k = added.id;

                expect_sig(h, want_split(id_p, id_k), name);
                cr_assert_str_eq(added.group, row->group, "%s: the child was added to %s, not the donor's group %s",
                                 name, added.group, row->group);
                cr_assert(changed.runtime == kept && changed.deadline == dl && changed.period == per,
                          "%s: ReservationChanged(split) of the donor says %" PRIu64 "/%" PRIu64 "/%" PRIu64
                          ", expected %" PRIu64 "/%" PRIu64 "/%" PRIu64, name, changed.runtime, changed.deadline,
                          changed.period, kept, dl, per);

                /* The kernel: the child has half, with the same deadline and period and RESET_ON_FORK. */
                harness_assert_dl(ctid, half, dl, per, 0);
                harness_assert_dl(f.pid, kept, dl, per, 0);

                k = res_get(h, id_k, name);
                assert_res(&k, (uint32_t) cpid, (uint32_t) ctid, row->group, half, dl, per, id_p, name);
                assert_donated(&k, half, name);
                p = res_get(h, id_p, name);
                assert_res(&p, (uint32_t) f.pid, (uint32_t) f.pid, row->group, kept, dl, per, 0, name);

                /* The group's allocation cannot grow: the two halves' bandwidths, rounded down. */
                a2 = group_allocated(h, row->group, &n_res);
                cr_assert_eq(a2, a1 - bw(rt, per) + bw(kept, per) + bw(half, per),
                             "%s: %s holds %" PRIu64 " after the split, expected %" PRIu64, name, row->group, a2,
                             a1 - bw(rt, per) + bw(kept, per) + bw(half, per));
                cr_assert(a2 <= a1 && a2 + 1 >= a1, "%s: the split moved %s from %" PRIu64 " to %" PRIu64
                          " (unchanged or one unit less)", name, row->group, a1, a2);
                cr_assert_eq(n_res, 2, "%s: %s holds %" PRIu32 " reservations", name, row->group, n_res);

                /* The child ends: its runtime goes back to the donor. */
                if (row->kind == CHILD_PROCESS)
                        forker_end_child(&f, cpid);
                else
                        forker_end_thread(&f, ctid);
                Sig removed = expect_sig(h, want("ReservationRemoved", id_k, "exited"), name);
                cr_assert(removed.pid == (uint32_t) cpid && removed.tid == (uint32_t) ctid,
                          "%s: ReservationRemoved names %" PRIu32 "/%" PRIu32 ", expected %d/%d", name, removed.pid,
                          removed.tid, (int) cpid, (int) ctid);
                changed = expect_sig(h, want("ReservationChanged", id_p, "returned"), name);
                cr_assert(changed.runtime == rt && changed.deadline == dl && changed.period == per,
                          "%s: ReservationChanged(returned) says %" PRIu64 "/%" PRIu64 "/%" PRIu64 ", expected %"
                          PRIu64 "/%" PRIu64 "/%" PRIu64, name, changed.runtime, changed.deadline, changed.period, rt,
                          dl, per);
        } else {
                barrier(h);
                harness_assert_other(ctid);
                harness_assert_dl(f.pid, rt, dl, per, 0);
                expect_no_sig(h, want_thread("ReservationAdded", 0, (uint32_t) ctid, NULL), name);
                expect_no_sig(h, want("Split", id_p, NULL), name);
                expect_no_sig(h, want("ReservationChanged", id_p, NULL), name);
                cr_assert(!res_has_tid(h, (uint32_t) ctid), "%s: the child %d is listed", name, (int) ctid);
                a2 = group_allocated(h, row->group, &n_res);
                cr_assert_eq(a2, a1, "%s: %s moved from %" PRIu64 " to %" PRIu64 " for a child that stays normal",
                             name, row->group, a1, a2);
                cr_assert_eq(n_res, 1);

                if (row->kind == CHILD_PROCESS)
                        forker_end_child(&f, cpid);
                else
                        forker_end_thread(&f, ctid);
                barrier(h);
                expect_no_sig(h, want("ReservationChanged", id_p, NULL), name);
                expect_no_sig(h, want("ReservationRemoved", id_p, NULL), name);
        }

        /* Either way the parent has all of it again, in the kernel and in the books. */
        harness_assert_dl(f.pid, rt, dl, per, 0);
        p = res_get(h, id_p, name);
        assert_res(&p, (uint32_t) f.pid, (uint32_t) f.pid, row->group, rt, dl, per, 0, name);
        cr_assert_eq(res_count(h), 1, "%s: ListReservations holds more than the parent", name);
        a2 = group_allocated(h, row->group, NULL);
        cr_assert_eq(a2, a1, "%s: %s holds %" PRIu64 " after the child's exit, %" PRIu64 " before its birth", name,
                     row->group, a2, a1);

        release(h, id_p, name);
        g_end = groups_text(h);
        cr_assert_str_eq(g_end, g0, "%s: ListGroups is not back where it began", name);
        forker_kill(&f);
}

/* ---- the tests ---- */

/* run_cycle() for each row, on one harness; the rows' names say which split rule they test. A kernel
 * whose sched_deadline_period_min_us is above a row's period cannot run it: the test skips, saying so. */
static void run_split_rows(const Row *rows, size_t n) {
        uint64_t shortest = UINT64_MAX, min = harness_period_min();
        Harness *h;

        for (size_t i = 0; i < n; i++)
                shortest = MIN(shortest, rows[i].period);
        if (shortest < min)
                cr_skip_test("kernel.sched_deadline_period_min_us is %" PRIu64 " us, above the %" PRIu64 " us period "
                             "these rows need", min / 1000, shortest / 1000);
        h = start("fork.yaml");
        for (size_t i = 0; i < n; i++) {
                char name[128];

                snprintf(name, sizeof name, "row %zu (%s, runtime %" PRIu64 " ns, %s)", i, rows[i].group,
                         rows[i].runtime, rows[i].split ? "split" : "no split");
                run_cycle(h, &rows[i], name);
        }
        stop_all(h);
}

/* A fork splits the parent (rounding and the minimum split at their edges), the child's exit gives
 * the parent everything back. */
Test(fork, fork_splits_and_returns) {
        static const Row rows[] = {
                { "split", 10 * MS, 50 * MS, P100, CHILD_PROCESS, true },
                { "split", 10 * MS + 1, 50 * MS, P100, CHILD_PROCESS, true },  /* odd: the donor keeps the extra ns */
                { "forkonly", 10 * MS, P100, P100, CHILD_PROCESS, true },      /* deadline == period */
                { "minedge", 10 * MS, 50 * MS, P100, CHILD_PROCESS, true },     /* 5ms == min-split-runtime */
                { "minedge", 10 * MS - 2, 50 * MS, P100, CHILD_PROCESS, false }, /* 4999999ns < 5ms */
                { "minsplit", 10 * MS, 50 * MS, P100, CHILD_PROCESS, false },    /* 5ms < 6ms */
        };

        run_split_rows(rows, ELEMENTSOF(rows));
}

/* The same at the kernel's minimum runtime, over the shortest period the kernel allows by default
 * (100us), so that a child with 1024 ns still runs 1% of a CPU and can exit in reasonable time. Its
 * own test, so that a kernel with a longer minimum period skips it visibly. */
Test(fork, fork_splits_at_the_minimum_runtime) {
        static const Row rows[] = {
                { "split", 2049, P_MIN, P_MIN, CHILD_PROCESS, true },           /* 1025 + 1024 */
                { "split", 2048, P_MIN, P_MIN, CHILD_PROCESS, true },           /* 1024 + 1024 */
                { "split", 2047, P_MIN, P_MIN, CHILD_PROCESS, false },          /* 1023 < min-split-runtime 1.024us */
        };

        run_split_rows(rows, ELEMENTSOF(rows));
}

/* New processes follow `fork:`, new threads `threads:`, each on its own. */
Test(fork, policies_for_processes_and_threads) {
        static const Row rows[] = {
                { "split", 10 * MS, 50 * MS, P100, CHILD_THREAD, true },
                { "split", 10 * MS, 50 * MS, P100, CHILD_PROCESS, true },
                { "forkonly", 10 * MS, 50 * MS, P100, CHILD_THREAD, false },
                { "forkonly", 10 * MS, 50 * MS, P100, CHILD_PROCESS, true },
                { "threadsonly", 10 * MS, 50 * MS, P100, CHILD_THREAD, true },
                { "threadsonly", 10 * MS, 50 * MS, P100, CHILD_PROCESS, false },
                { "none", 10 * MS, 50 * MS, P100, CHILD_THREAD, false },
                { "none", 10 * MS, 50 * MS, P100, CHILD_PROCESS, false },
        };
        Harness *h = start("fork.yaml");

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                char name[128];

                snprintf(name, sizeof name, "row %zu (%s, new %s)", i, rows[i].group,
                         rows[i].kind == CHILD_THREAD ? "thread" : "process");
                run_cycle(h, &rows[i], name);
        }
        stop_all(h);
}

/* With several admitted threads in one process, a new thread's donor is the one with the largest
 * runtime, the lowest id among equals (tree.h, tree_thread_donor). Three admitted threads, so that
 * neither answer is the main thread (which creates the new threads), the first or the last admitted:
 * A (3ms, lowest id), the main thread M (3ms), B (6ms, highest id). */
Test(fork, thread_donor_rule) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = start("fork.yaml");
        uint64_t id_a, id_m, id_b, id_x, id_y;
        pid_t a, b, x, y;
        Forker f;
        Sig s;
        Res res;
        int r;

        forker_start(&f);
        a = forker_thread(&f); /* nothing admitted yet: they stay normal */
        b = forker_thread(&f);
        id_a = admit(h, f.pid, a, "split", 3 * MS, 50 * MS, P100, "Admit(thread A, 3ms)");
        id_m = admit(h, f.pid, 0, "split", 3 * MS, 50 * MS, P100, "Admit(main thread M, 3ms)");
        id_b = admit(h, f.pid, b, "split", 6 * MS, 50 * MS, P100, "Admit(thread B, 6ms)");
        cr_assert(id_a < id_m && id_m < id_b);

        /* The largest runtime: B. */
        x = forker_thread(&f);
        s = expect_sig(h, want_thread("ReservationAdded", (uint32_t) f.pid, (uint32_t) x, "split"), "thread X");
        id_x = s.id;
        expect_sig(h, want_split(id_b, id_x), "thread X: the donor must be B, the largest runtime");
        harness_assert_dl(b, 3 * MS, 50 * MS, P100, 0);
        harness_assert_dl(x, 3 * MS, 50 * MS, P100, 0);
        harness_assert_dl(a, 3 * MS, 50 * MS, P100, 0);
        harness_assert_dl(f.pid, 3 * MS, 50 * MS, P100, 0);
        res = res_get(h, id_x, "thread X");
        assert_res(&res, (uint32_t) f.pid, (uint32_t) x, "split", 3 * MS, 50 * MS, P100, id_b, "thread X");
        forker_end_thread(&f, x);
        expect_sig(h, want("ReservationRemoved", id_x, "exited"), "thread X ends");
        expect_sig(h, want("ReservationChanged", id_b, "returned"), "thread X ends");
        harness_assert_dl(b, 6 * MS, 50 * MS, P100, 0);

        /* A three-way tie at 3ms: the lowest id, A. */
        r = harness_call(h, &e, NULL, "Update", "tttt", id_b, 3 * MS, 50 * MS, P100);
        assert_bus_ok(r, &e, "Update(B, 3ms)");
        expect_sig(h, want("ReservationChanged", id_b, "requested"), "Update(B)");
        y = forker_thread(&f);
        s = expect_sig(h, want_thread("ReservationAdded", (uint32_t) f.pid, (uint32_t) y, "split"), "thread Y");
        id_y = s.id;
        expect_sig(h, want_split(id_a, id_y), "thread Y: the donor must be A, the lowest id of three equals");
        harness_assert_dl(a, 3 * MS - 3 * MS / 2, 50 * MS, P100, 0);
        harness_assert_dl(y, 3 * MS / 2, 50 * MS, P100, 0);
        harness_assert_dl(f.pid, 3 * MS, 50 * MS, P100, 0);
        harness_assert_dl(b, 3 * MS, 50 * MS, P100, 0);
        res = res_get(h, id_y, "thread Y");
        assert_res(&res, (uint32_t) f.pid, (uint32_t) y, "split", 3 * MS / 2, 50 * MS, P100, id_a, "thread Y");
        forker_end_thread(&f, y);
        expect_sig(h, want("ReservationRemoved", id_y, "exited"), "thread Y ends");
        expect_sig(h, want("ReservationChanged", id_a, "returned"), "thread Y ends");
        harness_assert_dl(a, 3 * MS, 50 * MS, P100, 0);

        release(h, id_a, "Release(A)");
        release(h, id_m, "Release(M)");
        release(h, id_b, "Release(B)");
        harness_assert_no_reservations(h, "after releasing A, M and B");
        stop_all(h);
}

/* `inherit`: a full copy while the group has room, a split once it has not; an inherited child's
 * bandwidth goes back to the group. */
Test(fork, inherit_with_and_without_room) {
        _cleanup_free_ char *g0 = NULL, *g_end = NULL;
        Harness *h = start("fork-inherit.yaml");
        const uint64_t full = bw(10 * MS, P100), half = bw(5 * MS, P100);
        uint64_t id_p, id_1, id_2, id_t, a0, a;
        pid_t c1, c2, t;
        Forker f;
        Sig s;
        Res x;

        forker_start(&f);
        g0 = groups_text(h);
        a0 = group_allocated(h, "inherit", NULL);
        id_p = admit(h, f.pid, 0, "inherit", 10 * MS, 50 * MS, P100, "Admit(parent, 10ms)");

        /* 10% + 10% <= 25%: a full copy, reason "inherited", no donor, no Split. */
        c1 = forker_fork(&f, false);
        s = expect_sig(h, want_thread("ReservationAdded", (uint32_t) c1, (uint32_t) c1, "inherited"), "first child");
        id_1 = s.id;
        harness_assert_dl(c1, 10 * MS, 50 * MS, P100, 0);
        harness_assert_dl(f.pid, 10 * MS, 50 * MS, P100, 0);
        x = res_get(h, id_1, "first child");
        assert_res(&x, (uint32_t) c1, (uint32_t) c1, "inherit", 10 * MS, 50 * MS, P100, 0, "first child");
        a = group_allocated(h, "inherit", NULL);
        cr_assert_eq(a, a0 + 2 * full, "inherit holds %" PRIu64 ", expected %" PRIu64, a, a0 + 2 * full);

        /* 10% + 10% + 10% > 25%: split. */
        c2 = forker_fork(&f, false);
        s = expect_sig(h, want_thread("ReservationAdded", (uint32_t) c2, (uint32_t) c2, "split"), "second child");
        id_2 = s.id;
        expect_sig(h, want_split(id_p, id_2), "second child");
        s = expect_sig(h, want("ReservationChanged", id_p, "split"), "second child");
        cr_assert_eq(s.runtime, 5 * MS);
        harness_assert_dl(c2, 5 * MS, 50 * MS, P100, 0);
        harness_assert_dl(f.pid, 5 * MS, 50 * MS, P100, 0);
        x = res_get(h, id_2, "second child");
        assert_res(&x, (uint32_t) c2, (uint32_t) c2, "inherit", 5 * MS, 50 * MS, P100, id_p, "second child");
        a = group_allocated(h, "inherit", NULL);
        cr_assert_eq(a, a0 + full + 2 * half, "inherit holds %" PRIu64 ", expected %" PRIu64, a, a0 + full + 2 * half);

        /* No Split and no change of the parent for the inherited child. */
        barrier(h);
        expect_no_sig(h, want_split(ANY, id_1), "first child (inherited)");
        expect_no_sig(h, want("ReservationChanged", id_p, NULL), "after the two forks");

        forker_end_child(&f, c2);
        expect_sig(h, want("ReservationRemoved", id_2, "exited"), "second child ends");
        s = expect_sig(h, want("ReservationChanged", id_p, "returned"), "second child ends");
        cr_assert_eq(s.runtime, 10 * MS);
        harness_assert_dl(f.pid, 10 * MS, 50 * MS, P100, 0);

        forker_end_child(&f, c1);
        expect_sig(h, want("ReservationRemoved", id_1, "exited"), "first child ends");
        barrier(h);
        expect_no_sig(h, want("ReservationChanged", id_p, NULL), "first child (inherited) ends");
        a = group_allocated(h, "inherit", NULL);
        cr_assert_eq(a, a0 + full, "inherit holds %" PRIu64 " after the inherited child ended, expected %" PRIu64, a,
                     a0 + full);

        /* threads: inherit works the same for a new thread. */
        t = forker_thread(&f);
        s = expect_sig(h, want_thread("ReservationAdded", (uint32_t) f.pid, (uint32_t) t, "inherited"), "new thread");
        id_t = s.id;
        harness_assert_dl(t, 10 * MS, 50 * MS, P100, 0);
        forker_end_thread(&f, t);
        expect_sig(h, want("ReservationRemoved", id_t, "exited"), "the thread ends");

        release(h, id_p, "Release(parent)");
        g_end = groups_text(h);
        cr_assert_str_eq(g_end, g0, "ListGroups is not back where it began");
        stop_all(h);
}

/* The donor exits first: the child keeps its half; when it exits, its bandwidth goes to the group. */
Test(fork, donor_exits_before_child) {
        _cleanup_free_ char *g0 = NULL, *g_end = NULL;
        Harness *h = start("fork.yaml");
        uint64_t id_p, id_k, a0, a, h0;
        int status;
        pid_t c;
        Forker f;
        Sig s;
        Res x;

        cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0, "PR_SET_CHILD_SUBREAPER: %m");
        h0 = pool_baseline();
        g0 = groups_text(h);
        a0 = group_allocated(h, "split", NULL);
        forker_start(&f);
        id_p = admit(h, f.pid, 0, "split", 10 * MS, 50 * MS, P100, "Admit(parent, 10ms)");
        c = forker_fork(&f, true);
        s = expect_sig(h, want_thread("ReservationAdded", (uint32_t) c, (uint32_t) c, "split"), "the child");
        id_k = s.id;
        expect_sig(h, want_split(id_p, id_k), "the child");

        cr_assert_eq(forker_cmd(&f, OP_EXIT, 0, NULL), 0);
        forker_reap(&f);
        expect_sig(h, want("ReservationRemoved", id_p, "exited"), "the parent exits");
        harness_assert_dl(c, 5 * MS, 50 * MS, P100, 0);
        x = res_get(h, id_k, "after the parent's exit");
        assert_res(&x, (uint32_t) c, (uint32_t) c, "split", 5 * MS, 50 * MS, P100, id_p, "the orphan");
        a = group_allocated(h, "split", NULL);
        cr_assert_eq(a, a0 + bw(5 * MS, P100), "split holds %" PRIu64 " after the parent's exit, expected %" PRIu64, a,
                     a0 + bw(5 * MS, P100));

        cr_assert_eq(kill(c, SIGTERM), 0);
        cr_assert_eq(waitpid(c, &status, 0), c, "the orphan was not reparented to the test: %m");
        expect_sig(h, want("ReservationRemoved", id_k, "exited"), "the child exits");
        barrier(h);
        expect_no_sig(h, want("ReservationChanged", ANY, "returned"), "the child of a dead donor exits");
        harness_assert_no_reservations(h, "after both exited");
        g_end = groups_text(h);
        cr_assert_str_eq(g_end, g0, "ListGroups is not back where it began");
        assert_pool_settles(h0, "after both exited");
        stop_all(h);
}

/* An admitted thread that is not the main thread exits: only its reservation ends. */
Test(fork, thread_exit_releases_only_that_thread) {
        Harness *h = start("fork.yaml");
        uint64_t id_m, id_t, a0, a;
        Forker f;
        Sig s;
        Res x;
        pid_t t;

        forker_start(&f);
        t = forker_thread(&f);
        a0 = group_allocated(h, "forkonly", NULL);
        id_m = admit(h, f.pid, 0, "forkonly", 4 * MS, 50 * MS, P100, "Admit(main thread, 4ms)");
        id_t = admit(h, f.pid, t, "forkonly", 3 * MS, 50 * MS, P100, "Admit(second thread, 3ms)");
        harness_assert_dl(t, 3 * MS, 50 * MS, P100, 0);

        forker_end_thread(&f, t);
        s = expect_sig(h, want("ReservationRemoved", id_t, "exited"), "the thread ends");
        cr_assert(s.pid == (uint32_t) f.pid && s.tid == (uint32_t) t, "ReservationRemoved names %" PRIu32 "/%" PRIu32,
                  s.pid, s.tid);
        barrier(h);
        expect_no_sig(h, want("ReservationRemoved", id_m, NULL), "the other thread exits");
        expect_no_sig(h, want("ReservationChanged", id_m, NULL), "the other thread exits");
        harness_assert_dl(f.pid, 4 * MS, 50 * MS, P100, 0);
        cr_assert_eq(res_count(h), 1);
        x = res_get(h, id_m, "after the thread's exit");
        assert_res(&x, (uint32_t) f.pid, (uint32_t) f.pid, "forkonly", 4 * MS, 50 * MS, P100, 0, "the main thread");
        a = group_allocated(h, "forkonly", NULL);
        cr_assert_eq(a, a0 + bw(4 * MS, P100), "forkonly holds %" PRIu64 ", expected %" PRIu64, a, a0 + bw(4 * MS, P100));
        release(h, id_m, "Release(main)");
        stop_all(h);
}

/* A process with two admitted threads and a split child is killed with SIGKILL, and the child dies
 * with it (PDEATHSIG): all three reservations end as "exited", in whatever order the exits come, and
 * the books and the kernel are back where they began. */
Test(fork, sigkill_returns_everything) {
        _cleanup_free_ char *g0 = NULL, *g_end = NULL;
        Harness *h = start("fork.yaml");
        uint64_t id_m, id_t, id_c, h0;
        Forker f;
        pid_t t, c;
        Sig s;

        h0 = pool_baseline();
        g0 = groups_text(h);
        forker_start(&f);
        t = forker_thread(&f);
        id_m = admit(h, f.pid, 0, "forkonly", 6 * MS, 50 * MS, P100, "Admit(main thread, 6ms)");
        id_t = admit(h, f.pid, t, "forkonly", 3 * MS, 50 * MS, P100, "Admit(second thread, 3ms)");
        c = forker_fork(&f, false);
        s = expect_sig(h, want_thread("ReservationAdded", (uint32_t) c, (uint32_t) c, "split"), "the child");
        id_c = s.id;
        expect_sig(h, want_split(id_m, id_c), "the child: split off the main thread, which forked");
        harness_assert_dl(c, 3 * MS, 50 * MS, P100, 0);
        harness_assert_dl(f.pid, 3 * MS, 50 * MS, P100, 0);

        cr_assert_eq(kill(f.pid, SIGKILL), 0);
        forker_reap(&f);
        expect_sig(h, want("ReservationRemoved", id_m, "exited"), "SIGKILL: main thread");
        expect_sig(h, want("ReservationRemoved", id_t, "exited"), "SIGKILL: second thread");
        expect_sig(h, want("ReservationRemoved", id_c, "exited"), "SIGKILL: the child (PDEATHSIG)");
        harness_assert_no_reservations(h, "after SIGKILL");
        g_end = groups_text(h);
        cr_assert_str_eq(g_end, g0, "ListGroups is not back where it began");
        assert_pool_settles(h0, "after SIGKILL");
        stop_all(h);
}

/* A thread that lowers itself to SCHED_OTHER, and one that someone else changes to other deadline
 * parameters, are released with reason "changed" at the next (periodic) resync; the first one's
 * bandwidth goes back (here to its donor), the second one's is counted as Unmanaged. */
Test(fork, changed_outside_edfd_is_released_at_resync) {
        Harness *h = start("fork.yaml");
        uint64_t id_p, id_k, id_q, u0, u, foreign, h0, a_split, a_fork, resyncs0;
        HarnessChild *q;
        SchedAttr attr;
        Forker f;
        pid_t c;
        Sig s;
        Res x;
        int r;

        h0 = pool_baseline();
        u0 = get_u64(h, "Unmanaged");
        a_split = group_allocated(h, "split", NULL);
        a_fork = group_allocated(h, "forkonly", NULL);

        forker_start(&f);
        id_p = admit(h, f.pid, 0, "split", 10 * MS, 50 * MS, P100, "Admit(parent, 10ms)");
        c = forker_fork(&f, false);
        s = expect_sig(h, want_thread("ReservationAdded", (uint32_t) c, (uint32_t) c, "split"), "the child");
        id_k = s.id;
        expect_sig(h, want_split(id_p, id_k), "the child");

        cr_assert_eq(harness_spawn_child(h, 1, false, &q), 0);
        id_q = admit(h, q->pid, 0, "forkonly", 3 * MS, 50 * MS, P100, "Admit(q, 3ms)");

        /* q is changed by us (DL -> DL, 2ms/100ms); the child lowers itself. In that order: a periodic
         * resync between the two may see q's change first, and the child's at the next resync, which
         * the wait below covers (the other order would leave q to a resync 10 s later). */
        resyncs0 = get_u64(h, "Resyncs");
        r = harness_dl_set(q->pid, 2 * MS, P100, P100, 0);
        cr_assert_eq(r, 0, "changing q to 2ms/100ms: %s", strerror(-r));
        cr_assert_eq(kill(c, SIGUSR1), 0);
        for (unsigned i = 0; i < 500; i++) {
                if (harness_sched_getattr(c, &attr) == 0 && attr.sched_policy == 0)
                        break;
                harness_usleep(10 * 1000);
        }
        harness_assert_other(c);

        expect_sig_within(h, want("ReservationRemoved", id_k, "changed"), RESYNC_WAIT_USEC,
                          "the child that lowered itself");
        cr_assert_gt(get_u64(h, "Resyncs"), resyncs0, "released as changed without a resync");
        s = expect_sig(h, want("ReservationChanged", id_p, "returned"), "the child that lowered itself");
        cr_assert_eq(s.runtime, 10 * MS);
        expect_sig(h, want("ReservationRemoved", id_q, "changed"), "q, changed by someone else");

        harness_assert_dl(f.pid, 10 * MS, 50 * MS, P100, 0);
        cr_assert_eq(res_count(h), 1, "ListReservations must hold only the parent");
        x = res_get(h, id_p, "after the resync");
        assert_res(&x, (uint32_t) f.pid, (uint32_t) f.pid, "split", 10 * MS, 50 * MS, P100, 0, "the parent");
        cr_assert_eq(group_allocated(h, "split", NULL), a_split + bw(10 * MS, P100),
                     "split still holds the lowered child's bandwidth");
        cr_assert_eq(group_allocated(h, "forkonly", NULL), a_fork, "forkonly still holds q's bandwidth");
        /* Unmanaged is what the kernel shows for deadline threads edfd does not manage, q's 2ms/100ms
         * among them (other deadline threads on the machine too, so measured rather than assumed). */
        u = get_u64(h, "Unmanaged");
        foreign = harness_dl_bw_on_machine() - bw(10 * MS, P100);
        cr_assert_eq(u, foreign, "Unmanaged is %" PRIu64 " (was %" PRIu64 "), the kernel shows %" PRIu64 " of deadline "
                     "bandwidth outside edfd's books, q's %" PRIu64 " included", u, u0, foreign, bw(2 * MS, P100));
        cr_assert_geq(u, bw(2 * MS, P100));
        assert_pool_settles(h0, "after the resync (the lowered child gave its bandwidth back)");

        harness_dl_reset(q->pid);
        release(h, id_p, "Release(parent)");
        stop_all(h);
}

/* The flags are part of what edfd gave: a thread whose RECLAIM, or whose RESET_ON_FORK, was cleared
 * behind edfd's back (same runtime, deadline and period) is released with reason "changed" too, and
 * a thread left alone is not. */
Test(fork, flags_changed_outside_edfd_are_released_at_resync) {
        Harness *h = start("fork.yaml");
        HarnessChild *a, *b, *k;
        SchedAttr attr = {};
        uint64_t id_a, id_b, id_k;
        int r;

        cr_assert_eq(harness_spawn_child(h, 1, false, &a), 0);
        cr_assert_eq(harness_spawn_child(h, 1, false, &b), 0);
        cr_assert_eq(harness_spawn_child(h, 1, false, &k), 0);
        id_a = admit_flags(h, a->pid, 0, "forkonly", 2 * MS, P100, P100, EDFD_ADMIT_RECLAIM, "Admit(a, reclaim)");
        id_b = admit(h, b->pid, 0, "forkonly", 2 * MS, P100, P100, "Admit(b)");
        id_k = admit_flags(h, k->pid, 0, "forkonly", 2 * MS, P100, P100, EDFD_ADMIT_RECLAIM, "Admit(k, reclaim)");

        r = harness_dl_set(a->pid, 2 * MS, P100, P100, 0); /* RECLAIM cleared */
        cr_assert_eq(r, 0, "clearing a's RECLAIM: %s", strerror(-r));
        attr = (SchedAttr) { .sched_policy = SCHED_DEADLINE, .sched_runtime = 2 * MS,
                                    .sched_deadline = P100, .sched_period = P100 }; /* RESET_ON_FORK cleared */
        r = harness_sched_setattr(b->pid, &attr);
        cr_assert_eq(r, 0, "clearing b's RESET_ON_FORK: %s", strerror(-r));

        expect_sig_within(h, want("ReservationRemoved", id_a, "changed"), RESYNC_WAIT_USEC, "a, RECLAIM cleared");
        expect_sig(h, want("ReservationRemoved", id_b, "changed"), "b, RESET_ON_FORK cleared");
        cr_assert_eq(res_count(h), 1, "ListReservations must hold only k, which nobody touched");
        harness_assert_dl(k->pid, 2 * MS, P100, P100, SCHED_FLAG_RECLAIM);

        release(h, id_k, "Release(k)");
        cr_assert_eq(harness_dl_reset(a->pid), 0);
        cr_assert_eq(harness_dl_reset(b->pid), 0);
        stop_all(h);
}

/* The kernel refuses (EBUSY) to give a child's runtime back to its donor when the child ends: the
 * machine's pool was taken behind edfd's back meanwhile (here while edfd is stopped, in a storm by
 * other children). The runtime waits with the group, and the donor gets it back as soon as the
 * kernel has the room again. */
Test(fork, refused_return_is_given_back_later) {
        Harness *h = start("fork.yaml");
        HarnessChild *filler;
        uint64_t id_p, a0;
        Forker f;
        pid_t c;
        Sig s;

        a0 = group_allocated(h, "split", NULL);
        cr_assert_eq(harness_spawn_child(h, 2, false, &filler), 0);
        forker_start(&f);
        id_p = admit(h, f.pid, 0, "split", 10 * MS, 50 * MS, P100, "Admit(parent, 10ms)");
        c = forker_fork(&f, false);
        expect_sig(h, want_thread("ReservationAdded", (uint32_t) c, (uint32_t) c, "split"), "the child");
        harness_assert_dl(f.pid, 5 * MS, 50 * MS, P100, 0);

        /* While edfd is stopped: the child ends (its 5 ms go back to the kernel), the filler takes
         * everything the kernel has left. */
        cr_assert_eq(kill(h->edfd_pid, SIGSTOP), 0);
        forker_end_child(&f, c);
        harness_fill_pool(filler);
        cr_assert_eq(kill(h->edfd_pid, SIGCONT), 0);

        expect_sig(h, want_thread("ReservationRemoved", (uint32_t) c, (uint32_t) c, "exited"), "the child");
        harness_usleep(300 * 1000); /* edfd's in-place retries (100 ms) and a retry from its timer */
        rec_pump(h, 0);
        Want returned = want("ReservationChanged", id_p, "returned");
        cr_assert(!rec_find(&returned),
                  "the runtime went back although the kernel's pool was full");
        harness_assert_dl(f.pid, 5 * MS, 50 * MS, P100, 0);
        cr_assert_eq(group_allocated(h, "split", NULL), a0 + bw(5 * MS, P100),
                     "the runtime not given back must be the group's, not the donor's");

        harness_empty_pool(filler);
        s = expect_sig(h, want("ReservationChanged", id_p, "returned"), "the room is back");
        cr_assert_eq(s.runtime, 10 * MS);
        harness_assert_dl(f.pid, 10 * MS, 50 * MS, P100, 0);
        cr_assert_eq(group_allocated(h, "split", NULL), a0 + bw(10 * MS, P100));

        release(h, id_p, "Release(parent)");
        harness_child_kill(filler);
        stop_all(h);
}

/* A donor whose return waits for the kernel's room forks again meanwhile (as a donor in a fork storm
 * does all the time): the waiting runtime still comes back, added to what the donor holds then, and
 * the second child's half comes back when it ends: the donor ends whole. */
Test(fork, refused_return_survives_another_split) {
        Harness *h = start("fork.yaml");
        HarnessChild *filler;
        uint64_t id_p, a0;
        Forker f;
        pid_t c, d;
        Sig s;

        a0 = group_allocated(h, "split", NULL);
        cr_assert_eq(harness_spawn_child(h, 2, false, &filler), 0);
        forker_start(&f);
        id_p = admit(h, f.pid, 0, "split", 10 * MS, 50 * MS, P100, "Admit(parent, 10ms)");
        c = forker_fork(&f, false);
        expect_sig(h, want_thread("ReservationAdded", (uint32_t) c, (uint32_t) c, "split"), "the first child");
        harness_assert_dl(f.pid, 5 * MS, 50 * MS, P100, 0);

        /* The first child ends while the kernel has no room: its 5 ms wait with the group. */
        cr_assert_eq(kill(h->edfd_pid, SIGSTOP), 0);
        forker_end_child(&f, c);
        harness_fill_pool(filler);
        cr_assert_eq(kill(h->edfd_pid, SIGCONT), 0);
        expect_sig(h, want_thread("ReservationRemoved", (uint32_t) c, (uint32_t) c, "exited"), "the first child");
        harness_usleep(200 * 1000);
        harness_assert_dl(f.pid, 5 * MS, 50 * MS, P100, 0);

        /* The donor forks again: 2.5 ms each (the room the donor frees is the room its child takes). */
        d = forker_fork(&f, false);
        expect_sig(h, want_thread("ReservationAdded", (uint32_t) d, (uint32_t) d, "split"), "the second child");
        harness_assert_dl(f.pid, 2500 * 1000, 50 * MS, P100, 0);
        harness_assert_dl(d, 2500 * 1000, 50 * MS, P100, 0);

        /* The room comes back: the waiting 5 ms go to the donor, which now has 2.5 ms. */
        harness_empty_pool(filler);
        s = expect_sig(h, want("ReservationChanged", id_p, "returned"), "the first child's runtime");
        cr_assert_eq(s.runtime, 7500 * 1000);
        harness_assert_dl(f.pid, 7500 * 1000, 50 * MS, P100, 0);

        forker_end_child(&f, d);
        expect_sig(h, want_thread("ReservationRemoved", (uint32_t) d, (uint32_t) d, "exited"), "the second child");
        s = expect_sig(h, want("ReservationChanged", id_p, "returned"), "the second child's runtime");
        cr_assert_eq(s.runtime, 10 * MS);
        harness_assert_dl(f.pid, 10 * MS, 50 * MS, P100, 0);
        cr_assert_eq(group_allocated(h, "split", NULL), a0 + bw(10 * MS, P100));

        release(h, id_p, "Release(parent)");
        harness_child_kill(filler);
        stop_all(h);
}

/* A storm of n forks (op OP_STORM: each child exits at once; OP_STORM_LINGER: each lives 1 ms) from
 * an admitted process: afterwards every child is gone from the books, ListReservations and ListGroups
 * are exactly where they began, the kernel's headroom too, no event was lost (or, if some were, a
 * resync ran and the books still balance), and the consistency checker of the next resync passes. */
static void run_storm(const char *config, int op, int n) {
        _cleanup_free_ char *r0 = NULL, *g0 = NULL, *r1 = NULL, *g1 = NULL;
        Harness *h = start(config);
        uint64_t id_p, h0, seen0, lost0, resyncs0, seen, lost, resyncs, start_us, end;
        bool settled = false;
        Forker f;
        Reply rp;
        int r;

        h0 = pool_baseline();
        forker_start(&f);
        /* RECLAIM: the forker may use idle CPU beyond its 10%, or 10,000 forks take half a minute. */
        id_p = admit_flags(h, f.pid, 0, "storm", 10 * MS, P100, P100, EDFD_ADMIT_RECLAIM,
                           "Admit(parent, 10ms/100ms, reclaim)");
        r0 = harness_books_reservations(h);
        g0 = groups_text(h);
        seen0 = get_u64(h, "EventsSeen");
        lost0 = get_u64(h, "EventsLost");
        resyncs0 = get_u64(h, "Resyncs");
        rec_reset(h);

        start_us = now_usec();
        r = forker_cmd_timeout(&f, op, n, &rp, 240 * USEC_PER_SEC);
        cr_assert_eq(r, 0, "the storm: fork failed (%" PRIu64 " forks made): %s", rp.a, strerror(-r));
        cr_assert_eq(rp.a, (uint64_t) n);

        /* Wait (bounded) until edfd has seen our 2 x n events and the books are back. */
        end = now_usec() + 120 * USEC_PER_SEC;
        while (now_usec() < end) {
                rec_pump(h, 0);
                seen = get_u64(h, "EventsSeen");
                if (seen >= seen0 + 2 * (uint64_t) n) {
                        free(r1);
                        r1 = harness_books_reservations(h);
                        if (streq(r1, r0)) {
                                settled = true;
                                break;
                        }
                }
                harness_usleep(20 * 1000);
        }
        seen = get_u64(h, "EventsSeen");
        lost = get_u64(h, "EventsLost");
        resyncs = get_u64(h, "Resyncs");
        rec_pump(h, 0);
        fprintf(stderr,
                "storm: %d forks (%s) in %.3f s by the forker, books settled after %.3f s; EventsSeen +%" PRIu64
                ", EventsLost +%" PRIu64 ", Resyncs +%" PRIu64 "; signals: %" PRIu64 " added (split), %" PRIu64
                " removed (exited), %" PRIu64 " removed (vanished), %" PRIu64 " split, %" PRIu64 " changed (split), %"
                PRIu64 " changed (returned)\n",
                n, op == OP_STORM ? "exit at once" : "1 per ms, live 3 ms", (double) rp.b / 1e9,
                (double) (now_usec() - start_us) / 1e6, seen - seen0, lost - lost0, resyncs - resyncs0,
                rec_counter("ReservationAdded/split"), rec_counter("ReservationRemoved/exited"),
                rec_counter("ReservationRemoved/vanished"), rec_counter("Split"),
                rec_counter("ReservationChanged/split"), rec_counter("ReservationChanged/returned"));
        cr_assert_geq(seen, seen0 + 2 * (uint64_t) n, "EventsSeen grew by %" PRIu64 ", our storm alone made %d events",
                      seen - seen0, 2 * n);
        cr_assert(settled, "ListReservations did not come back:\nbefore:\n%safter:\n%s", r0, r1 ? r1 : "");
        if (lost > lost0)
                cr_assert_gt(resyncs, resyncs0, "%" PRIu64 " overflow episodes but no resync", lost - lost0);
        cr_expect_eq(lost, lost0, "events were lost in the storm (%" PRIu64 " overflow episodes)", lost - lost0);

        /* Every child that was raised also ended, and every split was announced. */
        cr_assert_eq(rec_counter("ReservationAdded/split"),
                     rec_counter("ReservationRemoved/exited") + rec_counter("ReservationRemoved/vanished"),
                     "children added and removed do not balance");
        cr_assert_eq(rec_counter("Split"), rec_counter("ReservationAdded/split"));
        cr_assert_eq(rec_counter("ReservationChanged/split"), rec_counter("ReservationAdded/split"),
                     "every split changes the donor");

        g1 = groups_text(h);
        cr_assert_str_eq(g1, g0, "ListGroups is not back where it began");
        harness_assert_dl(f.pid, 10 * MS, P100, P100, SCHED_FLAG_RECLAIM);
        assert_pool_settles(h0, "after the storm");

        /* The consistency checker runs at every resync: wait for the next periodic one. */
        resyncs = get_u64(h, "Resyncs");
        end = now_usec() + RESYNC_WAIT_USEC;
        while (get_u64(h, "Resyncs") == resyncs && now_usec() < end)
                harness_usleep(100 * 1000);
        cr_assert_gt(get_u64(h, "Resyncs"), resyncs, "no resync within 15 s");
        assert_log_clean(h);
        free(r1);
        r1 = harness_books_reservations(h);
        cr_assert_str_eq(r1, r0, "the resync after the storm changed ListReservations");

        rec_reset(h); /* the storm's signals overflowed the recorder */
        release(h, id_p, "Release(parent)");
        assert_pool_settles(h0, "after releasing the parent");
        stop_all(h);
}

Test(fork, storm_leaves_the_books_as_they_were, .timeout = 300) {
        run_storm("fork-storm.yaml", OP_STORM, STORM_FORKS);
}

/* Paced forks whose children live 3 ms: edfd keeps up, so most children are raised, the donor is
 * split two or three levels deep (10ms, 5, 2.5, 1.25) and the returns come back in any order. */
Test(fork, storm_of_lingering_children, .timeout = 300) {
        run_storm("fork-storm.yaml", OP_STORM_LINGER, 2000);
}

/* The donor rule when a split child ends (tree.h): its runtime goes back to the donor only if the
 * donor still exists, has the same period, has room under its deadline, and the group can cover the
 * rounding unit that may come back with it; else it returns to the group. */
typedef enum DonorAction {
        DONOR_KEEP,
        DONOR_UPDATE,     /* Update() the donor to runtime/deadline/period */
        DONOR_RELEASE,    /* Release() the donor */
        DONOR_FILL_GROUP, /* fill the group to the last unit */
} DonorAction;

typedef struct DonorRow {
        const char *name;
        DonorAction action;
        uint64_t runtime, deadline, period;
        bool returned;
} DonorRow;

static uint64_t group_bandwidth(Harness *h, const char *path) {
        HarnessGroup *g = NULL;
        const HarnessGroup *x;
        size_t n = 0;
        uint64_t b;

        cr_assert_eq(harness_list_groups(h, &g, &n), 0);
        x = harness_find_group(g, n, path);
        cr_assert(x, "ListGroups has no group %s", path);
        b = x->bandwidth;
        harness_groups_free(g, n);
        return b;
}

Test(fork, donor_rule_on_return) {
        static const DonorRow rows[] = {
                { "an unchanged donor", DONOR_KEEP, 5 * MS, 50 * MS, P100, true },
                { "a donor now with another period", DONOR_UPDATE, 5 * MS, 50 * MS, 200 * MS, false },
                { "a donor without room under its deadline (4ms + 5ms > 8ms)", DONOR_UPDATE, 4 * MS, 8 * MS, P100, false },
                { "a donor with just room under its deadline (3ms + 5ms = 8ms)", DONOR_UPDATE, 3 * MS, 8 * MS, P100,
                  true },
                { "a donor made smaller, same period", DONOR_UPDATE, 2 * MS, 50 * MS, P100, true },
                { "a released donor", DONOR_RELEASE, 0, 0, 0, false },
                { "a group without room for the rounding unit", DONOR_FILL_GROUP, 5 * MS, 50 * MS, P100, false },
        };
        Harness *h = start("fork.yaml");

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
                _cleanup_free_ char *g0 = NULL, *g_end = NULL;
                const DonorRow *row = &rows[i];
                uint64_t id_p, id_k, id_fill = 0, a0, a, fill_bw = 0;
                uint64_t rt = row->runtime, dl = row->deadline, per = row->period;
                HarnessChild *filler = NULL;
                const char *name = row->name;
                pid_t c;
                Forker f;
                Sig s;
                Res x;
                int r;

                g0 = groups_text(h);
                a0 = group_allocated(h, "split", NULL);
                forker_start(&f);
                id_p = admit(h, f.pid, 0, "split", 10 * MS, 50 * MS, P100, name);
                c = forker_fork(&f, false);
                s = expect_sig(h, want_thread("ReservationAdded", (uint32_t) c, (uint32_t) c, "split"), name);
                id_k = s.id;
                expect_sig(h, want_split(id_p, id_k), name);

                switch (row->action) {
                case DONOR_KEEP:
                        break;
                case DONOR_UPDATE:
                        r = harness_call(h, &e, NULL, "Update", "tttt", id_p, rt, dl, per);
                        assert_bus_ok(r, &e, name);
                        expect_sig(h, want("ReservationChanged", id_p, "requested"), name);
                        break;
                case DONOR_RELEASE:
                        release(h, id_p, name);
                        break;
                case DONOR_FILL_GROUP: {
                        uint64_t need = group_bandwidth(h, "split") - group_allocated(h, "split", NULL);
                        uint64_t fill_rt = (need * P100 + BW_UNIT - 1) / BW_UNIT;

                        fill_bw = bw(fill_rt, P100);
                        cr_assert_eq(fill_bw, need, "%s: no runtime over 100ms has bandwidth %" PRIu64, name, need);
                        cr_assert_eq(harness_spawn_child(h, 1, false, &filler), 0);
                        id_fill = admit(h, filler->pid, 0, "split", fill_rt, 50 * MS, P100, name);
                        cr_assert_eq(group_allocated(h, "split", NULL), group_bandwidth(h, "split"),
                                     "%s: the group is not full", name);
                        break;
                }
                }

                forker_end_child(&f, c);
                expect_sig(h, want("ReservationRemoved", id_k, "exited"), name);
                if (row->returned) {
                        s = expect_sig(h, want("ReservationChanged", id_p, "returned"), name);
                        cr_assert(s.runtime == rt + 5 * MS && s.deadline == dl && s.period == per,
                                  "%s: ReservationChanged(returned) says %" PRIu64 "/%" PRIu64 "/%" PRIu64, name,
                                  s.runtime, s.deadline, s.period);
                        rt += 5 * MS;
                } else {
                        barrier(h);
                        expect_no_sig(h, want("ReservationChanged", id_p, "returned"), name);
                }

                if (row->action == DONOR_RELEASE) {
                        harness_assert_other(f.pid);
                        harness_assert_no_reservations(h, name);
                        a = group_allocated(h, "split", NULL);
                        cr_assert_eq(a, a0, "%s: split holds %" PRIu64 ", expected %" PRIu64, name, a, a0);
                } else {
                        harness_assert_dl(f.pid, rt, dl, per, 0);
                        x = res_get(h, id_p, name);
                        assert_res(&x, (uint32_t) f.pid, (uint32_t) f.pid, "split", rt, dl, per, 0, name);
                        a = group_allocated(h, "split", NULL);
                        cr_assert_eq(a, a0 + bw(rt, per) + fill_bw, "%s: split holds %" PRIu64 ", expected %" PRIu64,
                                     name, a, a0 + bw(rt, per) + fill_bw);
                        release(h, id_p, name);
                }
                if (filler) {
                        release(h, id_fill, name);
                        harness_child_kill(filler);
                }
                g_end = groups_text(h);
                cr_assert_str_eq(g_end, g0, "%s: ListGroups is not back where it began", name);
                forker_kill(&f);
        }
        stop_all(h);
}

/* The pid of the only child of process pid (bounded wait for it to appear). */
static pid_t only_child_of(pid_t pid) {
        char path[64];

        snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int) pid, (int) pid);
        for (unsigned i = 0; i < 500; i++) {
                FILE *fp = fopen(path, "re");
                int child = 0;

                cr_assert(fp, "cannot read %s: %m", path);
                if (fscanf(fp, "%d", &child) != 1)
                        child = 0;
                fclose(fp);
                if (child > 0)
                        return child;
                harness_usleep(10 * 1000);
        }
        cr_assert_fail("process %d forked no child", (int) pid);
        return 0;
}

/* A split child forks in turn: the split goes on from it, and each return goes to its own donor. */
Test(fork, split_chain) {
        Harness *h = start("fork.yaml");
        uint64_t id_p, id_c, id_e;
        pid_t c, e;
        Forker f;
        Sig s;
        Res x;

        forker_start(&f);
        id_p = admit(h, f.pid, 0, "split", 8 * MS, 50 * MS, P100, "Admit(parent, 8ms)");
        c = forker_fork(&f, false);
        s = expect_sig(h, want_thread("ReservationAdded", (uint32_t) c, (uint32_t) c, "split"), "child");
        id_c = s.id;
        expect_sig(h, want_split(id_p, id_c), "child");

        cr_assert_eq(kill(c, SIGUSR2), 0);
        e = only_child_of(c);
        s = expect_sig(h, want_thread("ReservationAdded", (uint32_t) e, (uint32_t) e, "split"), "grandchild");
        id_e = s.id;
        expect_sig(h, want_split(id_c, id_e), "grandchild: the donor is the child that forked");
        s = expect_sig(h, want("ReservationChanged", id_c, "split"), "grandchild");
        cr_assert_eq(s.runtime, 2 * MS);
        harness_assert_dl(f.pid, 4 * MS, 50 * MS, P100, 0);
        harness_assert_dl(c, 2 * MS, 50 * MS, P100, 0);
        harness_assert_dl(e, 2 * MS, 50 * MS, P100, 0);
        x = res_get(h, id_e, "grandchild");
        assert_res(&x, (uint32_t) e, (uint32_t) e, "split", 2 * MS, 50 * MS, P100, id_c, "grandchild");
        assert_donated(&x, 2 * MS, "grandchild: half of what the child had");
        x = res_get(h, id_c, "child");
        assert_donated(&x, 4 * MS, "child: what it was given, not what it kept after its own split");

        cr_assert_eq(kill(e, SIGTERM), 0);
        expect_sig(h, want("ReservationRemoved", id_e, "exited"), "grandchild ends");
        s = expect_sig(h, want("ReservationChanged", id_c, "returned"), "grandchild ends");
        cr_assert_eq(s.runtime, 4 * MS);
        harness_assert_dl(c, 4 * MS, 50 * MS, P100, 0);
        harness_assert_dl(f.pid, 4 * MS, 50 * MS, P100, 0);

        forker_end_child(&f, c);
        expect_sig(h, want("ReservationRemoved", id_c, "exited"), "child ends");
        s = expect_sig(h, want("ReservationChanged", id_p, "returned"), "child ends");
        cr_assert_eq(s.runtime, 8 * MS);
        harness_assert_dl(f.pid, 8 * MS, 50 * MS, P100, 0);
        release(h, id_p, "Release(parent)");
        stop_all(h);
}

/* A restart (SIGKILL) in the middle of a split: both are re-adopted with split_from intact, a Reload
 * keeps it, and the child's exit still gives the donor its runtime back. */
Test(fork, restart_keeps_splits) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = start("fork.yaml");
        uint64_t id_p, id_k;
        pid_t c;
        Forker f;
        Sig s;
        Res x;
        int r;

        forker_start(&f);
        id_p = admit(h, f.pid, 0, "split", 10 * MS, 50 * MS, P100, "Admit(parent, 10ms)");
        c = forker_fork(&f, false);
        s = expect_sig(h, want_thread("ReservationAdded", (uint32_t) c, (uint32_t) c, "split"), "child");
        id_k = s.id;
        expect_sig(h, want_split(id_p, id_k), "child");

        r = harness_restart_daemon(h, true);
        cr_assert_eq(r, 0, "restarting edfd: %s", strerror(-r));
        x = res_get(h, id_k, "after the restart");
        assert_res(&x, (uint32_t) c, (uint32_t) c, "split", 5 * MS, 50 * MS, P100, id_p, "the child after the restart");
        assert_donated(&x, 5 * MS, "the child after the restart");
        x = res_get(h, id_p, "after the restart");
        assert_res(&x, (uint32_t) f.pid, (uint32_t) f.pid, "split", 5 * MS, 50 * MS, P100, 0,
                   "the parent after the restart");
        r = harness_call(h, &e, NULL, "Reload", "");
        assert_bus_ok(r, &e, "Reload");
        x = res_get(h, id_k, "after the reload");
        assert_res(&x, (uint32_t) c, (uint32_t) c, "split", 5 * MS, 50 * MS, P100, id_p, "the child after the reload");
        assert_donated(&x, 5 * MS, "the child after the reload");

        forker_end_child(&f, c);
        expect_sig(h, want("ReservationRemoved", id_k, "exited"), "the child ends after the restart");
        s = expect_sig(h, want("ReservationChanged", id_p, "returned"), "the child ends after the restart");
        cr_assert_eq(s.runtime, 10 * MS);
        harness_assert_dl(f.pid, 10 * MS, 50 * MS, P100, 0);
        release(h, id_p, "Release(parent)");
        stop_all(h);
}

/* What happened while edfd was down is settled when it starts again (issue 6, "Never lose count": a
 * daemon restart triggers a resync): a split child that exited meanwhile gives its runtime back to
 * its live donor, and a child forked meanwhile stays SCHED_OTHER and is counted in UnseenChildren. */
Test(fork, restart_settles_what_happened_while_down) {
        Harness *h = start("fork.yaml");
        uint64_t id_p, id_k, unseen;
        SchedAttr a;
        pid_t c, d;
        Forker f;
        Sig s;
        Res x;
        int r;

        forker_start(&f);
        id_p = admit(h, f.pid, 0, "split", 10 * MS, 50 * MS, P100, "Admit(parent, 10ms)");
        c = forker_fork(&f, false);
        s = expect_sig(h, want_thread("ReservationAdded", (uint32_t) c, (uint32_t) c, "split"), "child");
        id_k = s.id;
        expect_sig(h, want_split(id_p, id_k), "child");

        cr_assert_geq(harness_kill_daemon(h, SIGKILL), 0);
        forker_end_child(&f, c);   /* exits while edfd is down */
        d = forker_fork(&f, false); /* born while edfd is down */
        r = harness_start_daemon(h);
        cr_assert_eq(r, 0, "starting edfd again: %s", strerror(-r));

        harness_assert_other(d);
        cr_assert(!res_has_tid(h, (uint32_t) d), "the child born while edfd was down is listed");
        cr_assert(!res_has_tid(h, (uint32_t) c), "the child that exited while edfd was down is still listed");
        x = res_get(h, id_p, "after the restart");
        cr_assert_eq(harness_sched_getattr(f.pid, &a), 0);
        cr_expect(x.runtime == 10 * MS && a.sched_runtime == 10 * MS,
                  "the split child exited while edfd was down: its donor has %" PRIu64 " ns in the books and %" PRIu64
                  " ns in the kernel, expected its whole 10ms back", x.runtime, (uint64_t) a.sched_runtime);
        unseen = get_u64(h, "UnseenChildren");
        cr_expect_eq(unseen, 1, "UnseenChildren is %" PRIu64 " after a restart, expected 1 (the child forked while "
                     "edfd was down)", unseen);
        release(h, id_p, "Release(parent)");
        stop_all(h);
}

/* STATUS= shows the counters the properties show (lost, resyncs and unseen children change only
 * with a STATUS update; seen may run ahead of the last STATUS). Bounded wait for the notify thread. */
static void assert_status_counters(Harness *h) {
        uint64_t seen = 0, lost = 0, resyncs = 0, unseen = 0;
        char status[256] = "";

        for (unsigned i = 0; i < 100; i++) {
                const char *p;

                pthread_mutex_lock(&h->notify_lock);
                snprintf(status, sizeof status, "%s", h->status);
                pthread_mutex_unlock(&h->notify_lock);
                p = strstr(status, "events ");
                if (p && sscanf(p, "events %" SCNu64 " seen, %" SCNu64 " lost, %" SCNu64 " resyncs, %" SCNu64,
                                &seen, &lost, &resyncs, &unseen) == 4 &&
                    lost == get_u64(h, "EventsLost") && resyncs == get_u64(h, "Resyncs") &&
                    unseen == get_u64(h, "UnseenChildren"))
                        break;
                harness_usleep(10 * 1000);
        }
        cr_assert(strstr(status, "events "), "STATUS=%s shows no event counters", status);
        cr_assert_eq(lost, get_u64(h, "EventsLost"), "STATUS=%s, EventsLost %" PRIu64, status, get_u64(h, "EventsLost"));
        cr_assert_eq(resyncs, get_u64(h, "Resyncs"), "STATUS=%s, Resyncs %" PRIu64, status, get_u64(h, "Resyncs"));
        cr_assert_eq(unseen, get_u64(h, "UnseenChildren"), "STATUS=%s, UnseenChildren %" PRIu64, status,
                     get_u64(h, "UnseenChildren"));
        cr_assert_leq(seen, get_u64(h, "EventsSeen"), "STATUS=%s, EventsSeen %" PRIu64, status,
                      get_u64(h, "EventsSeen"));
}

/* The Drops counter of edfd's proc connector socket in /proc/net/netlink, or -1 if not found. */
static int64_t connector_drops(pid_t edfd) {
        char path[64], line[512];
        unsigned long inodes[64];
        size_t n_inodes = 0;
        int64_t drops = -1;
        DIR *d;
        FILE *fp;
        struct dirent *de;

        snprintf(path, sizeof path, "/proc/%d/fd", (int) edfd);
        d = opendir(path);
        if (!d)
                return -1;
        while ((de = readdir(d)) && n_inodes < ELEMENTSOF(inodes)) {
                char link[320], target[64];
                ssize_t k;

                snprintf(link, sizeof link, "%s/%s", path, de->d_name);
                k = readlink(link, target, sizeof target - 1);
                if (k <= 0)
                        continue;
                target[k] = 0;
                if (sscanf(target, "socket:[%lu]", &inodes[n_inodes]) == 1)
                        n_inodes++;
        }
        closedir(d);
        fp = fopen("/proc/net/netlink", "re");
        if (!fp)
                return -1;
        while (fgets(line, sizeof line, fp)) {
                unsigned long eth, dr, inode;
                char sk[32];

                if (sscanf(line, "%31s %lu %*s %*s %*s %*s %*s %*s %lu %lu", sk, &eth, &dr, &inode) != 4 || eth != 11)
                        continue;
                for (size_t i = 0; i < n_inodes; i++)
                        if (inodes[i] == inode)
                                drops = (int64_t) dr;
        }
        fclose(fp);
        return drops;
}

/* Events lost while edfd is stopped (SIGSTOP, then a flood of forks from a process edfd does not
 * manage, until the kernel drops events for edfd's socket): the overflow triggers a resync, which
 * releases the split child that exited unseen as "vanished" (its runtime going back to the donor),
 * leaves the children born unseen (a process and n_threads threads) SCHED_OTHER and counts them in
 * UnseenChildren. With seen_child, another admitted process first forks a child that edfd saw and
 * refused (too small to split): it is not an unseen child. */
static void run_lost_events(bool seen_child, unsigned n_threads) {
        Harness *h = start("fork-lost.yaml");
        uint64_t id_p, id_k, id_q = 0, lost0, resyncs0, unseen0, unseen, a_lost;
        pid_t c, d, s_pid = 0, threads[4];
        int64_t drops, drops_before;
        Forker f, q, g;
        unsigned chunks = 0;
        Sig s;
        Res x;

        cr_assert_leq(n_threads, ELEMENTSOF(threads));
        forker_start(&f);
        id_p = admit(h, f.pid, 0, "lost", 10 * MS, 50 * MS, P100, "Admit(parent, 10ms)");
        c = forker_fork(&f, false);
        s = expect_sig(h, want_thread("ReservationAdded", (uint32_t) c, (uint32_t) c, "split"), "child");
        id_k = s.id;
        expect_sig(h, want_split(id_p, id_k), "child");
        if (seen_child) {
                forker_start(&q);
                id_q = admit(h, q.pid, 0, "tight", 8 * MS, 50 * MS, P100, "Admit(q into tight, 8ms)");
                s_pid = forker_fork(&q, false);
                barrier(h);
                harness_assert_other(s_pid); /* seen, and refused: 4ms < 6ms */
        }
        forker_start(&g); /* the flood comes from a process edfd does not manage */
        a_lost = group_allocated(h, "lost", NULL);
        lost0 = get_u64(h, "EventsLost");
        resyncs0 = get_u64(h, "Resyncs");
        unseen0 = get_u64(h, "UnseenChildren");
        cr_assert_geq(connector_drops(h->edfd_pid), 0, "cannot find edfd's proc connector socket in /proc/net/netlink");

        cr_assert_eq(kill(h->edfd_pid, SIGSTOP), 0);
        drops_before = connector_drops(h->edfd_pid);
        do {
                cr_assert_eq(forker_cmd_timeout(&g, OP_STORM, 5000, NULL, 120 * USEC_PER_SEC), 0);
                drops = connector_drops(h->edfd_pid);
        } while (drops <= drops_before && ++chunks < 16);
        cr_assert_gt(drops, drops_before, "80,000 forks did not overflow edfd's socket");
        forker_end_child(&f, c);          /* its exit event is dropped */
        d = forker_fork(&f, false);       /* and so is this fork event */
        for (unsigned i = 0; i < n_threads; i++)
                threads[i] = forker_thread(&f);
        cr_assert_geq(connector_drops(h->edfd_pid), drops + 2 + n_threads, "the queue was not full any more");
        cr_assert_eq(kill(h->edfd_pid, SIGCONT), 0);

        expect_sig_within(h, want("ReservationRemoved", id_k, "vanished"), RESYNC_WAIT_USEC,
                          "the split child exited while its exit event was lost");
        s = expect_sig(h, want("ReservationChanged", id_p, "returned"), "the vanished child's runtime");
        cr_assert_eq(s.runtime, 10 * MS);
        cr_assert_gt(get_u64(h, "EventsLost"), lost0, "EventsLost did not grow");
        cr_assert_gt(get_u64(h, "Resyncs"), resyncs0, "no resync after the overflow");

        harness_assert_dl(f.pid, 10 * MS, 50 * MS, P100, 0);
        x = res_get(h, id_p, "after the overflow");
        assert_res(&x, (uint32_t) f.pid, (uint32_t) f.pid, "lost", 10 * MS, 50 * MS, P100, 0, "the parent");
        cr_assert_eq(group_allocated(h, "lost", NULL), a_lost - bw(5 * MS, P100) - bw(5 * MS, P100) + bw(10 * MS, P100));
        harness_assert_other(d);
        cr_assert(!res_has_tid(h, (uint32_t) d), "the unseen child is listed");
        for (unsigned i = 0; i < n_threads; i++) {
                harness_assert_other(threads[i]);
                cr_assert(!res_has_tid(h, (uint32_t) threads[i]), "the unseen thread is listed");
        }
        unseen = get_u64(h, "UnseenChildren");
        cr_expect_eq(unseen - unseen0, 1 + n_threads,
                     "UnseenChildren grew by %" PRIu64 ", expected %u: the process%s born while events were lost%s",
                     unseen - unseen0, 1 + n_threads, n_threads ? " and the threads" : "",
                     seen_child ? " (not the child edfd saw and refused before)" : "");
        assert_status_counters(h);
        if (seen_child) {
                harness_assert_other(s_pid);
                release(h, id_q, "Release(q)");
        }
        release(h, id_p, "Release(parent)");
        assert_log_clean(h);
        stop_all(h);
}

Test(fork, lost_events_count_unseen_children, .timeout = 300) {
        run_lost_events(false, 2);
}

Test(fork, lost_events_do_not_count_children_seen_before, .timeout = 300) {
        run_lost_events(true, 0);
}

/* The donor exits right after it forked, usually before edfd handles the fork: whatever edfd then
 * manages to do (split, or leave the child alone because the donor cannot be shrunk any more), the
 * kernel and the books agree, and once all are gone everything is back where it began. */
Test(fork, donor_exits_right_after_fork) {
        _cleanup_free_ char *g0 = NULL, *g_end = NULL;
        Harness *h = start("fork.yaml");
        unsigned raised = 0, left = 0;
        uint64_t h0;

        cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0, "PR_SET_CHILD_SUBREAPER: %m");
        h0 = pool_baseline();
        g0 = groups_text(h);
        for (unsigned i = 0; i < 20; i++) {
                SchedAttr a;
                uint64_t id_p;
                Reply rp;
                Forker f;
                Res l[RES_MAX];
                size_t n;
                bool listed = false;
                pid_t c;

                forker_start(&f);
                id_p = admit(h, f.pid, 0, "split", 10 * MS, 50 * MS, P100, "Admit(parent, 10ms)");
                cr_assert_eq(forker_cmd(&f, OP_FORK_EXIT, 0, &rp), 0);
                c = rp.id;
                forker_reap(&f);
                expect_sig(h, want("ReservationRemoved", id_p, "exited"), "the parent exits");
                barrier(h);

                n = res_list(h, l);
                for (size_t k = 0; k < n; k++)
                        if (l[k].tid == (uint32_t) c) {
                                listed = true;
                                assert_res(&l[k], (uint32_t) c, (uint32_t) c, "split", 5 * MS, 50 * MS, P100, id_p,
                                           "the child of a donor that exited at once");
                                harness_assert_dl(c, 5 * MS, 50 * MS, P100, 0);
                        }
                cr_assert_eq(n, listed ? 1 : 0, "ListReservations holds %zu entries", n);
                if (!listed) {
                        cr_assert_eq(harness_sched_getattr(c, &a), 0);
                        cr_assert_eq(a.sched_policy, 0, "child %d is SCHED_DEADLINE (%" PRIu64 "/%" PRIu64
                                     ") but not in the books", (int) c, (uint64_t) a.sched_runtime,
                                     (uint64_t) a.sched_period);
                        left++;
                } else
                        raised++;
                cr_assert_eq(kill(c, SIGTERM), 0);
                cr_assert_eq(waitpid(c, NULL, 0), c);
                if (listed)
                        expect_sig(h, want_thread("ReservationRemoved", (uint32_t) c, (uint32_t) c, "exited"),
                                   "the child exits");
                forker_kill(&f);
        }
        fprintf(stderr, "donor exits at once: %u children raised, %u left alone\n", raised, left);
        barrier(h);
        harness_assert_no_reservations(h, "after every donor and child exited");
        g_end = groups_text(h);
        cr_assert_str_eq(g_end, g0, "ListGroups is not back where it began");
        assert_pool_settles(h0, "after every donor and child exited");
        stop_all(h);
}
