#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# edfd-trace against a real edfd on a private bus and the real kernel's tracer. Reports TAP.
#
#   test-trace.sh EDFD_TRACE EDFCTL EDFD PERIODIC PERIODIC_EXAMPLE LOCK_INVERSION
#
# An overrun made on purpose (periodic doing 3 ms of work every 10 ms on a 2 ms runtime) must show
# as throttled jobs with an overrun; a well-budgeted task (1 ms of work, 3 ms of runtime) alone must
# show no throttled job. A deadline thread that waits for a default mutex its SCHED_OTHER thread
# holds, beside CPU hogs (tests/bench/lock-inversion), has late jobs sorted as waits for that lock,
# naming the holder, its policy and what preempted it; with PTHREAD_PRIO_INHERIT its waits show as
# inherited. A thread that does not exist is a clear error. SIGINT stops a recording
# early and still reports; after SIGKILL the next run removes the stale trace instance. Throughout,
# the machine's own mounts must not change and no trace instance of ours may stay behind. Nothing
# here asserts on time. Without root, dbus-daemon, or a tracefs that can be mounted in a private
# mount namespace, the tests that need them are skipped with the reason.

set -u

trace=${1:-}
edfctl=${2:-}
edfd=${3:-}
periodic=${4:-}
periodic_example=${5:-} # examples/periodic.c: ends its jobs with edfd_job_done(), a sched_yield()
lock_inversion=${6:-}   # tests/bench/lock-inversion: a deadline thread and a fair one sharing a mutex
here=$(cd "$(dirname "$0")" && pwd)

N=org.edfd.Admission1
P=/org/edfd/Admission1
I=org.edfd.Admission1.Manager

tmp=$(mktemp -d /tmp/test-trace.XXXXXX)
bg_pids=()
workloads=() # "PID FILE": each workload started and where its output goes, shown when a test failed
trace_pids=()
bus_pid= edfd_pid= addr=

cleanup() {
        local p
        for p in "${bg_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
        wait "${bg_pids[@]}" 2>/dev/null
        [ -n "$edfd_pid" ] && kill "$edfd_pid" 2>/dev/null && wait "$edfd_pid" 2>/dev/null
        [ -n "$bus_pid" ] && kill "$bus_pid" 2>/dev/null && wait "$bus_pid" 2>/dev/null
        # A trace instance of a run of ours that this test could not end cleanly goes too.
        if [ ${#trace_pids[@]} -gt 0 ]; then
                in_tracefs sh -c 'for p; do rmdir "/sys/kernel/tracing/instances/edfd-trace-$p" 2>/dev/null; done' \
                        sh "${trace_pids[@]}"
        fi
        rm -rf "$tmp"
}
trap cleanup EXIT

. "$here/tap.sh" # ok, not_ok, skip, check, wait_for

# in_tracefs CMD...: CMD in a private mount namespace with tracefs mounted.
in_tracefs() {
        unshare -m --propagation private sh -c 'mount -t tracefs none /sys/kernel/tracing && exec "$@"' sh "$@"
}

# The lines of the machine's mount table that concern tracing, as seen from here.
tracing_mounts() {
        grep -E ' /sys/kernel/(tracing|debug/tracing) ' /proc/self/mountinfo | cut -d' ' -f3-
}

instances_of_ours() { # the trace instances named after one of our runs
        local p list
        list=$(in_tracefs ls /sys/kernel/tracing/instances) || return 1
        for p in "${trace_pids[@]}"; do
                grep -x "edfd-trace-$p" <<<"$list"
        done
        return 0
}

no_instance_left() {
        local left
        left=$(instances_of_ours)
        [ -z "$left" ] || { echo "left behind: $left"; return 1; }
}

# run_trace ARGS...: edfd-trace ARGS in the background (so that its pid is known), waited for;
# sets rc, out, err.
run_trace() {
        "$trace" "$@" >"$tmp/out" 2>"$tmp/err" &
        local p=$!
        trace_pids+=("$p")
        wait "$p"
        rc=$?
        out=$(<"$tmp/out")
        err=$(<"$tmp/err")
}

bcall() {
        busctl --address="$addr" "$@"
}

# reap PID: once the workload PID has ended, its exit status in ended[PID]. In this shell, not in a
# $(...), which cannot wait for this shell's children.
declare -A ended=()
reap() {
        if [ -z "${ended[$1]:-}" ] && ! kill -0 "$1" 2>/dev/null; then
                wait "$1" 2>/dev/null
                ended[$1]=$?
        fi
}

# workload_state PID FILE (after reap PID): whether the workload still runs, in which state and
# policy, or how it ended; then its output.
workload_state() {
        if [ -n "${ended[$1]:-}" ]; then
                echo "process $1 has ended, exit status ${ended[$1]}"
        else
                echo "process $1 runs (state $(cut -d' ' -f3 "/proc/$1/stat" 2>&1)): $(chrt -p "$1" 2>&1 | head -1)"
        fi
        echo "its output ($2):"
        cat "$2" 2>/dev/null
}

# json_check PY_EXPR: evaluates the expression on the report in $tmp/out (d; read from the file: a
# report of many late jobs is longer than one argument may be), with t = its only thread.
json_check() {
        python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); t=d["threads"][0] if d["threads"] else None
ok=eval(sys.argv[2])
if not ok:
    print(json.dumps({k: v for k, v in (t or {}).items() if k != "late_or_throttled_jobs"}, indent=1))
    print("first jobs:", json.dumps((t or {}).get("late_or_throttled_jobs", [])[:2], indent=1))
    print("every late or throttled job (job, throttled, runtime_start_ns, cpu_accounted_ns, overrun_ns):")
    for r in (t or {}).get("late_or_throttled_jobs", []):
        print(" ", r.get("job"), r.get("throttled"), r.get("runtime_start_ns"), r.get("cpu_accounted_ns"), r.get("overrun_ns"))
sys.exit(0 if ok else 1)' "$tmp/out" "$1"
}

if [ -z "$trace" ] || [ ! -x "$trace" ]; then
        echo "1..0 # SKIP no edfd-trace given (test-trace.sh EDFD_TRACE EDFCTL EDFD PERIODIC)"
        exit 0
fi

# ---- without tracing ----

run_trace --duration 10 -t 1
if [ "$rc" = 2 ] && grep -q 'invalid duration "10"' <<<"$err"; then ok "usage: a duration without a unit: exit 2"; else not_ok "usage: a duration without a unit: exit 2" "exit $rc" "$err"; fi

if [ "$(id -u)" -ne 0 ]; then
        skip "edfd-trace with the tracer" "needs root (tracefs, a mount namespace, SCHED_DEADLINE)"
        echo "1..$n"
        exit 0
fi

mounts_before=$(tracing_mounts)

run_trace -t 2147483647 -d 1s
if [ "$rc" = 1 ] && [ -z "$out" ] && [ "$err" = "edfd-trace: no such thread: 2147483647" ]; then
        ok "a thread that does not exist: exit 1, a clear error"
else
        not_ok "a thread that does not exist: exit 1, a clear error" "exit $rc" "stdout: $out" "stderr: $err"
fi

export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$tmp/no-such-bus"
run_trace -d 1s
if [ "$rc" = 3 ] && grep -q "is edfd running?" <<<"$err"; then ok "no bus: exit 3 with a hint"; else not_ok "no bus: exit 3 with a hint" "exit $rc" "$err"; fi

why_not=
if ! in_tracefs true 2>"$tmp/mount.err"; then
        why_not="tracefs cannot be mounted in a private mount namespace: $(cat "$tmp/mount.err")"
elif [ ! -x "$edfd" ] || [ ! -x "$edfctl" ] || [ ! -x "$periodic" ]; then
        why_not="no edfd, edfctl or periodic binary given"
elif ! command -v dbus-daemon >/dev/null || ! command -v busctl >/dev/null || ! command -v python3 >/dev/null; then
        why_not="needs dbus-daemon, busctl and python3"
fi

# admit_periodic RUNTIME WORK: periodic (period 10 ms) admitted by edfd; sets per_pid and res_id.
admit_periodic() {
        per_out="$tmp/periodic-$1-$2.out"
        "$edfctl" admit -T "$1" -P 10ms -- "$periodic" --work "$2" --period 10ms --duration 600s --quiet \
                >"$per_out" 2>&1 &
        per_pid=$!
        bg_pids+=("$per_pid")
        workloads+=("$per_pid $per_out")
        res_id=
        wait_for grep -qx periodic "/proc/$per_pid/comm" || return 1
        for _ in $(seq 100); do
                res_id=$(bcall --json=short call "$N" "$P" "$I" ListReservations | python3 -c 'import json,sys
print(next((e[0] for e in json.load(sys.stdin)["data"][0] if e[1]==int(sys.argv[1])), ""))' "$per_pid")
                [ -n "$res_id" ] && break
                sleep 0.05
        done
        [ -n "$res_id" ] || return 1
        sleep 0.5 # its first jobs carry exec and page faults: let them pass
}

stop_periodic() {
        reap "$per_pid" # it may have ended on its own: then that is its status
        if [ -z "${ended[$per_pid]:-}" ]; then
                kill "$per_pid" 2>/dev/null
                wait "$per_pid" 2>/dev/null
                ended[$per_pid]="$? (stopped by the test)"
        fi
}

traced_tests() {
        sed "s|@BUS_SOCKET@|$tmp/bus.sock|" "$here/bus.conf" >"$tmp/bus.conf"
        dbus-daemon --config-file="$tmp/bus.conf" --nofork --print-address=3 3>"$tmp/address" 2>"$tmp/dbus.log" &
        bus_pid=$!
        if ! wait_for test -s "$tmp/address"; then
                not_ok "a private dbus-daemon starts" "$(cat "$tmp/dbus.log")"
                return
        fi
        addr=$(head -1 "$tmp/address")
        export DBUS_SYSTEM_BUS_ADDRESS=$addr
        # reclaim off: the overrun below must be throttled (reclaim would let it run on).
        printf 'reclaim: off\ncapacity: auto\ndefault-group: apps\ngroups:\n  apps:\n    bandwidth: 40%%\n' >"$tmp/edfd.yaml"
        mkdir -p "$tmp/state"
        "$edfd" --config "$tmp/edfd.yaml" --state-dir "$tmp/state" >"$tmp/edfd.log" 2>&1 &
        edfd_pid=$!
        if ! wait_for bcall call "$N" "$P" org.freedesktop.DBus.Peer Ping; then
                not_ok "edfd starts on the private bus" "$(cat "$tmp/edfd.log")"
                return
        fi
        ok "edfd starts on the private bus"

        run_trace -d 1s
        if [ "$rc" = 1 ] && grep -q "edfd holds no reservation" <<<"$err"; then ok "no reservation: exit 1, says so"; else not_ok "no reservation: exit 1, says so" "exit $rc" "$err"; fi

        # The overrun: 3 ms of work on a 2 ms runtime.
        if ! admit_periodic 2ms 3ms; then
                reap "$per_pid"
                not_ok "periodic 2ms/10ms with 3 ms of work is admitted" "$(workload_state "$per_pid" "$per_out")"
                return
        fi
        ok "periodic 2ms/10ms with 3 ms of work is admitted (reservation #$res_id)"

        run_trace -r 999999 -d 1s
        if [ "$rc" = 1 ] && [ "$err" = "edfd-trace: no such reservation: 999999" ]; then ok "a reservation that does not exist: exit 1"; else not_ok "a reservation that does not exist: exit 1" "exit $rc" "$err"; fi

        run_trace -r "$res_id" -d 2s --json
        if [ "$rc" = 0 ]; then ok "overrun: records 2 s, exit 0"; else not_ok "overrun: records 2 s, exit 0" "exit $rc" "$err"; fi
        check "overrun: the report names the thread with its parameters" json_check \
                't["tid"]=='"$per_pid"' and t["reservation"]=='"$res_id"' and (t["runtime_ns"],t["period_ns"])==(2000000,10000000)'
        check "overrun: it saw jobs" json_check 't["jobs"] >= 10'
        check "overrun: most jobs are throttled, with cause throttled" json_check \
                't["throttled"] >= 0.8*t["jobs"] and t["causes"]["throttled"] >= 0.8*t["jobs"]'
        # The runtime a job started with is known when a sample fell between its replenishment and
        # its start; here that is about every other job (a CI run: 49 of 99, which failed a bound
        # of one half). What it used is known when a sample also fell between its end and the next
        # release: a starved sampler (an ASan run under load) may miss that, and the overrun is
        # then unknown (None), not wrong (a CI run failed this check on one job of 99 whose
        # figures it did not print; this is the likely case, and the check now prints every
        # job when it fails). Every job
        # whose start and use are both known must show the runtime it started with and an overrun,
        # and a quarter of the jobs at least must be known so.
        check "overrun: the throttled jobs show the runtime they started with and an overrun" json_check \
                'len([r for r in t["late_or_throttled_jobs"] if r["throttled"] and r["runtime_start_ns"] and r["overrun_ns"] is not None]) >= 0.25*t["jobs"] and all(0 < r["runtime_start_ns"] <= 2000000 and r["overrun_ns"] > 0 for r in t["late_or_throttled_jobs"] if r["throttled"] and r["runtime_start_ns"] and r["overrun_ns"] is not None)'
        check "overrun: no events were lost" json_check 'd["lost_events"] == 0'
        check "overrun: the replenishment timer (dl_task_timer) was traced" json_check 'd["dl_task_timer_events"]'

        run_trace -r "$res_id" -d 1s
        if [ "$rc" = 0 ] && grep -Eq "^ *$per_pid +periodic +2ms/10ms/10ms .* throttled [0-9]+" <<<"$out" &&
                grep -Eq "^$per_pid job [0-9]+ at .* cause throttled; started with .*overran by" <<<"$out"; then
                ok "overrun: the text report has the summary and one line per throttled job"
        else
                not_ok "overrun: the text report has the summary and one line per throttled job" "exit $rc" "$out" "$err"
        fi
        stop_periodic

        # The well-budgeted task, alone: 1 ms of work on 3 ms.
        if ! admit_periodic 3ms 1ms; then
                reap "$per_pid"
                not_ok "periodic 3ms/10ms with 1 ms of work is admitted" "$(workload_state "$per_pid" "$per_out")"
                return
        fi
        run_trace -d 2s --json
        if [ "$rc" = 0 ]; then ok "well budgeted: records all reservations for 2 s"; else not_ok "well budgeted: records all reservations for 2 s" "exit $rc" "$err"; fi
        check "well budgeted: one thread, jobs seen" json_check 'len(d["threads"])==1 and t["tid"]=='"$per_pid"' and t["jobs"] >= 10'
        # Not zero: this machine throttles a well-budgeted job now and then (its floor, docs/design.md:
        # the tick and the virtual machine's stalls; 1 of 802 jobs seen in CI). At most 1% is still
        # the opposite of the overrun above, where nearly every job is throttled.
        check "well budgeted: at most 1% of the jobs throttled (the machine's floor)" \
                json_check 't["throttled"] <= max(1, t["jobs"] // 100) and t["causes"]["throttled"] <= max(1, t["jobs"] // 100)'

        # SIGINT stops the recording early; the report still comes, the instance goes.
        "$trace" -d 60s --json >"$tmp/out" 2>"$tmp/err" &
        local tp=$!
        trace_pids+=("$tp")
        sleep 1
        kill -INT "$tp"
        wait "$tp"
        rc=$?
        out=$(<"$tmp/out")
        if [ "$rc" = 0 ] && json_check 'd["interrupted"] and d["recorded_ns"] < 30e9 and t["jobs"] > 0' >/dev/null; then
                ok "SIGINT: stops early, reports what was recorded, exit 0"
        else
                not_ok "SIGINT: stops early, reports what was recorded, exit 0" "exit $rc" "$(cat "$tmp/err")"
        fi
        check "SIGINT: no trace instance left" no_instance_left

        # SIGKILL leaves the instance behind; the next run removes it.
        "$trace" -d 60s >/dev/null 2>&1 &
        tp=$!
        trace_pids+=("$tp")
        wait_for sh -c "unshare -m --propagation private sh -c 'mount -t tracefs none /sys/kernel/tracing && test -d /sys/kernel/tracing/instances/edfd-trace-$tp'"
        kill -KILL "$tp"
        wait "$tp" 2>/dev/null
        if in_tracefs test -d "/sys/kernel/tracing/instances/edfd-trace-$tp"; then
                run_trace -d 200ms
                if [ "$rc" = 0 ] && grep -q "removed the stale trace instance edfd-trace-$tp" <<<"$err" &&
                        ! in_tracefs test -d "/sys/kernel/tracing/instances/edfd-trace-$tp"; then
                        ok "SIGKILL: the next run removes the stale instance and says so"
                else
                        not_ok "SIGKILL: the next run removes the stale instance and says so" "exit $rc" "$err"
                fi
        else
                not_ok "SIGKILL: the killed run had its instance" "no instances/edfd-trace-$tp"
        fi
        stop_periodic

        # A thread that ends its jobs with sched_yield() (libedfd's edfd_job_done()): its jobs are
        # seen, each ended by the yield, and a yield is not a throttle. The example runs until it is
        # stopped (60,000 jobs: 10 minutes), so that it is alive whenever the trace starts: with 400
        # (4 s from its admission) a slow start of the trace, or a wait for the admission that timed
        # out unnoticed, traced a process that had ended ("no such process").
        if [ -x "$periodic_example" ]; then
                "$periodic_example" -T 1000 -P 10000 -w 200 -n 60000 -g apps >"$tmp/example.out" 2>&1 &
                per_pid=$!
                bg_pids+=("$per_pid")
                workloads+=("$per_pid $tmp/example.out")
                if ! wait_for sh -c "grep -q '^admitted reservation' '$tmp/example.out' &&
                                     chrt -p $per_pid 2>/dev/null | grep -q SCHED_DEADLINE"; then
                        reap "$per_pid"
                        not_ok "the libedfd example is admitted and a deadline thread" \
                                "$(workload_state "$per_pid" "$tmp/example.out")"
                else
                        sleep 0.3
                        run_trace -p "$per_pid" -d 1s --json
                        if [ "$rc" = 0 ] && json_check 't["tid"]=='"$per_pid"' and t["jobs"] >= 50 and t["throttled"] <= max(1, t["jobs"] // 100)' >/dev/null; then
                                ok "jobs ended by sched_yield() (edfd_job_done): seen, and not taken for throttles"
                        else
                                reap "$per_pid"
                                not_ok "jobs ended by sched_yield() (edfd_job_done): seen, and not taken for throttles" \
                                        "exit $rc" "$out" "$err" "$(workload_state "$per_pid" "$tmp/example.out")"
                        fi
                fi
                stop_periodic
        else
                not_ok "the libedfd example (periodic-example) is given" "argument 5: '$periodic_example'"
        fi
        lock_tests
}

# lock-inversion's deadline thread (its main thread) takes the mutex 0.5 ms into each 2 ms job; the
# holder (its other thread, SCHED_OTHER) holds it for 8 ms of CPU, then sleeps 1 ms, beside a CPU
# hog on each CPU: with a default mutex most jobs wait for the holder's share of a CPU, and are late.
lock_tests() {
        local mx holder c hogs=()
        if [ ! -x "$lock_inversion" ]; then
                not_ok "the lock-inversion workload is given" "argument 6: '$lock_inversion'"
                return
        fi
        for ((c = 0; c < $(nproc); c++)); do
                taskset -c "$c" sh -c 'while :; do :; done' &
                bg_pids+=($!)
                hogs+=($!)
        done
        for mx in default pi; do
                per_out="$tmp/lock-$mx.out"
                "$lock_inversion" --admit 3ms --group apps --work 2ms --lock-at 500us --section 100us --period 10ms \
                        --hold 8ms --rest 1ms --duration 600s --skip 100ms $([ "$mx" = pi ] && echo --pi) >"$per_out" 2>&1 &
                per_pid=$!
                bg_pids+=("$per_pid")
                workloads+=("$per_pid $per_out")
                if ! wait_for sh -c "chrt -p $per_pid 2>/dev/null | grep -q SCHED_DEADLINE"; then
                        reap "$per_pid"
                        not_ok "lock-inversion ($mx mutex) is admitted" "$(workload_state "$per_pid" "$per_out")"
                        stop_periodic
                        continue
                fi
                holder=$(ls "/proc/$per_pid/task" | grep -vx "$per_pid" | head -1)
                sleep 0.3
                run_trace -p "$per_pid" -d 2s --json
                if [ "$rc" != 0 ]; then
                        not_ok "$mx mutex: records 2 s, exit 0" "exit $rc" "$err"
                elif [ "$mx" = default ]; then
                        check "default mutex: lock waits are seen inside jobs, the holder named (thread $holder, SCHED_OTHER, not PI)" json_check \
                                't["lock_waits"] >= 10 and all(w["holder_tid"] in ('"$holder"', None) and not w["pi"] for r in t["late_or_throttled_jobs"] for w in r["lock_waits"]) and len([w for r in t["late_or_throttled_jobs"] for w in r["lock_waits"] if w["holder_tid"] == '"$holder"' and w["holder_pid"] == '"$per_pid"' and w["holder_policy"] == "SCHED_OTHER"]) >= 0.9 * len([w for r in t["late_or_throttled_jobs"] for w in r["lock_waits"]]) > 0'
                        check "default mutex: late jobs sorted as cause lock, with the holder's run time and what preempted it" json_check \
                                'len([r for r in t["late_or_throttled_jobs"] if r["late"] and r["cause"] == "lock" and r["lock_waits"] and max(w["wait_ns"] for w in r["lock_waits"]) > 2000000 and any(w["holder_ran_ns"] > 0 and w["holder_preempted_by"] for w in r["lock_waits"])]) >= 3'
                        check "default mutex: its possible inversions counted" json_check 't["lock_waits_plain_woken_by_non_deadline"] >= 10'
                        run_trace -p "$per_pid" -d 1s
                        if [ "$rc" = 0 ] && grep -Eq "^$per_pid job [0-9]+ at .*cause lock; .*waited [0-9.]+m?s for a lock held by $per_pid/$holder \(lock-inversion, SCHED_OTHER\): it ran [0-9.]+u?m?s of that.*the fix: a PTHREAD_PRIO_INHERIT mutex" <<<"$out"; then
                                ok "default mutex: the text names the lock, its holder and the fix"
                        else
                                not_ok "default mutex: the text names the lock, its holder and the fix" "exit $rc" "$out" "$err"
                        fi
                else
                        check "PTHREAD_PRIO_INHERIT: its lock waits are seen as PI, none a possible inversion" json_check \
                                't["lock_waits"] >= 1 and t["lock_waits_plain_woken_by_non_deadline"] == 0 and all(w["pi"] for r in t["late_or_throttled_jobs"] for w in r["lock_waits"])'
                        run_trace -p "$per_pid" -d 2s --json --all-jobs
                        check "PTHREAD_PRIO_INHERIT: the holder ran with the waiter's deadline (inherited) while it waited" json_check \
                                'any(w["pi"] and w["holder_tid"] == '"$holder"' and w["holder_inherited_ns"] > 0 for r in t["late_or_throttled_jobs"] for w in r["lock_waits"])'
                fi
                stop_periodic
        done
        kill "${hogs[@]}" 2>/dev/null
        wait "${hogs[@]}" 2>/dev/null
}

if [ -n "$why_not" ]; then
        skip "edfd-trace against a running edfd" "$why_not"
else
        traced_tests
        if [ "$failed" -gt 0 ]; then
                for w in "${workloads[@]}"; do
                        reap "${w%% *}"
                        workload_state "${w%% *}" "${w#* }" | sed 's/^/# workload: /'
                done
                [ -s "$tmp/edfd.log" ] && sed 's/^/# edfd: /' "$tmp/edfd.log"
        fi
        check "no trace instance of ours is left" no_instance_left
fi

mounts_after=$(tracing_mounts)
if [ "$mounts_before" = "$mounts_after" ]; then
        ok "the machine's tracing mounts did not change"
else
        not_ok "the machine's tracing mounts did not change" "before: $mounts_before" "after: $mounts_after"
fi

echo "1..$n"
[ "$failed" -eq 0 ]
