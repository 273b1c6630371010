#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Names that come from other users and processes, printed by edfctl and edfd-oci-hook: a thread
# whose comm holds an OSC sequence (ESC ] 0 ; ... BEL, which retitles a terminal) and bytes that
# are not UTF-8, set by the process itself with prctl(PR_SET_NAME); an OCI state whose id and
# annotations hold the same. Every output must show them escaped (basic/escape.h: \x1b, \a, \xff)
# with no raw control or non-ASCII byte, and every --json output must parse. Reports TAP.
#
#   test-untrusted-names.sh EDFCTL EDFD HOOK
#
# The hook's part needs no daemon. The rest runs a real edfd on a private bus (root, SCHED_DEADLINE,
# dbus-daemon, busctl, python3, a cgroup2 mount); without them it is skipped with the reason. The
# admitted workloads are two python3 processes holding 1% of one CPU each; nothing here asserts on
# time.

set -u
edfctl=${1:?usage: test-untrusted-names.sh EDFCTL EDFD HOOK} edfd=${2:?} hook=${3:?}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/tap.sh" # ok, not_ok, skip, wait_for

N=org.edfd.Admission1
P=/org/edfd/Admission1
tmp=$(mktemp -d /tmp/test-untrusted-names.XXXXXX)
bg_pids=()
bus_pid= edfd_pid= cgroot=

cleanup() {
        local p
        for p in "${bg_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
        wait "${bg_pids[@]}" 2>/dev/null
        [ -n "$edfd_pid" ] && kill "$edfd_pid" 2>/dev/null && wait "$edfd_pid" 2>/dev/null
        [ -n "$bus_pid" ] && kill "$bus_pid" 2>/dev/null && wait "$bus_pid" 2>/dev/null
        if [ -n "$cgroot" ] && [ -d "$cgroot" ]; then
                find "$cgroot" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r p; do
                        echo "$p" >"$(dirname "$cgroot")/cgroup.procs" 2>/dev/null
                done
                find "$cgroot" -depth -type d -exec rmdir {} + 2>/dev/null
        fi
        rm -rf "$tmp"
}
trap cleanup EXIT

# clean FILE: FILE holds no byte a terminal obeys (controls but tab and newline, DEL) and nothing
# but ASCII (these tests print no other text).
clean() { ! LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f\x80-\xff]' "$1"; }

# shows NAME FILE FIXED-STRING: FILE is clean and holds FIXED-STRING.
shows() {
        local name=$1 file=$2 want=$3
        if clean "$file" && grep -qF -- "$want" "$file"; then
                ok "$name"
        else
                not_ok "$name" "want \"$want\" and no raw control or non-ASCII byte in:" "$(cat -v "$file")"
        fi
}

# parses NAME FILE [PYTHON]: FILE is JSON (python3 -m json.tool), and PYTHON (reading d) holds.
parses() {
        local name=$1 file=$2 check=${3:-True}
        if python3 -m json.tool "$file" >/dev/null 2>&1 &&
                python3 -c "import json, sys; d = json.load(open(sys.argv[1])); assert $check, d" "$file" >"$tmp/py.out" 2>&1; then
                ok "$name"
        else
                not_ok "$name" "$(cat -v "$file")" "$(cat "$tmp/py.out" 2>/dev/null)"
        fi
}

# ---- edfd-oci-hook: the OCI state is the container creator's ----

# Rejected before any configuration or bus is read: each message quotes the hostile text.
printf '{"ociVersion": "1.0.2", "id": "c\\u001b[2Jabc", "status": "creating", "pid": 1, "bundle": "%s",
  "annotations": {"org.edfd.runtime": "5ms\\u001b]0;x\\u0007", "org.edfd.period": "10ms"}}' "$tmp" >"$tmp/state1.json"
"$hook" createRuntime <"$tmp/state1.json" >"$tmp/hook1.out" 2>&1
rc=$?
if [ $rc = 1 ]; then ok "hook: a hostile annotation fails the stage"; else not_ok "hook: a hostile annotation fails the stage" "exit $rc"; fi
shows "hook: the container id and an annotation's ESC and BEL are escaped" "$tmp/hook1.out" \
        'container c\x1b[2Jabc: annotation org.edfd.runtime: "5ms\x1b]0;x\a" has an unknown unit'
printf '{"ociVersion": "1.0.2", "id": "c\xff\xfe", "status": "creating", "pid": 1, "bundle": "%s",
  "annotations": {"org.edfd.\xc3\x28": "1", "org.edfd.runtime": "5ms", "org.edfd.period": "10ms"}}' "$tmp" >"$tmp/state2.json"
"$hook" createRuntime <"$tmp/state2.json" >"$tmp/hook2.out" 2>&1
shows "hook: bytes that are not UTF-8 in the id and an annotation's key are escaped" "$tmp/hook2.out" \
        'container c\xff\xfe: unknown annotation org.edfd.\xc3('
"$hook" $'create\x1b]0;x\x07' <"$tmp/state2.json" >"$tmp/hook3.out" 2>&1
shows "hook: an unknown stage is escaped" "$tmp/hook3.out" 'unknown stage "create\x1b]0;x\a"'

# ---- edfctl against a real edfd: a comm is the process's own ----

why_not=
if [ "$(id -u)" -ne 0 ]; then
        why_not="needs root (edfd applies SCHED_DEADLINE)"
elif ! command -v dbus-daemon >/dev/null || ! command -v busctl >/dev/null || ! command -v python3 >/dev/null; then
        why_not="needs dbus-daemon, busctl and python3"
else
        for v2 in /sys/fs/cgroup/unified /sys/fs/cgroup; do
                if [ "$(stat -f -c %T "$v2" 2>/dev/null)" = cgroup2fs ]; then
                        cgroot="$v2/edfd-test-names-$$"
                        break
                fi
        done
        [ -n "$cgroot" ] || why_not="no cgroup2 mount"
fi
if [ -n "$why_not" ]; then
        skip "edfctl status, list, monitor and plan --live with hostile names" "$why_not"
        echo "1..$n"
        [ "$failed" = 0 ]
        exit
fi

# hostile: a process that names itself \e]0;owned\a\xff\xc3( (15 bytes at most) and sleeps.
hostile() {
        python3 -c 'import ctypes, sys, time
ctypes.CDLL(None).prctl(15, b"\x1b]0;owned\x07\xff\xc3(", 0, 0, 0)
print("ready", flush=True)
time.sleep(120)' >"$tmp/$1.ready" &
        last=$!
        bg_pids+=("$last")
        wait_for test -s "$tmp/$1.ready"
}
comm_tty='\x1b]0;owned\a\xff\xc3('

sed "s|@BUS_SOCKET@|$tmp/bus.sock|" "$here/bus.conf" >"$tmp/bus.conf"
dbus-daemon --config-file="$tmp/bus.conf" --nofork --print-address=3 3>"$tmp/address" 2>"$tmp/dbus.log" &
bus_pid=$!
if ! wait_for test -s "$tmp/address"; then
        not_ok "a private dbus-daemon starts" "$(cat "$tmp/dbus.log")"
        echo "1..$n"
        exit 1
fi
export DBUS_SYSTEM_BUS_ADDRESS=$(head -1 "$tmp/address")
printf 'capacity: auto\ndefault-group: apps\ngroups:\n  apps:\n    bandwidth: 5%%\n' >"$tmp/edfd.yaml"
mkdir -p "$tmp/state"
"$edfd" --config "$tmp/edfd.yaml" --state-dir "$tmp/state" --cgroup-root "$cgroot" >"$tmp/edfd.log" 2>&1 &
edfd_pid=$!
if ! wait_for busctl --address="$DBUS_SYSTEM_BUS_ADDRESS" call "$N" "$P" org.freedesktop.DBus.Peer Ping; then
        not_ok "edfd starts on the private bus" "$(cat "$tmp/edfd.log")"
        echo "1..$n"
        exit 1
fi

# monitor first, so that it sees the admissions; a group change shows it is subscribed.
"$edfctl" monitor >"$tmp/mon" 2>"$tmp/mon.err" &
mon=$!
bg_pids+=("$mon")
for i in $(seq 50); do
        "$edfctl" group create "probe$i" -T 1ms -P 100ms >/dev/null 2>&1
        "$edfctl" group remove "probe$i" >/dev/null 2>&1
        grep -q "groups" "$tmp/mon" && break
        sleep 0.1
done

hostile one
pid=$last
if "$edfctl" admit -T 1ms -P 100ms -p "$pid" >"$tmp/admit.out" 2>&1; then
        ok "admit the process with the hostile comm"
else
        not_ok "admit the process with the hostile comm" "$(cat "$tmp/admit.out")"
fi

"$edfctl" status >"$tmp/status" 2>&1
shows "status: the comm is escaped" "$tmp/status" "pid $pid  tid $pid  $comm_tty"
"$edfctl" list >"$tmp/list" 2>&1
shows "list: the comm is escaped" "$tmp/list" "$comm_tty"
"$edfctl" list --json >"$tmp/list.json" 2>&1
parses "list --json parses; the comm's control bytes as JSON escapes, the bad bytes U+FFFD" "$tmp/list.json" \
        'd[0]["comm"] == "\x1b]0;owned\x07\ufffd\ufffd("'
"$edfctl" status --json >"$tmp/status.json" 2>&1
parses "status --json parses" "$tmp/status.json"

if wait_for grep -q "^.* added .*pid $pid" "$tmp/mon"; then
        shows "monitor: the comm is escaped" "$tmp/mon" "pid $pid tid $pid ($comm_tty) in apps (requested)"
else
        not_ok "monitor: the comm is escaped" "no added line for pid $pid" "$(cat -v "$tmp/mon")" "$(cat "$tmp/mon.err")"
fi

# A name the caller gave, echoed in the daemon's refusal and in edfctl's own.
"$edfctl" admit -g $'apps/x\x1b[2J' -T 1ms -P 100ms -p "$pid" >"$tmp/refused" 2>&1
shows "an error that quotes a group name escapes it" "$tmp/refused" 'x\x1b[2J'

# plan --live: a task name with a right-to-left override (valid UTF-8, but it reorders the line).
printf 'name,runtime,period\nv\xe2\x80\xaeevil,1ms,100ms\n' >"$tmp/plan.csv"
"$edfctl" plan --live "$tmp/plan.csv" >"$tmp/plan.out" 2>&1
shows "plan --live: a bidi override in a task name is escaped" "$tmp/plan.out" 'v\xe2\x80\xaeevil'
"$edfctl" plan --live --json "$tmp/plan.csv" >"$tmp/plan.json" 2>&1
parses "plan --live --json parses and keeps the valid name" "$tmp/plan.json" 'd["tasks"][0]["name"] == "v\u202eevil"'

echo "1..$n"
[ "$failed" = 0 ]
