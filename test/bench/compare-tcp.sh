#!/usr/bin/env bash
# compare-tcp.sh BUILD_DIR [ROUNDS]
#
# Runs xdev-bench over TCP (2 ranks under xdevrun) and tcp-raw-bench, the
# raw-socket baseline, ROUNDS times (default 5), interleaved and alternating
# which goes first, then prints per test and size the median of each and
# the ratio xdev/raw.
#
# Environment:
#   BENCH_ARGS    extra arguments for both benchmarks, split on blanks and
#                 put after the defaults (--tests latency,bw --csv), so they
#                 can override the tests: BENCH_ARGS="--max 64K --iters 2000"
#   BENCH_OUT     if set, a directory in which to keep every round's CSV
#   XDEV_TIMEOUT  read by xdevrun: seconds after which it kills a hung job
#
# Needs only bash, awk and sort.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=compare-common.sh
. "$here/compare-common.sh"
compare_args "$@"

xdevrun=$build/src/tools/xdevrun
xdev_bench=$build/src/tools/xdev-bench
raw_bench=$build/test/bench/tcp-raw-bench
need_built "$xdevrun" "$xdev_bench" "$raw_bench"

read -r -a extra <<<"${BENCH_ARGS:-}"

# Other work on the machine skews both benchmarks, busy-polling ones most.
load=
[[ -r /proc/loadavg ]] && read -r load _ </proc/loadavg

compare_workdir
all=$work/all.txt
: >"$all"

# run_bench NAME ROUND: run one benchmark, keep its CSV, and append its rows
# to $all as "NAME,TESTINDEX,test,size,iters,value,unit", where TESTINDEX
# keeps the order in which the benchmark printed its tests.
run_bench() {
    local name=$1 round=$2 csv=$out_dir/$1.$2.csv
    local -a cmd
    if [[ $name == xdev ]]; then
        cmd=("$xdevrun" -n 2 --transport tcp "$xdev_bench" --tests "latency,bw" --csv "${extra[@]}")
    else
        cmd=("$raw_bench" --tests "latency,bw" --csv "${extra[@]}")
    fi
    echo "round $round/$rounds: $name" >&2
    if ! "${cmd[@]}" >"$csv" 2>"$work/stderr"; then
        cat "$work/stderr" >&2
        die "round $round: $name failed: ${cmd[*]}"
    fi
    # Keep only well-formed result rows: a launcher may print other lines.
    awk -F, -v name="$name" '
        NF == 5 && $1 ~ /^[a-z]+$/ && $2 ~ /^[0-9]+$/ && $4 ~ /^[0-9.]+$/ {
            if (!($1 in index_of)) index_of[$1] = ++ntests
            print name "," index_of[$1] "," $0
            rows++
        }
        END { exit rows == 0 }' "$csv" >>"$all" ||
        die "round $round: $name printed no results (see $csv)"
}

for ((r = 1; r <= rounds; r++)); do
    if ((r % 2)); then
        run_bench xdev "$r"
        run_bench raw "$r"
    else
        run_bench raw "$r"
        run_bench xdev "$r"
    fi
done

# Sorted by test, size, benchmark ("raw" < "xdev") and value, each group of
# rows is one benchmark's values for one test and size in ascending order.
sort -t, -k2,2n -k4,4n -k1,1 -k6,6g "$all" | awk -F, -v rounds="$rounds" -v loadavg="$load" '
    function median(n) {
        return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    function flush_group() {
        if (n) med[gname] = median(n)
        n = 0
    }
    function flush_row(   x, rw, ratio) {
        if (row_test == "") return
        x = ("xdev" in med) ? med["xdev"] : ""
        rw = ("raw" in med) ? med["raw"] : ""
        ratio = (x != "" && rw != "" && rw > 0) ? sprintf("%.2f", x / rw) : "-"
        printf "%-10s %14s %14s %8s\n", row_size, fmt(x), fmt(rw), ratio
        delete med
    }
    function fmt(val) {
        return val == "" ? "-" : sprintf(row_unit == "us" ? "%.2f" : "%.1f", val)
    }
    BEGIN {
        printf "# xdev over TCP vs raw TCP loopback sockets: medians of %d rounds\n", rounds
        printf "# ratio = xdev/raw (1.00 = raw TCP); latency: lower is better,\n"
        printf "# bandwidth and message rate: higher is better\n"
        if (loadavg != "") printf "# load average (1 min) before the first round: %s\n", loadavg
    }
    {
        name = $1; test = $3; size = $4; value = $6; unit = $7
        if (test != row_test || size != row_size || name != gname) flush_group()
        if (test != row_test || size != row_size) {
            flush_row()
            if (test != row_test) {
                better = unit == "us" ? "lower" : "higher"
                printf "\n# %s (%s): ratio xdev/raw, %s is better\n", test, unit, better
                printf "%-10s %14s %14s %8s\n", "size", "xdev", "raw", "ratio"
            }
            row_test = test; row_size = size; row_unit = unit
        }
        gname = name
        v[++n] = value
    }
    END { flush_group(); flush_row() }'
