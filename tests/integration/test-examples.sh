#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The examples as a user runs them, against a real edfd on a private bus: examples/periodic.c (on
# libedfd: initializes, admits itself, runs its jobs ending each with edfd_job_done(), releases),
# examples/edfd-client.py (Debian's python3-dbus, an implementation of D-Bus that is not sd-bus),
# and periodic.c built again as an application would build it: against a `meson install --destdir`
# staging, with `pkg-config --cflags --libs libedfd` pointed at it and nothing of the source tree
# on the compiler's path. Nothing is installed into the machine. Reports TAP.
#
#   test-examples.sh EDFCTL EDFD PERIODIC-EXAMPLE CLIENT-PY BUILD-ROOT SOURCE-ROOT
#
# The workloads hold at most 10% of one CPU (the group's size) for under a second each.

set -u
edfctl=${1:?usage: test-examples.sh EDFCTL EDFD PERIODIC-EXAMPLE CLIENT-PY BUILD-ROOT SOURCE-ROOT}
edfd=${2:?} example=${3:?} client=${4:?} build_root=${5:?} source_root=${6:?}
here=$(cd "$(dirname "$0")" && pwd)
n=0 failed=0
tmp=$(mktemp -d /tmp/test-examples.XXXXXX)
chmod 711 "$tmp"
pids=() bus_pid= edfd_pid=

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { local name=$1; shift; n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $name"; printf '#   %s\n' "$@"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
skip_all() { echo "1..0 # SKIP $1"; exit 0; }

cleanup() {
        local p
        for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
        [ ${#pids[@]} -gt 0 ] && wait "${pids[@]}" 2>/dev/null
        [ -n "$edfd_pid" ] && kill -KILL "$edfd_pid" 2>/dev/null && wait "$edfd_pid" 2>/dev/null
        [ -n "$bus_pid" ] && kill "$bus_pid" 2>/dev/null && wait "$bus_pid" 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

[ "$(id -u)" = 0 ] || skip_all "needs root (edfd and SCHED_DEADLINE)"
command -v dbus-daemon >/dev/null || skip_all "no dbus-daemon"
chrt -d -T 1000000 -P 10000000 0 true 2>/dev/null || skip_all "SCHED_DEADLINE does not work here"

# run CMD...: rc, out and err of CMD.
run() {
        "$@" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        out=$(<"$tmp/out")
        err=$(<"$tmp/err")
}
# expect NAME RC OUT_ERE ERR_ERE CMD...: as run; "" means the stream must be empty.
expect() {
        local name=$1 want_rc=$2 want_out=$3 want_err=$4 why=()
        shift 4
        run "$@"
        [ "$rc" = "$want_rc" ] || why+=("exit status $rc, expected $want_rc")
        if [ -z "$want_out" ]; then [ -z "$out" ] || why+=("stdout should be empty")
        elif ! grep -Eq -- "$want_out" <<<"$out"; then why+=("stdout does not match /$want_out/"); fi
        if [ -z "$want_err" ]; then [ -z "$err" ] || why+=("stderr should be empty")
        elif ! grep -Eq -- "$want_err" <<<"$err"; then why+=("stderr does not match /$want_err/"); fi
        if [ ${#why[@]} -eq 0 ]; then ok "$name"; else not_ok "$name" "$*" "${why[@]}" "stdout: $out" "stderr: $err"; fi
}
check() { # NAME CMD...: ok when CMD succeeds
        local name=$1; shift
        if "$@" >"$tmp/check.out" 2>&1; then ok "$name"; else not_ok "$name" "$*" "$(cat "$tmp/check.out")"; fi
}

sed "s|@BUS_SOCKET@|$tmp/bus|" "$here/bus.conf" >"$tmp/bus.conf"
dbus-daemon --config-file="$tmp/bus.conf" --nofork --print-address=3 3>"$tmp/address" 2>/dev/null &
bus_pid=$!
for _ in $(seq 100); do [ -s "$tmp/address" ] && break; sleep 0.05; done
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$tmp/bus

cat >"$tmp/edfd.yaml" <<'EOF'
default-group: apps
groups:
  apps:
    bandwidth: 10%
EOF

start_edfd() {
        : >"$tmp/edfd.log"
        "$edfd" -c "$tmp/edfd.yaml" --state-dir "$tmp/state" >>"$tmp/edfd.log" 2>&1 &
        edfd_pid=$!
        for _ in $(seq 200); do
                "$edfctl" status >/dev/null 2>&1 && return 0
                kill -0 "$edfd_pid" 2>/dev/null || break
                sleep 0.05
        done
        echo "# edfd did not come up:"; sed 's/^/#   /' "$tmp/edfd.log"
        return 1
}
stop_edfd() {
        local st
        kill -TERM "$edfd_pid" 2>/dev/null
        wait "$edfd_pid" 2>/dev/null
        st=$?
        edfd_pid=
        if [ "$st" = 0 ] && ! grep -qE "Sanitizer|runtime error:" "$tmp/edfd.log"; then
                ok "edfd stopped cleanly"
        else
                not_ok "edfd stopped cleanly" "exit status $st" "$(tail -20 "$tmp/edfd.log")"
        fi
}
no_reservations() { [ "$("$edfctl" list 2>&1)" = "No reservations." ] || { "$edfctl" list; false; }; }
# listed ID GROUP PID: edfctl list (on libedfd) has reservation ID of group GROUP for thread PID
# (columns ID GROUP PID TID ...).
listed() { "$edfctl" list | awk -v id="$1" -v g="$2" -v p="$3" '$1 == id && $2 == g && $3 == p { f = 1 } END { exit !f }'; }

# ---- edfd not running: both examples say so, nothing aborts ----

expect "periodic example without edfd: exit 1, the bus error named" 1 "" \
        "edfd refused: .*\((org\.freedesktop\.DBus\.Error\.ServiceUnknown|org\.freedesktop\.DBus\.Error\.NameHasNoOwner), No route to host\)" \
        "$example" -n 5
expect "python client without edfd: exit 1, the bus error named" 1 "" \
        "org\.freedesktop\.DBus\.Error\.(ServiceUnknown|NameHasNoOwner)" /usr/bin/python3 "$client" list

start_edfd || { echo "Bail out! edfd did not start"; exit 1; }

# ---- the C example on libedfd ----

run_example() { # NAME BINARY [ENV...]: admits itself, 50 jobs of 200 us every 10 ms on a 1 ms budget
        local name=$1 bin=$2; shift 2
        expect "$name: admitted, ran its jobs, released" 0 \
                "^admitted reservation [0-9]+: 1000 us every 10000 us$" "" \
                env "$@" "$bin" -T 1000 -P 10000 -w 200 -n 50 -v
        # Deadline misses are not asserted here (an integration test on a shared virtual machine,
        # sanitizer builds included): the count is reported, each late job with -v. The promise is
        # measured by tests/bench/deadline-misses and explained by edfd-trace.
        if grep -q "^ran 50 jobs of 200 us, [0-9]* ended after their deadline$" <<<"$out" &&
                        grep -q "^released reservation " <<<"$out"; then
                ok "$name: 50 jobs, released"
                grep "^job \|^ran " <<<"$out" | sed 's/^/# /'
        else
                not_ok "$name: 50 jobs, released" "$out" "$err"
        fi
        check "$name: the books are empty again" no_reservations
}
run_example "periodic example" "$example"

# It really ran as SCHED_DEADLINE while admitted: the kernel's view of it, mid-run (its 300 jobs
# last 3 s from its admission; a failure says whether it still ran, and what it printed).
"$example" -T 1000 -P 10000 -w 200 -n 300 >"$tmp/long.out" 2>&1 &
long_pid=$!
pids+=($long_pid)
for _ in $(seq 100); do grep -q "^admitted" "$tmp/long.out" && break; sleep 0.02; done
if ! grep -q "^admitted" "$tmp/long.out"; then
        not_ok "periodic example: admitted for its second run within 2 s" "$(cat "$tmp/long.out")"
fi
check "periodic example: SCHED_DEADLINE 1000000/10000000/10000000 while it runs" \
        bash -c "chrt -p $long_pid | grep -q 'SCHED_DEADLINE' && chrt -p $long_pid | grep -q '1000000/10000000/10000000' ||
                 { echo \"process $long_pid: \$(chrt -p $long_pid 2>&1 || echo ended)\"; cat '$tmp/long.out'; exit 1; }"
# Its late-job printer shares a PTHREAD_PRIO_INHERIT mutex with it and stays a normal thread.
check "periodic example: its printer thread is SCHED_OTHER beside the deadline thread" \
        bash -c "t=\$(ls /proc/$long_pid/task | grep -vx $long_pid); [ -n \"\$t\" ] && chrt -p \$t | grep -q SCHED_OTHER ||
                 { echo \"threads: \$(ls /proc/$long_pid/task 2>&1)\"; exit 1; }"
long_id=$(sed -n 's/^admitted reservation \([0-9]*\):.*/\1/p' "$tmp/long.out")
check "periodic example: edfd lists it in group apps" listed "$long_id" apps "$long_pid"
wait "$long_pid"
check "periodic example: its second run ran its 300 jobs" grep -q "^ran 300 jobs of 200 us" "$tmp/long.out"

expect "periodic example over budget: exit 1, edfd's reason and the error name" 1 "" \
        "edfd refused: .*(apps|10%).*\(org\.edfd\.Admission1\.Error\.OverBudget, No space left on device\)" \
        "$example" -T 5000 -P 10000 -n 1
expect "periodic example with an unknown group: exit 1, NoSuchGroup" 1 "" \
        "edfd refused: .*\(org\.edfd\.Admission1\.Error\.NoSuchGroup, No such file or directory\)" \
        "$example" -g no/such -n 1
expect "periodic example with runtime above period: exit 1, InvalidParameters" 1 "" \
        "edfd refused: .*\(org\.edfd\.Admission1\.Error\.InvalidParameters, Invalid argument\)" \
        "$example" -T 20000 -P 10000 -n 1
expect "periodic example with a bad number: exit 2" 2 "" "invalid runtime \"1x\"" "$example" -T 1x
check "refusals left the books empty" no_reservations

# ---- the Python client (python3-dbus) ----

if ! /usr/bin/python3 -c 'import dbus' 2>/dev/null; then
        if [ "${CI:-}" = true ]; then
                not_ok "python3-dbus is installed (tools/setup-deps installs it)" "import dbus failed"
        else
                skip "the Python client" "Debian's python3-dbus is not installed (tools/setup-deps installs it)"
        fi
else
        sleep 60 &
        sleeper=$!
        sleep 60 &
        other=$!
        pids+=("$sleeper" "$other")
        expect "python client: admit a process" 0 "^admitted [0-9]+$" "" \
                /usr/bin/python3 "$client" admit "$sleeper" 1000000 20000000
        id=${out#admitted }
        check "python client: the kernel has it as SCHED_DEADLINE 1000000/20000000/20000000" \
                bash -c "chrt -p $sleeper | grep -q '1000000/20000000/20000000'"
        expect "python client: list shows it" 0 "^$id pid $sleeper tid $sleeper group apps runtime 1000000 deadline 20000000 period 20000000 bandwidth 5\.00%" "" \
                /usr/bin/python3 "$client" list
        expect "python client: groups show the allocation" 0 "^apps bandwidth 10\.00% allocated 5\.00%$" "" \
                /usr/bin/python3 "$client" groups
        check "edfctl (libedfd) sees the same reservation" listed "$id" apps "$sleeper"
        expect "python client: a refusal carries the error name and edfd's message" 1 "" \
                "^edfd-client\.py: org\.edfd\.Admission1\.Error\.OverBudget: .*" \
                /usr/bin/python3 "$client" admit "$other" 9000000 10000000
        expect "python client: release" 0 "" "" /usr/bin/python3 "$client" release "$id"
        check "python client: the thread is SCHED_OTHER again" bash -c "chrt -p $sleeper | grep -q SCHED_OTHER"
        expect "python client: releasing it again is NoSuchReservation" 1 "" \
                "org\.edfd\.Admission1\.Error\.NoSuchReservation" /usr/bin/python3 "$client" release "$id"
        expect "python client: bad arguments: exit 2" 2 "" "PID, RUNTIME and PERIOD must be positive" \
                /usr/bin/python3 "$client" admit 0 1 2
        check "python client left the books empty" no_reservations
fi

# ---- as an application builds it: a staged install and pkg-config ----

stage=$tmp/stage
if ! meson install -C "$build_root" --no-rebuild --destdir "$stage" --quiet >"$tmp/install.log" 2>&1; then
        not_ok "meson install --destdir stages the build" "$(tail -20 "$tmp/install.log")"
else
        ok "meson install --destdir stages the build"
        pc=$(find "$stage" -name libedfd.pc | head -1)
        header=$(find "$stage" -path '*/include/edfd/edfd.h' | head -1)
        solib=$(find "$stage" -name 'libedfd.so.0' | head -1)
        check "the staging has libedfd.pc, edfd/edfd.h and libedfd.so.0" test -n "$pc" -a -n "$header" -a -n "$solib"
        check "the staging holds the unversioned link name libedfd.so" test -e "$(dirname "$solib")/libedfd.so"
        export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$stage
        cflags=$(pkg-config --cflags libedfd) libs=$(pkg-config --libs libedfd)
        check "pkg-config --cflags libedfd points into the staging" grep -q -- "-I$stage" <<<"$cflags"
        check "pkg-config --libs libedfd is -ledfd" grep -q -- "-ledfd" <<<"$libs"
        # The same sanitizers as the build under test: an instrumented libedfd needs them in the program.
        sanitize=$(meson introspect --buildoptions "$build_root" |
                /usr/bin/python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="b_sanitize"))')
        san=()
        [ "$sanitize" != none ] && san=("-fsanitize=$sanitize")
        # Only the staging's include directory: a copy of the example outside the source tree.
        cp "$source_root/examples/periodic.c" "$tmp/app.c"
        # shellcheck disable=SC2086
        if cc -std=c11 -Wall -Wextra -Werror "${san[@]}" -o "$tmp/app" "$tmp/app.c" $cflags $libs >"$tmp/cc.log" 2>&1; then
                ok "periodic.c builds with \$(pkg-config --cflags --libs libedfd) against the staging"
                check "the application needs libedfd.so.0" bash -c "readelf -d '$tmp/app' | grep -q 'NEEDED.*libedfd\.so\.0'"
                run_example "the staged application" "$tmp/app" LD_LIBRARY_PATH="$(dirname "$solib")"
                check "the staged application loaded the staged library" \
                        bash -c "LD_LIBRARY_PATH='$(dirname "$solib")' ldd '$tmp/app' | grep -q '$stage'"
        else
                not_ok "periodic.c builds with \$(pkg-config --cflags --libs libedfd) against the staging" \
                        "cc ${san[*]} app.c $cflags $libs" "$(cat "$tmp/cc.log")"
        fi
        # From C++: the header's extern "C" and its inline helpers, linked and run (an Echo).
        cat >"$tmp/app.cc" <<'EOF'
#include <edfd/edfd.h>
#include <cstdio>
int main() {
        edfd *e = nullptr;
        uint64_t v = 0;
        int r = edfd_open(&e);
        if (r >= 0)
                r = edfd_echo(e, 42, &v);
        std::printf("echo %d %llu %s\n", r, (unsigned long long) v, edfd_error_message(e));
        edfd_closep(&e);
        return r < 0 || v != 42;
}
EOF
        if ! command -v g++ >/dev/null; then
                skip "the header from C++" "no g++ (tools/setup-deps installs it)"
        # shellcheck disable=SC2086
        elif g++ -std=c++11 -Wall -Wextra -Werror "${san[@]}" -o "$tmp/app++" "$tmp/app.cc" $cflags $libs >"$tmp/cxx.log" 2>&1; then
                expect "the header from C++: builds, links and calls edfd" 0 "^echo 0 42 $" "" \
                        env LD_LIBRARY_PATH="$(dirname "$solib")" "$tmp/app++"
        else
                not_ok "the header from C++: builds, links and calls edfd" "$(cat "$tmp/cxx.log")"
        fi
fi

stop_edfd
echo "1..$n"
[ "$failed" = 0 ]
