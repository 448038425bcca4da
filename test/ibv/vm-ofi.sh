#!/bin/bash
# Exploratory, not a meson test (yet): the ofi transport over libfabric's
# "verbs;ofi_rxm" provider on Soft-RoCE, run INSIDE the VM by vm-run.sh:
#
#   test/ibv/vm-run.sh --timeout 600 test/ibv/vm-ofi.sh BUILD/test/ibv/vm-ofi
#
# RESULTS_DIR must be BUILD/test/ibv/vm-ofi, so the
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
XDEVRUN=$BUILD/src/tools/xdevrun
# libfabric's verbs provider reaches a device through rdma_cm and an IP
# interface of its own, and it passes over the loopback one that rxe0 sits
# on (verbs;ofi_rxm is listed, but fi_domain fails with FI_ENODATA). So a
# second Soft-RoCE device goes on a dummy interface with an address, and
# the provider is pointed at it.
ADDR=10.77.0.1
ip link add ofi0 type dummy && ip addr add $ADDR/24 dev ofi0 && ip link set ofi0 up &&
    rdma link add rxe_ofi type rxe netdev ofi0 ||
    { result FAIL rxe-on-dummy "could not put a Soft-RoCE device on a dummy interface"; exit 1; }
export FI_VERBS_IFACE=ofi0
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
    echo "# fi_pingpong -p '$PROV' -e rdm (server and client on rxe_ofi over a dummy interface)"
    for size in 8 1048576; do
        fi_pingpong -p "$PROV" -e rdm -I 200 -S $size -B 47800 >"$LOGS/fi_pingpong.server.$size.log" 2>&1 &
        srv=$!
        sleep 1
        timeout 60 fi_pingpong -p "$PROV" -e rdm -I 200 -S $size -P 47800 $ADDR 2>&1 | tail -n 2
        wait $srv
    done
    echo "# xdev-bench over ofi ($PROV)"
    timeout 120 "$XDEVRUN" -n 2 "$BUILD/src/tools/xdev-bench" --tests latency,bw --min 8 --max 1M \
        --iters 100 --warmup 10 2>&1
} >>"$R/bench.txt" 2>&1

[ $nfail -eq 0 ]
