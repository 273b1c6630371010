#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Runs test-cpuset (the cgroup v1 cpuset backend against this machine's real cpusets) with the
# machine's cpuset state saved first and restored from a trap, even when the binary fails or is
# killed. The saved state lives in a file until it has been restored, so that a run killed with
# SIGKILL (where no trap runs) is repaired by the next run before it starts:
#
#   test-cpuset.sh TEST-CPUSET [ARGS...]
#
# What is saved and restored: the root cpuset's sched_load_balance; what is removed: the directory
# edfd owns (edfd-partitions, its partitions first) and the test's foreign cpuset.

set -u
v1=/sys/fs/cgroup/cpuset
saved=/run/edfd-itest-cpuset.saved

restore() {
        local lb=1 d
        [ -r "$saved" ] && lb=$(cat "$saved")
        [ -w "$v1/cpuset.sched_load_balance" ] || return 0
        echo "$lb" >"$v1/cpuset.sched_load_balance" 2>/dev/null
        for d in "$v1"/edfd-partitions/*/ "$v1"/edfd-partitions "$v1"/edfd-test-foreign; do
                [ -d "$d" ] || continue
                # Only this test's children ever sit there, and they die with it; a thread still
                # in it would make rmdir fail, and the next run then reports the leftover.
                rmdir "$d" 2>/dev/null || echo "# cannot remove $d (still holds: $(cat "$d/tasks" 2>/dev/null | tr '\n' ' '))"
        done
        rm -f "$saved"
}

if [ -e "$saved" ]; then
        echo "# a killed earlier run left $saved: restoring the cpuset state it saved"
        restore
fi
if [ -d "$v1" ] && [ -w "$v1/cpuset.sched_load_balance" ]; then
        cat "$v1/cpuset.sched_load_balance" >"$saved"
        trap restore EXIT
        trap 'exit 130' INT TERM
fi
"$@"
