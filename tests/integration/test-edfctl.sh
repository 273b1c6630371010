#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# edfctl against a real edfd on a private bus, typed as a user would type it. Reports TAP.
#
#   test-edfctl.sh EDFCTL [EDFD]      (or EDFCTL_BINARY / EDFD_BINARY in the environment)
#
# Without a daemon (no root, no SCHED_DEADLINE, no dbus-daemon, no edfd binary) only the tests that
# need none run: usage errors (exit 2, checked with an unreachable bus address so that any attempt
# to use the bus would show as exit 3) and the unreachable bus (exit 3); the rest are skipped with
# the reason. Every bad call is checked to change nothing: the daemon's own lists (busctl call
# ListReservations / ListGroups) are compared before and after. The admitted workloads are `sleep`
# processes holding 1-2% of one CPU each, under 10% in all; nothing here asserts on time.

set -u

edfctl=${1:-${EDFCTL_BINARY:-}}
edfd=${2:-${EDFD_BINARY:-}}
here=$(cd "$(dirname "$0")" && pwd)

N=org.edfd.Admission1
P=/org/edfd/Admission1
I=org.edfd.Admission1.Manager

tmp=$(mktemp -d /tmp/test-edfctl.XXXXXX)
chmod 711 "$tmp" # the bus socket is in here, and one test connects as nobody
# admit --work reads the per-job overhead from here: none unless a test writes it.
export EDFD_CALIBRATION=$tmp/calibration
bg_pids=()
bus_pid= edfd_pid= cgroot= addr=

cleanup() {
        local p
        for p in "${bg_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
        wait "${bg_pids[@]}" 2>/dev/null
        [ -n "$edfd_pid" ] && kill "$edfd_pid" 2>/dev/null && wait "$edfd_pid" 2>/dev/null
        [ -n "$bus_pid" ] && kill "$bus_pid" 2>/dev/null && wait "$bus_pid" 2>/dev/null
        if [ -n "$cgroot" ] && [ -d "$cgroot" ]; then
                # Anything edfd moved there goes back to the root before the directories go.
                find "$cgroot" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r p; do
                        echo "$p" >"$(dirname "$cgroot")/cgroup.procs" 2>/dev/null
                done
                find "$cgroot" -depth -type d -exec rmdir {} + 2>/dev/null
        fi
        rm -rf "$tmp"
}
trap cleanup EXIT

# ---- TAP ----

. "$here/tap.sh" # ok, not_ok, skip, check, wait_for

# run ARGS...: edfctl ARGS with rc, out and err set.
run() {
        "$edfctl" "$@" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        out=$(<"$tmp/out")
        err=$(<"$tmp/err")
}

# expect NAME RC OUT_ERE ERR_ERE ARGS...: run edfctl ARGS; an ERE of "" means the stream must be
# empty, "." anything non-empty.
expect() {
        local name=$1 want_rc=$2 want_out=$3 want_err=$4 why=()
        shift 4
        run "$@"
        [ "$rc" = "$want_rc" ] || why+=("exit status $rc, expected $want_rc")
        if [ -z "$want_out" ]; then
                [ -z "$out" ] || why+=("stdout should be empty")
        elif ! grep -Eq -- "$want_out" <<<"$out"; then
                why+=("stdout does not match /$want_out/")
        fi
        if [ -z "$want_err" ]; then
                [ -z "$err" ] || why+=("stderr should be empty")
        elif ! grep -Eq -- "$want_err" <<<"$err"; then
                why+=("stderr does not match /$want_err/")
        fi
        if [ ${#why[@]} -eq 0 ]; then
                ok "$name"
        else
                not_ok "$name" "edfctl $*" "${why[@]}" "stdout: $out" "stderr: $err"
        fi
}

# ---- the daemon's own view ----

bcall() {
        busctl --address="$addr" "$@"
}

books() {
        bcall call "$N" "$P" "$I" ListReservations 2>&1
        bcall call "$N" "$P" "$I" ListGroups 2>&1
}

# expect_unchanged NAME RC ERR_ERE ARGS...: a refused call, and the books are as they were.
expect_unchanged() {
        local name=$1 want_rc=$2 want_err=$3 before after
        shift 3
        before=$(books)
        expect "$name" "$want_rc" "" "$want_err" "$@"
        after=$(books)
        if [ "$before" = "$after" ]; then
                ok "$name: the books did not change"
        else
                not_ok "$name: the books did not change" "before: $before" "after: $after"
        fi
}

spawn_sleep() {
        sleep 120 &
        last=$!
        bg_pids+=("$last")
}

has_reservation() { # has_reservation FIELD VALUE: ListReservations has an entry with it
        bcall --json=short call "$N" "$P" "$I" ListReservations |
                python3 -c 'import json,sys; f={"id":0,"pid":1,"tid":2}[sys.argv[1]]
d=json.load(sys.stdin)["data"][0]; sys.exit(0 if any(str(e[f])==sys.argv[2] for e in d) else 1)' "$1" "$2"
}

no_reservation() {
        ! has_reservation "$@"
}

id_of_pid() { # the id of the reservation of thread TID
        bcall --json=short call "$N" "$P" "$I" ListReservations |
                python3 -c 'import json,sys
d=json.load(sys.stdin)["data"][0]; print(next(e[0] for e in d if e[2]==int(sys.argv[1])))' "$1"
}

is_deadline() { # is_deadline PID RUNTIME DEADLINE PERIOD (ns): what the kernel says
        local s
        s=$(chrt -p "$1" 2>/dev/null) || return 1
        grep -q "policy: SCHED_DEADLINE" <<<"$s" && grep -q "parameters: $2/$3/$4\$" <<<"$s"
}

# ---- without a daemon ----

if [ -z "$edfctl" ] || [ ! -x "$edfctl" ]; then
        echo "1..0 # SKIP no edfctl binary given (test-edfctl.sh EDFCTL [EDFD])"
        exit 0
fi

# Any use of the bus from here on fails with exit 3, which the usage tests would catch.
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$tmp/no-such-bus"

expect "--help" 0 "^Commands:" "" --help
expect "help" 0 "^Commands:" "" help
expect "help admit" 0 "^edfctl admit " "" help admit
expect "--version" 0 "^edfctl [0-9]+\.[0-9]+" "" --version
for v in status list admit release reload monitor "group create" "group set" "group remove"; do
        # shellcheck disable=SC2086
        expect "$v --help" 0 "^edfctl $v" "" $v --help
done
expect "group --help shows the subcommands" 0 "group remove PATH" "" group --help

usage_cases=(
        "a duration without a unit|invalid runtime \"10\": has no unit|admit -T 10 -P 100ms -p 1"
        "a period without a unit|invalid period \"100\": has no unit|admit -T 1ms -P 100 -p 1"
        "a percentage as a duration|is a percentage, not a duration|admit -T 10% -P 100ms -p 1"
        "an unknown unit|unknown unit|admit -T 1min -P 100ms -p 1"
        "a negative duration|is negative|admit -T -1ms -P 100ms -p 1"
        "runtime above period|runtime 20ms is above the period 10ms|admit -T 20ms -P 10ms -p 1"
        "runtime above deadline|runtime 5ms is above the deadline 2ms|admit -T 5ms -D 2ms -P 10ms -p 1"
        "deadline above period|deadline 20ms is above the period 10ms|admit -T 1ms -D 20ms -P 10ms -p 1"
        "a deadline of 0|invalid deadline \"0ms\": is 0|admit -T 1ms -D 0ms -P 10ms -p 1"
        "runtime below 1024ns|runtime 1us is below 1024ns|admit -T 1us -P 10ms -p 1"
        "work plus margin above period|runtime 22ms \\(work 20ms \\+ 10%\\) is above the period 21ms|admit --work 20ms --margin 10% -P 21ms -p 1"
        "work overflow|invalid work .* is too large|admit --work 18446744073709551615ns --margin 100% -P 100ms -p 1"
        "margin without %|invalid margin \"10\": has no % sign|admit --work 1ms --margin 10 -P 100ms -p 1"
        "margin without work|--margin is added to --work|admit -T 1ms --margin 10% -P 100ms -p 1"
        "overhead without work|--overhead is added to --work|admit -T 1ms --overhead 10us -P 100ms -p 1"
        "a bad overhead|invalid overhead \"lots\": is not auto, none or a duration|admit --work 1ms --overhead lots -P 100ms -p 1"
        "calibrate too short|invalid duration \"1s\": is not between 3s and 1h|calibrate --duration 1s"
        "calibrate, a bad duration|invalid duration \"3\": has no unit|calibrate --duration 3"
        "calibrate, two files|unexpected argument \"b\"|calibrate a b"
        "calibrate takes no -T|-T/--runtime does not apply to calibrate|calibrate -T 1ms"
        "runtime and work|exclude each other|admit -T 1ms --work 1ms -P 100ms -p 1"
        "no runtime|the runtime is missing|admit -P 100ms -p 1"
        "no period|the period is missing|admit -T 1ms -p 1"
        "no target|say what to admit|admit -T 1ms -P 100ms"
        "both -p and -t|exclude each other|admit -T 1ms -P 100ms -p 1 -t 1"
        "both -p and a command|exclude each other|admit -T 1ms -P 100ms -p 1 -- true"
        "nothing after --|no command after --|admit -T 1ms -P 100ms --"
        "a command without --|unexpected argument \"sleep\" \\(put the command after --\\)|admit -T 1ms -P 100ms sleep 1"
        "pid 0|invalid process id \"0\": is 0|admit -T 1ms -P 100ms -p 0"
        "pid not a number|invalid process id \"x1\": is not a decimal number|admit -T 1ms -P 100ms -p x1"
        "pid too large|invalid thread id \"4294967296\": is above|admit -T 1ms -P 100ms -t 4294967296"
        "an option given twice|-T/--runtime given twice|admit -T 1ms -T 2ms -P 100ms -p 1"
        "an option the verb does not take|--json does not apply to admit|admit --json -T 1ms -P 100ms -p 1"
        "a flag the verb does not take|--reclaim does not apply to release|release --reclaim 1"
        "release without target|say what to release|release"
        "release id 0|invalid reservation id \"0\": is 0|release 0"
        "release id not a number|invalid reservation id \"1x\"|release 1x"
        "release id and -p|exclude each other|release 1 -p 1"
        "release two ids|unexpected argument \"2\"|release 1 2"
        "a command after -- for release|only admit runs a command|release 1 -- true"
        "group without subcommand|group needs a subcommand|group"
        "unknown group subcommand|unknown group subcommand \"rename\"|group rename a b"
        "group create without path|group create needs a group PATH|group create"
        "group create without size|the size is missing|group create x"
        "group create without period|the period is missing|group create x -T 1ms"
        "group create bandwidth and runtime|--bandwidth excludes|group create x --bandwidth 5% -T 1ms"
        "group bandwidth without %|invalid bandwidth \"5\": has no % sign|group create x --bandwidth 5"
        "group bandwidth 0%|invalid bandwidth \"0%\": is 0|group set x --bandwidth 0%"
        "group period 0|invalid period \"0ms\": is 0|group create x -T 1ms -P 0ms"
        "group remove with a size|-T/--runtime does not apply to group remove|group remove x -T 1ms"
        "status with an argument|unexpected argument \"x\"|status x"
        "list --json with an argument|unexpected argument \"x\"|list --json x"
        "an unknown command|unknown command \"frobnicate\"|frobnicate"
        "an unknown option|unrecognized option|status --frobnicate"
        "a missing option value|requires an argument|admit -T"
)
for c in "${usage_cases[@]}"; do
        IFS='|' read -r name msg args <<<"$c"
        # shellcheck disable=SC2086
        expect "usage: $name: exit 2 without the bus" 2 "" "$msg" $args
done
expect "usage: an empty group: exit 2 without the bus" 2 "" 'invalid group "": is empty' admit -g "" -T 1ms -P 100ms -p 1
expect "usage: an empty group path: exit 2 without the bus" 2 "" 'invalid group path "": is empty' group remove ""

expect "no bus: status exits 3 with a hint" 3 "" "cannot connect to the system bus.*is edfd running\? \(systemctl status edfd\)" status
expect "no bus: admit exits 3" 3 "" "is edfd running\?" admit -T 1ms -P 100ms -p $$
expect "no bus: admit -- COMMAND exits 3 and runs nothing" 3 "" "is edfd running\?" admit -T 1ms -P 100ms -- touch "$tmp/ran"
if [ -e "$tmp/ran" ]; then not_ok "no bus: the command did not run"; else ok "no bus: the command did not run"; fi
expect "no bus: release exits 3" 3 "" "is edfd running\?" release 1
expect "no bus: list --json exits 3" 3 "" "is edfd running\?" list --json
expect "no bus: reload exits 3" 3 "" "is edfd running\?" reload
expect "no bus: monitor exits 3" 3 "" "is edfd running\?" monitor
expect "no such thread: admit -t exits 1 before the bus" 1 "" "no such thread: 2147483647" admit -T 1ms -P 100ms -t 2147483647

# ---- with a daemon ----

why_not=
if [ "$(id -u)" -ne 0 ]; then
        why_not="needs root (edfd applies SCHED_DEADLINE)"
elif [ -z "$edfd" ] || [ ! -x "$edfd" ]; then
        why_not="no edfd binary given"
elif ! command -v dbus-daemon >/dev/null || ! command -v busctl >/dev/null; then
        why_not="needs dbus-daemon and busctl"
elif ! command -v python3 >/dev/null || ! command -v chrt >/dev/null; then
        why_not="needs python3 and chrt"
else
        for v2 in /sys/fs/cgroup/unified /sys/fs/cgroup; do
                if [ "$(stat -f -c %T "$v2" 2>/dev/null)" = cgroup2fs ]; then
                        cgroot="$v2/edfd-test-$$"
                        break
                fi
        done
        [ -n "$cgroot" ] || why_not="no cgroup2 mount"
        sleep 120 &
        probe=$!
        if [ -z "$why_not" ] && ! chrt -d -T 1000000 -P 100000000 -p 0 "$probe" 2>/dev/null; then
                why_not="SCHED_DEADLINE refused on a helper (another test holding the pool?)"
        fi
        kill "$probe"
        wait "$probe" 2>/dev/null
fi

daemon_tests() {
        local s id id2 id3 tid pid py cmd_pid mon before after

        sed "s|@BUS_SOCKET@|$tmp/bus.sock|" "$here/bus.conf" >"$tmp/bus.conf"
        dbus-daemon --config-file="$tmp/bus.conf" --nofork --print-address=3 3>"$tmp/address" 2>"$tmp/dbus.log" &
        bus_pid=$!
        if ! wait_for test -s "$tmp/address"; then
                not_ok "a private dbus-daemon starts" "$(cat "$tmp/dbus.log")"
                return
        fi
        addr=$(head -1 "$tmp/address")
        export DBUS_SYSTEM_BUS_ADDRESS=$addr
        ok "a private dbus-daemon starts"

        expect "bus without edfd: status exits 3 with a hint" 3 "" "edfd is not on the bus.*is edfd running\? \(systemctl status edfd\)" status
        expect "bus without edfd: admit exits 3" 3 "" "is edfd running\?" admit -T 1ms -P 100ms -p $$
        expect "bus without edfd: monitor exits 3" 3 "" "is edfd running\?" monitor

        cat >"$tmp/edfd.yaml" <<'YAML'
capacity: auto
default-group: apps
groups:
  apps:
    bandwidth: 6%
  media:
    bandwidth: 4%
    groups:
      audio:
        bandwidth: 2%
        cgroup: true
  sealed:
    bandwidth: 1%
    users: []
YAML
        # 40 user names of 60 bytes (2.4 KiB): ListGroups once cut its user list at 1024 bytes. The
        # names need not exist; they are only compared with the caller's.
        crowd=()
        letters=abcdefghijklmnopqrstuvwxyz
        for i in $(seq -w 0 39); do
                crowd+=("crowd-user-$i-$(printf '%046d' 0 | tr 0 "${letters:$((10#$i % 26)):1}")")
        done
        printf '  crowd:\n    bandwidth: 1%%\n    users: [%s]\n' "$(IFS=,; echo "${crowd[*]}")" >>"$tmp/edfd.yaml"
        printf '%s\n' "${crowd[@]}" >"$tmp/crowd.txt"
        mkdir -p "$tmp/state"
        "$edfd" --config "$tmp/edfd.yaml" --state-dir "$tmp/state" --cgroup-root "$cgroot" >"$tmp/edfd.log" 2>&1 &
        edfd_pid=$!
        if ! wait_for bcall call "$N" "$P" org.freedesktop.DBus.Peer Ping; then
                not_ok "edfd starts on the private bus" "$(cat "$tmp/edfd.log")"
                return
        fi
        ok "edfd starts on the private bus"

        # status, empty
        expect "status: exit 0" 0 "Capacity:" "" status
        s=$out
        if grep -Eq '^/ ' <<<"$s" && grep -Eq '^  apps +6ms/100ms +6% +0% +6%$' <<<"$s" &&
                grep -Eq '^  media +4ms/100ms +4% +2% +2%$' <<<"$s" &&
                grep -Eq '^    audio +2ms/100ms +2% +0% +2%$' <<<"$s"; then
                ok "status: the tree indented with runtime/period, bandwidth, allocated, free"
        else
                not_ok "status: the tree indented with runtime/period, bandwidth, allocated, free" "$s"
        fi
        if awk 'length > 80 { exit 1 }' <<<"$s"; then ok "status: fits 80 columns"; else not_ok "status: fits 80 columns" "$s"; fi
        if [ "$(grep -n '^ *media ' <<<"$s" | cut -d: -f1)" -lt "$(grep -n '^ *audio ' <<<"$s" | cut -d: -f1)" ]; then
                ok "status: a child group comes under its parent"
        else
                not_ok "status: a child group comes under its parent" "$s"
        fi
        expect "list: no reservations" 0 "^No reservations\.$" "" list
        expect "list --json: exit 0" 0 "." "" list --json
        if python3 -c 'import json,sys; sys.exit(json.loads(sys.argv[1]) != [])' "$out"; then ok "list --json: an empty array"; else not_ok "list --json: an empty array" "$out"; fi

        # admit -p PID
        spawn_sleep
        pid=$last
        expect "admit -p PID: prints the id" 0 '^[0-9]+$' "" admit -T 1ms -P 100ms -p "$pid"
        id=$out
        if has_reservation id "$id" && has_reservation pid "$pid"; then ok "admit -p PID: in the daemon's list"; else not_ok "admit -p PID: in the daemon's list" "$(books)"; fi
        if is_deadline "$pid" 1000000 100000000 100000000; then ok "admit -p PID: the kernel runs it SCHED_DEADLINE 1ms/100ms"; else not_ok "admit -p PID: the kernel runs it SCHED_DEADLINE 1ms/100ms" "$(chrt -p "$pid")"; fi
        expect_unchanged "admit an admitted thread: exit 1" 1 "^edfctl: already admitted: " admit -T 1ms -P 100ms -p "$pid"

        # admit -t TID of a second thread
        python3 -c 'import threading,time,sys
t=threading.Thread(target=time.sleep,args=(120,),daemon=True); t.start(); print(t.native_id, flush=True); time.sleep(120)' >"$tmp/py.tid" &
        py=$!
        bg_pids+=("$py")
        wait_for test -s "$tmp/py.tid"
        tid=$(<"$tmp/py.tid")
        expect "admit -t TID: a non-main thread" 0 '^[0-9]+$' "" admit -g media -T 1ms -D 50ms -P 100ms --reclaim --overrun-signal -t "$tid"
        id2=$out
        if bcall --json=short call "$N" "$P" "$I" ListReservations | python3 -c 'import json,sys
d=[e for e in json.load(sys.stdin)["data"][0] if e[0]==int(sys.argv[1])][0]
sys.exit(0 if (d[1],d[2],d[3],d[4],d[5],d[6],d[8])==(int(sys.argv[2]),int(sys.argv[3]),"media",1000000,50000000,100000000,3) else 1)' "$id2" "$py" "$tid"; then
                ok "admit -t TID: pid found, group, -D and flags reach the daemon"
        else
                not_ok "admit -t TID: pid found, group, -D and flags reach the daemon" "$(books)"
        fi
        expect "admit -p PID of the same process: its main thread" 0 '^[0-9]+$' "" admit --work 1ms --margin 10% --overhead none -P 100ms -p "$py"
        id3=$out
        if bcall --json=short call "$N" "$P" "$I" ListReservations | python3 -c 'import json,sys
d=[e for e in json.load(sys.stdin)["data"][0] if e[0]==int(sys.argv[1])][0]
sys.exit(0 if (d[2],d[3],d[4])==(int(sys.argv[2]),"apps",1100000) else 1)' "$id3" "$py"; then
                ok "admit --work 1ms --margin 10%: runtime 1.1ms in the default group"
        else
                not_ok "admit --work 1ms --margin 10%: runtime 1.1ms in the default group" "$(books)"
        fi

        # --work and the per-job overhead (edfctl calibrate's file, $EDFD_CALIBRATION)
        runtime_of() { # id -> its runtime in ns, from the daemon's books
                bcall --json=short call "$N" "$P" "$I" ListReservations | python3 -c 'import json,sys
print([e for e in json.load(sys.stdin)["data"][0] if e[0]==int(sys.argv[1])][0][4])' "$1"
        }
        check_runtime() { # name want_ns: the reservation just admitted ($out) has it; then released
                local got
                got=$(runtime_of "$out" 2>/dev/null)
                [ "$got" = "$2" ] && ok "$1" || not_ok "$1" "runtime ${got:-none}, expected $2" "$(books)"
                "$edfctl" release "$out" >/dev/null 2>&1
        }
        write_calibration() { # overhead_ns [kernel]
                local kernel=${2:-"$(uname -r) $(uname -v)"} model
                model=$(awk -F: '/^model name/ { sub(/^[ \t]+/, "", $2); sub(/[ \t]+$/, "", $2); print $2; exit }' /proc/cpuinfo)
                printf 'version = 1\nkernel = %s\ncpu-model = %s\ncpus = %s\nhz = 250\nmeasured = 0\nperiod = 10000000\njobs = 1000\noverhead = %s\np50 = 1\np99 = 2\nmax = %s\n' \
                        "$kernel" "${model:-unknown}" "$(getconf _NPROCESSORS_ONLN)" "$1" "$1" >"$EDFD_CALIBRATION"
        }
        rm -f "$EDFD_CALIBRATION"
        spawn_sleep
        expect "admit --work without a calibration: adds nothing and says so" 0 '^[0-9]+$' \
                "no per-job overhead added: .*calibration does not exist \(run edfctl calibrate" admit --work 1ms -P 100ms -p "$last"
        check_runtime "admit --work without a calibration: runtime = work" 1000000
        write_calibration 85000
        spawn_sleep
        expect "admit --work with a calibration: says what it added" 0 '^[0-9]+$' \
                "^edfctl: runtime 1.185ms: work 1ms \+ margin 10% \+ per-job overhead 85us \(edfctl calibrate\)$" \
                admit --work 1ms --margin 10% -P 100ms -p "$last"
        check_runtime "admit --work with a calibration: runtime = work x 1.1 + 85us" 1185000
        run status
        if grep -q "^    Overhead: 85us per job (edfctl calibrate), added by --work; tick 4ms$" <<<"$out" &&
           grep -Eq "^     Machine: (a virtual machine|no hypervisor seen): deadlines hold while" <<<"$out"; then
                ok "status says what edfd can promise on this machine and the calibrated overhead"
        else
                not_ok "status says what edfd can promise on this machine and the calibrated overhead" "$out"
        fi
        run status --json
        if python3 -c 'import json,sys; m=json.load(sys.stdin)["machine"]
sys.exit(0 if (m["calibration"], m["per_job_overhead"], m["tick"]) == ("ok", 85000, 4000000) and isinstance(m["virtual"], bool) else 1)' <<<"$out"; then
                ok "status --json: machine.calibration, per_job_overhead, tick, virtual"
        else
                not_ok "status --json: machine.calibration, per_job_overhead, tick, virtual" "$out"
        fi
        spawn_sleep
        expect "admit --work --overhead 50us: the given overhead" 0 '^[0-9]+$' "per-job overhead 50us \(--overhead\)" \
                admit --work 1ms --overhead 50us -P 100ms -p "$last"
        check_runtime "admit --work --overhead 50us: runtime 1.05ms" 1050000
        spawn_sleep
        expect "admit --work --overhead none: no overhead, no word" 0 '^[0-9]+$' "" admit --work 1ms --overhead none -P 100ms -p "$last"
        check_runtime "admit --work --overhead none: runtime = work" 1000000
        write_calibration 85000 "0.0.1-another-kernel #1"
        spawn_sleep
        expect "admit --work with a stale calibration: adds nothing and names why" 0 '^[0-9]+$' \
                "is stale: it was measured on kernel \"0.0.1-another-kernel #1\", this is \"$(uname -r)" admit --work 1ms -P 100ms -p "$last"
        check_runtime "admit --work with a stale calibration: runtime = work" 1000000
        run status
        # The line wraps at 80 columns: read it joined.
        tr '\n' ' ' <<<"$out" | tr -s ' ' | grep -q "Overhead: not used: the calibration in .* is stale: it was measured on kernel" &&
                ok "status says a stale calibration is not used, and why" ||
                not_ok "status says a stale calibration is not used, and why" "$out"
        before=$(books)
        printf 'version = 1\nbogus = 3\n' >"$EDFD_CALIBRATION"
        spawn_sleep
        expect "admit --work with a damaged calibration: refused, names the line" 1 "" \
                "calibration line 2 has an unknown key \(run edfctl calibrate again, or give --overhead none\)" \
                admit --work 1ms -P 100ms -p "$last"
        printf 'version = 1\0kernel = x\n' >"$EDFD_CALIBRATION"
        spawn_sleep
        expect "admit --work with a calibration holding a NUL: refused" 1 "" "holds a NUL byte" admit --work 1ms -P 100ms -p "$last"
        [ "$(books)" = "$before" ] && ok "a damaged calibration changes nothing" || not_ok "a damaged calibration changes nothing"

        # edfctl calibrate itself, for real: a reservation of its own through this edfd
        rm -f "$EDFD_CALIBRATION"
        before=$(books)
        run calibrate -g / --duration 3s
        if [ "$rc" = 0 ] && grep -q "^Per-job overhead: " <<<"$out" && grep -q "^Written to $EDFD_CALIBRATION" <<<"$out"; then
                ok "calibrate --duration 3s: measured and written"
        else
                not_ok "calibrate --duration 3s: measured and written" "rc $rc" "stdout: $out" "stderr: $err"
        fi
        cal_overhead=$(awk -F' = ' '$1 == "overhead" { print $2 }' "$EDFD_CALIBRATION" 2>/dev/null)
        cal_jobs=$(awk -F' = ' '$1 == "jobs" { print $2 }' "$EDFD_CALIBRATION" 2>/dev/null)
        if [ -n "$cal_overhead" ] && [ "$cal_overhead" -gt 0 ] && [ "$cal_overhead" -lt 4000000 ] &&
                [ $((cal_overhead % 1000)) = 0 ] && [ "${cal_jobs:-0}" -ge 100 ]; then
                ok "calibrate: an overhead in whole us, above 0 and under the 4ms budget, from $cal_jobs jobs ($cal_overhead ns)"
        else
                not_ok "calibrate: an overhead in whole us, above 0 and under the 4ms budget" "$(cat "$EDFD_CALIBRATION" 2>&1)"
        fi
        [ "$(books)" = "$before" ] && ok "calibrate gives its reservation back" || not_ok "calibrate gives its reservation back" "$(books)"
        spawn_sleep
        expect "admit --work uses what calibrate measured" 0 '^[0-9]+$' "per-job overhead .* \(edfctl calibrate\)" \
                admit --work 1ms -P 100ms -p "$last"
        check_runtime "admit --work: runtime = work + the measured overhead" $((1000000 + ${cal_overhead:-0}))
        expect "calibrate into a directory that cannot be made: refused before measuring" 1 "" "cannot write /proc/edfd/calibration" \
                calibrate --duration 3s /proc/edfd/calibration
        expect "calibrate into a directory: refused" 1 "" "cannot write $tmp: Is a directory" calibrate --duration 3s "$tmp"
        rm -f "$EDFD_CALIBRATION"

        # refusals with the daemon's numbers; nothing changes
        spawn_sleep
        expect_unchanged "over budget: exit 1 with the numbers" 1 "^edfctl: admission refused: .*[0-9.]+%.*[0-9.]+%" admit -g media/audio -T 3ms -P 100ms -p "$last"
        expect_unchanged "no such group: exit 1" 1 "^edfctl: no such group: " admit -g nosuch -T 1ms -P 100ms -p "$last"
        expect_unchanged "an invalid group path: exit 2" 2 "^edfctl: invalid parameters: " admit -g "a//b" -T 1ms -P 100ms -p "$last"
        expect_unchanged "a period below the kernel's minimum: exit 2" 2 "^edfctl: invalid parameters: " admit -T 10us -P 50us -p "$last"
        expect_unchanged "no such process: exit 1" 1 "^edfctl: no such thread: " admit -T 1ms -P 100ms -p 2147483646
        expect_unchanged "--move into a group without a cgroup: exit 2" 2 "^edfctl: invalid parameters: .*cgroup" admit --move -g apps -T 1ms -P 100ms -p "$last"
        before=$(books)
        nobody_edfctl=$(runnable_by_nobody "$edfctl" "$tmp/nobody")
        setpriv --reuid=65534 --regid=65534 --clear-groups "$nobody_edfctl" group create apps/x -T 1ms -P 100ms >"$tmp/out" 2>"$tmp/err"
        rc=$?
        after=$(books)
        if [ "$rc" = 1 ] && grep -q "^edfctl: permission denied: " "$tmp/err" && [ "$before" = "$after" ]; then
                ok "group create as nobody: permission denied, exit 1, nothing changed"
        else
                not_ok "group create as nobody: permission denied, exit 1, nothing changed" "exit $rc" "$(cat "$tmp/err")"
        fi

        # --move
        expect "admit --move: into the group's cgroup" 0 '^[0-9]+$' "" admit --move -g media/audio -T 1ms -P 100ms -p "$last"
        if grep -q "edfd-test-$$/" "/proc/$last/cgroup"; then ok "admit --move: the process is in edfd's cgroup"; else not_ok "admit --move: the process is in edfd's cgroup" "$(cat "/proc/$last/cgroup")"; fi

        # list, status and their JSON against the daemon's own lists
        expect "list: exit 0" 0 "^ID +GROUP +PID +TID +COMM +RUNTIME +DEADLINE +PERIOD +BW +FLAGS$" "" list
        s=$out
        if grep -Eq "^ *$id +apps +$pid +$pid +sleep +1ms +100ms +100ms +1% *" <<<"$s" &&
                grep -Eq "^ *$id2 +media +$py +$tid +python3 +1ms +50ms +100ms +1% +reclaim,overrun" <<<"$s"; then
                ok "list: one aligned row per reservation with comm and flags"
        else
                not_ok "list: one aligned row per reservation with comm and flags" "$s"
        fi
        if awk 'length > 80 { exit 1 }' <<<"$s"; then ok "list: fits 80 columns"; else not_ok "list: fits 80 columns" "$s"; fi

        bcall --json=short call "$N" "$P" "$I" ListReservations >"$tmp/res.json"
        bcall --json=short call "$N" "$P" "$I" ListGroups >"$tmp/groups.json"
        bcall --json=short call "$N" "$P" org.freedesktop.DBus.Properties GetAll s "$I" >"$tmp/props.json"
        run list --json
        printf '%s' "$out" >"$tmp/list.json"
        if python3 - "$tmp/list.json" "$tmp/res.json" <<'PY'
import json, sys
mine = json.load(open(sys.argv[1]))
theirs = json.load(open(sys.argv[2]))["data"][0]
keys = ["id", "pid", "tid", "group", "runtime", "deadline", "period", "bandwidth", "flags", "split_from", "uid"]
def norm(e):
    # The entry ends in an a{sv}: busctl shows it as {key: {"type": ..., "data": ...}}.
    assert len(e) == len(keys) + 1 and isinstance(e[-1], dict), e
    d = dict(zip(keys, e))
    d["bandwidth"] = d["bandwidth"] / 2**20
    d["split_from"] = d["split_from"] or None
    d["donated"] = e[-1]["donated"]["data"] if "donated" in e[-1] else None
    assert (d["donated"] is None) == (d["split_from"] is None), e
    return d
assert len(mine) == len(theirs), (len(mine), len(theirs))
for m, t in zip(mine, theirs):
    t = norm(t)
    for k in keys + ["donated"]:
        assert m[k] == t[k], (k, m[k], t[k])
    comm = open("/proc/%d/task/%d/comm" % (t["pid"], t["tid"])).read().strip()
    assert m["comm"] == comm, (m["comm"], comm)
PY
        then ok "list --json: parsed back, equals ListReservations"; else not_ok "list --json: parsed back, equals ListReservations" "$out"; fi

        run status --json
        printf '%s' "$out" >"$tmp/status.json"
        if python3 - "$tmp/status.json" "$tmp/groups.json" "$tmp/res.json" "$tmp/props.json" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
groups = json.load(open(sys.argv[2]))["data"][0]
res = json.load(open(sys.argv[3]))["data"][0]
props = {k: v["data"] for k, v in json.load(open(sys.argv[4]))["data"][0].items()}
U = 2**20
assert st["version"] == props["Version"]
for k, p in [("capacity", "Capacity"), ("allocated", "Allocated"), ("unmanaged", "Unmanaged"),
             ("kernel_capacity", "KernelCapacity")]:
    assert st[k] == props[p] / U, (k, st[k], props[p])
assert st["free"] == (props["Capacity"] - props["Allocated"]) / U
assert st["kernel_admission"] == props["KernelAdmission"]
assert st["overcommitted"] == props["Overcommitted"]
# The counters move with every process on the machine; the properties were read first.
for k, p in [("seen", "EventsSeen"), ("lost", "EventsLost"), ("resyncs", "Resyncs"),
             ("unseen_children", "UnseenChildren")]:
    assert st["events"][k] >= props[p], (k, st["events"][k], props[p])
mine = {g["path"]: g for g in st["groups"]}
assert len(mine) == len(groups)
for path, runtime, period, bw, alloc, nres, ngroups, cgroup, fork, threads, anyone, users, dynamic, extra in groups:
    g = mine[path]
    assert (g["runtime"], g["period"]) == (runtime, period), path
    assert g["bandwidth"] == bw / U and g["allocated"] == alloc / U and g["free"] == (bw - alloc) / U, path
    assert (g["reservations"], g["groups"], g["fork"], g["threads"], g["dynamic"]) == \
        (nres, ngroups, fork, threads, dynamic), path
    # ListGroups: anyone (JSON null), nobody but root (anyone false, no users: JSON []), else the names.
    assert not (anyone and users), path
    want_users = None if anyone else users
    assert (g["cgroup"] or "") == cgroup and g["users"] == want_users, path
    # The entry's a{sv}, which edfctl shows as keys of the group.
    assert extra["min_split_runtime"]["type"] == "t" and extra["overridden"]["type"] == "b", (path, extra)
    assert g["min_split_runtime"] == extra["min_split_runtime"]["data"], path
    assert g["overridden"] == extra["overridden"]["data"], path
    assert g["overridden"] is False, path  # nothing was resized yet
assert [r["id"] for r in st["reservations"]] == [r[0] for r in res]
# None is split yet: "donated" is null everywhere, and no entry's a{sv} has it.
assert all(r["donated"] is None for r in st["reservations"]) and all("donated" not in r[-1] for r in res)
PY
        then ok "status --json: parsed back, equals ListGroups, ListReservations and the properties"; else not_ok "status --json: parsed back, equals ListGroups, ListReservations and the properties" "$out"; fi
        if python3 - "$tmp/status.json" "$tmp/crowd.txt" <<'PY'
import json, sys
g = {g["path"]: g for g in json.load(open(sys.argv[1]))["groups"]}
crowd = open(sys.argv[2]).read().split()
assert len(crowd) == 40 and len(",".join(crowd)) > 1024
assert g["apps"]["users"] is None and g["/"]["users"] is None
assert g["sealed"]["users"] == []
assert g["crowd"]["users"] == crowd, g["crowd"]["users"]
assert g["/"]["min_split_runtime"] == 500000 and g["apps"]["min_split_runtime"] == 500000
PY
        then ok "status --json: users null for anyone, [] for nobody but root, all 40 names (2.4 KiB) uncut"; else not_ok "status --json: users null for anyone, [] for nobody but root, all 40 names (2.4 KiB) uncut" "$out"; fi

        expect "status: exit 0 with reservations" 0 "Reservations: 4 in 6 groups" "" status
        s=$out
        printf '%s\n' "$s" >"$tmp/status.txt"
        if python3 - "$id" "$id2" "$tmp/status.txt" <<'PY'
import re, sys
lines = open(sys.argv[3]).read().splitlines()
def row(pattern):
    return next(i for i, l in enumerate(lines) if re.match(pattern, l))
apps, media, audio = row(r"^  apps "), row(r"^  media "), row(r"^    audio ")
r1 = row(r"^    #%s +pid \d+ +tid \d+ +sleep +1ms/100ms/100ms +1%%$" % sys.argv[1])
r2 = row(r"^    #%s +pid \d+ +tid \d+ +python3 +1ms/50ms/100ms +1%%$" % sys.argv[2])
assert apps < r1 < media < r2 < audio, (apps, r1, media, r2, audio)
assert re.match(r"^      #\d+ +pid", lines[audio + 1])
assert re.match(r"^  media +4ms/100ms +4% +3% +1%$", lines[media]), lines[media]
PY
        then ok "status: reservations under their group, with comm and runtime/deadline/period"; else not_ok "status: reservations under their group, with comm and runtime/deadline/period" "$s"; fi
        if awk 'length > 80 { exit 1 }' <<<"$s"; then ok "status with reservations: fits 80 columns"; else not_ok "status with reservations: fits 80 columns" "$s"; fi

        # release
        expect "release ID: exit 0, silent" 0 "" "" release "$id"
        if no_reservation id "$id" && chrt -p "$pid" | grep -q SCHED_OTHER; then ok "release ID: gone from the books, SCHED_OTHER again"; else not_ok "release ID: gone from the books, SCHED_OTHER again" "$(books)" "$(chrt -p "$pid")"; fi
        expect_unchanged "release ID again: exit 1" 1 "^edfctl: no such reservation: " release "$id"
        expect "release -t TID: exit 0" 0 "" "" release -t "$tid"
        if no_reservation id "$id2"; then ok "release -t TID: gone"; else not_ok "release -t TID: gone" "$(books)"; fi
        expect_unchanged "release -t TID without one: exit 1" 1 "^edfctl: no such reservation: " release -t "$tid"
        expect "admit -t TID again" 0 '^[0-9]+$' "" admit -T 1ms -P 100ms -t "$tid"
        expect "release -p PID: every thread of the process" 0 "" "" release -p "$py"
        if no_reservation pid "$py"; then ok "release -p PID: none left"; else not_ok "release -p PID: none left" "$(books)"; fi
        expect_unchanged "release -p PID without any: exit 1" 1 "^edfctl: no such reservation: " release -p "$py"

        # admit -- COMMAND
        "$edfctl" admit -T 1ms -P 100ms -- sleep 120 >"$tmp/cmd.out" 2>"$tmp/cmd.err" &
        cmd_pid=$!
        bg_pids+=("$cmd_pid")
        wait_for grep -qx sleep "/proc/$cmd_pid/comm"
        if has_reservation pid "$cmd_pid" && is_deadline "$cmd_pid" 1000000 100000000 100000000; then
                ok "admit -- sleep: the command runs SCHED_DEADLINE in edfctl's process"
        else
                not_ok "admit -- sleep: the command runs SCHED_DEADLINE in edfctl's process" "$(books)" "$(chrt -p "$cmd_pid")"
        fi
        if [ -z "$(ls -l "/proc/$cmd_pid/fd" 2>/dev/null | grep socket)" ]; then ok "admit -- sleep: no bus socket leaked into the command"; else not_ok "admit -- sleep: no bus socket leaked into the command" "$(ls -l "/proc/$cmd_pid/fd")"; fi
        kill "$cmd_pid"
        wait "$cmd_pid" 2>/dev/null
        if [ ! -s "$tmp/cmd.out" ] && [ ! -s "$tmp/cmd.err" ]; then ok "admit -- sleep: prints nothing"; else not_ok "admit -- sleep: prints nothing" "$(cat "$tmp/cmd.out" "$tmp/cmd.err")"; fi
        if wait_for no_reservation pid "$cmd_pid"; then ok "admit -- sleep: its reservation ends when it exits"; else not_ok "admit -- sleep: its reservation ends when it exits" "$(books)"; fi

        expect "admit -- COMMAND: the exit status is the command's" 7 "" "" admit -T 1ms -P 100ms -- sh -c 'exit 7'
        expect "admit -- COMMAND: the command's output passes through" 0 "^hello$" "" admit -T 1ms -P 100ms -- echo hello
        expect "admit -- COMMAND not found: exit 127" 127 "" "^edfctl: cannot execute /nonexistent/cmd: No such file or directory$" admit -T 1ms -P 100ms -- /nonexistent/cmd
        expect "admit -- COMMAND not executable: exit 126" 126 "" "^edfctl: cannot execute $tmp/edfd.yaml: Permission denied$" admit -T 1ms -P 100ms -- "$tmp/edfd.yaml"
        expect_unchanged "admit -- COMMAND refused: exit 1, the command does not run" 1 "^edfctl: admission refused: " admit -g media/audio -T 5ms -P 100ms -- touch "$tmp/ran"
        if [ -e "$tmp/ran" ]; then not_ok "admit -- COMMAND refused: nothing ran"; else ok "admit -- COMMAND refused: nothing ran"; fi
        # admit --startup BOUND -- COMMAND: the child is admitted when it first sleeps
        "$edfctl" admit -T 1ms -P 100ms --startup 1s -- sleep 120 >"$tmp/cmd.out" 2>"$tmp/cmd.err" &
        ctl_pid=$!
        bg_pids+=("$ctl_pid")
        wait_for pgrep -P "$ctl_pid" -x sleep
        child=$(pgrep -P "$ctl_pid" -x sleep | head -1)
        if [ -n "$child" ] && wait_for has_reservation pid "$child" && is_deadline "$child" 1000000 100000000 100000000 &&
                ! has_reservation pid "$ctl_pid"; then
                ok "admit --startup -- sleep: the command's own process is admitted once it sleeps, edfctl is not"
        else
                not_ok "admit --startup -- sleep: the command's own process is admitted once it sleeps, edfctl is not" \
                        "edfctl $ctl_pid, child ${child:-none}" "$(books)"
        fi
        kill -TERM "$ctl_pid"
        wait "$ctl_pid" 2>/dev/null
        rc=$?
        if [ "$rc" = 143 ] && [ -n "$child" ] && ! kill -0 "$child" 2>/dev/null; then
                ok "admit --startup: SIGTERM to edfctl reaches the command, and edfctl ends by it"
        else
                not_ok "admit --startup: SIGTERM to edfctl reaches the command, and edfctl ends by it" "exit $rc" \
                        "$(ps -o pid,stat,cmd -p "${child:-1}")"
        fi
        if [ -n "$child" ] && wait_for no_reservation pid "$child"; then ok "admit --startup: the reservation ends with the command"; else not_ok "admit --startup: the reservation ends with the command" "$(books)"; fi
        expect "admit --startup -- COMMAND: the exit status is the command's" 7 "" "" admit -T 1ms -P 100ms --startup 1s -- sh -c 'sleep 0.2; exit 7'
        expect "admit --startup -- COMMAND not found: exit 127" 127 "" "^edfctl: cannot execute /nonexistent/cmd: No such file or directory$" admit -T 1ms -P 100ms --startup 1s -- /nonexistent/cmd
        expect_unchanged "admit --startup -- COMMAND refused: exit 1, the command is stopped" 1 "^edfctl: admission refused: " admit -g media/audio -T 5ms -P 100ms --startup 1s -- sleep 60.0659
        if pgrep -x -f "sleep 60.0659" >/dev/null; then not_ok "admit --startup refused: no command left running" "$(pgrep -a -f 'sleep 60.0659')"; else ok "admit --startup refused: no command left running"; fi
        expect "admit --startup without a command: exit 2" 2 "" "--startup is for -- COMMAND" admit -T 1ms -P 100ms --startup 1s -p 1
        expect "admit --startup 0s: exit 2" 2 "" "invalid startup bound \"0s\"" admit -T 1ms -P 100ms --startup 0s -- true

        # Left: only the --move reservation in media/audio.
        if wait_for python3 -c 'import json,subprocess,sys
d=json.loads(subprocess.check_output(sys.argv[1:]))["data"][0]
sys.exit(0 if [e[3] for e in d] == ["media/audio"] else 1)' \
                busctl --address="$addr" --json=short call "$N" "$P" "$I" ListReservations; then
                ok "admit -- COMMAND: the finished commands left nothing behind"
        else
                not_ok "admit -- COMMAND: the finished commands left nothing behind" "$(books)"
        fi

        # groups
        expect "group create: exit 0" 0 "" "" group create media/video -T 1ms -P 100ms
        expect "group create: shown in status" 0 "^    video +1ms/100ms +1% +0% +1%$" "" status
        expect_unchanged "group create again: exit 1" 1 "^edfctl: group exists: " group create media/video -T 1ms -P 100ms
        expect_unchanged "group create under a missing parent: exit 1" 1 "^edfctl: no such group: " group create nosuch/x -T 1ms -P 100ms
        expect_unchanged "group create over the parent's budget: exit 1" 1 "^edfctl: admission refused: " group create media/big --bandwidth 50%
        expect_unchanged "group create with an invalid path: exit 2" 2 "^edfctl: invalid parameters: " group create "media/-x" -T 1ms -P 100ms
        expect "group set --bandwidth: exit 0" 0 "" "" group set media/video --bandwidth 1.5%
        if bcall --json=short call "$N" "$P" "$I" ListGroups | python3 -c 'import json,sys
sys.exit(0 if any(g[0]=="media/video" and (g[1],g[2])==(1500000,100000000) for g in json.load(sys.stdin)["data"][0]) else 1)'; then
                ok "group set --bandwidth 1.5%: 1.5ms per 100ms"
        else
                not_ok "group set --bandwidth 1.5%: 1.5ms per 100ms" "$(books)"
        fi
        expect_unchanged "group set of a missing group: exit 1" 1 "^edfctl: no such group: " group set nosuch -T 1ms -P 100ms
        expect "admit into the new group" 0 '^[0-9]+$' "" admit -g media/video -T 1ms -P 100ms -p "$pid"
        id=$out
        expect_unchanged "group set below what it holds: exit 1" 1 "^edfctl: " group set media/video -T 500us -P 100ms
        expect_unchanged "group remove of a group in use: exit 1" 1 "^edfctl: group not empty: " group remove media/video
        expect "release, then group remove: exit 0" 0 "" "" release "$id"
        expect "group remove: exit 0" 0 "" "" group remove media/video
        expect_unchanged "group remove of a missing group: exit 1" 1 "^edfctl: no such group: " group remove media/video

        # A configured group resized at run time is "overridden" (ListGroups' a{sv}, status --json)
        # until the next reload gives it the config's size again.
        overridden() { # overridden PATH...: exactly these groups are overridden, in both views
                bcall --json=short call "$N" "$P" "$I" ListGroups >"$tmp/groups.json" &&
                        "$edfctl" status --json >"$tmp/status.json" &&
                        python3 - "$tmp/groups.json" "$tmp/status.json" "$@" <<'PY'
import json, sys
bus = {e[0]: e[-1]["overridden"]["data"] for e in json.load(open(sys.argv[1]))["data"][0]}
st = {g["path"]: g["overridden"] for g in json.load(open(sys.argv[2]))["groups"]}
want = {p: p in sys.argv[3:] for p in bus}
assert bus == want and st == want, (bus, st, want)
PY
        }
        expect "group set of a configured group: exit 0" 0 "" "" group set media/audio --bandwidth 2.5%
        if overridden media/audio; then ok "group set: the configured group is overridden, no other"; else not_ok "group set: the configured group is overridden, no other" "$(cat "$tmp/groups.json")"; fi

        # reload
        expect "reload: exit 0" 0 "" "" reload
        if overridden; then ok "reload: no group is overridden any more"; else not_ok "reload: no group is overridden any more" "$(cat "$tmp/groups.json")"; fi
        cp "$tmp/edfd.yaml" "$tmp/edfd.yaml.good"
        printf 'groups:\n  apps:\n    bandwidth: lots\n' >"$tmp/edfd.yaml"
        expect_unchanged "reload of a broken file: exit 1" 1 "^edfctl: invalid configuration: " reload
        cp "$tmp/edfd.yaml.good" "$tmp/edfd.yaml"

        # monitor
        "$edfctl" monitor >"$tmp/mon" 2>"$tmp/mon.err" &
        mon=$!
        bg_pids+=("$mon")
        spawn_sleep
        pid=$last
        # Poke until the monitor shows it is subscribed (a bound, not a timing).
        for _ in $(seq 100); do
                id=$("$edfctl" admit -T 1ms -P 100ms -p "$pid") && "$edfctl" release "$id"
                grep -q "removed  #$id " "$tmp/mon" && break
                sleep 0.1
        done
        : >"$tmp/mon.mark"
        # A forking command: the daemon splits its budget with the child. The parent outlives the
        # child (exec, no second fork), so the child's runtime has a donor to return to.
        "$edfctl" admit -T 2ms -P 100ms -- sh -c "sleep 120 & echo \$! >$tmp/child; wait; exec sleep 120" >/dev/null 2>&1 &
        bg_pids+=($!)
        wait_for test -s "$tmp/child"
        bg_pids+=("$(cat "$tmp/child")")
        wait_for grep -q "^.* split " "$tmp/mon"
        run list --json
        if python3 -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if any(r["split_from"] for r in d) else 1)' "$out"; then
                ok "list --json: a forked child shows split_from"
        else
                not_ok "list --json: a forked child shows split_from" "$out"
        fi
        # What the donor gave the child (half of 2ms): in ListReservations' a{sv}, as "donated" in
        # status --json; a reservation that is no split child has neither.
        bcall --json=short call "$N" "$P" "$I" ListReservations >"$tmp/res.json"
        "$edfctl" status --json >"$tmp/status.json"
        if python3 - "$tmp/res.json" "$tmp/status.json" <<'PY'
import json, sys
bus = {e[0]: (e[9], e[-1]) for e in json.load(open(sys.argv[1]))["data"][0]}
st = {r["id"]: r for r in json.load(open(sys.argv[2]))["reservations"]}
assert bus.keys() == st.keys(), (bus, st)
children = [i for i, (split_from, _) in bus.items() if split_from]
assert len(children) == 1, bus
for i, (split_from, extra) in bus.items():
    if split_from:
        assert extra.get("donated") == {"type": "t", "data": 1000000}, extra  # other keys: "throttles"
        assert st[i]["donated"] == 1000000 and st[i]["split_from"] == split_from, st[i]
    else:
        assert "donated" not in extra and st[i]["donated"] is None, (extra, st[i])
PY
        then
                ok "a split child: \"donated\" in ListReservations' a{sv} and in status --json, on no other"
        else
                not_ok "a split child: \"donated\" in ListReservations' a{sv} and in status --json, on no other" "$(cat "$tmp/res.json")" "$(cat "$tmp/status.json")"
        fi
        run status
        if grep -Eq "^    #[0-9]+ +pid [0-9]+ +tid [0-9]+ +sleep +1ms/100ms/100ms +1% +split from #[0-9]+$" <<<"$out"; then
                ok "status: a split child says where it came from"
        else
                not_ok "status: a split child says where it came from" "$out"
        fi
        kill "$(cat "$tmp/child")"
        wait_for grep -q " (returned)$" "$tmp/mon"
        "$edfctl" admit -T 1ms -P 100ms -p "$pid" >/dev/null
        kill "$pid"
        wait "$pid" 2>/dev/null
        wait_for grep -q "^[0-9:.]* removed  #[0-9]* pid $pid tid $pid from apps (exited)$" "$tmp/mon"
        "$edfctl" group create apps/m -T 1ms -P 100ms && "$edfctl" group remove apps/m
        wait_for grep -q "^[0-9:.]* groups   the group tree changed$" "$tmp/mon"
        s=$(cat "$tmp/mon")
        if grep -Eq "^[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} added    #[0-9]+ pid [0-9]+ tid [0-9]+ \(sleep\) in apps \(requested\)$" <<<"$s" &&
                grep -Eq "^[0-9:.]+ removed  #[0-9]+ pid [0-9]+ tid [0-9]+ from apps \(requested\)$" <<<"$s" &&
                grep -Eq "^[0-9:.]+ split    #[0-9]+ gave half its runtime to #[0-9]+$" <<<"$s" &&
                grep -Eq "^[0-9:.]+ added    #[0-9]+ pid [0-9]+ tid [0-9]+( \([a-z]+\))? in apps \(split\)$" <<<"$s" &&
                grep -Eq "^[0-9:.]+ changed  #[0-9]+ now 1ms/100ms/100ms \(split\)$" <<<"$s" &&
                grep -Eq "^[0-9:.]+ changed  #[0-9]+ now 2ms/100ms/100ms \(returned\)$" <<<"$s" &&
                grep -Eq "^[0-9:.]+ removed  #[0-9]+ pid $pid tid $pid from apps \(exited\)$" <<<"$s" &&
                grep -Eq "^[0-9:.]+ groups   the group tree changed$" <<<"$s"; then
                ok "monitor: one line per admission, release, split, change, exit and group change"
        else
                not_ok "monitor: one line per admission, release, split, change, exit and group change" "$s"
        fi

        # edfd goes away: monitor says so, the verbs exit 3
        kill "$edfd_pid"
        wait "$edfd_pid" 2>/dev/null
        edfd_pid=
        if wait_for grep -q "stopped  edfd left the bus" "$tmp/mon"; then ok "monitor: says when edfd leaves the bus"; else not_ok "monitor: says when edfd leaves the bus" "$(cat "$tmp/mon")"; fi
        expect "edfd stopped: admit exits 3 with a hint" 3 "" "is edfd running\? \(systemctl status edfd\)" admit -T 1ms -P 100ms -p $$
        expect "edfd stopped: release exits 3" 3 "" "is edfd running\?" release 1
        kill -INT "$mon"
        wait "$mon"
        rc=$?
        if [ "$rc" = 0 ] && [ ! -s "$tmp/mon.err" ]; then ok "monitor: SIGINT ends it with exit 0"; else not_ok "monitor: SIGINT ends it with exit 0" "exit $rc" "$(cat "$tmp/mon.err")"; fi

        # SIGTERM, with edfd up again.
        "$edfd" --config "$tmp/edfd.yaml" --state-dir "$tmp/state" --cgroup-root "$cgroot" >>"$tmp/edfd.log" 2>&1 &
        edfd_pid=$!
        wait_for bcall call "$N" "$P" org.freedesktop.DBus.Peer Ping
        "$edfctl" monitor >"$tmp/mon" 2>"$tmp/mon.err" &
        mon=$!
        bg_pids+=("$mon")
        spawn_sleep
        for _ in $(seq 100); do
                id=$("$edfctl" admit -T 1ms -P 100ms -p "$last") && "$edfctl" release "$id"
                grep -q "removed  #$id " "$tmp/mon" && break
                sleep 0.1
        done
        kill -TERM "$mon"
        wait "$mon"
        rc=$?
        if [ "$rc" = 0 ]; then ok "monitor: SIGTERM ends it with exit 0"; else not_ok "monitor: SIGTERM ends it with exit 0" "exit $rc" "$(cat "$tmp/mon.err")"; fi
}

if [ -n "$why_not" ]; then
        skip "edfctl against a running edfd" "$why_not"
else
        daemon_tests
        if [ "$failed" -gt 0 ] && [ -s "$tmp/edfd.log" ]; then
                sed 's/^/# edfd: /' "$tmp/edfd.log"
        fi
fi

echo "1..$n"
[ "$failed" -eq 0 ]
