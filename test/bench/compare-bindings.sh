#!/usr/bin/env bash
# compare-bindings.sh BUILD_DIR [ROUNDS]
#
# What the Java and Python bindings cost over C, beside what mpi4py costs
# over Open MPI: 8-byte latency and 4 MiB bandwidth over shared memory
# between two ranks, ROUNDS rounds (default 5), every system once per round
# in an order that rotates from round to round:
#   c             xdev-bench (C), xdevrun -n 2 --transport shm
#   java-direct   org.xdev.bench.Bench --buffer direct (direct ByteBuffers)
#   java-array    org.xdev.bench.Bench --buffer array (byte[])
#   py-bytearray  bindings/python/bench/bench.py --buf bytearray
#   py-numpy      ... --buf numpy
#   py-objects    ... --buf objects (send_obj/recv_obj: latency only)
#   ompi-c        mpi-bench (test/bench/mpi_bench.c) over Open MPI,
#                 --mca pml ob1 --mca btl self,vader
#   mpi4py-numpy  bench.py --api mpi4py --buf numpy (Send/Recv) under the
#                 same Open MPI
#   mpi4py-objects  bench.py --api mpi4py --buf objects (pickled send/recv)
# Every program measures as xdev-bench does (the same loops, counts, window
# and ack; bench.py repeats them in Python). Prints each system's medians,
# the overhead of each binding over C and of mpi4py over Open MPI's C, and
# checks the bars of the bindings' issue:
#   java-direct at most 0.2 us over C at 8 bytes, java-array at most 0.4 us,
#   both at least 0.9x C's 4 MiB bandwidth; py-bytearray and py-numpy at
#   most half of mpi4py-numpy's overhead over ompi-c; py-objects no slower
#   than mpi4py-objects.
# Needs BUILD_DIR built with -Djava=enabled -Dpython=enabled (release build
# for figures worth quoting), Debian's python3-mpi4py and Open MPI's
# mpicc.openmpi (install-mpi.sh installs them). SYSTEMS picks a subset;
# BENCH_OUT keeps every run's output. Exits 1 if a run failed or a bar
# was missed.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=compare-common.sh
. "$here/compare-common.sh"
compare_args "$@"
src=$(cd "$here/../.." && pwd)

all_systems=(c java-direct java-array py-bytearray py-numpy py-objects ompi-c mpi4py-numpy
             mpi4py-objects)
read -r -a systems <<<"${SYSTEMS:-${all_systems[*]}}"
for s in "${systems[@]}"; do
    [[ " ${all_systems[*]} " == *" $s "* ]] || die "unknown system '$s' in SYSTEMS"
done
has() { [[ " ${systems[*]} " == *" $1"* ]]; }

xdevrun=$build/src/tools/xdevrun
need_built "$xdevrun" "$build/src/tools/xdev-bench"
jdir=$build/bindings/java
if has java; then
    [[ -f $jdir/xdev.jar && -f $jdir/xdev-bench.jar ]] ||
        die "$jdir has no xdev.jar and xdev-bench.jar (configure with -Djava=enabled)"
fi
pypath=$build/bindings/python
if has py; then
    [[ -d $pypath/xdev ]] || die "$pypath has no xdev module (configure with -Dpython=enabled)"
fi
python=/usr/bin/python3 # Debian's: the one with python3-mpi4py and numpy
bench_py=$src/bindings/python/bench/bench.py

if has ompi || has mpi4py; then
    "$here/install-mpi.sh" || die "install-mpi.sh failed (it needs root or sudo to install)"
    "$python" -c 'import mpi4py' 2>/dev/null || die "no mpi4py for $python (python3-mpi4py)"
fi
compare_workdir
ompi_bench=$work/mpi-bench.openmpi
if has ompi-c; then
    mpicc.openmpi -std=gnu11 -O3 -o "$ompi_bench" "$here/mpi_bench.c" \
        "$src/src/tools/bench_method.c" || die "building mpi_bench.c with mpicc.openmpi failed"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# The two measurements, as each program spells them.
c_parts=("--tests latency --min 8 --max 8" "--tests bw --min 4M --max 4M")
py_parts=("--tests latency --sizes 8" "--tests bw --sizes 4194304")

all=$work/all.txt # round,system,test,size,value
: >"$all"
failures=0

run_system() { # run_system SYSTEM ROUND PART
    local sys=$1 round=$2 part=$3
    local csv=$out_dir/$sys.$round.$part.csv log=$out_dir/$sys.$round.$part.err
    local -a c_args py_args cmd
    read -r -a c_args <<<"${c_parts[part]}"
    read -r -a py_args <<<"${py_parts[part]}"
    local xd=(timeout -k 5 300 "$xdevrun" -n 2 --transport shm)
    local ompi=(timeout -k 5 300 mpirun.openmpi --allow-run-as-root --oversubscribe -n 2
                --mca pml ob1 --mca btl self,vader)
    local java=(java -Djava.library.path="$jdir" -cp "$jdir/xdev.jar:$jdir/xdev-bench.jar"
                org.xdev.bench.Bench --csv "${c_args[@]}")
    case $sys in
    c) cmd=("${xd[@]}" "$build/src/tools/xdev-bench" --csv "${c_args[@]}") ;;
    java-direct) cmd=("${xd[@]}" "${java[@]}" --buffer direct) ;;
    java-array) cmd=("${xd[@]}" "${java[@]}" --buffer array) ;;
    py-*) cmd=(env PYTHONPATH="$pypath" "${xd[@]}" "$python" "$bench_py" --buf "${sys#py-}"
               "${py_args[@]}") ;;
    ompi-c) cmd=("${ompi[@]}" "$ompi_bench" --csv "${c_args[@]}") ;;
    mpi4py-*) cmd=("${ompi[@]}" "$python" "$bench_py" --api mpi4py --buf "${sys#mpi4py-}"
                   "${py_args[@]}") ;;
    esac
    # objects are measured by their latency only
    [[ $sys == *objects && $part -ne 0 ]] && return 0
    echo "round $round/$rounds: $sys ${c_parts[part]}" >&2
    if ! "${cmd[@]}" >"$csv" 2>"$log"; then
        tail -n 20 "$log" >&2
        echo "$prog: round $round: $sys failed: ${cmd[*]}" >&2
        failures=$((failures + 1))
        return 0
    fi
    awk -F, -v r="$round" -v s="$sys" '
        NF == 5 && $1 ~ /^[a-z]+$/ && $2 ~ /^[0-9]+$/ && $4 ~ /^[0-9.]+$/ {
            print r "," s "," $1 "," $2 "," $4; rows++ }
        END { exit rows == 0 }' "$csv" >>"$all" || {
        echo "$prog: round $round: $sys printed no results" >&2
        failures=$((failures + 1))
    }
}

n=${#systems[@]}
for ((r = 1; r <= rounds; r++)); do
    for ((p = 0; p < ${#c_parts[@]}; p++)); do
        for ((k = 0; k < n; k++)); do
            run_system "${systems[(k + r - 1) % n]}" "$r" "$p"
        done
    done
done

awk -F, -v rounds="$rounds" -v systems="${systems[*]}" '
    function median(list,   a, n, i, j, x) {
        n = split(list, a, " ")
        for (i = 2; i <= n; i++) {
            x = a[i] + 0
            for (j = i - 1; j >= 1 && a[j] + 0 > x; j--) a[j + 1] = a[j]
            a[j + 1] = x
        }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    { v[$2, $3] = v[$2, $3] " " $5 }
    END {
        ns = split(systems, sys, " ")
        for (i = 1; i <= ns; i++) {
            s = sys[i]
            lat[s] = ((s, "latency") in v) ? median(v[s, "latency"]) : ""
            bw[s] = ((s, "bw") in v) ? median(v[s, "bw"]) : ""
        }
        printf "# shm, 2 ranks, medians of %d rounds\n", rounds
        printf "%-16s %12s %14s %12s %10s\n", "system", "8 B lat us", "4 MiB bw MB/s",
               "lat over", "bw x"
        for (i = 1; i <= ns; i++) {
            s = sys[i]
            ref = ""
            if (s ~ /^(java|py)/) ref = "c"
            else if (s ~ /^mpi4py/) ref = "ompi-c"
            over = ratio = "-"
            if (ref != "" && lat[s] != "" && lat[ref] != "") over = sprintf("%+.3f", lat[s] - lat[ref])
            if (ref != "" && bw[s] != "" && bw[ref] != "") ratio = sprintf("%.3f", bw[s] / bw[ref])
            printf "%-16s %12s %14s %12s %10s\n", s, lat[s] == "" ? "-" : sprintf("%.3f", lat[s]),
                   bw[s] == "" ? "-" : sprintf("%.0f", bw[s]), over, ratio
        }
        # the bars, where both sides were measured
        missed = 0
        mo = ""
        if (lat["mpi4py-numpy"] != "" && lat["ompi-c"] != "") mo = lat["mpi4py-numpy"] - lat["ompi-c"]
        print "# bars"
        bar("java-direct latency over C <= 0.2 us", lat["java-direct"], lat["c"], 0.2)
        bar("java-array latency over C <= 0.4 us", lat["java-array"], lat["c"], 0.4)
        ratio_bar("java-direct 4 MiB bw >= 0.9x C", bw["java-direct"], bw["c"])
        ratio_bar("java-array 4 MiB bw >= 0.9x C", bw["java-array"], bw["c"])
        if (mo != "") {
            bar("py-bytearray over C <= mpi4py over ompi-c / 2", lat["py-bytearray"], lat["c"],
                mo / 2)
            bar("py-numpy over C <= mpi4py over ompi-c / 2", lat["py-numpy"], lat["c"], mo / 2)
        }
        bar("py-objects latency <= mpi4py-objects", lat["py-objects"], lat["mpi4py-objects"], 0)
        exit missed != 0
    }
    function bar(what, x, ref, limit) {
        if (x == "" || ref == "") return
        ok = x - ref <= limit
        missed += !ok
        printf "%-48s %s (%+.3f us, limit %+.3f)\n", what, ok ? "met" : "MISSED", x - ref, limit
    }
    function ratio_bar(what, x, ref) {
        if (x == "" || ref == "") return
        ok = x >= 0.9 * ref
        missed += !ok
        printf "%-48s %s (%.3fx)\n", what, ok ? "met" : "MISSED", x / ref
    }' "$all" || failures=$((failures + 1))
((failures == 0))
