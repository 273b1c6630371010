/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The cpuset adapter's cgroup v1 backend against this machine's real cpuset hierarchy: partitions
 * created and removed, real admission inside one (the kernel's own EBUSY), a layout refused because
 * it would over-commit the CPUs left outside, a foreign overlapping cpuset refused by name, a crash's
 * leftovers repaired, a partition spoilt from outside noticed by the poll.
 *
 * Machine-wide state: every test starts by checking that no edfd cpuset and no test cpuset exists
 * and that the root cpuset balances (a leftover of an earlier run fails the test loudly), and puts it
 * all back in its fini, failed or not; test-cpuset.sh, which runs this binary, saves the state first
 * and restores it from a trap even when this binary is killed. Children are killed with their test
 * (PR_SET_PDEATHSIG), so no deadline task outlives it. */

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/sched-attr.h"
#include "basic/strv.h"
#include "capacity.h"
#include "core/bandwidth.h"
#include "cpuset.h"

#define V1 CPUSET_V1_MOUNT_DEFAULT
#define OWNED V1 "/" CPUSET_DIR
#define FOREIGN V1 "/edfd-test-foreign"
#define MS 1000000ULL

static char *read_all(const char *path) {
        static char buf[4096];
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return NULL;
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n < 0)
                return NULL;
        buf[n] = '\0';
        if (n > 0 && buf[n - 1] == '\n')
                buf[n - 1] = '\0';
        return buf;
}

static int write_str(const char *path, const char *s) {
        int fd = open(path, O_WRONLY | O_CLOEXEC), r = 0;

        if (fd < 0)
                return -errno;
        if (write(fd, s, strlen(s)) < 0)
                r = -errno;
        close(fd);
        return r;
}

/* --- the machine's state: checked before, restored after --- */

static void restore(void) {
        static const char *const dirs[] = { OWNED "/rt0", OWNED "/rt1", OWNED "/x", OWNED, FOREIGN };

        (void) write_str(V1 "/cpuset.sched_load_balance", "1");
        for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
                (void) rmdir(dirs[i]);
}

static void clean_start(void) {
        char *lb;

        if (geteuid() != 0)
                cr_skip_test("needs root to change cpusets");
        if (access(V1 "/cpuset.cpu_exclusive", F_OK) < 0)
                cr_skip_test("no cgroup v1 cpuset hierarchy at " V1 " (the v2 backend is tested in the VM)");
        if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
                cr_skip_test("needs 2 online CPUs (one stays outside the partition)");
        cr_assert(access(OWNED, F_OK) < 0 && access(FOREIGN, F_OK) < 0,
                  "a leftover of an earlier run: %s or %s exists (test-cpuset.sh restores it)", OWNED, FOREIGN);
        lb = read_all(V1 "/cpuset.sched_load_balance");
        cr_assert(lb && strcmp(lb, "1") == 0, "the root cpuset does not balance (sched_load_balance %s)",
                  lb ?: "unreadable");
}

TestSuite(cpuset, .init = clean_start, .fini = restore);

static uint64_t per_cpu(void) {
        KernelCapacity k;

        cr_assert_eq(capacity_read(&k), 0);
        if (k.admission_off)
                return UINT64_MAX;
        return k.usable / k.ncpus;
}

static Cpusets *open_v1(void) {
        Cpusets *c = NULL;

        cr_assert_eq(cpusets_open(&c, NULL, NULL), 0);
        cr_assert_eq(cpusets_backend(c), CPUSET_BACKEND_V1, "backend %s: %s",
                     cpuset_backend_to_string(cpusets_backend(c)), cpusets_unavailable(c) ?: "");
        return c;
}

static CpusetSpec spec(const char *name, const char *cpus) {
        CpusetSpec s = { .name = name };

        cr_assert_eq(cpu_mask_parse(cpus, strlen(cpus), &s.cpus, NULL), 0);
        return s;
}

static void apply_ok(Cpusets *c, const CpusetSpec *s, size_t n) {
        _cleanup_(strv_freep) char **notes = NULL;
        char *error = NULL;
        int r = cpusets_apply(c, s, n, per_cpu(), &error, &notes);

        for (char **p = notes; p && *p; p++)
                cr_log_info("note: %s", *p);
        cr_assert_eq(r, 0, "cpusets_apply() = %d: %s", r, error ?: "(no message)");
        free(error);
}

/* --- children that become deadline tasks on command --- */

typedef struct Child {
        pid_t pid;
        int cmd, res;
} Child;

static Child child_start(void) {
        int a[2], b[2];
        Child ch;

        cr_assert_eq(pipe2(a, O_CLOEXEC), 0);
        cr_assert_eq(pipe2(b, O_CLOEXEC), 0);
        ch.pid = fork();
        cr_assert_geq(ch.pid, 0);
        if (ch.pid == 0) {
                uint64_t rt;
                int r;

                prctl(PR_SET_PDEATHSIG, SIGKILL);
                close(a[1]);
                close(b[0]);
                while (read(a[0], &rt, sizeof rt) == sizeof rt) {
                        SchedAttr attr = { .size = sizeof attr, .sched_policy = SCHED_DEADLINE,
                                           .sched_flags = SCHED_FLAG_RESET_ON_FORK, .sched_runtime = rt,
                                           .sched_deadline = 10 * MS, .sched_period = 10 * MS };

                        r = sched_setattr_raw(0, &attr, 0);
                        if (write(b[1], &r, sizeof r) != sizeof r)
                                _exit(1);
                }
                _exit(0);
        }
        close(a[0]);
        close(b[1]);
        ch.cmd = a[1];
        ch.res = b[0];
        return ch;
}

/* Have the child ask for runtime rt every 10 ms; returns what sched_setattr said. */
static int child_deadline(Child *ch, uint64_t rt) {
        int r;

        cr_assert_eq(write(ch->cmd, &rt, sizeof rt), (ssize_t) sizeof rt);
        cr_assert_eq(read(ch->res, &r, sizeof r), (ssize_t) sizeof r);
        return r;
}

static void child_stop(Child *ch) {
        int status;

        close(ch->cmd);
        close(ch->res);
        kill(ch->pid, SIGKILL);
        waitpid(ch->pid, &status, 0);
}

static void assert_state(Cpusets *c, const char *name, CpusetState want, const char *cpus) {
        CpusetPartition *ps = NULL;
        size_t n = 0;
        char buf[CPU_LIST_MAX];
        bool found = false;

        cr_assert_eq(cpusets_list(c, &ps, &n), 0);
        for (size_t i = 0; i < n; i++)
                if (strcmp(ps[i].name, name) == 0) {
                        found = true;
                        cr_assert_eq(ps[i].state, want, "%s is %s (%s)", name, cpuset_state_to_string(ps[i].state),
                                     ps[i].reason);
                        cr_assert_str_eq(cpu_mask_format(&ps[i].cpus, buf, sizeof buf), cpus);
                }
        free(ps);
        cr_assert(found, "partition %s not listed", name);
}

/* --- the tests --- */

Test(cpuset, create_and_remove) {
        Cpusets *c = open_v1();
        CpusetSpec s = spec("rt0", "1");
        CpusetPartition *ps = NULL;
        size_t n = 1;

        apply_ok(c, &s, 1);
        cr_assert_str_eq(read_all(OWNED "/rt0/cpuset.cpus"), "1");
        cr_assert_str_eq(read_all(OWNED "/rt0/cpuset.cpu_exclusive"), "1");
        cr_assert_str_eq(read_all(OWNED "/rt0/cpuset.sched_load_balance"), "1");
        cr_assert_str_eq(read_all(OWNED "/cpuset.sched_load_balance"), "0");
        cr_assert_str_eq(read_all(V1 "/cpuset.sched_load_balance"), "0");
        assert_state(c, "rt0", CPUSET_STATE_VALID, "1");
        /* Idempotent. */
        apply_ok(c, &s, 1);
        cr_assert_eq(cpusets_poll(c, NULL, NULL), 0, "a second apply changed nothing");

        apply_ok(c, NULL, 0);
        cr_assert(access(OWNED, F_OK) < 0, "%s still there", OWNED);
        cr_assert_str_eq(read_all(V1 "/cpuset.sched_load_balance"), "1", "root balancing restored");
        cr_assert_eq(cpusets_list(c, &ps, &n), 0);
        cr_assert_eq(n, 0);
        cpusets_free(c);
}

Test(cpuset, real_admission_and_the_kernels_ebusy) {
        Cpusets *c = open_v1();
        CpusetSpec s = spec("rt0", "1");
        Child a = child_start(), b = child_start();
        char path[64], *error = NULL, *st;

        /* Pinned to CPU 1 without a partition: narrower than its root domain. */
        {
                cpu_set_t one;
                Child p = child_start();

                CPU_ZERO(&one);
                CPU_SET(1, &one);
                cr_assert_eq(sched_setaffinity(p.pid, sizeof one, &one), 0);
                cr_assert_eq(child_deadline(&p, 8 * MS), -EPERM, "a pinned task without a partition");
                child_stop(&p);
        }

        apply_ok(c, &s, 1);
        cr_assert_eq(cpusets_move_thread(c, "rt0", a.pid), 0);
        cr_assert_eq(cpusets_move_thread(c, "rt0", b.pid), 0);
        snprintf(path, sizeof path, "/proc/%d/status", (int) a.pid);
        st = read_all(path);
        cr_assert(st && strstr(st, "Cpus_allowed_list:\t1\n"), "the moved thread runs on CPU 1");
        cr_assert_eq(child_deadline(&a, 8 * MS), 0, "80%% of the partition's CPU admitted");
        cr_assert_eq(child_deadline(&b, 15 * MS / 10), -EBUSY, "a further 15%% is refused by the kernel itself");
        assert_state(c, "rt0", CPUSET_STATE_VALID, "1");

        /* A partition that holds threads is neither removed nor changed. */
        cr_assert_eq(cpusets_apply(c, NULL, 0, per_cpu(), &error, NULL), -EBUSY);
        cr_assert(error && strstr(error, "partition rt0") && strstr(error, "2 threads"), "%s", error ?: "-");
        free(error);
        error = NULL;
        cr_assert_str_eq(read_all(OWNED "/rt0/cpuset.cpus"), "1", "nothing changed");

        child_stop(&a);
        child_stop(&b);
        apply_ok(c, NULL, 0);
        cr_assert(access(OWNED, F_OK) < 0);
        cpusets_free(c);
}

/* Moves write to files the adapter keeps open: a partition removed and made again from outside
 * is found through ENODEV and opened again; one that is gone says ENOENT. */
Test(cpuset, a_move_after_the_partition_was_made_again) {
        Cpusets *c = open_v1();
        CpusetSpec s = spec("rt0", "1");
        Child a = child_start();
        char path[64], *st;

        apply_ok(c, &s, 1);
        cr_assert_eq(cpusets_move_thread(c, "rt0", a.pid), 0);
        cr_assert_eq(cpusets_move_out(c, a.pid), 0);
        cr_assert_eq(rmdir(OWNED "/rt0"), 0, "rmdir: %s", strerror(errno));
        cr_assert_eq(cpusets_move_thread(c, "rt0", a.pid), -ENOENT, "a partition that is gone");
        cr_assert_eq(cpusets_move_thread(c, "rt0", a.pid), -ENOENT, "and again, with nothing left open");
        cr_assert_eq(cpusets_move_thread(c, "rt0", a.pid), -ENOENT);
        cr_assert_eq(mkdir(OWNED "/rt0", 0755), 0, "mkdir: %s", strerror(errno));
        cr_assert_eq(write_str(OWNED "/rt0/cpuset.cpus", "1"), 0);
        cr_assert_eq(write_str(OWNED "/rt0/cpuset.mems", "0"), 0);
        cr_assert_eq(cpusets_move_thread(c, "rt0", a.pid), 0, "into the partition made again");
        snprintf(path, sizeof path, "/proc/%d/status", (int) a.pid);
        st = read_all(path);
        cr_assert(st && strstr(st, "Cpus_allowed_list:\t1\n"), "the moved thread runs on CPU 1");
        cr_assert_eq(cpusets_move_out(c, a.pid), 0);
        /* The cached file of a removed partition, then a new one of the same name. */
        cr_assert_eq(cpusets_move_thread(c, "rt0", a.pid), 0);
        cr_assert_eq(cpusets_move_out(c, a.pid), 0);
        cr_assert_eq(rmdir(OWNED "/rt0"), 0, "rmdir: %s", strerror(errno));
        cr_assert_eq(mkdir(OWNED "/rt0", 0755), 0, "mkdir: %s", strerror(errno));
        cr_assert_eq(write_str(OWNED "/rt0/cpuset.cpus", "1"), 0);
        cr_assert_eq(write_str(OWNED "/rt0/cpuset.mems", "0"), 0);
        cr_assert_eq(cpusets_move_thread(c, "rt0", a.pid), 0, "ENODEV on the old file, then the new one");
        st = read_all(path);
        cr_assert(st && strstr(st, "Cpus_allowed_list:\t1\n"), "the moved thread runs on CPU 1");
        cr_assert_eq(cpusets_move_out(c, a.pid), 0);
        child_stop(&a);
        apply_ok(c, NULL, 0);
        cr_assert(access(OWNED, F_OK) < 0);
        cpusets_free(c);
}

Test(cpuset, refused_when_the_rest_would_be_overcommitted) {
        Cpusets *c = open_v1();
        CpusetSpec s = spec("rt0", "1");
        Child a = child_start(), b = child_start();
        char *error = NULL;
        int r;

        /* 150% in the one root domain of two CPUs: fits there, not on the one CPU a partition leaves. */
        cr_assert_eq(child_deadline(&a, 75 * MS / 10), 0);
        cr_assert_eq(child_deadline(&b, 75 * MS / 10), 0);
        r = cpusets_apply(c, &s, 1, per_cpu(), &error, NULL);
        cr_assert_eq(r, -ENOSPC, "cpusets_apply() = %d: %s", r, error ?: "-");
        cr_assert(error && strstr(error, "outside the partitions (0)") && strstr(error, "150%"), "%s", error ?: "-");
        cr_assert(access(OWNED, F_OK) < 0, "nothing was created");
        cr_assert_str_eq(read_all(V1 "/cpuset.sched_load_balance"), "1");
        free(error);
        child_stop(&a);
        child_stop(&b);
        cpusets_free(c);
}

Test(cpuset, foreign_overlapping_cpuset_refused_by_name) {
        Cpusets *c;
        CpusetSpec s = spec("rt0", "1");
        _cleanup_(strv_freep) char **errors = NULL;
        char *error = NULL;

        /* What a podman run leaves behind: libpod_parent with cpus 0-1. */
        cr_assert_eq(mkdir(FOREIGN, 0755), 0, "mkdir %s: %s", FOREIGN, strerror(errno));
        cr_assert_eq(write_str(FOREIGN "/cpuset.cpus", "0-1"), 0);
        cr_assert_eq(write_str(FOREIGN "/cpuset.mems", read_all(V1 "/cpuset.mems")), 0);
        c = open_v1();
        cr_assert_eq(cpusets_check(c, &s, 1, &errors, NULL), -EINVAL);
        cr_assert_eq(strv_length(errors), 1);
        cr_assert_str_eq(errors[0], "partition rt0: CPU 1 is also in cpuset " FOREIGN " (cpus 0-1), which edfd "
                         "does not own");
        cr_assert_eq(cpusets_apply(c, &s, 1, per_cpu(), &error, NULL), -EINVAL);
        cr_assert(error && strstr(error, "edfd-test-foreign"), "%s", error ?: "-");
        cr_assert(access(OWNED, F_OK) < 0, "nothing was created");
        cr_assert_str_eq(read_all(V1 "/cpuset.sched_load_balance"), "1");
        free(error);
        cpusets_free(c);
}

Test(cpuset, check_names_every_problem) {
        Cpusets *c = open_v1();
        CpusetSpec s[] = { spec("big", "1023"), spec("a", "0-1") };
        _cleanup_(strv_freep) char **errors = NULL, **notes = NULL;

        cr_assert_eq(cpusets_check(c, s, 1, &errors, NULL), -EINVAL);
        cr_assert(strstr(errors[0], "partition big: CPU 1023 does not exist"), "%s", errors[0]);
        /* Every CPU in partitions: a note on v1, where the root cpuset keeps its tasks. */
        cr_assert_eq(cpusets_check(c, &s[1], 1, NULL, &notes), 0);
        cr_assert(notes && strstr(notes[0], "take every online CPU") && strstr(notes[0], "without load balancing"),
                  "%s", notes ? notes[0] : "-");
        cpusets_free(c);
}

static void count_change(const CpusetPartition *now, CpusetState was, void *userdata) {
        CpusetPartition *seen = userdata;

        cr_log_info("%s: %s -> %s (%s)", now->name, cpuset_state_to_string(was), cpuset_state_to_string(now->state),
                    now->reason);
        *seen = *now;
}

Test(cpuset, restart_repairs_what_a_crash_left) {
        Cpusets *c = open_v1();
        CpusetSpec s = spec("rt0", "1");
        CpusetPartition seen = {};

        /* A crash right after the directory was made and the balancing turned off, before any partition. */
        cr_assert_eq(mkdir(OWNED, 0755), 0);
        cr_assert_eq(write_str(V1 "/cpuset.sched_load_balance", "0"), 0);
        apply_ok(c, NULL, 0);
        cr_assert(access(OWNED, F_OK) < 0);
        cr_assert_str_eq(read_all(V1 "/cpuset.sched_load_balance"), "1", "balancing restored");

        /* A crash half-way through a partition: the directory exists with no CPUs. */
        cr_assert_eq(mkdir(OWNED, 0755), 0);
        cr_assert_eq(mkdir(OWNED "/rt0", 0755), 0);
        cpusets_free(c);
        c = open_v1();
        apply_ok(c, &s, 1);
        assert_state(c, "rt0", CPUSET_STATE_VALID, "1");

        /* Spoilt from outside: the poll notices. */
        cr_assert_eq(write_str(OWNED "/rt0/cpuset.sched_load_balance", "0"), 0);
        cr_assert_eq(cpusets_poll(c, count_change, &seen), 1);
        cr_assert_str_eq(seen.name, "rt0");
        cr_assert_eq(seen.state, CPUSET_STATE_INVALID);
        cr_assert_str_eq(seen.reason, "its sched_load_balance is 0");
        cr_assert_eq(cpusets_poll(c, count_change, &seen), 0, "reported once");

        /* The daemon restarts with a configuration without partitions: the old one goes. */
        cpusets_free(c);
        c = open_v1();
        apply_ok(c, &s, 1);
        assert_state(c, "rt0", CPUSET_STATE_VALID, "1");
        cpusets_free(c);
        c = open_v1();
        apply_ok(c, NULL, 0);
        cr_assert(access(OWNED, F_OK) < 0);
        cr_assert_str_eq(read_all(V1 "/cpuset.sched_load_balance"), "1");
        cpusets_free(c);
}

Test(cpuset, move_thread_refusals) {
        Cpusets *c = open_v1();

        cr_assert_eq(cpusets_move_thread(c, "rt0", getpid()), -ENOENT, "no such partition");
        cr_assert_eq(cpusets_move_thread(c, "../x", getpid()), -EINVAL);
        cr_assert_eq(cpusets_move_thread(c, "rt0", 0), -EINVAL);
        cr_assert_eq(cpusets_move_process(c, getpid()), -EOPNOTSUPP, "v1 moves threads alone");
        cpusets_free(c);
}
