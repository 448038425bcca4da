#!/usr/bin/env bash
# run_kill.sh XDEVRUN NP PROG FAMILY ALG [mid|slow|late|first] - drive `xdev-coll-test kill`.
#
# The victim kills itself with SIGKILL on purpose, so xdevrun (with
# --keep-going, so the survivors are left alone) must exit 137. Each
# survivor that passes its checks writes "ok" to $XDEV_TEST_OUT/rank.<r>;
# the test passes only if every survivor did and the status is 137.
set -u
xdevrun=$1 np=$2 prog=$3 family=$4 alg=$5 mid=${6:-}
victim=$((np - 1)) # as case_kill.c chooses it
[ "$mid" = mid ] || [ "$mid" = slow ] || [ "$mid" = late ] && victim=2
[ "$family" = bcast ] && victim=$((np / 2))
[ "$mid" = first ] && victim=0

out=$(mktemp -d "${TMPDIR:-/tmp}/xdev-coll-kill.XXXXXX") || exit 1
trap 'rm -rf "$out"' EXIT
export XDEV_TEST_OUT=$out

"$xdevrun" --timeout 110 -n "$np" --keep-going "$prog" kill "$family" "$alg" $mid
status=$?
fail=0
if [ "$status" -ne 137 ]; then
    echo "FAIL: xdevrun exit status $status, want 137 (victim killed, survivors exit 0)"
    fail=1
fi
for ((r = 0; r < np; r++)); do
    [ "$r" -eq "$victim" ] && continue
    if [ "$(cat "$out/rank.$r" 2>/dev/null)" != ok ]; then
        echo "FAIL: survivor rank $r did not pass"
        fail=1
    fi
done
[ -e "$out/rank.$victim" ] && { echo "FAIL: the victim wrote a result"; fail=1; }
[ "$fail" -eq 0 ] && echo "PASS: every survivor passed its checks, victim $victim died"
exit "$fail"
