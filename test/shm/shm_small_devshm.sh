#!/usr/bin/env bash
# A /dev/shm too small for the job's rings, as in a container (Docker
# gives 64 MiB):
#   shm_small_devshm.sh XDEVRUN INIT_PROGRAM CONFORMANCE
# In a mount namespace of its own, with a 16 MiB tmpfs on /dev/shm, eight
# ranks whose rings take 8 MiB each start. xdev_init must fail with
# XDEV_ERR_NOMEM on the ranks that find no room (before, every rank died
# of SIGBUS when it first wrote its rings), the others must start, and
# nothing may stay in /dev/shm. With 64 KiB rings the same job fits and
# passes a conformance case. Needs root (it mounts).
set -u
xdevrun=$1 init_prog=$2 conformance=$3
[ "$(id -u)" -eq 0 ] || { echo "shm_small_devshm: needs root to mount a tmpfs"; exit 1; }
if [ -z "${XDEV_SMALL_DEVSHM_INSIDE:-}" ]; then
    XDEV_SMALL_DEVSHM_INSIDE=1 exec unshare --mount --propagation private "$0" "$@"
fi
mount -t tmpfs -o size=16m xdev-small-devshm /dev/shm || { echo "cannot mount a tmpfs"; exit 1; }
export XDEV_PEER_TIMEOUT_MS=2000 # ranks that failed init are peers gone early
fail=0
log=$("$xdevrun" --keep-going --timeout 60 -n 8 --transport shm "$init_prog" 2>&1)
echo "$log"
started=$(grep -c '^init 0$' <<<"$log") refused=$(grep -c '^init -2$' <<<"$log")
echo "8 ranks of 8 MiB rings in 16 MiB: $started started, $refused out of memory"
flunk() { echo "FAIL: $*"; ls -A /dev/shm; fail=1; }
grep -q 'signal' <<<"$log" && flunk "a rank died of a signal"
[ $((started + refused)) -eq 8 ] || flunk "not every rank said XDEV_OK or XDEV_ERR_NOMEM"
[ "$refused" -gt 0 ] || flunk "no rank got XDEV_ERR_NOMEM"
[ -z "$(ls -A /dev/shm)" ] || flunk "left in /dev/shm"
XDEV_SHM_RING=64k "$xdevrun" --timeout 100 -n 8 --transport shm "$conformance" matching ||
    flunk "64 KiB rings in 16 MiB"
[ -z "$(ls -A /dev/shm)" ] || flunk "left in /dev/shm after the conformance case"
exit $fail
