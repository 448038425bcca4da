#!/bin/bash
# Exploratory (not a meson test): does UCX 1.13's ucx_perftest work over
# rc_verbs on rxe0 inside the VM?  Run with:
#   test/ibv/vm-run.sh test/ibv/vm-ucx-probe.sh RESULTS_DIR
# One "ok NAME" / "FAIL NAME" line per variant expected to work in
# RESULTS_DIR/results, their figures in RESULTS_DIR/bench.txt; known failures
# (--xfail) are only reported on the console ("xfail"/"xpass").  Full output
# in RESULTS_DIR/logs/.  Findings (Debian 12, kernel 6.1, UCX 1.13.1):
#  - UCT rc_verbs on rxe0:1 works with default settings (GID auto-selection
#    picks a working RoCE v2 GID); UCX_IB_GID_INDEX=1 works too.
#  - UCP (tag_lat etc.) cannot use rc_verbs alone: "no auxiliary transport"
#    (wireup of a connect-to-ep transport needs ud_verbs; tcp is not taken).
#  - ud_verbs hangs on rxe0 (UCT am_lat never completes, UCP aborts with
#    "UD endpoint ... unhandled timeout error"), with or without
#    UCX_IB_GID_INDEX=1, although verbs-level UD (ibv_ud_pingpong) works.
#    So UCP over rxe0 fails; that, not the GID, is why UCX did not reach
#    its peer.
set -u
R=${1:?usage: vm-ucx-probe.sh RESULTS_DIR}
LOGS=$R/logs
mkdir -p "$LOGS"
: > "$R/results"
PORT=13337   # ucx_perftest default
nfail=0

ucx_info -v > "$LOGS/ucx-info.log" 2>&1
ucx_info -d >> "$LOGS/ucx-info.log" 2>&1
grep -E 'Transport|Device' "$LOGS/ucx-info.log" | sed 's/^/ucx_info: /' | sort -u | head -40
rdma resource show > "$LOGS/rdma-res.log" 2>&1
for g in /sys/class/infiniband/rxe0/ports/1/gids/*; do
    i=${g##*/}; v=$(cat "$g" 2>/dev/null)
    [ "$v" = 0000:0000:0000:0000:0000:0000:0000:0000 ] && continue
    echo "gid $i $v $(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$i 2>/dev/null)"
done | tee "$LOGS/gids.log"

wait_listen() {
    local i
    for i in $(seq 150); do
        ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
        sleep 0.1
    done
    return 1
}

# probe [--xfail] NAME ENV... -- ARGS...   (same args for server and client)
# --xfail: a known failure; reported as "xfail NAME" / "xpass NAME" in the
# console only, not in results.
probe() {
    local xfail=0
    [ "$1" = --xfail ] && { xfail=1; shift; }
    local name=$1; shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    local log=$LOGS/ucx-$name
    echo "probe $name: env ${envs[*]:-(none)} args $*"
    env "${envs[@]}" timeout -k 5 25 ucx_perftest "$@" > "$log.server.log" 2>&1 &
    local spid=$!
    if ! wait_listen $PORT; then
        kill $spid 2>/dev/null; wait $spid 2>/dev/null
        echo "FAIL $name" >> "$R/results"; nfail=$((nfail+1))
        echo "  server did not listen:"; tail -n 15 "$log.server.log" | sed 's/^/  server: /'
        return
    fi
    env "${envs[@]}" timeout -k 5 20 ucx_perftest "$@" 127.0.0.1 > "$log.client.log" 2>&1
    local crc=$?
    wait $spid; local src=$?
    if [ $xfail = 1 ]; then
        if [ $crc -eq 0 ] && [ $src -eq 0 ]; then echo "  xpass $name"; else echo "  xfail $name (client exit $crc, server exit $src)"; fi
        grep -h 'ERROR' "$log.server.log" "$log.client.log" | sed 's/^.*UCX  ERROR/  error:/' | sort -u
    elif [ $crc -eq 0 ] && [ $src -eq 0 ]; then
        echo "ok $name" >> "$R/results"
        echo "  ok"; grep '^Final:' "$log.client.log" | sed "s/^/  $name /"
        grep '^Final:' "$log.client.log" | sed "s/^/$name (env ${envs[*]:-none}; args $*) [iters p50_us avg_us overall_us MB\/s_avg MB\/s_overall msg\/s_avg msg\/s_overall] /" >> "$R/bench.txt"
    else
        echo "FAIL $name" >> "$R/results"; nfail=$((nfail+1))
        echo "  client exit $crc, server exit $src"
        tail -n 15 "$log.server.log" | sed 's/^/  server: /'
        tail -n 15 "$log.client.log" | sed 's/^/  client: /'
    fi
    sleep 0.5
}

: > "$R/bench.txt"
# verbs-level UD for comparison with ud_verbs
udpp() {
    timeout -k 5 30 ibv_ud_pingpong -d rxe0 -g 1 > "$LOGS/ibv_ud_pingpong.server.log" 2>&1 &
    local spid=$! i
    for i in $(seq 50); do ss -Hlun 'sport = :18515' | grep -q . && break; sleep 0.1; done
    sleep 0.5
    timeout -k 5 25 ibv_ud_pingpong -d rxe0 -g 1 127.0.0.1 > "$LOGS/ibv_ud_pingpong.client.log" 2>&1
    local crc=$?; wait $spid; local src=$?
    if [ $crc -eq 0 ] && [ $src -eq 0 ]; then echo "ok ibv_ud_pingpong" >> "$R/results"; echo "ibv_ud_pingpong: ok"
    else echo "FAIL ibv_ud_pingpong" >> "$R/results"; nfail=$((nfail+1)); echo "ibv_ud_pingpong: client $crc server $src"; fi
}
udpp

# UCT level, rc_verbs on rxe0:1
probe uct_rc_verbs_am_lat -- -t am_lat -x rc_verbs -d rxe0:1 -n 1000
probe uct_rc_verbs_am_lat_gid1 UCX_IB_GID_INDEX=1 -- -t am_lat -x rc_verbs -d rxe0:1 -n 1000
probe uct_rc_verbs_put_bw_4MiB -- -t put_bw -x rc_verbs -d rxe0:1 -D zcopy -s 4194304 -n 50
# Known failures (see the header).
probe --xfail ucp_rc_verbs_only UCX_TLS=rc_verbs,self UCX_NET_DEVICES=rxe0:1 -- -t tag_lat -n 1000
probe --xfail ucp_rc_verbs_tcp UCX_TLS=rc_verbs,tcp,self UCX_NET_DEVICES=rxe0:1,lo -- -t tag_lat -n 1000
probe --xfail ucp_rc_verbs_ud_gid1 UCX_TLS=rc_verbs,ud_verbs,self UCX_NET_DEVICES=rxe0:1 UCX_IB_GID_INDEX=1 -- -t tag_lat -n 1000
probe --xfail uct_ud_verbs_am_lat_debug UCX_LOG_LEVEL=debug -- -t am_lat -x ud_verbs -d rxe0:1 -n 10
[ $nfail -eq 0 ]
