#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# README.md's five-minute tour, run as written against a real edfd. Reports TAP.
#
#   test-tour.sh README EDFCTL EDFD BUS_POLICY
#
# The commands are read from the README itself, from the first ```sh block of the section "A
# five-minute tour": a line that starts with `edfctl` is a command (a trailing `&` runs it in the
# background, as a reader's shell would), text after "  # " on it is the claim it makes, and the
# lines under it that start with `#` are what it prints. The next fenced block of the section is
# what the tour's `edfctl monitor` prints. Two placeholders are filled in: ./my-audio-loop is a
# script of that name in the test's working directory that waits until the test lets it end, and
# 1234 is the pid of a `sleep` started here.
#
# Each command is run on a private system-style dbus-daemon (the shipped bus policy included) with
# edfd started as `edfd --embedded-config` (the shipped conf/edfd.yaml) and a fresh cgroup root in
# the real cgroup v2 mount, and checked: its exit status (1 when the claim says "refused", else 0),
# its output (every `#` line, in order; timestamps, pid and tid numbers and the command name that
# monitor reads at its own pace are not compared, nor runs of blanks), and the claims "runtime X"
# and "in GROUP" of an admission against `edfctl list`. A background admission is waited for (until
# the books stop changing), a background monitor until it has subscribed; nothing asserts on time.
# The tour admits at most 15% of one CPU at once.
#
# Without root, dbus-daemon or SCHED_DEADLINE, only the checks of the README's text run; the rest
# is skipped with the reason.

# Functions called through trap and wait_for look unreachable to shellcheck.
# shellcheck disable=SC2317

set -u

# Absolute paths: the tour runs in the test's own directory.
abs() { [ -n "$1" ] && realpath -- "$1" 2>/dev/null || printf '%s' "$1"; }
readme=$(abs "${1:-}")
edfctl=$(abs "${2:-}")
edfd=$(abs "${3:-}")
policy=$(abs "${4:-}")

n=0
failed=0
tmp=$(mktemp -d /tmp/test-tour.XXXXXX)
# The tour's --work claims the work plus the margin: no calibration of this machine adds to it.
export EDFD_CALIBRATION=$tmp/no-calibration
bg_pids=()
bus_pid='' edfd_pid='' cgroot=''

cleanup() {
        local p
        for p in "${bg_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
        for p in "${bg_pids[@]}"; do wait "$p" 2>/dev/null; done
        [ -n "$edfd_pid" ] && kill "$edfd_pid" 2>/dev/null && wait "$edfd_pid" 2>/dev/null
        [ -n "$bus_pid" ] && kill "$bus_pid" 2>/dev/null && wait "$bus_pid" 2>/dev/null
        if [ -n "$cgroot" ] && [ -d "$cgroot" ]; then
                # Anything edfd moved there goes back to the parent before the directories go.
                find "$cgroot" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r p; do
                        echo "$p" >"$(dirname "$cgroot")/cgroup.procs" 2>/dev/null
                done
                find "$cgroot" -depth -type d -exec rmdir {} + 2>/dev/null
        fi
        rm -rf "$tmp"
}
trap cleanup EXIT

# ---- TAP ----

ok() {
        n=$((n + 1))
        echo "ok $n - $1"
}

not_ok() {
        local name=$1 line
        shift
        n=$((n + 1))
        failed=$((failed + 1))
        echo "not ok $n - $name"
        for line in "$@"; do
                printf '%s\n' "$line" | sed 's/^/#   /'
        done
}

check() { # check NAME COND_STATUS DIAG...: ok when COND_STATUS is 0
        local name=$1 st=$2
        shift 2
        if [ "$st" -eq 0 ]; then ok "$name"; else not_ok "$name" "$@"; fi
}

skip() {
        n=$((n + 1))
        echo "ok $n - $1 # SKIP $2"
}

finish() {
        echo "1..$n"
        [ "$failed" -eq 0 ]
        exit
}

# ---- the tour, as the README has it ----

if [ -z "$readme" ] || [ ! -r "$readme" ]; then
        not_ok "README.md is readable" "usage: test-tour.sh README EDFCTL EDFD BUS_POLICY (got \"$readme\")"
        finish
fi

# The section's fenced blocks, each line prefixed with the block's number (1, 2, ...).
awk '
        /^## / { inside = ($0 == "## A five-minute tour"); next }
        !inside { next }
        /^```/ { if (fence) fence = 0; else { fence = 1; blocks++; info[blocks] = substr($0, 4) } ; next }
        fence { print blocks "\t" info[blocks] "\t" $0 }
' "$readme" >"$tmp/blocks"

grep -P '^1\tsh\t' "$tmp/blocks" | cut -f3- >"$tmp/tour"
grep -P '^2\t' "$tmp/blocks" | cut -f3- >"$tmp/monitor-expected"
name="README.md has a section \"A five-minute tour\" whose first block is a \`\`\`sh block of commands"
if [ ! -s "$tmp/tour" ]; then
        not_ok "$name" "$(grep -n 'five-minute' "$readme")"
        finish
fi
ok "$name"

# Parse: cmd[i] (without edfctl and &), claim[i], bg[i], want[i] (the # lines under it).
cmds=() claims=() bgs=() wants=() lines=()
bad=()
while IFS= read -r line; do
        if [[ $line == \#* ]]; then
                if [ ${#cmds[@]} -eq 0 ]; then
                        bad+=("output before any command: $line")
                        continue
                fi
                out=${line#\#}
                out=${out# }
                wants[-1]+="$out"$'\n'
        elif [[ $line == "edfctl "* ]]; then
                # The claim starts at the first blank-#-blank; the commands quote no #.
                c=$(sed -E 's/[[:space:]]+#([[:space:]].*)?$//' <<<"$line")
                claim=${line:${#c}}
                claim=$(sed -E 's/^[[:space:]]*#[[:space:]]*//' <<<"$claim")
                b=0
                if [[ $c =~ [[:space:]]\&$ ]]; then
                        b=1
                        c=$(sed -E 's/[[:space:]]+&$//' <<<"$c")
                fi
                lines+=("$line")
                cmds+=("${c#edfctl }")
                claims+=("$claim")
                bgs+=("$b")
                wants+=("")
        elif [[ -n ${line// /} ]]; then
                bad+=("not an edfctl command nor its output: $line")
        fi
done <"$tmp/tour"
check "every line of the tour is an edfctl command or the output under one" ${#bad[@]} "${bad[@]}"

# The tour shows what the README promises it shows.
shows() { # shows WHAT ERE: some command line matches
        local l
        for l in "${lines[@]}"; do
                grep -Eq -- "$2" <<<"$l" && { ok "the tour shows $1"; return; }
        done
        not_ok "the tour shows $1" "no command line matches /$2/"
}
shows "an admission of a command" '^edfctl admit .* -- '
shows "the status" '^edfctl status'
shows "a refusal" '^edfctl admit .*#.*refused'
shows "an admission with --work and --margin" '^edfctl admit .*--work .*--margin '
shows "a release" '^edfctl release '
shows "the monitor" '^edfctl monitor'
all_wants=$(printf '%s' "${wants[@]}")
if grep -q 'split from #' <<<"$all_wants"; then
        ok "the tour shows a fork split in edfctl status"
else
        not_ok "the tour shows a fork split in edfctl status" "no output line says \"split from #\""
fi
if [ -s "$tmp/monitor-expected" ] &&
        grep -Eq '^[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} split ' "$tmp/monitor-expected"; then
        ok "the block after the commands is edfctl monitor's output, with a split"
else
        not_ok "the block after the commands is edfctl monitor's output, with a split" \
                "$(cat "$tmp/monitor-expected")"
fi

# ---- can it run here? ----

why_not=
if [ "$(id -u)" -ne 0 ]; then
        why_not="needs root (the tour is run as root, and edfd applies SCHED_DEADLINE)"
elif [ -z "$edfctl" ] || [ ! -x "$edfctl" ] || [ -z "$edfd" ] || [ ! -x "$edfd" ]; then
        why_not="no edfctl or edfd binary given"
elif ! command -v dbus-daemon >/dev/null; then
        why_not="needs dbus-daemon"
elif ! command -v chrt >/dev/null; then
        why_not="needs chrt to probe for SCHED_DEADLINE"
else
        sleep 60 &
        probe=$!
        if ! err=$(chrt -d -T 1000000 -P 100000000 -p 0 "$probe" 2>&1); then
                # A full pool is not a missing feature: the tour runs, and says what fails.
                grep -qi busy <<<"$err" || why_not="SCHED_DEADLINE refused on a helper: $err"
        fi
        kill "$probe"
        wait "$probe" 2>/dev/null
fi
if [ -n "$why_not" ]; then
        skip "the tour, run against a real edfd" "$why_not"
        finish
fi

# ---- a private bus and edfd ----

# Log on the test's own stderr, never in the TAP stream.
for v2 in /sys/fs/cgroup/unified /sys/fs/cgroup; do
        if [ "$(stat -f -c %T "$v2" 2>/dev/null)" = cgroup2fs ]; then
                cgroot="$v2/edfd-tour-$$"
                break
        fi
done
if [ -z "$cgroot" ]; then
        echo "test-tour: no cgroup v2 mount; edfd gets a cgroup root that does not exist" >&2
        cgroot_arg=$tmp/no-cgroup
else
        cgroot_arg=$cgroot
fi

chmod 711 "$tmp"
cat >"$tmp/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$tmp/bus.sock</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow send_type="method_call" send_destination="org.freedesktop.DBus"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
  </policy>
  <include>$policy</include>
</busconfig>
CONF

wait_for() { # wait_for CMD...: retry for up to ~10 s (a bound, not a measurement)
        local i
        for i in $(seq 200); do
                "$@" >/dev/null 2>&1 && return 0
                sleep 0.05
        done
        return 1
}

dbus-daemon --config-file="$tmp/bus.conf" --nofork --print-address=3 3>"$tmp/address" 2>"$tmp/dbus.log" &
bus_pid=$!
if ! wait_for test -s "$tmp/address"; then
        not_ok "a private dbus-daemon starts" "$(cat "$tmp/dbus.log")"
        finish
fi
DBUS_SYSTEM_BUS_ADDRESS=$(head -1 "$tmp/address")
export DBUS_SYSTEM_BUS_ADDRESS
unset NOTIFY_SOCKET
ok "a private dbus-daemon starts"

"$edfd" --embedded-config --state-dir "$tmp/state" --cgroup-root "$cgroot_arg" >"$tmp/edfd.log" 2>&1 &
edfd_pid=$!
if ! wait_for "$edfctl" status; then
        if grep -q "Cannot read the kernel" "$tmp/edfd.log"; then
                skip "the tour, run against a real edfd" \
                        "edfd cannot read the kernel's deadline capacity here"
        else
                not_ok "edfd --embedded-config starts on the private bus" "$(cat "$tmp/edfd.log")"
        fi
        finish
fi
ok "edfd --embedded-config starts on the private bus"

# ---- the placeholders ----

# ./my-audio-loop: runs (as a thread named my-audio-loop, without forking) until the test opens
# the FIFO, then exits 0.
mkfifo "$tmp/stop"
printf '#!/bin/bash\nread -r _ <%q\nexit 0\n' "$tmp/stop" >"$tmp/my-audio-loop"
chmod 755 "$tmp/my-audio-loop"
# 1234: a process that runs.
sleep 300 &
pid1234=$!
bg_pids+=("$pid1234")

cd "$tmp" || exit 1

# ---- running it ----

count() { # the number of reservations
        "$edfctl" list 2>/dev/null | grep -Ec '^ *[0-9]+ '
}

settle() { # settle BEFORE JOB: wait until the books hold more than BEFORE and stay put for 0.5 s
        local before=$1 job=$2 last=-1 same=0 c i
        for i in $(seq 200); do
                c=$(count)
                if [ "$c" -gt "$before" ] && [ "$c" -eq "$last" ]; then
                        same=$((same + 1))
                        [ "$same" -ge 10 ] && return 0
                else
                        same=0
                fi
                last=$c
                kill -0 "$job" 2>/dev/null || { [ "$c" -gt "$before" ]; return; }
                sleep 0.05
        done
        return 1
}

subscribed() { # subscribed PID: edfctl monitor blocks SIGINT and SIGTERM once Subscribe returned
        local blk
        blk=$(awk '/^SigBlk:/ { print $2 }' "/proc/$1/status" 2>/dev/null) || return 1
        [ -n "$blk" ] && [ $((0x$blk & 0x4002)) -eq $((0x4002)) ]
}

norm() { # the comparable form of output lines
        sed -E -e 's/^[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} //' -e 's/\b(pid|tid) [0-9]+/\1 N/g' \
                -e 's/(tid N) \([^)]*\)/\1 (*)/' -e 's/[[:space:]]+/ /g' -e 's/^ //' -e 's/ $//' -e '/^$/d'
}

# missing EXPECTED ACTUAL: the first expected line (normalized) that ACTUAL does not show in order.
missing() {
        awk 'NR == FNR { want[++nw] = $0; next }
             i < nw && $0 == want[i + 1] { i++ }
             END { if (i < nw) { print want[i + 1]; exit 1 } }' <(norm <"$1") <(norm <"$2")
}

wait_end() { # wait_end PID: its exit status, or 124 after killing it if it runs on for 30 s
        local i
        for i in $(seq 600); do
                kill -0 "$1" 2>/dev/null || break
                sleep 0.05
        done
        if kill -0 "$1" 2>/dev/null; then
                kill -KILL "$1"
                wait "$1" 2>/dev/null
                return 124
        fi
        wait "$1"
}

row_of_pid() { # the edfctl list row of process PID
        "$edfctl" list 2>/dev/null | awk -v p="$1" '$3 == p'
}

bg_jobs=() bg_names=() bg_kinds=() monitor_i=
for i in "${!cmds[@]}"; do
        cmd=${cmds[$i]//1234/$pid1234}
        claim=${claims[$i]}
        name="tour line \"${lines[$i]%%  *}\""
        printf '%s' "${wants[$i]//1234/$pid1234}" >"$tmp/want.$i"
        verb=${cmd%% *}
        if [ "${bgs[$i]}" = 1 ]; then
                before=$(count)
                eval "\"\$edfctl\" $cmd >\"\$tmp/out.$i\" 2>&1 &"
                job=$!
                bg_pids+=("$job")
                bg_jobs+=("$job")
                bg_names+=("$name")
                if [ "$verb" = monitor ]; then
                        monitor_i=$i
                        bg_kinds+=(monitor)
                        wait_for subscribed "$job"
                        check "$name: runs in the background, subscribed" $? "$(cat "$tmp/out.$i")"
                else
                        bg_kinds+=(command)
                        settle "$before" "$job"
                        check "$name: the admission is made and runs in the background" $? \
                                "reservations before: $before, now: $(count)" "$(cat "$tmp/out.$i")"
                fi
                continue
        fi
        # A command in the foreground must end by itself (a bound, not a measurement).
        eval "timeout 60 \"\$edfctl\" $cmd" >"$tmp/out.$i" 2>&1
        rc=$?
        want_rc=0
        [[ $claim == *refused* ]] && want_rc=1
        why="exit status $rc"
        [ "$rc" = 124 ] && why="it did not end within 60 s and was stopped"
        check "$name: exit status $want_rc" $((rc != want_rc)) "$why" "$(cat "$tmp/out.$i")"
        if [ -s "$tmp/want.$i" ]; then
                m=$(missing "$tmp/want.$i" "$tmp/out.$i")
                check "$name: prints what the README shows under it" $? "missing: $m" \
                        "it printed:" "$(cat "$tmp/out.$i")"
        fi
        # The claims of an admission of a running process, against the books.
        if [ "$verb" = admit ] && [ "$want_rc" = 0 ] && [[ $cmd =~ -p\ ([0-9]+) ]]; then
                row=$(row_of_pid "${BASH_REMATCH[1]}")
                if [[ $claim =~ runtime\ ([0-9.]+(ns|us|ms|s))([^a-z]|$) ]]; then
                        [ "$(awk '{ print $6 }' <<<"$row")" = "${BASH_REMATCH[1]}" ]
                        check "$name: the runtime is ${BASH_REMATCH[1]}, as it says" $? "edfctl list: $row"
                fi
                if [[ $claim =~ \ in\ ([a-z][a-z0-9/_.-]*[a-z0-9]) ]]; then
                        [ "$(awk '{ print $2 }' <<<"$row")" = "${BASH_REMATCH[1]}" ]
                        check "$name: the reservation is in ${BASH_REMATCH[1]}, as it says" $? \
                                "edfctl list: $row"
                fi
        fi
        if [ "$verb" = release ] && [[ $cmd =~ -p\ ([0-9]+) ]]; then
                row=$(row_of_pid "${BASH_REMATCH[1]}")
                [ -z "$row" ]
                check "$name: the process holds no reservation after it" $? "edfctl list: $row"
        fi
done

# ---- the background commands end ----

# The placeholder program ends when the FIFO is opened; then every command but the monitor must
# end by itself with status 0 (admit -- COMMAND exits with the command's status).
# (Bounded: if the program never started, nobody reads the FIFO.)
# shellcheck disable=SC2016
timeout 5 sh -c 'echo >"$1"' sh "$tmp/stop" 2>/dev/null
for k in "${!bg_jobs[@]}"; do
        [ "${bg_kinds[$k]}" = command ] || continue
        wait_end "${bg_jobs[$k]}"
        rc=$?
        why="exit status $rc"
        [ "$rc" = 124 ] && why="it did not end within 30 s of the tour's end and was killed"
        check "${bg_names[$k]}: exits 0" "$rc" "$why"
done

if [ -n "$monitor_i" ]; then
        # What monitor prints: the # lines under it and the block after the commands. The exits
        # reach it through the proc connector and edfd: wait until it has shown them.
        cat "$tmp/want.$monitor_i" "$tmp/monitor-expected" >"$tmp/monitor-want"
        wait_for missing "$tmp/monitor-want" "$tmp/out.$monitor_i"
        m=$(missing "$tmp/monitor-want" "$tmp/out.$monitor_i")
        check "edfctl monitor prints what the README shows" $? "missing: $m" "it printed:" \
                "$(cat "$tmp/out.$monitor_i")"
        for k in "${!bg_jobs[@]}"; do
                [ "${bg_kinds[$k]}" = monitor ] || continue
                kill -TERM "${bg_jobs[$k]}"
                wait "${bg_jobs[$k]}"
                rc=$?
                check "${bg_names[$k]}: ends with status 0 on SIGTERM" "$rc" "exit status $rc"
        done
fi

none_left() { [ "$(count)" -eq 0 ]; }
wait_for none_left
check "nothing is left admitted after the tour" $? "$("$edfctl" list)"

finish
