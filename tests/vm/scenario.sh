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

say "# edfd VM scenario: kernel $(uname -r), $(nproc) CPUs, systemd $(systemctl --version | head -1 | cut -d' ' -f2)"
say "# cgroup: $(stat -fc %T /sys/fs/cgroup); root controllers: $(cat /sys/fs/cgroup/cgroup.subtree_control)"

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

[ "$failed" -eq 0 ]
