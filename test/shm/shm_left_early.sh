#!/usr/bin/env bash
# A rank that comes and goes before its peer maps its segment:
#   shm_left_early.sh PROGRAM
# Starts rank 0 alone (shm only, so no bootstrap), stops it once its
# segment is ready (it is then waiting for rank 1's), runs rank 1 to its end,
# and lets rank 0 go on. PROGRAM (shm_left_early.c) checks the rest; here,
# that nothing of the job is left in /dev/shm.
set -u
prog=$1
job=leftearly$$
export XDEV_TRANSPORT=shm XDEV_SIZE=2 XDEV_JOB_ID=$job XDEV_PEER_TIMEOUT_MS=30000 XDEV_FINALIZE_TIMEOUT_MS=200
export XDEV_JOB_SECRET=left-early-secret-$$
XDEV_RANK=0 "$prog" &
zero=$!
# Ready, not only there: its first bytes are the magic ("XDVSEG1"), which
# it writes last. Stopped before that, it would make rank 1 wait out its
# peer timeout for a segment that never became ready, and rank 1 would
# never map it at all.
for _ in $(seq 1000); do
    seg=$(find /dev/shm -maxdepth 1 -type f -name "xdev-$job-0-*" | head -1)
    [ -n "$seg" ] && [ "$(head -c 7 "$seg" 2>/dev/null)" = XDVSEG1 ] && break
    sleep 0.01
done
kill -STOP $zero
XDEV_RANK=1 timeout 60 "$prog"
one=$?
kill -CONT $zero
timeout 60 tail --pid=$zero -f /dev/null
wait $zero
zero_rc=$?
left=$(ls /dev/shm | grep -c "^xdev-$job-" || true)
echo "rank 0 exited $zero_rc, rank 1 $one; $left names of the job left in /dev/shm"
rm -f /dev/shm/xdev-$job-*
[ "$zero_rc" -eq 0 ] && [ "$one" -eq 0 ] && [ "$left" -eq 0 ]
