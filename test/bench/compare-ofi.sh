#!/usr/bin/env bash
# compare-ofi.sh BUILD_DIR [ROUNDS] [PROVIDER...]
#
# xdev over the ofi transport beside libfabric's own fi_pingpong (RDM
# endpoints, FI_MSG) on the same provider, ROUNDS times (default 5),
# interleaved and alternating which goes first. Providers default to
# "tcp;ofi_rxm" and "shm". Per provider it prints the medians and ratios of
#   latency 8 B   xdev-bench latency (half the round trip, us) against
#                 fi_pingpong's usec/xfer (also half the round trip)
#   bw 1 MiB      xdev-bench bw (a window of 64 sends, MB/s) against
#                 fi_pingpong's MB/sec at 1 MiB (a ping-pong: one message
#                 in flight at a time)
#   pingpong 1 MiB  xdev-bench latency at 1 MiB against fi_pingpong's
#                 usec/xfer at 1 MiB: the same pattern on both sides
# and checks the bars: latency at most 1.1x fi_pingpong's, bandwidth at
# least 0.9x. Exits 1 if a bar is missed.
#
# Environment: LAT_ITERS (default 2000), BIG_ITERS (default 200),
# PORT (first fi_pingpong control port, default 47700).
set -euo pipefail
export LC_ALL=C
prog=${0##*/}
die() { echo "$prog: $*" >&2; exit 1; }

[[ $# -ge 1 ]] || { sed -n '2,22s/^# \{0,1\}//p' "$0" >&2; exit 2; }
build=${1%/}
rounds=${2:-5}
shift $(($# >= 2 ? 2 : 1))
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, not '$rounds'"
providers=("$@")
[[ ${#providers[@]} -gt 0 ]] || providers=("tcp;ofi_rxm" "shm")
lat_iters=${LAT_ITERS:-2000}
big_iters=${BIG_ITERS:-200}
port=${PORT:-47700}

xdevrun=$build/src/tools/xdevrun
xdev_bench=$build/src/tools/xdev-bench
for exe in "$xdevrun" "$xdev_bench"; do
    [[ -x $exe ]] || die "$exe not found (is $build built?)"
done
command -v fi_pingpong >/dev/null || die "fi_pingpong not found (Debian package libfabric-bin)"

work=$(mktemp -d)
server=
trap '[[ -n $server ]] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
results=$work/results # provider|metric|bench|value

# xdev ROUND PROVIDER: 8-byte latency, then 1 MiB latency and bandwidth.
xdev() {
    local prov=$1 out=$work/xdev.csv
    XDEV_OFI_PROVIDER=$prov "$xdevrun" -n 2 --transport ofi "$xdev_bench" --csv \
        --tests latency --min 8 --max 8 --iters "$lat_iters" >"$out" ||
        die "xdev-bench over $prov failed"
    XDEV_OFI_PROVIDER=$prov "$xdevrun" -n 2 --transport ofi "$xdev_bench" --csv \
        --tests latency,bw --min 1M --max 1M --iters "$big_iters" >>"$out" ||
        die "xdev-bench over $prov failed"
    awk -F, -v p="$prov" '
        $1 == "latency" && $2 == 8 { print p "|lat8|xdev|" $4 }
        $1 == "latency" && $2 == 1048576 { print p "|pp1m|xdev|" $4 }
        $1 == "bw" && $2 == 1048576 { print p "|bw1m|xdev|" $4 }' "$out" >>"$results"
}

# pingpong PROVIDER SIZE ITERS: one fi_pingpong server/client pair;
# prints "usec/xfer MB/sec".
pingpong() {
    local prov=$1 size=$2 iters=$3
    port=$((port + 1))
    fi_pingpong -p "$prov" -e rdm -I "$iters" -S "$size" -B "$port" >"$work/srv" 2>&1 &
    server=$!
    sleep 0.3
    local line
    line=$(fi_pingpong -p "$prov" -e rdm -I "$iters" -S "$size" -P "$port" 127.0.0.1 2>&1 |
        awk '$1 ~ /^[0-9]+[kmg]?$/ && NF == 8 { print $7, $6 }' | tail -1)
    wait "$server" || true
    server=
    [[ -n $line ]] || die "fi_pingpong -p '$prov' -S $size printed no result"
    echo "$line"
}

reference() {
    local prov=$1 r
    r=$(pingpong "$prov" 8 "$lat_iters")
    echo "$prov|lat8|fi_pingpong|${r% *}" >>"$results"
    r=$(pingpong "$prov" 1048576 "$big_iters")
    echo "$prov|pp1m|fi_pingpong|${r% *}" >>"$results"
    echo "$prov|bw1m|fi_pingpong|${r#* }" >>"$results"
}

load=
[[ -r /proc/loadavg ]] && read -r load _ </proc/loadavg
for ((r = 1; r <= rounds; r++)); do
    for prov in "${providers[@]}"; do
        echo "round $r/$rounds: $prov" >&2
        if ((r % 2)); then xdev "$prov"; reference "$prov"; else reference "$prov"; xdev "$prov"; fi
    done
done

echo "# xdev (ofi transport) vs fi_pingpong, $rounds interleaved rounds, medians; load average at start: ${load:-?}"
printf "%-14s %-16s %12s %12s %7s %s\n" provider metric xdev fi_pingpong ratio bar
sort -t'|' -k1,1 -k2,2 -k3,3 -k4,4g "$results" | awk -F'|' '
    function median(n) { return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
    function flush() { if (n) med[key] = median(n); n = 0 }
    { k = $1 "|" $2 "|" $3; if (k != key) { flush(); key = k } v[++n] = $4 }
    END {
        flush()
        split("lat8 bw1m pp1m", metrics, " ")
        name["lat8"] = "latency 8B us"; name["bw1m"] = "bw 1MiB MB/s"; name["pp1m"] = "pingpong 1MiB us"
        for (k in med) { split(k, f, "|"); provs[f[1]] = 1 }
        bad = 0
        for (p in provs) for (i = 1; i <= 3; i++) {
            m = metrics[i]; x = med[p "|" m "|xdev"]; ref = med[p "|" m "|fi_pingpong"]
            ratio = ref > 0 ? x / ref : 0
            bar = "-"
            if (m == "lat8") { bar = ratio <= 1.1 ? "<=1.1 ok" : "<=1.1 MISSED"; bad += ratio > 1.1 }
            if (m == "bw1m") { bar = ratio >= 0.9 ? ">=0.9 ok" : ">=0.9 MISSED"; bad += ratio < 0.9 }
            printf "%-14s %-16s %12.2f %12.2f %7.2f %s\n", p, name[m], x, ref, ratio, bar
        }
        exit bad ? 1 : 0
    }'
