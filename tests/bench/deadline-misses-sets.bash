# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The task-set mode of tests/bench/deadline-misses (issue 20): sourced by it when --sets is given,
# with its options already read (see its header for what they mean). Not a script of its own.

die() { echo "deadline-misses: $*" >&2; exit 2; }

# Durations in ns, as periodic and edfctl read them (a number with ns, us, ms or s).
ns() {
        awk -v d="$1" 'BEGIN {
                if (match(d, /^[0-9]+(\.[0-9]+)?(ns|us|ms|s)$/) == 0) { print "bad"; exit }
                u = d; sub(/^[0-9.]+/, "", u); v = substr(d, 1, length(d) - length(u))
                m = (u == "ns") ? 1 : (u == "us") ? 1e3 : (u == "ms") ? 1e6 : 1e9
                printf "%.0f\n", v * m }'
}
us() { # duration -> whole microseconds, or "bad"
        local v
        v=$(ns "$1")
        [ "$v" = bad ] && { echo bad; return; }
        echo $((v / 1000))
}

[ -n "$duration" ] || duration=10s
[ -n "$tasks" ] || tasks=4-7
[ -n "$load" ] || die "--sets needs --load (a percentage of edfd's capacity, such as 50%)"
case $sets in ''|*[!0-9]*|0) die "--sets needs a positive number" ;; esac
load_pct=${load%\%}
case $load_pct in ''|*[!0-9.]*) die "--load is a percentage such as 50%" ;; esac
awk -v l="$load_pct" 'BEGIN { exit !(l > 0 && l <= 100) }' || die "--load must be above 0% and at most 100%"
case $tasks in
*-*) n_min=${tasks%-*} n_max=${tasks#*-} ;;
*) n_min=$tasks n_max=$tasks ;;
esac
case $n_min$n_max in ''|*[!0-9]*) die "--tasks is a number or a range such as 4-7" ;; esac
[ "$n_min" -ge 1 ] && [ "$n_min" -le "$n_max" ] && [ "$n_max" -le 64 ] || die "--tasks must be within 1..64, low-high"
p_min_us=$(us "${periods%-*}") p_max_us=$(us "${periods#*-}")
[ "$p_min_us" != bad ] && [ "$p_max_us" != bad ] && [ "$p_min_us" -ge 1 ] && [ "$p_min_us" -le "$p_max_us" ] ||
        die "--periods is a range with units such as 10ms-50ms"
case $period_dist in uniform|log) ;; *) die "--period-dist is uniform or log" ;; esac
case $set_mode in edf|cfs|both) ;; *) die "--mode is edf, cfs or both" ;; esac
# --work-rule calibrated: W = R - the per-job overhead edfctl calibrate measures (below, once edfd
# runs), admitted with --work W so that edfctl adds the overhead back: the same budgets as any rule,
# with the least slack the calibration allows.
calibrated=0 work_rule_arg=$work_rule
if [ "$work_rule" = calibrated ]; then
        calibrated=1 work_rule=1,0us
fi
rule_a=${work_rule%,*} rule_b_us=$(us "${work_rule#*,}")
case $rule_a in ''|*[!0-9.]*) die "--work-rule is FACTOR,OFFSET such as 0.85,60us" ;; esac
[ "$rule_b_us" != bad ] || die "--work-rule is FACTOR,OFFSET such as 0.85,60us (the offset with its unit)"
min_r_us=$(us "$min_runtime")
[ "$min_r_us" != bad ] && [ "$min_r_us" -ge 1 ] || die "--min-runtime is a duration such as 300us"
awk -v a="$rule_a" -v b="$rule_b_us" -v r="$min_r_us" 'BEGIN { exit !(a > 0 && a <= 1 && a * r - b >= 1) }' ||
        die "--work-rule $work_rule leaves no work for a job of --min-runtime $min_runtime (need 0 < A <= 1, A x R - B >= 1us)"
duration_ns=$(ns "$duration") warmup_ns=$(ns "$warmup")
[ "$duration_ns" != bad ] && [ "$warmup_ns" != bad ] || die "--duration and --warmup need a unit: 10s, 2s"
[ "$warmup_ns" -lt "$duration_ns" ] || die "--warmup must be shorter than --duration (the warm-up is part of it)"
if [ -n "$trace_dir" ]; then
        mkdir -p "$trace_dir" || die "--trace $trace_dir: cannot make that directory"
        trace_dir=$(cd "$trace_dir" && pwd)
fi
[ "$duration_ns" -ge $((p_max_us * 1000)) ] || die "--duration must be at least the longest period"
if [ -z "$seed" ]; then
        seed=$(( $(date +%s%N) / 1000 % 1000000000 ))
fi
case $seed in ''|*[!0-9]*) die "--seed needs a non-negative number" ;; esac

bench=$build/tests/bench
for f in "$bench/bench-edfd" "$bench/periodic" "$build/client/edfctl"; do
        [ -x "$f" ] || { echo "deadline-misses: $f is not built (ninja -C $build)" >&2; exit 1; }
done
command -v busctl >/dev/null || { echo "deadline-misses: busctl is needed to read edfd's Capacity" >&2; exit 1; }
if [ -z "${EDFD_PID:-}" ]; then
        # The sets are admitted into the root: a configuration without groups.
        exec "$bench/bench-edfd" --config "$src/tests/bench/bench-tasksets.yaml" -- "$0" "${args[@]}" --build "$build"
fi

prop() { # name -> the number
        busctl --address="$DBUS_SYSTEM_BUS_ADDRESS" get-property org.edfd.Admission1 /org/edfd/Admission1 \
                org.edfd.Admission1.Manager "$1" | awk '{ print $2 }'
}
capacity=$(prop Capacity) allocated=$(prop Allocated)
case $capacity in ''|*[!0-9]*) echo "deadline-misses: cannot read edfd's Capacity" >&2; exit 1 ;; esac
cap_cpus=$(awk -v c="$capacity" 'BEGIN { printf "%.2f", c / 1048576 }')
target=$(awk -v c="$capacity" -v l="$load_pct" 'BEGIN { printf "%.6f", c / 1048576 * l / 100 }')

tmp=$(mktemp -d /tmp/deadline-misses-sets.XXXXXX)
hogs=() tpids=()
stop_all() {
        local p
        for p in "${tpids[@]}" "${hogs[@]}"; do kill "$p" 2>/dev/null || true; done
        for p in "${tpids[@]}" "${hogs[@]}"; do wait "$p" 2>/dev/null || true; done
        tpids=() hogs=()
}
# Background jobs of a script ignore SIGINT: stop them ourselves, on every way out.
# A Ctrl-C reaches this script twice (from the terminal and passed on by bench-edfd): the second
# one must not cut the cleanup short.
on_signal() { # status
        trap '' INT TERM HUP
        echo "deadline-misses: interrupted, stopping every task" >&2
        exit "$1"
}
trap 'trap "" INT TERM HUP; stop_all; rm -rf "$tmp"' EXIT
trap 'on_signal 130' INT
trap 'on_signal 143' TERM
trap 'on_signal 129' HUP

if [ "$calibrated" = 1 ]; then
        if [ -z "${EDFD_CALIBRATION:-}" ] || [ ! -f "$EDFD_CALIBRATION" ]; then
                export EDFD_CALIBRATION=$tmp/calibration
                echo "deadline-misses: edfctl calibrate --duration 30s (before any set, no hogs):"
                "$build/client/edfctl" calibrate -g / --duration 30s "$EDFD_CALIBRATION" | sed 's/^/  /' ||
                        { echo "deadline-misses: edfctl calibrate failed" >&2; exit 1; }
        fi
        rule_b_us=$(awk -F' = ' '$1 == "overhead" { printf "%d", ($2 + 999) / 1000 }' "$EDFD_CALIBRATION")
        [ -n "$rule_b_us" ] || { echo "deadline-misses: $EDFD_CALIBRATION has no overhead" >&2; exit 1; }
        awk -v b="$rule_b_us" -v r="$min_r_us" 'BEGIN { exit !(r - b >= 1) }' ||
                die "the calibrated overhead ${rule_b_us}us leaves no work for a job of --min-runtime $min_runtime"
fi

# The sets: one line per task, "set task n period_us runtime_us work_us u clamped draws".
# UUniFast (Bini and Buttazzo 2005), a set drawn again while a task would exceed one CPU.
# Park-Miller's minimal standard generator: exact in awk's doubles, the same in mawk and gawk.
awk -v seed="$seed" -v sets="$sets" -v nmin="$n_min" -v nmax="$n_max" -v pmin="$p_min_us" -v pmax="$p_max_us" \
    -v dist="$period_dist" -v U="$target" -v minr="$min_r_us" -v a="$rule_a" -v b="$rule_b_us" '
        function rnd() { s = (16807 * s) % 2147483647; return s / 2147483647 }
        BEGIN {
                s = seed % 2147483646 + 1
                for (k = 1; k <= sets; k++) {
                        for (draws = 1; ; draws++) {
                                if (draws > 100000) { print "no set fits" > "/dev/stderr"; exit 1 }
                                n = nmin + int(rnd() * (nmax - nmin + 1))
                                sum = U
                                for (i = 1; i < n; i++) { rest = sum * rnd() ^ (1 / (n - i)); u[i] = sum - rest; sum = rest }
                                u[n] = sum
                                fits = 1
                                for (i = 1; i <= n; i++) {
                                        x = rnd()
                                        p = (dist == "log") ? exp(log(pmin) + x * (log(pmax) - log(pmin))) : pmin + x * (pmax - pmin)
                                        P[i] = int(p + 0.5)
                                        R[i] = int(u[i] * P[i] + 0.5); c[i] = 0
                                        if (R[i] < minr) { R[i] = minr; c[i] = 1 }
                                        if (R[i] > P[i]) fits = 0
                                }
                                if (fits) break
                        }
                        for (i = 1; i <= n; i++)
                                printf "%d %d %d %d %d %d %.6f %d %d\n", k, i, n, P[i], R[i], int(a * R[i] - b + 0.5), u[i], c[i], draws
                }
        }' >"$tmp/sets" || { echo "deadline-misses: could not draw the sets" >&2; exit 1; }

ncpu=$(nproc)
modes=$set_mode
[ "$set_mode" = both ] && modes="cfs edf"
hog_words="a CPU hog on each of $ncpu CPUs"
[ "$hogs_on" = 1 ] || hog_words="no hogs"
echo "deadline-misses: $sets random task sets at $load of edfd's capacity ($cap_cpus CPUs, $capacity units of 2^-20;"
echo "  allocated before: $allocated), so about $(printf '%.3f' "$target") CPUs each; seed $seed"
echo "  $n_min-$n_max tasks, periods $period_dist in $periods (deadline = period), runtime >= $min_runtime,"
echo "  work = $rule_a x runtime - ${rule_b_us}us; $hog_words; each task runs $duration, the first $warmup discarded;"
echo "  mode: $modes (about $((sets * (duration_ns / 1000000000 + 1))) s per mode)"
echo "  reproduce: $0 --sets $sets --load $load --seed $seed --tasks $tasks --periods $periods" \
        "--period-dist $period_dist --work-rule $work_rule_arg --min-runtime $min_runtime --duration $duration" \
        "--warmup $warmup $([ "$hogs_on" = 1 ] && echo --hogs || echo --no-hogs) --mode $set_mode"
awk -v minr="$min_runtime" '$2 == 1 { tot = 0; line = "" }
        { tot += $5 / $4; line = line sprintf(" %g/%g%s", $5 / 1000, $4 / 1000, $8 ? "*" : ""); if ($8) raised = 1 }
        $2 == $3 { printf "  set %d: %d tasks, U = %.3f CPU (draws: %d); runtime/period in ms:%s\n", $1, $3, tot, $9, line }
        END { if (raised) printf "  (* runtime raised to %s)\n", minr }' "$tmp/sets"

# Wait until an admitted task's edfctl has become periodic (admitted) or has exited (refused).
# Prints "run" or "exit".
await_exec() { # pid
        local i comm
        for ((i = 0; i < 1000; i++)); do
                comm=$(cat "/proc/$1/comm" 2>/dev/null) || { echo exit; return; }
                [ "$comm" = periodic ] && { echo run; return; }
                [ -d "/proc/$1" ] && [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" = Z ] && { echo exit; return; }
                sleep 0.01
        done
        echo timeout
}

# Run set k in a mode; appends "k mode status jobs misses worst_ns worst_ratio U" to $tmp/results.
run_set() { # k mode
        local k=$1 mode=$2 i j n P R W u c d status=ok why="" f
        if [ "$hogs_on" = 1 ]; then
                for ((i = 0; i < ncpu; i++)); do
                        ( while :; do :; done ) &
                        hogs+=($!)
                done
                sleep 0.2
        fi
        while read -r _ j n P R W u c d; do
                f=$tmp/$k.$mode.$j
                if [ "$mode" = cfs ]; then
                        PERIODIC_RAW=1 "$bench/periodic" --work "${W}us" --period "${P}us" --duration "$duration" \
                                --skip "$warmup" >"$f" 2>"$f.err" &
                        tpids+=($!)
                        continue
                fi
                budget=(-T "${R}us")
                # Calibrated: edfctl adds the overhead to W, which gives R back (W = R - overhead).
                [ "$calibrated" = 1 ] && budget=(--work "${W}us" --overhead auto)
                PERIODIC_RAW=1 "$build/client/edfctl" admit -g / "${budget[@]}" -P "${P}us" -- \
                        "$bench/periodic" --work "${W}us" --period "${P}us" --duration "$duration" --skip "$warmup" \
                        >"$f" 2>"$f.err" &
                tpids+=($!)
                case $(await_exec $!) in
                run) ;;
                exit)
                        local rc=0
                        wait "$!" || rc=$?
                        tpids=("${tpids[@]:0:${#tpids[@]}-1}")
                        if grep -qE 'admission refused|the kernel refused|limit exceeded' "$f.err"; then
                                status=refused why="task $j (${R}us/${P}us): $(head -1 "$f.err")"
                                break
                        fi
                        echo "deadline-misses: set $k task $j: edfctl failed (status $rc):" >&2
                        cat "$f.err" >&2
                        exit 1 ;;
                *)
                        echo "deadline-misses: set $k task $j: edfctl neither admitted nor refused in 10 s" >&2
                        exit 1 ;;
                esac
        done < <(awk -v k="$k" '$1 == k' "$tmp/sets")
        if [ "$status" = refused ]; then
                stop_all
                echo "  set $k $mode: NOT ADMITTED: $why"
                echo "$k $mode refused 0 0 0 0 0" >>"$tmp/results"
                return
        fi
        local failed=0 p tracer=""
        if [ -n "$trace_dir" ] && [ "$mode" = edf ]; then
                # From the end of the last task's warm-up to shortly before the first one ends.
                local rec_ms=$(( (duration_ns - warmup_ns) / 1000000 - 500 ))
                if [ "$rec_ms" -ge 500 ]; then
                        ( sleep "$(awk -v w="$warmup_ns" 'BEGIN { printf "%.3f", w / 1e9 }')"
                          exec "$src/tools/edfd-trace" -d "${rec_ms}ms" --max-lines 1000 >"$trace_dir/set-$k.txt" 2>&1 ) &
                        tracer=$!
                fi
        fi
        for p in "${tpids[@]}"; do wait "$p" || failed=1; done
        [ -z "$tracer" ] || wait "$tracer" || echo "deadline-misses: edfd-trace of set $k failed (see $trace_dir/set-$k.txt)" >&2
        tpids=()
        stop_all
        if [ $failed -ne 0 ]; then
                echo "deadline-misses: a task of set $k ($mode) failed:" >&2
                cat "$tmp/$k.$mode".*.err >&2
                exit 1
        fi
        # Per task: jobs, misses and worst response from its raw lines; then the set's sums.
        for ((j = 1; j <= $(awk -v k="$k" '$1 == k { n = $3 } END { print n }' "$tmp/sets"); j++)); do
                P=$(awk -v k="$k" -v j="$j" '$1 == k && $2 == j { print $4 * 1000 }' "$tmp/sets")
                awk -v p="$P" '/^[0-9]+$/ { n++; if ($1 > p) m++; if ($1 > w) w = $1 }
                        END { printf "%d %d %d %.4f\n", n, m, w, w / p }' "$tmp/$k.$mode.$j"
        done | awk -v k="$k" -v mode="$mode" -v U="$(awk -v k="$k" '$1 == k { t += $5 / $4 } END { printf "%.4f", t }' "$tmp/sets")" '
                { n += $1; m += $2; if ($3 > w) w = $3; if ($4 > r) r = $4 }
                END { printf "%d %s ok %d %d %d %.4f %s\n", k, mode, n, m, w, r, U }' >>"$tmp/results"
        tail -1 "$tmp/results" | awk '{ printf "  set %d %s: %d jobs, %d missed (%.2f%%), worst response %.2f ms = %.2f x its deadline\n",
                $1, $2, $4, $5, $4 ? 100 * $5 / $4 : 0, $6 / 1e6, $7 }'
}

: >"$tmp/results"
for ((k = 1; k <= sets; k++)); do
        for mode in $modes; do
                run_set "$k" "$mode"
        done
done

echo
label="$load of $cap_cpus CPUs, $([ "$hogs_on" = 1 ] && echo "hogs" || echo "no hogs")"
echo "| total load | sets with a miss | jobs missed | not admitted | worst response / deadline |"
echo "|---|---|---|---|---|"
for mode in $modes; do
        awk -v mode="$mode" -v label="$label" -v sets="$sets" '$2 == mode {
                        if ($3 == "refused") { nr++; next }
                        ok++; n += $4; m += $5; if ($5 > 0) ms++; if ($7 > r) { r = $7; w = $6 }
                }
                END {
                        printf "| %s (%s) | %d of %d | %d of %d (%.2f%%) | %d of %d | %.2f (%.1f ms) |\n", label,
                                mode == "edf" ? "edfd" : "CFS", ms, ok, m, n, n ? 100 * m / n : 0, nr, sets, r, w / 1e6
                }' "$tmp/results"
done
# Rows for tools/bench: the edfd figure, CFS as its peer when both ran.
sum() { # mode -> "sets_missed admitted misses jobs pct refused ratio worst_ms"
        awk -v mode="$1" '$2 == mode { if ($3 == "refused") { nr++; next }
                        ok++; n += $4; m += $5; if ($5 > 0) ms++; if ($7 > r) { r = $7; w = $6 } }
                END { printf "%d %d %d %d %.2f %d %.2f %.1f\n", ms, ok, m, n, n ? 100 * m / n : 0, nr, r, w / 1e6 }' \
                "$tmp/results"
}
first=${modes##* }
read -r s_ms s_ok s_m s_n s_pct s_nr s_r s_w < <(sum "$first")
peer=- peer_r=-
if [ "$set_mode" = both ]; then
        read -r c_ms c_ok c_m c_n c_pct c_nr c_r c_w < <(sum cfs)
        peer="CFS $c_m of $c_n jobs ($c_pct%), $c_ms of $c_ok sets"
        peer_r="CFS ${c_r}x ($c_w ms)"
fi
who=$([ "$first" = edf ] && echo edfd || echo CFS)
printf '@row\tdeadline misses, %d random sets at %s (%s)\t%d of %d jobs (%s%%), %d of %d sets with a miss, %d not admitted\t%s\t-\t-\t-\n' \
        "$sets" "$label" "$who" "$s_m" "$s_n" "$s_pct" "$s_ms" "$s_ok" "$s_nr" "$peer"
printf '@row\tworst response / deadline, random sets at %s (%s)\t%sx (%s ms)\t%s\t-\t-\t-\n' \
        "$label" "$who" "$s_r" "$s_w" "$peer_r"
echo "deadline-misses: seed $seed (give --seed $seed with the same options to run the same sets again)"
