#!/usr/bin/env bash
# compare-shm.sh BUILD_DIR [ROUNDS]
#
# Sets xdev's shared-memory transport beside Open MPI, MPICH and UCX on this
# machine. Installs them if missing (install-mpi.sh, needs root or sudo),
# builds mpi_bench.c with each MPI, then runs ROUNDS rounds (default 5), in
# each every system once, in an order that rotates from round to round:
#   xdev         xdevrun -n 2 --transport $XDEV_SHM_TRANSPORT xdev-bench,
#                with XDEV_THREADS=single (the MPIs run MPI_THREAD_SINGLE)
#   ompi         Open MPI, --mca pml ob1 --mca btl self,vader (CMA single copy)
#   ompi-nocopy  the same with --mca btl_vader_single_copy_mechanism none
#   mpich        MPICH (ch4:ucx), UCX's default transports
#   mpich-posix  MPICH with UCX_TLS=posix,self
#   ucx-posix    ucx_perftest tag_lat / tag_bw, UCX_TLS=posix,self
#   ucx-sm       ucx_perftest tag_lat / tag_bw, UCX_TLS=sm,self (adds CMA)
# and prints per test and size each system's median over the rounds, the
# best MPI (lowest latency, highest bandwidth and rate) and xdev/best.
#
# By default each system runs the tests latency,bw,rate at 8 bytes and
# latency,bw at 4 MiB. A round whose best MPI 8-byte latency is more than
# twice the lowest of all rounds ran while the machine was slow, and is left
# out of the medians (the report says how many). A set that ran in the slow
# mode throughout has no such round; SLOW_REF_US rejects those too.
#
# Environment:
#   XDEV_SHM_TRANSPORT  xdev transport to measure (default shm; tcp to test)
#   BENCH_ARGS    if set, replaces the default sizes: each system runs once
#                 per round with --tests latency,bw,rate --csv $BENCH_ARGS,
#                 e.g. BENCH_ARGS="--min 8 --max 4M" or "--max 64K --iters 500"
#   BENCH_OUT     if set, a directory in which to keep every run's output
#   MPI_BENCH_DIR where to build mpi-bench.{openmpi,mpich}
#                 (default BUILD_DIR/mpi-bench)
#   BENCH_TIMEOUT seconds after which one run is killed (default 600)
#   SYSTEMS       space-separated subset of the systems above, e.g. "xdev ompi"
#   SLOW_REF_US   if set, a round whose reference is over this many us is
#                 rejected as well (0.25 on the development VMs, whose fast
#                 mode's reference is 0.10-0.13 us and slow mode's 0.36-0.5)
#
# A system whose run fails is reported and left out of that round; the
# script then exits 1 after printing what it has. Needs bash, awk, coreutils.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=compare-common.sh
. "$here/compare-common.sh"
compare_args "$@"

xdev_transport=${XDEV_SHM_TRANSPORT:-shm}
timeout_s=${BENCH_TIMEOUT:-600}
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || die "BENCH_TIMEOUT must be a positive integer"
xdevrun=$build/src/tools/xdevrun
xdev_bench=$build/src/tools/xdev-bench
need_built "$xdevrun" "$xdev_bench"

all_systems=(xdev ompi ompi-nocopy mpich mpich-posix ucx-posix ucx-sm)
read -r -a systems <<<"${SYSTEMS:-${all_systems[*]}}"
for s in "${systems[@]}"; do
    [[ " ${all_systems[*]} " == *" $s "* ]] || die "unknown system '$s' in SYSTEMS"
done

# ---- MPI: install and build ----

# install-mpi.sh only checks (dpkg-query) when everything is installed already.
"$here/install-mpi.sh" || die "install-mpi.sh failed (it needs root or sudo to install)"

# mpi_bench.c is built here rather than by meson because the MPI packages are
# optional for xdev; -O3 as in meson's release build. The method it shares
# with xdev-bench is in src/tools, so a change there rebuilds it too.
mpi_dir=${MPI_BENCH_DIR:-$build/mpi-bench}
mkdir -p "$mpi_dir"
tools=$here/../../src/tools
mpi_sources=("$here/mpi_bench.c" "$tools/bench_method.c")
for mpi in openmpi mpich; do
    exe=$mpi_dir/mpi-bench.$mpi
    if [[ ! -x $exe || -n $(find "${mpi_sources[@]}" "$tools/bench_method.h" \
            "$tools/bench_loops.h" "$tools/../kit/size.h" -newer "$exe") ]]; then
        echo "$prog: building $exe" >&2
        "mpicc.$mpi" -std=gnu11 -O3 -Wall -Wextra -o "$exe" "${mpi_sources[@]}" ||
            die "building $exe with mpicc.$mpi failed"
    fi
done
ompi_bench=$mpi_dir/mpi-bench.openmpi
mpich_bench=$mpi_dir/mpi-bench.mpich

# ---- what each round runs ----

# parts: the argument sets each system runs once per round.
if [[ -n ${BENCH_ARGS:-} ]]; then
    read -r -a extra <<<"$BENCH_ARGS"
    parts=("--tests latency,bw,rate ${extra[*]}")
else
    parts=("--tests latency,bw,rate --min 8 --max 8" "--tests latency,bw --min 4M --max 4M")
fi
# Check the arguments once, before anything runs.
for p in "${parts[@]}"; do
    read -r -a a <<<"$p"
    "$ompi_bench" --plan "${a[@]}" >/dev/null || die "bad BENCH_ARGS: '$p'"
done

compare_workdir
server_pid= # ucx_perftest server of the current ucx_perf (in a subshell)
# Fail early, not once per round, if xdev cannot run this transport yet.
if [[ " ${systems[*]} " == *" xdev "* ]] &&
    ! XDEV_THREADS=single timeout -k 5 120 "$xdevrun" -n 2 --transport "$xdev_transport" \
        "$xdev_bench" --tests latency --min 8 --max 8 --iters 10 --warmup 0 --csv \
        >/dev/null 2>"$work/preflight"; then
    tail -n 20 "$work/preflight" >&2
    die "xdev does not run with --transport $xdev_transport; XDEV_SHM_TRANSPORT=tcp tries" \
        "the script with TCP, SYSTEMS=\"ompi mpich ...\" leaves xdev out"
fi

all=$work/all.txt # round,system,test,size,value,unit
: >"$all"
failures=0

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# ucx_perf ARGS...: ucx_perftest (server and client on 127.0.0.1, UCX_TLS as
# exported) over the tests, sizes and counts mpi-bench --plan ARGS lists,
# printed as xdev-bench CSV. tag_lat is a ping-pong whose latency
# ucx_perftest already halves; bw and rate stream ITERS*WINDOW tag sends
# with at most WINDOW outstanding (ucx_perftest has no window-and-ack
# pattern); bibw has no counterpart and is skipped.
ucx_perf() {
    local -a plan t
    local line test size iters warmup window unit port out=$work/ucx.out ok _
    mapfile -t plan < <("$ompi_bench" --plan "$@" | tail -n +2)
    echo "test,size,iters,value,unit"
    for line in "${plan[@]}"; do
        IFS=, read -r test size iters warmup window unit <<<"$line"
        case $test in
        latency) t=(-t tag_lat -n "$iters" -w "$warmup") ;;
        bw | rate) t=(-t tag_bw -n $((iters * window)) -w $((warmup * window)) -O "$window") ;;
        *) continue ;;
        esac
        ok=0
        for _ in 1 2 3; do      # another port if this one is taken
            port=$((20000 + RANDOM % 30000))
            timeout -k 5 "$timeout_s" ucx_perftest -p "$port" >"$work/ucx-server.out" 2>&1 &
            server_pid=$!
            for _ in $(seq 50); do  # the client retries until the server listens
                if timeout -k 5 "$timeout_s" ucx_perftest 127.0.0.1 -p "$port" "${t[@]}" \
                    -s "$size" -f -v >"$out" 2>&1; then
                    ok=1
                    break
                fi
                if ! grep -q "Connection refused" "$out" ||
                    ! kill -0 "$server_pid" 2>/dev/null; then
                    break
                fi
                sleep 0.1
            done
            ((ok)) || kill "$server_pid" 2>/dev/null || true
            wait "$server_pid" 2>/dev/null || true
            server_pid=
            ((ok)) && break
        done
        if ((!ok)); then
            cat "$out" "$work/ucx-server.out" >&2
            return 1
        fi
        # iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,
        # avg_mr,overall_mr: "overall" is over all timed iterations, as
        # xdev-bench measures; bandwidth is in MiB/s.
        awk -F, -v test="$test" -v size="$size" -v iters="$iters" -v unit="$unit" '
            { gsub(/ /, "") }   # numbers are padded to a width
            $1 ~ /^[0-9]+$/ && NF >= 8 { last = $0; lat = $4; bw = $6 * 1.048576; mr = $8 }
            END {
                if (last == "") exit 1
                v = test == "latency" ? lat : test == "bw" ? bw : mr
                printf "%s,%s,%s,%.3f,%s\n", test, size, iters, v, unit
            }' "$out" || { cat "$out" >&2; return 1; }
    done
}

# run_system SYSTEM ROUND PART: one run; its rows go to $all.
run_system() {
    local sys=$1 round=$2 part=$3 log
    local -a args cmd
    read -r -a args <<<"${parts[part]}"
    local csv=$out_dir/$sys.$round.$part.csv
    log=$out_dir/$sys.$round.$part.err
    local to=(timeout -k 10 "$timeout_s")
    local ompi=(mpirun.openmpi --allow-run-as-root --oversubscribe -n 2 --mca pml ob1
                --mca btl "self,vader")
    case $sys in
    xdev) cmd=(env XDEV_THREADS=single "${to[@]}" "$xdevrun" -n 2 --transport "$xdev_transport"
               "$xdev_bench" --csv "${args[@]}") ;;
    ompi) cmd=("${to[@]}" "${ompi[@]}" "$ompi_bench" --csv "${args[@]}") ;;
    ompi-nocopy) cmd=("${to[@]}" "${ompi[@]}" --mca btl_vader_single_copy_mechanism none
                      "$ompi_bench" --csv "${args[@]}") ;;
    mpich) cmd=("${to[@]}" mpirun.mpich -n 2 "$mpich_bench" --csv "${args[@]}") ;;
    mpich-posix) cmd=(env "UCX_TLS=posix,self" "${to[@]}" mpirun.mpich -n 2 "$mpich_bench" --csv
                      "${args[@]}") ;;
    ucx-posix) cmd=(ucx_perf "posix,self" "${args[@]}") ;;
    ucx-sm) cmd=(ucx_perf "sm,self" "${args[@]}") ;;
    esac
    echo "round $round/$rounds: $sys ${parts[part]}" >&2
    local rc=0
    if [[ ${cmd[0]} == ucx_perf ]]; then    # a shell function, in a subshell
        (
            export UCX_TLS=${cmd[1]}
            trap '[[ -z $server_pid ]] || kill "$server_pid" 2>/dev/null' EXIT
            ucx_perf "${args[@]}"
        ) >"$csv" 2>"$log" || rc=$?
    else
        "${cmd[@]}" >"$csv" 2>"$log" || rc=$?
    fi
    if ((rc)); then
        tail -n 20 "$log" >&2
        echo "$prog: round $round: $sys failed: ${cmd[*]}" >&2
        failures=$((failures + 1))
        return 0
    fi
    # Keep only well-formed result rows: a launcher may print other lines.
    awk -F, -v r="$round" -v s="$sys" '
        NF == 5 && $1 ~ /^[a-z]+$/ && $2 ~ /^[0-9]+$/ && $4 ~ /^[0-9.]+$/ {
            print r "," s "," $1 "," $2 "," $4 "," $5
            rows++
        }
        END { exit rows == 0 }' "$csv" >>"$all" || {
        head -n 20 "$csv" "$log" >&2
        echo "$prog: round $round: $sys printed no results" >&2
        failures=$((failures + 1))
    }
}

load=
[[ -r /proc/loadavg ]] && read -r load _ </proc/loadavg
loads=()
n=${#systems[@]}
for ((r = 1; r <= rounds; r++)); do
    [[ -r /proc/loadavg ]] && { read -r l _ </proc/loadavg; loads+=("$l"); }
    for ((p = 0; p < ${#parts[@]}; p++)); do
        for ((k = 0; k < n; k++)); do
            run_system "${systems[(k + r - 1) % n]}" "$r" "$p"
        done
    done
done

# ---- report ----

slow_us=${SLOW_REF_US:-}
[[ -z $slow_us || $slow_us =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "SLOW_REF_US must be a number of us"
awk -F, -v rounds="$rounds" -v loadavg="$load" -v loads="${loads[*]}" -v xt="$xdev_transport" \
    -v systems="${systems[*]}" -v slow_us="$slow_us" '
    function is_mpi(s) { return s ~ /^(ompi|mpich)/ }
    function median(list,   a, n, i, j, x) {
        n = split(list, a, " ")
        for (i = 2; i <= n; i++) {          # insertion sort, n is small
            x = a[i] + 0
            for (j = i - 1; j >= 1 && a[j] + 0 > x; j--) a[j + 1] = a[j]
            a[j + 1] = x
        }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function fmt(v, unit) {
        if (v == "") return "-"
        return sprintf(unit == "us" ? "%.3f" : unit == "msg/s" ? "%.0f" : "%.1f", v)
    }
    {
        r = $1; s = $2; t = $3; z = $4; v = $5
        val[r, s, t, z] = v
        unit[t] = $6
        if (!((t, z) in seen)) { seen[t, z] = 1; keys[++nk] = t SUBSEP z }
        # the reference: the best MPI 8-byte latency of the round
        if (t == "latency" && z == 8 && is_mpi(s) && (!(r in ref) || v < ref[r])) ref[r] = v
    }
    END {
        nsys = split(systems, sys, " ")
        lowest = ""
        for (r = 1; r <= rounds; r++)
            if ((r in ref) && (lowest == "" || ref[r] < lowest)) lowest = ref[r]
        nrej = 0; kept = 0; reflist = ""
        for (r = 1; r <= rounds; r++) {
            rejected[r] = lowest != "" && (r in ref) &&
                          (ref[r] > 2 * lowest || (slow_us != "" && ref[r] > slow_us + 0))
            nrej += rejected[r]; kept += !rejected[r]
            reflist = reflist sprintf(" %s%s", (r in ref) ? sprintf("%.3f", ref[r]) : "-",
                                      rejected[r] ? "(rejected)" : "")
        }
        if (index(" " systems " ", " xdev "))
            printf "# xdev (transport %s) vs Open MPI, MPICH and UCX over shared memory\n", xt
        else
            printf "# Open MPI, MPICH and UCX over shared memory\n"
        printf "# medians of %d of %d rounds; %d rejected as slow-machine rounds\n",
               kept, rounds, nrej
        if (lowest == "")
            printf "# (no MPI 8-byte latency measured: no round could be judged)\n"
        else
            printf "# reference per round (best MPI 8-byte latency, us):%s\n", reflist
        printf "# a round is rejected when its reference is over 2x the lowest%s\n",
               slow_us != "" ? " or over " slow_us " us (SLOW_REF_US)" : ""
        if (lowest != "" && !kept)
            printf "# every round was rejected: the machine was slow throughout, nothing to report\n"
        if (loadavg != "") printf "# load average (1 min) before each round: %s\n", loads
        printf "# best = best MPI configuration (ompi*, mpich*; ucx_perftest is not an MPI)\n"
        printf "# ratio = xdev/best: latency lower is better, bw and rate higher is better\n"
        # tests in xdev-bench order, sizes ascending
        ntests = split("latency bw bibw rate", order, " ")
        for (o = 1; o <= ntests; o++) {
            t = order[o]
            nz = 0
            for (k = 1; k <= nk; k++) {
                split(keys[k], kz, SUBSEP)
                if (kz[1] == t) sizes[++nz] = kz[2] + 0
            }
            if (!nz) continue
            for (i = 2; i <= nz; i++) {
                x = sizes[i]
                for (j = i - 1; j >= 1 && sizes[j] > x; j--) sizes[j + 1] = sizes[j]
                sizes[j + 1] = x
            }
            printf "\n# %s (%s), %s is better\n", t, unit[t], unit[t] == "us" ? "lower" : "higher"
            printf "%-8s", "size"
            for (i = 1; i <= nsys; i++) printf " %12s", sys[i]
            printf " %12s %-12s %6s\n", "best", "best-of", "ratio"
            for (i = 1; i <= nz; i++) {
                z = sizes[i]
                printf "%-8s", z
                best = ""; bestname = "-"
                for (j = 1; j <= nsys; j++) {
                    s = sys[j]; list = ""
                    for (r = 1; r <= rounds; r++)
                        if (!rejected[r] && ((r, s, t, z) in val)) list = list " " val[r, s, t, z]
                    m = list == "" ? "" : median(list)
                    med[s] = m
                    printf " %12s", fmt(m, unit[t])
                    if (m != "" && is_mpi(s) &&
                        (best == "" || (unit[t] == "us" ? m < best : m > best))) {
                        best = m; bestname = s
                    }
                }
                x = ("xdev" in med) ? med["xdev"] : ""
                ratio = (x != "" && best != "" && best > 0) ? sprintf("%.2f", x / best) : "-"
                printf " %12s %-12s %6s\n", fmt(best, unit[t]), bestname, ratio
                delete med
            }
        }
    }' "$all"

if ((failures)); then
    echo "$prog: $failures run(s) failed; see the messages above" >&2
    exit 1
fi
