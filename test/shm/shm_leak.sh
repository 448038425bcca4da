#!/usr/bin/env bash
# Nothing of a job is left in /dev/shm: segments vanish once mapped (checked
# inside the job by shm_unlinked) and a rank killed with SIGKILL leaves
# nothing behind either.   shm_leak.sh XDEVRUN SHM_UNLINKED
set -u
xdevrun=$1 prog=$2
before=$(ls /dev/shm | grep -c '^xdev-' || true)
"$xdevrun" -n 4 --transport shm --keep-going --timeout 60 "$prog"
rc=$?
after=$(ls /dev/shm | grep -c '^xdev-' || true)
echo "xdevrun exited $rc (137 expected: rank 1 killed); xdev segments in /dev/shm before $before, after $after"
[ "$rc" -eq 137 ] && [ "$after" -le "$before" ]
