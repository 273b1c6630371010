/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cpuset adapter (daemon/cpuset.h) as a command for the VM scenario, until edfd itself makes
 * its partitions at start: run-vm.sh builds it against the guest build's static libraries (and
 * libcgroup's static library, so that the guest needs no package more).
 *
 *   cpuset-probe apply [NAME=CPUS...]   make exactly these partitions (none: remove all); prints
 *                                       the notes, or the error and exits 1; _shared=CPUS sets
 *                                       the CPUs edfd-partitions keeps (v2)
 *   cpuset-probe list                   NAME CPUS STATE TASKS DL-BW REASON, one partition a line
 *   cpuset-probe poll CMD...            remember the states, run CMD (sh -c), print every change
 *   cpuset-probe move NAME TID          a thread into partition NAME
 *   cpuset-probe move-process PID       a process into the threaded domain (v2)
 *   cpuset-probe move-out PID           out again: v1 the root cpuset; v2 its cgroup of origin, which
 *                                       a process this probe did not move in has not (it stays) */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/parse.h"
#include "basic/strv.h"
#include "core/bandwidth.h"
#include "core/duration.h"
#include "cpuset.h"

static uint64_t per_cpu_bw(void) {
        FILE *f;
        long long rt = -1, per = 0;
        uint64_t bw;

        f = fopen("/proc/sys/kernel/sched_rt_runtime_us", "re");
        if (f) {
                if (fscanf(f, "%lld", &rt) != 1)
                        rt = -1;
                fclose(f);
        }
        f = fopen("/proc/sys/kernel/sched_rt_period_us", "re");
        if (f) {
                if (fscanf(f, "%lld", &per) != 1)
                        per = 0;
                fclose(f);
        }
        if (rt < 0 || per <= 0 || bw_kernel_capacity(1, rt, (uint64_t) per, &bw) < 0)
                return UINT64_MAX;
        return bw;
}

static void print_change(const CpusetPartition *p, CpusetState was, void *userdata) {
        (void) userdata;
        printf("%s %s -> %s%s%s\n", p->name, cpuset_state_to_string(was), cpuset_state_to_string(p->state),
               p->reason[0] ? ": " : "", p->reason);
}

static int pid_arg(const char *s) {
        uint32_t v;

        if (parse_u32(s, &v, NULL) < 0 || v == 0 || v > INT32_MAX) {
                fprintf(stderr, "not a pid: %s\n", s);
                exit(2);
        }
        return (int) v;
}

int main(int argc, char **argv) {
        Cpusets *c = NULL;
        int r = 0;

        if (argc < 2)
                return 2;
        if (cpusets_open(&c, NULL, NULL) < 0)
                return 1;
        if (strcmp(argv[1], "apply") == 0) {
                CpusetSpec specs[64];
                size_t n = 0;
                char *error = NULL, **notes = NULL;

                for (int i = 2; i < argc && n < 64; i++) {
                        char *eq = strchr(argv[i], '=');

                        if (!eq || cpu_mask_parse(eq + 1, strlen(eq + 1), &specs[n].cpus, NULL) < 0) {
                                fprintf(stderr, "expected NAME=CPUS: %s\n", argv[i]);
                                return 2;
                        }
                        *eq = '\0';
                        if (strcmp(argv[i], "_shared") == 0)
                                cpusets_set_shared(c, &specs[n].cpus);
                        else
                                specs[n++].name = argv[i];
                }
                r = cpusets_apply(c, specs, n, per_cpu_bw(), &error, &notes);
                for (char **p = notes; p && *p; p++)
                        printf("note: %s\n", *p);
                if (r < 0)
                        printf("error: %s (%s)\n", error ?: "-", strerror(-r));
                free(error);
                strv_free(notes);
        } else if (strcmp(argv[1], "list") == 0) {
                CpusetPartition *ps = NULL;
                size_t n = 0;

                r = cpusets_list(c, &ps, &n);
                printf("# backend %s%s%s\n", cpuset_backend_to_string(cpusets_backend(c)),
                       cpusets_unavailable(c) ? ": " : "", cpusets_unavailable(c) ?: "");
                for (size_t i = 0; i < n; i++) {
                        char cpus[CPU_LIST_MAX], bw[DURATION_MAX];

                        printf("%s %s %s %u %s %s\n", ps[i].name, cpu_mask_format(&ps[i].cpus, cpus, sizeof cpus) ?: "?",
                               cpuset_state_to_string(ps[i].state), ps[i].n_tasks, bw_format(ps[i].dl_bw, bw),
                               ps[i].reason[0] ? ps[i].reason : "-");
                }
                free(ps);
        } else if (strcmp(argv[1], "poll") == 0 && argc >= 3) {
                (void) cpusets_poll(c, NULL, NULL);
                r = system(argv[2]);
                printf("# command exit %d\n", r);
                r = cpusets_poll(c, print_change, NULL);
                printf("# %d changes\n", r);
                r = r < 0 ? r : 0;
        } else if (strcmp(argv[1], "move") == 0 && argc == 4)
                r = cpusets_move_thread(c, argv[2], pid_arg(argv[3]));
        else if (strcmp(argv[1], "move-process") == 0 && argc == 3)
                r = cpusets_move_process(c, pid_arg(argv[2]));
        else if (strcmp(argv[1], "move-out") == 0 && argc == 3)
                r = cpusets_move_out(c, pid_arg(argv[2]));
        else
                r = -EINVAL;
        if (r < 0 && strcmp(argv[1], "apply") != 0)
                printf("error: %s\n", strerror(-r));
        cpusets_free(c);
        return r < 0 ? 1 : 0;
}
