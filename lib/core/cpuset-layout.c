/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The layout of the partitions, checked (see cpuset-layout.h). */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/strv.h"
#include "core/bandwidth.h"
#include "core/cpuset-layout.h"
#include "core/duration.h"

static const char *mask_str(const CpuMask *m, char buf[static CPU_LIST_MAX]) {
        return cpu_mask_format(m, buf, CPU_LIST_MAX) ?: "?";
}

CpuMask cpuset_layout_shared(const CpusetMachine *m, size_t n) {
        return m->backend == CPUSET_BACKEND_V2 && n > 0 ? m->shared : (CpuMask) {};
}

int cpuset_layout_union(const CpusetSpec *specs, size_t n, CpuMask *ret) {
        CpuMask u = {};

        for (size_t i = 0; i < n; i++) {
                if (cpu_mask_overlap(&u, &specs[i].cpus, NULL))
                        return -EINVAL;
                cpu_mask_or(&u, &specs[i].cpus);
        }
        *ret = u;
        return 0;
}

/* The CPUs of specs and the shared ones, each against the machine and each other. */
static int check_cpus(const CpusetMachine *m, const CpusetSpec *specs, size_t n, char ***errors, CpuMask *ret_all) {
        char a[CPU_LIST_MAX];
        CpuMask all = {}, shared;
        unsigned cpu;
        int r = 0;

        for (size_t i = 0; i < n && r >= 0; i++) {
                if (!cpu_mask_subset(&specs[i].cpus, &m->present, &cpu))
                        r = strv_appendf(errors, "partition %s: CPU %u does not exist (this machine has CPUs %s)",
                                         specs[i].name, cpu, mask_str(&m->present, a));
                else if (!cpu_mask_subset(&specs[i].cpus, &m->online, &cpu))
                        r = strv_appendf(errors, "partition %s: CPU %u is offline (online: %s)", specs[i].name, cpu,
                                         mask_str(&m->online, a));
                for (size_t j = 0; j < i && r >= 0; j++)
                        if (cpu_mask_overlap(&specs[i].cpus, &specs[j].cpus, &cpu))
                                r = strv_appendf(errors, "partitions %s and %s share CPU %u", specs[j].name,
                                                 specs[i].name, cpu);
                cpu_mask_or(&all, &specs[i].cpus);
        }
        if (r >= 0 && n > 0) {
                shared = cpuset_layout_shared(m, n);
                if (!cpu_mask_subset(&shared, &m->online, &cpu))
                        r = strv_appendf(errors, "the shared CPUs of %s: CPU %u is offline or does not exist",
                                         CPUSET_DIR, cpu);
                else if (cpu_mask_overlap(&shared, &all, &cpu))
                        r = strv_appendf(errors, "CPU %u is both shared and in a partition", cpu);
                cpu_mask_or(&all, &shared);
        }
        *ret_all = all;
        return r < 0 ? r : 0;
}

int cpuset_layout_check(const CpusetMachine *m, const CpusetSpec *specs, size_t n, const CpusetForeign *foreign,
                        size_t n_foreign, char ***errors, char ***notes) {
        char a[CPU_LIST_MAX], b[CPU_LIST_MAX];
        CpuMask all, rest;
        int r = 0;

        if (n > 0 && m->backend == CPUSET_BACKEND_NONE)
                r = strv_appendf(errors, "no partition can be made on this machine: %s", m->unavailable ?: "?");
        if (r < 0 || (r = check_cpus(m, specs, n, errors, &all)) < 0)
                return r;
        if (n == 0 || m->backend == CPUSET_BACKEND_NONE)
                return 0;

        rest = m->online;
        cpu_mask_andnot(&rest, &all);
        if (cpu_mask_empty(&rest) && m->backend == CPUSET_BACKEND_V2)
                r = strv_appendf(errors,
                                 "the partitions take every online CPU (%s): the root cgroup has tasks of its own and "
                                 "must keep one", mask_str(&m->online, a));
        else if (cpu_mask_empty(&rest))
                r = strv_appendf(notes,
                                 "the partitions take every online CPU (%s): global placement has no CPU left, and the "
                                 "root cpuset's tasks keep running on all CPUs without load balancing",
                                 mask_str(&m->online, a));
        else if (m->backend == CPUSET_BACKEND_V1)
                r = strv_appendf(notes,
                                 "cgroup v1: while edfd owns a partition the root cpuset is not load-balanced: its tasks "
                                 "stay on the CPU they run on (CPUs outside the partitions: %s)", mask_str(&rest, a));

        /* A foreign cpuset that shares a CPU with a partition is named once, with the first
         * partition that holds the first CPU they share. */
        for (size_t f = 0; f < n_foreign && r >= 0; f++) {
                unsigned cpu;

                if (!cpu_mask_overlap(&foreign[f].cpus, &all, &cpu))
                        continue;
                for (size_t i = 0; i < n; i++)
                        if (cpu_mask_test(&specs[i].cpus, cpu)) {
                                r = strv_appendf(errors,
                                                 "partition %s: CPU %u is also in cpuset %s (cpus %s), which edfd does "
                                                 "not own", specs[i].name, cpu, foreign[f].path,
                                                 mask_str(&foreign[f].cpus, b));
                                break;
                        }
        }
        return r < 0 ? r : 0;
}

/* cap = per_cpu_bw times the CPUs of mask, UINT64_MAX when that overflows. */
static uint64_t capacity_of(uint64_t per_cpu_bw, const CpuMask *mask) {
        uint64_t cap;

        if (__builtin_mul_overflow(per_cpu_bw, (uint64_t) cpu_mask_count(mask), &cap))
                return UINT64_MAX;
        return cap;
}

_printf_(2, 3) static int too_much(char **ret_error, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(ret_error, fmt, ap) < 0)
                *ret_error = NULL;
        va_end(ap);
        return -ENOSPC;
}

int cpuset_layout_fits(const CpusetMachine *m, const CpusetSpec *specs, size_t n, char *const *existing,
                       size_t n_existing, const uint64_t *bw, uint64_t per_cpu_bw, char **ret_error) {
        char a[DURATION_MAX], b[DURATION_MAX], l[CPU_LIST_MAX];
        uint64_t rest_bw = bw[n_existing], dir_bw = bw[n_existing + 1], cap;
        CpuMask all = {}, rest, shared = cpuset_layout_shared(m, n);

        if (per_cpu_bw == UINT64_MAX)
                return 0;
        /* Threads in an existing partition stay in it when it is kept with the same CPUs; the threads
         * of anything else end up in the rest (removal and change refuse non-empty partitions, so
         * this is only what a crash or another program left). */
        for (size_t i = 0; i < n_existing; i++) {
                bool kept = false;

                for (size_t j = 0; j < n && !kept; j++)
                        kept = strcmp(specs[j].name, existing[i]) == 0;
                if (!kept && bw_add(rest_bw, bw[i], &rest_bw) < 0)
                        rest_bw = UINT64_MAX;
        }
        for (size_t i = 0; i < n; i++) {
                uint64_t have = 0;

                for (size_t j = 0; j < n_existing; j++)
                        if (strcmp(existing[j], specs[i].name) == 0)
                                have = bw[j];
                cap = capacity_of(per_cpu_bw, &specs[i].cpus);
                if (have > cap)
                        return too_much(ret_error, "partition %s (cpus %s) would admit %s, but its deadline threads "
                                        "hold %s", specs[i].name, mask_str(&specs[i].cpus, l), bw_format(cap, a),
                                        bw_format(have, b));
                cpu_mask_or(&all, &specs[i].cpus);
        }

        if (n == 0 && bw_add(rest_bw, dir_bw, &rest_bw) < 0)
                rest_bw = UINT64_MAX;
        cap = capacity_of(per_cpu_bw, &shared);
        if (n > 0 && dir_bw > cap)
                return too_much(ret_error, "the shared CPUs of %s (%s) would admit %s, but its deadline threads hold %s",
                                CPUSET_DIR, cpu_mask_empty(&shared) ? "none" : mask_str(&shared, l), bw_format(cap, a),
                                bw_format(dir_bw, b));
        cpu_mask_or(&all, &shared);

        rest = m->online;
        cpu_mask_andnot(&rest, &all);
        cap = capacity_of(per_cpu_bw, &rest);
        if (rest_bw > cap)
                return too_much(ret_error, "the CPUs outside the partitions (%s) would admit %s, but the deadline "
                                "threads there hold %s: the kernel would re-add them to the rebuilt root domain "
                                "without a check", cpu_mask_empty(&rest) ? "none" : mask_str(&rest, l),
                                bw_format(cap, a), bw_format(rest_bw, b));
        return 0;
}
