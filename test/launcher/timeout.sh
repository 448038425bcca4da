#!/bin/bash
# launcher-timeout: --timeout and XDEV_TIMEOUT kill a job that runs too long.
. "$(dirname "$0")/lib.sh"

run -n 3 --timeout 1 --grace 1 sh -c 'echo $$ > "$WORK/pid.$XDEV_RANK"; exec sleep 100'
check "--timeout 1 on sleeping ranks: exit 124" rc_is 124
check "...after the timeout (${MS} ms)" took_over 950
check "...and within 1 + grace + 1 s" took_under 3000
check "stderr says 'xdevrun: timeout after 1 s'" err_has '^xdevrun: timeout after 1 s$'
check "one line only" err_lines 1
check "no rank is left running" no_rank_alive

reset_work
run -n 2 --timeout 0.5 --grace 0.5 sh -c 'echo $$ > "$WORK/pid.$XDEV_RANK"; trap "" TERM; exec sleep 100'
check "ranks ignoring SIGTERM: still exit 124" rc_is 124
check "...SIGKILLed one grace period after the timeout (${MS} ms)" took_over 950
check "...not much later" took_under 2000
check "...leaving no rank running" no_rank_alive

t0=$(now_ms)
XDEV_TIMEOUT=0.5 "$XDEVRUN" -n 2 --grace 0.5 sleep 100 2>"$WORK/err"
RC=$? MS=$(($(now_ms) - t0))
check "XDEV_TIMEOUT=0.5 works like --timeout: exit 124" rc_is 124
check "...within timeout + grace (${MS} ms)" took_under 1500

XDEV_TIMEOUT=0.3 "$XDEVRUN" -n 2 --timeout 0 sleep 0.6 2>"$WORK/err"
RC=$?
check "--timeout 0 overrides XDEV_TIMEOUT and means none" rc_is 0

run -n 2 --timeout 5 sleep 0.2
check "a job done before its timeout: exit 0" rc_is 0
check "...without waiting for the timeout (${MS} ms)" took_under 2000

check "no boot directory left in TMPDIR" no_boot_dir_left
finish
