#!/usr/bin/env bash
# compare-coll.sh BUILD_DIR [ROUNDS]
#
# Collective latency of libxdev_coll beside Open MPI's and MPICH's
# collectives on this machine, for 2, 4 and 8 processes. Installs the MPIs
# if missing (install-mpi.sh), builds coll_bench.c with mpicc.openmpi and
# mpicc.mpich (BUILD_DIR/mpi-bench/coll-bench.{openmpi,mpich}); xdev's build
# of the same source is BUILD_DIR/test/bench/xdev-coll-bench. Then ROUNDS
# rounds (default 5); in each, every process count and every system runs
# once, in an order that rotates from round to round:
#   xdev   xdevrun -n N [--transport $XDEV_COLL_TRANSPORT] xdev-coll-bench,
#          XDEV_THREADS=single (the MPIs run MPI_THREAD_SINGLE)
#   ompi   mpirun.openmpi --allow-run-as-root --oversubscribe -n N
#   mpich  mpiexec.mpich -n N (Debian's MPICH: ch4 on UCX)
# and prints, per process count, operation, timing and size, each system's
# median latency over the rounds, the better MPI and xdev/best (lower is
# better). Each call is timed both ways (coll_bench.c says why):
# back-to-back (IMB's way) and per-call, alone with a barrier after it
# (OSU's way).
# 4 and 8 processes oversubscribe a 2-core machine: every system then
# depends on how it yields the CPU while it waits.
#
# Environment:
#   NPS           process counts (default "2 4 8")
#   OPS, SIZES    passed as --ops / --sizes (default: all eight of
#                 coll_bench.c, "8,1M")
#   BUDGET        seconds per operation, size and timing per run (default 0.3)
#   TIMING        back-to-back, per-call or both (the default)
#   XDEV_COLL_TRANSPORT  xdev transport (default: auto, i.e. shm here)
#   SYSTEMS       subset of "xdev ompi mpich"
#   BENCH_OUT     directory in which to keep every run's output
#   BENCH_TIMEOUT seconds after which one run is killed (default 300)
# Exits 1 if a run failed (after printing what it has).
set -euo pipefail
export LC_ALL=C

prog=${0##*/}
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "$prog: $*" >&2; exit 1; }

[[ $# -ge 1 && $# -le 2 && $1 != -h && $1 != --help ]] || {
    awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0" >&2
    exit 2
}
build=$(cd "${1%/}" 2>/dev/null && pwd) || die "$1: no such directory"
rounds=${2:-5}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer"
read -r -a nps <<<"${NPS:-2 4 8}"
read -r -a systems <<<"${SYSTEMS:-xdev ompi mpich}"
ops=${OPS:-allreduce,bcast,allgather,alltoall,reduce,gather,scatter,barrier}
sizes=${SIZES:-8,1M}
budget=${BUDGET:-0.3}
timing=${TIMING:-both}
timeout_s=${BENCH_TIMEOUT:-300}
xdevrun=$build/src/tools/xdevrun
xbench=$build/test/bench/xdev-coll-bench
for exe in "$xdevrun" "$xbench"; do
    [[ -x $exe ]] || die "$exe not found (is $build built with -Dcoll=true?)"
done

"$here/install-mpi.sh" || die "install-mpi.sh failed (it needs root or sudo to install)"
mpi_dir=$build/mpi-bench
mkdir -p "$mpi_dir"
for mpi in openmpi mpich; do
    exe=$mpi_dir/coll-bench.$mpi
    if [[ ! -x $exe || $here/coll_bench.c -nt $exe || $here/../../src/kit/size.h -nt $exe ]]; then
        echo "$prog: building $exe" >&2
        "mpicc.$mpi" -std=gnu11 -O3 -Wall -Wextra -DUSE_MPI -o "$exe" "$here/coll_bench.c" ||
            die "building $exe failed"
    fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out_dir=${BENCH_OUT:-$work}
mkdir -p "$out_dir"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
all=$work/all.txt # round,np,system,op,timing,size,value
: >"$all"
failures=0
args=(--ops "$ops" --sizes "$sizes" --budget "$budget" --timing "$timing")
transport=()
[[ -n ${XDEV_COLL_TRANSPORT:-} ]] && transport=(--transport "$XDEV_COLL_TRANSPORT")

run() { # SYSTEM NP ROUND
    local sys=$1 np=$2 r=$3 csv=$out_dir/$1.np$2.$3.csv
    local -a cmd to=(timeout -k 10 "$timeout_s")
    case $sys in
    xdev) cmd=(env XDEV_THREADS=single "${to[@]}" "$xdevrun" -n "$np" "${transport[@]}" "$xbench") ;;
    ompi) cmd=("${to[@]}" mpirun.openmpi --allow-run-as-root --oversubscribe -n "$np"
               "$mpi_dir/coll-bench.openmpi") ;;
    mpich) cmd=("${to[@]}" mpiexec.mpich -n "$np" "$mpi_dir/coll-bench.mpich") ;;
    *) die "unknown system $sys" ;;
    esac
    echo "round $r/$rounds: $sys -n $np" >&2
    if ! "${cmd[@]}" "${args[@]}" >"$csv" 2>"$csv.err"; then
        tail -n 5 "$csv.err" >&2
        echo "$prog: $sys -n $np failed in round $r" >&2
        failures=$((failures + 1))
        return 0
    fi
    awk -F, -v r="$r" -v np="$np" -v s="$sys" \
        'NF == 6 && $3 ~ /^[0-9]+$/ && $5 ~ /^[0-9.]+$/ { print r "," np "," s "," $1 "," $2 "," $3 "," $5 }' \
        "$csv" >>"$all"
}

n=${#systems[@]}
for ((r = 1; r <= rounds; r++)); do
    for np in "${nps[@]}"; do
        for ((k = 0; k < n; k++)); do run "${systems[(k + r - 1) % n]}" "$np" "$r"; done
    done
done

awk -F, -v systems="${systems[*]}" -v rounds="$rounds" '
    function median(list,   a, n, i, j, x) {
        n = split(list, a, " ")
        for (i = 2; i <= n; i++) {
            x = a[i] + 0
            for (j = i - 1; j >= 1 && a[j] + 0 > x; j--) a[j + 1] = a[j]
            a[j + 1] = x
        }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    {
        k = $2 SUBSEP $4 SUBSEP $5 SUBSEP $6
        if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
        vals[k, $3] = vals[k, $3] " " $7
    }
    END {
        ns = split(systems, sys, " ")
        printf "# collective latency, us (median of %d rounds, mean per call over ranks)\n", rounds
        printf "# best = the better of ompi and mpich; ratio = xdev / best (lower is better)\n"
        printf "%-4s %-10s %-12s %-8s", "np", "op", "timing", "size"
        for (i = 1; i <= ns; i++) printf " %11s", sys[i]
        printf " %11s %6s\n", "best", "ratio"
        for (q = 1; q <= nk; q++) {
            split(keys[q], f, SUBSEP)
            printf "%-4s %-10s %-12s %-8s", f[1], f[2], f[3], f[4]
            best = ""; x = ""
            for (i = 1; i <= ns; i++) {
                s = sys[i]
                m = (keys[q], s) in vals ? median(vals[keys[q], s]) : ""
                printf " %11s", m == "" ? "-" : sprintf("%.2f", m)
                if (s == "xdev") x = m
                else if (m != "" && (best == "" || m + 0 < best + 0)) best = m
            }
            printf " %11s %6s\n", best == "" ? "-" : sprintf("%.2f", best),
                   (x != "" && best != "" && best > 0) ? sprintf("%.2f", x / best) : "-"
        }
    }' "$all"
((failures == 0)) || { echo "$prog: $failures run(s) failed" >&2; exit 1; }
