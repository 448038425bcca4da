#!/bin/bash
# launcher-bind: which CPUs each rank may run on, for every --bind mode.
. "$(dirname "$0")/lib.sh"

# The CPUs this script may use, as xdevrun will see them.
mapfile -t cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), sep="\n")')
ncpu=${#cpus[@]}
all=$(grep Cpus_allowed_list /proc/self/status | cut -f2)

record='grep Cpus_allowed_list /proc/self/status | cut -f2 > "$WORK/env.$XDEV_RANK"'
allowed() { cat "$WORK/env.$1"; }

# each_rank_on N STRIDE: rank r may run on exactly CPU cpus[r % STRIDE].
each_rank_on() {
    local r want
    for ((r = 0; r < $1; r++)); do
        want=${cpus[$((r % $2))]}
        [ "$(allowed $r)" = "$want" ] || { echo "     rank $r may run on '$(allowed $r)', want '$want'"; return 1; }
    done
}
# all_unbound N: every rank may run wherever xdevrun could.
all_unbound() {
    local r
    for ((r = 0; r < $1; r++)); do
        [ "$(allowed $r)" = "$all" ] || { echo "     rank $r may run on '$(allowed $r)', want '$all'"; return 1; }
    done
}

reset_work
run -n "$ncpu" sh -c "$record"
check "as many ranks as CPUs: xdevrun exits 0" rc_is 0
check "by default each of $ncpu ranks is bound to its own CPU" each_rank_on "$ncpu" "$ncpu"

reset_work
run -n $((ncpu + 1)) sh -c "$record"
check "by default $((ncpu + 1)) ranks on $ncpu CPUs are left unbound" all_unbound $((ncpu + 1))

reset_work
run -n $((ncpu + 1)) --bind core sh -c "$record"
check "--bind core binds more ranks than CPUs round robin" each_rank_on $((ncpu + 1)) "$ncpu"

reset_work
run -n "$ncpu" --bind none sh -c "$record"
check "--bind none leaves every rank unbound" all_unbound "$ncpu"

# Within a narrower set (taskset, a cgroup), only its CPUs are used.
reset_work
first=${cpus[0]}
taskset -c "$first" "$XDEVRUN" -n 2 --bind core sh -c "$record" 2>"$WORK/err"
RC=$?
check "under taskset -c $first: xdevrun exits 0" rc_is 0
check "under taskset -c $first: both ranks are bound to CPU $first" \
    test "$(allowed 0) $(allowed 1)" = "$first $first"

run -n 1 --bind sideways true
check "--bind with an unknown mode: exit 2" rc_is 2
check "--bind with an unknown mode: says so" err_has "invalid binding 'sideways'"

finish
