#!/usr/bin/env bash
# run_soak.sh XDEVRUN PROG clean|faulty SECONDS [NP_MIN NP_MAX]
#
# Runs the soak program again and again for about SECONDS (at least once),
# each run with a new seed and a rank count drawn from NP_MIN..NP_MAX
# (default 4..8); XDEV_SOAK_SEED (and XDEV_SOAK_NP) replay one run.
# clean: xdevrun must exit 0 and every rank write "ok". faulty: xdevrun
# (--keep-going) must exit 137, the victims (named by the program in
# $XDEV_TEST_OUT/victims) write nothing, every other rank "ok". A failed
# run prints its seed and the command that repeats it. Ends with the
# totals of the ranks' summary lines (every rank that got to the end of
# its traffic prints one) and exits 1 if a run failed.
set -u
xdevrun=$1 prog=$2 mode=$3 seconds=$4 np_min=${5:-4} np_max=${6:-8}
# Short enough that survivors give up on a killed rank quickly, long
# enough that a rank stopped for up to a second is not taken for dead.
export XDEV_PEER_TIMEOUT_MS=${XDEV_PEER_TIMEOUT_MS:-3000}
# rendezvous of 256 KiB and more cross shm's single-copy threshold
export XDEV_SHM_CMA_MIN=${XDEV_SHM_CMA_MIN:-256k}

# Only killed ranks may end early; in clean mode one that fails ends the job.
keep_going=""
[ "$mode" = faulty ] && keep_going=--keep-going

runs=0 failed=0 totals=""
end=$(($(date +%s) + seconds))
while [ "$runs" -eq 0 ] || [ "$(date +%s)" -lt "$end" ]; do
    seed=${XDEV_SOAK_SEED:-$(( (RANDOM << 30) ^ (RANDOM << 15) ^ RANDOM ))}
    np=${XDEV_SOAK_NP:-$((np_min + RANDOM % (np_max - np_min + 1)))}
    out=$(mktemp -d "${TMPDIR:-/tmp}/xdev-soak.XXXXXX") || exit 1
    start=$(date +%s%N)
    XDEV_TEST_OUT=$out "$xdevrun" --timeout 110 -n "$np" $keep_going "$prog" "$seed" "$mode" \
        >"$out/log" 2>&1
    status=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    victims=$(cat "$out/victims" 2>/dev/null)
    why=""
    want=0
    [ "$mode" = faulty ] && want=137
    [ "$status" -eq "$want" ] || why="xdevrun exited $status, want $want"
    for ((r = 0; r < np; r++)); do
        if [[ " $victims " == *" $r "* ]]; then
            [ -e "$out/rank.$r" ] && why="$why; the victim $r was not killed"
        elif [ "$(cat "$out/rank.$r" 2>/dev/null)" != ok ]; then
            why="$why; rank $r did not pass"
        fi
    done
    runs=$((runs + 1))
    summary=$(grep -o 'summary .*' "$out/log")
    totals+="$summary"$'\n'
    msgs=$(awk '{for (i = 2; i <= NF; i++) if ($i ~ /^recv_msgs=/) s += substr($i, 11)} END {print s + 0}' <<<"$summary")
    if [ -n "$why" ]; then
        failed=$((failed + 1))
        echo "FAIL run $runs: seed $seed np $np${victims:+ victims $victims} ($ms ms): ${why#; }"
        grep -E "FAIL|watchdog|stream " "$out/log" | head -n 30
        echo "  repeat: XDEV_SOAK_SEED=$seed XDEV_SOAK_NP=$np XDEV_TRANSPORT=${XDEV_TRANSPORT:-auto}" \
            "XDEV_SHM_CMA_MIN=$XDEV_SHM_CMA_MIN" \
            "${XDEV_OFI_PROVIDER:+XDEV_OFI_PROVIDER='$XDEV_OFI_PROVIDER' }$0 $xdevrun $prog $mode 1"
    else
        echo "ok run $runs: seed $seed np $np${victims:+ victims $victims} ($ms ms): $msgs messages received"
    fi
    rm -rf "$out"
    [ -n "${XDEV_SOAK_SEED:-}" ] && break
done
# Totals of every key=value counter over every rank that reported.
awk -v mode="$mode" -v runs="$runs" -v failed="$failed" -v tr="${XDEV_TRANSPORT:-auto}" '
    { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] !~ /^(seed|np|threads|transport|mode)$/) sum[kv[1]] += kv[2] } }
    END {
        printf "soak %s over %s: %d runs, %d failed; %.0f messages, %.0f bytes received;", mode, tr, runs, failed, sum["recv_msgs"], sum["recv_bytes"]
        printf " %.0f sent; %.0f truncated, %.0f cancelled (%.0f too late), %.0f probes, %.0f mprobes, %.0f woken, %.0f peer errors\n", sum["sent_msgs"], sum["truncated"], sum["cancelled"], sum["cancel_late"], sum["probes"], sum["mprobes"], sum["woken"], sum["peer_errors"]
    }' <<<"$totals"
[ "$failed" -eq 0 ]
