# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The TAP helpers of the shell tests, sourced (. "$here/tap.sh"): ok, not_ok, skip and check count
# into n and failed; wait_for polls a command for up to 10 s. The test prints "1..$n" at its end.

n=0
failed=0

ok() {
        n=$((n + 1))
        echo "ok $n - $1"
}

not_ok() { # not_ok NAME [DIAGNOSTIC LINE...]
        local name=$1 line
        shift
        n=$((n + 1))
        failed=$((failed + 1))
        echo "not ok $n - $name"
        for line in "$@"; do
                printf '%s\n' "$line" | sed 's/^/#   /'
        done
}

skip() { # skip NAME REASON
        n=$((n + 1))
        echo "ok $n - $1 # SKIP $2"
}

check() { # check NAME CMD...: ok if CMD succeeds, else not ok with its output ($tmp/check.out)
        local name=$1
        shift
        if "$@" >"$tmp/check.out" 2>&1; then ok "$name"; else not_ok "$name" "$(cat "$tmp/check.out")"; fi
}

wait_for() { # wait_for CMD...: 0 once CMD succeeds, 1 after 10 s
        local i
        for i in $(seq 200); do
                "$@" >/dev/null 2>&1 && return 0
                sleep 0.05
        done
        return 1
}

runnable_by_nobody() { # runnable_by_nobody BIN DIR: a path of BIN that user nobody can run
        # BIN itself, or, when nobody cannot reach it (a checkout below a 0700 home or mktemp -d), a
        # copy in DIR/bin with the libedfd.so.0 it links in DIR/lib/edfd, where its $ORIGIN rpath
        # looks.
        local bin=$1 dir=$2 lib
        lib=$(ldd "$bin" 2>/dev/null | awk '$1 == "libedfd.so.0" { print $3 }')
        if setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$bin" &&
                { [ -z "$lib" ] || setpriv --reuid=65534 --regid=65534 --clear-groups test -r "$lib"; }; then
                echo "$bin"
                return
        fi
        mkdir -p "$dir/bin" "$dir/lib/edfd"
        cp "$bin" "$dir/bin/" || return 1
        if [ -n "$lib" ]; then cp "$lib" "$dir/lib/edfd/" || return 1; fi
        chmod -R a+rX "$dir"
        echo "$dir/bin/${bin##*/}"
}
