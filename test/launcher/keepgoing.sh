#!/bin/bash
# launcher-keep-going: with --keep-going a failure does not stop the others.
. "$(dirname "$0")/lib.sh"

run -n 3 --keep-going --grace 0.1 sh -c '[ "$XDEV_RANK" = 0 ] && exit 5
    sleep 1; touch "$WORK/done.$XDEV_RANK"'
check "--keep-going: xdevrun still exits non-zero (5)" rc_is 5
check "rank 1 finished its work after the failure" test -e "$WORK/done.1"
check "rank 2 finished its work after the failure" test -e "$WORK/done.2"
check "the failure is reported" err_has '^xdevrun: rank 0 \(pid [0-9]+\) exited with status 5$'
check "xdevrun waited for them (${MS} ms)" took_over 950

reset_work
run -n 3 --keep-going --grace 0.1 sh -c 'case $XDEV_RANK in 0) kill -KILL $$;; 1) sleep 0.2; exit 4;; esac
    sleep 0.5; touch "$WORK/done.$XDEV_RANK"'
check "--keep-going, rank 0 killed then rank 1 exits 4: exit 137" rc_is 137
check "every failure is reported" err_lines 2
check "rank 2 finished" test -e "$WORK/done.2"

run -n 2 --keep-going true
check "--keep-going with no failure: exit 0" rc_is 0

check "no boot directory left in TMPDIR" no_boot_dir_left
finish
