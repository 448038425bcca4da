#!/usr/bin/env bash
# A stranger on the host takes the names a late rank will use:
#   shm_squat.sh PROGRAM
# /dev/shm is open to every local user. Rank 0 starts alone (shm only, so
# no bootstrap); a squatter waits for its names to show and creates, before
# rank 1 starts, every name it can derive from them for rank 1: rank 0's
# with the rank changed, and the names without a tag. Run as nobody when
# we are root, as a stranger would be. The job must not notice.
set -u
prog=$1
job=squat$$
export XDEV_TRANSPORT=shm XDEV_SIZE=2 XDEV_JOB_ID=$job XDEV_PEER_TIMEOUT_MS=20000
export XDEV_JOB_SECRET=squat-test-secret-$$
as_stranger=()
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    as_stranger=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
XDEV_RANK=0 timeout 60 "$prog" &
zero=$!
seen=
for _ in $(seq 1000); do
    seen=$(cd /dev/shm && ls -d "xdev-$job-0-"* 2>/dev/null)
    [ -n "$seen" ] && break
    sleep 0.01
done
[ -n "$seen" ] || { echo "rank 0 made no name in /dev/shm"; kill $zero; exit 1; }
squatted=()
for name in $seen "xdev-$job-0" "xdev-$job-0-bell"; do
    theirs=/dev/shm/${name/#xdev-$job-0/xdev-$job-1}
    if "${as_stranger[@]}" sh -c 'umask 0; set -C; : > "$1"' sh "$theirs" 2>/dev/null; then
        squatted+=("$theirs")
    fi
done
echo "rank 0's names: $(echo $seen); squatted: ${squatted[*]:-none}"
XDEV_RANK=1 timeout 60 "$prog"
one=$?
wait $zero
zero_rc=$?
rm -f "${squatted[@]}"
echo "rank 0 exited $zero_rc, rank 1 $one"
[ ${#squatted[@]} -gt 0 ] && [ "$zero_rc" -eq 0 ] && [ "$one" -eq 0 ]
