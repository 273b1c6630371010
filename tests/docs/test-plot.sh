#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tools/plot-placement against the committed table of measured runs and against bad tables: the
# plot is a PNG of the expected size, and every bad table is refused by line with the reason.
# Reports TAP.
#
#   test-plot.sh PLOT-PLACEMENT DATA
set -u
plot=${1:?usage: test-plot.sh PLOT-PLACEMENT DATA} data=${2:?}
tmp=$(mktemp -d /tmp/test-plot.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { local name=$1; shift; n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $name"; printf '#   %s\n' "$@"; }

out=$("$plot" --data "$data" --out "$tmp/p.png" 2>&1); rc=$?
desc=$(file -b "$tmp/p.png" 2>/dev/null)
if [ "$rc" = 0 ] && [[ "$desc" == "PNG image data, 1100 x 420,"* ]]; then
        ok "the committed table plots to a 1100x420 PNG"
else
        not_ok "the committed table plots to a 1100x420 PNG" "rc $rc" "$out" "$desc"
fi

bad() { # NAME ERE LINE: a table of that one line is refused with a message matching ERE
        printf '# a comment\n%b\n' "$3" >"$tmp/bad.tsv"
        out=$("$plot" --data "$tmp/bad.tsv" --out "$tmp/bad.png" 2>&1); rc=$?
        if [ "$rc" != 0 ] && grep -Eq "$2" <<<"$out" && [ ! -e "$tmp/bad.png" ]; then
                ok "$1"
        else
                not_ok "$1" "rc $rc" "$out"
        fi
}
bad "six columns: refused by line" "bad.tsv:2: 6 columns, expected 7" 'seed\t-\tglobal\t9\t9\t7554'
bad "a count that is not a number" "bad.tsv:2: .*whole numbers" 'seed\t-\tglobal\t9\tnine\t7554\t1'
bad "more missed than jobs" "bad.tsv:2: the counts do not add up" 'random\t50\tglobal\t20\t20\t10\t11'
bad "an unknown experiment" 'bad.tsv:2: unknown experiment "other"' 'other\t50\tglobal\t20\t20\t10\t1'
bad "a random set's load that is not a percentage" "bad.tsv:2: .*load is a percentage" 'random\thalf\tglobal\t20\t20\t10\t1'
printf '# nothing\n' >"$tmp/empty.tsv"
out=$("$plot" --data "$tmp/empty.tsv" --out "$tmp/e.png" 2>&1); rc=$?
[ "$rc" != 0 ] && grep -q "no rows" <<<"$out" && ok "a table without rows is refused" || not_ok "a table without rows is refused" "rc $rc" "$out"

echo "1..$n"
[ "$failed" = 0 ]
