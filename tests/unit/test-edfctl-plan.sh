#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# edfctl plan, typed as a user would type it: the seed article's case and a constrained-deadline
# set, text and JSON, and every bad option and file. Offline by design: the bus address points
# nowhere, so any attempt to use the bus would show as exit 3. Reports TAP. No root needed.
#
#   test-edfctl-plan.sh EDFCTL

set -u
edfctl=${1:?usage: test-edfctl-plan.sh EDFCTL}
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent/edfd-plan-test
tmp=$(mktemp -d /tmp/test-edfctl-plan.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; printf '#   %s\n' "$@"; }

# expect NAME STATUS PATTERN -- ARGS...: run edfctl, check the exit status and that stdout+stderr
# holds PATTERN (grep -E).
expect() {
        local name=$1 want=$2 pattern=$3 out status
        shift 4
        out=$("$edfctl" "$@" 2>&1)
        status=$?
        if [ "$status" = "$want" ] && grep -qE -- "$pattern" <<<"$out"; then
                ok "$name"
        else
                not_ok "$name" "exit $status (want $want), want /$pattern/ in:" "$out"
        fi
}

cat >"$tmp/seed.csv" <<'CSV'
# the seed article's case: three tasks of 58% on two CPUs
name,runtime,deadline,period,split
a,5.8ms,10ms,10ms,no
b,5.8ms,10ms,10ms,no
c,5.8ms,10ms,10ms,no
CSV
sed 's/^c,5.8ms,10ms,10ms,no/c,5.8ms,10ms,10ms,yes/' "$tmp/seed.csv" >"$tmp/seed-split.csv"
cat >"$tmp/constrained.yaml" <<'YAML'
tasks:
  - { name: control, runtime: 50ms, deadline: 50ms, period: 100ms }
  - { name: logger, runtime: 10ms, period: 100ms }
  - { name: sensor, runtime: 2ms, deadline: 5ms, period: 20ms, group: io }
YAML

expect "seed case: the third task is refused with the numbers" 1 \
        '^c: refused: no CPU can take 58%: cpu0 32% left, cpu1 32% left$' -- plan --cpus 2 "$tmp/seed.csv"
expect "seed case: the first two go to different CPUs" 1 \
        '^b +5\.8ms +10ms +10ms +58% +placed +1 +utilization$' -- plan --cpus 2 "$tmp/seed.csv"
expect "seed case with split: all three admitted" 0 \
        '^3 of 3 tasks admitted \(1 split\), 0 refused' -- plan --cpus 2 "$tmp/seed-split.csv"
expect "seed case with split: the stages are printed" 0 \
        '^c: stage 1 runs 3\.2ms within 3\.2ms on cpu0; stage 2 runs 2\.6ms within 6\.8ms on cpu1, released 3\.2ms after each release' \
        -- plan --cpus 2 "$tmp/seed-split.csv"
expect "seed case on a 6.1 kernel (no fair server): 37% left" 1 \
        'cpu0 37% left, cpu1 37% left' -- plan --cpus 2 --server none "$tmp/seed.csv"
expect "seed case with unlimited capacity: still refused" 1 \
        '^c: refused: no CPU can take 58%: cpu0 42% left, cpu1 42% left$' -- plan --cpus 2 --capacity unlimited --server none "$tmp/seed.csv"
expect "three CPUs take all three" 0 '^3 of 3 tasks admitted \(0 split\)' -- plan --cpus 3 "$tmp/seed.csv"
expect "constrained deadlines: the demand test refuses the sensor on one CPU" 1 \
        '^sensor: refused: no CPU can take 10%: cpu0 30% left but a deadline fails at 50ms \(demand 56ms\)$' \
        -- plan --cpus 1 "$tmp/constrained.yaml"
expect "constrained deadlines: two CPUs, the group column shows" 0 \
        '^sensor +io +2ms +5ms +20ms +10% +placed +1 +processor demand \(QPA\)$' -- plan --cpus 2 "$tmp/constrained.yaml"
expect "worst fit spreads" 0 '^logger +- +10ms +100ms +100ms +10% +placed +1 ' -- plan --cpus 2 --fit worst "$tmp/constrained.yaml"
expect "first fit packs" 0 '^logger +- +10ms +100ms +100ms +10% +placed +0 ' -- plan --cpus 2 --fit first "$tmp/constrained.yaml"
out=$("$edfctl" plan --cpus 2 - <"$tmp/seed.csv" 2>&1)
[ $? = 1 ] && grep -q '^c: refused' <<<"$out" && ok "reads standard input" || not_ok "reads standard input" "$out"

if command -v python3 >/dev/null; then
        if "$edfctl" plan --cpus 2 --json "$tmp/seed-split.csv" >"$tmp/out.json" 2>&1; [ $? = 0 ] &&
                python3 - "$tmp/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["cpus"] == 2 and d["placement"] == "partitioned" and d["fit"] == "best", d
t = d["tasks"]
assert [x["result"] for x in t] == ["placed", "placed", "split"], t
assert t[0]["cpu"] == 0 and t[1]["cpu"] == 1
s = t[2]["stages"]
assert s[0] == {"cpu": 0, "runtime": 3200000, "deadline": 3200000, "period": 10000000, "offset": 0}, s
assert s[1] == {"cpu": 1, "runtime": 2600000, "deadline": 6800000, "period": 10000000, "offset": 3200000}, s
assert d["fair_server"] == {"runtime": 50000000, "period": 1000000000}
assert [c["tasks"] for c in d["cpu_loads"]] == [2, 2]
PY
        then ok "--json: results, stages and loads"; else not_ok "--json: results, stages and loads" "$(cat "$tmp/out.json")"; fi
else
        ok "# SKIP --json: no python3 to read it"
fi

printf 'runtime,period\n5,10ms\n' >"$tmp/bad.csv"
expect "a bad file names the line and the problem" 2 '^edfctl: .*bad\.csv:2: runtime "5" has no unit' -- plan --cpus 1 "$tmp/bad.csv"
# An escaped NUL in a YAML scalar: refused (the ASan suite runs this too: the reader used to read
# past the copy it made of the value).
printf 'tasks:\n  - { name: a, runtime: "5ms\\u0000xyzw", period: 10ms }\n' >"$tmp/nul.yaml"
expect "a YAML value holding a NUL byte is refused" 2 '^edfctl: .*nul\.yaml:2: runtime holds a NUL byte$' -- plan --cpus 1 "$tmp/nul.yaml"
printf 'name,runtime,period\nleft,1ms,10ms\nright,1ms,10ms\nleft,2ms,10ms\n' >"$tmp/dup.csv"
expect "two tasks of one name are refused with both lines" 2 \
        '^edfctl: .*dup\.csv:4: task name "left" is already the name of the task at .*dup\.csv:2$' -- plan --cpus 1 "$tmp/dup.csv"
printf 'name,runtime,period   # the header\na,1ms,10ms # a note, as edfctl(1) says\n' >"$tmp/comment.csv"
expect "a # after a value starts a comment, as edfctl(1) says" 0 '^a +1ms +10ms +10ms +10% +placed' -- plan --cpus 1 "$tmp/comment.csv"
# One task more than one CPU's test takes (65,536; best fit would pack them all onto cpu0): the
# reader refuses the file, naming the limit, before any placement (it used to fail after 14 s with
# "cannot plan: Argument list too long").
awk 'BEGIN { print "runtime,period"; for (i = 0; i < 65537; i++) print "1024ns,100ms" }' >"$tmp/many.csv"
expect "a file of 65,537 tasks is refused, naming the limit" 2 \
        '^edfctl: .*many\.csv:65538: more than 65536 tasks, the most a plan takes \(one CPU.s test takes at most 65536\)$' \
        -- plan --cpus 1 "$tmp/many.csv"
# Names are the file writer's text: printed escaped (basic/escape.h), and valid in JSON.
# clean FILE: true when FILE holds no byte a terminal would obey or that is not ASCII.
clean() { LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f\x80-\xff]' "$1" && return 1; return 0; }
printf 'name,runtime,period\nv\xff\xe2\x80\xae,1ms,10ms\nbig\xc3,95ms,100ms\n' >"$tmp/utf8.csv"
"$edfctl" plan --cpus 1 "$tmp/utf8.csv" >"$tmp/utf8.out" 2>&1
status=$?
if [ $status = 1 ] && clean "$tmp/utf8.out" && grep -q '^v\\xff\\xe2\\x80\\xae  *1ms ' "$tmp/utf8.out" &&
        grep -q '^big\\xc3: refused: ' "$tmp/utf8.out"; then
        ok "invalid UTF-8 and a bidi override in a name are escaped in the table and the refusals"
else
        not_ok "invalid UTF-8 and a bidi override in a name are escaped in the table and the refusals" "exit $status" "$(cat -v "$tmp/utf8.out")"
fi
if command -v python3 >/dev/null; then
        "$edfctl" plan --cpus 1 --json "$tmp/utf8.csv" >"$tmp/utf8.json" 2>&1
        if python3 -m json.tool "$tmp/utf8.json" >/dev/null 2>&1 &&
                python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))["tasks"]; assert [x["name"] for x in t] == ["v\ufffd\u202e", "big\ufffd"], t' "$tmp/utf8.json"; then
                ok "--json with names that are not valid UTF-8 parses, each bad byte U+FFFD"
        else
                not_ok "--json with names that are not valid UTF-8 parses, each bad byte U+FFFD" "$(cat -v "$tmp/utf8.json")"
        fi
else
        ok "# SKIP --json with invalid UTF-8: no python3 to read it"
fi
printf 'runtime,period,name\n1ms,10ms,\x1b]0;owned\x07\x1b[2J\n' >"$tmp/esc.csv"
"$edfctl" plan --cpus 1 "$tmp/esc.csv" >"$tmp/esc.out" 2>&1
status=$?
if [ $status = 2 ] && clean "$tmp/esc.out" && grep -qF 'name "\x1b]0;owned\a\x1b[2J" holds a control character' "$tmp/esc.out"; then
        ok "a name with ESC sequences is refused, the sequences escaped in the message"
else
        not_ok "a name with ESC sequences is refused, the sequences escaped in the message" "exit $status" "$(cat -v "$tmp/esc.out")"
fi
# --live: edfd plans at most 1,024 tasks in one call; more is refused before the bus (which points
# nowhere here: trying it would be exit 3).
awk 'BEGIN { print "runtime,period"; for (i = 0; i < 1025; i++) print "1ms,100ms" }' >"$tmp/live-many.csv"
expect "plan --live with 1,025 tasks is refused, naming the limit" 2 \
        '^edfctl: .*live-many\.csv has 1025 tasks: edfd plans at most 1024 at once$' -- plan --live "$tmp/live-many.csv"
expect "a missing file" 2 '^edfctl: cannot read .*/nope\.csv: No such file or directory$' -- plan "$tmp/nope.csv"
expect "a directory" 2 '^edfctl: cannot read .*: Is a directory$' -- plan "$tmp"
expect "no file" 2 'plan' -- plan
expect "two files" 2 'plan' -- plan "$tmp/seed.csv" "$tmp/seed.csv"
expect "--cpus 0" 2 'invalid CPU count "0": is not between 1 and 1024' -- plan --cpus 0 "$tmp/seed.csv"
expect "--cpus two" 2 'invalid CPU count "two"' -- plan --cpus two "$tmp/seed.csv"
expect "--capacity 120%" 2 'invalid capacity "120%": is not above 0% and at most 100%' -- plan --capacity 120% "$tmp/seed.csv"
expect "--capacity 95" 2 'invalid capacity "95"' -- plan --capacity 95 "$tmp/seed.csv"
expect "--server 5ms" 2 'invalid fair server "5ms": is not RUNTIME/PERIOD' -- plan --server 5ms "$tmp/seed.csv"
expect "--server 2s/1s" 2 'invalid fair server "2s/1s": needs 1024ns <= runtime <= period' -- plan --server 2s/1s "$tmp/seed.csv"
expect "--server as large as the capacity" 2 'takes the whole capacity' -- plan --capacity 5% --server 50ms/1s "$tmp/seed.csv"
expect "--fit bogus" 2 'invalid fit "bogus": is not best, first or worst' -- plan --fit bogus "$tmp/seed.csv"
expect "--order bogus" 2 'invalid order "bogus": is not given or decreasing' -- plan --order bogus "$tmp/seed.csv"
expect "--order with --live" 2 '--order are for the offline plan' -- plan --live --order decreasing "$tmp/seed.csv"

# Best fit in the file's order packs the two small tasks on one CPU and then has no CPU for the
# second large one whole: one move (small1 to cpu1) makes room, as edfd's admit does; the largest
# first, all four fit without a move (60% + 30% on each CPU of 90%).
cat >"$tmp/order.csv" <<'CSV'
name,runtime,deadline,period
small1,3ms,10ms,10ms
small2,3ms,10ms,10ms
large1,6ms,10ms,10ms
large2,6ms,10ms,10ms
CSV
for want in "small1 1" "small2 0" "large1 1" "large2 0"; do
        expect "--order given: ${want% *} ends on cpu${want#* } after the move for room" 0 "^${want% *} .* placed +${want#* } " \
                -- plan --cpus 2 "$tmp/order.csv"
done
expect "--order given: the move is named under the table" 0 \
        '^large2: placed on cpu0 after moving small1 from cpu0 to cpu1 \(no CPU took it whole; edfd moves it while it sleeps\)$' \
        -- plan --cpus 2 "$tmp/order.csv"
room=$("$edfctl" plan --cpus 2 --json "$tmp/order.csv" | python3 -c 'import json,sys; t=json.load(sys.stdin)["tasks"]; print(t[3].get("room"), t[0]["moved"], t[1]["moved"])' 2>&1)
if [ "$room" = "{'task': 'small1', 'from': 0, 'to': 1} True False" ]; then
        ok "--order given --json: the move as room, the moved task marked"
else
        not_ok "--order given --json: the move as room, the moved task marked" "$room"
fi
for want in "small1 0" "small2 1" "large1 0" "large2 1"; do
        expect "--order decreasing: the set fits, ${want% *} on cpu${want#* }" 0 "^${want% *} .* placed +${want#* } " \
                -- plan --cpus 2 --order decreasing "$tmp/order.csv"
done
expect "--order decreasing: the summary says so" 0 'best fit in decreasing utilization, 2 CPUs' \
        -- plan --cpus 2 --order decreasing "$tmp/order.csv"
expect "--order decreasing: --json says so" 0 '"order": ?"decreasing"' -- plan --cpus 2 --order decreasing --json "$tmp/order.csv"
expect "an option plan does not take" 2 '^edfctl: -g/--group does not apply to plan' -- plan -g audio "$tmp/seed.csv"
expect "--cpus given twice" 2 'given twice' -- plan --cpus 1 --cpus 2 "$tmp/seed.csv"
expect "--cpus on another verb" 2 '^edfctl: --cpus does not apply to list' -- list --cpus 2
expect "plan --help" 0 'Check a task set|Place the task set' -- plan --help

echo "1..$n"
[ "$failed" = 0 ]
