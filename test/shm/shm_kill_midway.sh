#!/usr/bin/env bash
# shm_kill_midway.sh XDEVRUN PROG: rank 1 must die by SIGKILL (xdevrun exits
# 137 with --keep-going) and rank 0 must report PASS.
set -u
xdevrun=$1 prog=$2
out=$(XDEV_SHM_CMA_MIN=never "$xdevrun" -n 2 --transport shm --keep-going --timeout 80 "$prog" 2>&1)
rc=$?
echo "$out"
echo "xdevrun exited $rc (137 expected: rank 1 killed)"
[ "$rc" -eq 137 ] && grep -q 'shm_kill_midway: PASS' <<<"$out"
