#!/usr/bin/env bash
# run_random_kill.sh XDEVRUN PROG kill|stop SECONDS [NP_MIN NP_MAX]
#
# Runs fault_random_kill again and again for about SECONDS (at least once),
# each run with a new seed and a rank count drawn from NP_MIN..NP_MAX
# (default 3..6); XDEV_RANDOM_KILL_SEED (and XDEV_RANDOM_KILL_NP) replay one
# run. kill: xdevrun (--keep-going) must exit 137, the victim (named by the
# program in $XDEV_TEST_OUT/victim) write nothing, every survivor "ok".
# stop: xdevrun must exit 0 and every rank write "ok". A failed run prints
# its seed and the command that repeats it. Ends with
# "random kill MODE: R runs, F failed" and exits 1 if any failed.
set -u
xdevrun=$1 prog=$2 mode=$3 seconds=$4 np_min=${5:-3} np_max=${6:-6}
# stop: a victim stopped for 3 s (even before its xdev_init) must not be
# taken for dead, so a timeout set by hand must stay well above that.
if [ "$mode" = kill ]; then
    export XDEV_PEER_TIMEOUT_MS=${XDEV_PEER_TIMEOUT_MS:-3000}
else
    export XDEV_PEER_TIMEOUT_MS=${XDEV_PEER_TIMEOUT_MS:-10000}
fi
# rendezvous of 256 KiB and more cross shm's single-copy threshold
export XDEV_SHM_CMA_MIN=${XDEV_SHM_CMA_MIN:-256k}

runs=0 failed=0
end=$(($(date +%s) + seconds))
while [ "$runs" -eq 0 ] || [ "$(date +%s)" -lt "$end" ]; do
    seed=${XDEV_RANDOM_KILL_SEED:-$(( (RANDOM << 30) ^ (RANDOM << 15) ^ RANDOM ))}
    np=${XDEV_RANDOM_KILL_NP:-$((np_min + RANDOM % (np_max - np_min + 1)))}
    out=$(mktemp -d "${TMPDIR:-/tmp}/xdev-random-kill.XXXXXX") || exit 1
    start=$(date +%s%N)
    XDEV_TEST_OUT=$out "$xdevrun" --timeout 110 -n "$np" --keep-going "$prog" "$seed" "$mode" \
        >"$out/log" 2>&1
    status=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    victim=$(cat "$out/victim" 2>/dev/null || echo -1)
    why=""
    want=0
    [ "$mode" = kill ] && want=137
    [ "$status" -eq "$want" ] || why="xdevrun exited $status, want $want"
    for ((r = 0; r < np; r++)); do
        if [ "$mode" = kill ] && [ "$r" -eq "$victim" ]; then
            [ -e "$out/rank.$r" ] && why="$why; the victim $r was not killed"
        elif [ "$(cat "$out/rank.$r" 2>/dev/null)" != ok ]; then
            why="$why; rank $r did not pass"
        fi
    done
    runs=$((runs + 1))
    if [ -n "$why" ]; then
        failed=$((failed + 1))
        echo "FAIL run $runs: seed $seed np $np victim $victim ($ms ms): ${why#; }"
        grep -E "FAIL|watchdog" "$out/log" | head -n 20
        echo "  repeat: XDEV_RANDOM_KILL_SEED=$seed XDEV_RANDOM_KILL_NP=$np XDEV_TRANSPORT=${XDEV_TRANSPORT:-auto} $0 $xdevrun $prog $mode 1"
    else
        echo "ok run $runs: seed $seed np $np victim $victim ($ms ms): $(grep -c 'received whole' "$out/log") ranks reported"
    fi
    rm -rf "$out"
    [ -n "${XDEV_RANDOM_KILL_SEED:-}" ] && break
done
echo "random kill $mode: $runs runs, $failed failed"
[ "$failed" -eq 0 ]
