#!/usr/bin/env bash
# scale.sh BUILD_DIR [RANKS...]
#
# xdev-scale at each job size (default 2 8 32 64; oversubscribed past the
# core count) for shm and tcp, started by xdevrun (the boot directory) and
# by Open MPI's mpirun (PMIx), each 3 times; prints every run's CSV line
# with the launcher in front. The README's Scale section has the medians.
set -uo pipefail
b=$1
shift
sizes=("${@:-2 8 32 64}")
[ $# -gt 0 ] || sizes=(2 8 32 64)
echo "launcher,ranks,transport,init_ms_max,first_msg_ms_max,rss_kib_mean,rss_growth_init_kib,rss_growth_all_kib"
for round in 1 2 3; do
    for n in "${sizes[@]}"; do
        for t in shm tcp; do
            line=$(XDEV_TRANSPORT=$t "$b/src/tools/xdevrun" -n "$n" --timeout 300 "$b/test/bench/xdev-scale" | tail -1)
            echo "xdevrun,$line"
            if command -v mpirun >/dev/null; then
                line=$(timeout 300 mpirun --allow-run-as-root --oversubscribe -x XDEV_TRANSPORT=$t \
                       -np "$n" "$b/test/bench/xdev-scale" | tail -1)
                echo "mpirun,$line"
            fi
        done
    done
done
