#!/usr/bin/env bash
# run_peer_kill.sh XDEVRUN NP PROG - drive fault_peer_kill.
#
# Rank 3 is killed with SIGKILL on purpose, so xdevrun (run with --keep-going
# so the survivors are left alone) must exit 137 = 128 + SIGKILL. Each
# survivor that passes its checks writes "ok" to $XDEV_TEST_OUT/rank.<r>; the
# test passes only if every survivor did and the exit status is 137.
# With PEER_KILL_LAUNCH set (e.g. "mpirun --enable-recovery -np 4"), that
# launcher starts the job instead and its exit status is its own affair:
# the survivors' results decide.
set -u
xdevrun=$1 np=$2 prog=$3
victim=3

out=$(mktemp -d "${TMPDIR:-/tmp}/xdev-peer-kill.XXXXXX") || exit 1
trap 'rm -rf "$out"' EXIT
export XDEV_TEST_OUT=$out

start=$(date +%s%N)
if [ -n "${PEER_KILL_LAUNCH:-}" ]; then
    timeout 110 $PEER_KILL_LAUNCH "$prog"
else
    "$xdevrun" --timeout 110 -n "$np" --keep-going "$prog"
fi
status=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
echo "${PEER_KILL_LAUNCH:-xdevrun -n $np --keep-going} exited with status $status after $elapsed_ms ms"

fail=0
if [ -z "${PEER_KILL_LAUNCH:-}" ] && [ "$status" -ne 137 ]; then
    echo "FAIL: xdevrun exit status $status, want 137 (victim rank $victim killed by signal 9, every survivor exiting 0)"
    fail=1
fi
for ((r = 0; r < np; r++)); do
    [ "$r" -eq "$victim" ] && continue
    if [ ! -f "$out/rank.$r" ]; then
        echo "FAIL: survivor rank $r wrote no result"
        fail=1
    elif [ "$(cat "$out/rank.$r")" != ok ]; then
        echo "FAIL: survivor rank $r wrote '$(cat "$out/rank.$r")'"
        fail=1
    fi
done
if [ -e "$out/rank.$victim" ]; then
    echo "FAIL: the victim rank $victim wrote a result: it was not killed"
    fail=1
fi
[ "$fail" -eq 0 ] && echo "PASS: all survivors ok, victim died by SIGKILL"
exit "$fail"
