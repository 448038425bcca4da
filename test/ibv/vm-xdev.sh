#!/bin/bash
# xdev over the ibv transport, run INSIDE the VM by vm-run.sh (through
# xdev-vm.sh, which writes the two files this script reads):
#
#   RESULTS_DIR/build-dir   the meson build dir (seen through the 9p root)
#   RESULTS_DIR/tests       the tests to run, one name a line
#
# Each test writes "ok NAME" or "FAIL NAME" to RESULTS_DIR/results and its
# output to RESULTS_DIR/logs/NAME.log. Names:
#   conf-npN-CASE      test/conformance CASE on N ranks (default rendezvous)
#   conf-npN-CASE-M    ... with XDEV_IBV_RNDZ=M (read, write or send)
#   tight-npN-CASE     conf-npN-CASE with XDEV_IBV_RX_BUFS=4: every window
#                      at its floor (one credit a peer at 4 ranks)
#   flood-npN          test/fault fault_flood on N ranks
#   flood-progress     ... with a progress thread
#   finalize-active    fault_finalize_active active / clean
#   finalize-clean
#   finalize-sends     test/fault fault_finalize_sends, five jobs of 4 ranks
#   gone-early         test/fault fault_gone_early (a rank gone before init)
#   fds-dialer         test/fault fault_fds: a rank out of descriptors where it
#   fds-acceptor       dials, or where it accepts, takes no peer for dead
#   late-peer          test/fault fault_late_peer: an event loop's messages to
#                      and from ranks that start late
#   exit-backlog       test/fault fault_exit_backlog at 8 ranks with
#                      XDEV_IBV_RX_BUFS=1024: 336 completions of ranks that
#                      exited wait in the receiver's CQ
#   peer-kill-npN      test/fault/run_peer_kill.sh (rank 3 killed mid-transfer)
#   die-mid-read       test/fault fault_die_mid: a rank dies while its peer
#   die-mid-write      reads its message (or writes to it) by RDMA
#   peer-kill-npN-keepalive  ... noticed by keepalives alone (XDEV_IBV_PIDFD=0,
#                      as for a peer on another host)
#   inject-post-send   test/inject's traffic with ibv_post_send failing
#   stale-reg-M        test/ibv/ibv_stale_reg.c with XDEV_IBV_RNDZ=M and the
#                      userfaultfd registration cache
#   bench              test/bench/compare-ibv.sh (figures in bench.txt)
set -u
R=${1:?usage: vm-xdev.sh RESULTS_DIR}
HERE=$(dirname "$(realpath -e "${BASH_SOURCE[0]}")")
B=$(cat "$R/build-dir") || { echo "no $R/build-dir"; exit 1; }
SRC=$(cat "$R/source-dir") || { echo "no $R/source-dir"; exit 1; }
LOGS=$R/logs
mkdir -p "$LOGS"
: > "$R/results"
export XDEV_TRANSPORT=ibv XDEV_IBV_DEVICE=rxe0 TMPDIR=/tmp
# Extra VAR=value lines for every test (xdev-vm.sh writes them from
# XDEV_VM_ENV, e.g. "XDEV_IBV_DEBUG=1 XDEV_CONF_WATCHDOG=30").
[ -s "$R/env" ] && set -a && . "$R/env" && set +a
# Emulated CPUs: filling and checking the 2 GiB message of conf-np2-sizes
# alone takes longer than the conformance watchdog's default 110 s.
export XDEV_CONF_WATCHDOG=${XDEV_CONF_WATCHDOG:-500}
XDEVRUN=$B/src/tools/xdevrun
CONF=$B/test/conformance/xdev-conformance
nfail=0

result() {  # result NAME STATUS
    if [ "$2" -eq 0 ]; then
        echo "ok $1" >> "$R/results"
    else
        echo "FAIL $1" >> "$R/results"
        nfail=$((nfail+1))
        echo "vm-xdev: FAIL $1 (status $2); tail of logs/$1.log:"
        tail -n 30 "$LOGS/$1.log" | sed 's/^/    /'
    fi
}

run() {  # run NAME SECONDS CMD...
    local name=$1 tmo=$2; shift 2
    local t0=$(date +%s)
    timeout -k 5 "$tmo" "$@" > "$LOGS/$name.log" 2>&1
    local st=$?
    echo "vm-xdev: $name status $st in $(( $(date +%s) - t0 ))s"
    result "$name" "$st"
}

while read -r t; do
    [ -n "$t" ] || continue
    case "$t" in
        conf-np*-*-read|conf-np*-*-write|conf-np*-*-send)
            np=${t#conf-np}; np=${np%%-*}; c=${t#conf-np$np-}; m=${c##*-}; c=${c%-*}
            XDEV_IBV_RNDZ=$m run "$t" 600 "$XDEVRUN" -n "$np" --transport ibv --timeout 590 "$CONF" "$c" ;;
        conf-np*-*)
            np=${t#conf-np}; np=${np%%-*}; c=${t#conf-np$np-}
            run "$t" 600 "$XDEVRUN" -n "$np" --transport ibv --timeout 590 "$CONF" "$c" ;;
        tight-np*-*)
            # Credits run out all the time, and each freed buffer is one
            # its peer's grant waits on (ibv_rx.c's release): a lost
            # repost is a hang, not a slowdown.
            np=${t#tight-np}; np=${np%%-*}; c=${t#tight-np$np-}
            XDEV_IBV_RX_BUFS=4 run "$t" 600 "$XDEVRUN" -n "$np" --transport ibv --timeout 590 "$CONF" "$c" ;;
        flood-progress)
            XDEV_UNEXPECTED_LIMIT=262144 run "$t" 150 "$XDEVRUN" --timeout 140 -n 2 \
                "$B/test/fault/fault_flood" --progress ;;
        flood-np*)
            np=${t#flood-np}
            XDEV_UNEXPECTED_LIMIT=262144 run "$t" 150 "$XDEVRUN" --timeout 140 -n "$np" \
                "$B/test/fault/fault_flood" ;;
        finalize-active)
            XDEV_FINALIZE_TIMEOUT_MS=500 run "$t" 150 "$XDEVRUN" --timeout 140 -n 2 \
                "$B/test/fault/fault_finalize_active" active ;;
        finalize-clean)
            run "$t" 150 "$XDEVRUN" --timeout 140 -n 2 "$B/test/fault/fault_finalize_active" clean ;;
        finalize-sends)
            run "$t" 150 bash "$SRC/test/fault/run_jobs.sh" 5 "$XDEVRUN" --timeout 25 -n 4 \
                "$B/test/fault/fault_finalize_sends" ;;
        gone-early)
            XDEV_PEER_TIMEOUT_MS=2000 run "$t" 150 "$XDEVRUN" --timeout 140 -n 3 \
                "$B/test/fault/fault_gone_early" ;;
        fds-dialer|fds-acceptor)
            run "$t" 150 "$XDEVRUN" --timeout 140 -n 2 "$B/test/fault/fault_fds" "${t#fds-}" ;;
        late-peer)
            run "$t" 150 "$XDEVRUN" --timeout 140 -n 5 "$B/test/fault/fault_late_peer" ;;
        exit-backlog)
            XDEV_IBV_RX_BUFS=1024 run "$t" 150 "$XDEVRUN" --timeout 140 -n 8 \
                "$B/test/fault/fault_exit_backlog" ;;
        peer-kill-np*-keepalive)
            np=${t#peer-kill-np}; np=${np%-keepalive}
            XDEV_IBV_PIDFD=0 XDEV_PEER_TIMEOUT_MS=3000 run "$t" 150 bash "$SRC/test/fault/run_peer_kill.sh" \
                "$XDEVRUN" "$np" "$B/test/fault/fault_peer_kill" ;;
        peer-kill-np*)
            np=${t#peer-kill-np}
            XDEV_PEER_TIMEOUT_MS=3000 run "$t" 150 bash "$SRC/test/fault/run_peer_kill.sh" \
                "$XDEVRUN" "$np" "$B/test/fault/fault_peer_kill" ;;
        die-mid-read)
            XDEV_IBV_RNDZ=read run "$t" 150 "$XDEVRUN" --timeout 140 --keep-going -n 2 \
                "$B/test/fault/fault_die_mid" sender ;;
        die-mid-write)
            XDEV_IBV_RNDZ=write run "$t" 150 "$XDEVRUN" --timeout 140 --keep-going -n 2 \
                "$B/test/fault/fault_die_mid" receiver ;;
        random-kill|random-stop)
            # smaller than on the host: the VM emulates its CPUs
            XDEV_TRANSPORT=ibv run "$t" 200 bash "$SRC/test/fault/run_random_kill.sh" "$XDEVRUN" \
                "$B/test/fault/fault_random_kill" "${t#random-}" 15 3 4 ;;
        inject-post-send)
            # ibv_post_send refused now and then (test/inject): only the
            # link it was posting on may fail, and nothing may hang
            INJECT_FAULTS=ibv_post_send:ENOMEM:25:0:2 run "$t" 150 "$XDEVRUN" --timeout 140 -n 3 \
                "$B/test/inject/inject_traffic" fail 30 met ;;
        stale-reg-*)
            XDEV_IBV_RNDZ=${t#stale-reg-} XDEV_REGCACHE=uffd run "$t" 150 "$XDEVRUN" --timeout 140 \
                -n 2 "$B/test/ibv/ibv-stale-reg" ;;
        bench)
            run "$t" 1800 bash "$SRC/test/bench/compare-ibv.sh" "$B" "$R/bench.txt" ${BENCH_ROUNDS:-5} ;;
        *)
            echo "unknown test $t" > "$LOGS/$t.log"
            result "$t" 2 ;;
    esac
done < "$R/tests"
[ $nfail -eq 0 ]
