/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* cgroup: edfd's cgroup v2 tree, with every path relative to a configurable root.
 *
 * A group bound to a cgroup gets a directory ROOT/REL; cgroup v2 allows no processes in inner
 * nodes, so processes admitted with "move" go into its leaf ROOT/REL/_leaf (group names cannot
 * start with "_"). The group's bandwidth is written to ROOT/REL/cpu.max where the cpu
 * controller is available, so the group's normal tasks are capped too.
 *
 * Files are written directly rather than through libcgroup: libcgroup 2.0.2 creates nothing for a
 * cgroup without a controller (this machine's v2 hierarchy has none), has no cgroup_setup_mode()
 * and crashes in cgroup_attach_task_pid(NULL, ...), so on v2 it adds risk without function. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define CGROUP_LEAF "_leaf"

/* Whether root is a cgroup v2 directory. */
bool cgroup_root_usable(const char *root);

/* Create ROOT/REL and its leaf (and missing parents), and enable the cpu controller on the way
 * where it is available. Returns 0, or negative errno. */
int cgroup_ensure(const char *root, const char *rel);

/* Write runtime/period, scaled for the kernel's limits, to ROOT/REL/cpu.max. Returns 0,
 * -ENOENT when the file does not exist (no cpu controller here), or negative errno. */
int cgroup_set_cpu_max(const char *root, const char *rel, uint64_t runtime_ns, uint64_t period_ns);

/* Move process pid into ROOT/REL/_leaf. Returns 0 or negative errno. */
int cgroup_move_process(const char *root, const char *rel, pid_t pid);

/* Remove ROOT/REL (its leaf first). -EBUSY while processes are in it. */
int cgroup_remove(const char *root, const char *rel);
