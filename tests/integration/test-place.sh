#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Partitioned placement on this machine's real cgroup v1 cpusets and real kernel: edfd on a private
# bus makes one partition per CPU (each its own root domain), places each reservation of a
# partitioned group on the CPU the exact test chose, moves its thread there, and refuses what no CPU
# can take with the numbers; the kernel itself refuses what a partition cannot hold; a release moves
# the thread back out; restarts and kill -9 keep every placement; an edfd without partitions takes
# them all away again and gives the machine its load balancing back. Reports TAP.
#
#   test-place.sh EDFCTL EDFD PERIODIC SPLIT-PERIODIC
#
# Machine-wide state: the root cpuset's sched_load_balance and the directory edfd-partitions. They
# are restored on exit whatever happens (kill -9 of this script excepted: the next run, or any edfd
# started without partitions, repairs them). Only processes this script started are moved or
# signalled. The workloads are `periodic` processes of 1 ms of work every 10 ms (SCHED_OTHER until
# admitted; as deadline threads they hold up to 58% of a CPU each).

set -u
edfctl=${1:?usage: test-place.sh EDFCTL EDFD PERIODIC SPLIT-PERIODIC}
edfd=${2:?}
periodic=${3:?}
split_periodic=${4:?}
cpuset=/sys/fs/cgroup/cpuset
here=$(cd "$(dirname "$0")" && pwd)
n=0 failed=0
tmp=$(mktemp -d /tmp/test-place.XXXXXX)
chmod 711 "$tmp"
pids=() bus_pid= edfd_pid= balance_before=

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { local name=$1; shift; n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $name"; printf '#   %s\n' "$@"; }
check() { # NAME CMD...: ok when CMD succeeds
        local name=$1; shift
        if "$@" >"$tmp/check.out" 2>&1; then ok "$name"; else not_ok "$name" "$*" "$(cat "$tmp/check.out")"; fi
}
skip_all() { echo "1..0 # SKIP $1"; exit 0; }

[ "$(id -u)" = 0 ] || skip_all "needs root (cpusets and SCHED_DEADLINE)"
[ -f "$cpuset/cpuset.sched_load_balance" ] || skip_all "no cgroup v1 cpuset hierarchy at $cpuset (the VM test covers cgroup v2)"
[ "$(nproc)" -ge 2 ] || skip_all "needs two CPUs"
command -v dbus-daemon >/dev/null || skip_all "no dbus-daemon"
for d in "$cpuset"/*/; do
        [ -d "$d" ] || continue
        case $(basename "$d") in edfd-partitions) ;; *) skip_all "a foreign cpuset $d exists (edfd would refuse partitions over it; test-cpuset covers that)" ;; esac
done

restore_machine() {
        local d
        # Our own processes are gone by now; anything left in edfd's partitions is ours too (no
        # other process is ever moved there): put it back into the root cpuset.
        if [ -d "$cpuset/edfd-partitions" ]; then
                for d in "$cpuset"/edfd-partitions/*/ "$cpuset"/edfd-partitions/; do
                        [ -f "$d/tasks" ] || continue
                        while read -r t; do echo "$t" >"$cpuset/tasks" 2>/dev/null; done <"$d/tasks"
                done
                for d in "$cpuset"/edfd-partitions/*/; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
        fi
        [ -n "$balance_before" ] && echo "$balance_before" >"$cpuset/cpuset.sched_load_balance"
        rmdir "$cpuset/edfd-partitions" 2>/dev/null
        true
}

cleanup() {
        local p
        for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
        [ ${#pids[@]} -gt 0 ] && wait "${pids[@]}" 2>/dev/null
        [ -n "$edfd_pid" ] && kill -KILL "$edfd_pid" 2>/dev/null && wait "$edfd_pid" 2>/dev/null
        [ -n "$bus_pid" ] && kill "$bus_pid" 2>/dev/null && wait "$bus_pid" 2>/dev/null
        restore_machine
        rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
balance_before=$(cat "$cpuset/cpuset.sched_load_balance")
# A leftover of a killed run: the root's balancing is edfd's to restore, it was on before.
[ -d "$cpuset/edfd-partitions" ] && balance_before=1

sed "s|@BUS_SOCKET@|$tmp/bus|" "$here/bus.conf" >"$tmp/bus.conf"
dbus-daemon --config-file="$tmp/bus.conf" --nofork --print-address=3 3>"$tmp/address" 2>/dev/null &
bus_pid=$!
for _ in $(seq 100); do [ -s "$tmp/address" ] && break; sleep 0.05; done
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$tmp/bus

cat >"$tmp/partitioned.yaml" <<'EOF'
placement: partitioned
partitions:
  rt0: { cpus: "0" }
  rt1: { cpus: "1" }
groups:
  rt:
    bandwidth: 180%
EOF
cat >"$tmp/global-on-partitions.yaml" <<'EOF'
partitions:
  rt0: { cpus: "0" }
  rt1: { cpus: "1" }
groups:
  rt:
    bandwidth: 100%
EOF
cat >"$tmp/none.yaml" <<'EOF'
groups:
  rt:
    bandwidth: 100%
EOF

start_edfd() { # CONFIG
        : >"$tmp/edfd.log"
        "$edfd" -c "$1" --state-dir "$tmp/state" --log-level debug >>"$tmp/edfd.log" 2>&1 &
        edfd_pid=$!
        for _ in $(seq 200); do
                "$edfctl" status >/dev/null 2>&1 && return 0
                kill -0 "$edfd_pid" 2>/dev/null || break
                sleep 0.05
        done
        echo "# edfd did not come up:"; sed 's/^/#   /' "$tmp/edfd.log"
        return 1
}
stop_edfd() { # [SIGNAL]: a TERM must end edfd with status 0 and no sanitizer report (the ASan build)
        local st
        kill "-${1:-TERM}" "$edfd_pid" 2>/dev/null
        wait "$edfd_pid" 2>/dev/null
        st=$?
        edfd_pid=
        if [ "${1:-TERM}" = TERM ]; then
                if [ "$st" = 0 ] && ! grep -qE "Sanitizer|runtime error:" "$tmp/edfd.log"; then
                        ok "edfd stopped cleanly"
                else
                        not_ok "edfd stopped cleanly" "exit status $st" "$(tail -20 "$tmp/edfd.log")"
                fi
        fi
}
spawn() { # a periodic SCHED_OTHER process that wakes every 10 ms; its pid in $spawned (not in a
        # subshell: the pid must reach pids, which the cleanup kills)
        "$periodic" --work 1ms --period 10ms --duration 120s --quiet >/dev/null 2>&1 &
        spawned=$!
        pids+=("$spawned")
}
allowed() { awk '/^Cpus_allowed_list:/ { print $2 }' "/proc/$1/status"; }
allowed_tid() { awk '/^Cpus_allowed_list:/ { print $2 }' "/proc/$1/task/$2/status"; }
policy() { chrt -p "$1" | awk -F': ' '/policy/ { print $2; exit }'; }
cpu_of() { # ID: the cpu of reservation ID in edfctl list --json
        "$edfctl" list --json | python3 -c 'import json,sys; print([r["cpu"] for r in json.load(sys.stdin) if r["id"] == int(sys.argv[1])][0])' "$1"
}

# --- partitions made ---
start_edfd "$tmp/partitioned.yaml" || exit 1
check "edfd makes two partitions with the v1 backend" grep -q "Partitions: 2 made (cgroup-v1 backend)" "$tmp/edfd.log"
check "the partitions are exclusive cpusets of one CPU each" \
        test "$(cat $cpuset/edfd-partitions/rt0/cpuset.cpus) $(cat $cpuset/edfd-partitions/rt1/cpuset.cpus) $(cat $cpuset/edfd-partitions/rt1/cpuset.cpu_exclusive)" = "0 1 1"
check "the root cpuset is not balanced while edfd owns partitions" test "$(cat $cpuset/cpuset.sched_load_balance)" = 0

# --- placed on one CPU each, by the exact test ---
spawn; a=$spawned
spawn; b=$spawned
spawn; c=$spawned
spawn; d=$spawned
# edfctl monitor, to see the CPU in the signals; subscribed before anything is admitted.
subscribers() { busctl --address="$DBUS_SYSTEM_BUS_ADDRESS" get-property org.edfd.Admission1 /org/edfd/Admission1 \
                org.edfd.Admission1.Manager Subscribers 2>/dev/null | awk '{ print $2 }'; }
"$edfctl" monitor >"$tmp/monitor" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ "$(subscribers)" = 1 ] && break; sleep 0.05; done
sleep 0.2
ida=$("$edfctl" admit -g rt -T 5.8ms -P 10ms -p "$a" 2>"$tmp/err") || not_ok "admit a" "$(cat "$tmp/err")"
idb=$("$edfctl" admit -g rt -T 5.8ms -P 10ms -p "$b" 2>"$tmp/err") || not_ok "admit b" "$(cat "$tmp/err")"
check "the first 58% goes to cpu0 (best fit, ties to the lowest CPU)" test "$(cpu_of "$ida")" = 0
check "the second 58% goes to cpu1: two 60% tasks never share a CPU" test "$(cpu_of "$idb")" = 1
check "a's thread may run on cpu0 only" test "$(allowed "$a")" = 0
check "b's thread may run on cpu1 only" test "$(allowed "$b")" = 1
check "a is SCHED_DEADLINE" test "$(policy "$a")" = "SCHED_DEADLINE|SCHED_RESET_ON_FORK"
check "a sits in cpuset rt0" test "$(cat /proc/$a/cpuset)" = /edfd-partitions/rt0
out=$("$edfctl" admit -g rt -T 5.8ms -P 10ms -p "$c" 2>&1); rc=$?
check "the third 58% is refused with the numbers (exit 1)" \
        test "$rc: $out" = "1: edfctl: admission refused: rt: no CPU can take 58%: cpu0 32% left, cpu1 32% left; nor does moving one reservation make room"
check "the refused process was not moved" test "$(cat /proc/$c/cpuset) $(allowed "$c") $(policy "$c")" = "/ 0-1 SCHED_OTHER"
out=$("$edfctl" admit -g rt -T 4.5ms -D 5ms -P 100ms -p "$c" 2>&1); rc=$?
check "a constrained deadline that fails the demand test on both CPUs is refused by it" \
        test "$rc: $out" = "1: edfctl: admission refused: rt: no CPU can take 4.5%: cpu0 32% left but a deadline fails at 10ms (demand 10.3ms), cpu1 32% left but a deadline fails at 10ms (demand 10.3ms); nor does moving one reservation make room"
out=$("$edfctl" status 2>&1)
check "status shows each reservation's CPU" grep -Eq "#$ida +pid $a .* cpu 0$" <<<"$out"
check "status says what placement promises" grep -q "^   Placement: partitioned: the exact EDF test on each CPU$" <<<"$out"
check "status says that global placement has no CPU left" grep -q "^        Note: global placement has no CPU: the partitions take every CPU$" <<<"$out"
check "status shows each partition's capacity and allocation" \
        grep -q "^  Partitions: rt0 cpu0: 90% capacity, 58% allocated, 32% free, 1 reservation$" <<<"$out"
check "status fits 80 columns" test "$(awk '{ if (length > m) m = length } END { print m + 0 <= 80 }' <<<"$out")" = 1
check "status --json carries the partitions" test "$("$edfctl" status --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["placement"], [(p["name"], p["cpu"], p["reservations"]) for p in d["partitions"]])')" = "partitioned [('rt0', 0, 1), ('rt1', 1, 1)]"

# --- the dry run against this edfd (edfctl plan --live, the Plan method): decided now, in order,
# each task booked for the next, nothing applied ---
cat >"$tmp/plan.csv" <<'CSV'
name,runtime,deadline,period,group,split
third,5.8ms,10ms,10ms,rt,no
third-split,5.8ms,10ms,10ms,rt,yes
small,1ms,10ms,10ms,rt,no
tight,4.5ms,5ms,100ms,rt,no
lost,1ms,10ms,10ms,nosuch,no
CSV
books_before=$("$edfctl" list --json)
out=$("$edfctl" plan --live --json "$tmp/plan.csv" 2>"$tmp/err"); rc=$?
check "plan --live: exit 1 when a task is refused" test "$rc" = 1
check "plan --live: the third 58% refused, split on cpu0+cpu1 when it may split, then 10% fits nowhere" \
        test "$(python3 -c 'import json,sys; d=json.load(sys.stdin); print([(t["name"], t["result"], t["cpu"], t["cpu_stage2"]) for t in d["tasks"]])' <<<"$out")" = \
        "[('third', 'refused', None, None), ('third-split', 'split', 0, 1), ('small', 'refused', None, None), ('tight', 'refused', None, None), ('lost', 'refused', None, None)]"
reasons=$(python3 -c 'import json,sys; print("\n".join(t["reason"] or "" for t in json.load(sys.stdin)["tasks"]))' <<<"$out")
# After the split the group has 6% left (its room is checked first, as Admit checks it), and the
# constrained task meets the split's stage 2 on cpu1.
check "plan --live: each refusal with Admit's numbers, the earlier tasks booked" test "$reasons" = "rt: no CPU can take 58%: cpu0 32% left, cpu1 32% left; nor does moving one reservation make room

rt: 6% free, request needs 10%
rt: no CPU can take 4.5%: cpu0 0% left, cpu1 6% left but a deadline fails at 6.8ms (demand 7.1ms); nor does moving one reservation make room
no group \"nosuch\""
check "plan --live: the split's stages as AdmitSplit makes them" \
        test "$(python3 -c 'import json,sys; t=json.load(sys.stdin)["tasks"][1]; print(t["runtime_stage1"], t["runtime_stage2"], t["test"])' <<<"$out")" = "3200000 2600000 processor demand (QPA)"
check "plan --live changes nothing" test "$("$edfctl" list --json)" = "$books_before"
out=$("$edfctl" plan --live "$tmp/plan.csv" 2>&1)
check "plan --live: the text says what decided and that nothing was applied" \
        grep -q "^1 of 5 tasks admitted (1 split), 4 refused: decided by edfd against what it holds now; nothing applied$" <<<"$out"
out=$("$edfctl" plan --live --cpus 4 "$tmp/plan.csv" 2>&1); rc=$?
check "plan --live with --cpus: a usage error" test "$rc" = 2
spawn
idp=$("$edfctl" admit -g rt -T 1ms -P 100ms -p "$spawned" 2>&1)
check "after a plan the next admission takes the next id (the plan used none)" test "$idp" = "$((idb + 1))"
"$edfctl" release "$idp" >/dev/null 2>&1

# --- the third as a split: two stages on two CPUs ---
"$periodic" --work 1ms --period 10ms --duration 120s --tasks 2 --quiet >/dev/null 2>&1 &
e=$!
pids+=("$e")
sleep 0.2
e2=$(ls "/proc/$e/task" | grep -vx "$e" | head -1)
out=$("$edfctl" admit -g rt -T 5.8ms -P 10ms -p "$e" --split "$e2" 2>&1); rc=$?
check "admit --split: stage 1 takes what cpu0 has left, 3.2ms within 3.2ms" \
        grep -Eq "^[0-9]+ stage 1: 3\.2ms within 3\.2ms on cpu0$" <<<"$out"
check "admit --split: stage 2 takes the rest on cpu1, due with the job" \
        grep -Eq "^[0-9]+ stage 2: 2\.6ms within 6\.8ms on cpu1, released 3\.2ms after stage 1$" <<<"$out"
check "the stages' threads sit on their CPUs" test "$(allowed_tid "$e" "$e") $(allowed_tid "$e" "$e2")" = "0 1"
out=$("$edfctl" admit -g rt -T 5.8ms -P 10ms -p "$c" --split "$e2" 2>&1); rc=$?
check "a split with a thread of another process is refused" test "$rc: $out" = "1: edfctl: thread $e2 is not a thread of process $c"
out=$("$edfctl" admit -g rt -T 1ms -P 10ms -p "$c" --split "$c" 2>&1); rc=$?
check "a split with the same thread twice is refused" grep -q "two different threads" <<<"$out"
check "release the split's process" "$edfctl" release -p "$e"
# A job that fits one CPU whole, split on request: stage 2 keeps min-split-runtime (500us here).
out=$("$edfctl" admit -g rt -T 1ms -P 10ms -p "$e" --split "$e2" 2>&1); rc=$?
check "a split of a job that fits whole leaves stage 2 min-split-runtime, not a microsecond" \
        bash -c 'grep -Eq "^[0-9]+ stage 1: 500us within 500us on cpu0$" <<<"$1" && grep -Eq "^[0-9]+ stage 2: 500us within 9\.5ms on cpu1, released 500us after stage 1$" <<<"$1"' _ "$out"
check "release it" "$edfctl" release -p "$e"
before=$("$edfctl" list 2>&1)
out=$("$edfctl" admit -g rt -T 900us -P 10ms -p "$e" --split "$e2" 2>&1); rc=$?
check "a split below twice min-split-runtime is refused with the reason, exit 2, nothing admitted" \
        test "$rc: $out: $("$edfctl" list 2>&1)" = "2: edfctl: invalid parameters: rt: a split leaves each stage at least min-split-runtime (500us): a runtime of 900us cannot be split: $before"
out=$("$split_periodic" --group rt --runtime 5.8ms --period 10ms --work 2ms --duration 1s 2>&1); rc=$?
check "split-periodic, the example, admits itself in two stages and runs" \
        grep -Eq "stage 1 3\.2ms within 3\.2ms on cpu0 .* stage 2 2\.6ms within 6\.8ms on cpu1" <<<"$out"
check "split-periodic ran its jobs and exited 0" grep -Eq "^split-periodic: [0-9]+ jobs" <<<"$rc $out"
n_res() { "$edfctl" list --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
for _ in $(seq 100); do [ "$(n_res)" = 2 ] && break; sleep 0.05; done
check "split-periodic's stages ended with it" test "$(n_res)" = 2

# --- the kernel itself holds each partition to its CPU ---
echo "$d" >"$cpuset/edfd-partitions/rt0/tasks"
sleep 0.05
if chrt -d -T 4000000 -D 10000000 -P 10000000 -p 0 "$d" 2>"$tmp/err"; then
        not_ok "the kernel refuses 40% more on cpu0's partition (58% + 40% > 90%)" "chrt succeeded"
        chrt -o -p 0 "$d"
else
        check "the kernel refuses 40% more on cpu0's partition (58% + 40% > 90%)" grep -q "Device or resource busy" "$tmp/err"
fi
echo "$d" >"$cpuset/tasks"

# --- release moves the thread back out ---
check "release a" "$edfctl" release -p "$a"
check "a is back in the root cpuset, on every CPU, SCHED_OTHER" test "$(cat /proc/$a/cpuset) $(allowed "$a") $(policy "$a")" = "/ 0-1 SCHED_OTHER"

# --- a partition made invalid from outside: its reservation moves where the test passes ---
echo 0 >"$cpuset/edfd-partitions/rt1/cpuset.sched_load_balance"
for _ in $(seq 100); do [ "$(cpu_of "$idb")" = 0 ] && break; sleep 0.05; done
check "a partition made invalid from outside is noticed: b moved to cpu0, where it fits" \
        test "$(cpu_of "$idb") $(allowed "$b") $(policy "$b")" = "0 0 SCHED_DEADLINE|SCHED_RESET_ON_FORK"
check "the move is logged with its reason" grep -q "Reservation $idb (thread $b) moved from cpu1 to cpu0: its partition is no longer valid" "$tmp/edfd.log"
check "monitor shows where each was placed: added #$ida ... in rt on cpu0, added #$idb ... on cpu1" \
        grep -Eq "added +#$ida pid $a tid $a \(periodic\) in rt on cpu0 \(requested\)" "$tmp/monitor"
check "... and #$idb on cpu1" grep -Eq "added +#$idb pid $b tid $b \(periodic\) in rt on cpu1 \(requested\)" "$tmp/monitor"
check "monitor shows the move: changed #$idb now 5.8ms/10ms/10ms on cpu0 (partition)" \
        grep -Eq "changed +#$idb now 5\.8ms/10ms/10ms on cpu0 \(partition\)" "$tmp/monitor"
check "status names the invalid partition" grep -q "Note: partition rt1 (cpu1) is invalid: its sched_load_balance is 0" <<<"$("$edfctl" status)"
out=$("$edfctl" admit -g rt -T 1ms -P 10ms -p "$d" 2>&1); rc=$?
check "nothing is placed on an invalid partition (a 10% request goes where b is)" test "$rc $(cpu_of "$out" 2>/dev/null)" = "0 0"
"$edfctl" release -p "$d" >/dev/null
echo 1 >"$cpuset/edfd-partitions/rt1/cpuset.sched_load_balance"
for _ in $(seq 100); do "$edfctl" status | grep -q "Note: partition rt1" || break; sleep 0.05; done
check "the partition is used again once it is valid" test -z "$("$edfctl" status | grep "Note: partition rt1")"

idc=$("$edfctl" admit -g rt -T 5.8ms -P 10ms -p "$c" 2>"$tmp/err") || not_ok "admit c after the release" "$(cat "$tmp/err")"
check "c takes the CPU b left" test "$(cpu_of "$idc")" = 1

# --- restart and kill -9 keep every placement ---
stop_edfd TERM
start_edfd "$tmp/partitioned.yaml" || exit 1
check "after a restart, b is still on cpu0 and c on cpu1" test "$(cpu_of "$idb") $(cpu_of "$idc")" = "0 1"
stop_edfd KILL
check "after kill -9 the threads keep running where they were" test "$(allowed "$b") $(allowed "$c") $(policy "$b")" = "0 1 SCHED_DEADLINE|SCHED_RESET_ON_FORK"
start_edfd "$tmp/partitioned.yaml" || exit 1
check "after kill -9 and a restart, the placements are re-adopted" test "$(cpu_of "$idb") $(cpu_of "$idc")" = "0 1"
out=$("$edfctl" admit -g rt -T 5.8ms -P 10ms -p "$a" 2>&1); rc=$?
check "and the books still refuse a third 58%" grep -q "no CPU can take 58%" <<<"$out"

# --- an invalid partition whose reservation fits nowhere else: released, with the reason ---
echo 0 >"$cpuset/edfd-partitions/rt1/cpuset.sched_load_balance"
# The release puts it back to SCHED_OTHER, then moves it out of the partition (the move waits
# for an RCU grace period): wait for both.
for _ in $(seq 100); do [ "$(policy "$c") $(cat /proc/$c/cpuset)" = "SCHED_OTHER /" ] && break; sleep 0.05; done
check "c, which fits no other CPU, is released when its partition turns invalid" \
        test "$(policy "$c") $(cat /proc/$c/cpuset)" = "SCHED_OTHER /"
check "the release is logged with its reason" \
        grep -q "Reservation $idc (thread $c) released: its partition (cpu1) is no longer valid and no other CPU can take it" "$tmp/edfd.log"
echo 1 >"$cpuset/edfd-partitions/rt1/cpuset.sched_load_balance"
for _ in $(seq 100); do "$edfctl" status | grep -q "Note: partition rt1" || break; sleep 0.05; done

check "release everything" "$edfctl" release -p "$b"

# --- room by one move: what best fit packed badly, one move of a sleeping thread repairs ---
# Best fit puts 35% and 35% on cpu0 and 50% on cpu1; a second 50% fits no CPU whole (cpu0 20% left,
# cpu1 40%), yet {35, 50} and {35, 50} hold. The smallest candidate, the first 35%, moves to cpu1
# while it sleeps between jobs, and the 50% takes cpu0. The moved task runs 3 ms of work every
# 10 ms all along and must miss nothing.
"$edfctl" monitor >"$tmp/monitor-room" 2>&1 &
pids+=($!)
sleep 0.5 # subscribed (the first monitor's edfd is gone)
"$periodic" --work 3ms --period 10ms --duration 6s --skip 1s >"$tmp/moved.out" 2>&1 & # skip: before its admission
ra=$!; pids+=("$ra")
spawn; rb=$spawned
spawn; rc_=$spawned
spawn; rd=$spawned
idra=$("$edfctl" admit -g rt -T 3.5ms -P 10ms -p "$ra" 2>"$tmp/err") || not_ok "admit the 35% that will move" "$(cat "$tmp/err")"
idrb=$("$edfctl" admit -g rt -T 3.5ms -P 10ms -p "$rb" 2>"$tmp/err") || not_ok "admit the second 35%" "$(cat "$tmp/err")"
idrc=$("$edfctl" admit -g rt -T 5ms -P 10ms -p "$rc_" 2>"$tmp/err") || not_ok "admit the first 50%" "$(cat "$tmp/err")"
check "best fit packs both 35% on cpu0 and the 50% on cpu1" test "$(cpu_of "$idra") $(cpu_of "$idrb") $(cpu_of "$idrc")" = "0 0 1"
sleep 1.5 # past the moved task's skip: the move falls in the jobs it counts
idrd=$("$edfctl" admit -g rt -T 5ms -P 10ms -p "$rd" 2>"$tmp/err"); st=$?
check "the second 50%, which no CPU takes whole, is admitted after one move" test "$st" = 0
[ "$st" = 0 ] || { sed 's/^/#   /' "$tmp/err"; tail -20 "$tmp/edfd.log" | sed 's/^/#   /'; }
check "it takes cpu0, and the first 35% now holds cpu1" test "$(cpu_of "$idrd") $(cpu_of "$idra") $(cpu_of "$idrb")" = "0 1 0"
check "the moved thread sits in rt1, runs on cpu1 only, still SCHED_DEADLINE" \
        test "$(cat /proc/$ra/cpuset) $(allowed "$ra") $(policy "$ra")" = "/edfd-partitions/rt1 1 SCHED_DEADLINE|SCHED_RESET_ON_FORK"
echo "$d" >"$cpuset/edfd-partitions/rt1/tasks"
sleep 0.05
if chrt -d -T 1000000 -D 10000000 -P 10000000 -p 0 "$d" 2>"$tmp/err"; then
        not_ok "the kernel's books agree: cpu1's partition refuses 10% more (50% + 35% + 10% > 90%)" "chrt succeeded"
        chrt -o -p 0 "$d"
else
        check "the kernel's books agree: cpu1's partition refuses 10% more (50% + 35% + 10% > 90%)" \
                grep -q "Device or resource busy" "$tmp/err"
fi
echo "$d" >"$cpuset/tasks"
check "the move is logged with its reason" \
        grep -q "Reservation $idra (thread $ra) moved from cpu0 to cpu1 to make room for a request of rt" "$tmp/edfd.log"
for _ in $(seq 100); do grep -Eq "changed +#$idra .*\(room\)" "$tmp/monitor-room" && break; sleep 0.05; done
check "monitor shows the move: changed #$idra now 3.5ms/10ms/10ms on cpu1 (room)" \
        grep -Eq "changed +#$idra now 3\.5ms/10ms/10ms on cpu1 \(room\)" "$tmp/monitor-room"
wait "$ra"
check "the moved task missed no deadline across the move ($(cat "$tmp/moved.out"))" \
        grep -Eq "^periodic: [0-9]+ jobs, 0 deadline misses" "$tmp/moved.out"
stop_edfd KILL
start_edfd "$tmp/partitioned.yaml" || exit 1
check "after kill -9 and a restart the new placements are re-adopted" test "$(cpu_of "$idrd") $(cpu_of "$idrb")" = "0 0"
for x in "$rb" "$rc_" "$rd"; do "$edfctl" release -p "$x" >/dev/null 2>&1; done
check "the books are empty again" test "$(n_res)" = 0

# --- a global group where the partitions take every CPU ---
stop_edfd TERM
start_edfd "$tmp/global-on-partitions.yaml" || exit 1
out=$("$edfctl" admit -g rt -T 1ms -P 10ms -p "$a" 2>&1); rc=$?
check "global placement is refused when the partitions take every CPU" \
        grep -q "placement is global, but edfd's partitions take every CPU" <<<"$out"

# --- partition-shared-cpus is cgroup v2's (the VM proves it there): v1 says it ignores it ---
stop_edfd TERM
cat >"$tmp/shared.yaml" <<'EOF'
partition-shared-cpus: "0"
partitions:
  rt1: { cpus: "1" }
groups:
  rt:
    bandwidth: 50%
    placement: partitioned
EOF
start_edfd "$tmp/shared.yaml" || exit 1
check "partition-shared-cpus on v1: a note that it is ignored (v1 moves threads alone), the partition made" \
        grep -q "Partitions: partition-shared-cpus is ignored on cgroup-v1 (it moves threads alone)" "$tmp/edfd.log"
check "and no warning about edfd-partitions' own CPUs, which is v2's" \
        sh -c '! grep -q "keeps no CPU of its own" "$1" && grep -q "Partitions: 1 made (cgroup-v1 backend)" "$1"' _ "$tmp/edfd.log"

# --- reclaim (on unless the configuration says otherwise): what edfd applies, what status says,
# and what the kernel's GRUB then does on one CPU: a reservation that overruns its budget finishes
# its jobs in idle time, and the well-budgeted ones beside it keep their deadlines ---
stop_edfd TERM
cat >"$tmp/reclaim.yaml" <<'YAML'
placement: partitioned
partitions:
  rt0: { cpus: "0" }
  rt1: { cpus: "1" }
groups:
  rt:
    bandwidth: 100%
  strict:
    bandwidth: 50%
    reclaim: off
YAML
start_edfd "$tmp/reclaim.yaml" || exit 1
dl_flags() { # PID: the kernel's sched_flags of its main thread (sched_getattr), in decimal
        python3 -c 'import ctypes, os, struct, sys
buf = ctypes.create_string_buffer(56)
libc = ctypes.CDLL(None, use_errno=True)
if libc.syscall(315, int(sys.argv[1]), buf, 56, 0) != 0:
        sys.exit("sched_getattr: " + os.strerror(ctypes.get_errno()))
print(struct.unpack_from("=IIQ", buf.raw)[2])' "$1"
}
reclaims() { [ $(( $(dl_flags "$1") & 2 )) = 2 ]; }
spawn; r1=$spawned
spawn; r2=$spawned
spawn; r3=$spawned
"$edfctl" admit -g rt -T 1ms -P 10ms -p "$r1" >/dev/null 2>"$tmp/err" || not_ok "admit into rt" "$(cat "$tmp/err")"
"$edfctl" admit -g strict -T 1ms -P 10ms -p "$r2" >/dev/null 2>"$tmp/err" || not_ok "admit into strict" "$(cat "$tmp/err")"
"$edfctl" admit -g strict --reclaim -T 1ms -P 10ms -p "$r3" >/dev/null 2>"$tmp/err" ||
        not_ok "admit into strict with --reclaim" "$(cat "$tmp/err")"
check "a configuration that does not say reclaims: the kernel has SCHED_FLAG_RECLAIM" reclaims "$r1"
check "a group with reclaim: off does not" sh -c '! [ $(( $1 & 2 )) = 2 ]' _ "$(dl_flags "$r2")"
check "a request's --reclaim holds in a group that does not reclaim" reclaims "$r3"
check "edfctl list shows the flag edfd applied" test "$("$edfctl" list --json | python3 -c 'import json,sys
print(" ".join(str("reclaim" in r["flag_names"]) for r in sorted(json.load(sys.stdin), key=lambda r: r["id"])))')" = "True False True"
# The promise lines, wrapped at 80 columns: read them joined.
out=$("$edfctl" status 2>&1 | awk '/^     Promise: / { if (p) print p; p = $0; next } p && /^              / { sub(/^ +/, " "); p = p $0; next }
        p { print p; p = "" } END { if (p) print p }')
check "status: the promise of partitioned groups that reclaim, and why" grep -Fq \
        "     Promise: deadlines for /, rt (partitioned: the exact EDF test on each CPU; reclaim on: a job that overruns its runtime goes on in idle time)" <<<"$out"
check "status: and of the group that does not reclaim" grep -Fq \
        "     Promise: deadlines for strict (partitioned: the exact EDF test on each CPU; reclaim off: a job that overruns its runtime waits for its next period)" <<<"$out"
check "status --json: each group's placement, reclaim and promise" test "$("$edfctl" status --json | python3 -c 'import json,sys
print(" ".join("%s:%s:%s:%s" % (g["path"], g["placement"], g["reclaim"], g["promise"]) for g in json.load(sys.stdin)["groups"]))')" = \
        "/:partitioned:True:deadlines rt:partitioned:True:deadlines strict:partitioned:False:deadlines"
check "edfd --check-config shows the reclaim of each group" \
        sh -c '"$1" --check-config "$2" | grep -Eq "^  strict .* off +- +anyone$"' _ "$edfd" "$tmp/reclaim.yaml"
for p in "$r1" "$r2" "$r3"; do "$edfctl" release -p "$p" >/dev/null 2>&1; done

# One CPU: A 2ms/10ms and B 3ms/20ms with work well inside their budgets, O 2ms/10ms with 2.6 ms of
# work (130% of its budget), a CPU hog beside them; best fit puts all three on one CPU. With
# reclaim O's jobs end within their periods (the kernel lets it run on what no reservation holds);
# without, each of its jobs waits a period for the rest of its work and misses. A and B keep their
# deadlines either way (at most 1% late, this machine's floor: docs/performance.md).
reclaim_run() { # GROUP-OF-O: A, B and O for 4 s (the first 1 s not counted); results in $tmp/rc.*
        local g=$1 hog run=()
        "$edfctl" admit -g rt -T 2ms -P 10ms -- "$periodic" --work 1400us --period 10ms --duration 4s --skip 1s \
                --quiet >"$tmp/rc.A" 2>&1 &
        run+=($!)
        sleep 0.1
        "$edfctl" admit -g rt -T 3ms -P 20ms -- "$periodic" --work 2200us --period 20ms --duration 4s --skip 1s \
                --quiet >"$tmp/rc.B" 2>&1 &
        run+=($!)
        sleep 0.1
        "$edfctl" admit -g "$g" -T 2ms -P 10ms -- "$periodic" --work 2600us --period 10ms --duration 4s --skip 1s \
                --quiet >"$tmp/rc.O" 2>&1 &
        run+=($!)
        pids+=("${run[@]}")
        sleep 0.2
        "$edfctl" list --json >"$tmp/rc.list" 2>&1
        cpu=$(python3 -c 'import json,sys; print(" ".join(sorted({str(r["cpu"]) for r in json.load(open(sys.argv[1]))})))' \
                "$tmp/rc.list" 2>&1)
        taskset -c "${cpu%% *}" sh -c 'while :; do :; done' &
        hog=$!
        pids+=("$hog")
        wait "${run[@]}" 2>/dev/null
        kill "$hog" 2>/dev/null
        wait "$hog" 2>/dev/null
}
jobs_misses() { awk '/deadline misses/ { print $2, $4 }' "$1"; }
reclaim_verdict() { # WHAT: the checks of one run
        local aj am bj bm oj om floor what=$1 before=$failed
        read -r aj am < <(jobs_misses "$tmp/rc.A")
        read -r bj bm < <(jobs_misses "$tmp/rc.B")
        read -r oj om < <(jobs_misses "$tmp/rc.O")
        floor=$(( (${aj:-0} + ${bj:-0}) / 100 > 1 ? (${aj:-0} + ${bj:-0}) / 100 : 1 ))
        check "$what: A, B and O shared one CPU" test "$(wc -w <<<"$cpu")" = 1
        if [ "$what" = reclaim ]; then
                check "reclaim: O (130% of its budget) ends at least 90% of its jobs in time" \
                        test "${om:-x}" -le "$(( ${oj:-0} / 10 ))"
        else
                check "no reclaim: O misses most of its deadlines (it gets its 2 ms a period, no more)" \
                        test "${om:-0}" -ge "$(( ${oj:-1} / 2 ))"
        fi
        check "$what: A and B beside O keep their deadlines (at most 1% late)" \
                test "$(( ${am:-999} + ${bm:-999} ))" -le "$floor"
        [ "$failed" = "$before" ] || for f in A B O list; do printf '#   %s: %s\n' "$f" "$(cat "$tmp/rc.$f")"; done
}
# rt's reservations reclaim; O in strict (reclaim off) does not. Best fit puts O with A and B
# either way: strict and rt share the partitions.
reclaim_run rt
reclaim_verdict reclaim
reclaim_run strict
reclaim_verdict "no reclaim"

# --- an edfd without partitions takes them away and restores the balancing ---
stop_edfd TERM
start_edfd "$tmp/none.yaml" || exit 1
check "an edfd without partitions removes them" test ! -e "$cpuset/edfd-partitions"
check "and turns the root cpuset's load balancing back on" test "$(cat $cpuset/cpuset.sched_load_balance)" = 1
id=$("$edfctl" admit -g rt -T 1ms -P 10ms -p "$a" 2>"$tmp/err") || not_ok "global admission works again" "$(cat "$tmp/err")"
out=$("$edfctl" status 2>&1)
check "status says plainly what global placement promises" grep -q "^   Placement: global on [0-9]* CPUs: bounded tardiness, not deadlines$" <<<"$out"
check "global admission works again, without a CPU" test "$("$edfctl" list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["cpu"])')" = None
stop_edfd TERM

echo "1..$n"
[ "$failed" = 0 ]
