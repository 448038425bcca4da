#!/bin/bash
# The ofi transport over libfabric's "verbs;ofi_rxm" provider on rxe0, run
# INSIDE the VM by vm-run.sh:
#
#   vm-ofi.sh RESULTS_DIR
#
# RESULTS_DIR is BUILD/test/ibv/vm-ofi (meson.build passes it), so the
# build being tested is three levels up (and its source tree, for the
# peer-kill driver, is named in its meson-info); the VM sees both over 9p. Runs
# fi_info for the provider, conformance cases at 2 ranks (not `sizes`: its
# 2 GiB messages take far too long on an emulated CPU) and a peer killed
# mid-transfer, then fi_pingpong and xdev-bench on the provider for
# bench.txt (emulated CPUs: figures that prove the path, not performance).
# One line per test in RESULTS_DIR/results; exit 0 iff all passed.
set -u
R=${1:?usage: vm-ofi.sh RESULTS_DIR}
BUILD=$(cd "$R/../../.." && pwd)
SRC=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["directories"]["source"])' \
    "$BUILD/meson-info/meson-info.json")
LOGS=$R/logs
mkdir -p "$LOGS"
: >"$R/results"
: >"$R/bench.txt"
PROV="verbs;ofi_rxm"
export XDEV_TRANSPORT=ofi XDEV_OFI_PROVIDER=$PROV XDEV_OFI_VERBOSE=1
# rxe0 sits on lo: the verbs provider looks for its IP interface by this
# name prefix (default "ib") when it opens a domain through rdma_cm.
export FI_VERBS_IFACE=${FI_VERBS_IFACE:-lo}
XDEVRUN=$BUILD/src/tools/xdevrun
nfail=0

result() { # result ok|FAIL NAME [why]
    echo "$1 $2" >>"$R/results"
    echo "vm-ofi: $1 $2${3:+ ($3)}"
    [ "$1" = ok ] || nfail=$((nfail + 1))
}

# run NAME TIMEOUT CMD...: ok iff CMD exits 0 in time; its output in logs/.
run() {
    local name=$1 tmo=$2
    shift 2
    if timeout -k 5 "$tmo" "$@" >"$LOGS/$name.log" 2>&1; then
        result ok "$name"
    else
        result FAIL "$name" "exit $?"
        tail -n 15 "$LOGS/$name.log" | sed 's/^/    /'
    fi
}

[ -x "$XDEVRUN" ] || { result FAIL build "no $XDEVRUN"; exit 1; }
run fi_info 30 fi_info -v -p "$PROV" -t FI_EP_RDM
for c in matching truncate issend peek self stress; do
    run "conformance-np2-$c" 150 "$XDEVRUN" -n 2 --timeout 140 "$BUILD/test/conformance/xdev-conformance" "$c"
done
run conformance-np2-rma-write-truncate 150 env XDEV_OFI_RMA=write \
    "$XDEVRUN" -n 2 --timeout 140 "$BUILD/test/conformance/xdev-conformance" truncate
run fault-peer-kill-np4 150 env XDEV_PEER_TIMEOUT_MS=5000 \
    bash "$SRC/test/fault/run_peer_kill.sh" "$XDEVRUN" 4 "$BUILD/test/fault/fault_peer_kill"

# Figures, not tests.
{
    echo "# fi_pingpong -p '$PROV' -e rdm (server and client on rxe0 over lo)"
    for size in 8 1048576; do
        fi_pingpong -p "$PROV" -e rdm -I 200 -S $size -B 47800 >/dev/null 2>&1 &
        srv=$!
        sleep 1
        timeout 60 fi_pingpong -p "$PROV" -e rdm -I 200 -S $size -P 47800 127.0.0.1 2>&1 | tail -n 2
        wait $srv
    done
    echo "# xdev-bench over ofi ($PROV)"
    timeout 120 "$XDEVRUN" -n 2 "$BUILD/src/tools/xdev-bench" --tests latency,bw --min 8 --max 1M \
        --iters 100 --warmup 10 2>&1
} >>"$R/bench.txt" 2>&1

[ $nfail -eq 0 ]
