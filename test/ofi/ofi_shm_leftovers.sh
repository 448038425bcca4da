#!/usr/bin/env bash
# Over libfabric's shm provider, what killed processes leave in /dev/shm
# neither breaks a later job nor outlives its own job.
#   ofi_shm_leftovers.sh RUN_PEER_KILL XDEVRUN FAULT_PEER_KILL
#
# The provider names a region "<pid>:<domain>:<endpoint>" unless told
# otherwise; a rank killed with SIGKILL leaves its region behind, and the
# next process to get that pid used to die of SIGBUS or fail xdev_init.
# So stale regions are planted under the next pids first; then a rank of
# the job is killed, and its survivors must pass and the job's regions
# must be gone once xdevrun has returned.
set -u
run_peer_kill=$1 xdevrun=$2 prog=$3

stale=()
next=$(sh -c 'echo $$')
for ((i = 1; i <= 300; i++)); do
    f=/dev/shm/$((next + i)):0:0
    [ -e "$f" ] || { : >"$f" && stale+=("$f"); }
done
trap 'rm -f "${stale[@]}"' EXIT

count_ours() { ls /dev/shm | grep -c '^xdev-' || true; }
before=$(count_ours)
bash "$run_peer_kill" "$xdevrun" 4 "$prog"
rc=$?
after=$(count_ours)
echo "peer-kill job: $rc; ${#stale[@]} stale regions planted; xdev names in /dev/shm before $before, after $after"
[ "$rc" -eq 0 ] && [ "$after" -le "$before" ]
