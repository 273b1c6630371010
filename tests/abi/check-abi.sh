#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# libedfd's ABI kept honest. Reports TAP.
#
#   check-abi.sh check LIB SOURCE-DIR
#       the symbols LIB exports are exactly the version script's (lib/edfd/libedfd.sym), each
#       declared in edfd/edfd.h; and abidiff of the committed ABI (lib/edfd/libedfd.abi) against
#       LIB finds nothing but additions.
#   check-abi.sh self-test LIB SOURCE-DIR CC SANITIZE
#       the check above can fail: LIB relinked without one of its symbols is refused, LIB with one
#       more function in a new version node is accepted, LIB with a function whose parameter types
#       changed is refused, LIB relinked with a symbol the version script does not name is refused.
#   check-abi.sh update LIB SOURCE-DIR
#       write lib/edfd/libedfd.abi from LIB (after an addition, with its new version node).
#
# The verdict on an abidiff report: exit 0 is no change; any bit of 8 (ABIDIFF_ABI_INCOMPATIBLE_CHANGE:
# a removed symbol) fails; 4 (ABIDIFF_ABI_CHANGE) passes only when the summary shows additions and
# nothing removed or changed (abidiff cannot prove a changed type compatible, and neither can we);
# 1 or 2 (an error of abidiff, bad usage) fail. Changes inside the opaque types (struct edfd, the
# request, snapshot, ...) are not ABI and are suppressed (lib/edfd/libedfd.abignore).

set -u
mode=${1:?usage: check-abi.sh check|self-test|update LIB SOURCE-DIR [CC SANITIZE]}
lib=${2:?} src=${3:?}
sym=$src/lib/edfd/libedfd.sym header=$src/lib/edfd/edfd.h
baseline=$src/lib/edfd/libedfd.abi ignore=$src/lib/edfd/libedfd.abignore
n=0 failed=0
tmp=$(mktemp -d /tmp/check-abi.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { local name=$1; shift; n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $name"; printf '#   %s\n' "$@"; }
skip_all() { echo "1..0 # SKIP $1"; exit 0; }

command -v nm >/dev/null || skip_all "no nm (binutils)"
[ -f "$lib" ] || { echo "Bail out! no library at $lib"; exit 1; }

# The global symbols of the version script, one per line, sorted.
script_symbols() { # SYMFILE
        sed 's|/\*.*\*/||g' "$1" | awk '/^[[:space:]]*local:/ { l = 1 } /^[[:space:]]*global:/ { l = 0 }
                !l && /^[[:space:]]*[a-z_][a-z0-9_]*;/ { gsub(/[[:space:];]/, ""); print }' | sort
}
# The defined dynamic symbols of a library, without their version, the version nodes left out.
exported() { # LIB
        nm -D --defined-only "$1" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort
}
# Functions declared in the header (name followed by an opening parenthesis at the start of a
# declaration), the static inline helpers left out.
declared() {
        grep -v '^static inline' "$header" | grep -oE '^[a-z_][a-z0-9_ *]*[ *](edfd_[a-z0-9_]+)\(' |
                grep -oE 'edfd_[a-z0-9_]+\($' | tr -d '(' | sort -u
}

abi_dump() { # LIB HEADERS-DIR
        abidw --no-corpus-path --no-comp-dir-path --no-show-locs --drop-private-types \
                --suppressions "$ignore" --headers-dir "$2" "$1"
}

# verdict BASELINE LIB HEADERS-DIR: 0 when LIB keeps every function and type of BASELINE (additions
# allowed); the report in $tmp/abidiff.out either way.
verdict() {
        local rc
        abidiff --no-show-locs --suppressions "$ignore" --headers-dir2 "$3" "$1" "$2" >"$tmp/abidiff.out" 2>&1
        rc=$?
        echo "abidiff exit status $rc" >>"$tmp/abidiff.out"
        [ "$rc" = 0 ] && return 0
        [ "$rc" = 4 ] || return 1
        grep -qE '^Functions changes summary: 0 Removed, 0 Changed' "$tmp/abidiff.out" &&
                grep -qE '^Variables changes summary: 0 Removed, 0 Changed' "$tmp/abidiff.out" &&
                ! grep -qE 'Removed function symbols? not referenced|Removed variable symbols? not referenced|[1-9][0-9]* Removed function symbol' "$tmp/abidiff.out"
}

case $mode in
update)
        command -v abidw >/dev/null || { echo "update: needs abidw (Debian's abigail-tools)" >&2; exit 1; }
        # The translation units by their path in the source tree, not the build's.
        abi_dump "$lib" "$src/lib/edfd" | sed -E "s|path='[^']*/(lib/edfd/[^'/]*)'|path='\1'|" >"$tmp/new.abi" &&
                [ "${PIPESTATUS[0]}" = 0 ] || exit 1
        mv "$tmp/new.abi" "$baseline"
        echo "wrote $baseline"
        exit 0
        ;;
check)
        script_symbols "$sym" >"$tmp/script"
        exported "$lib" >"$tmp/exported"
        declared >"$tmp/declared"
        if [ -s "$tmp/script" ] && diff -u "$tmp/script" "$tmp/exported" >"$tmp/diff"; then
                ok "libedfd exports exactly the $(wc -l <"$tmp/script") symbols of libedfd.sym"
        else
                not_ok "libedfd exports exactly the symbols of libedfd.sym (- script, + exported)" "$(cat "$tmp/diff")"
        fi
        if diff -u "$tmp/script" "$tmp/declared" >"$tmp/diff"; then
                ok "every symbol of libedfd.sym is declared in edfd/edfd.h, and nothing else is"
        else
                not_ok "libedfd.sym and edfd/edfd.h name the same functions (- script, + header)" "$(cat "$tmp/diff")"
        fi
        if objdump -p "$lib" | grep -q 'SONAME *libedfd\.so\.0$'; then
                ok "the soname is libedfd.so.0"
        else
                not_ok "the soname is libedfd.so.0" "$(objdump -p "$lib" | grep SONAME)"
        fi
        if ! command -v abidiff >/dev/null; then
                if [ "${CI:-}" = true ]; then
                        not_ok "abidiff is installed (tools/setup-deps installs abigail-tools)"
                else
                        n=$((n + 1)); echo "ok $n - abidiff against libedfd.abi # SKIP no abidiff (Debian's abigail-tools; tools/setup-deps installs it)"
                fi
        elif ! readelf -S "$lib" | grep -q '\.debug_info'; then
                n=$((n + 1)); echo "ok $n - abidiff against libedfd.abi # SKIP $lib has no debug information (build with -g, as the default debugoptimized does)"
        elif verdict "$baseline" "$lib" "$src/lib/edfd"; then
                ok "abidiff: the library keeps the ABI of libedfd.abi ($(grep -oE '[0-9]+ Added functions?' "$tmp/abidiff.out" || echo 'no change'))"
        else
                not_ok "abidiff: the library keeps the ABI of libedfd.abi (after a deliberate addition: check-abi.sh update)" \
                        "$(cat "$tmp/abidiff.out")"
        fi
        ;;
self-test)
        cc=${4:?} sanitize=${5:?}
        command -v abidiff >/dev/null || {
                [ "${CI:-}" = true ] && { echo "Bail out! no abidiff under CI (tools/setup-deps installs abigail-tools)"; exit 1; }
                skip_all "no abidiff (Debian's abigail-tools)"
        }
        readelf -S "$lib" | grep -q '\.debug_info' || skip_all "$lib has no debug information"
        objs=("$lib".p/*.o)
        [ -f "${objs[0]}" ] || { echo "Bail out! no object files next to $lib"; exit 1; }
        san=()
        [ "$sanitize" != none ] && san=("-fsanitize=$sanitize")
        # relink OUT SYMFILE [EXTRA-OBJECTS...]: the library's own objects under another version script.
        relink() {
                local out=$1 map=$2; shift 2
                "$cc" -shared -fPIC "${san[@]}" -o "$out" -Wl,-soname,libedfd.so.0 -Wl,--version-script="$map" \
                        "${objs[@]}" "$@" $(pkg-config --libs libsystemd) >"$tmp/link.log" 2>&1
        }

        # 1. One function fewer: incompatible, refused.
        grep -v '^[[:space:]]*edfd_echo;' "$sym" >"$tmp/fewer.sym"
        if ! relink "$tmp/fewer.so" "$tmp/fewer.sym"; then
                not_ok "a library without edfd_echo links" "$(cat "$tmp/link.log")"
        elif verdict "$baseline" "$tmp/fewer.so" "$src/lib/edfd"; then
                not_ok "a library without edfd_echo is refused" "$(cat "$tmp/abidiff.out")"
        elif grep -q "edfd_echo" "$tmp/abidiff.out"; then
                ok "a library without edfd_echo is refused, and the report names it"
        else
                not_ok "a library without edfd_echo is refused, and the report names it" "$(cat "$tmp/abidiff.out")"
        fi

        # 2. One function more, in a new version node, declared in the header: accepted.
        mkdir -p "$tmp/more/edfd"
        cp "$header" "$tmp/more/edfd.h"
        sed -i 's|^int edfd_echo(|int edfd_abi_probe(edfd *e);\n&|' "$tmp/more/edfd.h"
        cat >"$tmp/probe.c" <<'EOF'
#include "edfd.h"
int edfd_abi_probe(edfd *e) { return e ? 1 : 0; }
EOF
        # A new node after the newest one of libedfd.sym.
        newest=$(grep -o '^LIBEDFD_[0-9.]*' "$sym" | tail -1)
        { cat "$sym"; printf '\nLIBEDFD_PROBE {\nglobal:\n        edfd_abi_probe;\n} %s;\n' "$newest"; } >"$tmp/more.sym"
        if ! "$cc" -c -fPIC -g "${san[@]}" -I"$tmp/more" -o "$tmp/probe.o" "$tmp/probe.c" >"$tmp/cc.log" 2>&1 ||
                        ! relink "$tmp/more.so" "$tmp/more.sym" "$tmp/probe.o"; then
                not_ok "a library with one more function links" "$(cat "$tmp/cc.log" "$tmp/link.log" 2>/dev/null)"
        elif verdict "$baseline" "$tmp/more.so" "$tmp/more"; then
                if grep -q "edfd_abi_probe" "$tmp/abidiff.out"; then
                        ok "a library with one more function (a new version node) is accepted, and the report shows the addition"
                else
                        not_ok "the report shows the addition" "$(cat "$tmp/abidiff.out")"
                fi
        else
                not_ok "a library with one more function (a new version node) is accepted" "$(cat "$tmp/abidiff.out")"
        fi

        # 3. A changed parameter type (edfd_echo's value and result as 32 bits): refused. The
        # library's own edfd_echo is renamed away at compile time and the new one takes its place.
        mkdir -p "$tmp/changed"
        sed 's|^int edfd_echo(edfd \*e, uint64_t value, uint64_t \*ret);|int edfd_echo(edfd *e, uint32_t value, uint32_t *ret);|' \
                "$header" >"$tmp/changed/edfd.h"
        cat >"$tmp/echo32.c" <<'EOF'
#include "edfd.h"
int edfd_echo(edfd *e, uint32_t value, uint32_t *ret) { if (ret) *ret = value; return e ? 0 : -22; }
EOF
        if ! grep -q 'uint32_t value' "$tmp/changed/edfd.h"; then
                not_ok "the header declares edfd_echo(edfd *e, uint64_t value, uint64_t *ret) (the self-test edits it)"
        elif ! "$cc" -c -fPIC -g -O2 -std=gnu11 -D_GNU_SOURCE "${san[@]}" -I"$src/lib" -Dedfd_echo=edfd_echo_old \
                        -o "$tmp/core.o" "$src/lib/edfd/libedfd.c" >"$tmp/cc.log" 2>&1 ||
                        ! "$cc" -c -fPIC -g "${san[@]}" -I"$tmp/changed" -o "$tmp/echo32.o" "$tmp/echo32.c" >>"$tmp/cc.log" 2>&1; then
                not_ok "a library with a changed edfd_echo compiles" "$(cat "$tmp/cc.log")"
        else
                others=()
                for o in "${objs[@]}"; do case $o in */libedfd.c.o) ;; *) others+=("$o") ;; esac; done
                if ! "$cc" -shared -fPIC "${san[@]}" -o "$tmp/changed.so" -Wl,-soname,libedfd.so.0 \
                                -Wl,--version-script="$sym" "$tmp/core.o" "${others[@]}" "$tmp/echo32.o" \
                                $(pkg-config --libs libsystemd) >"$tmp/link.log" 2>&1; then
                        not_ok "a library with a changed edfd_echo links" "$(cat "$tmp/link.log")"
                elif verdict "$baseline" "$tmp/changed.so" "$tmp/changed"; then
                        not_ok "a library whose edfd_echo takes uint32_t is refused" "$(cat "$tmp/abidiff.out")"
                elif grep -q "edfd_echo" "$tmp/abidiff.out"; then
                        ok "a library whose edfd_echo takes uint32_t is refused, and the report names it"
                else
                        not_ok "a library whose edfd_echo takes uint32_t is refused, and the report names it" "$(cat "$tmp/abidiff.out")"
                fi
        fi

        # 4. An internal helper leaked into the exports: the symbol check refuses it.
        sed 's|^global:|global:\n        edfd_begin;|' "$sym" >"$tmp/leak.sym"
        if ! relink "$tmp/leak.so" "$tmp/leak.sym"; then
                not_ok "a library exporting edfd_begin links" "$(cat "$tmp/link.log")"
        elif script_symbols "$sym" | diff -q - <(exported "$tmp/leak.so") >/dev/null; then
                not_ok "a library exporting the internal edfd_begin fails the symbol check"
        else
                ok "a library exporting the internal edfd_begin fails the symbol check"
        fi
        ;;
*)
        echo "usage: check-abi.sh check|self-test|update LIB SOURCE-DIR [CC SANITIZE]" >&2
        exit 2
        ;;
esac

echo "1..$n"
[ "$failed" = 0 ]
