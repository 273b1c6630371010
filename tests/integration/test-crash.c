/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Nothing is lost when edfd dies: admitted threads keep their parameters while it is down, and the
 * restarted daemon shows exactly the books it showed before (same ids, groups, parameters), minus
 * what exited meanwhile. A corrupt state file is kept aside and the daemon still starts. A kill at a
 * random moment during Admit or Release leaves books and kernel agreeing after the restart. A second
 * edfd on the same state directory is turned away. The tests take at most 9% of one CPU of deadline
 * bandwidth. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "shared/protocol.h"

#define MS HARNESS_MSEC
#define P100 (100 * MS)

extern char **environ;

TestSuite(crash, .fini = harness_fini, .timeout = 180);

typedef struct Admitted {
        HarnessChild *child;
        pid_t tid;
        const char *group;
        uint64_t runtime, deadline, period, flags, kernel_flags;
        uint64_t id;
} Admitted;

/* Four reservations in three groups, one of them dynamic: 2% + 2% + 1% + 1% (+ the 3% group). */
static void admit_set(Harness *h, Admitted a[4]) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        HarnessChild *c[3];
        int r;

        for (unsigned i = 0; i < 3; i++)
                cr_assert_eq(harness_spawn_child(h, i == 1 ? 2 : 1, i == 2, &c[i]), 0);
        r = harness_call(h, &e, NULL, "CreateGroup", "stt", "test/c", 3 * MS, P100);
        assert_bus_ok(r, &e, "CreateGroup(test/c)");

        a[0] = (Admitted) { c[0], c[0]->pid, "test/a", 2 * MS, 0, P100, 0, 0 };
        a[1] = (Admitted) { c[1], c[1]->tids[1], "test/b", 1 * MS, 20 * MS, 50 * MS, EDFD_ADMIT_RECLAIM,
                            SCHED_FLAG_RECLAIM };
        a[2] = (Admitted) { c[1], c[1]->pid, "test/c", 1 * MS, 0, P100, 0, 0 };
        a[3] = (Admitted) { c[2], c[2]->pid, "", 1 * MS, 0, P100, 0, 0 }; /* default group, spinning */
        for (unsigned i = 0; i < 4; i++) {
                r = harness_admit(h, &e, a[i].child->pid, a[i].tid, a[i].group, a[i].runtime, a[i].deadline,
                                  a[i].period, a[i].flags, &a[i].id);
                assert_bus_ok(r, &e, "Admit");
                if (a[i].deadline == 0)
                        a[i].deadline = a[i].period;
        }
}

static void assert_kernel_keeps(const Admitted a[4], bool skip_dead) {
        for (unsigned i = 0; i < 4; i++) {
                if (skip_dead && a[i].child->reaped)
                        continue;
                harness_assert_dl(a[i].tid, a[i].runtime, a[i].deadline, a[i].period, a[i].kernel_flags);
        }
}

/* Books of ListReservations/ListGroups before, with the reservation dead removed: its entry goes,
 * its group holds that much less. */
static void expected_without(Harness *h, uint64_t dead, char **ret_res, char **ret_groups) {
        HarnessReservation *l;
        HarnessGroup *g;
        size_t n, ng, k = 0;
        const HarnessReservation *d;
        char *group = NULL;
        uint64_t bw = 0;

        cr_assert_eq(harness_list_reservations(h, &l, &n), 0);
        d = harness_find_reservation(l, n, dead);
        cr_assert(d, "reservation %" PRIu64 " is not listed", dead);
        group = strdup(d->group);
        bw = d->bandwidth;
        for (size_t i = 0; i < n; i++) {
                if (l[i].id == dead) {
                        free(l[i].group);
                        continue;
                }
                l[k++] = l[i];
        }
        *ret_res = harness_format_reservations(l, k);
        harness_reservations_free(l, k);

        cr_assert_eq(harness_list_groups(h, &g, &ng), 0);
        for (size_t i = 0; i < ng; i++)
                if (streq(g[i].path, group)) {
                        g[i].allocated -= bw;
                        g[i].reservations--;
                }
        *ret_groups = harness_format_groups(g, ng);
        harness_groups_free(g, ng);
        free(group);
}

static void check_restart(bool kill9) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        Admitted a[4];
        char *res0, *groups0, *res1, *groups1, *exp_res, *exp_groups;
        HarnessChild *fresh;
        uint64_t id;
        int status, r;

        admit_set(h, a);
        res0 = harness_books_reservations(h);
        groups0 = harness_books_groups(h);

        /* Down: the kernel keeps every parameter. */
        status = harness_kill_daemon(h, kill9 ? SIGKILL : SIGTERM);
        if (kill9)
                cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "edfd did not die of SIGKILL");
        else
                cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "edfd did not exit cleanly on SIGTERM");
        assert_kernel_keeps(a, false);

        /* Up again: identical books. */
        cr_assert_eq(harness_start_daemon(h), 0, "edfd did not come back");
        res1 = harness_books_reservations(h);
        groups1 = harness_books_groups(h);
        cr_assert_str_eq(res1, res0, "ListReservations differs after the restart");
        cr_assert_str_eq(groups1, groups0, "ListGroups differs after the restart");
        assert_kernel_keeps(a, false);
        free(res1);
        free(groups1);

        /* Once more, and a process exits while edfd is down: it is gone from the books. */
        expected_without(h, a[0].id, &exp_res, &exp_groups);
        status = harness_kill_daemon(h, kill9 ? SIGKILL : SIGTERM);
        cr_assert_geq(status, 0);
        harness_child_kill(a[0].child);
        assert_kernel_keeps(a, true);
        cr_assert_eq(harness_start_daemon(h), 0, "edfd did not come back the second time");
        res1 = harness_books_reservations(h);
        groups1 = harness_books_groups(h);
        cr_assert_str_eq(res1, exp_res, "ListReservations after a restart in which pid %d exited", (int) a[0].child->pid);
        cr_assert_str_eq(groups1, exp_groups, "ListGroups after a restart in which pid %d exited", (int) a[0].child->pid);
        assert_kernel_keeps(a, true);
        free(res1);
        free(groups1);
        free(exp_res);
        free(exp_groups);

        /* The re-adopted reservations are really held: new ids are new, release works for real. */
        cr_assert_eq(harness_spawn_child(h, 1, false, &fresh), 0);
        r = harness_admit(h, &e, fresh->pid, 0, "test/a", 1 * MS, 0, P100, 0, &id);
        assert_bus_ok(r, &e, "Admit after the restart");
        for (unsigned i = 0; i < 4; i++)
                cr_assert_neq(id, a[i].id, "a new reservation reuses id %" PRIu64 " from before the restart", id);
        r = harness_call(h, &e, NULL, "Release", "t", a[2].id);
        assert_bus_ok(r, &e, "Release of a re-adopted reservation");
        harness_assert_other(a[2].tid);
        r = harness_call(h, &e, NULL, "RemoveGroup", "s", "test/c");
        assert_bus_ok(r, &e, "RemoveGroup of the dynamic group made before the restart");
        r = harness_call(h, &e, NULL, "Update", "tttt", a[3].id, 2 * MS, UINT64_C(0), P100);
        assert_bus_ok(r, &e, "Update of a re-adopted reservation");
        harness_assert_dl(a[3].tid, 2 * MS, P100, P100, 0);

        free(res0);
        free(groups0);
        harness_stop(h);
}

Test(crash, kill9_and_restart_readopts) {
        check_restart(true);
}

Test(crash, sigterm_and_restart_readopts) {
        check_restart(false);
}

Test(crash, dynamic_groups_survive_reload_and_restart) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        char *groups0, *groups1;
        int r;

        r = harness_call(h, &e, NULL, "CreateGroup", "stt", "test/c", 2 * MS, P100);
        assert_bus_ok(r, &e, "CreateGroup(test/c)");
        r = harness_call(h, &e, NULL, "CreateGroup", "stt", "test/c/d", 1 * MS, P100);
        assert_bus_ok(r, &e, "CreateGroup(test/c/d)");
        r = harness_call(h, &e, NULL, "SetGroup", "stt", "test/c", 3 * MS, P100);
        assert_bus_ok(r, &e, "SetGroup(test/c)");
        groups0 = harness_books_groups(h);

        r = harness_call(h, &e, NULL, "Reload", "");
        assert_bus_ok(r, &e, "Reload");
        groups1 = harness_books_groups(h);
        cr_assert_str_eq(groups1, groups0, "ListGroups differs after Reload");
        free(groups1);

        cr_assert_eq(harness_restart_daemon(h, true), 0);
        groups1 = harness_books_groups(h);
        cr_assert_str_eq(groups1, groups0, "ListGroups differs after kill -9 and restart");
        free(groups1);

        r = harness_call(h, &e, NULL, "RemoveGroup", "s", "test/c/d");
        assert_bus_ok(r, &e, "RemoveGroup(test/c/d)");
        cr_assert_eq(harness_restart_daemon(h, false), 0);
        groups1 = harness_books_groups(h);
        cr_assert(!strstr(groups1, "path=test/c/d "), "a removed dynamic group came back after a restart");
        cr_assert(strstr(groups1, "path=test/c "), "the dynamic group test/c is gone after a restart");
        free(groups1);
        free(groups0);
        harness_stop(h);
}

/* The names in the state directory starting with prefix. */
static unsigned count_prefixed(const char *dir, const char *prefix) {
        DIR *d = opendir(dir);
        struct dirent *de;
        unsigned n = 0;

        cr_assert(d, "cannot open %s", dir);
        while ((de = readdir(d)))
                if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
                        n++;
        closedir(d);
        return n;
}

/* Overwrite every regular file in the state directory but the lock with garbage; returns how many. */
static unsigned corrupt_state(const char *dir) {
        static const char garbage[] = "this is not edfd state \x01\x02\x03\xff\n{ [ \"";
        DIR *d = opendir(dir);
        struct dirent *de;
        unsigned n = 0;

        cr_assert(d, "cannot open %s", dir);
        while ((de = readdir(d))) {
                char path[4096];
                int fd;

                if (de->d_type != DT_REG || strstr(de->d_name, "lock"))
                        continue;
                snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
                fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
                cr_assert_geq(fd, 0, "cannot open %s", path);
                cr_assert_eq(write(fd, garbage, sizeof garbage - 1), (ssize_t) sizeof garbage - 1);
                close(fd);
                n++;
        }
        closedir(d);
        return n;
}

Test(crash, corrupt_state_is_kept_aside) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        HarnessChild *c;
        uint64_t id, unmanaged;
        int r;

        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        r = harness_admit(h, &e, c->pid, 0, "test/a", 2 * MS, 0, P100, 0, &id);
        assert_bus_ok(r, &e, "Admit");
        r = harness_call(h, &e, NULL, "CreateGroup", "stt", "test/c", 1 * MS, P100);
        assert_bus_ok(r, &e, "CreateGroup");

        cr_assert_geq(harness_kill_daemon(h, SIGKILL), 0);
        cr_assert_gt(corrupt_state(h->state_dir), 0, "no state file found in %s", h->state_dir);
        cr_assert_eq(count_prefixed(h->state_dir, "state.corrupt"), 0);

        cr_assert_eq(harness_start_daemon(h), 0, "edfd does not start on a corrupt state file");
        cr_assert_gt(count_prefixed(h->state_dir, "state.corrupt"), 0,
                     "the corrupt state was not kept aside as state.corrupt* in %s", h->state_dir);
        /* edfd starts from what the kernel shows: the thread it can no longer vouch for is unmanaged. */
        harness_assert_dl(c->pid, 2 * MS, P100, P100, 0);
        cr_assert_eq(harness_get_u64(h, "Unmanaged", &unmanaged), 0);
        cr_assert_geq(unmanaged, harness_bw(2 * MS, P100),
                      "the deadline thread edfd lost track of is not counted as unmanaged (%" PRIu64 ")", unmanaged);

        /* The next start does not trip over what was kept aside. */
        cr_assert_eq(harness_restart_daemon(h, false), 0);
        harness_stop(h);
}

/* The whole of a file, newly allocated (NUL-terminated; *ret_len without the NUL, may be NULL). */
static char *slurp(const char *path, size_t *ret_len) {
        FILE *f = fopen(path, "re");
        char *buf = NULL;
        size_t len = 0;

        cr_assert(f, "cannot read %s: %m", path);
        for (;;) {
                char *b = realloc(buf, len + 4096 + 1);
                size_t k;

                cr_assert(b);
                buf = b;
                k = fread(buf + len, 1, 4096, f);
                len += k;
                if (k == 0)
                        break;
        }
        cr_assert(!ferror(f), "error reading %s", path);
        fclose(f);
        buf[len] = '\0';
        if (ret_len)
                *ret_len = len;
        return buf;
}

static void spew(const char *path, const char *text, size_t len) {
        FILE *f = fopen(path, "we");

        cr_assert(f, "cannot write %s: %m", path);
        cr_assert_eq(fwrite(text, 1, len, f), len);
        cr_assert_eq(fclose(f), 0);
}

/* The one name in dir starting with prefix, as a full path (asserts there is exactly one). */
static char *only_prefixed(const char *dir, const char *prefix) {
        DIR *d = opendir(dir);
        struct dirent *de;
        char *found = NULL;

        cr_assert(d, "cannot open %s", dir);
        while ((de = readdir(d)))
                if (strncmp(de->d_name, prefix, strlen(prefix)) == 0) {
                        cr_assert(!found, "more than one %s* in %s", prefix, dir);
                        cr_assert_geq(asprintf(&found, "%s/%s", dir, de->d_name), 0);
                }
        closedir(d);
        cr_assert(found, "no %s* in %s", prefix, dir);
        return found;
}

/* Run a second edfd on h's config, state directory, cgroup root and bus, while h's edfd runs; wait
 * (at most 10 s) for it to exit. Returns its wait status; *ret_output gets what it printed. */
static int run_second_edfd(Harness *h, char **ret_output) {
        const char *binary = getenv("EDFD_BINARY");
        char *env_bus = NULL, **envp, *out = NULL;
        size_t n_env = 0, len = 0;
        uint64_t waited_ms = 0;
        int p[2], status;
        pid_t parent = getpid(), pid;

        cr_assert(binary, "EDFD_BINARY is not set");
        for (char **e = environ; *e; e++)
                n_env++;
        envp = calloc(n_env + 2, sizeof(char *));
        cr_assert(envp);
        cr_assert_geq(asprintf(&env_bus, "DBUS_SYSTEM_BUS_ADDRESS=%s", h->bus_address), 0);
        n_env = 0;
        for (char **e = environ; *e; e++)
                if (strncmp(*e, "DBUS_SYSTEM_BUS_ADDRESS=", 24) != 0 && strncmp(*e, "NOTIFY_SOCKET=", 14) != 0 &&
                    strncmp(*e, "WATCHDOG_", 9) != 0 && strncmp(*e, "LISTEN_", 7) != 0)
                        envp[n_env++] = *e;
        envp[n_env++] = env_bus;
        envp[n_env] = NULL;

        cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                char *argv[] = { (char *) binary, (char *) "--config", h->config_path, (char *) "--state-dir",
                                 h->state_dir, (char *) "--cgroup-root", h->cgroup_root, (char *) "--log-level",
                                 (char *) "debug", NULL };
                int null = open("/dev/null", O_RDONLY);

                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() != parent || null < 0 || dup2(null, 0) < 0 || dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0)
                        _exit(126);
                execve(binary, argv, envp);
                _exit(127);
        }
        close(p[1]);
        /* Read until it closes its end (it exits), at most 10 s. */
        for (;;) {
                struct pollfd pfd = { .fd = p[0], .events = POLLIN };
                char buf[4096];
                ssize_t k;
                int q = poll(&pfd, 1, 100);

                if (q < 0 && errno == EINTR)
                        continue;
                cr_assert_geq(q, 0);
                if (q == 0) {
                        waited_ms += 100;
                        if (waited_ms >= 10000)
                                break;
                        continue;
                }
                k = read(p[0], buf, sizeof buf);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                out = realloc(out, len + (size_t) k + 1);
                cr_assert(out);
                memcpy(out + len, buf, (size_t) k);
                len += (size_t) k;
        }
        close(p[0]);
        for (; waited_ms < 10000; waited_ms += 10) {
                if (waitpid(pid, &status, WNOHANG) == pid)
                        break;
                harness_usleep(10000);
        }
        if (waited_ms >= 10000) {
                kill(pid, SIGKILL);
                cr_assert_eq(waitpid(pid, &status, 0), pid);
                cr_assert_fail("a second edfd on the state directory %s still ran after 10 s (output: %s)", h->state_dir,
                               out ? out : "");
        }
        if (!out)
                out = strdup("");
        else
                out[len] = '\0';
        free(env_bus);
        free(envp);
        *ret_output = out;
        return status;
}

/* STATE_DIR/lock: one edfd per state directory. A second one leaves at once, says why, and changes
 * nothing of the first one's books or journal. */
Test(crash, second_daemon_on_the_same_state_dir_exits) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        _cleanup_free_ char *state_path = NULL, *lock_path = NULL, *journal0 = NULL, *journal1 = NULL,
                             *output = NULL;
        HarnessBooks before;
        HarnessChild *c;
        uint64_t id;
        int status, r;

        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        r = harness_admit(h, &e, c->pid, 0, "test/a", 1 * MS, 0, P100, 0, &id);
        assert_bus_ok(r, &e, "Admit");
        r = harness_call(h, &e, NULL, "CreateGroup", "stt", "test/c", 1 * MS, P100);
        assert_bus_ok(r, &e, "CreateGroup(test/c)");
        before = harness_books_take(h);
        cr_assert_geq(asprintf(&state_path, "%s/state", h->state_dir), 0);
        cr_assert_geq(asprintf(&lock_path, "%s/lock", h->state_dir), 0);
        journal0 = slurp(state_path, NULL);

        status = run_second_edfd(h, &output);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1,
                  "a second edfd on the state directory of a running one did not exit with status 1 (wait status "
                  "0x%x); it printed: %s", (unsigned) status, output);
        cr_assert(strstr(output, lock_path),
                  "a second edfd exited without naming the lock %s it could not take; it printed: %s", lock_path,
                  output);

        /* The first one is untouched: same books, same journal, nothing moved aside. */
        harness_books_assert_same(h, &before, "a second edfd tried the same state directory");
        journal1 = slurp(state_path, NULL);
        cr_assert_str_eq(journal1, journal0, "the journal changed when a second edfd tried the same state directory");
        cr_assert_eq(count_prefixed(h->state_dir, "state.corrupt"), 0);
        harness_assert_dl(c->pid, 1 * MS, P100, P100, 0);

        /* And it still works. */
        r = harness_call(h, &e, NULL, "Release", "t", id);
        assert_bus_ok(r, &e, "Release after a second edfd was turned away");
        harness_assert_other(c->pid);
        harness_books_free(&before);
        harness_stop(h);
}

/* A journal written by an edfd of another format version (a downgrade, say) is not guessed at: it is
 * kept aside whole, and edfd starts from what the kernel shows. */
Test(crash, state_of_another_version_is_kept_aside) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        _cleanup_free_ char *state_path = NULL, *journal = NULL, *other = NULL, *kept_path = NULL, *kept = NULL,
                             *log = NULL, *fresh = NULL;
        HarnessReservation *l;
        HarnessGroup *g;
        HarnessChild *c;
        size_t len, kept_len, n, ng;
        uint64_t id, unmanaged;
        int version, skip = 0, r;

        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        r = harness_admit(h, &e, c->pid, 0, "test/a", 2 * MS, 0, P100, 0, &id);
        assert_bus_ok(r, &e, "Admit");
        r = harness_call(h, &e, NULL, "CreateGroup", "stt", "test/c", 1 * MS, P100);
        assert_bus_ok(r, &e, "CreateGroup(test/c)");
        cr_assert_geq(harness_kill_daemon(h, SIGKILL), 0);

        /* The same journal, every record and checksum valid, under the header of the next version. */
        cr_assert_geq(asprintf(&state_path, "%s/state", h->state_dir), 0);
        journal = slurp(state_path, &len);
        cr_assert_eq(sscanf(journal, "edfd-state %d %n", &version, &skip), 1, "no header in %s: %.80s", state_path,
                     journal);
        cr_assert_gt(skip, 0);
        cr_assert(strstr(journal, "\nG test/c "), "the journal has no record of test/c:\n%s", journal);
        cr_assert_geq(asprintf(&other, "edfd-state %d %s", version + 1, journal + skip), 0);
        spew(state_path, other, strlen(other));
        cr_assert_eq(count_prefixed(h->state_dir, "state.corrupt"), 0);

        cr_assert_eq(harness_start_daemon(h), 0, "edfd does not start on a state file of version %d", version + 1);

        /* Kept aside, byte for byte, and the log says where and why. */
        kept_path = only_prefixed(h->state_dir, "state.corrupt");
        kept = slurp(kept_path, &kept_len);
        cr_assert(kept_len == strlen(other) && memcmp(kept, other, kept_len) == 0,
                  "%s is not the state file of version %d as it was:\n%s", kept_path, version + 1, kept);
        log = slurp(h->log_path, NULL);
        cr_assert(strstr(log, "unknown state version"), "edfd's log does not say the state version is unknown");
        {
                char both[96];
                snprintf(both, sizeof both, "version: %d, newer than this edfd's %d", version + 1, version);
                cr_assert(strstr(log, both), "edfd's log does not name both versions (%s):\n%s", both, log);
        }
        cr_assert(strstr(log, kept_path), "edfd's log does not name %s", kept_path);
        /* A new journal of this edfd's own version in its place. */
        fresh = slurp(state_path, NULL);
        cr_assert_eq(strncmp(fresh, journal, (size_t) skip), 0, "the new journal does not start with this edfd's "
                     "header: %.80s", fresh);

        /* Nothing of the other version's records was adopted: edfd starts from what the kernel shows. */
        cr_assert_eq(harness_list_reservations(h, &l, &n), 0);
        cr_assert_eq(n, 0, "%zu reservations were adopted from a state file of another version", n);
        harness_reservations_free(l, n);
        cr_assert_eq(harness_list_groups(h, &g, &ng), 0);
        cr_assert(!harness_find_group(g, ng, "test/c"), "the dynamic group test/c came back from a state file of "
                  "another version");
        harness_groups_free(g, ng);
        harness_assert_dl(c->pid, 2 * MS, P100, P100, 0);
        cr_assert_eq(harness_get_u64(h, "Unmanaged", &unmanaged), 0);
        cr_assert_geq(unmanaged, harness_bw(2 * MS, P100),
                      "the deadline thread of the unread state is not counted as unmanaged (%" PRIu64 ")", unmanaged);

        cr_assert_eq(harness_restart_daemon(h, false), 0);
        cr_assert_eq(count_prefixed(h->state_dir, "state.corrupt"), 1, "a clean restart moved a file aside");
        harness_child_kill(c);
        harness_stop(h);
}

#define DECOYS 8

/* Two unreadable journals in a row, within the same second, and kept files already in the way of
 * the names the clock gives: every file is kept, none replaced. */
Test(crash, corrupt_state_never_replaces_a_kept_file) {
        static const char *const garbage[2] = { "first garbage\n\x01\x02", "second garbage\n\x03\x04" };
        Harness *h = harness_start_or_skip("basic.yaml");
        _cleanup_free_ char *state_path = NULL;
        bool seen[2] = { false, false };
        unsigned decoys = 0;
        long long now;
        DIR *d;
        struct dirent *de;

        cr_assert_geq(asprintf(&state_path, "%s/state", h->state_dir), 0);
        cr_assert_geq(harness_kill_daemon(h, SIGKILL), 0);

        /* Files under the names of this second and the next few, and of their first "-1". */
        now = (long long) time(NULL);
        for (long long t = now; t < now + DECOYS / 2; t++)
                for (unsigned k = 0; k < 2; k++) {
                        char path[4096], text[64];

                        if (k == 0)
                                snprintf(path, sizeof path, "%s.corrupt-%lld", state_path, t);
                        else
                                snprintf(path, sizeof path, "%s.corrupt-%lld-1", state_path, t);
                        snprintf(text, sizeof text, "decoy %lld %u\n", t, k);
                        spew(path, text, strlen(text));
                        decoys++;
                }

        for (unsigned i = 0; i < 2; i++) {
                spew(state_path, garbage[i], strlen(garbage[i]));
                cr_assert_eq(harness_start_daemon(h), 0, "edfd does not start on corrupt state file %u", i + 1);
                cr_assert_eq(count_prefixed(h->state_dir, "state.corrupt"), decoys + i + 1,
                             "after corruption %u: %u files kept aside, expected %u", i + 1,
                             count_prefixed(h->state_dir, "state.corrupt"), decoys + i + 1);
                cr_assert_geq(harness_kill_daemon(h, SIGKILL), 0);
        }

        /* Every decoy as it was, and both pieces of garbage kept. */
        d = opendir(h->state_dir);
        cr_assert(d);
        while ((de = readdir(d))) {
                char path[4096];
                _cleanup_free_ char *text = NULL;
                long long t;
                unsigned k;

                if (strncmp(de->d_name, "state.corrupt-", 14) != 0)
                        continue;
                snprintf(path, sizeof path, "%s/%s", h->state_dir, de->d_name);
                text = slurp(path, NULL);
                if (sscanf(text, "decoy %lld %u", &t, &k) == 2) {
                        char want[64];

                        snprintf(want, sizeof want, "%s.corrupt-%lld%s", "state", t, k ? "-1" : "");
                        cr_assert_str_eq(de->d_name, want, "a kept file was replaced or moved: %s holds %s", path,
                                         text);
                        continue;
                }
                for (unsigned i = 0; i < 2; i++)
                        if (streq(text, garbage[i])) {
                                cr_assert(!seen[i], "corrupt state file %u was kept twice", i + 1);
                                seen[i] = true;
                        }
        }
        closedir(d);
        cr_assert(seen[0] && seen[1], "a corrupt state file was lost (first kept: %d, second kept: %d)", seen[0],
                  seen[1]);

        cr_assert_eq(harness_start_daemon(h), 0);
        harness_stop(h);
}

/* The journal's checksum (state.c): FNV-1a over the record. */
static uint32_t journal_sum(const char *s, size_t n) {
        uint32_t h = UINT32_C(2166136261);

        for (size_t i = 0; i < n; i++) {
                h ^= (unsigned char) s[i];
                h *= UINT32_C(16777619);
        }
        return h;
}

/* Append to the journal in dir what edfd writes before an Update of reservation id to runtime:
 * its last I record with that runtime. An admission's I is the reservation's only record. It goes
 * where edfd would have stored it: after the last line, over the room a killed edfd leaves
 * allocated ahead (NUL bytes, see state.h). */
static void append_update_intent(const char *dir, uint64_t id, uint64_t runtime) {
        char path[4096], prefix[64], line[1024], last[1024] = "", body[1024];
        unsigned n = 0;
        FILE *f;

        snprintf(path, sizeof path, "%s/state", dir);
        snprintf(prefix, sizeof prefix, "I %" PRIu64 " ", id);
        f = fopen(path, "re");
        cr_assert(f, "cannot read %s: %m", path);
        while (fgets(line, sizeof line, f)) {
                cr_assert(strncmp(line, "A ", 2) != 0 || strtoull(line + 2, NULL, 10) != id,
                          "the admission of %" PRIu64 " wrote an A record: %s", id, line);
                if (strncmp(line, prefix, strlen(prefix)) == 0)
                        snprintf(last, sizeof last, "%s", line);
        }
        fclose(f);
        cr_assert(*last, "no I record of reservation %" PRIu64 " in %s", id, path);

        /* "I id pid tid uid identity group runtime ..." #sum: field 7 is the runtime. */
        char *p = last, *out = body;
        for (char *tok = strtok(p, " "); tok && *tok != '#'; tok = strtok(NULL, " ")) {
                out += sprintf(out, "%s%s", out == body ? "" : " ", n == 7 ? "" : tok);
                if (n == 7)
                        out += sprintf(out, "%" PRIu64, runtime);
                n++;
        }
        cr_assert_eq(n, 13, "an I record of %u fields", n);
        size_t len;
        _cleanup_free_ char *journal = slurp(path, &len), *text = NULL;
        const char *room = memchr(journal, '\0', len);
        cr_assert(room, "a killed edfd left no room allocated ahead in %s", path);
        cr_assert_geq(asprintf(&text, "%.*s%s #%08" PRIx32 "\n", (int) (room - journal), journal, body,
                               journal_sum(body, strlen(body))), 0);
        spew(path, text, strlen(text));
}

/* edfd died after writing an Update's intent: on restart the kernel decides which of the admission
 * (its I record, the only one it writes) and the update it shows; neither is lost. */
static void intent_after_intent(bool update_applied) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        uint64_t id, want = update_applied ? 3 * MS : 2 * MS;
        HarnessReservation *l;
        HarnessChild *c;
        size_t n;
        int r;

        cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
        r = harness_admit(h, &e, c->pid, 0, "test/a", 2 * MS, 0, P100, 0, &id);
        assert_bus_ok(r, &e, "Admit");
        cr_assert_geq(harness_kill_daemon(h, SIGKILL), 0);
        append_update_intent(h->state_dir, id, 3 * MS);
        if (update_applied)
                cr_assert_eq(harness_dl_set(c->pid, 3 * MS, P100, P100, 0), 0);

        cr_assert_eq(harness_start_daemon(h), 0);
        cr_assert_eq(harness_list_reservations(h, &l, &n), 0);
        cr_assert_eq(n, 1, "the reservation was not re-adopted (%zu listed)", n);
        cr_assert_eq(l[0].id, id);
        cr_assert_eq(l[0].runtime, want, "re-adopted with runtime %" PRIu64 ", the kernel has %" PRIu64, l[0].runtime,
                     want);
        harness_reservations_free(l, n);
        harness_assert_dl(c->pid, want, P100, P100, 0);

        r = harness_call(h, &e, NULL, "ReleaseThread", "u", (uint32_t) c->pid);
        assert_bus_ok(r, &e, "ReleaseThread");
        harness_assert_other(c->pid);
        harness_child_kill(c);
        harness_stop(h);
}

Test(crash, update_intent_not_applied_keeps_the_admission) {
        intent_after_intent(false);
}

Test(crash, update_intent_applied_is_adopted) {
        intent_after_intent(true);
}

/* Kill edfd at assorted moments while it handles an Admit or a Release; after the restart the books
 * and the kernel must agree about the thread: listed with its parameters, or SCHED_OTHER and not
 * listed. */
static void send_async(Harness *h, const char *member, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        va_list ap;
        int r;

        r = sd_bus_message_new_method_call(h->bus, &m, EDFD_BUS_NAME, EDFD_BUS_PATH, EDFD_BUS_INTERFACE, member);
        cr_assert_geq(r, 0);
        va_start(ap, types);
        r = sd_bus_message_appendv(m, types, ap);
        va_end(ap);
        cr_assert_geq(r, 0);
        cr_assert_geq(sd_bus_send(h->bus, m, NULL), 0);
        cr_assert_geq(sd_bus_flush(h->bus), 0);
}

/* The books and the kernel agree about tid: listed with the kernel's very parameters (and a runtime of
 * runtime or alt_runtime), or not listed and SCHED_OTHER. */
static void assert_books_match_kernel(Harness *h, pid_t tid, uint64_t runtime, uint64_t alt_runtime, uint64_t period,
                                      const char *when) {
        HarnessReservation *l;
        size_t n;
        const HarnessReservation *x = NULL;
        SchedAttr a;

        cr_assert_eq(harness_list_reservations(h, &l, &n), 0);
        for (size_t i = 0; i < n; i++)
                if (l[i].tid == (uint32_t) tid)
                        x = &l[i];
        cr_assert_eq(harness_sched_getattr(tid, &a), 0);
        if (x) {
                cr_assert(a.sched_policy == SCHED_DEADLINE && a.sched_runtime == x->runtime &&
                          a.sched_period == x->period && a.sched_deadline == x->deadline,
                          "%s: the books hold %" PRIu64 "/%" PRIu64 " for %d, the kernel has policy %" PRIu32
                          " %" PRIu64 "/%" PRIu64, when, x->runtime, x->period, (int) tid, a.sched_policy,
                          a.sched_runtime, a.sched_period);
                cr_assert((x->runtime == runtime || x->runtime == alt_runtime) && x->period == period,
                          "%s: the books hold odd parameters %" PRIu64 "/%" PRIu64, when, x->runtime, x->period);
        } else
                cr_assert_eq(a.sched_policy, 0,
                             "%s: thread %d is not in the books but has policy %" PRIu32 " (%" PRIu64 "/%" PRIu64
                             "): a kernel change was not settled on restart",
                             when, (int) tid, a.sched_policy, a.sched_runtime, a.sched_period);
        harness_reservations_free(l, n);
}

#define ROUNDS 100
#define STEP_USEC 2

Test(crash, kill9_at_any_moment) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        Harness *h = harness_start_or_skip("basic.yaml");
        unsigned admitted = 0, updated = 0, released = 0;

        for (unsigned i = 0; i < ROUNDS; i++) {
                unsigned admit_delay = STEP_USEC * i, update_delay = STEP_USEC * ((i * 7) % ROUNDS),
                         release_delay = STEP_USEC * ((i * 17) % ROUNDS);
                HarnessReservation *l;
                HarnessChild *c;
                char when[128];
                size_t n;
                uint64_t id;
                int r;

                /* Admit, killed after 0..198 us: the kills land before, during and after the change. */
                cr_assert_eq(harness_spawn_child(h, 1, false, &c), 0);
                send_async(h, "Admit", "uustttt", (uint32_t) c->pid, UINT32_C(0), "test/a", 2 * MS, UINT64_C(0),
                           P100, UINT64_C(0));
                harness_usleep(admit_delay);
                cr_assert_geq(harness_kill_daemon(h, SIGKILL), 0);
                cr_assert_eq(harness_start_daemon(h), 0, "edfd did not restart (round %u)", i);
                snprintf(when, sizeof when, "kill -9 %u us into an Admit", admit_delay);
                assert_books_match_kernel(h, c->pid, 2 * MS, 2 * MS, P100, when);
                cr_assert_eq(harness_list_reservations(h, &l, &n), 0);
                admitted += n > 0;
                harness_reservations_free(l, n);

                /* Make sure it is admitted, then Update, killed after 0..198 us. */
                r = harness_admit(h, &e, c->pid, 0, "test/a", 2 * MS, 0, P100, 0, &id);
                if (r < 0)
                        assert_bus_error(r, &e, "Admit of the thread that survived the kill", EDFD_ERROR_ALREADY_ADMITTED);
                harness_assert_dl(c->pid, 2 * MS, P100, P100, 0);
                cr_assert_eq(harness_list_reservations(h, &l, &n), 0);
                cr_assert_eq(n, 1);
                id = l[0].id;
                harness_reservations_free(l, n);
                send_async(h, "Update", "tttt", id, 3 * MS, UINT64_C(0), P100);
                harness_usleep(update_delay);
                cr_assert_geq(harness_kill_daemon(h, SIGKILL), 0);
                cr_assert_eq(harness_start_daemon(h), 0, "edfd did not restart (round %u)", i);
                snprintf(when, sizeof when, "kill -9 %u us into an Update", update_delay);
                assert_books_match_kernel(h, c->pid, 2 * MS, 3 * MS, P100, when);
                cr_assert_eq(harness_list_reservations(h, &l, &n), 0);
                cr_assert_eq(n, 1, "%s: the reservation is gone", when);
                updated += l[0].runtime == 3 * MS;
                harness_reservations_free(l, n);

                /* Then ReleaseThread, killed after 0..198 us. */
                send_async(h, "ReleaseThread", "u", (uint32_t) c->pid);
                harness_usleep(release_delay);
                cr_assert_geq(harness_kill_daemon(h, SIGKILL), 0);
                cr_assert_eq(harness_start_daemon(h), 0, "edfd did not restart (round %u)", i);
                snprintf(when, sizeof when, "kill -9 %u us into a Release", release_delay);
                assert_books_match_kernel(h, c->pid, 2 * MS, 3 * MS, P100, when);
                cr_assert_eq(harness_list_reservations(h, &l, &n), 0);
                released += n == 0;
                harness_reservations_free(l, n);

                /* Leave nothing behind for the next round. */
                r = harness_call(h, &e, NULL, "ReleaseThread", "u", (uint32_t) c->pid);
                if (r < 0)
                        assert_bus_error(r, &e, "ReleaseThread", EDFD_ERROR_NO_SUCH_RESERVATION);
                harness_assert_other(c->pid);
                harness_child_kill(c);
        }
        /* Not an assertion (timing decides): how many kills landed after the change was made. */
        fprintf(stderr, "kill9_at_any_moment: of %d each, %u Admits, %u Updates and %u Releases were complete when "
                "edfd died\n", ROUNDS, admitted, updated, released);
        harness_assert_no_reservations(h, "after the last round");
        harness_stop(h);
}
