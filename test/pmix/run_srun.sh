#!/usr/bin/env bash
# run_srun.sh PMIX_CHECK CONFORMANCE RUN_PEER_KILL FAULT_PEER_KILL CASE...
#
# Slurm as a cluster runs it, in miniature: a private slurmctld and slurmd
# on this host with a generated configuration in a temporary directory
# (auth/none, no munge, no systemd, no cgroups; 4 CPUs declared so that 4
# ranks fit on a 2-core machine), then xdev programs started by
# `srun --mpi=pmix` with no xdev launcher. Both daemons are this script's
# children and are stopped and reaped at the end, with the directory
# removed, whatever happened.
set -uo pipefail
check=$1 conformance=$2 peer_kill=$3 fault_peer_kill=$4
shift 4
dir=$(mktemp -d /tmp/xdev-slurm.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    rm -rf "$dir"
}
trap cleanup EXIT

free_port() {
    local p
    while :; do
        p=$((20000 + RANDOM % 20000))
        ss -ltn | awk '{print $4}' | grep -q ":$p\$" || { echo "$p"; return; }
    done
}

host=$(hostname -s)
user=$(id -un)
mkdir -p "$dir/state" "$dir/spool"
cat >"$dir/slurm.conf" <<CONF
ClusterName=xdevtest
SlurmctldHost=$host
AuthType=auth/none
CredType=cred/none
SlurmUser=$user
SlurmdUser=$user
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
NodeName=$host CPUs=4 State=UNKNOWN
PartitionName=xdev Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
export SLURM_CONF=$dir/slurm.conf

slurmctld -D -f "$SLURM_CONF" >"$dir/ctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$host" >"$dir/d.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
    sinfo -h -o %t 2>/dev/null | grep -qx idle && break
    sleep 0.2
done
if ! sinfo -h -o %t 2>/dev/null | grep -qx idle; then
    echo "FAIL: the private Slurm did not come up"
    tail -n 20 "$dir"/*.out "$dir"/*.log
    exit 1
fi

fail=0
run() { # what, then the srun command's environment and arguments
    local what=$1
    shift
    if ! out=$(env "$@" 2>&1); then
        echo "FAIL: $what"
        echo "$out" | tail -n 20
        fail=1
    else
        echo "ok: $what"
    fi
}
srun=(timeout 120 srun --mpi=pmix -n 4)
run "pmix-check under srun (auto: shm)" "${srun[@]}" "$check"
run "pmix-check under srun (tcp)" XDEV_TRANSPORT=tcp XDEV_EXPECT_TRANSPORT=tcp "${srun[@]}" "$check"
for c in "$@"; do
    run "conformance $c under srun" "${srun[@]}" "$conformance" "$c"
done
# A rank killed under srun: the others (left running: no kill on bad exit)
# fail only what involves it, and outlive it by longer than the step would
# last were the plugin to take the death for the job's.
run "a killed rank under srun" FAULT_OUTLIVE_MS=3000 \
    PEER_KILL_LAUNCH="srun --mpi=pmix -n 4 --kill-on-bad-exit=0" \
    bash "$peer_kill" none 4 "$fault_peer_kill"
# Steps end before their slurmstepd does: let them go while slurmd still
# reaps them.
for _ in $(seq 50); do
    pgrep -x slurmstepd >/dev/null || break
    sleep 0.2
done
exit $fail
