#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# edfd-oci-hook against hostile users and hostile input, without a container engine: the hook is
# given OCI states and bundles directly, as runc gives them, and talks to a real edfd on a private
# bus. Reports TAP.
#
#   test-hostile-oci.sh EDFCTL EDFD HOOK
#
# What it holds the hook to (docs/containers.md):
#   - the group a container gets (GROUP/ID, its name public in ListGroups) is open to root only,
#     not to its parent's users: nobody cannot admit its own process there while the container is
#     created and not started, and the container's own admission at its program's start works;
#   - CreateGroupWithUsers, the bus method behind it, refuses a bad users list by name, and a
#     reload keeps the list;
#   - a bundle whose config.json is a FIFO, and a standard input that stays open and silent, end
#     the hook with exit 1 and the reason, not a hang (a timeout(1) of 60 s only keeps a broken
#     hook from hanging the suite);
#   - poststop removes only what createRuntime makes: a group named by an annotation that is not
#     open to containers, or a group of the container's name that createRuntime did not make, is
#     refused with the reason and left alone.

set -u
edfctl=${1:?usage: test-hostile-oci.sh EDFCTL EDFD HOOK}
edfd=${2:?} hook=${3:?}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/tap.sh" # ok, not_ok, wait_for, runnable_by_nobody
tmp=$(mktemp -d /tmp/test-hostile-oci.XXXXXX)
chmod 711 "$tmp" # the bus socket is in here, and nobody connects
bus_pid= edfd_pid=
started=()

cleanup() {
        local p
        for p in "${started[@]}"; do kill -KILL "$p" 2>/dev/null; done
        [ -n "$edfd_pid" ] && kill -KILL "$edfd_pid" 2>/dev/null && wait "$edfd_pid" 2>/dev/null
        [ -n "$bus_pid" ] && kill "$bus_pid" 2>/dev/null && wait "$bus_pid" 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

skip_all() { echo "1..0 # SKIP $1"; exit 0; }
bail() { echo "Bail out! $1"; exit 1; }

[ "$(id -u)" = 0 ] || skip_all "needs root (edfd, SCHED_DEADLINE, the hook as a rootful engine runs it)"
command -v dbus-daemon >/dev/null || skip_all "no dbus-daemon"
command -v busctl >/dev/null || skip_all "no busctl"
chrt -d -T 1000000 -P 10000000 0 true 2>/dev/null || skip_all "SCHED_DEADLINE does not work here"
nobody_edfctl=$(runnable_by_nobody "$edfctl" "$tmp/nobody") || bail "cannot copy edfctl where nobody can run it"

run() { # run CMD...: rc, out and err of CMD
        "$@" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        out=$(<"$tmp/out")
        err=$(<"$tmp/err")
}
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

sed "s|@BUS_SOCKET@|$tmp/bus|" "$here/bus.conf" >"$tmp/bus.conf"
dbus-daemon --config-file="$tmp/bus.conf" --nofork --print-address=3 3>"$tmp/address" 2>/dev/null &
bus_pid=$!
for _ in $(seq 100); do [ -s "$tmp/address" ] && break; sleep 0.05; done
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$tmp/bus

# containers is open to anyone (no users:), as docs/containers.md configures it.
cat >"$tmp/edfd.yaml" <<'EOF'
groups:
  containers:
    bandwidth: 100%
    threads: none
    groups:
      static1:
        bandwidth: 5%
  closed:
    bandwidth: 10%
EOF
cat >"$tmp/oci-hook.yaml" <<'EOF'
default-group: containers
groups:
  containers: 40%
EOF
start_edfd() {
        "$edfd" -c "$tmp/edfd.yaml" --state-dir "$tmp/state" >>"$tmp/edfd.log" 2>&1 &
        edfd_pid=$!
        for _ in $(seq 200); do
                "$edfctl" status >/dev/null 2>&1 && break
                kill -0 "$edfd_pid" 2>/dev/null || break
                sleep 0.05
        done
        "$edfctl" status >/dev/null 2>&1 || { sed 's/^/#   /' "$tmp/edfd.log"; bail "edfd did not start"; }
}
start_edfd

# group_field PATH FIELD: a field of the group in edfctl status --json (JSON), or "absent".
group_field() {
        "$edfctl" status --json | /usr/bin/python3 -c '
import json, sys
for g in json.load(sys.stdin)["groups"]:
    if g["path"] == sys.argv[1]:
        print(json.dumps(g[sys.argv[2]]))
        sys.exit(0)
print("absent")' "$1" "$2"
}
reservations_of() { # GROUP: "PID TID" per reservation in GROUP
        "$edfctl" list --json | /usr/bin/python3 -c '
import json, sys
for r in json.load(sys.stdin):
    if r["group"] == sys.argv[1]:
        print(r["pid"], r["tid"])' "$1"
}
state() { # ID STATUS PID BUNDLE ANNOTATIONS
        printf '{"ociVersion":"1.0.2","id":"%s","status":"%s","pid":%s,"bundle":"%s","annotations":{%s}}' "$@"
}
A10='"org.edfd.runtime":"1ms","org.edfd.period":"10ms"'
hook() { timeout 60 "$hook" --config "$tmp/oci-hook.yaml" "$@"; }
mkdir -p "$tmp/bundle"
printf '{"process":{"args":["sleep","30"]}}' >"$tmp/bundle/config.json"

# ---- a container's group is the container's: nobody cannot take its booked bandwidth ----

# The container's process as runc leaves it at createRuntime: parked (here on a FIFO) until the
# engine starts it, then it execs the container's program.
mkfifo "$tmp/go"
sh -c 'read x <"$1"; exec sleep 30' sh "$tmp/go" &
victim=$!
started+=("$victim")
run hook createRuntime < <(state ffff0010 creating "$victim" "$tmp/bundle" "$A10")
users=$(group_field containers/ffff0010 users)
[ "$rc" = 0 ] && [ "$users" = "[]" ] &&
        ok "createRuntime makes the container's group open to root only (users: [], not its parent's anyone)" ||
        not_ok "createRuntime makes the container's group open to root only (users: [], not its parent's anyone)" \
                "rc $rc" "$err" "users: $users"

# nobody_sleep: a sleep of nobody's in $squatter, once it is nobody's (setpriv has exec'd it).
nobody_sleep() {
        setpriv --reuid=65534 --regid=65534 --clear-groups sleep 30 &
        squatter=$!
        started+=("$squatter")
        wait_for squatting || bail "nobody's sleep did not start"
}
squatting() { [ "$(stat -c %u "/proc/$squatter")" = 65534 ] && [ "$(cat "/proc/$squatter/comm")" = sleep ]; }
nobody_sleep
run as_nobody "$nobody_edfctl" admit -g containers/ffff0010 -T 1ms -P 10ms -p "$squatter"
if [ "$rc" != 0 ] && grep -q "group containers/ffff0010 does not allow uid 65534" <<<"$err" &&
   [ -z "$(reservations_of containers/ffff0010)" ]; then
        ok "nobody's admission into containers/ID, created and not started, is refused by name; nothing booked"
else
        not_ok "nobody's admission into containers/ID, created and not started, is refused by name; nothing booked" \
                "rc $rc" "$out" "$err" "$(reservations_of containers/ffff0010)"
fi
run as_nobody "$nobody_edfctl" admit -g containers -T 1ms -P 10ms -p "$squatter"
[ "$rc" = 0 ] && ok "nobody may still use containers itself (the parent's users: are unchanged)" ||
        not_ok "nobody may still use containers itself (the parent's users: are unchanged)" "rc $rc" "$err"

# The engine starts the container: its program is admitted at its first sleep, into its own group.
echo go >"$tmp/go"
has_victim() { [ "$(reservations_of containers/ffff0010)" = "$victim $victim" ]; }
if wait_for has_victim && chrt -p "$victim" | grep -q "SCHED_DEADLINE"; then
        ok "the container's own program is admitted into containers/ID at its start (root, by the hook)"
else
        not_ok "the container's own program is admitted into containers/ID at its start (root, by the hook)" \
                "$(reservations_of containers/ffff0010)" "$(chrt -p "$victim" 2>&1)" "$(tail -5 "$tmp/edfd.log")"
fi

# ---- CreateGroupWithUsers refuses a bad list by name, and holds a good one ----

bcall() { busctl --address="$DBUS_SYSTEM_BUS_ADDRESS" call org.edfd.Admission1 /org/edfd/Admission1 \
                org.edfd.Admission1.Manager "$@"; }
run bcall CreateGroupWithUsers sttas containers/u1 1000000 100000000 2 nobody 1234
[ "$rc" != 0 ] && grep -q "users: name 2 is a number" <<<"$err" && [ "$(group_field containers/u1 users)" = absent ] &&
        ok "CreateGroupWithUsers with a uid for a name: refused by entry, no group" ||
        not_ok "CreateGroupWithUsers with a uid for a name: refused by entry, no group" "rc $rc" "$err"
run bcall CreateGroupWithUsers sttas containers/u1 1000000 100000000 2 nobody nobody
[ "$rc" != 0 ] && grep -q "users: name 2 repeats name 1" <<<"$err" && [ "$(group_field containers/u1 users)" = absent ] &&
        ok "CreateGroupWithUsers with a name twice: refused by entry, no group" ||
        not_ok "CreateGroupWithUsers with a name twice: refused by entry, no group" "rc $rc" "$err"
run bcall CreateGroupWithUsers sttas containers/u1 1000000 100000000 1 nobody
nobody_sleep
squatter2=$squatter
nobody_sleep
users=$(group_field containers/u1 users)
run2=$(as_nobody "$nobody_edfctl" admit -g containers/u1 -T 1ms -P 100ms -p "$squatter" 2>&1)
[ "$rc" = 0 ] && [ "$users" = '["nobody"]' ] && [ -n "$(reservations_of containers/u1)" ] &&
        ok "CreateGroupWithUsers [nobody]: the group's own list, and nobody may admit there" ||
        not_ok "CreateGroupWithUsers [nobody]: the group's own list, and nobody may admit there" "rc $rc" "$err" \
                "users: $users" "$run2"
run as_nobody busctl --address="$DBUS_SYSTEM_BUS_ADDRESS" call org.edfd.Admission1 /org/edfd/Admission1 \
        org.edfd.Admission1.Manager CreateGroupWithUsers sttas containers/u2 1000000 100000000 1 nobody
[ "$rc" != 0 ] && grep -qi "permission\|root" <<<"$err" && [ "$(group_field containers/u2 users)" = absent ] &&
        ok "CreateGroupWithUsers as nobody: permission denied, no group" ||
        not_ok "CreateGroupWithUsers as nobody: permission denied, no group" "rc $rc" "$err"

# A reload rebuilds the tree: the groups made at run time keep their own lists (not their parent's).
run bcall Reload
users=$(group_field containers/ffff0010 users) users1=$(group_field containers/u1 users)
[ "$rc" = 0 ] && [ "$users" = "[]" ] && [ "$users1" = '["nobody"]' ] &&
        ok "after a reload the container's group is still root's only, and containers/u1 still nobody's" ||
        not_ok "after a reload the container's group is still root's only, and containers/u1 still nobody's" "rc $rc" \
                "$err" "containers/ffff0010: $users" "containers/u1: $users1"

# ---- the hook's reads end: a FIFO for config.json, a silent standard input ----

mkdir -p "$tmp/fifo-bundle"
mkfifo "$tmp/fifo-bundle/config.json"
run hook createRuntime < <(state ffff0011 creating "$victim" "$tmp/fifo-bundle" "$A10")
if [ "$rc" = 1 ] &&
   grep -q "container ffff0011: cannot read $tmp/fifo-bundle/config.json: not a regular file" <<<"$err" &&
   [ "$(group_field containers/ffff0011 users)" = absent ]; then
        ok "a bundle whose config.json is a FIFO: exit 1 with the reason, no group made"
else
        not_ok "a bundle whose config.json is a FIFO: exit 1 with the reason, no group made" "rc $rc (124: it hung)" "$err"
fi
# The writer keeps standard input open and writes nothing (an engine that hangs).
run hook createRuntime < <(sleep 40)
[ "$rc" = 1 ] && grep -q "cannot read the OCI state on standard input: nothing came within 10 s" <<<"$err" &&
        ok "a standard input that stays open and silent: exit 1 with the reason" ||
        not_ok "a standard input that stays open and silent: exit 1 with the reason" "rc $rc (124: it hung)" "$err"

# ---- poststop removes only what createRuntime makes ----

# A group that is not open to containers, named by the annotation, with the "id" of one of its
# dynamic children: poststop must not remove it nor release what it holds.
"$edfctl" group create closed/pipewire -T 1ms -P 100ms >/dev/null 2>&1
run hook poststop < <(state pipewire stopped 0 "$tmp/bundle" "$A10"',"org.edfd.group":"closed"')
[ "$rc" = 1 ] && grep -q "group closed is not open to containers (the hook's configuration): createRuntime made nothing there, nothing is removed" <<<"$err" &&
   [ "$(group_field closed/pipewire users)" != absent ] &&
        ok "poststop with org.edfd.group naming a group not open to containers: refused, nothing removed" ||
        not_ok "poststop with org.edfd.group naming a group not open to containers: refused, nothing removed" "rc $rc" "$err" \
                "closed/pipewire: $(group_field closed/pipewire users)"
# A group of the container's name that createRuntime did not make (containers/static1, of edfd's
# configuration, holding nobody's reservation): refused, left as it is.
run as_nobody "$nobody_edfctl" admit -g containers/static1 -T 1ms -P 100ms -p "$squatter2"
run hook poststop < <(state static1 stopped 0 "$tmp/bundle" "$A10")
[ "$rc" = 1 ] && grep -q "group containers/static1 is not the one createRuntime makes for this container (it comes from edfd's configuration): not removed" <<<"$err" &&
   [ -n "$(reservations_of containers/static1)" ] &&
        ok "poststop for a group of the container's name that createRuntime did not make: refused, left as it is" ||
        not_ok "poststop for a group of the container's name that createRuntime did not make: refused, left as it is" "rc $rc" "$err" \
                "$(reservations_of containers/static1)"
# edfd restarted: its journal keeps no users list, so the container's group may be open to its
# parent's users again (docs/containers.md); poststop must still remove it.
kill -TERM "$edfd_pid"; wait "$edfd_pid"; edfd_pid=
start_edfd
[ "$(reservations_of containers/ffff0010)" = "$victim $victim" ] &&
        ok "after a restart of edfd the container's group and its reservation are back" ||
        not_ok "after a restart of edfd the container's group and its reservation are back" \
                "$(group_field containers/ffff0010 users)" "$(reservations_of containers/ffff0010)"
# The container's own: released and removed.
run hook poststop < <(state ffff0010 stopped "$victim" "$tmp/bundle" "$A10")
[ "$rc" = 0 ] && [ -z "$err" ] && [ "$(group_field containers/ffff0010 users)" = absent ] && [ -z "$(reservations_of containers/ffff0010)" ] &&
        ok "poststop of the container's own group: released and removed" ||
        not_ok "poststop of the container's own group: released and removed" "rc $rc" "$err" "$(group_field containers/ffff0010 users)"

kill -TERM "$edfd_pid"; wait "$edfd_pid"; st=$?; edfd_pid=
[ "$st" = 0 ] && ! grep -qE "Sanitizer|runtime error:" "$tmp/edfd.log" && ok "edfd stopped cleanly" ||
        not_ok "edfd stopped cleanly" "exit $st" "$(tail -20 "$tmp/edfd.log")"

echo "1..$n"
[ "$failed" = 0 ]
