/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The partitions' layout check (core/cpuset-layout.h), without root and without cpusets: what
 * cpusets_check() and cpusets_apply() refuse or remark on, decided from a machine described here.
 * The writes themselves are test-cpuset's (tests/integration) and the VM's. */

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "basic/strv.h"
#include "core/bandwidth.h"
#include "core/cpuset-layout.h"

static CpuMask cpus(const char *list) {
        const char *why = NULL;
        CpuMask m = {};

        cr_assert_eq(cpu_mask_parse(list, strlen(list), &m, &why), 0, "%s: %s", list, why ?: "");
        return m;
}

/* Four CPUs, all online unless offline names some. */
static CpusetMachine machine(CpusetBackend backend, const char *offline) {
        CpusetMachine m = { .backend = backend, .present = cpus("0-3"), .online = cpus("0-3") };

        if (offline) {
                CpuMask off = cpus(offline);
                cpu_mask_andnot(&m.online, &off);
        }
        return m;
}

static void check(const CpusetMachine *m, const CpusetSpec *s, size_t n, const CpusetForeign *f, size_t n_f,
                  const char *error, const char *note) {
        _cleanup_strv_free_ char **errors = NULL, **notes = NULL;

        cr_assert_eq(cpuset_layout_check(m, s, n, f, n_f, &errors, &notes), 0);
        if (error) {
                cr_assert_eq(strv_length(errors), 1, "one error, got %zu (first: %s)", strv_length(errors),
                             errors ? errors[0] : "none");
                cr_assert_str_eq(errors[0], error);
        } else
                cr_assert_null(errors, "no error, got: %s", errors ? errors[0] : "");
        if (note) {
                cr_assert_eq(strv_length(notes), 1);
                cr_assert_str_eq(notes[0], note);
        } else
                cr_assert_null(notes, "no note, got: %s", notes ? notes[0] : "");
}

Test(cpuset_layout, a_partition_that_fits) {
        CpusetMachine m = machine(CPUSET_BACKEND_V2, NULL);
        CpusetSpec s[] = { { "rt", cpus("2") }, { "audio", cpus("3") } };

        check(&m, s, 2, NULL, 0, NULL, NULL);
        check(&m, NULL, 0, NULL, 0, NULL, NULL); /* no partition: nothing to say */
}

Test(cpuset_layout, cpus_the_machine_lacks) {
        CpusetMachine m = machine(CPUSET_BACKEND_V2, "2");

        check(&m, (CpusetSpec[]) { { "rt", cpus("5") } }, 1, NULL, 0,
              "partition rt: CPU 5 does not exist (this machine has CPUs 0-3)", NULL);
        check(&m, (CpusetSpec[]) { { "rt", cpus("2") } }, 1, NULL, 0, "partition rt: CPU 2 is offline (online: 0-1,3)",
              NULL);
}

Test(cpuset_layout, two_partitions_on_one_cpu) {
        CpusetMachine m = machine(CPUSET_BACKEND_V2, NULL);

        check(&m, (CpusetSpec[]) { { "a", cpus("1-2") }, { "b", cpus("2-3") } }, 2, NULL, 0,
              "partitions a and b share CPU 2", NULL);
}

Test(cpuset_layout, the_shared_cpus) {
        CpusetMachine m = machine(CPUSET_BACKEND_V2, "1");
        CpuMask shared;

        m.shared = cpus("1");
        check(&m, (CpusetSpec[]) { { "a", cpus("3") } }, 1, NULL, 0,
              "the shared CPUs of edfd-partitions: CPU 1 is offline or does not exist", NULL);
        m = machine(CPUSET_BACKEND_V2, NULL);
        m.shared = cpus("3");
        check(&m, (CpusetSpec[]) { { "a", cpus("3") } }, 1, NULL, 0, "CPU 3 is both shared and in a partition", NULL);
        /* v1 moves threads alone: it keeps no CPUs of its own, whatever the configuration says. */
        m.backend = CPUSET_BACKEND_V1;
        check(&m, (CpusetSpec[]) { { "a", cpus("3") } }, 1, NULL, 0, NULL,
              "cgroup v1: while edfd owns a partition the root cpuset is not load-balanced: its tasks stay on the CPU "
              "they run on (CPUs outside the partitions: 0-2)");
        shared = cpuset_layout_shared(&m, 1);
        cr_assert(cpu_mask_empty(&shared));
        m.backend = CPUSET_BACKEND_V2;
        shared = cpuset_layout_shared(&m, 0);
        cr_assert(cpu_mask_empty(&shared), "no partition, no shared CPUs");
}

Test(cpuset_layout, every_online_cpu_taken) {
        CpusetMachine m = machine(CPUSET_BACKEND_V2, "0");
        CpusetSpec s[] = { { "a", cpus("1-3") } };

        check(&m, s, 1, NULL, 0,
              "the partitions take every online CPU (1-3): the root cgroup has tasks of its own and must keep one", NULL);
        m.backend = CPUSET_BACKEND_V1;
        check(&m, s, 1, NULL, 0, NULL,
              "the partitions take every online CPU (1-3): global placement has no CPU left, and the root cpuset's "
              "tasks keep running on all CPUs without load balancing");
}

Test(cpuset_layout, no_backend) {
        CpusetMachine m = machine(CPUSET_BACKEND_NONE, NULL);

        m.unavailable = "no cpuset controller";
        check(&m, (CpusetSpec[]) { { "a", cpus("1") } }, 1, NULL, 0,
              "no partition can be made on this machine: no cpuset controller", NULL);
        check(&m, NULL, 0, NULL, 0, NULL, NULL);
}

Test(cpuset_layout, foreign_cpusets) {
        CpusetMachine m = machine(CPUSET_BACKEND_V2, NULL);
        CpusetForeign f[] = { { "/sys/fs/cgroup/other", cpus("0-1") }, { "/sys/fs/cgroup/theirs", cpus("2-3") } };
        CpusetSpec s[] = { { "a", cpus("1") } };

        check(&m, s, 1, f, 2, "partition a: CPU 1 is also in cpuset /sys/fs/cgroup/other (cpus 0-1), which edfd does not own",
              NULL);
        /* A foreign cpuset that shares only the shared CPUs with edfd-partitions is not a partition's. */
        m.shared = cpus("3");
        check(&m, s, 1, &f[1], 1, NULL, NULL);
}

Test(cpuset_layout, union) {
        CpusetSpec s[] = { { "a", cpus("1") }, { "b", cpus("2-3") } };
        CpuMask u = cpus("0");

        cr_assert_eq(cpuset_layout_union(s, 2, &u), 0);
        cr_assert(!cpu_mask_test(&u, 0) && cpu_mask_test(&u, 1) && cpu_mask_test(&u, 3));
        s[1].cpus = cpus("1");
        cr_assert_eq(cpuset_layout_union(s, 2, &u), -EINVAL);
}

static void fits(const CpusetMachine *m, const CpusetSpec *s, size_t n, char *const *existing, const uint64_t *bw,
                 const char *error) {
        char *e = NULL;
        int r = cpuset_layout_fits(m, s, n, existing, strv_length(existing), bw, BW_UNIT / 2, &e);

        if (!error) {
                cr_assert_eq(r, 0, "fits, got %d: %s", r, e ?: "");
                return;
        }
        cr_assert_eq(r, -ENOSPC, "over-committed, got %d", r);
        cr_assert_str_eq(e, error);
        free(e);
}

/* Each CPU admits 50%: over-commit is a thread's bandwidth where the new layout's root domain has too few CPUs. */
Test(cpuset_layout, over_commit) {
        CpusetMachine m = machine(CPUSET_BACKEND_V2, NULL);
        char *existing[] = { "a", "old", NULL };
        CpusetSpec s[] = { { "a", cpus("3") } };

        /* a holds 40% on one CPU (50%): fits; the rest (0-2, 150%) holds what old had too. */
        fits(&m, s, 1, existing, (uint64_t[]) { BW_UNIT * 2 / 5, BW_UNIT / 2, BW_UNIT / 2, 0 }, NULL);
        fits(&m, s, 1, existing, (uint64_t[]) { BW_UNIT * 3 / 5, 0, 0, 0 },
             "partition a (cpus 3) would admit 50%, but its deadline threads hold 60%");
        /* old goes: its 100% joins the rest's 60%, more than the three CPUs outside admit. */
        fits(&m, s, 1, existing, (uint64_t[]) { 0, BW_UNIT, BW_UNIT * 3 / 5, 0 },
             "the CPUs outside the partitions (0-2) would admit 150%, but the deadline threads there hold 160%: the "
             "kernel would re-add them to the rebuilt root domain without a check");
        /* edfd-partitions' own threads on its shared CPUs (none: nothing admitted there). */
        fits(&m, s, 1, existing, (uint64_t[]) { 0, 0, 0, BW_UNIT / 10 },
             "the shared CPUs of edfd-partitions (none) would admit 0%, but its deadline threads hold 10%");
        m.shared = cpus("2");
        fits(&m, s, 1, existing, (uint64_t[]) { 0, 0, 0, BW_UNIT / 10 }, NULL);
        /* No partition left: edfd-partitions' threads end up outside, with everything else. */
        fits(&m, NULL, 0, existing, (uint64_t[]) { 0, 0, BW_UNIT, BW_UNIT }, NULL);
        fits(&m, NULL, 0, existing, (uint64_t[]) { BW_UNIT, BW_UNIT, BW_UNIT / 2, BW_UNIT / 2 },
             "the CPUs outside the partitions (0-3) would admit 200%, but the deadline threads there hold 300%: the "
             "kernel would re-add them to the rebuilt root domain without a check");
        /* Kernel admission off: nothing is checked. */
        cr_assert_eq(cpuset_layout_fits(&m, s, 1, existing, 2, (uint64_t[]) { UINT64_MAX, 0, 0, 0 }, UINT64_MAX, NULL), 0);
}
