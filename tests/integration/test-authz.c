/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Who may ask edfd for what (issue 8), on a private bus that carries the *shipped* bus policy
 * (units/org.edfd.Admission1.conf, included by a system-bus style configuration written here):
 * an unprivileged caller (uid 65534, nobody) admits its own processes within its per-user limits,
 * and is refused, by name and with a message naming the rule, everything else: other users' threads,
 * groups whose users: leave it out, more than its limits, managing groups, reloading, moving
 * processes into cgroups, touching root's reservations. polkit is absent from the test bus unless a
 * test starts a real polkitd on it (in a private mount namespace that shows it edfd's action file).
 *
 * Unprivileged calls are made by an "agent": a child that drops to 65534, connects to the bus itself
 * and runs the calls the test sends it over a socket, reporting each result back. The processes it
 * admits are other children that drop to 65534 and sleep (and fork when told to). The test itself
 * stays root and checks the kernel (sched_getattr) and the books (ListReservations, ListGroups). */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
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
#include <unistd.h>

#include <criterion/criterion.h>

#include "agent.h"
#include "harness.h"
#include "shared/protocol.h"

#define MS HARNESS_MSEC
#define US (HARNESS_MSEC / 1000)
#define P100 (100 * MS)
#define NOBODY 65534

/* ---- a bus configuration with the shipped policy ---- */

/* The harness reads bus.conf and test-data/ from $EDFD_TEST_DIR. This directory holds a bus.conf
 * with the system bus's default policy that <include>s the shipped units/org.edfd.Admission1.conf
 * (and lets polkitd own its name, as its own package's file does), and a link to test-data/. */
static char shipped_dir[PATH_MAX];
static char source_test_dir[PATH_MAX]; /* the original $EDFD_TEST_DIR */

static char *read_all(const char *path) {
        FILE *f = fopen(path, "re");
        char *buf = NULL;
        size_t size = 0, n = 0;

        if (!f)
                return NULL;
        for (;;) {
                if (n + 4096 + 1 > size) {
                        char *nb = realloc(buf, size = n + 65536);
                        if (!nb) {
                                free(buf);
                                fclose(f);
                                return NULL;
                        }
                        buf = nb;
                }
                size_t k = fread(buf + n, 1, size - n - 1, f);
                n += k;
                if (k == 0)
                        break;
        }
        fclose(f);
        buf[n] = '\0';
        return buf;
}

static int write_all(const char *path, const char *text, mode_t mode) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        size_t len = strlen(text);

        if (fd < 0)
                return -errno;
        if (write(fd, text, len) != (ssize_t) len) {
                int r = errno ? -errno : -EIO;
                close(fd);
                return r;
        }
        return close(fd) < 0 ? -errno : 0;
}

/* units/NAME in the source tree, found from $EDFD_TEST_DIR (tests/integration). */
static void units_path(const char *test_dir, const char *name, char buf[static PATH_MAX]) {
        char raw[PATH_MAX + 64];

        snprintf(raw, sizeof raw, "%s/../../units/%s", test_dir, name);
        if (!realpath(raw, buf))
                cr_assert_fail("cannot find %s: %s", raw, strerror(errno));
}

static const char bus_conf_head[] =
        "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
        " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
        "<!-- Written by test-authz: the system bus's default policy (Debian's system.conf) plus the shipped\n"
        "     edfd policy file, included as the system bus includes system.d/. -->\n"
        "<busconfig>\n"
        "  <type>system</type>\n"
        "  <listen>unix:path=@BUS_SOCKET@</listen>\n"
        "  <auth>EXTERNAL</auth>\n"
        "  <policy context=\"default\">\n"
        "    <allow user=\"*\"/>\n"
        "    <deny own=\"*\"/>\n"
        "    <deny send_type=\"method_call\"/>\n"
        "    <allow send_type=\"signal\"/>\n"
        "    <allow send_requested_reply=\"true\" send_type=\"method_return\"/>\n"
        "    <allow send_requested_reply=\"true\" send_type=\"error\"/>\n"
        "    <allow receive_type=\"method_call\"/>\n"
        "    <allow receive_type=\"method_return\"/>\n"
        "    <allow receive_type=\"error\"/>\n"
        "    <allow receive_type=\"signal\"/>\n"
        "    <allow send_destination=\"org.freedesktop.DBus\" send_interface=\"org.freedesktop.DBus\"/>\n"
        "    <allow send_destination=\"org.freedesktop.DBus\" send_interface=\"org.freedesktop.DBus.Introspectable\"/>\n"
        "    <allow send_destination=\"org.freedesktop.DBus\" send_interface=\"org.freedesktop.DBus.Properties\"/>\n"
        "    <deny send_destination=\"org.freedesktop.DBus\" send_interface=\"org.freedesktop.DBus\"\n"
        "          send_member=\"UpdateActivationEnvironment\"/>\n"
        "    <allow send_destination=\"org.freedesktop.PolicyKit1\"/>\n"
        "  </policy>\n"
        "  <policy user=\"polkitd\">\n"
        "    <allow own=\"org.freedesktop.PolicyKit1\"/>\n"
        "  </policy>\n";

/* Remove the directories of test processes that died without cleaning up (a timeout). */
static void remove_stale_shipped_dirs(void) {
        DIR *d = opendir("/tmp");
        struct dirent *de;

        if (!d)
                return;
        while ((de = readdir(d))) {
                char path[PATH_MAX], *end;
                long pid;

                if (strncmp(de->d_name, "edfd-authz-", 11) != 0)
                        continue;
                pid = strtol(de->d_name + 11, &end, 10);
                if (*end != '-' || pid <= 0 || kill((pid_t) pid, 0) == 0 || errno != ESRCH)
                        continue;
                snprintf(path, sizeof path, "/tmp/%s/bus.conf", de->d_name);
                (void) unlink(path);
                snprintf(path, sizeof path, "/tmp/%s/test-data", de->d_name);
                (void) unlink(path);
                snprintf(path, sizeof path, "/tmp/%s", de->d_name);
                (void) rmdir(path);
        }
        closedir(d);
}

/* Make $EDFD_TEST_DIR point at a directory whose bus.conf includes the shipped policy. */
static void use_shipped_policy(void) {
        const char *orig = getenv("EDFD_TEST_DIR");
        char policy[PATH_MAX], path[PATH_MAX + 32], data[PATH_MAX + 32];
        char *text = NULL;
        int r;

        cr_assert(orig, "EDFD_TEST_DIR is not set");
        snprintf(source_test_dir, sizeof source_test_dir, "%s", orig);
        remove_stale_shipped_dirs();
        units_path(orig, "org.edfd.Admission1.conf", policy);
        snprintf(shipped_dir, sizeof shipped_dir, "/tmp/edfd-authz-%d-XXXXXX", (int) getpid());
        cr_assert(mkdtemp(shipped_dir), "mkdtemp: %s", strerror(errno));
        cr_assert_eq(chmod(shipped_dir, 0755), 0);
        cr_assert(asprintf(&text, "%s  <include>%s</include>\n</busconfig>\n", bus_conf_head, policy) > 0);
        snprintf(path, sizeof path, "%s/bus.conf", shipped_dir);
        r = write_all(path, text, 0644);
        free(text);
        cr_assert_eq(r, 0, "writing %s: %s", path, strerror(-r));
        snprintf(path, sizeof path, "%s/test-data", shipped_dir);
        snprintf(data, sizeof data, "%s/test-data", orig);
        cr_assert_eq(symlink(data, path), 0, "symlink %s: %s", path, strerror(errno));
        cr_assert_eq(setenv("EDFD_TEST_DIR", shipped_dir, 1), 0);
}

static void shipped_policy_done(void) {
        char path[PATH_MAX + 32];

        if (!shipped_dir[0])
                return;
        snprintf(path, sizeof path, "%s/bus.conf", shipped_dir);
        (void) unlink(path);
        snprintf(path, sizeof path, "%s/test-data", shipped_dir);
        (void) unlink(path);
        (void) rmdir(shipped_dir);
        shipped_dir[0] = '\0';
}

/* harness_require(), then the harness on the shipped policy with test-data/CONFIG. */
static Harness *start(const char *config) {
        harness_require();
        use_shipped_policy();
        return harness_start_or_skip(config);
}

/* ---- unprivileged processes ---- */

/* A second unprivileged user: "daemon". (dbus-daemon's <allow user="*"/> lets in only users with a
 * name, so a uid without a passwd entry cannot be used.) */
static uid_t other_uid;

static uid_t find_other_uid(void) {
        struct passwd *pw = getpwnam("daemon");

        if (!pw || pw->pw_uid == 0 || pw->pw_uid == NOBODY)
                cr_skip_test("there is no user \"daemon\" to be a second unprivileged user");
        return other_uid = pw->pw_uid;
}

/* A process of uid 65534 (or of root, when root is set) that sleeps, and forks a sleeping child
 * when it reads 'f' from its control socket (answering the child's pid). 'q' makes it kill and
 * reap its children and exit. */
typedef struct Proc {
        pid_t pid;
        int ctl;
        bool reaped;
} Proc;

typedef enum ProcKind {
        PROC_NOBODY,
        PROC_OTHER,   /* other_uid */
        PROC_ROOT,
} ProcKind;

_Noreturn static void proc_main(pid_t parent, int ctl, ProcKind kind) {
        pid_t kids[64];
        size_t n = 0;
        char c;

        ctl = agent_keep_only_fd(ctl);
        if (kind != PROC_ROOT && agent_drop_to(kind == PROC_OTHER ? other_uid : NOBODY) < 0)
                _exit(112);
        agent_die_with_parent(parent);
        if (write(ctl, "r", 1) != 1)
                _exit(113);
        for (;;) {
                ssize_t k = read(ctl, &c, 1);
                if (k <= 0 || c == 'q') {
                        for (size_t i = 0; i < n; i++) {
                                kill(kids[i], SIGKILL);
                                (void) waitpid(kids[i], NULL, 0);
                        }
                        _exit(0);
                }
                if (c == 'f') {
                        pid_t self = getpid(), kid = fork();
                        if (kid == 0) {
                                close(ctl);
                                agent_die_with_parent(self);
                                for (;;)
                                        pause();
                        }
                        if (kid > 0 && n < ELEMENTSOF(kids))
                                kids[n++] = kid;
                        if (write(ctl, &kid, sizeof kid) != sizeof kid)
                                _exit(113);
                }
        }
}

static Proc *proc_spawn(ProcKind kind) {
        Proc *p = calloc(1, sizeof *p);
        pid_t parent = getpid();
        char ready = 0;
        int sv[2];

        cr_assert(p);
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        p->pid = fork();
        cr_assert_geq(p->pid, 0, "fork: %s", strerror(errno));
        if (p->pid == 0) {
                close(sv[0]);
                proc_main(parent, sv[1], kind);
        }
        close(sv[1]);
        p->ctl = sv[0];
        cr_assert_eq(read(p->ctl, &ready, 1), 1, "process %d died before it was ready", (int) p->pid);
        return p;
}

static Proc *nobody_proc(void) {
        return proc_spawn(PROC_NOBODY);
}

/* Tell p to fork; the new child's pid. */
static pid_t proc_fork(Proc *p) {
        pid_t kid = -1;

        cr_assert_eq(write(p->ctl, "f", 1), 1);
        cr_assert_eq(read(p->ctl, &kid, sizeof kid), (ssize_t) sizeof kid, "process %d did not fork", (int) p->pid);
        cr_assert_gt(kid, 0, "process %d could not fork", (int) p->pid);
        return kid;
}

static void proc_free(Proc *p) {
        if (!p)
                return;
        if (!p->reaped) {
                (void) write(p->ctl, "q", 1);
                (void) waitpid(p->pid, NULL, 0);
                p->reaped = true;
        }
        close(p->ctl);
        free(p);
}

static AgentReply agent_admit(Agent *a, pid_t pid, pid_t tid, const char *group, uint64_t runtime, uint64_t deadline,
                              uint64_t period, uint64_t flags) {
        return agent_call(a, "Admit", "uustttt", (uint64_t) pid, (uint64_t) tid, group, runtime, deadline, period,
                          flags);
}

static void expect_ok(const AgentReply *rep, const char *what) {
        cr_assert(rep->r >= 0, "%s: refused with %s: %s", what, rep->name, rep->message);
}

/* Refused with error name; the message must say needle (unless NULL). */
static void expect_error(const AgentReply *rep, const char *what, const char *name, const char *needle) {
        cr_assert(rep->r < 0, "%s: succeeded, expected %s", what, name);
        if (getenv("EDFD_TEST_VERBOSE"))
                fprintf(stderr, "%s: %s: %s\n", what, rep->name, rep->message);
        cr_assert_str_eq(rep->name, name, "%s: expected %s, got %s: %s", what, name, rep->name, rep->message);
        cr_assert(rep->message[0], "%s: %s carries no message", what, name);
        if (needle)
                cr_assert(strstr(rep->message, needle), "%s: the message of %s does not say \"%s\": %s", what, name,
                          needle, rep->message);
}

/* The reservation of thread tid, copied out of ListReservations; false if there is none. */
static bool reservation_of(Harness *h, pid_t tid, HarnessReservation *ret) {
        HarnessReservation *l;
        size_t n;
        bool found = false;

        cr_assert_eq(harness_list_reservations(h, &l, &n), 0);
        for (size_t i = 0; i < n; i++)
                if (l[i].tid == (uint32_t) tid) {
                        *ret = l[i];
                        ret->group = NULL;
                        found = true;
                }
        harness_reservations_free(l, n);
        return found;
}

static uint64_t group_allocated(Harness *h, const char *path) {
        HarnessGroup *g;
        const HarnessGroup *x;
        size_t n;
        uint64_t v;

        cr_assert_eq(harness_list_groups(h, &g, &n), 0);
        x = harness_find_group(g, n, path);
        cr_assert(x, "no group %s", path);
        v = x->allocated;
        harness_groups_free(g, n);
        return v;
}

/* One round trip through edfd: the kernel's fork events were queued before it, and edfd handles
 * them at a higher priority than bus calls. */
static void sync_daemon(Harness *h) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        int r = harness_call(h, &e, NULL, "Echo", "t", UINT64_C(1));

        assert_bus_ok(r, &e, "Echo");
}

static void suite_fini(void);

TestSuite(authz, .fini = suite_fini, .timeout = 180);

/* ---- the tests ---- */

Test(authz, own_process_within_limits) {
        Harness *h = start("authz.yaml");
        Agent *a = agent_start(h);
        Proc *p = nobody_proc(), *q = nobody_proc();
        HarnessReservation res;
        AgentReply rep;
        uint64_t id;

        rep = agent_admit(a, p->pid, 0, "open", 1 * MS, 50 * MS, P100, 0);
        expect_ok(&rep, "Admit(own process, open, 1ms/50ms/100ms)");
        id = rep.value;
        harness_assert_dl(p->pid, 1 * MS, 50 * MS, P100, 0);
        cr_assert(reservation_of(h, p->pid, &res), "the admitted thread is not in ListReservations");
        cr_assert_eq(res.id, id);
        cr_assert_eq(res.uid, (uint32_t) NOBODY, "the reservation is charged to uid %" PRIu32 ", not to its owner %d",
                     res.uid, NOBODY);
        cr_assert_eq(group_allocated(h, "open"), harness_bw(1 * MS, P100));

        /* The default group, a group that lists it, a change of its own reservation. */
        rep = agent_admit(a, q->pid, q->pid, "", 200 * US, 0, P100, 0);
        expect_ok(&rep, "Admit(own second process, default group)");
        rep = agent_call(a, "Update", "tttt", id, 1500 * US, 50 * MS, P100);
        expect_ok(&rep, "Update(own reservation, 1.5ms) within the 2% limit");
        harness_assert_dl(p->pid, 1500 * US, 50 * MS, P100, 0);

        rep = agent_call(a, "Release", "t", id);
        expect_ok(&rep, "Release(own reservation)");
        harness_assert_other(p->pid);
        rep = agent_call(a, "ReleaseProcess", "u", (uint64_t) q->pid);
        expect_ok(&rep, "ReleaseProcess(own process)");
        cr_assert_eq(rep.value, 1, "ReleaseProcess released %" PRIu64 " reservations, expected 1", rep.value);
        harness_assert_other(q->pid);

        rep = agent_admit(a, q->pid, 0, "mine", 200 * US, 0, P100, 0);
        expect_ok(&rep, "Admit(own process, mine: users [nobody])");
        rep = agent_call(a, "ReleaseThread", "u", (uint64_t) q->pid);
        expect_ok(&rep, "ReleaseThread(own thread)");
        harness_assert_other(q->pid);
        harness_assert_no_reservations(h, "after nobody released everything");

        agent_stop(a);
        proc_free(p);
        proc_free(q);
        harness_stop(h);
}

Test(authz, other_users_threads_are_refused) {
        Harness *h = start("authz.yaml");
        Agent *a = agent_start(h);
        Proc *p = nobody_proc();
        HarnessChild *c;
        AgentReply rep;
        HarnessBooks before;

        cr_assert_eq(harness_spawn_child(h, 2, false, &c), 0);
        before = harness_books_take(h);

        rep = agent_admit(a, c->pid, 0, "open", 1 * MS, 0, P100, 0);
        expect_error(&rep, "Admit(root's process)", EDFD_ERROR_PERMISSION_DENIED, "uid 0");
        rep = agent_admit(a, c->pid, c->tids[1], "open", 1 * MS, 0, P100, 0);
        expect_error(&rep, "Admit(root's process, its second thread)", EDFD_ERROR_PERMISSION_DENIED, NULL);
        /* Its own pid with root's thread: that thread is not in its process. */
        rep = agent_admit(a, p->pid, c->tids[1], "open", 1 * MS, 0, P100, 0);
        expect_error(&rep, "Admit(own pid, root's tid)", EDFD_ERROR_NO_SUCH_THREAD, NULL);
        /* Root's pid with its own thread. */
        rep = agent_admit(a, c->pid, p->pid, "open", 1 * MS, 0, P100, 0);
        cr_assert(rep.r < 0 &&
                          (streq(rep.name, EDFD_ERROR_PERMISSION_DENIED) || streq(rep.name, EDFD_ERROR_NO_SUCH_THREAD)),
                  "Admit(root's pid, own tid): expected PermissionDenied or NoSuchThread, got %s: %s",
                  rep.r >= 0 ? "success" : rep.name, rep.message);
        /* pid 1 and kthreadd. */
        rep = agent_admit(a, 1, 0, "open", 1 * MS, 0, P100, 0);
        expect_error(&rep, "Admit(pid 1)", EDFD_ERROR_PERMISSION_DENIED, NULL);
        rep = agent_admit(a, 2, 0, "open", 1 * MS, 0, P100, 0);
        expect_error(&rep, "Admit(kthreadd)", EDFD_ERROR_PERMISSION_DENIED, NULL);

        harness_books_assert_same(h, &before, "admissions of other users' threads");
        harness_assert_other(c->pid);
        harness_assert_other(c->tids[1]);
        harness_books_free(&before);
        agent_stop(a);
        proc_free(p);
        harness_stop(h);
}

Test(authz, groups_users_lists) {
        Harness *h = start("authz.yaml");
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Agent *a = agent_start(h);
        Proc *p = nobody_proc();
        AgentReply rep;
        HarnessBooks before = harness_books_take(h);
        uint64_t id;
        int r;

        rep = agent_admit(a, p->pid, 0, "closed", 200 * US, 0, P100, 0);
        expect_error(&rep, "Admit(closed: users [root])", EDFD_ERROR_PERMISSION_DENIED, "closed");
        rep = agent_admit(a, p->pid, 0, "sealed", 200 * US, 0, P100, 0);
        expect_error(&rep, "Admit(sealed: users [])", EDFD_ERROR_PERMISSION_DENIED, "sealed");
        harness_books_assert_same(h, &before, "admissions into groups whose users: leave nobody out");
        harness_assert_other(p->pid);

        /* Root may use any group, for anyone's thread; the thread is charged to its owner. */
        r = harness_admit(h, &e, p->pid, 0, "sealed", 200 * US, 0, P100, 0, &id);
        assert_bus_ok(r, &e, "root: Admit(nobody's process, sealed)");
        {
                HarnessReservation res;
                cr_assert(reservation_of(h, p->pid, &res));
                cr_assert_eq(res.uid, (uint32_t) NOBODY,
                             "root's admission of nobody's thread is charged to uid %" PRIu32, res.uid);
        }
        /* ... and the owner may release it: it is its thread. */
        rep = agent_call(a, "Release", "t", id);
        expect_ok(&rep, "Release(the reservation root made for nobody's thread)");
        harness_assert_other(p->pid);

        harness_books_free(&before);
        agent_stop(a);
        proc_free(p);
        harness_stop(h);
}

/* ListGroups says who may use a group as (b anyone, as users) (protocol.h): a group that allows no
 * one (anyone false, no users) must not look like one that allows everyone (anyone true), and a list
 * names its users in the order of the config. */
Test(authz, list_groups_tells_nobody_from_anyone) {
        Harness *h = start("authz.yaml");
        HarnessGroup *g;
        const HarnessGroup *sealed, *open, *closed, *mine;
        size_t n;

        cr_assert_eq(harness_list_groups(h, &g, &n), 0);
        sealed = harness_find_group(g, n, "sealed");
        open = harness_find_group(g, n, "open");
        closed = harness_find_group(g, n, "closed");
        mine = harness_find_group(g, n, "mine");
        cr_assert(sealed && open && closed && mine);
        cr_assert(open->anyone, "open (no users:) should list anyone = true");
        cr_assert_null(open->users[0], "open (no users:) lists user %s besides anyone", open->users[0]);
        cr_assert(!sealed->anyone,
                  "ListGroups shows anyone = true for group sealed (users: []), expected false (nobody but root)");
        cr_assert_null(sealed->users[0], "sealed (users: []) lists user %s, expected none", sealed->users[0]);
        cr_assert(!closed->anyone && closed->users[0] && streq(closed->users[0], "root") && !closed->users[1],
                  "closed (users: [root]) is not listed as exactly [root]");
        cr_assert(!mine->anyone && mine->users[0] && streq(mine->users[0], "nobody") && !mine->users[1],
                  "mine (users: [nobody]) is not listed as exactly [nobody]");
        harness_groups_free(g, n);
        harness_stop(h);
}

Test(authz, bandwidth_limit) {
        Harness *h = start("authz.yaml");
        Agent *a = agent_start(h);
        Proc *p = nobody_proc(), *q = nobody_proc();
        AgentReply rep;
        HarnessBooks before;
        uint64_t id;

        rep = agent_admit(a, p->pid, 0, "open", 1500 * US, 0, P100, 0);
        expect_ok(&rep, "Admit(1.5ms/100ms) within the 2% limit");
        id = rep.value;
        before = harness_books_take(h);

        rep = agent_admit(a, q->pid, 0, "open", 600 * US, 0, P100, 0);
        expect_error(&rep, "Admit(0.6ms/100ms) over the 2% limit (1.5% held)", EDFD_ERROR_LIMIT_EXCEEDED, "bandwidth");
        cr_assert(strstr(rep.message, "nobody"), "the refusal does not name the user: %s", rep.message);
        harness_assert_other(q->pid);
        rep = agent_call(a, "Update", "tttt", id, 2500 * US, 0, P100);
        expect_error(&rep, "Update(own, 2.5ms/100ms) over the 2% limit", EDFD_ERROR_LIMIT_EXCEEDED, "bandwidth");
        harness_assert_dl(p->pid, 1500 * US, P100, P100, 0);
        /* A bandwidth above the limit in one request, with nothing else held, in another group. */
        rep = agent_admit(a, q->pid, 0, "mine", 2500 * US, 0, P100, 0);
        expect_error(&rep, "Admit(2.5ms/100ms) over the 2% limit", EDFD_ERROR_LIMIT_EXCEEDED, "bandwidth");
        harness_books_assert_same(h, &before, "refusals over the bandwidth limit");
        harness_assert_other(q->pid);

        /* Shrinking is always allowed, and what it frees can be used. */
        rep = agent_call(a, "Update", "tttt", id, 1000 * US, 0, P100);
        expect_ok(&rep, "Update(own, 1ms/100ms)");
        rep = agent_admit(a, q->pid, 0, "open", 600 * US, 0, P100, 0);
        expect_ok(&rep, "Admit(0.6ms/100ms) once 1% is free again");

        harness_books_free(&before);
        agent_stop(a);
        proc_free(p);
        proc_free(q);
        harness_stop(h);
}

Test(authz, reservations_limit) {
        Harness *h = start("authz.yaml");
        Agent *a = agent_start(h);
        Proc *p[4];
        AgentReply rep;
        HarnessBooks before;

        for (size_t i = 0; i < ELEMENTSOF(p); i++)
                p[i] = nobody_proc();
        for (size_t i = 0; i < 3; i++) {
                rep = agent_admit(a, p[i]->pid, 0, "open", 100 * US, 0, P100, 0);
                expect_ok(&rep, "Admit(one of 3 allowed reservations)");
        }
        before = harness_books_take(h);
        rep = agent_admit(a, p[3]->pid, 0, "open", 100 * US, 0, P100, 0);
        expect_error(&rep, "Admit(a 4th reservation, limit 3)", EDFD_ERROR_LIMIT_EXCEEDED, "reservations");
        harness_books_assert_same(h, &before, "a refusal over the reservations limit");
        harness_assert_other(p[3]->pid);

        harness_books_free(&before);
        agent_stop(a);
        for (size_t i = 0; i < ELEMENTSOF(p); i++)
                proc_free(p[i]);
        harness_stop(h);
}

Test(authz, rate_limit) {
        Harness *h = start("authz-rate.yaml");
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Agent *a = agent_start(h);
        Proc *p = nobody_proc(), *q = nobody_proc();
        HarnessChild *c;
        AgentReply rep;
        HarnessBooks before;
        uint64_t id;
        int r;

        /* 3 requests per hour: two admissions and one change. */
        rep = agent_admit(a, p->pid, 0, "open", 100 * US, 0, P100, 0);
        expect_ok(&rep, "request 1 of 3 (Admit)");
        id = rep.value;
        rep = agent_call(a, "Update", "tttt", id, 200 * US, 0, P100);
        expect_ok(&rep, "request 2 of 3 (Update)");
        rep = agent_admit(a, q->pid, 0, "open", 100 * US, 0, P100, 0);
        expect_ok(&rep, "request 3 of 3 (Admit)");
        rep = agent_call(a, "Release", "t", rep.value);
        expect_ok(&rep, "Release (not a rate-limited request)");
        before = harness_books_take(h);

        rep = agent_admit(a, q->pid, 0, "open", 100 * US, 0, P100, 0);
        expect_error(&rep, "request 4 (Admit) over 3/3600s", EDFD_ERROR_LIMIT_EXCEEDED, "rate");
        rep = agent_call(a, "Update", "tttt", id, 300 * US, 0, P100);
        expect_error(&rep, "request 5 (Update) over 3/3600s", EDFD_ERROR_LIMIT_EXCEEDED, "rate");
        harness_books_assert_same(h, &before, "requests over the rate limit");
        harness_assert_other(q->pid);
        harness_assert_dl(p->pid, 200 * US, P100, P100, 0);

        /* Reading is not limited; root is not limited. */
        rep = agent_call(a, "ListReservations", "");
        expect_ok(&rep, "ListReservations over the rate limit");
        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        r = harness_admit(h, &e, c->pid, 0, "open", 100 * US, 0, P100, 0, NULL);
        assert_bus_ok(r, &e, "root: Admit while nobody is rate limited");

        harness_books_free(&before);
        agent_stop(a);
        proc_free(p);
        proc_free(q);
        harness_stop(h);
}

/* Group changes, reloads and moves need root (or polkit's manage action; polkit is not on the bus). */
static void manage_is_refused(Harness *h, const char *needle) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Agent *a = agent_start(h);
        Proc *p = nobody_proc();
        AgentReply rep;
        unsigned reloading, reloading_after;
        HarnessBooks before;
        int r;

        /* A group made at run time, which root could remove. */
        r = harness_call(h, &e, NULL, "CreateGroup", "stt", "open/dyn", 1 * MS, P100);
        assert_bus_ok(r, &e, "root: CreateGroup(open/dyn)");
        before = harness_books_take(h);
        char *cg_before = harness_cgroup_of(p->pid), *cg_after;

        harness_notify_counts(h, NULL, &reloading);
        rep = agent_call(a, "CreateGroup", "stt", "open/x", 1 * MS, P100);
        expect_error(&rep, "CreateGroup(open/x)", EDFD_ERROR_PERMISSION_DENIED, needle);
        rep = agent_call(a, "SetGroup", "stt", "open", 20 * MS, P100);
        expect_error(&rep, "SetGroup(open, 20%)", EDFD_ERROR_PERMISSION_DENIED, needle);
        rep = agent_call(a, "RemoveGroup", "s", "open/dyn");
        expect_error(&rep, "RemoveGroup(open/dyn)", EDFD_ERROR_PERMISSION_DENIED, needle);
        rep = agent_call(a, "Reload", "");
        expect_error(&rep, "Reload()", EDFD_ERROR_PERMISSION_DENIED, needle);
        /* Flag 4 (move into the group's cgroup) is a manage action, even for its own process. */
        rep = agent_admit(a, p->pid, 0, "mine", 200 * US, 0, P100, EDFD_ADMIT_MOVE);
        expect_error(&rep, "Admit(own process, mine, flag 4 = move)", EDFD_ERROR_PERMISSION_DENIED, NULL);
        harness_assert_other(p->pid);
        cg_after = harness_cgroup_of(p->pid);
        cr_assert(cg_before && cg_after && streq(cg_before, cg_after), "the refused move moved the process: %s -> %s",
                  cg_before ? cg_before : "?", cg_after ? cg_after : "?");

        harness_books_assert_same(h, &before, "refused group changes, reload and move");
        sync_daemon(h);
        harness_notify_counts(h, NULL, &reloading_after);
        cr_assert_eq(reloading_after, reloading, "edfd started a reload (RELOADING=1) for a refused Reload");
        r = harness_call(h, &e, NULL, "RemoveGroup", "s", "open/dyn");
        assert_bus_ok(r, &e, "root: RemoveGroup(open/dyn)");
        free(cg_before);
        free(cg_after);
        harness_books_free(&before);
        agent_stop(a);
        proc_free(p);
}

/* Without polkit on the bus, `polkit: auto` lets admissions through and refuses managing: the
 * message must say what would be needed (root, or polkit's manage action), not blame the
 * configuration for "requiring" polkit. */
Test(authz, manage_is_refused_polkit_auto) {
        Harness *h = start("authz.yaml");

        manage_is_refused(h, "root");
        harness_stop(h);
}

Test(authz, manage_is_refused_polkit_off) {
        Harness *h = start("authz-polkit-off.yaml");

        manage_is_refused(h, "root");
        harness_stop(h);
}

Test(authz, roots_reservations_are_not_yours) {
        Harness *h = start("authz.yaml");
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Agent *a = agent_start(h);
        HarnessChild *c;
        AgentReply rep;
        HarnessBooks before;
        uint64_t id;
        int r;

        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        r = harness_admit(h, &e, c->pid, 0, "open", 1 * MS, 0, P100, 0, &id);
        assert_bus_ok(r, &e, "root: Admit(root's child)");
        before = harness_books_take(h);

        rep = agent_call(a, "Release", "t", id);
        expect_error(&rep, "Release(root's reservation)", EDFD_ERROR_PERMISSION_DENIED, NULL);
        rep = agent_call(a, "ReleaseThread", "u", (uint64_t) c->pid);
        expect_error(&rep, "ReleaseThread(root's thread)", EDFD_ERROR_PERMISSION_DENIED, NULL);
        rep = agent_call(a, "ReleaseProcess", "u", (uint64_t) c->pid);
        expect_error(&rep, "ReleaseProcess(root's process)", EDFD_ERROR_PERMISSION_DENIED, NULL);
        rep = agent_call(a, "Update", "tttt", id, 100 * US, 0, P100);
        expect_error(&rep, "Update(root's reservation)", EDFD_ERROR_PERMISSION_DENIED, NULL);
        harness_books_assert_same(h, &before, "nobody's attempts on root's reservation");
        harness_assert_dl(c->pid, 1 * MS, P100, P100, 0);

        harness_books_free(&before);
        agent_stop(a);
        harness_stop(h);
}

Test(authz, polkit_required_without_polkit) {
        Harness *h = start("authz-polkit-required.yaml");
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Agent *a = agent_start(h);
        Proc *p = nobody_proc();
        HarnessChild *c;
        AgentReply rep;
        HarnessBooks before = harness_books_take(h);
        int r;

        rep = agent_admit(a, p->pid, 0, "open", 200 * US, 0, P100, 0);
        expect_error(&rep, "Admit(own process) with polkit: required and no polkit", EDFD_ERROR_PERMISSION_DENIED,
                     "polkit");
        harness_books_assert_same(h, &before, "a refused admission");
        harness_assert_other(p->pid);
        /* Root needs no polkit. */
        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        r = harness_admit(h, &e, c->pid, 0, "open", 200 * US, 0, P100, 0, NULL);
        assert_bus_ok(r, &e, "root: Admit with polkit: required and no polkit");

        harness_books_free(&before);
        agent_stop(a);
        proc_free(p);
        harness_stop(h);
}

Test(authz, polkit_off_allows_admissions) {
        Harness *h = start("authz-polkit-off.yaml");
        Agent *a = agent_start(h);
        Proc *p = nobody_proc();
        AgentReply rep;

        rep = agent_admit(a, p->pid, 0, "open", 200 * US, 0, P100, 0);
        expect_ok(&rep, "Admit(own process) with polkit: off");
        harness_assert_dl(p->pid, 200 * US, P100, P100, 0);
        rep = agent_admit(a, p->pid, 0, "open", 200 * US, 0, P100, 0);
        expect_error(&rep, "Admit(the same thread again)", EDFD_ERROR_ALREADY_ADMITTED, NULL);

        agent_stop(a);
        proc_free(p);
        harness_stop(h);
}

/* ---- forks are charged to the owner too ---- */

static HarnessReservation wait_child_reservation(Harness *h, pid_t kid, const char *reason) {
        HarnessSignal sig;
        HarnessReservation res;

        cr_assert_eq(harness_wait_signal(h, "ReservationAdded", UINT64_MAX, reason, &sig), 0,
                     "no ReservationAdded(%s) for the new child %d", reason, (int) kid);
        cr_assert_eq(sig.tid, (uint32_t) kid, "ReservationAdded(%s) names thread %" PRIu32 ", not the child %d", reason,
                     sig.tid, (int) kid);
        cr_assert(reservation_of(h, kid, &res), "the child %d is not in ListReservations", (int) kid);
        return res;
}

Test(authz, fork_inherit_within_limits) {
        Harness *h = start("authz.yaml");
        Agent *a = agent_start(h);
        Proc *p = nobody_proc();
        HarnessReservation res;
        AgentReply rep;
        pid_t kid;

        rep = agent_admit(a, p->pid, 0, "open", 500 * US, 0, P100, 0);
        expect_ok(&rep, "Admit(own process, open: fork inherit, 0.5ms/100ms)");
        harness_clear_signals(h);
        kid = proc_fork(p);
        res = wait_child_reservation(h, kid, "inherited");
        cr_assert_eq(res.uid, (uint32_t) NOBODY, "the inherited child is charged to uid %" PRIu32, res.uid);
        cr_assert_eq(res.runtime, 500 * US);
        harness_assert_dl(kid, 500 * US, P100, P100, 0);
        harness_assert_dl(p->pid, 500 * US, P100, P100, 0);

        /* 1% held now: 1.2% more is over the 2% limit. */
        {
                Proc *q = nobody_proc();
                rep = agent_admit(a, q->pid, 0, "open", 1200 * US, 0, P100, 0);
                expect_error(&rep, "Admit(1.2%) after the inherited child took 0.5%", EDFD_ERROR_LIMIT_EXCEEDED,
                             "bandwidth");
                proc_free(q);
        }
        agent_stop(a);
        proc_free(p);
        harness_stop(h);
}

Test(authz, fork_inherit_splits_at_the_bandwidth_limit) {
        Harness *h = start("authz.yaml");
        Agent *a = agent_start(h);
        Proc *p = nobody_proc();
        HarnessReservation res;
        AgentReply rep;
        uint64_t before;
        pid_t kid;

        rep = agent_admit(a, p->pid, 0, "open", 1500 * US, 0, P100, 0);
        expect_ok(&rep, "Admit(own process, open: fork inherit, 1.5ms/100ms)");
        before = group_allocated(h, "open");
        harness_clear_signals(h);
        kid = proc_fork(p);
        /* A full copy would make 3% > 2%: the child gets half instead. */
        res = wait_child_reservation(h, kid, "split");
        cr_assert_eq(res.uid, (uint32_t) NOBODY);
        cr_assert_eq(res.runtime, 750 * US, "the split child has runtime %" PRIu64 " ns, expected 750us", res.runtime);
        harness_assert_dl(kid, 750 * US, P100, P100, 0);
        harness_assert_dl(p->pid, 750 * US, P100, P100, 0);
        cr_assert_leq(group_allocated(h, "open"), before, "a split made the group's allocation grow");

        agent_stop(a);
        proc_free(p);
        harness_stop(h);
}

Test(authz, fork_stays_other_at_the_reservations_limit) {
        Harness *h = start("authz.yaml");
        Agent *a = agent_start(h);
        Proc *p = nobody_proc(), *q = nobody_proc(), *s = nobody_proc();
        HarnessReservation res;
        AgentReply rep;
        HarnessBooks before;
        pid_t kid;

        rep = agent_admit(a, p->pid, 0, "open", 600 * US, 0, P100, 0);
        expect_ok(&rep, "Admit(reservation 1 of 3)");
        rep = agent_admit(a, q->pid, 0, "open", 100 * US, 0, P100, 0);
        expect_ok(&rep, "Admit(reservation 2 of 3)");
        rep = agent_admit(a, s->pid, 0, "open", 100 * US, 0, P100, 0);
        expect_ok(&rep, "Admit(reservation 3 of 3)");
        before = harness_books_take(h);
        kid = proc_fork(p);
        sync_daemon(h);
        cr_assert(!reservation_of(h, kid, &res),
                  "the child %d of a user at its reservations limit got reservation %" PRIu64, (int) kid, res.id);
        harness_assert_other(kid);
        harness_assert_dl(p->pid, 600 * US, P100, P100, 0);
        harness_books_assert_same(h, &before, "a fork at the reservations limit");

        harness_books_free(&before);
        agent_stop(a);
        proc_free(p);
        proc_free(q);
        proc_free(s);
        harness_stop(h);
}

/* Root may do everything: the `default` limits (authz.yaml has no root entry) bind other users, not
 * root. Root admits any number of its own threads; their forks under `inherit` must not be held to
 * `default` either. */
Test(authz, roots_forks_are_not_limited) {
        Harness *h = start("authz.yaml");
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Proc *p = proc_spawn(PROC_ROOT);
        HarnessChild *c[2];
        HarnessReservation res;
        HarnessSignal sig;
        pid_t kid;
        int r;

        r = harness_admit(h, &e, p->pid, 0, "open", 500 * US, 0, P100, 0, NULL);
        assert_bus_ok(r, &e, "root: Admit(root's forking process)");
        for (size_t i = 0; i < ELEMENTSOF(c); i++) {
                cr_assert_eq(harness_spawn_child(h, 1, false, &c[i]), 0);
                r = harness_admit(h, &e, c[i]->pid, 0, "open", 100 * US, 0, P100, 0, NULL);
                assert_bus_ok(r, &e, "root: Admit(more root threads than `default` allows)");
        }
        harness_clear_signals(h);
        kid = proc_fork(p);
        r = harness_wait_signal(h, "ReservationAdded", UINT64_MAX, NULL, &sig);
        cr_assert(r == 0 && reservation_of(h, kid, &res),
                  "the child %d of root's admitted process (fork: inherit) got no reservation: root's threads are "
                  "held to the `default` limits (2 reservations) when they fork, though root's own admissions are not",
                  (int) kid);
        harness_assert_dl(kid, 500 * US, P100, P100, 0);

        proc_free(p);
        harness_stop(h);
}

/* ---- the shipped bus policy ---- */

Test(authz, shipped_policy) {
        Harness *h = start("authz.yaml");
        Agent *a = agent_start(h);
        AgentReply rep;

        rep = agent_call(a, "Echo", "t", UINT64_C(77));
        expect_ok(&rep, "Echo");
        cr_assert_eq(rep.value, 77);
        rep = agent_call(a, "ListGroups", "");
        expect_ok(&rep, "ListGroups");
        rep = agent_call_iface(a, "org.freedesktop.DBus.Properties", "GetAll", "s", EDFD_BUS_INTERFACE);
        expect_ok(&rep, "Properties.GetAll");
        rep = agent_call_iface(a, "org.freedesktop.DBus.Introspectable", "Introspect", "");
        expect_ok(&rep, "Introspect");
        rep = agent_call_iface(a, "org.freedesktop.DBus.Peer", "Ping", "");
        expect_ok(&rep, "Peer.Ping");
        /* An interface the policy does not open. */
        rep = agent_call_iface(a, "org.example.Other", "Echo", "t", UINT64_C(1));
        expect_error(&rep, "org.example.Other.Echo on edfd", "org.freedesktop.DBus.Error.AccessDenied", NULL);
        /* Owning edfd's name, or any other. */
        rep = agent_call(a, "!RequestName", "s", EDFD_BUS_NAME);
        cr_assert(rep.r < 0, "uid %d could queue for %s: the policy must refuse it", NOBODY, EDFD_BUS_NAME);
        cr_assert_eq(rep.r, -EACCES, "RequestName(%s) as nobody: %s, expected EACCES (AccessDenied)", EDFD_BUS_NAME,
                     strerror(-rep.r));
        rep = agent_call(a, "!RequestName", "s", "org.example.Other");
        cr_assert(rep.r < 0, "uid %d could own org.example.Other", NOBODY);

        agent_stop(a);
        harness_stop(h);
}

/* ---- a real polkitd on the test bus ---- */

static pid_t polkitd_pid;

static void polkitd_stop(void) {
        if (polkitd_pid > 0) {
                kill(polkitd_pid, SIGTERM);
                (void) waitpid(polkitd_pid, NULL, 0);
                polkitd_pid = 0;
        }
}

static void suite_fini(void) {
        polkitd_stop();
        harness_fini();
        shipped_policy_done();
}

#define POLKITD "/usr/lib/polkit-1/polkitd"

static bool name_has_owner(Harness *h, const char *name) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int has = 0;

        if (sd_bus_call_method(h->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "NameHasOwner", &e, &reply, "s", name) < 0)
                return false;
        return sd_bus_message_read(reply, "b", &has) >= 0 && has;
}

/* Start polkitd on h's bus with the given JavaScript rules, in a mount namespace of its own where
 * /usr/share/polkit-1/actions holds edfd's action file (and polkit's own) and the rules
 * directories hold only these rules. Nothing is installed on the system. Skips if it cannot. */
static void polkitd_start(Harness *h, const char *tag, const char *rules) {
        char dir[PATH_MAX], actions[PATH_MAX + 16], rdir[PATH_MAX + 16], empty[PATH_MAX + 16], path[PATH_MAX + 64];
        char policy[PATH_MAX], log[PATH_MAX + 16];
        struct passwd *pw = getpwnam("polkitd");
        char *text;
        pid_t parent = getpid();
        int r, fd;

        if (access(POLKITD, X_OK) < 0)
                cr_skip_test(POLKITD " is not installed: the polkit paths are covered by the VM test");
        if (!pw)
                cr_skip_test("there is no polkitd user");
        units_path(source_test_dir, "org.edfd.Admission1.policy", policy);
        text = read_all(policy);
        cr_assert(text, "cannot read %s", policy);

        snprintf(dir, sizeof dir, "%s/polkit-%s", h->dir, tag);
        snprintf(actions, sizeof actions, "%s/actions", dir);
        snprintf(rdir, sizeof rdir, "%s/rules", dir);
        snprintf(empty, sizeof empty, "%s/empty", dir);
        snprintf(log, sizeof log, "%s/polkitd.log", dir);
        cr_assert_eq(mkdir(dir, 0755), 0, "mkdir %s: %s", dir, strerror(errno));
        cr_assert_eq(mkdir(actions, 0755), 0);
        cr_assert_eq(mkdir(rdir, 0700), 0);
        cr_assert_eq(mkdir(empty, 0700), 0);
        snprintf(path, sizeof path, "%s/org.edfd.Admission1.policy", actions);
        r = write_all(path, text, 0644);
        free(text);
        cr_assert_eq(r, 0);
        snprintf(path, sizeof path, "%s/50-edfd-test.rules", rdir);
        cr_assert_eq(write_all(path, rules, 0644), 0);
        cr_assert_eq(chown(rdir, pw->pw_uid, 0), 0);
        cr_assert_eq(chown(empty, pw->pw_uid, 0), 0);

        fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        cr_assert_geq(fd, 0);
        polkitd_pid = fork();
        cr_assert_geq(polkitd_pid, 0);
        if (polkitd_pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGTERM);
                if (getppid() != parent)
                        _exit(120);
                dup2(fd, STDOUT_FILENO);
                dup2(fd, STDERR_FILENO);
                if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                        fprintf(stderr, "test: cannot make a mount namespace: %m\n");
                        _exit(121);
                }
                if (mount(actions, "/usr/share/polkit-1/actions", NULL, MS_BIND, NULL) < 0 ||
                    mount(rdir, "/etc/polkit-1/rules.d", NULL, MS_BIND, NULL) < 0 ||
                    (access("/usr/share/polkit-1/rules.d", F_OK) == 0 &&
                     mount(empty, "/usr/share/polkit-1/rules.d", NULL, MS_BIND, NULL) < 0)) {
                        fprintf(stderr, "test: bind mounts for polkitd: %m\n");
                        _exit(122);
                }
                setenv("DBUS_SYSTEM_BUS_ADDRESS", h->bus_address, 1);
                execl(POLKITD, "polkitd", (char *) NULL);
                fprintf(stderr, "test: exec " POLKITD ": %m\n");
                _exit(123);
        }
        close(fd);
        for (unsigned i = 0; i < 500; i++) {
                int status;
                if (name_has_owner(h, "org.freedesktop.PolicyKit1"))
                        return;
                if (waitpid(polkitd_pid, &status, WNOHANG) == polkitd_pid) {
                        polkitd_pid = 0;
                        text = read_all(log);
                        fprintf(stderr, "polkitd log:\n%s\n", text ? text : "(none)");
                        free(text);
                        if (WIFEXITED(status) && WEXITSTATUS(status) >= 120 && WEXITSTATUS(status) <= 123)
                                cr_skip_test("cannot run polkitd in a private mount namespace here (status %d)",
                                             WEXITSTATUS(status));
                        cr_assert_fail("polkitd exited before it took its name (status 0x%x)", (unsigned) status);
                }
                harness_usleep(10000);
        }
        text = read_all(log);
        fprintf(stderr, "polkitd log:\n%s\n", text ? text : "(none)");
        free(text);
        cr_assert_fail("polkitd did not take org.freedesktop.PolicyKit1 within 5 s");
}

static const char rules_admit_only[] =
        "/* test-authz: nobody may admit; manage stays at its defaults (auth_admin: needs an agent). */\n"
        "polkit.addRule(function(action, subject) {\n"
        "        if (action.id == \"org.edfd.Admission1.admit\" && subject.user == \"nobody\")\n"
        "                return polkit.Result.YES;\n"
        "});\n";

static const char rules_manage_only[] =
        "/* test-authz: nobody may manage, but not admit. */\n"
        "polkit.addRule(function(action, subject) {\n"
        "        if (subject.user != \"nobody\")\n"
        "                return polkit.Result.NOT_HANDLED;\n"
        "        if (action.id == \"org.edfd.Admission1.manage\")\n"
        "                return polkit.Result.YES;\n"
        "        if (action.id == \"org.edfd.Admission1.admit\")\n"
        "                return polkit.Result.NO;\n"
        "});\n";

static const char rules_both[] =
        "/* test-authz: nobody may admit and manage. */\n"
        "polkit.addRule(function(action, subject) {\n"
        "        if (subject.user == \"nobody\" && action.id.indexOf(\"org.edfd.Admission1.\") == 0)\n"
        "                return polkit.Result.YES;\n"
        "});\n";

static void real_polkitd(const char *config) {
        Harness *h = start(config);
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Agent *a;
        Proc *p = nobody_proc();
        HarnessChild *c;
        AgentReply rep;
        HarnessBooks before;
        int r;

        polkitd_start(h, "admit", rules_admit_only);
        a = agent_start(h);
        rep = agent_admit(a, p->pid, 0, "open", 200 * US, 0, P100, 0);
        expect_ok(&rep, "Admit(own process) with polkitd allowing org.edfd.Admission1.admit");
        harness_assert_dl(p->pid, 200 * US, P100, P100, 0);
        rep = agent_call(a, "Release", "t", rep.value);
        expect_ok(&rep, "Release(own)");
        before = harness_books_take(h);
        rep = agent_call(a, "CreateGroup", "stt", "open/x", 1 * MS, P100);
        expect_error(&rep, "CreateGroup with polkitd at manage's defaults (auth_admin, no agent)",
                     EDFD_ERROR_PERMISSION_DENIED, "polkit");
        rep = agent_call(a, "Reload", "");
        expect_error(&rep, "Reload with polkitd at manage's defaults", EDFD_ERROR_PERMISSION_DENIED, "polkit");
        rep = agent_admit(a, p->pid, 0, "mine", 200 * US, 0, P100, EDFD_ADMIT_MOVE);
        expect_error(&rep, "Admit(flag 4) with polkitd allowing admit only", EDFD_ERROR_PERMISSION_DENIED, "polkit");
        harness_books_assert_same(h, &before, "refused manage actions");
        harness_books_free(&before);
        /* Root never asks polkit. */
        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        r = harness_admit(h, &e, c->pid, 0, "open", 200 * US, 0, P100, 0, NULL);
        assert_bus_ok(r, &e, "root: Admit with polkitd running");
        polkitd_stop();

        polkitd_start(h, "manage", rules_manage_only);
        before = harness_books_take(h);
        rep = agent_admit(a, p->pid, 0, "open", 200 * US, 0, P100, 0);
        expect_error(&rep, "Admit(own process) with polkitd saying no to admit", EDFD_ERROR_PERMISSION_DENIED,
                     "polkit");
        harness_books_assert_same(h, &before, "an admission polkit refused");
        harness_books_free(&before);
        harness_assert_other(p->pid);
        rep = agent_call(a, "CreateGroup", "stt", "open/x", 1 * MS, P100);
        expect_ok(&rep, "CreateGroup(open/x) with polkitd allowing manage");
        rep = agent_call(a, "SetGroup", "stt", "open/x", 2 * MS, P100);
        expect_ok(&rep, "SetGroup(open/x) with polkitd allowing manage");
        rep = agent_call(a, "RemoveGroup", "s", "open/x");
        expect_ok(&rep, "RemoveGroup(open/x) with polkitd allowing manage");
        rep = agent_call(a, "Reload", "");
        expect_ok(&rep, "Reload with polkitd allowing manage");
        polkitd_stop();

        /* Both actions allowed: a move (flag 4) asks polkit twice for one call, and then happens. */
        polkitd_start(h, "both", rules_both);
        {
                char *cg;
                rep = agent_admit(a, p->pid, 0, "mine", 200 * US, 0, P100, EDFD_ADMIT_MOVE);
                expect_ok(&rep, "Admit(own process, mine, flag 4) with polkitd allowing admit and manage");
                harness_assert_dl(p->pid, 200 * US, P100, P100, 0);
                cg = harness_cgroup_of(p->pid);
                cr_assert(cg && strstr(cg, "/mine"), "the process was not moved into mine's cgroup: %s", cg ? cg : "?");
                free(cg);
        }
        polkitd_stop();

        agent_stop(a);
        proc_free(p);
        harness_stop(h);
}

Test(authz, real_polkitd_auto) {
        real_polkitd("authz.yaml");
}

Test(authz, real_polkitd_required) {
        real_polkitd("authz-polkit-required.yaml");
}

/* A polkit that never answers: it owns org.freedesktop.PolicyKit1 (as the polkitd user, as the bus
 * policy wants) and reads nothing. Returns its pid; kill it to make it go away. */
static pid_t hung_polkit_start(Harness *h) {
        struct passwd *pw = getpwnam("polkitd");
        pid_t fake, parent = getpid();
        int ready[2];
        char byte = 0;

        if (!pw)
                cr_skip_test("there is no polkitd user to own org.freedesktop.PolicyKit1 under the bus policy");
        cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
        fake = fork();
        cr_assert_geq(fake, 0);
        if (fake == 0) {
                sd_bus *bus = NULL;
                close(ready[0]);
                ready[1] = agent_keep_only_fd(ready[1]);
                if (setgroups(0, NULL) < 0 || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) < 0 ||
                    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) < 0)
                        _exit(1);
                agent_die_with_parent(parent);
                if (sd_bus_new(&bus) < 0 || sd_bus_set_address(bus, h->bus_address) < 0 ||
                    sd_bus_set_bus_client(bus, 1) < 0 || sd_bus_start(bus) < 0 ||
                    sd_bus_request_name(bus, "org.freedesktop.PolicyKit1", 0) < 0)
                        _exit(2);
                if (write(ready[1], "R", 1) != 1)
                        _exit(3);
                for (;;)
                        pause();
        }
        close(ready[1]);
        cr_assert_eq(read(ready[0], &byte, 1), 1, "the hung polkit could not take org.freedesktop.PolicyKit1");
        close(ready[0]);
        return fake;
}

/* edfd asks polkit asynchronously, so root's calls and reads go on while nobody's admission waits
 * for a polkit that hangs; when the hung polkit goes away, the admission is refused. */
Test(authz, a_hung_polkit_blocks_nobody_else) {
        Harness *h = start("authz.yaml");
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Agent *a;
        Proc *p = nobody_proc();
        HarnessChild *c;
        AgentReply rep;
        pid_t fake;
        int r;

        fake = hung_polkit_start(h);
        a = agent_start(h);
        agent_send(a, "Admit", "uustttt", (uint64_t) p->pid, UINT64_C(0), "open", 200 * US, UINT64_C(0), P100,
                   UINT64_C(0));
        /* While that waits for polkit: */
        sync_daemon(h);
        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        r = harness_admit(h, &e, c->pid, 0, "open", 200 * US, 0, P100, 0, NULL);
        assert_bus_ok(r, &e, "root: Admit while nobody's admission waits for a hung polkit");
        harness_assert_dl(c->pid, 200 * US, P100, P100, 0);
        harness_assert_other(p->pid);

        kill(fake, SIGKILL);
        (void) waitpid(fake, NULL, 0);
        rep = agent_recv(a, "Admit");
        expect_error(&rep, "Admit(own process) when polkit hung and went away", EDFD_ERROR_PERMISSION_DENIED, "polkit");
        harness_assert_other(p->pid);

        agent_stop(a);
        proc_free(p);
        harness_stop(h);
}

/* A restarted edfd (after SIGKILL) re-adopts nobody's reservation as nobody's: still charged to its
 * limit, still its own to release. */
Test(authz, limits_survive_a_restart) {
        Harness *h = start("authz.yaml");
        Agent *a = agent_start(h);
        Proc *p = nobody_proc(), *q = nobody_proc();
        HarnessReservation res;
        AgentReply rep;
        uint64_t id;

        rep = agent_admit(a, p->pid, 0, "open", 1500 * US, 0, P100, 0);
        expect_ok(&rep, "Admit(own process, 1.5ms/100ms)");
        id = rep.value;
        agent_stop(a);
        cr_assert_eq(harness_restart_daemon(h, true), 0, "edfd did not come back after SIGKILL");
        a = agent_start(h);
        cr_assert(reservation_of(h, p->pid, &res), "the reservation was not re-adopted");
        cr_assert_eq(res.uid, (uint32_t) NOBODY, "the re-adopted reservation belongs to uid %" PRIu32, res.uid);
        harness_assert_dl(p->pid, 1500 * US, P100, P100, 0);
        rep = agent_admit(a, q->pid, 0, "open", 600 * US, 0, P100, 0);
        expect_error(&rep, "Admit(0.6%) after the restart, 1.5% of 2% held", EDFD_ERROR_LIMIT_EXCEEDED, "bandwidth");
        rep = agent_call(a, "Release", "t", id);
        expect_ok(&rep, "Release(own, re-adopted reservation)");
        harness_assert_other(p->pid);

        agent_stop(a);
        proc_free(p);
        proc_free(q);
        harness_stop(h);
}

/* ---- a flood of requests waiting for polkit ---- */

/* A process of uid 65534 with n_conn bus connections that sends per_conn Admit calls on each
 * without waiting, then waits for all the replies and exits. The calls are for a thread that does
 * not exist: each is still authorized (asked of polkit) first. */
_Noreturn static void flooder(const char *address, pid_t parent, unsigned n_conn, unsigned per_conn, int ready) {
        sd_bus *buses[16] = {};

        ready = agent_keep_only_fd(ready);
        if (agent_drop_to(NOBODY) < 0)
                _exit(1);
        agent_die_with_parent(parent);
        for (unsigned i = 0; i < n_conn && i < ELEMENTSOF(buses); i++) {
                if (sd_bus_new(&buses[i]) < 0 || sd_bus_set_address(buses[i], address) < 0 ||
                    sd_bus_set_bus_client(buses[i], 1) < 0 || sd_bus_start(buses[i]) < 0)
                        _exit(2);
                for (unsigned k = 0; k < per_conn; k++) {
                        sd_bus_message *m = NULL;
                        if (sd_bus_message_new_method_call(buses[i], &m, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE,
                                                           "Admit") < 0 ||
                            sd_bus_message_append(m, "uustttt", (uint32_t) getpid(), UINT32_C(0x7ffffff0), "open",
                                                  100 * US, UINT64_C(0), P100, UINT64_C(0)) < 0 ||
                            sd_bus_call_async(buses[i], NULL, m, NULL, NULL, 60 * UINT64_C(1000000)) < 0)
                                _exit(3);
                        sd_bus_message_unref(m);
                }
                if (sd_bus_flush(buses[i]) < 0)
                        _exit(4);
        }
        if (write(ready, "F", 1) != 1)
                _exit(5);
        for (;;)
                for (unsigned i = 0; i < n_conn && i < ELEMENTSOF(buses); i++)
                        while (sd_bus_process(buses[i], NULL) > 0)
                                ;
}

/* One user's burst of requests must not make another user's admission fail. Here nobody's burst is 256
 * calls (2 connections x 128, what dbus-daemon lets one connection have in flight) while polkit
 * hangs: edfd asks polkit for each of them, and its own connection may have only 128 calls in
 * flight, so the next request's CheckAuthorization is refused by the bus at once ("maximum number
 * of pending replies"), and edfd denies it, though polkit never said no. A request that edfd
 * could not yet put to polkit must wait (or be queued), not be denied: so the other client's
 * admission must still be unanswered while polkit hangs. */
Test(authz, a_burst_waiting_for_polkit_does_not_deny_others) {
        Harness *h = start("authz.yaml");
        uid_t victim = find_other_uid();
        Agent *a;
        Proc *p = proc_spawn(PROC_OTHER);
        AgentReply rep;
        pid_t flood, fake, parent = getpid();
        struct pollfd pfd;
        int ready[2], k;
        char byte;

        fake = hung_polkit_start(h);
        a = agent_start_as(h, victim);
        cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
        flood = fork();
        cr_assert_geq(flood, 0);
        if (flood == 0) {
                close(ready[0]);
                flooder(h->bus_address, parent, 2, 128, ready[1]);
        }
        close(ready[1]);
        cr_assert_eq(read(ready[0], &byte, 1), 1, "the flooder could not send its calls");
        close(ready[0]);
        sync_daemon(h);

        /* Root needs no polkit: a new root client (edfctl makes one each time) must get through. */
        {
                _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
                _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
                HarnessChild *c;
                int r;
                cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
                cr_assert_geq(sd_bus_new(&bus), 0);
                cr_assert_geq(sd_bus_set_address(bus, h->bus_address), 0);
                cr_assert_geq(sd_bus_set_bus_client(bus, 1), 0);
                cr_assert_geq(sd_bus_start(bus), 0);
                r = sd_bus_call_method(bus, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, "Admit", &e, &reply,
                                       "uustttt", (uint32_t) c->pid, UINT32_C(0), "open", 200 * US, UINT64_C(0), P100,
                                       UINT64_C(0));
                assert_bus_ok(r, &e,
                              "a new root client: Admit while nobody has 256 requests waiting for a hung polkit");
        }

        agent_send(a, "Admit", "uustttt", (uint64_t) p->pid, UINT64_C(0), "open", 200 * US, UINT64_C(0), P100,
                   UINT64_C(0));
        /* Bounded: a correct edfd never answers here while polkit hangs. */
        pfd = (struct pollfd) { .fd = a->fd, .events = POLLIN };
        k = poll(&pfd, 1, 1000);
        if (k > 0) {
                rep = agent_recv(a, "Admit");
                cr_assert_fail("uid %d: Admit(own process) was answered while polkit hangs, because another user has "
                               "256 requests waiting for polkit: %s: %s", (int) victim,
                               rep.r >= 0 ? "success" : rep.name, rep.message);
        }
        kill(flood, SIGKILL);
        (void) waitpid(flood, NULL, 0);
        kill(fake, SIGKILL);
        (void) waitpid(fake, NULL, 0);
        rep = agent_recv(a, "Admit");
        agent_stop(a);
        proc_free(p);
        harness_stop(h);
}
