/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Hostile input against the live daemon (issue 8): every method called with boundary and hostile
 * values (0, UINT64_MAX, other users' threads, kernel threads, pid 1, a pid that exits during the
 * call, group paths with "..", "/", "a//b", garbage, 4 KiB names, wrong signatures) is refused with
 * the right error, changes nothing (the books before and after are compared), and leaves the daemon
 * answering. Then a bounded randomized run: ~20,000 calls with random methods and arguments drawn
 * from interesting values, by root and by an unprivileged caller (uid 65534), checking after every
 * batch that edfd answers, the books balance, the kernel agrees with them, and nothing is admitted
 * that must not be (no kernel thread, no pid 1, no process that is not the test's).
 *
 * Root is never made to admit pid 1 of this machine (the machine's own init must not be touched):
 * that case runs inside a pid namespace of the test's own, whose pid 1 is a test process. Kernel
 * threads are tried as root only on an idle kernel thread, and released at once if edfd takes it. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "agent.h"
#include "basic/proc.h"
#include "harness.h"
#include "shared/protocol.h"

#define MS HARNESS_MSEC
#define US (HARNESS_MSEC / 1000)
#define P100 (100 * MS)
#define NOBODY 65534

#define E_INVALID EDFD_ERROR_INVALID_PARAMETERS
#define E_NO_THREAD EDFD_ERROR_NO_SUCH_THREAD
#define E_NO_GROUP EDFD_ERROR_NO_SUCH_GROUP
#define E_NO_RES EDFD_ERROR_NO_SUCH_RESERVATION
#define E_DENIED EDFD_ERROR_PERMISSION_DENIED
#define E_OVER EDFD_ERROR_OVER_BUDGET
#define E_ARGS "org.freedesktop.DBus.Error.InvalidArgs"

TestSuite(hostile, .fini = harness_fini, .timeout = 240);

static uint64_t mono_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

static void assert_answers(Harness *h, const char *after_what) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        uint64_t v = 0;
        int r;

        r = harness_call(h, &e, &reply, "Echo", "t", UINT64_C(0x5eed));
        cr_assert(r >= 0 && sd_bus_message_read(reply, "t", &v) >= 0 && v == 0x5eed,
                  "edfd does not answer Echo after %s: %s", after_what, e.message ? e.message : strerror(-r));
}

static void sleeper_kill(pid_t pid) {
        kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
}

/* ---- kernel threads ---- */

/* /proc/PID/stat: ppid and flags. */
static bool proc_stat(pid_t pid, int *ret_ppid, unsigned long *ret_flags) {
        ProcStat st;

        if (proc_read_stat(pid, pid, PROC_STAT_PPID | PROC_STAT_FLAGS, &st) < 0)
                return false;
        if (ret_ppid)
                *ret_ppid = (int) st.ppid;
        if (ret_flags)
                *ret_flags = (unsigned long) st.flags;
        return true;
}

static bool is_kernel_thread(pid_t pid) {
        unsigned long flags;
        int ppid;

        if (pid == 2)
                return true;
        return proc_stat(pid, &ppid, &flags) && ((flags & PROC_PF_KTHREAD) || ppid == 2);
}

/* A kernel thread (child of kthreadd) allowed on every CPU and asleep: a workqueue rescuer
 * ("kworker/R-...") if there is one. 0 if none. */
static pid_t idle_kernel_thread(void) {
        DIR *d = opendir("/proc");
        struct dirent *de;
        pid_t found = 0;
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        char all[32];

        snprintf(all, sizeof all, ncpu > 1 ? "0-%ld" : "0", ncpu - 1);
        if (!d)
                return 0;
        while (!found && (de = readdir(d))) {
                char path[300], line[256], comm[64] = "";
                pid_t pid = (pid_t) atoi(de->d_name);
                int ppid;
                bool cpus_ok = false;
                FILE *f;

                if (pid <= 2 || !proc_stat(pid, &ppid, NULL) || ppid != 2)
                        continue;
                snprintf(path, sizeof path, "/proc/%d/comm", (int) pid);
                f = fopen(path, "re");
                if (!f)
                        continue;
                if (!fgets(comm, sizeof comm, f))
                        comm[0] = '\0';
                fclose(f);
                if (strncmp(comm, "kworker/R-", 10) != 0)
                        continue;
                snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
                f = fopen(path, "re");
                if (!f)
                        continue;
                while (fgets(line, sizeof line, f))
                        if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
                                char *v = line + 18;
                                v += strspn(v, " \t");
                                v[strcspn(v, "\n")] = '\0';
                                cpus_ok = streq(v, all);
                        }
                fclose(f);
                if (cpus_ok)
                        found = pid;
        }
        closedir(d);
        return found;
}

/* If edfd took thread tid, release it at once (and say so); true if it had. */
static bool release_if_admitted(Harness *h, uint64_t tid) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        HarnessReservation *l;
        size_t n;
        bool found = false;

        if (harness_list_reservations(h, &l, &n) < 0)
                return false;
        for (size_t i = 0; i < n; i++)
                if (l[i].tid == tid) {
                        found = true;
                        if (harness_call(h, &e, NULL, "Release", "t", l[i].id) < 0)
                                fprintf(stderr, "RELEASING THE WRONGLY ADMITTED THREAD %" PRIu64 " FAILED: %s\n", tid,
                                        e.message);
                }
        harness_reservations_free(l, n);
        if (found)
                (void) harness_dl_reset((pid_t) tid);
        return found;
}

/* ---- a table of hostile admissions ---- */

static char long_name[4097], long_path[300], deep_path[200], long_component[70];

static void make_long_strings(void) {
        memset(long_name, 'a', sizeof long_name - 1);
        long_name[sizeof long_name - 1] = '\0';
        memset(long_path, 'a', sizeof long_path - 1);
        for (size_t i = 8; i < sizeof long_path - 1; i += 9)
                long_path[i] = '/';
        long_path[sizeof long_path - 1] = '\0';
        deep_path[0] = '\0';
        for (int i = 0; i < 17; i++)
                strcat(deep_path, i ? "/d" : "d");
        memset(long_component, 'c', 65);
        long_component[65] = '\0';
}

/* Special values resolved at run time. */
enum {
        V_CHILD = -1,      /* the harness child's pid */
        V_THREAD2 = -2,    /* its second thread */
        V_OTHER = -3,      /* another child's pid */
        V_DEAD = -4,       /* a pid nobody has */
        V_NOBODY = -5,     /* a process of uid 65534 */
};

typedef struct AdmitCase {
        const char *what;
        int64_t pid, tid;  /* >= 0 literal (UINT32_MAX as -100), < 0 a V_ value */
        const char *group;
        uint64_t runtime, deadline, period, flags;
        const char *error, *alt;
} AdmitCase;

#define BIG (-100)
#define BIG1 (-101) /* INT32_MAX + 1 */

/* pids and tids are u on the bus: UINT32_MAX is the largest a caller can send (and -1 as an int32),
 * INT32_MAX + 1 the smallest that no pid_t can be. */
static uint32_t resolve(int64_t v, const HarnessChild *c, const HarnessChild *o, pid_t nobody) {
        switch (v) {
        case V_CHILD:
                return (uint32_t) c->pid;
        case V_THREAD2:
                return (uint32_t) c->tids[1];
        case V_OTHER:
                return (uint32_t) o->pid;
        case V_DEAD:
                return (uint32_t) harness_dead_pid();
        case V_NOBODY:
                return (uint32_t) nobody;
        case BIG:
                return UINT32_MAX;
        case BIG1:
                return (uint32_t) INT32_MAX + 1;
        default:
                return (uint32_t) v;
        }
}

static const AdmitCase admit_cases[] = {
        { "pid UINT32_MAX", BIG, 0, "test/a", MS, 0, P100, 0, E_NO_THREAD, NULL },
        { "pid INT32_MAX+1", BIG1, 0, "test/a", MS, 0, P100, 0, E_NO_THREAD, NULL },
        { "tid UINT32_MAX", V_CHILD, BIG, "test/a", MS, 0, P100, 0, E_NO_THREAD, NULL },
        { "tid INT32_MAX+1", V_CHILD, BIG1, "test/a", MS, 0, P100, 0, E_NO_THREAD, NULL },
        { "pid of no process", V_DEAD, 0, "test/a", MS, 0, P100, 0, E_NO_THREAD, NULL },
        { "tid of no thread", V_CHILD, V_DEAD, "test/a", MS, 0, P100, 0, E_NO_THREAD, NULL },
        { "tid of another process", V_CHILD, V_OTHER, "test/a", MS, 0, P100, 0, E_NO_THREAD, NULL },
        { "pid that is a thread, not a process", V_THREAD2, 0, "test/a", MS, 0, P100, 0, E_NO_THREAD, NULL },
        { "pid that is a thread, its own tid", V_THREAD2, V_THREAD2, "test/a", MS, 0, P100, 0, E_NO_THREAD, NULL },
        { "group ..", V_CHILD, 0, "..", MS, 0, P100, 0, E_INVALID, NULL },
        { "group test/..", V_CHILD, 0, "test/..", MS, 0, P100, 0, E_INVALID, NULL },
        { "group test/../test/a", V_CHILD, 0, "test/../test/a", MS, 0, P100, 0, E_INVALID, NULL },
        { "group .", V_CHILD, 0, ".", MS, 0, P100, 0, E_INVALID, NULL },
        { "group test//a", V_CHILD, 0, "test//a", MS, 0, P100, 0, E_INVALID, NULL },
        { "group /test/a", V_CHILD, 0, "/test/a", MS, 0, P100, 0, E_INVALID, NULL },
        { "group test/a/", V_CHILD, 0, "test/a/", MS, 0, P100, 0, E_INVALID, NULL },
        { "group //", V_CHILD, 0, "//", MS, 0, P100, 0, E_INVALID, NULL },
        { "group with a space", V_CHILD, 0, "test/a b", MS, 0, P100, 0, E_INVALID, NULL },
        { "group of garbage", V_CHILD, 0, "\x01\x02\x7f$(rm -rf /);\\'\"*?", MS, 0, P100, 0, E_INVALID, NULL },
        { "group of non-ASCII UTF-8", V_CHILD, 0, "t\xc3\xa9st", MS, 0, P100, 0, E_INVALID, NULL },
        { "group with a newline", V_CHILD, 0, "test\na", MS, 0, P100, 0, E_INVALID, NULL },
        { "group of 4 KiB", V_CHILD, 0, long_name, MS, 0, P100, 0, E_INVALID, NULL },
        { "group path of 299 bytes", V_CHILD, 0, long_path, MS, 0, P100, 0, E_INVALID, NULL },
        { "group 17 deep", V_CHILD, 0, deep_path, MS, 0, P100, 0, E_INVALID, NULL },
        { "group name of 65 bytes", V_CHILD, 0, long_component, MS, 0, P100, 0, E_INVALID, NULL },
        { "group that does not exist", V_CHILD, 0, "nosuch", MS, 0, P100, 0, E_NO_GROUP, NULL },
        { "runtime 0", V_CHILD, 0, "test/a", 0, 0, P100, 0, E_INVALID, NULL },
        { "runtime 1", V_CHILD, 0, "test/a", 1, 0, P100, 0, E_INVALID, NULL },
        { "runtime 1023", V_CHILD, 0, "test/a", 1023, 0, P100, 0, E_INVALID, NULL },
        { "runtime UINT64_MAX", V_CHILD, 0, "test/a", UINT64_MAX, 0, P100, 0, E_INVALID, NULL },
        { "runtime 2^63", V_CHILD, 0, "test/a", UINT64_C(1) << 63, 0, P100, 0, E_INVALID, NULL },
        { "runtime > deadline", V_CHILD, 0, "test/a", 2 * MS, MS, P100, 0, E_INVALID, NULL },
        { "deadline > period", V_CHILD, 0, "test/a", MS, 2 * P100, P100, 0, E_INVALID, NULL },
        { "deadline UINT64_MAX", V_CHILD, 0, "test/a", MS, UINT64_MAX, P100, 0, E_INVALID, NULL },
        { "period 0", V_CHILD, 0, "test/a", MS, 0, 0, 0, E_INVALID, NULL },
        { "period 0 with a deadline", V_CHILD, 0, "test/a", MS, P100, 0, 0, E_INVALID, NULL },
        { "period 1", V_CHILD, 0, "test/a", 1024, 1024, 1, 0, E_INVALID, NULL },
        { "period below the kernel's minimum", V_CHILD, 0, "test/a", 1024, 0, 99 * US, 0, E_INVALID, NULL },
        { "period above the kernel's maximum", V_CHILD, 0, "test/a", MS, 0, UINT64_C(4194304001), 0, E_INVALID, NULL },
        { "period UINT64_MAX", V_CHILD, 0, "test/a", MS, 0, UINT64_MAX, 0, E_INVALID, NULL },
        { "period 2^63", V_CHILD, 0, "test/a", MS, 0, UINT64_C(1) << 63, 0, E_INVALID, NULL },
        { "all UINT64_MAX", V_CHILD, 0, "test/a", UINT64_MAX, UINT64_MAX, UINT64_MAX, 0, E_INVALID, NULL },
        { "100% of a CPU", V_CHILD, 0, "test/a", P100, 0, P100, 0, E_OVER, NULL },
        { "flag 8", V_CHILD, 0, "test/a", MS, 0, P100, 8, E_INVALID, NULL },
        { "flags UINT64_MAX", V_CHILD, 0, "test/a", MS, 0, P100, UINT64_MAX, E_INVALID, NULL },
        { "flag 2^63", V_CHILD, 0, "test/a", MS, 0, P100, UINT64_C(1) << 63, E_INVALID, NULL },
        { "move into a group without a cgroup", V_CHILD, 0, "test/a", MS, 0, P100, EDFD_ADMIT_MOVE, E_INVALID, NULL },
};

static void run_admit_cases(Harness *h, Agent *a, const HarnessChild *c, const HarnessChild *o, pid_t nobody) {
        for (size_t i = 0; i < ELEMENTSOF(admit_cases); i++) {
                const AdmitCase *k = &admit_cases[i];
                bool as_nobody = a != NULL;
                /* As nobody, the process is its own (V_CHILD means the nobody process there). */
                uint32_t pid = resolve(k->pid == V_CHILD && as_nobody ? V_NOBODY : k->pid, c, o, nobody);
                uint32_t tid = resolve(k->tid, c, o, nobody);
                const char *error = k->error, *alt = k->alt;
                HarnessBooks before = harness_books_take(h);
                char what[256];
                int r;

                if (as_nobody) {
                        /* What only root could reach is refused earlier or as not its own. */
                        if (k->pid == V_THREAD2 || k->pid == V_OTHER || k->tid == V_THREAD2)
                                alt = E_DENIED;
                        /* Flag 4 needs the manage action, checked before the flags are. */
                        if (k->flags == EDFD_ADMIT_MOVE)
                                error = E_DENIED;
                        else if (k->flags & EDFD_ADMIT_MOVE)
                                alt = E_DENIED;
                }
                snprintf(what, sizeof what, "%s: Admit(%s)", as_nobody ? "nobody" : "root", k->what);
                if (as_nobody) {
                        AgentReply rep = agent_call(a, "Admit", "uustttt", (uint64_t) pid, (uint64_t) tid, k->group, k->runtime, k->deadline,
                                                    k->period, k->flags);
                        cr_assert(rep.r < 0, "%s: succeeded (id %" PRIu64 "), expected %s", what, rep.value, error);
                        cr_assert(streq(rep.name, error) || (alt && streq(rep.name, alt)),
                                  "%s: expected %s%s%s, got %s: %s", what, error, alt ? " or " : "", alt ? alt : "",
                                  rep.name, rep.message);
                        cr_assert(rep.message[0], "%s: %s without a message", what, rep.name);
                } else {
                        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
                        uint64_t id = 0;
                        r = harness_admit(h, &e, pid, tid, k->group, k->runtime, k->deadline, k->period, k->flags,
                                          &id);
                        harness_assert_error_(r, &e, what, error, alt);
                }
                harness_books_assert_same(h, &before, what);
                harness_books_free(&before);
                harness_assert_other(as_nobody ? nobody : c->pid);
                harness_assert_other(c->tids[1]);
                assert_answers(h, what);
        }
}

Test(hostile, admit_values) {
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessChild *c, *o;

        make_long_strings();
        cr_assert_eq(harness_spawn_child(h, 2, false, &c), 0);
        cr_assert_eq(harness_spawn_child(h, 1, false, &o), 0);
        run_admit_cases(h, NULL, c, o, 0);
        harness_assert_no_reservations(h, "hostile admissions by root");
        harness_stop(h);
}

Test(hostile, admit_values_unprivileged) {
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessChild *c, *o;
        Agent *a;
        pid_t nobody;

        make_long_strings();
        cr_assert_eq(harness_spawn_child(h, 2, false, &c), 0);
        cr_assert_eq(harness_spawn_child(h, 1, false, &o), 0);
        nobody = harness_nobody_sleeper();
        a = agent_start(h);
        run_admit_cases(h, a, c, o, nobody);
        harness_assert_no_reservations(h, "hostile admissions by nobody");
        agent_stop(a);
        sleeper_kill(nobody);
        harness_stop(h);
}

/* ---- other methods ---- */

typedef struct Call {
        const char *what;
        const char *member, *types;
        uint64_t a, b, c, d;
        const char *s;
        const char *error, *alt;
} Call;

/* Calls one of the methods below with its arguments in the order of its signature. */
static int call_case(Harness *h, sd_bus_error *e, const Call *k) {
        if (streq(k->types, "t"))
                return harness_call(h, e, NULL, k->member, "t", k->a);
        if (streq(k->types, "u")) {
                cr_assert_leq(k->a, UINT32_MAX, "bad case %s: %" PRIu64 " does not fit in a u", k->what, k->a);
                return harness_call(h, e, NULL, k->member, "u", (uint32_t) k->a);
        }
        if (streq(k->types, "tttt"))
                return harness_call(h, e, NULL, k->member, "tttt", k->a, k->b, k->c, k->d);
        if (streq(k->types, "stt"))
                return harness_call(h, e, NULL, k->member, "stt", k->s, k->a, k->b);
        if (streq(k->types, "s"))
                return harness_call(h, e, NULL, k->member, "s", k->s);
        cr_assert_fail("bad case %s", k->what);
        return -EINVAL;
}

#define ID_LIVE UINT64_C(0xfffffffffffffff0) /* replaced by the live reservation's id */

Test(hostile, other_methods) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessChild *c;
        uint64_t id;
        int r;

        make_long_strings();
        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        r = harness_admit(h, &e, c->pid, 0, "test/a", MS, 0, P100, 0, &id);
        assert_bus_ok(r, &e, "Admit(child, test/a, 1ms/100ms)");
        r = harness_call(h, &e, NULL, "CreateGroup", "stt", "test/dyn", MS, P100);
        assert_bus_ok(r, &e, "CreateGroup(test/dyn)");

        const Call cases[] = {
                { "Update(0)", "Update", "tttt", 0, MS, 0, P100, NULL, E_NO_RES, NULL },
                { "Update(UINT64_MAX)", "Update", "tttt", UINT64_MAX, MS, 0, P100, NULL, E_NO_RES, NULL },
                { "Update(id + 1)", "Update", "tttt", id + 1, MS, 0, P100, NULL, E_NO_RES, NULL },
                { "Update(live, runtime 0)", "Update", "tttt", ID_LIVE, 0, 0, P100, NULL, E_INVALID, NULL },
                { "Update(live, runtime 1023)", "Update", "tttt", ID_LIVE, 1023, 0, P100, NULL, E_INVALID, NULL },
                { "Update(live, all 0)", "Update", "tttt", ID_LIVE, 0, 0, 0, NULL, E_INVALID, NULL },
                { "Update(live, all UINT64_MAX)", "Update", "tttt", ID_LIVE, UINT64_MAX, UINT64_MAX, UINT64_MAX, NULL,
                  E_INVALID, NULL },
                { "Update(live, runtime > deadline)", "Update", "tttt", ID_LIVE, 2 * MS, MS, P100, NULL, E_INVALID, NULL },
                { "Update(live, period 2^63)", "Update", "tttt", ID_LIVE, MS, 0, UINT64_C(1) << 63, NULL, E_INVALID, NULL },
                { "Update(live, 100%)", "Update", "tttt", ID_LIVE, P100, 0, P100, NULL, E_OVER, NULL },
                { "Release(0)", "Release", "t", 0, 0, 0, 0, NULL, E_NO_RES, NULL },
                { "Release(UINT64_MAX)", "Release", "t", UINT64_MAX, 0, 0, 0, NULL, E_NO_RES, NULL },
                { "Release(id + 1)", "Release", "t", id + 1, 0, 0, 0, NULL, E_NO_RES, NULL },
                /* A u holds up to UINT32_MAX (-1 as an int32); 2^32 - child is -child as an int32 (a
                 * process group to kill(2)): none of them may reach the child's reservation. */
                { "ReleaseThread(0)", "ReleaseThread", "u", 0, 0, 0, 0, NULL, E_NO_RES, NULL },
                { "ReleaseThread(1)", "ReleaseThread", "u", 1, 0, 0, 0, NULL, E_NO_RES, NULL },
                { "ReleaseThread(2)", "ReleaseThread", "u", 2, 0, 0, 0, NULL, E_NO_RES, NULL },
                { "ReleaseThread(UINT32_MAX)", "ReleaseThread", "u", UINT32_MAX, 0, 0, 0, NULL, E_NO_RES, NULL },
                { "ReleaseThread(INT32_MAX+1)", "ReleaseThread", "u", (uint64_t) INT32_MAX + 1, 0, 0, 0, NULL, E_NO_RES, NULL },
                { "ReleaseThread(2^32 - child)", "ReleaseThread", "u", (UINT64_C(1) << 32) - (uint64_t) c->pid, 0, 0, 0,
                  NULL, E_NO_RES, NULL },
                { "ReleaseProcess(0)", "ReleaseProcess", "u", 0, 0, 0, 0, NULL, E_NO_RES, NULL },
                { "ReleaseProcess(1)", "ReleaseProcess", "u", 1, 0, 0, 0, NULL, E_NO_RES, NULL },
                { "ReleaseProcess(UINT32_MAX)", "ReleaseProcess", "u", UINT32_MAX, 0, 0, 0, NULL, E_NO_RES, NULL },
                { "ReleaseProcess(INT32_MAX+1)", "ReleaseProcess", "u", (uint64_t) INT32_MAX + 1, 0, 0, 0, NULL, E_NO_RES,
                  NULL },
                { "ReleaseProcess(2^32 - child)", "ReleaseProcess", "u", (UINT64_C(1) << 32) - (uint64_t) c->pid, 0, 0,
                  0, NULL, E_NO_RES, NULL },
                { "CreateGroup(\"\")", "CreateGroup", "stt", MS, P100, 0, 0, "", E_INVALID, NULL },
                { "CreateGroup(/)", "CreateGroup", "stt", MS, P100, 0, 0, "/", E_INVALID, NULL },
                { "CreateGroup(..)", "CreateGroup", "stt", MS, P100, 0, 0, "..", E_INVALID, NULL },
                { "CreateGroup(test/..)", "CreateGroup", "stt", MS, P100, 0, 0, "test/..", E_INVALID, NULL },
                { "CreateGroup(test/../x)", "CreateGroup", "stt", MS, P100, 0, 0, "test/../x", E_INVALID, NULL },
                { "CreateGroup(test//x)", "CreateGroup", "stt", MS, P100, 0, 0, "test//x", E_INVALID, NULL },
                { "CreateGroup(/test/x)", "CreateGroup", "stt", MS, P100, 0, 0, "/test/x", E_INVALID, NULL },
                { "CreateGroup(test/x/)", "CreateGroup", "stt", MS, P100, 0, 0, "test/x/", E_INVALID, NULL },
                { "CreateGroup(garbage)", "CreateGroup", "stt", MS, P100, 0, 0, "\x01;$(id)`\\", E_INVALID, NULL },
                { "CreateGroup(4 KiB)", "CreateGroup", "stt", MS, P100, 0, 0, long_name, E_INVALID, NULL },
                { "CreateGroup(299 bytes)", "CreateGroup", "stt", MS, P100, 0, 0, long_path, E_INVALID, NULL },
                { "CreateGroup(17 deep)", "CreateGroup", "stt", MS, P100, 0, 0, deep_path, E_INVALID, NULL },
                { "CreateGroup(65-byte name)", "CreateGroup", "stt", MS, P100, 0, 0, long_component, E_INVALID, NULL },
                { "CreateGroup(cgroup.procs)", "CreateGroup", "stt", MS, P100, 0, 0, "test/cgroup.procs", E_INVALID,
                  NULL },
                { "CreateGroup(runtime 0)", "CreateGroup", "stt", 0, P100, 0, 0, "test/x", E_INVALID, NULL },
                { "CreateGroup(runtime 1023)", "CreateGroup", "stt", 1023, P100, 0, 0, "test/x", E_INVALID, NULL },
                { "CreateGroup(period 0)", "CreateGroup", "stt", MS, 0, 0, 0, "test/x", E_INVALID, NULL },
                { "CreateGroup(runtime UINT64_MAX)", "CreateGroup", "stt", UINT64_MAX, P100, 0, 0, "test/x", E_INVALID,
                  NULL },
                { "CreateGroup(runtime 2^44)", "CreateGroup", "stt", UINT64_C(1) << 44, UINT64_MAX, 0, 0, "test/x",
                  E_INVALID, NULL },
                { "CreateGroup(2^44 - 1 over 1 ns)", "CreateGroup", "stt", (UINT64_C(1) << 44) - 1, 1, 0, 0, "test/x",
                  E_OVER, E_INVALID },
                { "CreateGroup(more than its parent)", "CreateGroup", "stt", 20 * MS, P100, 0, 0, "test/x", E_OVER, NULL },
                { "CreateGroup(under a missing parent)", "CreateGroup", "stt", MS, P100, 0, 0, "nosuch/x", E_NO_GROUP,
                  NULL },
                { "CreateGroup(test) again", "CreateGroup", "stt", MS, P100, 0, 0, "test", EDFD_ERROR_GROUP_EXISTS, NULL },
                { "CreateGroup(test/dyn) again", "CreateGroup", "stt", MS, P100, 0, 0, "test/dyn",
                  EDFD_ERROR_GROUP_EXISTS, NULL },
                { "SetGroup(/)", "SetGroup", "stt", MS, P100, 0, 0, "/", E_INVALID, NULL },
                { "SetGroup(\"\")", "SetGroup", "stt", MS, P100, 0, 0, "", E_INVALID, NULL },
                { "SetGroup(..)", "SetGroup", "stt", MS, P100, 0, 0, "..", E_INVALID, NULL },
                { "SetGroup(nosuch)", "SetGroup", "stt", MS, P100, 0, 0, "nosuch", E_NO_GROUP, NULL },
                { "SetGroup(test/a, runtime 0)", "SetGroup", "stt", 0, P100, 0, 0, "test/a", E_INVALID, NULL },
                { "SetGroup(test/a, period 0)", "SetGroup", "stt", MS, 0, 0, 0, "test/a", E_INVALID, NULL },
                { "SetGroup(test/a, UINT64_MAX)", "SetGroup", "stt", UINT64_MAX, UINT64_MAX, 0, 0, "test/a", E_INVALID,
                  NULL },
                { "SetGroup(test/a, below what it holds)", "SetGroup", "stt", 1024, P100, 0, 0, "test/a", E_OVER, NULL },
                { "SetGroup(test, below its children)", "SetGroup", "stt", MS, P100, 0, 0, "test", E_OVER, NULL },
                { "SetGroup(test/a, more than test has)", "SetGroup", "stt", 50 * MS, P100, 0, 0, "test/a", E_OVER,
                  NULL },
                { "RemoveGroup(/)", "RemoveGroup", "s", 0, 0, 0, 0, "/", E_INVALID, NULL },
                { "RemoveGroup(\"\")", "RemoveGroup", "s", 0, 0, 0, 0, "", E_INVALID, NULL },
                { "RemoveGroup(..)", "RemoveGroup", "s", 0, 0, 0, 0, "..", E_INVALID, NULL },
                { "RemoveGroup(test/dyn/..)", "RemoveGroup", "s", 0, 0, 0, 0, "test/dyn/..", E_INVALID, NULL },
                { "RemoveGroup(4 KiB)", "RemoveGroup", "s", 0, 0, 0, 0, long_name, E_INVALID, NULL },
                { "RemoveGroup(nosuch)", "RemoveGroup", "s", 0, 0, 0, 0, "nosuch", E_NO_GROUP, NULL },
                { "RemoveGroup(test, configured)", "RemoveGroup", "s", 0, 0, 0, 0, "test", E_DENIED,
                  EDFD_ERROR_GROUP_NOT_EMPTY },
                { "RemoveGroup(test/a, configured, holding a reservation)", "RemoveGroup", "s", 0, 0, 0, 0, "test/a",
                  E_DENIED, EDFD_ERROR_GROUP_NOT_EMPTY },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Call k = cases[i];
                HarnessBooks before = harness_books_take(h);

                if (k.a == ID_LIVE)
                        k.a = id;
                r = call_case(h, &e, &k);
                harness_assert_error_(r, &e, k.what, k.error, k.alt);
                harness_books_assert_same(h, &before, k.what);
                harness_books_free(&before);
                harness_assert_dl(c->pid, MS, P100, P100, 0);
                assert_answers(h, k.what);
        }
        harness_stop(h);
}

/* ---- wrong signatures, unknown members, read-only properties, bad UTF-8 ---- */

static int call_raw(Harness *h, sd_bus_error *e, const char *path, const char *iface, const char *member,
                    const char *types, const void *const *args) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        sd_bus_error_free(e);
        r = sd_bus_message_new_method_call(h->bus, &m, EDFD_BUS_NAME, path, iface, member);
        for (size_t i = 0; r >= 0 && types[i]; i++)
                r = sd_bus_message_append_basic(m, types[i], args[i]);
        if (r < 0)
                return r;
        return sd_bus_call(h->bus, m, 0, e, NULL);
}

Test(hostile, wrong_signatures) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        static const char *const members[] = { "Admit", "Update", "Release", "ReleaseThread", "ReleaseProcess",
                                               "ListReservations", "ListGroups", "CreateGroup", "SetGroup",
                                               "RemoveGroup", "Reload", "Echo" };
        /* Each is wrong for every method above but the one whose signature it happens to be. */
        /* "ttstttt" and "t" are Admit's and ReleaseThread's and ReleaseProcess's signatures before 0.2:
         * a client still sending them is refused, never misread. */
        static const char *const sigs[] = { "", "t", "s", "tttt", "stt", "ttsttt", "ttstttt", "ttsttttt", "uustttt",
                                            "uusttt", "uusttttt", "uu", "u", "i", "b", "ss", "tts", "sss", "d", "h",
                                            "y" };
        static const char *const real[] = { "uustttt", "tttt", "t", "u", "u", "", "", "stt", "stt", "s", "", "t" };
        uint64_t t = 1;
        uint32_t u = 1;
        int32_t i32 = -1;
        int b = 1;
        double dbl = 1.5;
        uint8_t y = 7;
        int fd = -1;
        const char *s = "test/a";
        HarnessBooks before = harness_books_take(h);
        char what[128];
        int r;

        for (size_t mi = 0; mi < ELEMENTSOF(members); mi++)
                for (size_t si = 0; si < ELEMENTSOF(sigs); si++) {
                        const void *args[8];
                        if (streq(sigs[si], real[mi]))
                                continue;
                        for (size_t k = 0; sigs[si][k]; k++)
                                switch (sigs[si][k]) {
                                case 't':
                                        args[k] = &t;
                                        break;
                                case 'u':
                                        args[k] = &u;
                                        break;
                                case 'i':
                                        args[k] = &i32;
                                        break;
                                case 'b':
                                        args[k] = &b;
                                        break;
                                case 'd':
                                        args[k] = &dbl;
                                        break;
                                case 'y':
                                        args[k] = &y;
                                        break;
                                case 'h':
                                        fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                                        args[k] = &fd;
                                        break;
                                default:
                                        args[k] = s;
                                }
                        snprintf(what, sizeof what, "%s(%s) (expects %s)", members[mi], sigs[si], real[mi]);
                        r = call_raw(h, &e, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, members[mi], sigs[si], args);
                        if (fd >= 0) {
                                close(fd);
                                fd = -1;
                        }
                        harness_assert_error_(r, &e, what, E_ARGS, NULL);
                }
        harness_books_assert_same(h, &before, "wrong signatures");
        assert_answers(h, "wrong signatures");

        r = call_raw(h, &e, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "NoSuchMethod", "", NULL);
        harness_assert_error_(r, &e, "NoSuchMethod()", "org.freedesktop.DBus.Error.UnknownMethod", NULL);
        r = call_raw(h, &e, EDFD_BUS_PATH, "org.edfd.Admission1.Nope", "Echo", "t", (const void *[]) { &t });
        harness_assert_error_(r, &e, "an unknown interface", "org.freedesktop.DBus.Error.UnknownInterface",
                              "org.freedesktop.DBus.Error.UnknownMethod");
        r = call_raw(h, &e, "/org/edfd/Admission1/x", EDFD_BUS_INTERFACE, "Echo", "t", (const void *[]) { &t });
        harness_assert_error_(r, &e, "an unknown object", "org.freedesktop.DBus.Error.UnknownObject",
                              "org.freedesktop.DBus.Error.UnknownMethod");
        sd_bus_error_free(&e);
        r = sd_bus_set_property(h->bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "Capacity", &e, "t",
                                UINT64_MAX);
        harness_assert_error_(r, &e, "Set(Capacity)", "org.freedesktop.DBus.Error.PropertyReadOnly", NULL);
        sd_bus_error_free(&e);
        r = sd_bus_set_property(h->bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "Allocated", &e, "s", "0");
        cr_assert(r < 0, "Set(Allocated, a string) succeeded");
        sd_bus_error_free(&e);
        r = sd_bus_get_property_trivial(h->bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "NoSuch", &e, 't', &t);
        harness_assert_error_(r, &e, "Get(NoSuch)", "org.freedesktop.DBus.Error.UnknownProperty", NULL);

        /* Invalid UTF-8 never leaves sd-bus (and dbus-daemon would drop a client that sent it). */
        {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
                cr_assert_geq(sd_bus_message_new_method_call(h->bus, &m, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE,
                                                             "RemoveGroup"), 0);
                r = sd_bus_message_append(m, "s", "test/\xc3\x28");
                cr_assert_lt(r, 0, "sd-bus appended an invalid UTF-8 string");
        }
        harness_books_assert_same(h, &before, "unknown members and properties");
        harness_books_free(&before);
        assert_answers(h, "unknown members and properties");
        harness_stop(h);
}

/* The signatures before 0.2 (pids and tids as t) with values that would be right: edfd refuses them
 * with InvalidArgs rather than reading 64 bits as two u, and nothing changes in the kernel or the
 * books. */
Test(hostile, old_signatures_refused) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessBooks before;
        HarnessChild *c, *d;
        uint64_t id;
        int r;

        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        cr_assert_eq(harness_spawn_child(h, 1, false, &d), 0);
        r = harness_admit(h, &e, d->pid, 0, "test/a", MS, 0, P100, 0, &id);
        assert_bus_ok(r, &e, "Admit(uustttt)");
        before = harness_books_take(h);

        r = harness_call(h, &e, NULL, "Admit", "ttstttt", (uint64_t) c->pid, UINT64_C(0), "test/a", MS, UINT64_C(0),
                         P100, UINT64_C(0));
        harness_assert_error_(r, &e, "Admit(ttstttt) of a live child", E_ARGS, NULL);
        harness_assert_other(c->pid);
        r = harness_call(h, &e, NULL, "ReleaseThread", "t", (uint64_t) d->pid);
        harness_assert_error_(r, &e, "ReleaseThread(t) of an admitted thread", E_ARGS, NULL);
        r = harness_call(h, &e, NULL, "ReleaseProcess", "t", (uint64_t) d->pid);
        harness_assert_error_(r, &e, "ReleaseProcess(t) of an admitted process", E_ARGS, NULL);
        harness_assert_dl(d->pid, MS, P100, P100, 0);
        harness_books_assert_same(h, &before, "calls with the old signatures");
        harness_books_free(&before);
        assert_answers(h, "calls with the old signatures");
        harness_stop(h);
}

/* ---- kernel threads and pid 1 ---- */

Test(hostile, kernel_threads_and_pid1_unprivileged) {
        Harness *h = harness_start_or_skip("basic.yaml");
        Agent *a = agent_start(h);
        pid_t kt = idle_kernel_thread();
        const uint64_t pids[] = { 1, 2, (uint64_t) kt };
        HarnessBooks before = harness_books_take(h);

        for (size_t i = 0; i < ELEMENTSOF(pids); i++) {
                AgentReply rep;
                if (pids[i] == 0)
                        continue;
                rep = agent_call(a, "Admit", "uustttt", pids[i], UINT64_C(0), "test/a", MS, UINT64_C(0), P100, UINT64_C(0));
                if (rep.r >= 0)
                        release_if_admitted(h, pids[i]);
                cr_assert(rep.r < 0, "nobody: Admit(%" PRIu64 ") succeeded: edfd gave deadline bandwidth to %s",
                          pids[i], pids[i] == 1 ? "pid 1" : "a kernel thread");
                cr_assert(streq(rep.name, E_DENIED) || streq(rep.name, E_NO_THREAD) || streq(rep.name, E_INVALID),
                          "nobody: Admit(%" PRIu64 "): %s: %s", pids[i], rep.name, rep.message);
                rep = agent_call(a, "Admit", "uustttt", UINT64_C(0), pids[i], "test/a", MS, UINT64_C(0), P100, UINT64_C(0));
                cr_assert(rep.r < 0, "nobody: Admit(pid 0 = itself, tid %" PRIu64 ") succeeded", pids[i]);
        }
        harness_books_assert_same(h, &before, "nobody's admissions of pid 1 and kernel threads");
        harness_books_free(&before);
        agent_stop(a);
        harness_stop(h);
}

Test(hostile, kernel_threads_as_root) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        pid_t kt = idle_kernel_thread();
        HarnessBooks before = harness_books_take(h);
        uint64_t id;
        int r;

        if (kt <= 0)
                cr_skip_test("no idle kernel thread (kworker/R-*) allowed on every CPU to try");
        /* An idle workqueue rescuer first: if edfd takes it, it is released at once, and kthreadd
         * itself (which creates every kernel thread) is not tried. */
        r = harness_admit(h, &e, kt, 0, "test/a", 100 * US, 0, P100, 0, &id);
        if (r >= 0) {
                release_if_admitted(h, (uint64_t) kt);
                cr_assert_fail("root: Admit(kernel thread %d) SUCCEEDED (id %" PRIu64 "): edfd made a kernel thread "
                               "SCHED_DEADLINE (released again at once)",
                               (int) kt, id);
        }
        cr_assert(!sd_bus_error_has_name(&e, EDFD_ERROR_KERNEL_REFUSED),
                  "root: Admit(kernel thread %d): edfd did not refuse it itself, it tried sched_setattr: %s", (int) kt,
                  e.message);
        harness_assert_error_(r, &e, "root: Admit(kernel thread)", E_INVALID, E_DENIED);

        r = harness_admit(h, &e, 2, 0, "test/a", 100 * US, 0, P100, 0, &id);
        if (r >= 0) {
                release_if_admitted(h, 2);
                cr_assert_fail("root: Admit(kthreadd) SUCCEEDED (released again at once)");
        }
        harness_assert_error_(r, &e, "root: Admit(kthreadd)", E_INVALID, E_DENIED);
        harness_books_assert_same(h, &before, "root's admissions of kernel threads");
        harness_books_free(&before);
        harness_assert_other(kt);
        harness_assert_other(2);
        harness_stop(h);
}

/* Root and pid 1, without touching this machine's pid 1: in a new pid namespace (with its own /proc
 * and a tmpfs over the cgroup mount, so that the harness's clean-up of stale test cgroups sees only
 * this namespace's), a process of the test is pid 1; it starts a harness there and asks, as root,
 * for pid 1. It reports through its exit status. /tmp stays the machine's: the build (and so edfd)
 * may live there, as in a CI clone. Integration tests never run in parallel, so the harness's
 * clean-up of stale /tmp directories of dead test processes meets no live one. */
enum {
        NS_REFUSED = 0,
        NS_ADMITTED = 1,
        NS_SETUP = 2,
        NS_HARNESS = 3,
        NS_OTHER_ERROR = 4,
};

static int ns_pid1_main(int report) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *text = NULL;
        Harness *h = NULL;
        uint64_t id = 0;
        char msg[600];
        int r, result;

        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ||
            mount("tmpfs", "/sys/fs/cgroup/unified", "tmpfs", MS_NOSUID | MS_NODEV, "mode=755") < 0) {
                snprintf(msg, sizeof msg, "mounts in the new namespace: %s", strerror(errno));
                (void) write(report, msg, strlen(msg));
                return NS_SETUP;
        }
        if (getpid() != 1)
                return NS_SETUP;
        text = harness_read_test_data("basic.yaml");
        if (!text || harness_start(&h, text, NULL) < 0)
                return NS_HARNESS;
        r = harness_admit(h, &e, 1, 0, "test/a", 2 * MS, 0, 50 * MS, 0, &id);
        if (r >= 0) {
                /* Release at once: pid 1 here is this process. */
                (void) harness_call(h, &e, NULL, "Release", "t", id);
                snprintf(msg, sizeof msg, "root: Admit(pid 1) succeeded (id %" PRIu64 ")", id);
                result = NS_ADMITTED;
        } else {
                snprintf(msg, sizeof msg, "%s: %s", e.name ? e.name : strerror(-r), e.message ? e.message : "");
                result = sd_bus_error_has_names(&e, E_INVALID, E_DENIED) ? NS_REFUSED : NS_OTHER_ERROR;
        }
        (void) write(report, msg, strlen(msg));
        harness_free(h);
        return result;
}

Test(hostile, pid1_as_root_in_a_pid_namespace) {
        int p[2], status;
        pid_t c;
        char msg[601] = "";
        ssize_t n;

        harness_require();
        if (access("/sys/fs/cgroup/unified", F_OK) < 0)
                cr_skip_test("the harness's cgroup mount is not /sys/fs/cgroup/unified here");
        cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
        c = fork();
        cr_assert_geq(c, 0);
        if (c == 0) {
                pid_t g;
                close(p[0]);
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (unshare(CLONE_NEWPID | CLONE_NEWNS) < 0)
                        _exit(100 + NS_SETUP);
                g = fork();
                if (g < 0)
                        _exit(100 + NS_SETUP);
                if (g == 0) {
                        prctl(PR_SET_PDEATHSIG, SIGKILL);
                        _exit(ns_pid1_main(p[1]));
                }
                if (waitpid(g, &status, 0) != g || !WIFEXITED(status))
                        _exit(100 + NS_OTHER_ERROR);
                _exit(WEXITSTATUS(status));
        }
        close(p[1]);
        n = read(p[0], msg, sizeof msg - 1);
        msg[n > 0 ? n : 0] = '\0';
        close(p[0]);
        cr_assert_eq(waitpid(c, &status, 0), c);
        cr_assert(WIFEXITED(status), "the namespace's pid 1 crashed");
        if (WEXITSTATUS(status) == NS_SETUP || WEXITSTATUS(status) == 100 + NS_SETUP)
                cr_skip_test("cannot make a pid and mount namespace here: %s", msg);
        cr_assert_neq(WEXITSTATUS(status), NS_HARNESS, "the harness did not start inside the pid namespace");
        cr_assert_neq(WEXITSTATUS(status), NS_ADMITTED,
                      "%s: edfd made pid 1 (init) SCHED_DEADLINE with a reservation whose forks it would then split "
                      "(released again at once; this ran in a pid namespace of the test's own)",
                      msg);
        cr_assert_eq(WEXITSTATUS(status), NS_REFUSED, "root: Admit(pid 1): expected InvalidParameters or "
                     "PermissionDenied, got %s (status %d)", msg, WEXITSTATUS(status));
}

/* ---- a pid that exits during the call ---- */

typedef struct Pending {
        bool done;
        int r;
        char name[160];
        uint64_t id;
} Pending;

static int on_admit_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Pending *p = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);

        p->done = true;
        if (e) {
                p->r = -1;
                snprintf(p->name, sizeof p->name, "%s", e->name);
        } else {
                p->r = 0;
                (void) sd_bus_message_read(m, "t", &p->id);
        }
        return 0;
}

static bool has_reservation_of(Harness *h, uint32_t pid) {
        HarnessReservation *l;
        size_t n;
        bool found = false;

        cr_assert_eq(harness_list_reservations(h, &l, &n), 0);
        for (size_t i = 0; i < n; i++)
                found = found || l[i].pid == pid;
        harness_reservations_free(l, n);
        return found;
}

Test(hostile, pid_exits_during_the_call) {
        Harness *h = harness_start_or_skip("basic.yaml");
        unsigned admitted = 0, refused = 0;

        for (unsigned i = 0; i < 60; i++) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
                Pending p = {};
                HarnessChild *c;
                uint64_t end;

                cr_assert_eq(harness_spawn_child(NULL, 1 + i % 2, false, &c), 0);
                cr_assert_geq(sd_bus_message_new_method_call(h->bus, &m, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE,
                                                             "Admit"), 0);
                cr_assert_geq(sd_bus_message_append(m, "uustttt", (uint32_t) c->pid,
                                                    (uint32_t) c->tids[c->n_threads - 1], "test/a", 500 * US,
                                                    UINT64_C(0), P100, UINT64_C(0)), 0);
                /* Killed just before the call is sent, just after, or a little after (up to 400 us);
                 * and reaped at once (so that the pid is free again) on every other round. */
                if (i % 4 == 0)
                        kill(c->pid, SIGKILL);
                cr_assert_geq(sd_bus_call_async(h->bus, NULL, m, on_admit_reply, &p, 0), 0);
                cr_assert_geq(sd_bus_flush(h->bus), 0);
                if (i % 4 > 1)
                        harness_usleep(i * 7 % 400);
                kill(c->pid, SIGKILL);
                if (i % 2)
                        harness_child_kill(c);
                while (!p.done) {
                        cr_assert_geq(sd_bus_process(h->bus, NULL), 0);
                        if (!p.done)
                                (void) sd_bus_wait(h->bus, 100000);
                }
                if (p.r == 0)
                        admitted++;
                else {
                        cr_assert(streq(p.name, E_NO_THREAD), "Admit of a thread that exits: %s, expected NoSuchThread",
                                  p.name);
                        refused++;
                }
                harness_child_kill(c);
                end = mono_usec() + 3000000;
                while (has_reservation_of(h, (uint32_t) c->pid) && mono_usec() < end)
                        harness_usleep(2000);
                cr_assert(!has_reservation_of(h, (uint32_t) c->pid),
                          "round %u: the reservation of exited process %d stays in the books", i, (int) c->pid);
                free(c);
                assert_answers(h, "an admission of a thread that exits");
        }
        fprintf(stderr, "pid_exits_during_the_call: %u admitted then released on exit, %u refused\n", admitted,
                refused);
        harness_assert_no_reservations(h, "after every admitted process exited");
        harness_stop(h);
}

/* ---- a bounded randomized run ---- */

static uint64_t rng_state;

static uint64_t rnd(void) {
        /* splitmix64 */
        uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

static size_t pick(size_t n) {
        return (size_t) (rnd() % n);
}

#define PICK(a) ((a)[pick(ELEMENTSOF(a))])

typedef struct Fuzz {
        Harness *h;
        Agent *a;
        HarnessChild *root_kids[3];
        pid_t nobody_kids[3];
        pid_t kthread, dead;
        uint64_t ids[64];
        size_t n_ids;
        uint64_t *nobody_ids; /* every id nobody was given: root's Updates leave these alone (see below) */
        size_t n_nobody_ids;
        unsigned calls, root_calls, nobody_calls, ok, refused;
        unsigned names_n;
        char names[32][96];
        unsigned counts[32];
} Fuzz;

static const uint64_t runtimes[] = { 0, 1, 1023, 1024, 100 * US, 200 * US, 500 * US, MS, 2 * MS, 100 * MS,
                                     (UINT64_C(1) << 44), (UINT64_C(1) << 63), UINT64_MAX };
static const uint64_t deadlines[] = { 0, 0, 0, 1024, MS, 10 * MS, 100 * MS, 1000 * MS, UINT64_MAX };
static const uint64_t periods[] = { 0, 1, 99 * US, 100 * US, 10 * MS, P100, P100, P100, 1000 * MS, UINT64_C(4194304000),
                                    UINT64_C(4194304001), (UINT64_C(1) << 63), UINT64_MAX };
static const uint64_t flag_values[] = { 0, 0, 0, 1, 2, 3, 4, 7, 8, UINT64_C(1) << 63, UINT64_MAX };
/* "/" (the root group, all the kernel admits) only for nobody, whose limit bounds it. */
static const char *const admit_groups[] = { "", "", "fz", "fz", "fz/a", "fz/a", "fz/b", "fz/d0", "fz/d1",
                                            "fz/d1/e", "nosuch", "..", "fz/..", "a//b", "fz/", "/fz", "t\xc3\xa9st",
                                            "fz/a b", "\x01\x02", long_name, long_path, deep_path };
static const char *const group_paths[] = { "fz/d0", "fz/d1", "fz/d1/e", "fz/a/d2", "fz/d0", "fz", "fz/a", "fz/b", "/",
                                           "", "..", "fz/d0/..", "fz//d0", "nosuch/x", long_name, long_path, deep_path,
                                           "fz/cgroup.procs", "fz/d3" };
/* At most 4% over 100 ms among the plausible pairs: the run must stay tiny even where root makes
 * fz as big as it may. */
static const uint64_t group_runtimes[] = { 0, 1023, 1024, 100 * US, 500 * US, MS, 2 * MS, 4 * MS,
                                           (UINT64_C(1) << 44) - 1, UINT64_C(1) << 44, UINT64_MAX };
static const uint64_t group_periods[] = { 0, 1, P100, P100, P100, 1000 * MS, UINT64_MAX };

static void fuzz_count(Fuzz *f, const char *name) {
        for (unsigned i = 0; i < f->names_n; i++)
                if (streq(f->names[i], name)) {
                        f->counts[i]++;
                        return;
                }
        if (f->names_n < ELEMENTSOF(f->names)) {
                snprintf(f->names[f->names_n], sizeof f->names[0], "%s", name);
                f->counts[f->names_n++] = 1;
        }
}

/* A pid (or tid) for a call by root (only the test's own root children, never pid 1 or a kernel
 * thread: root may do everything) or by nobody (anything, everything foreign must be refused). */
static uint32_t fuzz_pid(Fuzz *f, bool root) {
        HarnessChild *c = PICK(f->root_kids);

        switch (pick(root ? 5 : 12)) {
        case 0:
        case 1:
                return (uint32_t) c->pid;
        case 2:
                return (uint32_t) c->tids[pick(c->n_threads)];
        case 3:
                return (uint32_t) f->dead;
        case 4:
                return PICK(((uint32_t[]) { (uint32_t) INT32_MAX, (uint32_t) INT32_MAX + 1, UINT32_MAX - 1,
                                            UINT32_MAX }));
        case 5:
        case 6:
        case 7:
        case 8:
                return (uint32_t) PICK(f->nobody_kids);
        case 9:
                return 1;
        case 10:
                return 2;
        default:
                return f->kthread > 0 ? (uint32_t) f->kthread : 2;
        }
}

static uint64_t fuzz_id(Fuzz *f) {
        switch (pick(5)) {
        case 0:
                return PICK(((uint64_t[]) { 0, 1, UINT64_MAX, UINT64_C(1) << 32 }));
        case 1:
                return rnd() % 256;
        default:
                return f->n_ids ? f->ids[pick(f->n_ids)] : 1;
        }
}

static bool fuzz_is_nobodys(const Fuzz *f, uint64_t id) {
        for (size_t i = 0; i < f->n_nobody_ids; i++)
                if (f->nobody_ids[i] == id)
                        return true;
        return false;
}

static void fuzz_remember(Fuzz *f, uint64_t id, bool nobodys) {
        if (nobodys) {
                uint64_t *n = reallocarray(f->nobody_ids, f->n_nobody_ids + 1, sizeof(uint64_t));
                cr_assert(n);
                f->nobody_ids = n;
                f->nobody_ids[f->n_nobody_ids++] = id;
        }
        if (f->n_ids < ELEMENTSOF(f->ids))
                f->ids[f->n_ids++] = id;
        else
                f->ids[pick(ELEMENTSOF(f->ids))] = id;
}

/* Error names a well-formed call may get. An errno-style name (System.Error.*) is an internal
 * failure and fails the test. */
static bool fuzz_name_ok(const char *name) {
        return strncmp(name, EDFD_ERROR_PREFIX, strlen(EDFD_ERROR_PREFIX)) == 0 && !streq(name, EDFD_ERROR_PREFIX "");
}

static void fuzz_one(Fuzz *f) {
        bool root = pick(100) < 55;
        /* Root does not pass pid 0 with tid 0 (that is the test itself), nor does nobody (the agent). */
        uint32_t pid = fuzz_pid(f, root), tid = pick(3) == 0 ? 0 : fuzz_pid(f, root);
        const char *member;
        char types[16] = "";
        uint64_t num[7] = {};
        const char *s = NULL;
        unsigned m = (unsigned) pick(100);
        int r;
        char name[160] = "";
        char message[640] = "";
        uint64_t value = 0;

        if (pick(20) == 0)
                pid = 0;
        if (pid == 0 && tid == 0)
                tid = f->dead;

        if (m < 32) {
                member = "Admit";
                strcpy(types, "uustttt");
                num[0] = pid;
                num[1] = tid;
                s = !root && pick(12) == 0 ? "/" : PICK(admit_groups);
                num[2] = PICK(runtimes);
                num[3] = PICK(deadlines);
                num[4] = PICK(periods);
                num[5] = PICK(flag_values);
                if (pick(3) == 0) { /* plausible values, so that many get in */
                        num[2] = PICK(((uint64_t[]) { 100 * US, 200 * US, 300 * US }));
                        num[3] = 0;
                        num[4] = P100;
                        num[5] = PICK(((uint64_t[]) { 0, 0, 1, 2 }));
                }
        } else if (m < 46) {
                member = "Update";
                strcpy(types, "tttt");
                num[0] = fuzz_id(f);
                /* Root is not held to nobody's limits: growing one of nobody's reservations would
                 * take nobody past them, and the check below could not tell edfd's fault from the
                 * test's. Root still releases nobody's reservations. */
                if (root && fuzz_is_nobodys(f, num[0]))
                        num[0] = UINT64_MAX;
                num[1] = PICK(runtimes);
                num[2] = PICK(deadlines);
                num[3] = PICK(periods);
                if (pick(2) == 0) {
                        num[1] = PICK(((uint64_t[]) { 100 * US, 150 * US, 400 * US }));
                        num[2] = 0;
                        num[3] = P100;
                }
        } else if (m < 54) {
                member = "Release";
                strcpy(types, "t");
                num[0] = fuzz_id(f);
        } else if (m < 58) {
                member = "ReleaseThread";
                strcpy(types, "u");
                num[0] = fuzz_pid(f, root);
        } else if (m < 62) {
                member = "ReleaseProcess";
                strcpy(types, "u");
                num[0] = fuzz_pid(f, root);
        } else if (m < 72) {
                member = "CreateGroup";
                strcpy(types, "stt");
                s = PICK(group_paths);
                num[0] = PICK(group_runtimes);
                num[1] = PICK(group_periods);
                if (pick(2) == 0) {
                        num[0] = PICK(((uint64_t[]) { 100 * US, 300 * US, 500 * US }));
                        num[1] = P100;
                }
        } else if (m < 80) {
                member = "SetGroup";
                strcpy(types, "stt");
                s = PICK(group_paths);
                num[0] = PICK(group_runtimes);
                num[1] = PICK(group_periods);
                if (pick(2) == 0) {
                        num[0] = PICK(((uint64_t[]) { 200 * US, 600 * US, MS, 4 * MS }));
                        num[1] = P100;
                }
        } else if (m < 86) {
                member = "RemoveGroup";
                strcpy(types, "s");
                s = PICK(group_paths);
        } else if (m < 92) {
                member = PICK(((const char *[]) { "ListReservations", "ListGroups" }));
        } else if (m < 93) {
                member = "Reload";
        } else {
                member = "Echo";
                strcpy(types, "t");
                num[0] = rnd();
        }

        if (root) {
                _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL, *reply = NULL;
                size_t k = 0;

                r = sd_bus_message_new_method_call(f->h->bus, &msg, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE,
                                                   member);
                for (const char *t = types; r >= 0 && *t; t++)
                        if (*t == 's')
                                r = sd_bus_message_append_basic(msg, 's', s);
                        else if (*t == 'u') {
                                /* Only pids and tids are u, and fuzz_pid() gives 32 bits. */
                                uint32_t u = (uint32_t) num[k++];
                                r = sd_bus_message_append_basic(msg, 'u', &u);
                        } else
                                r = sd_bus_message_append_basic(msg, 't', &num[k++]);
                cr_assert_geq(r, 0, "building %s: %s", member, strerror(-r));
                r = sd_bus_call(f->h->bus, msg, 10 * UINT64_C(1000000), &e, &reply);
                if (e.name)
                        snprintf(name, sizeof name, "%s", e.name);
                if (e.message)
                        snprintf(message, sizeof message, "%s", e.message);
                if (r >= 0 && streq(member, "Admit"))
                        (void) sd_bus_message_read(reply, "t", &value);
                f->root_calls++;
        } else {
                AgentReply rep;
                if (streq(types, "uustttt"))
                        rep = agent_call(f->a, member, types, num[0], num[1], s, num[2], num[3], num[4], num[5]);
                else if (streq(types, "tttt"))
                        rep = agent_call(f->a, member, types, num[0], num[1], num[2], num[3]);
                else if (streq(types, "stt"))
                        rep = agent_call(f->a, member, types, s, num[0], num[1]);
                else if (streq(types, "s"))
                        rep = agent_call(f->a, member, types, s);
                else if (streq(types, "t") || streq(types, "u"))
                        rep = agent_call(f->a, member, types, num[0]);
                else
                        rep = agent_call(f->a, member, "");
                r = rep.r;
                snprintf(name, sizeof name, "%s", rep.name);
                snprintf(message, sizeof message, "%s", rep.message);
                value = rep.value;
                f->nobody_calls++;
        }
        f->calls++;
        if (r >= 0) {
                f->ok++;
                fuzz_count(f, member);
                if (streq(member, "Admit")) {
                        fuzz_remember(f, value, !root);
                        if (!root)
                                /* nobody's admission must be of its own process */
                                cr_assert(pid == 0 || pid == (uint32_t) f->nobody_kids[0] ||
                                                  pid == (uint32_t) f->nobody_kids[1] ||
                                                  pid == (uint32_t) f->nobody_kids[2],
                                          "nobody: Admit(pid %" PRIu32 ", tid %" PRIu32 ", %s) SUCCEEDED for a process "
                                          "that is not its own",
                                          pid, tid, s);
                }
                if (!root && (streq(member, "CreateGroup") || streq(member, "SetGroup") || streq(member, "RemoveGroup") ||
                              streq(member, "Reload")))
                        cr_assert_fail("nobody: %s(%s) SUCCEEDED without root or polkit", member, s ? s : "");
        } else {
                f->refused++;
                fuzz_count(f, name);
                cr_assert(fuzz_name_ok(name), "%s: %s(%s%s%" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 "): %s: %s",
                          root ? "root" : "nobody", member, s ? s : "", s ? ", " : "", num[0], num[1], num[2], num[3],
                          name[0] ? name : strerror(-r), message);
                cr_assert(message[0], "%s: %s carries no message", member, name);
        }
}

/* The checks after each batch. */
static void fuzz_check(Fuzz *f) {
        HarnessReservation *l;
        HarnessGroup *g;
        size_t n, ng;
        uint64_t unmanaged = 0, nobody_bw = 0, nobody_n = 0;
        bool overcommitted = false;

        assert_answers(f->h, "a batch of random calls");
        for (unsigned attempt = 0;; attempt++) {
                bool balanced = true;
                char why[512] = "";
                cr_assert_eq(harness_list_reservations(f->h, &l, &n), 0);
                cr_assert_eq(harness_list_groups(f->h, &g, &ng), 0);
                cr_assert_eq(harness_get_u64(f->h, "Unmanaged", &unmanaged), 0);
                for (size_t i = 0; i < ng && balanced; i++) {
                        uint64_t sum = streq(g[i].path, "/") ? unmanaged : 0;
                        size_t plen = strlen(g[i].path);
                        for (size_t j = 0; j < ng; j++) {
                                const char *p = g[j].path, *slash = strrchr(p, '/');
                                bool child = streq(g[i].path, "/") ? (j != i && !strchr(p, '/'))
                                                                     : (slash && (size_t) (slash - p) == plen &&
                                                                        strncmp(p, g[i].path, plen) == 0);
                                if (child)
                                        sum += g[j].bandwidth;
                        }
                        for (size_t j = 0; j < n; j++)
                                if (streq(l[j].group, g[i].path))
                                        sum += l[j].bandwidth;
                        if (sum != g[i].allocated) {
                                balanced = false;
                                snprintf(why, sizeof why,
                                         "group %s: allocated %" PRIu64 ", but its children and reservations hold %" PRIu64
                                         " (unmanaged %" PRIu64 ")",
                                         g[i].path, g[i].allocated, sum, unmanaged);
                        }
                }
                if (balanced || attempt > 0) {
                        cr_assert(balanced, "the books do not balance after %u calls: %s", f->calls, why);
                        break;
                }
                /* Unmanaged may have been re-measured between the two calls: look again. */
                harness_reservations_free(l, n);
                harness_groups_free(g, ng);
        }
        {
                _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
                int b = 0;
                if (sd_bus_get_property_trivial(f->h->bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE,
                                                "Overcommitted", &e, 'b', &b) >= 0)
                        overcommitted = b;
        }
        for (size_t i = 0; i < ng; i++)
                cr_assert(g[i].allocated <= g[i].bandwidth || (overcommitted && streq(g[i].path, "/")),
                          "group %s holds %" PRIu64 " of %" PRIu64 " after %u calls", g[i].path, g[i].allocated,
                          g[i].bandwidth, f->calls);
        for (size_t j = 0; j < n; j++) {
                const HarnessReservation *x = &l[j];
                bool ours_root = false, ours_nobody = false;
                SchedAttr a;
                for (size_t k = 0; k < ELEMENTSOF(f->root_kids); k++)
                        ours_root = ours_root || x->pid == (uint32_t) f->root_kids[k]->pid;
                for (size_t k = 0; k < ELEMENTSOF(f->nobody_kids); k++)
                        ours_nobody = ours_nobody || x->pid == (uint32_t) f->nobody_kids[k];
                if (x->pid == 1 || x->tid == 1 || is_kernel_thread((pid_t) x->tid) || is_kernel_thread((pid_t) x->pid)) {
                        release_if_admitted(f->h, x->tid);
                        cr_assert_fail("after %u calls, edfd holds reservation %" PRIu64 " for %s %" PRIu32
                                       " (released again at once)",
                                       f->calls, x->id, x->pid == 1 ? "pid" : "kernel thread", x->tid);
                }
                cr_assert(ours_root || ours_nobody, "reservation %" PRIu64 " is for process %" PRIu32
                          ", which is none of the test's", x->id, x->pid);
                cr_assert_eq(x->uid, ours_nobody ? (uint32_t) NOBODY : 0u, "reservation %" PRIu64 " of process %" PRIu32
                             " is charged to uid %" PRIu32, x->id, x->pid, x->uid);
                if (ours_nobody) {
                        nobody_bw += x->bandwidth;
                        nobody_n++;
                }
                cr_assert_eq(harness_sched_getattr((pid_t) x->tid, &a), 0);
                cr_assert(a.sched_policy == SCHED_DEADLINE && a.sched_runtime == x->runtime &&
                                  a.sched_deadline == x->deadline && a.sched_period == x->period,
                          "after %u calls, thread %" PRIu32 " has policy %" PRIu32 " %" PRIu64 "/%" PRIu64 "/%" PRIu64
                          ", the books say %" PRIu64 "/%" PRIu64 "/%" PRIu64,
                          f->calls, x->tid, a.sched_policy, a.sched_runtime, a.sched_deadline, a.sched_period, x->runtime,
                          x->deadline, x->period);
        }
        /* Every deadline thread of the test's children is in the books. */
        for (size_t k = 0; k < ELEMENTSOF(f->root_kids); k++)
                for (unsigned t = 0; t < f->root_kids[k]->n_threads; t++) {
                        SchedAttr a;
                        bool listed = false;
                        cr_assert_eq(harness_sched_getattr(f->root_kids[k]->tids[t], &a), 0);
                        for (size_t j = 0; j < n; j++)
                                listed = listed || l[j].tid == (uint32_t) f->root_kids[k]->tids[t];
                        cr_assert(listed || a.sched_policy != SCHED_DEADLINE,
                                  "thread %d is SCHED_DEADLINE but in no reservation after %u calls",
                                  (int) f->root_kids[k]->tids[t], f->calls);
                }
        for (size_t k = 0; k < ELEMENTSOF(f->nobody_kids); k++) {
                SchedAttr a;
                bool listed = false;
                cr_assert_eq(harness_sched_getattr(f->nobody_kids[k], &a), 0);
                for (size_t j = 0; j < n; j++)
                        listed = listed || l[j].tid == (uint32_t) f->nobody_kids[k];
                cr_assert(listed || a.sched_policy != SCHED_DEADLINE,
                          "nobody's thread %d is SCHED_DEADLINE but in no reservation after %u calls",
                          (int) f->nobody_kids[k], f->calls);
        }
        /* nobody's limits (root never admits nobody's processes in this run, nor updates nobody's
         * reservations). */
        cr_assert_leq(nobody_n, 4, "nobody holds %" PRIu64 " reservations, its limit is 4", nobody_n);
        cr_assert_leq(nobody_bw, BW_UNIT * 2 / 100 + 1, "nobody holds bandwidth %" PRIu64 ", its limit is 2%%",
                      nobody_bw);
        harness_reservations_free(l, n);
        harness_groups_free(g, ng);
}

Test(hostile, randomized, .timeout = 300) {
        Harness *h = harness_start_or_skip("authz-fuzz.yaml");
        const char *seed_env = getenv("EDFD_FUZZ_SEED");
        uint64_t seed, start, budget = 20 * UINT64_C(1000000);
        const char *calls_env = getenv("EDFD_FUZZ_CALLS");
        unsigned max_calls = calls_env ? (unsigned) strtoul(calls_env, NULL, 0) : 50000;
        Fuzz *f = calloc(1, sizeof *f);
        int r;

        cr_assert(f);
        make_long_strings();
        seed = seed_env ? strtoull(seed_env, NULL, 0) : (uint64_t) mono_usec() ^ ((uint64_t) getpid() << 32);
        rng_state = seed;
        fprintf(stderr, "randomized: seed %" PRIu64 " (EDFD_FUZZ_SEED=%" PRIu64 " repeats this run)\n", seed, seed);

        f->h = h;
        for (size_t k = 0; k < ELEMENTSOF(f->root_kids); k++)
                cr_assert_eq(harness_spawn_child(h, 2, false, &f->root_kids[k]), 0);
        for (size_t k = 0; k < ELEMENTSOF(f->nobody_kids); k++)
                f->nobody_kids[k] = harness_nobody_sleeper();
        f->kthread = idle_kernel_thread();
        f->dead = harness_dead_pid();
        f->a = agent_start(h);

        start = mono_usec();
        while (f->calls < max_calls && mono_usec() - start < budget) {
                for (unsigned i = 0; i < 250; i++)
                        fuzz_one(f);
                fuzz_check(f);
        }
        fprintf(stderr, "randomized: %u calls (%u by root, %u by nobody) in %.1f s: %u succeeded, %u refused\n",
                f->calls, f->root_calls, f->nobody_calls, (double) (mono_usec() - start) / 1e6, f->ok, f->refused);
        for (unsigned i = 0; i < f->names_n; i++)
                fprintf(stderr, "  %6u  %s\n", f->counts[i], f->names[i]);
        cr_assert_gt(f->ok, 0, "no random call succeeded: the run tested only refusals");

        /* Give everything back; the books and the kernel must end empty. */
        for (size_t k = 0; k < ELEMENTSOF(f->root_kids); k++) {
                _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
                r = harness_call(h, &e, NULL, "ReleaseProcess", "u", (uint32_t) f->root_kids[k]->pid);
                cr_assert(r >= 0 || sd_bus_error_has_name(&e, E_NO_RES), "ReleaseProcess: %s", e.message);
        }
        for (size_t k = 0; k < ELEMENTSOF(f->nobody_kids); k++) {
                _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
                r = harness_call(h, &e, NULL, "ReleaseProcess", "u", (uint32_t) f->nobody_kids[k]);
                cr_assert(r >= 0 || sd_bus_error_has_name(&e, E_NO_RES), "ReleaseProcess: %s", e.message);
        }
        harness_assert_no_reservations(h, "after releasing every process of the randomized run");
        for (size_t k = 0; k < ELEMENTSOF(f->root_kids); k++)
                for (unsigned t = 0; t < f->root_kids[k]->n_threads; t++)
                        harness_assert_other(f->root_kids[k]->tids[t]);
        for (size_t k = 0; k < ELEMENTSOF(f->nobody_kids); k++)
                harness_assert_other(f->nobody_kids[k]);
        fuzz_check(f);

        agent_stop(f->a);
        for (size_t k = 0; k < ELEMENTSOF(f->nobody_kids); k++)
                sleeper_kill(f->nobody_kids[k]);
        free(f->nobody_ids);
        free(f);
        harness_stop(h);
}

/* ---- a capacity cap beside deadline threads edfd does not manage ---- */

/* `capacity: 6%` caps what edfd hands out. A deadline thread that edfd does not manage (10% here)
 * takes kernel bandwidth, and the kernel still has plenty: edfd must still hand out its 6%, not
 * count the 10% against its own cap and refuse everything as over-committed. */
Test(hostile, capacity_cap_beside_unmanaged_threads) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        HarnessChild *u, *c;
        Harness *h;
        uint64_t unmanaged = 0;
        int r;

        harness_require();
        cr_assert_eq(harness_spawn_child(NULL, 1, false, &u), 0);
        r = harness_dl_set(u->pid, 10 * MS, P100, P100, 0);
        if (r < 0) {
                harness_child_kill(u);
                free(u);
                cr_skip_test("cannot make an unmanaged deadline thread: %s", strerror(-r));
        }
        h = harness_start_or_skip("authz-cap.yaml");
        cr_assert_eq(harness_get_u64(h, "Unmanaged", &unmanaged), 0);
        cr_assert_geq(unmanaged, harness_bw(10 * MS, P100), "edfd does not count the unmanaged 10%%");
        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        r = harness_admit(h, &e, c->pid, 0, "g", MS, 0, P100, 0, NULL);
        harness_dl_reset(u->pid);
        harness_child_kill(u);
        free(u);
        assert_bus_ok(r, &e,
                      "Admit(1% into g) with capacity: 6% while a thread edfd does not manage holds 10% (the kernel "
                      "has room for both)");
        harness_stop(h);
}
