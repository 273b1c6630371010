#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The VM scenario. Runs inside the guest as edfd-vm-test.service (root, systemd as PID 1, pure
# cgroup v2, the real system bus, polkitd), after edfd.service has started at boot. Every check
# prints "ok N - name" or "not ok N - name # why" (and "#" lines with what was seen) to the serial
# console /dev/ttyS0, then the plan "1..N"; tests/vm/run-vm.sh reads them on the host. Everything is
# done as a user would do it: systemctl, busctl, edfctl, chrt, setpriv, /proc and /sys/fs/cgroup.
#
# The users: edfdtest (uid 1000) may admit its own threads through a polkit rule
# (/etc/polkit-1/rules.d/50-edfd-vm-test.rules); edfdother (uid 1001) has no rule, and outside a
# login session the shipped policy (allow_any: no) must deny it. Admitted workloads are sleep
# processes holding 5-20% of one CPU each.

set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export SYSTEMD_PAGER= SYSTEMD_COLORS=0

N=org.edfd.Admission1
P=/org/edfd/Admission1
I=org.edfd.Admission1.Manager
CG=/sys/fs/cgroup/edfd

exec 3>/dev/ttyS0
n=0
failed=0
kept=()         # admitted programs that must survive every restart of edfd
moved=          # the one admitted with --move
bg=()           # every background process, killed at the end

say() {
        printf '%s\n' "$*" >&3
        printf '%s\n' "$*"
}

# Up to 40 lines of what was seen, as TAP comments.
diag() {
        local l
        printf '%s\n' "$@" | head -40 | while IFS= read -r l; do say "#   $l"; done
}

pass() {
        n=$((n + 1))
        say "ok $n - $1"
}

# fail NAME WHY [WHAT WAS SEEN...]
fail() {
        n=$((n + 1))
        failed=$((failed + 1))
        say "not ok $n - $1 # $2"
        shift 2
        [ $# -gt 0 ] && diag "$@"
}

# The guest's kernel as run-vm.sh's EDFD_VM_KERNEL names it: its series (the first two numbers of
# uname -r), with -rt on a PREEMPT_RT kernel (/sys/kernel/realtime reads 1).
kname=$(uname -r | cut -d. -f1,2)
[ "$(cat /sys/kernel/realtime 2>/dev/null)" = 1 ] && kname+=-rt

# known KERNELS NAME WHY [WHAT WAS SEEN...]: a check that fails by a known fault of the kernels
# named ("6.1", or "6.1,6.12-rt": kname values, one word), said as TAP's TODO with the evidence
# (docs/design.md's kernel table names it). On any other kernel the same failure is an ordinary
# one: a kernel without the fault must pass the check.
known() {
        local kernels=$1
        shift
        if [[ ",$kernels," != *",$kname,"* ]]; then
                fail "$1" "$2 (a fault known on kernel $kernels, not expected on $kname)" "${@:3}"
                return
        fi
        n=$((n + 1))
        say "not ok $n - $1 # TODO $2"
        shift 2
        [ $# -gt 0 ] && diag "$@"
}

as_user() {
        local u=$1
        shift
        setpriv --reuid="$u" --regid="$u" --init-groups --reset-env -- "$@"
}

# The same for a background job: the job's shell becomes the command, so that $! is its PID.
as_user_exec() {
        local u=$1
        shift
        exec setpriv --reuid="$u" --regid="$u" --init-groups --reset-env -- "$@"
}

policy_of() {
        chrt -p "$1" 2>&1 | sed -n 's/.*current scheduling policy: //p'
}

params_of() {
        chrt -p "$1" 2>&1 | sed -n 's#.*current runtime/deadline/period parameters: ##p'
}

is_deadline() {
        case "$(policy_of "$1")" in SCHED_DEADLINE*) return 0 ;; *) return 1 ;; esac
}

is_other() {
        case "$(policy_of "$1")" in SCHED_OTHER*) return 0 ;; *) return 1 ;; esac
}

# wait_until TENTHS COMMAND...: poll every 0.1 s (guest time), at most TENTHS times.
wait_until() {
        local tries=$1
        shift
        until "$@"; do
                tries=$((tries - 1))
                [ "$tries" -le 0 ] && return 1
                sleep 0.1
        done
}

comm_is() {
        [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ]
}

gone() {
        ! kill -0 "$1" 2>/dev/null
}

# Wait until PID runs COMM (edfctl admit -- COMMAND has admitted and exec'd) or has died.
wait_exec() {
        wait_until 300 eval "comm_is $1 $2 || gone $1"
}

# The row of `edfctl list` whose PID column is $1.
list_row() {
        edfctl list 2>/dev/null | awk -v p="$1" '$3 == p'
}

listed() {
        [ -n "$(list_row "$1")" ]
}

edfd_state() {
        systemctl is-active edfd.service 2>/dev/null
}

edfd_pid() {
        systemctl show -p MainPID --value edfd.service 2>/dev/null
}

edfd_active() {
        [ "$(edfd_state)" = active ]
}

journal() {
        journalctl -b --no-pager -o short-monotonic -u edfd.service "$@" 2>&1 | tail -25
}

# The group cgroups: each one's cpu.max (or that it has none), and where the moved program lives.
cgroup_state() {
        local g
        for g in media media/audio; do
                if [ -d "$CG/$g" ]; then
                        echo "$g: cpu.max $(cat "$CG/$g/cpu.max" 2>/dev/null || echo absent)"
                else
                        echo "$g: no directory"
                fi
        done
        [ -n "$moved" ] && echo "program $moved in $(cat /proc/$moved/cgroup 2>&1)"
}

# One line per kept program: pid, alive or not, policy, runtime/deadline/period.
kept_params() {
        local p
        for p in "${kept[@]}"; do
                if gone "$p"; then
                        echo "$p gone"
                else
                        echo "$p $(policy_of "$p") $(params_of "$p")"
                fi
        done
}

finish() {
        local p
        for p in "${bg[@]}"; do kill -KILL "$p" 2>/dev/null; done
        say "1..$n"
        say "# $((n - failed)) passed, $failed failed"
        if [ "$failed" -gt 0 ]; then
                say "# edfd's journal:"
                diag "$(journalctl -b --no-pager -o short-monotonic -u edfd.service 2>&1 | tail -40)"
                say "# polkit's journal:"
                diag "$(journalctl -b --no-pager -o short-monotonic -u polkit.service 2>&1 | tail -10)"
        fi
}
trap finish EXIT

say "# edfd VM scenario: kernel $(uname -r) ($kname), $(nproc) CPUs, systemd $(systemctl --version | head -1 | cut -d' ' -f2)"
say "# cgroup: $(stat -fc %T /sys/fs/cgroup); root controllers: $(cat /sys/fs/cgroup/cgroup.subtree_control)"

# --- the kernel's fair servers, and what its count holds of them ---
# fair_bw: one CPU's fair server as the kernel's to_ratio() rounds it (0 without one: 6.1);
# dl_totals: dl_bw->total_bw as each CPU's line of /sys/kernel/debug/sched/debug shows its root
# domain's count. At boot (one root domain, no deadline task yet) the count is every CPU's server.
fsd=/sys/kernel/debug/sched/fair_server
fs_rt=$(cat $fsd/cpu0/runtime 2>/dev/null) fs_per=$(cat $fsd/cpu0/period 2>/dev/null)
if [[ $fs_rt =~ ^[0-9]+$ && $fs_per =~ ^[1-9][0-9]*$ ]]; then
        fair_bw=$(( (fs_rt << 20) / fs_per ))
else
        fair_bw=0 # none, or unreadable: the checks below then say so
fi
dl_totals() { sed -n 's/^ *\.dl_bw->total_bw *: *//p' /sys/kernel/debug/sched/debug 2>/dev/null | tr '\n' ' '; }
totals=$(dl_totals)
want=$(for _ in $(seq "$(nproc)"); do echo -n "$(( $(nproc) * fair_bw )) "; done)
name="at boot the kernel counts every CPU's fair server in dl_bw->total_bw ($(nproc) x $fair_bw of 1048576)"
if [ -n "$totals" ] && [ "$totals" = "$want" ]; then
        pass "$name"
elif [ "$fair_bw" -gt 0 ] && [ "$totals" = "$(for _ in $(seq "$(nproc)"); do echo -n "0 "; done)" ]; then
        # Seen on 6.12-rt: edfd measured the servers at its start (its log), and by the scenario's
        # start they were gone; a read of sched_rt_runtime_us (edfd's) rebuilds the root domains.
        known 6.12,6.12-rt "$name" \
                "kernel 6.12: a root-domain rebuild before the scenario dropped the fair servers from the count, as the partitions' rebuild does below" \
                "total_bw per CPU: $totals" "edfd: $(journalctl -b --no-pager -o cat -u edfd.service 2>/dev/null | grep 'fair servers' | head -n 2)"
else
        fail "$name" "total_bw per CPU: ${totals:-unreadable}, expected $want" "$(ls $fsd 2>&1 | head -3)"
fi

# --- started by systemd at boot, and by D-Bus activation ---

state=$(edfd_state)
if [ "$state" = active ] && [ "$(systemctl show -p Type --value edfd.service)" = notify ]; then
        pass "edfd.service (Type=notify) is active after boot"
else
        fail "edfd.service (Type=notify) is active after boot" "state $state" \
                "$(systemctl status --no-pager edfd.service 2>&1)" "$(journal)"
fi

out=$(busctl call "$N" "$P" "$I" Echo t 7 2>&1)
if [ "$out" = "t 7" ]; then
        pass "edfd answers on the system bus as $N (busctl call Echo)"
else
        fail "edfd answers on the system bus as $N (busctl call Echo)" "busctl said: $out"
fi

systemctl stop edfd.service
stopped=$(edfd_state)
out=$(busctl call "$N" "$P" "$I" Echo t 1 2>&1)
state=$(edfd_state)
if [ "$stopped" = inactive ] && [ "$out" = "t 1" ] && [ "$state" = active ]; then
        pass "D-Bus activation: busctl call Echo starts the stopped edfd.service"
else
        fail "D-Bus activation: busctl call Echo starts the stopped edfd.service" \
                "after stop: $stopped; busctl: $out; then: $state" "$(journal)"
fi

systemctl stop edfd.service
stopped=$(edfd_state)
out=$(as_user edfdtest edfctl status 2>&1)
rc=$?
state=$(edfd_state)
if [ "$stopped" = inactive ] && [ $rc -eq 0 ] && [ "$state" = active ]; then
        pass "D-Bus activation by an unprivileged user's edfctl status"
else
        fail "D-Bus activation by an unprivileged user's edfctl status" \
                "after stop: $stopped; edfctl exit $rc; then: $state" "$out" "$(journal)"
fi

# --- edfctl status as root and as unprivileged users ---

out=$(edfctl status 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -q 'Capacity:' <<<"$out" && grep -q 'audio' <<<"$out"; then
        pass "edfctl status as root shows the capacity and the configured groups"
else
        fail "edfctl status as root shows the capacity and the configured groups" "exit $rc" "$out"
fi
say "# edfctl status:"
diag "$out"

for u in edfdtest edfdother; do
        out=$(as_user "$u" edfctl status 2>&1)
        rc=$?
        if [ $rc -eq 0 ] && grep -q 'Capacity:' <<<"$out" && grep -q 'audio' <<<"$out"; then
                pass "edfctl status as $u"
        else
                fail "edfctl status as $u" "exit $rc" "$out"
        fi
done

# --- throttle counting under the shipped unit (CAP_BPF, CAP_PERFMON, bpf()) on this kernel ---

counting=$(busctl get-property org.edfd.Admission1 /org/edfd/Admission1 org.edfd.Admission1.Manager \
        ThrottleCounting 2>&1)
if [ "$counting" = 's "on"' ]; then
        pass "ThrottleCounting is \"on\" under the shipped unit on kernel $(uname -r)"
        edfctl admit -g media -T 1ms -P 10ms -- sh -c 'while :; do :; done' &
        p=$!
        bg+=($p)
        for _ in $(seq 100); do is_deadline $p && break; sleep 0.05; done
        sleep 2
        out=$(edfctl status 2>&1)
        if grep -Eq '^ +[0-9]+ throttles since its admission$' <<<"$out"; then
                pass "a thread spinning under 1ms/10ms: edfctl status counts its throttles"
        else
                fail "a thread spinning under 1ms/10ms: edfctl status counts its throttles" "$out" "$(journal | tail -5)"
        fi
        kill $p 2>/dev/null
        wait $p 2>/dev/null
else
        fail "ThrottleCounting is \"on\" under the shipped unit on kernel $(uname -r)" "$counting" \
                "$(journal | grep -i throttle)"
fi
# The rest of the scenario runs edfd without the counter: under software emulation (TCG, four
# vCPUs on the host's two) a restart of an edfd whose BPF program was attached once left the guest
# soft-locked with edfd on CPU 0 and another CPU's timers dead (2026-12-07; the program's detach
# patches the sched_switch tracepoint's static key on every CPU; the cause is not proven). One
# attach and one detach, here, are what the counter needs tested in the VM.
mkdir -p /run/systemd/system/edfd.service.d
printf '[Service]\nExecStart=\nExecStart=/usr/sbin/edfd --no-throttle-count\n' \
        >/run/systemd/system/edfd.service.d/40-edfd-vm-no-throttle-count.conf
systemctl daemon-reload
systemctl restart edfd.service
for _ in $(seq 100); do systemctl is-active -q edfd.service && break; sleep 0.1; done

# --- group cgroups and cpu.max ---

for spec in "media 60000 100000" "media/audio 2000 10000"; do
        set -- $spec
        got=$(cat "$CG/$1/cpu.max" 2>&1)
        if [ "$got" = "$2 $3" ]; then
                pass "$CG/$1/cpu.max is \"$2 $3\" as configured"
        else
                fail "$CG/$1/cpu.max is \"$2 $3\" as configured" "read: $got" \
                        "/sys/fs/cgroup/cgroup.subtree_control: $(cat /sys/fs/cgroup/cgroup.subtree_control)" \
                        "$CG/cgroup.controllers: $(cat $CG/cgroup.controllers 2>&1)" \
                        "$CG/cgroup.subtree_control: $(cat $CG/cgroup.subtree_control 2>&1)" \
                        "$(find "$CG" -maxdepth 3 -name cgroup.procs 2>&1)" "$(journal | grep -i cgroup)"
        fi
done
if [ -d "$CG/media/audio" ] && [ ! -e "$CG/control" ]; then
        pass "a group without cgroup: gets no directory under $CG"
else
        fail "a group without cgroup: gets no directory under $CG" "see the listing" "$(ls -R "$CG" 2>&1 | head -20)"
fi

# --- admission and release by root ---

sleep 601 &
p=$!
bg+=($p)
out=$(edfctl admit -g media -T 1ms -P 10ms -p $p 2>&1)
rc=$?
params=$(params_of $p)
if [ $rc -eq 0 ] && is_deadline $p && [ "$params" = 1000000/10000000/10000000 ] && listed $p; then
        pass "root admits a running process (-p): SCHED_DEADLINE 1ms/10ms, listed"
else
        fail "root admits a running process (-p): SCHED_DEADLINE 1ms/10ms, listed" \
                "exit $rc, $(policy_of $p) $params" "$out" "$(edfctl list 2>&1)"
fi
out=$(edfctl release -p $p 2>&1)
rc=$?
if [ $rc -eq 0 ] && is_other $p && ! listed $p; then
        pass "root releases it (-p): SCHED_OTHER again, gone from edfctl list"
else
        fail "root releases it (-p): SCHED_OTHER again, gone from edfctl list" "exit $rc, $(policy_of $p)" \
                "$out" "$(edfctl list 2>&1)"
fi
kill $p

# The journal is mapped under the unit's sandbox (its system call filter allows fallocate and
# mremap): the records are stores, not the pwrite(2) fallback.
maps=$(grep -c " /run/edfd/state$" "/proc/$(edfd_pid)/maps" 2>&1)
if [ "$maps" = 1 ]; then
        pass "edfd keeps /run/edfd/state mapped under the unit's sandbox"
else
        fail "edfd keeps /run/edfd/state mapped under the unit's sandbox" "$maps mappings of it" \
                "$(ls -l /run/edfd 2>&1)" "$(journal)"
fi

edfctl admit -g media -T 1ms -P 10ms -- sleep 602 &
p=$!
bg+=($p)
wait_exec $p sleep
if comm_is $p sleep && is_deadline $p && [ "$(params_of $p)" = 1000000/10000000/10000000 ] && listed $p; then
        pass "root: edfctl admit -g media -- sleep runs the command SCHED_DEADLINE 1ms/10ms"
        kept+=($p)
else
        fail "root: edfctl admit -g media -- sleep runs the command SCHED_DEADLINE 1ms/10ms" \
                "$(gone $p && echo "edfctl exited" || echo "$(policy_of $p) $(params_of $p)")" "$(edfctl list 2>&1)"
fi

edfctl admit --move -g media/audio -T 1ms -P 10ms -- sleep 603 &
p=$!
bg+=($p)
wait_exec $p sleep
cg=$(cat /proc/$p/cgroup 2>&1)
case "$cg" in
"0::/edfd/media/audio" | "0::/edfd/media/audio/"*)
        pass "admit --move -g media/audio -- sleep: the command runs in $CG/media/audio ($cg)" ;;
*)
        fail "admit --move -g media/audio -- sleep: the command runs in $CG/media/audio" "/proc/$p/cgroup: $cg" \
                "$(journal | tail -5)" ;;
esac
if comm_is $p sleep && is_deadline $p && [ "$(params_of $p)" = 1000000/10000000/10000000 ]; then
        pass "admit --move: the command is SCHED_DEADLINE 1ms/10ms (chrt -p)"
        kept+=($p)
        moved=$p
else
        fail "admit --move: the command is SCHED_DEADLINE 1ms/10ms (chrt -p)" \
                "$(gone $p && echo "edfctl exited" || echo "$(policy_of $p) $(params_of $p)")"
fi

# --- unprivileged users and polkit ---

as_user_exec edfdtest sleep 604 &
p=$!
bg+=($p)
wait_until 50 comm_is $p sleep
out=$(as_user edfdtest edfctl admit -T 1ms -P 20ms -p $p 2>&1)
rc=$?
if [ $rc -eq 0 ] && is_deadline $p && [ "$(params_of $p)" = 1000000/20000000/20000000 ] && listed $p; then
        pass "edfdtest (allowed by a polkit rule) admits its own process"
else
        fail "edfdtest (allowed by a polkit rule) admits its own process" "exit $rc, $(policy_of $p)" "$out"
fi
out=$(as_user edfdother edfctl release -p $p 2>&1)
rc=$?
if [ $rc -ne 0 ] && is_deadline $p && listed $p; then
        pass "edfdother cannot release edfdtest's reservation (exit $rc)"
else
        fail "edfdother cannot release edfdtest's reservation" "exit $rc, $(policy_of $p)" "$out"
fi
out=$(as_user edfdtest edfctl release -p $p 2>&1)
rc=$?
if [ $rc -eq 0 ] && is_other $p && ! listed $p; then
        pass "edfdtest releases its own reservation: SCHED_OTHER again"
else
        fail "edfdtest releases its own reservation: SCHED_OTHER again" "exit $rc, $(policy_of $p)" "$out"
fi
kill $p

as_user_exec edfdtest edfctl admit -T 1ms -P 20ms -- sleep 605 &
p=$!
bg+=($p)
wait_exec $p sleep
if comm_is $p sleep && is_deadline $p && [ "$(params_of $p)" = 1000000/20000000/20000000 ] && listed $p; then
        pass "edfdtest: edfctl admit -- sleep runs its command SCHED_DEADLINE 1ms/20ms"
        kept+=($p)
else
        fail "edfdtest: edfctl admit -- sleep runs its command SCHED_DEADLINE 1ms/20ms" \
                "$(gone $p && echo "edfctl exited" || echo "$(policy_of $p) $(params_of $p)")"
fi

sleep 606 &
p=$!
bg+=($p)
out=$(as_user edfdtest edfctl admit -T 1ms -P 20ms -p $p 2>&1)
rc=$?
if [ $rc -ne 0 ] && is_other $p && ! listed $p; then
        pass "edfdtest cannot admit root's process (exit $rc)"
else
        fail "edfdtest cannot admit root's process" "exit $rc, $(policy_of $p)" "$out"
fi
kill $p

as_user_exec edfdother sleep 607 &
p=$!
bg+=($p)
wait_until 50 comm_is $p sleep
out=$(as_user edfdother edfctl admit -T 1ms -P 20ms -p $p 2>&1)
rc=$?
if [ $rc -eq 1 ] && grep -qi 'permission denied' <<<"$out" && is_other $p && ! listed $p; then
        pass "polkit denies edfdother admitting its own process (no rule, no session: allow_any is no)"
        diag "edfctl said: $out"
else
        fail "polkit denies edfdother admitting its own process (no rule, no session: allow_any is no)" \
                "exit $rc, $(policy_of $p)" "$out" "$(edfctl list 2>&1)"
fi
edfctl release -p $p >/dev/null 2>&1
kill $p

out=$(as_user edfdtest edfctl group create media/x --bandwidth 1% 2>&1)
rc=$?
if [ $rc -eq 1 ] && grep -qi 'permission denied' <<<"$out" && ! edfctl status 2>/dev/null | grep -qw x; then
        pass "edfdtest may not create a group (org.edfd.Admission1.manage is auth_admin, and there is no agent)"
        diag "edfctl said: $out"
else
        fail "edfdtest may not create a group (org.edfd.Admission1.manage is auth_admin, and there is no agent)" \
                "exit $rc" "$out"
fi
edfctl group remove media/x >/dev/null 2>&1

out=$(edfctl group create media/x -T 1ms -P 100ms 2>&1)
rc=$?
out2=$(edfctl group remove media/x 2>&1)
rc2=$?
if [ $rc -eq 0 ] && [ $rc2 -eq 0 ]; then
        pass "root creates and removes a group (edfctl group create / remove)"
else
        fail "root creates and removes a group (edfctl group create / remove)" "exit $rc, $rc2" "$out" "$out2"
fi

# --- a fork split ---

edfctl admit -g media -T 4ms -P 20ms -- bash -c 'sleep 608 & exec sleep 609' &
fp=$!
bg+=($fp)
child=
find_child() {
        child=$(pgrep -P $fp -x sleep | head -1)
        [ -n "$child" ] && comm_is $fp sleep
}
wait_until 300 eval "find_child || gone $fp"
[ -n "$child" ] && bg+=($child)
# The split is done when both halves run 2ms/20ms and edfctl list shows the child split from the
# parent's reservation.
split_done() {
        local prow crow
        [ -n "$child" ] && is_deadline $fp && is_deadline $child || return 1
        [ "$(params_of $fp)" = 2000000/20000000/20000000 ] && [ "$(params_of $child)" = 2000000/20000000/20000000 ] ||
                return 1
        prow=$(list_row $fp)
        crow=$(list_row $child)
        [ -n "$prow" ] && [ -n "$crow" ] && [ "$(awk '{print $NF}' <<<"$crow")" = "$(awk '{print $1}' <<<"$prow")" ]
}
wait_until 100 split_done
if split_done; then
        pass "fork split: an admitted 4ms/20ms shell forks; parent and child each hold 2ms/20ms, the child split from the parent"
        kept+=($fp $child)
else
        fail "fork split: an admitted 4ms/20ms shell forks; parent and child each hold 2ms/20ms, the child split from the parent" \
                "parent $fp: $(policy_of $fp) $(params_of $fp); child ${child:-none}: $([ -n "$child" ] && echo "$(policy_of $child) $(params_of $child)")" \
                "$(edfctl list 2>&1)"
fi

# --- restarts keep everything ---

say "# edfctl list before the restarts:"
list_before=$(edfctl list 2>&1)
diag "$list_before"
params_before=$(kept_params)
cgroups_before=$(cgroup_state)
say "# cgroups before the restarts:"
diag "$cgroups_before"

# compare_books WHAT: the kept programs and edfctl list against what they were before.
compare_books() {
        local what=$1 now list_now
        now=$(kept_params)
        if [ "$now" = "$params_before" ] && ! grep -q gone <<<"$now"; then
                pass "$what: every admitted program still runs with its parameters"
        else
                fail "$what: every admitted program still runs with its parameters" "changed" \
                        "before:" "$params_before" "now:" "$now"
        fi
        list_now=$(edfctl list 2>&1)
        if [ "$list_now" = "$list_before" ]; then
                pass "$what: edfctl list is identical to before"
        else
                fail "$what: edfctl list is identical to before" "differs" \
                        "$(diff <(echo "$list_before") <(echo "$list_now"))" "$(journal | tail -8)"
        fi
        now=$(cgroup_state)
        if [ "$now" = "$cgroups_before" ]; then
                pass "$what: the group cgroups, their cpu.max and the moved program's cgroup are unchanged"
        else
                fail "$what: the group cgroups, their cpu.max and the moved program's cgroup are unchanged" \
                        "changed" "before:" "$cgroups_before" "now:" "$now"
        fi
}

systemctl reset-failed edfd.service 2>/dev/null
old=$(edfd_pid)
out=$(systemctl restart edfd.service 2>&1)
rc=$?
new=$(edfd_pid)
if [ $rc -eq 0 ] && edfd_active && [ "$new" != "$old" ] && [ "$new" != 0 ]; then
        pass "systemctl restart edfd: active again (PID $old -> $new)"
else
        fail "systemctl restart edfd: active again" "exit $rc, $(edfd_state), PID $old -> $new" "$out" "$(journal)"
fi
compare_books "after systemctl restart"

systemctl reset-failed edfd.service 2>/dev/null
old=$(edfd_pid)
kill -KILL "$old"
restarted() {
        local now
        now=$(edfd_pid)
        [ -n "$now" ] && [ "$now" != 0 ] && [ "$now" != "$old" ] && edfd_active
}
if wait_until 600 restarted; then
        pass "kill -9 edfd: systemd restarts it (Restart=on-failure, PID $old -> $(edfd_pid))"
else
        fail "kill -9 edfd: systemd restarts it (Restart=on-failure)" "$(edfd_state), PID $(edfd_pid)" "$(journal)"
fi
compare_books "after kill -9 and the restart"

systemctl stop edfd.service
state=$(edfd_state)
now=$(kept_params)
if [ "$state" = inactive ] && [ "$now" = "$params_before" ] && ! grep -q gone <<<"$now"; then
        pass "systemctl stop edfd kills no admitted program: all alive, SCHED_DEADLINE, same parameters"
else
        fail "systemctl stop edfd kills no admitted program: all alive, SCHED_DEADLINE, same parameters" \
                "edfd $state" "before:" "$params_before" "now:" "$now"
fi
# A clean stop cuts the room the mapped journal had allocated ahead: records only, no NUL bytes.
nuls=$(tr -dc '\000' </run/edfd/state | wc -c)
if [ "$nuls" = 0 ] && [ "$(tail -c 1 /run/edfd/state | od -An -c | tr -d ' ')" = '\n' ]; then
        pass "after systemctl stop, /run/edfd/state ends with its last record (no room left allocated)"
else
        fail "after systemctl stop, /run/edfd/state ends with its last record (no room left allocated)" \
                "$nuls NUL bytes" "$(ls -l /run/edfd/state 2>&1)"
fi
systemctl reset-failed edfd.service 2>/dev/null
out=$(systemctl start edfd.service 2>&1)
rc=$?
if [ $rc -eq 0 ] && edfd_active; then
        pass "systemctl start edfd after a stop"
else
        fail "systemctl start edfd after a stop" "exit $rc, $(edfd_state)" "$out" "$(journal)"
fi
compare_books "after stop and start"

# --- the forked child's exit gives its half back ---

if [ -n "$child" ]; then
        kill "$child"
        rest=()
        for p in "${kept[@]}"; do [ "$p" = "$child" ] || rest+=($p); done
        kept=("${rest[@]}")
        back() {
                [ "$(params_of $fp)" = 4000000/20000000/20000000 ] && ! listed $child
        }
        if wait_until 100 back; then
                pass "the forked child exits: the parent holds its full 4ms/20ms again"
        else
                fail "the forked child exits: the parent holds its full 4ms/20ms again" \
                        "parent: $(policy_of $fp) $(params_of $fp)" "$(edfctl list 2>&1)"
        fi
else
        fail "the forked child exits: the parent holds its full 4ms/20ms again" "no child (see the fork split)"
fi

# --- release everything ---

bad=
for p in "${kept[@]}"; do
        gone $p && continue
        owner=$(stat -c %U /proc/$p)
        if [ "$owner" = root ]; then
                edfctl release -p $p >/dev/null 2>&1
        else
                as_user "$owner" edfctl release -p $p >/dev/null 2>&1
        fi
        is_other $p || bad+=" $p:$(policy_of $p)"
done
out=$(edfctl list 2>&1)
if [ -z "$bad" ] && [ "$out" = "No reservations." ]; then
        pass "every reservation released by its owner: all SCHED_OTHER, edfctl list shows none"
else
        fail "every reservation released by its owner: all SCHED_OTHER, edfctl list shows none" \
                "still deadline:${bad:- none}" "$out"
fi

# --- cpuset partitions (cgroup v2), through the adapter's command cpuset-probe ---
# Four CPUs: the root cgroup keeps CPU 0, three 1-CPU partitions take 1, 2 and 3.

probe=/usr/local/libexec/edfd-vm/cpuset-probe
pdir=/sys/fs/cgroup/edfd-partitions
part_states() {
        local d
        for d in "$pdir"/*/; do
                [ -d "$d" ] && echo "$(basename "$d"): cpus $(cat "$d/cpuset.cpus") partition $(cat "$d/cpuset.cpus.partition") type $(cat "$d/cgroup.type")"
        done
        echo "edfd-partitions: cpus $(cat "$pdir/cpuset.cpus" 2>&1) partition $(cat "$pdir/cpuset.cpus.partition" 2>&1)"
}
if [ "$(nproc)" -lt 4 ]; then
        fail "cpuset partitions" "the VM has $(nproc) CPUs, the partition checks need 4"
else
        out=$($probe apply all=0-3 2>&1)
        rc=$?
        if [ $rc -eq 1 ] && [[ $out == *"must keep one"* ]] && [ ! -d "$pdir" ]; then
                pass "partitions taking every CPU are refused (the root cgroup must keep one), nothing made"
        else
                fail "partitions taking every CPU are refused (the root cgroup must keep one), nothing made" \
                        "exit $rc" "$out" "$(ls -d "$pdir" 2>&1)"
        fi

        out=$($probe apply rt0=1 rt1=2 rt2=3 2>&1)
        rc=$?
        list=$($probe list 2>&1)
        if [ $rc -eq 0 ] && [ "$(grep -c ' valid ' <<<"$list")" -eq 3 ] &&
           [ "$(cat "$pdir/rt0/cpuset.cpus.partition" "$pdir/rt1/cpuset.cpus.partition" "$pdir/rt2/cpuset.cpus.partition" | sort -u)" = root ] &&
           [ "$(cat /sys/fs/cgroup/cpuset.cpus.effective)" = 0 ]; then
                pass "three partitions created (threaded, cpuset.cpus.partition = root), the root cgroup keeps CPU 0"
                diag "$out" "$list" "$(part_states)"
        else
                fail "three partitions created (threaded, cpuset.cpus.partition = root), the root cgroup keeps CPU 0" \
                        "exit $rc; root effective $(cat /sys/fs/cgroup/cpuset.cpus.effective 2>&1)" "$out" "$list" "$(part_states)"
        fi

        # For processes that move in whole, edfd-partitions keeps CPU 3 for their other threads.
        out=$($probe apply _shared=3 rt0=1 rt1=2 2>&1)
        rc=$?
        if [ $rc -eq 0 ] && [ "$(cat "$pdir/cpuset.cpus")" = 1-3 ] && [ "$(cat "$pdir/cpuset.cpus.effective")" = 3 ] &&
           [ ! -d "$pdir/rt2" ] && [ "$(cat "$pdir/rt1/cpuset.cpus.partition")" = root ]; then
                pass "an empty partition removed and its CPU kept by edfd-partitions for moved processes' other threads"
        else
                fail "an empty partition removed and its CPU kept by edfd-partitions for moved processes' other threads" \
                        "exit $rc" "$out" "$(part_states)" "effective $(cat "$pdir/cpuset.cpus.effective" 2>&1)"
        fi

        # The kernel checks a new deadline task against the root domain of the CPU it last ran on:
        # a sleeping task moved into a partition is still on its old CPU until it wakes (chrt -p on
        # it gets EPERM, seen here). So each helper waits on a FIFO, is moved, and is woken to run on
        # its new CPU before it sleeps on as the deadline task.
        mkfifo /run/edfd-vm-go1 /run/edfd-vm-go2
        sh -c 'read x </run/edfd-vm-go1; exec sleep 1000' &
        sp1=$!
        bg+=($sp1)
        sh -c 'read x </run/edfd-vm-go2; exec sleep 1000' &
        sp2=$!
        bg+=($sp2)
        moves=
        for p in $sp1 $sp2; do
                moves+="$p: $($probe move-process $p 2>&1; echo "exit $?") / $($probe move rt0 $p 2>&1; echo "exit $?"); "
        done
        echo go >/run/edfd-vm-go1
        echo go >/run/edfd-vm-go2
        wait_until 50 comm_is $sp1 sleep
        wait_until 50 comm_is $sp2 sleep
        cpus=$(sed -n 's/^Cpus_allowed_list:\t//p' /proc/$sp1/status)
        a=$(chrt -d --sched-runtime 8000000 --sched-deadline 10000000 --sched-period 10000000 -p 0 $sp1 2>&1; echo "exit $?")
        b=$(chrt -d --sched-runtime 2000000 --sched-deadline 10000000 --sched-period 10000000 -p 0 $sp2 2>&1; echo "exit $?")
        if [ "$cpus" = 1 ] && is_deadline $sp1 && [[ $b == *"busy"* ]] && ! is_deadline $sp2; then
                pass "a process moved whole into edfd-partitions, its thread into rt0: CPU 1 only, 80% admitted, 20% more refused by the kernel (EBUSY)"
        else
                fail "a process moved whole into edfd-partitions, its thread into rt0: CPU 1 only, 80% admitted, 20% more refused by the kernel (EBUSY)" \
                        "Cpus_allowed_list $cpus" "moves: $moves" "80%: $a" "20%: $b" "$(cat /proc/$sp1/cgroup)" "$($probe list 2>&1)"
        fi

        o=$( (echo 0 >/sys/devices/system/cpu/cpu1/online) 2>&1; echo "exit $?")
        if is_deadline $sp1 && [ "$(cat /sys/devices/system/cpu/cpu1/online)" = 1 ] &&
           [ "$(cat "$pdir/rt0/cpuset.cpus.partition")" = root ] && [[ $o == *"busy"* ]]; then
                pass "taking CPU 1 offline under rt0's deadline bandwidth is refused (EBUSY); rt0 stays as it was"
        else
                fail "taking CPU 1 offline under rt0's deadline bandwidth is refused (EBUSY); rt0 stays as it was" \
                        "offline: $o" "cpu1 online $(cat /sys/devices/system/cpu/cpu1/online)" "$(part_states)"
                echo 1 >/sys/devices/system/cpu/cpu1/online 2>/dev/null
        fi

        # From outside: CPU 2, rt1's only CPU, taken offline. The kernel (6.1) turns a partition
        # invalid on hotplug only while it has tasks (an empty one still reads "root"), so a normal
        # process sits in rt1.
        sleep 1000 &
        sp3=$!
        bg+=($sp3)
        m3="$($probe move-process $sp3 2>&1; echo "exit $?") / $($probe move rt1 $sp3 2>&1; echo "exit $?")"
        out=$($probe poll "echo 0 >/sys/devices/system/cpu/cpu2/online" 2>&1)
        seen=$(part_states)
        echo 1 >/sys/devices/system/cpu/cpu2/online 2>/dev/null
        rep=$($probe apply _shared=3 rt0=1 rt1=2 2>&1)
        rc=$?
        if [[ $out == *"rt1 valid -> invalid"* ]] && [ $rc -eq 0 ] && [ "$(cat "$pdir/rt1/cpuset.cpus.partition")" = root ]; then
                pass "a partition made invalid from outside (its CPU offline) is noticed by the poll, and the next apply repairs it"
                diag "$out" "$seen" "$rep"
        else
                fail "a partition made invalid from outside (its CPU offline) is noticed by the poll, and the next apply repairs it" \
                        "move: $m3" "$out" "$seen" "repair: exit $rc: $rep" "$(part_states)"
        fi

        out=$($probe apply 2>&1)
        rc=$?
        kill -KILL $sp1 $sp2 $sp3 2>/dev/null
        wait $sp1 $sp2 $sp3 2>/dev/null
        out2=$($probe apply 2>&1)
        rc2=$?
        if [ $rc -eq 1 ] && [[ $out == *"holds"* ]] && [ $rc2 -eq 0 ] && [ ! -d "$pdir" ] &&
           [ "$(cat /sys/fs/cgroup/cpuset.cpus.effective)" = 0-3 ]; then
                pass "partitions holding threads are not removed; once empty they are, and the root has CPUs 0-3 again"
        else
                fail "partitions holding threads are not removed; once empty they are, and the root has CPUs 0-3 again" \
                        "busy: exit $rc: $out" "empty: exit $rc2: $out2" "$(part_states 2>&1)" \
                        "root effective $(cat /sys/fs/cgroup/cpuset.cpus.effective 2>&1)"
        fi
fi


# --- edfd's own partitions (cgroup v2): partitioned placement under systemd ---
# edfd restarted with edfd-vm-partitions.yaml: partitions rt0, rt1, rt2 on CPUs 1, 2, 3 (the root
# cgroup keeps CPU 0) and the group rt of partitioned placement. The workloads are periodic
# processes (tests/bench/periodic: 1 ms of work every 10 ms, so they wake after a move) admitted at
# 5.8ms/10ms, 58% of a CPU that admits 95% on 6.1 (no fair server), 90% since 6.12 (its fair
# server holds 5%): what one CPU admits is computed below from the kernel's numbers. Then the same with
# partition-shared-cpus "1" and partitions on CPUs 2 and 3. Ends with edfd's first configuration
# again, which removes the partitions.

periodic=/usr/local/libexec/edfd-vm/periodic
conf=/etc/edfd/edfd.yaml
dropin=/run/systemd/system/edfd.service.d/50-edfd-vm-partitions.conf
mycg=$(sed -n 's/^0:://p' /proc/$$/cgroup)
pbg=()
allowed() { sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$1/status 2>/dev/null; }
cgroup_of() { sed -n 's/^0:://p' /proc/$1/cgroup 2>/dev/null; }
# The reservation of pid $1 in edfctl list --json, one object on one line.
json_res() { edfctl list --json 2>/dev/null | tr -d ' \n' | sed 's/},{/}\n{/g' | grep "\"pid\":$1[,}]"; }
cpu_of() { json_res $1 | grep -o '"cpu":[0-9]*' | cut -d: -f2; }
spawn_periodic() { # its pid in $sp
        $periodic --work 1ms --period 10ms --duration 900s --quiet >/dev/null 2>&1 &
        sp=$!
        pbg+=($sp)
        bg+=($sp)
}
# The kernel checks a new deadline task against the root domain of the CPU it last ran on, so a
# helper moved into partition PART must run there once: it waits on FIFO, is moved, and is woken to
# run on its new CPU before it sleeps on. Its pid in $hp, the move's result in $mv.
spawn_in_partition() { # PART FIFO
        sh -c 'read x <"$0"; exec sleep 1000' "$2" &
        hp=$!
        bg+=($hp)
        mv=$( (echo $hp >$pdir/$1/cgroup.procs) 2>&1; echo "exit $?")
        echo go >"$2"
        wait_until 50 comm_is $hp sleep
}
# What a placement is: pid, CPUs allowed, cgroup, policy, parameters, edfd's CPU.
placement() {
        local p
        for p in "$@"; do
                if gone $p; then echo "$p gone"; else echo "$p cpus $(allowed $p) in $(cgroup_of $p) $(policy_of $p) $(params_of $p) edfd-cpu $(cpu_of $p)"; fi
        done
}
parts_valid() {
        [ "$(cat $pdir/cpuset.cpus.partition 2>/dev/null)" = root ] &&
        [ "$(cat $pdir/rt0/cpuset.cpus.partition $pdir/rt1/cpuset.cpus.partition $pdir/rt2/cpuset.cpus.partition 2>/dev/null | tr '\n' ' ')" = "root root root " ] &&
        [ "$(cat $pdir/rt0/cpuset.cpus $pdir/rt1/cpuset.cpus $pdir/rt2/cpuset.cpus 2>/dev/null | tr '\n' ' ')" = "1 2 3 " ] &&
        [ "$(cat $pdir/rt0/cgroup.type $pdir/rt1/cgroup.type $pdir/rt2/cgroup.type 2>/dev/null | sort -u)" = threaded ] &&
        [ "$(cat /sys/fs/cgroup/cpuset.cpus.effective)" = 0 ]
}
jmark() { jl=$(journalctl -b --no-pager -o cat -u edfd.service 2>/dev/null | wc -l); }
jsince() { journalctl -b --no-pager -o cat -u edfd.service 2>/dev/null | tail -n +$((jl + 1)); }
restart_edfd() {
        systemctl reset-failed edfd.service 2>/dev/null
        systemctl restart edfd.service 2>&1
        wait_until 100 edfd_active
}

if [ "$(nproc)" -lt 4 ]; then
        fail "edfd's partitions" "the VM has $(nproc) CPUs, the partitioned phase needs 4"
elif [ -d "$pdir" ]; then
        fail "edfd's partitions" "$pdir is left from the probe checks" "$(part_states)"
else
        cp $conf /run/edfd-vm-global.yaml
        install -m 0644 /usr/local/share/edfd-vm/edfd-partitions.yaml $conf
        jmark
        out=$(restart_edfd)
        st=$(edfctl status 2>&1)
        # The shipped unit keeps the cgroup tree read-only: edfd runs, refuses partitioned placement
        # and names the drop-in that opens it (units/edfd-partitions.conf).
        if edfd_active && ! parts_valid && grep -q "install /usr/share/edfd/edfd-partitions.conf as /etc/systemd/system/edfd.service.d/partitions.conf" <<<"$(jsince)$st"; then
                pass "edfd.service as shipped makes no partitions (read-only cgroup tree), runs, and names the drop-in that allows them"
        else
                fail "edfd.service as shipped makes no partitions (read-only cgroup tree), runs, and names the drop-in that allows them" \
                        "edfd $(edfd_state); see edfd's words" "$out" "$(jsince | grep -i -E 'partition|cpuset|cgroup' | head -8)" \
                        "$(grep -E 'Partitions|Placement|Note' <<<"$st")" "$(part_states 2>&1)"
        fi
        # The rest of the phase runs with the shipped drop-in, as its header says to install it.
        mkdir -p "$(dirname $dropin)"
        install -m 0644 /usr/share/edfd/edfd-partitions.conf $dropin
        systemctl daemon-reload
        [ -d "$pdir" ] && $probe apply >/dev/null 2>&1 # what a refused start may have half-made
        jmark
        out=$(restart_edfd)
        st=$(edfctl status 2>&1)
        if edfd_active && parts_valid; then
                pass "with the shipped drop-in edfd-partitions.conf: edfd makes its partitions at start (rt0-rt2 threaded, cpuset.cpus.partition = root, the root keeps CPU 0)"
        else
                fail "with the shipped drop-in edfd-partitions.conf: edfd makes its partitions at start (rt0-rt2 threaded, cpuset.cpus.partition = root, the root keeps CPU 0)" \
                        "edfd $(edfd_state)" "$out" "$(jsince | tail -12)" "$st" "$(part_states 2>&1)"
        fi
        diag "$(part_states 2>&1)" "$(jsince | grep -i partition | head -5)"
        if jsince | grep -q "Partitions: edfd-partitions keeps no CPU of its own (partition-shared-cpus: is not set)"; then
                pass "edfd warns at start that edfd-partitions keeps no CPU of its own (the kernel 6.1 fault below)"
        else
                fail "edfd warns at start that edfd-partitions keeps no CPU of its own (the kernel 6.1 fault below)" \
                        "$(jsince | grep -i partition | head -8)"
        fi
        # What one CPU admits, from the kernel's own numbers: sched_rt_runtime_us / sched_rt_period_us
        # as to_ratio() rounds it, less the fair server that debugfs shows on that CPU (6.12 and
        # later; 6.1 has none). In 2^-20 CPU (bandwidth.h), and in percent as edfctl shows it.
        rt_rt=$(cat /proc/sys/kernel/sched_rt_runtime_us) rt_per=$(cat /proc/sys/kernel/sched_rt_period_us)
        cap_bw=$(( (rt_rt * 1000 << 20) / (rt_per * 1000) ))
        fair_seen=
        for cpu in 0 1 2 3; do
                fair_seen+="cpu$cpu $(cat $fsd/cpu$cpu/runtime 2>/dev/null || echo none)/$(cat $fsd/cpu$cpu/period 2>/dev/null || echo none); "
        done
        usable_bw=$((cap_bw - fair_bw))
        cpu_pct=$(( (usable_bw * 100 + (1 << 19)) >> 20 ))
        left_pct=$(( ((usable_bw - (5800000 << 20) / 10000000) * 100 + (1 << 19)) >> 20 ))
        # The fair servers as debugfs shows them: none on 6.1; since 6.12 50 ms every 1 s on each CPU.
        name="the kernel's fair servers in debugfs are what edfd's model assumes (6.1: none; later: 50 ms / 1 s on every CPU)"
        if [ "$kname" = 6.1 ] && [ ! -e $fsd ]; then
                pass "$name"
        elif [ "$kname" != 6.1 ] &&
             [ "$fair_seen" = "cpu0 50000000/1000000000; cpu1 50000000/1000000000; cpu2 50000000/1000000000; cpu3 50000000/1000000000; " ]; then
                pass "$name"
        else
                fail "$name" "kernel $kname" "$fair_seen"
        fi
        diag "fair servers (runtime/period ns): $fair_seen" "one CPU admits $cpu_pct% ($usable_bw of 1048576: $cap_bw less $fair_bw)" \
                "edfd: $(journalctl -b --no-pager -o cat -u edfd.service 2>/dev/null | grep "fair servers hold" | tail -n 1)" \
                "$(grep -E '^ *dl_rq\[|dl_bw->' /sys/kernel/debug/sched/debug 2>/dev/null | paste - - - | head -4)"
        if grep -q "Placement: partitioned" <<<"$st" &&
           grep -Eq "Partitions: rt0 cpu1: $cpu_pct% capacity, 0% allocated, $cpu_pct% free, 0 reservations" <<<"$st" &&
           grep -Eq "^ +rt1 cpu2: $cpu_pct% capacity, 0% allocated, $cpu_pct% free, 0 reservations" <<<"$st" &&
           grep -Eq "^ +rt2 cpu3: $cpu_pct% capacity, 0% allocated, $cpu_pct% free, 0 reservations" <<<"$st"; then
                pass "edfctl status shows each partition: its CPU, $cpu_pct% capacity (the kernel's cap less its fair server), 0% allocated, $cpu_pct% free"
        else
                fail "edfctl status shows each partition: its CPU, $cpu_pct% capacity (the kernel's cap less its fair server), 0% allocated, $cpu_pct% free" \
                        "see status" "$st" "$(jsince | grep -i 'fair server')"
        fi
        # The kernel itself admits exactly that on a partition's CPU: in rt2 (CPU 3, empty), a helper
        # gets the largest runtime per 10 ms whose bandwidth fits beside the fair server, and 100 ns
        # more is refused (EBUSY). The helper exits after (an exit gives its bandwidth back at once).
        mkfifo /run/edfd-vm-go4
        spawn_in_partition rt2 /run/edfd-vm-go4
        hf=$hp
        rmax=$(( ((usable_bw + 1) * 10000000 + (1 << 20) - 1) / (1 << 20) - 1 ))
        k1=$(chrt -d --sched-runtime $rmax --sched-deadline 10000000 --sched-period 10000000 -p 0 $hf 2>&1; echo "exit $?")
        p1=$(params_of $hf)
        k2=$(chrt -d --sched-runtime $((rmax + 100)) --sched-deadline 10000000 --sched-period 10000000 -p 0 $hf 2>&1; echo "exit $?")
        p2=$(params_of $hf)
        name="the kernel admits $cpu_pct% on a partition's CPU and no more: ${rmax} ns / 10 ms admitted in rt2, 100 ns more refused (EBUSY)"
        if [ "$(allowed $hf)" = 3 ] && [ "$p1" = $rmax/10000000/10000000 ] && [[ $k2 == *"busy"* ]] && [ "$p2" = "$p1" ]; then
                pass "$name"
        elif [ "$(allowed $hf)" = 3 ] && [ "$p1" = $rmax/10000000/10000000 ] && [ "$p2" = $((rmax + 100))/10000000/10000000 ]; then
                known 6.12,6.12-rt "$name" \
                        "kernel 6.12: the root-domain rebuild that made the partitions dropped the fair servers from dl_bw->total_bw, so the kernel admits 95% beside a server that still runs" \
                        "$rmax: $k1 -> $p1" "+100 ns: $k2 -> $p2" "dl_bw->total_bw per CPU now: $(dl_totals)"
        else
                fail "$name" "move: $mv; Cpus_allowed_list $(allowed $hf)" "$rmax: $k1 -> $p1" "+100 ns: $k2 -> $p2" \
                        "$(grep -E '^ *dl_rq\[3\]' -A4 /sys/kernel/debug/sched/debug 2>/dev/null | grep -E 'dl_bw')"
        fi
        kill $hf 2>/dev/null
        wait $hf 2>/dev/null
        rm -f /run/edfd-vm-go4

        # --- two 58% land on their own CPUs ---
        spawn_periodic; a=$sp
        spawn_periodic; b=$sp
        spawn_periodic; c=$sp
        spawn_periodic; d=$sp
        sleep 0.5
        outa=$(edfctl admit -g rt -T 5.8ms -P 10ms -p $a 2>&1)
        outb=$(edfctl admit -g rt -T 5.8ms -P 10ms -p $b 2>&1)
        got=$(placement $a $b)
        if [ "$(allowed $a) $(cgroup_of $a) $(cpu_of $a)" = "1 /edfd-partitions/rt0 1" ] &&
           [ "$(allowed $b) $(cgroup_of $b) $(cpu_of $b)" = "2 /edfd-partitions/rt1 2" ] && is_deadline $a && is_deadline $b &&
           [ "$(params_of $a)" = 5800000/10000000/10000000 ]; then
                pass "two 5.8ms/10ms in rt: each on its own CPU (Cpus_allowed_list 1 and 2, cgroups rt0 and rt1, cpu in edfctl list --json)"
                diag "$got"
        else
                fail "two 5.8ms/10ms in rt: each on its own CPU (Cpus_allowed_list 1 and 2, cgroups rt0 and rt1, cpu in edfctl list --json)" \
                        "see the placements" "admit a: $outa" "admit b: $outb" "$got" "$(edfctl list 2>&1)" "$(journal | tail -6)"
        fi
        list_cpu=$(edfctl list 2>/dev/null | awk -v p=$a 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "CPU") c = i } c && $3 == p { print $c }')
        if [ "$list_cpu" = 1 ] && edfctl status 2>/dev/null | grep -Eq "pid $a .*cpu 1$"; then
                pass "edfctl list and status show the reservation's CPU"
        else
                fail "edfctl list and status show the reservation's CPU" "row: $(list_row $a)" "$(edfctl list 2>&1)" "$(edfctl status 2>&1 | grep "pid $a")"
        fi

        # A partition made invalid by taking its CPU offline is the probe's check above (the adapter's
        # poll sees it); here edfd is shown the other outside change the kernel allows, a partition
        # root made a member. Not done here: CPU 3 offline under an empty rt2 and back online with the
        # periodic processes running hung this guest in the online write (6.1 under TCG: the journal
        # ended at "smpboot: CPU 3 is now offline" and the guest never powered off).

        # --- the kernel itself refuses what a partition cannot hold ---
        # kernel_refuses WHEN: a helper moved into rt0 beside a's 58% asks the kernel for 40% more;
        # rt0 is on CPU $rt0_cpu.
        mkfifo /run/edfd-vm-go3
        rt0_cpu=1
        kernel_refuses() {
                local hk k
                spawn_in_partition rt0 /run/edfd-vm-go3
                hk=$hp
                k=$(chrt -d --sched-runtime 4000000 --sched-deadline 10000000 --sched-period 10000000 -p 0 $hk 2>&1; echo "exit $?")
                if [ "$(allowed $hk)" = $rt0_cpu ] && [[ $k == *"busy"* ]] && ! is_deadline $hk; then
                        pass "$1: the kernel refuses 40% more in rt0 beside its 58% (EBUSY: its own root domain of one CPU)"
                else
                        ${2:-fail} "$1: the kernel refuses 40% more in rt0 beside its 58% (EBUSY: its own root domain of one CPU)" \
                                "${3:-move: $mv}" "move: $mv; Cpus_allowed_list $(allowed $hk)" "chrt: $k" "$(policy_of $hk)" \
                                "$(grep -A3 -E '^ *dl_rq\[1\]' /sys/kernel/debug/sched/debug 2>/dev/null | grep -E 'dl_bw|total_bw')"
                        chrt -o -p 0 $hk 2>/dev/null
                fi
                echo $hk >/sys/fs/cgroup$mycg/cgroup.procs 2>/dev/null
                kill $hk 2>/dev/null
        }
        kernel_refuses "before any change from outside"

        # --- a partition made invalid from outside under a reservation: moved where it fits ---
        jmark
        echo member >$pdir/rt1/cpuset.cpus.partition
        movedb() { [ "$(cpu_of $b)" = 3 ] && [ "$(allowed $b)" = 3 ]; }
        wait_until 100 movedb
        got=$(placement $b)
        if movedb && is_deadline $b && jsince | grep -q "moved from cpu2 to cpu3: its partition is no longer valid"; then
                pass "rt1 made a member from outside: its 58% moves to cpu3, where it fits (Cpus_allowed_list 3), logged with the reason"
                diag "$(jsince | grep -i -E 'partition|moved' | head -3)"
        else
                fail "rt1 made a member from outside: its 58% moves to cpu3, where it fits (Cpus_allowed_list 3), logged with the reason" \
                        "$got" "$(part_states 2>&1)" "$(jsince | tail -8)"
        fi
        echo root >$pdir/rt1/cpuset.cpus.partition
        valid1() { jsince | grep -q "Partition rt1 (cpu2) is valid again"; }
        if wait_until 100 valid1 && [ "$(cat $pdir/rt1/cpuset.cpus.partition)" = root ]; then
                pass "rt1 made a partition root again: edfd uses it again"
        else
                fail "rt1 made a partition root again: edfd uses it again" "$(cat $pdir/rt1/cpuset.cpus.partition 2>&1)" "$(jsince | tail -5)"
        fi

        # --- the third lands on the CPU left, the fourth is refused with the numbers ---
        outc=$(edfctl admit -g rt -T 5.8ms -P 10ms -p $c 2>&1)
        outd=$(edfctl admit -g rt -T 5.8ms -P 10ms -p $d 2>&1)
        rc=$?
        if [ "$(allowed $c) $(cpu_of $c)" = "2 2" ] && [ $rc -eq 1 ] &&
           [ "$outd" = "edfctl: admission refused: rt: no CPU can take 58%: cpu1 $left_pct% left, cpu2 $left_pct% left, cpu3 $left_pct% left; nor does moving one reservation make room" ] &&
           [ "$(cgroup_of $d) $(allowed $d)" = "$mycg 0" ] && is_other $d; then
                pass "a third 58% takes cpu2; a fourth is refused with the numbers and not moved (\"$outd\")"
        else
                fail "a third 58% takes cpu2; a fourth is refused with the numbers and not moved" "exit $rc" "admit c: $outc" \
                        "admit d: $outd" "$(placement $c $d)"
        fi

        # rt1's changes above rebuilt the root domains. Kernel 6.1: rebuild_root_domains() skips a cpuset without effective CPUs and its children,
        # and edfd-partitions has none here (the partitions take CPUs 1-3): rt0's deadline thread is
        # not added back to its rebuilt root domain, and the kernel admits beside it again.
        kernel_refuses "after rt1's changes rebuilt the root domains" "known 6.1,6.12,6.12-rt" \
                "kernels 6.1 and 6.12: a root-domain rebuild forgets the deadline bandwidth of a partition below a cpuset without CPUs"
        rm -f /run/edfd-vm-go3

        # --- invalid under a reservation that fits nowhere else: released, with the reason ---
        jmark
        echo member >$pdir/rt1/cpuset.cpus.partition
        releasedc() { is_other $c && [[ $(cgroup_of $c) != /edfd-partitions* ]]; }
        wait_until 100 releasedc
        if releasedc && jsince | grep -q "released: its partition (cpu2) is no longer valid and no other CPU can take it" &&
           [ "$(cgroup_of $c)" = "$mycg" ]; then
                pass "rt1 invalid again with no room elsewhere: its reservation is released with the reason, the process back in its own cgroup"
        else
                fail "rt1 invalid again with no room elsewhere: its reservation is released with the reason, the process back in its own cgroup" \
                        "$(placement $c)" "its cgroup before: $mycg" "$(jsince | tail -6)"
        fi
        echo root >$pdir/rt1/cpuset.cpus.partition
        wait_until 100 valid1
        outc=$(edfctl admit -g rt -T 5.8ms -P 10ms -p $c 2>&1) || diag "admit c again: $outc"

        # --- a service's process moved into a partition stops with its service ---
        svc_check() { # UNIT PID WHAT
                local unit=$1 p=$2 what=$3 cg
                cg=$(cgroup_of $p)
                if [[ $cg == /edfd-partitions/* ]] && is_deadline $p; then
                        pass "$what: admitted, moved out of $unit's cgroup into $cg"
                else
                        fail "$what: admitted, moved out of $unit's cgroup into a partition" "$(placement $p)" \
                                "$(systemctl status --no-pager $unit 2>&1 | tail -5)" "$(journal | tail -4)"
                fi
                if [[ $cg != /edfd-partitions/* ]] || gone $p; then
                        fail "$what: systemctl stop $unit ends the moved process, and its reservation" \
                                "cannot be checked: the process was not admitted into a partition"
                        systemctl stop $unit 2>/dev/null
                        systemctl reset-failed $unit 2>/dev/null
                        return
                fi
                systemctl stop $unit 2>&1
                if wait_until 100 gone $p && wait_until 50 eval "! listed $p"; then
                        pass "$what: systemctl stop $unit ends the moved process, and its reservation"
                        diag "$(journal | grep -E "Process $p outlived" | sed 's/^.*edfd\[[0-9]*\]: //')"
                else
                        fail "$what: systemctl stop $unit ends the moved process, and its reservation" \
                                "still running after the stop: $(placement $p)" "$(ps -o pid,ppid,stat,comm -p $p 2>&1)" \
                                "unit: $(systemctl is-active $unit 2>&1)"
                        kill -KILL $p 2>/dev/null
                fi
                systemctl reset-failed $unit 2>/dev/null
        }
        # Its ExecStart admits itself: edfctl admit -- periodic (MainPID is the admitted process).
        systemd-run --quiet --unit=edfd-vm-rt-a --service-type=exec \
                edfctl admit -g rt -T 1ms -P 10ms -- $periodic --work 200us --period 10ms --duration 900s --quiet
        sa=$(systemctl show -p MainPID --value edfd-vm-rt-a.service)
        wait_until 300 eval "comm_is $sa periodic || gone $sa"
        svc_check edfd-vm-rt-a.service $sa "a service whose ExecStart is edfctl admit -g rt -- periodic"
        # A service whose main process is periodic, admitted from outside (-p MainPID).
        systemd-run --quiet --unit=edfd-vm-rt-m --service-type=exec $periodic --work 200us --period 10ms --duration 900s --quiet
        sm=$(systemctl show -p MainPID --value edfd-vm-rt-m.service)
        bg+=($sm)
        outs=$(edfctl admit -g rt -T 1ms -P 10ms -p $sm 2>&1) || diag "admit the main process: $outs"
        svc_check edfd-vm-rt-m.service $sm "a service's main process admitted with -p"
        # A service's main process (a shell) and its child periodic, admitted from outside (-p).
        systemd-run --quiet --unit=edfd-vm-rt-b sh -c "$periodic --work 200us --period 10ms --duration 900s --quiet & wait"
        sb=$(systemctl show -p MainPID --value edfd-vm-rt-b.service)
        wait_until 50 eval '[ -n "$(pgrep -P $sb -x periodic)" ]'
        sc=$(pgrep -P $sb -x periodic)
        bg+=($sc)
        outs=$(edfctl admit -g rt -T 1ms -P 10ms -p $sc 2>&1) || diag "admit the child: $outs"
        svc_check edfd-vm-rt-b.service $sc "a service's child process admitted with -p"

        # --- partitioned placement moves the whole process: the move flag's authorization (issue 41) ---
        # edfdtest may admit (its polkit rule), not manage: on cgroup v2 an admission into rt would
        # take its process out of its slice's limits, so it is refused, and nothing moves.
        as_user_exec edfdtest $periodic --work 200us --period 10ms --duration 900s --quiet &
        pu=$!
        bg+=($pu)
        wait_until 50 comm_is $pu periodic
        cg_before=$(cgroup_of $pu)
        out=$(as_user edfdtest edfctl admit -g rt -T 1ms -P 100ms -p $pu 2>&1)
        rc=$?
        if [ $rc -ne 0 ] && [[ $out == *"org.edfd.Admission1.manage"* || $out == *"polkit does not allow this"* ]] &&
           [ "$(cgroup_of $pu)" = "$cg_before" ] && is_other $pu && ! listed $pu; then
                pass "edfdtest (polkit's admit, not manage) is refused a partitioned admission: it would move its process out of its slice; nothing moved"
                diag "$out"
        else
                fail "edfdtest (polkit's admit, not manage) is refused a partitioned admission: it would move its process out of its slice; nothing moved" \
                        "exit $rc: $out" "cgroup $cg_before -> $(cgroup_of $pu)" "$(placement $pu)"
                edfctl release -p $pu >/dev/null 2>&1
        fi
        kill $pu 2>/dev/null

        # --- a failed move back never leaves a process in the root cgroup (issue 41) ---
        # mb_spawn DIR: a periodic process (it must wake to be admitted on its new CPU) in cgroup DIR
        # (made here), its pid in $mbp.
        mbroot=/sys/fs/cgroup
        mb_spawn() {
                mkdir -p "$mbroot$1"
                sh -c 'echo $$ >'"$mbroot$1"'/cgroup.procs && exec "$0" --work 200us --period 10ms --duration 900s --quiet' \
                        $periodic &
                mbp=$!
                bg+=($mbp)
                wait_until 50 comm_is $mbp periodic
        }
        mb_dead() { gone $1 || [ "$(awk '{ print $3 }' /proc/$1/stat 2>/dev/null)" = Z ]; } # our child: a zombie until reaped
        # Its cgroup removed while it sat in a partition: back to the nearest ancestor. edfd's poll
        # ends a held process whose cgroup is gone (every 2 s): the release comes right after the
        # rmdir, and a try that lost that race is made again.
        for try in 1 2 3; do
                mb_spawn /edfd-vm-mb/a
                jmark
                outa=$(edfctl admit -g rt -T 1ms -P 100ms -p $mbp 2>&1)
                inside=$(cgroup_of $mbp)
                rmdir $mbroot/edfd-vm-mb/a
                outr=$(edfctl release -p $mbp 2>&1)
                mb_dead $mbp || break
                rmdir $mbroot/edfd-vm-mb/a 2>/dev/null
        done
        if [[ $inside == /edfd-partitions* ]] && [ "$(cgroup_of $mbp)" = /edfd-vm-mb ] &&
           jsince | grep -q "Process $mbp could not go back to its cgroup /edfd-vm-mb/a: moved to /edfd-vm-mb, the nearest ancestor"; then
                pass "released after its cgroup was removed: the process goes to the nearest ancestor (/edfd-vm-mb), not the root cgroup, said in the log"
        else
                fail "released after its cgroup was removed: the process goes to the nearest ancestor (/edfd-vm-mb), not the root cgroup, said in the log" \
                        "admit: $outa" "in $inside, released: $outr" "now in $(cgroup_of $mbp 2>&1) (try $try)" "$(jsince | tail -4)"
        fi
        kill $mbp 2>/dev/null
        wait_until 50 mb_dead $mbp
        # Its cgroup made to refuse it (a domain controller enabled in its subtree_control, as its
        # user may in a delegated cgroup: the no-internal-processes rule), and so every ancestor
        # below the root: it stays in edfd's cgroups. memory, not pids: pids is a threaded
        # controller, which that rule does not cover, and the first run of this check saw the
        # process taken back into c.
        mb_spawn /edfd-vm-mb2/c
        jmark
        outa=$(edfctl admit -g rt -T 1ms -P 100ms -p $mbp 2>&1)
        inside=$(cgroup_of $mbp)
        sc=$( (echo +memory >$mbroot/edfd-vm-mb2/cgroup.subtree_control && echo +memory >$mbroot/edfd-vm-mb2/c/cgroup.subtree_control) 2>&1; echo "exit $?")
        outr=$(edfctl release -p $mbp 2>&1)
        now=$(cgroup_of $mbp)
        if [[ $inside == /edfd-partitions* ]] && [[ $now == /edfd-partitions* ]] && [ "$sc" = "exit 0" ] && is_other $mbp &&
           jsince | grep -q "Process $mbp stays in edfd-partitions: neither its cgroup /edfd-vm-mb2/c nor an ancestor of it below the root takes it"; then
                pass "released while its cgroup and every ancestor refuse it: the process stays in edfd's cgroups ($now), never the root cgroup, said in the log"
                diag "$(jsince | grep "Process $mbp" | sed 's/^.*edfd\[[0-9]*\]: //')"
        else
                fail "released while its cgroup and every ancestor refuse it: the process stays in edfd's cgroups, never the root cgroup, said in the log" \
                        "admit: $outa" "in $inside; subtree_control: $sc; released: $outr" "now in $now" "$(jsince | tail -4)"
        fi
        kill $mbp 2>/dev/null
        wait_until 50 mb_dead $mbp
        echo -memory >$mbroot/edfd-vm-mb2/c/cgroup.subtree_control 2>/dev/null
        echo -memory >$mbroot/edfd-vm-mb2/cgroup.subtree_control 2>/dev/null
        rmdir $mbroot/edfd-vm-mb2/c $mbroot/edfd-vm-mb2 $mbroot/edfd-vm-mb 2>/dev/null

        # --- restart and kill -9 keep every placement ---
        kept_p=($a $b $c)
        pl_before=$(placement "${kept_p[@]}")
        list_before=$(edfctl list 2>&1)
        parts_before=$(part_states 2>&1)
        say "# placements before the restarts:"
        diag "$pl_before" "$list_before"
        compare_placements() {
                local what=$1 now
                now=$(placement "${kept_p[@]}")
                if [ "$now" = "$pl_before" ] && [ "$(grep -cE '^[0-9]+ cpus ([123]) .*SCHED_DEADLINE.* edfd-cpu \1$' <<<"$now")" = 3 ] &&
                   [ "$(edfctl list 2>&1)" = "$list_before" ] && parts_valid &&
                   [ "$(part_states 2>&1)" = "$parts_before" ]; then
                        pass "$what: the same threads on the same CPUs and cgroups, the same edfctl list, the partitions valid"
                else
                        fail "$what: the same threads on the same CPUs and cgroups, the same edfctl list, the partitions valid" "changed" \
                                "before:" "$pl_before" "now:" "$now" "$(diff <(echo "$list_before") <(edfctl list 2>&1))" \
                                "$(part_states 2>&1)" "$(journal | tail -6)"
                fi
        }
        old=$(edfd_pid)
        out=$(restart_edfd)
        [ "$(edfd_pid)" != "$old" ] && edfd_active || diag "restart: $out, PID $old -> $(edfd_pid), $(edfd_state)"
        compare_placements "after systemctl restart edfd"
        old=$(edfd_pid)
        kill -KILL "$old"
        wait_until 600 restarted || diag "not restarted: $(edfd_state), PID $(edfd_pid)"
        compare_placements "after kill -9 of edfd and systemd's restart (PID $old -> $(edfd_pid))"
        out=$(edfctl admit -g rt -T 5.8ms -P 10ms -p $d 2>&1)
        if grep -q "no CPU can take 58%" <<<"$out" && is_other $d; then
                pass "after the restarts the books still refuse a fourth 58%"
        else
                fail "after the restarts the books still refuse a fourth 58%" "$out" "$(placement $d)"
        fi

        # --- offlining a busy partition CPU is refused and changes nothing ---
        # offline_refused CPU PID PART [known]: CPU, PART's only CPU, taken offline under PID's 58%.
        # With known, the kernel 6.1 fault of the layout without a shared CPU is said as TODO.
        offline_refused() {
                local cpu=$1 p=$2 part=$3 o widened before after books name
                before=$(placement $p; part_states; edfctl list 2>&1)
                books=$(part_states; edfctl list 2>&1)
                jmark
                o=$( (echo 0 >/sys/devices/system/cpu/cpu$cpu/online) 2>&1; echo "exit $?")
                widened=$(allowed $p)
                # The kernel pushed the thread off the CPU before it refused, widening its affinity
                # (6.1: "no longer affine to cpuN"); edfd's poll tries to pin it again.
                wait_until 60 eval '[ "$(allowed $p)" = $cpu ]'
                after=$(placement $p; part_states; edfctl list 2>&1)
                name="CPU $cpu offline under $part's 58% is refused by the kernel (EBUSY); the partitions and edfd's books are as they were"
                if [[ $o == *"busy"* ]] && [ "$(cat /sys/devices/system/cpu/cpu$cpu/online)" = 1 ] &&
                   [ "$(part_states; edfctl list 2>&1)" = "$books" ] && is_deadline $p; then
                        pass "$name"
                elif [[ $o != *"busy"* ]] && [ "${4:-}" = known ]; then
                        known 6.1,6.12,6.12-rt "$name" \
                                "kernels 6.1 and 6.12: after the rebuild above the kernel no longer counts $part's 58%, so dl_cpu_busy() lets CPU $cpu go" \
                                "offline: $o" "before:" "$before" "after:" "$after"
                        echo 1 >/sys/devices/system/cpu/cpu$cpu/online 2>/dev/null
                else
                        fail "$name" "offline: $o" "before:" "$before" "after:" "$after"
                        echo 1 >/sys/devices/system/cpu/cpu$cpu/online 2>/dev/null
                fi
                # Seen on 6.1: before it refuses, the kernel pushes the running thread off the CPU
                # going down, and the fallback widens its affinity to every CPU ("no longer affine to
                # cpuN"); edfd's poll then pins it again, or cannot (EBUSY: it sits in another root
                # domain).
                name="after the refused offline the thread of $p is still on CPU $cpu only (Cpus_allowed_list $cpu)"
                if [[ $o != *"busy"* ]] && [ "${4:-}" = known ]; then
                        known 6.1,6.12,6.12-rt "$name" \
                                "kernels 6.1 and 6.12: cannot be checked, the kernel took CPU $cpu offline under the 58% (it had stopped counting it, see above)" \
                                "$(placement $p)" "$(jsince | grep -E "$part|Reservation" | head -3 | sed 's/^.*edfd\[[0-9]*\]: //')"
                elif [ "$(allowed $p)" = $cpu ]; then
                        pass "$name"
                        diag "right after the refusal: Cpus_allowed_list $widened" "$(jsince | grep -E 'pinned to cpu' | head -1)"
                elif journalctl -b -k --no-pager -o cat 2>/dev/null | grep -q "process $p (.*) no longer affine to cpu$cpu"; then
                        # In either layout: the thread now runs in the root cgroup's root domain, and
                        # the kernel refuses to pin a deadline thread narrower than that (EBUSY).
                        known 6.1,6.12,6.12-rt "$name" \
                                "kernels 6.1 and 6.12: the refused offline pushed the thread off CPU $cpu first and widened its affinity to every CPU; pinning it back gets EBUSY" \
                                "Cpus_allowed_list $(allowed $p), on CPU $(awk '{print $39}' /proc/$p/stat 2>/dev/null), in $(cgroup_of $p)" \
                                "kernel: $(journalctl -b -k --no-pager -o cat 2>/dev/null | grep "process $p (.*) no longer affine" | tail -1)" \
                                "edfd: $(jsince | grep -E 'pinned|widened' | head -1 | sed 's/^.*edfd\[[0-9]*\]: //')"
                else
                        fail "$name" \
                                "Cpus_allowed_list $(allowed $p), on CPU $(awk '{print $39}' /proc/$p/stat 2>/dev/null), in $(cgroup_of $p)" \
                                "kernel: $(journalctl -b -k --no-pager -o cat 2>/dev/null | grep 'no longer affine' | tail -1)" \
                                "edfd: $(jsince | grep -E 'pinned|widened' | head -1 | sed 's/^.*edfd\[[0-9]*\]: //')"
                fi
        }
        offline_refused 1 $a rt0 known

        # --- clean up: release, then edfd's first configuration removes the partitions ---
        bad=
        for p in $a $b $c; do
                edfctl release -p $p >/dev/null 2>&1
                { is_other $p && [ "$(cgroup_of $p)" = "$mycg" ]; } || bad+=" $(placement $p);"
        done
        if [ -z "$bad" ] && [ "$(edfctl list 2>&1)" = "No reservations." ]; then
                pass "every partitioned reservation released: SCHED_OTHER, back in the cgroup it came from (kept over the restarts), edfctl list empty"
                diag "where they went: $(for p in $a $b $c; do echo -n "$p $(cgroup_of $p); "; done)"
        else
                fail "every partitioned reservation released: SCHED_OTHER, back in the cgroup it came from (kept over the restarts), edfctl list empty" \
                        "expected $mycg:$bad" "$(edfctl list 2>&1)" "$(grep '^P ' /run/edfd/state 2>&1 | head -5)"
        fi
        # --- partition-shared-cpus: edfd-partitions keeps CPU 1, and the kernel keeps counting ---
        # The same configuration with partitions rt0 and rt1 on CPUs 2 and 3 and CPU 1 kept for the
        # moved processes' other threads; the layout changes at the restart (every partition empty).
        sed -e 's/^  rt0: { cpus: "1" }$/  rt0: { cpus: "2" }/' -e 's/^  rt1: { cpus: "2" }$/  rt1: { cpus: "3" }/' \
                -e '/^  rt2: { cpus: "3" }$/d' -e 's/^partitions:$/partition-shared-cpus: "1"\npartitions:/' \
                /usr/local/share/edfd-vm/edfd-partitions.yaml >$conf
        jmark
        out=$(restart_edfd)
        if edfd_active && [ "$(cat $pdir/cpuset.cpus.effective 2>/dev/null)" = 1 ] && [ ! -d $pdir/rt2 ] &&
           [ "$(cat $pdir/rt0/cpuset.cpus $pdir/rt1/cpuset.cpus 2>/dev/null | tr '\n' ' ')" = "2 3 " ] &&
           [ "$(cat $pdir/rt0/cpuset.cpus.partition $pdir/rt1/cpuset.cpus.partition 2>/dev/null | tr '\n' ' ')" = "root root " ] &&
           [ "$(cat /sys/fs/cgroup/cpuset.cpus.effective)" = 0 ] && ! jsince | grep -q "keeps no CPU of its own"; then
                pass "partition-shared-cpus \"1\": at the restart edfd-partitions keeps CPU 1, rt0 and rt1 on CPUs 2 and 3, rt2 gone, no warning"
        else
                fail "partition-shared-cpus \"1\": at the restart edfd-partitions keeps CPU 1, rt0 and rt1 on CPUs 2 and 3, rt2 gone, no warning" \
                        "edfd $(edfd_state)" "$out" "$(part_states 2>&1)" "shared: $(cat $pdir/cpuset.cpus.effective 2>&1)" "$(jsince | tail -8)"
        fi
        spawn_periodic; e=$sp
        sleep 0.3
        oute=$(edfctl admit -g rt -T 5.8ms -P 10ms -p $e 2>&1)
        if [ "$(allowed $e) $(cpu_of $e)" = "2 2" ] && is_deadline $e &&
           [ "$(cat $pdir/rt0/cgroup.threads 2>/dev/null)" = $e ]; then
                pass "with a shared CPU: a 58% is admitted on cpu2 (its thread in rt0, Cpus_allowed_list 2)"
        else
                fail "with a shared CPU: a 58% is admitted on cpu2 (its thread in rt0, Cpus_allowed_list 2)" "admit: $oute" \
                        "$(placement $e)" "rt0 threads: $(cat $pdir/rt0/cgroup.threads 2>&1)" "$(jsince | tail -6)"
        fi
        # The rebuild that made 6.1 forget rt0's bandwidth above: rt1 made a member and a root again.
        echo member >$pdir/rt1/cpuset.cpus.partition
        sleep 0.5
        echo root >$pdir/rt1/cpuset.cpus.partition
        sleep 0.5
        mkfifo /run/edfd-vm-go3
        rt0_cpu=2
        kernel_refuses "with a shared CPU, after a root-domain rebuild"
        rm -f /run/edfd-vm-go3
        offline_refused 2 $e rt0
        edfctl release -p $e >/dev/null 2>&1
        if is_other $e && [ "$(cgroup_of $e)" = "$mycg" ]; then
                pass "with a shared CPU: the release puts the process back in its own cgroup as SCHED_OTHER"
        else
                fail "with a shared CPU: the release puts the process back in its own cgroup as SCHED_OTHER" "$(placement $e)"
        fi

        for p in "${pbg[@]}"; do kill -KILL $p 2>/dev/null; done
        cp /run/edfd-vm-global.yaml $conf
        jmark
        out=$(restart_edfd)
        if edfd_active && [ ! -e "$pdir" ] && [ "$(cat /sys/fs/cgroup/cpuset.cpus.effective)" = 0-3 ] &&
           ! edfctl status 2>&1 | grep -q "Partitions:"; then
                pass "edfd with its first configuration removes its partitions: the root cgroup has CPUs 0-3 again"
        else
                fail "edfd with its first configuration removes its partitions: the root cgroup has CPUs 0-3 again" \
                        "edfd $(edfd_state)" "$out" "$(part_states 2>&1)" "root: $(cat /sys/fs/cgroup/cpuset.cpus.effective)" "$(jsince | tail -6)"
                [ -d "$pdir" ] && $probe apply >/dev/null 2>&1
        fi
        if [ -f $dropin ]; then
                rm -f $dropin
                systemctl daemon-reload
                restart_edfd >/dev/null || diag "edfd did not come back without the drop-in: $(edfd_state)"
        fi

        # --- after the rebuilds: edfd's promise against the fair servers, whatever the kernel counts ---
        # One root domain again and no deadline task: the kernel's count should be every server, as at
        # boot. Where it lacks them (6.12: the rebuilds emptied it), the kernel admits more than the
        # servers leave; edfd, once it has measured that (three samples, about 20 s), says so and
        # still promises only the CPUs less the servers.
        jpid() { journalctl -b --no-pager -o cat _PID="$(edfd_pid)" 2>/dev/null; } # this edfd's own words
        t0=$(dl_totals | cut -d' ' -f1)
        lacking=$(( $(nproc) * fair_bw - ${t0:-0} ))
        said() { jpid | grep -q "The kernel counts .* less deadline bandwidth than its fair servers are set to take"; }
        measured() { jpid | grep -q "fair servers hold"; }
        if [ "$lacking" -gt 0 ]; then
                wait_until 600 said
        else
                wait_until 600 measured && sleep 25
        fi
        total_pct=$(( ($(nproc) * usable_bw * 100 + (1 << 19)) >> 20 ))
        st=$(edfctl status 2>&1)
        name="after the rebuilds edfd promises the CPUs less their fair servers (Capacity: $total_pct%), and says so where the kernel's count lacks them"
        if grep -q "Capacity: $total_pct% " <<<"$st" &&
           { { [ "$lacking" -le 0 ] && ! said; } || { [ "$lacking" -gt 0 ] && said; }; }; then
                pass "$name"
                diag "the kernel's count lacks $lacking of 1048576 (dl_bw->total_bw: $(dl_totals))" \
                        "$(jpid | grep -E 'fair servers')"
        else
                fail "$name" "the kernel's count lacks $lacking (dl_bw->total_bw: $(dl_totals))" \
                        "$(grep Capacity: <<<"$st")" "$(jpid | grep -E 'fair servers|Capacity' | tail -4)"
        fi
fi

[ "$failed" -eq 0 ]
