#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# edfd's command line without starting the daemon: --help, --version, --check-config (of a file and
# of the embedded default), and every usage error with its exit status (2) and message. Reports TAP.
#
#   test-edfd-cli.sh EDFD
set -u
edfd=${1:-${EDFD_BINARY:-}}
n=0 failed=0
tmp=$(mktemp -d /tmp/test-edfd-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# check NAME WANT_RC OUT_ERE ERR_ERE ARGS...: an ERE of "" means that stream must be empty.
check() {
        local name=$1 want=$2 out_re=$3 err_re=$4 rc out err why=()
        shift 4
        "$edfd" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
        rc=$?
        out=$(<"$tmp/out") err=$(<"$tmp/err")
        [ "$rc" = "$want" ] || why+=("exit status $rc, expected $want")
        if [ -z "$out_re" ]; then [ -z "$out" ] || why+=("stdout not empty"); else
                grep -Eq -- "$out_re" <<<"$out" || why+=("stdout does not match /$out_re/"); fi
        if [ -z "$err_re" ]; then [ -z "$err" ] || why+=("stderr not empty"); else
                grep -Eq -- "$err_re" <<<"$err" || why+=("stderr does not match /$err_re/"); fi
        n=$((n + 1))
        if [ ${#why[@]} -eq 0 ]; then
                echo "ok $n - $name"
        else
                failed=$((failed + 1))
                echo "not ok $n - $name"
                printf '#   %s\n' "${why[@]}" "edfd $*" "stdout: ${out:0:300}" "stderr: ${err:0:300}"
        fi
}

if [ -z "$edfd" ] || [ ! -x "$edfd" ]; then
        echo "1..0 # SKIP no edfd binary (give its path as the first argument)"
        exit 0
fi

printf 'groups:\n  a: {bandwidth: 10%%}\n' >"$tmp/good.yaml"
printf 'groups:\n  a: {bandwidth: 10}\n' >"$tmp/bad.yaml"

check "--help" 0 "--check-config" "" --help
check "--version" 0 "^edfd [0-9]" "" --version
check "--print-default-config is conf/edfd.yaml" 0 "^# edfd.yaml" "" --print-default-config
check "--check-config FILE" 0 "^capacity: " "" --check-config "$tmp/good.yaml"
check "--check-config of a bad file names file, line and column" 1 "" \
        "bad.yaml:2:18: groups.a.bandwidth: \"10\" has no % sign" --check-config "$tmp/bad.yaml"
check "--check-config of a missing file" 1 "" "cannot open .*/nonexistent.yaml" \
        --check-config "$tmp/nonexistent.yaml"
check "--check-config of two files" 2 "" "takes one file" --check-config "$tmp/good.yaml" "$tmp/good.yaml"
check "--embedded-config --check-config checks the embedded default" 0 "^default-group: default" "" \
        --embedded-config --check-config
check "--embedded-config with --check-config FILE" 2 "" "exclude each other" \
        --embedded-config --check-config "$tmp/good.yaml"
check "--embedded-config with --config" 2 "" "--config and --embedded-config exclude each other" \
        --embedded-config --config "$tmp/good.yaml"
check "--embedded-config --config with --check-config" 2 "" "exclude each other" \
        --embedded-config --config "$tmp/good.yaml" --check-config
check "a relative --cgroup-root" 2 "" "--cgroup-root needs an absolute path" --cgroup-root edfd
check "a relative --state-dir" 2 "" "--state-dir needs an absolute path" --state-dir run/edfd
check "an unknown --log-level" 2 "" "unknown log level \"loud\"" --log-level loud
check "an unknown option" 2 "" "unrecognized option" --frobnicate
check "an argument" 2 "" "unexpected argument \"x\"" x

echo "1..$n"
[ "$failed" -eq 0 ]
