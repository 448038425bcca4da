#!/usr/bin/env bash
# run_dies_early.sh MPIRUN PMIX_CHECK: three ranks under mpirun
# --enable-recovery, rank 1 dead before its xdev_init; the other two must
# each say PASS (their xdev_init failed within the peer timeout). mpirun
# keeps going past the death and exits 0 whatever its ranks return, so the
# verdict is read from what they print.
set -uo pipefail
mpirun=$1 check=$2
out=$(timeout 60 "$mpirun" --allow-run-as-root --oversubscribe -np 3 --enable-recovery \
    -x XDEV_CHECK_DIES_EARLY=1 -x XDEV_PEER_TIMEOUT_MS=3000 "$check" 2>&1)
rc=$?
printf '%s\n' "$out"
passed=$(grep -c ': PASS$' <<<"$out")
if [[ $rc -ne 0 || $passed -ne 2 ]] || grep -q '^FAIL' <<<"$out"; then
    echo "run_dies_early: mpirun exited $rc, $passed of 2 survivors passed" >&2
    exit 1
fi
