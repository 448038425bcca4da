#!/bin/bash
# launcher-basic: the environment every rank gets, and success.
. "$(dirname "$0")/lib.sh"

# Each rank records its XDEV_* variables and what it sees of the boot dir.
record='env | grep "^XDEV_" | sort > "$WORK/env.$XDEV_RANK" &&
        stat -c "MODE=%a" "$XDEV_BOOT_DIR" >> "$WORK/env.$XDEV_RANK"'

var() { sed -n "s/^$1=//p" "$WORK/env.$2"; }

run -n 4 sh -c "$record"
check "4 ranks that exit 0: xdevrun exits 0" rc_is 0
check "xdevrun prints nothing when all is well" err_lines 0

ranks_distinct() {
    local r
    for r in 0 1 2 3; do
        [ -e "$WORK/env.$r" ] && [ "$(var XDEV_RANK $r)" = "$r" ] || { echo "     rank $r missing"; return 1; }
    done
    [ "$(ls "$WORK"/env.* | wc -l)" -eq 4 ]
}
check "every rank has its own XDEV_RANK, 0..3" ranks_distinct

shared_identical() {
    local r
    for r in 1 2 3; do
        diff <(grep -v '^XDEV_RANK=' "$WORK/env.0") <(grep -v '^XDEV_RANK=' "$WORK/env.$r") || return 1
    done
}
check "XDEV_SIZE, JOB_ID, JOB_SECRET, BOOT_DIR are the same on every rank" shared_identical
check "XDEV_SIZE is 4" test "$(var XDEV_SIZE 0)" = 4
id=$(var XDEV_JOB_ID 0)
secret=$(var XDEV_JOB_SECRET 0)
boot=$(var XDEV_BOOT_DIR 0)
check "XDEV_JOB_ID '$id' uses only [A-Za-z0-9-]" grep -Eqx '[A-Za-z0-9-]+' <<<"$id"
check "XDEV_JOB_SECRET is 32 hex digits" grep -Eqx '[0-9a-f]{32}' <<<"$secret"
check "XDEV_BOOT_DIR is \$TMPDIR/xdev-<jobid>-XXXXXX" grep -Eqx "$WORK/tmp/xdev-$id-[A-Za-z0-9]{6}" <<<"$boot"
check "the boot dir existed during the job with mode 0700" test "$(var MODE 0)" = 700
check "the boot dir is gone after the job" test ! -e "$boot"
check "no XDEV_TRANSPORT without --transport" test -z "$(var XDEV_TRANSPORT 0)"

reset_work
run -n 2 --transport tcp sh -c "$record"
check "--transport tcp: exit 0" rc_is 0
check "--transport tcp sets XDEV_TRANSPORT=tcp on every rank" \
    test "$(var XDEV_TRANSPORT 0)$(var XDEV_TRANSPORT 1)" = tcptcp
check "a second job gets another job id" test "$(var XDEV_JOB_ID 0)" != "$id"
check "a second job gets another secret" test "$(var XDEV_JOB_SECRET 0)" != "$secret"

reset_work
run -n 1 sh -c "$record"
check "-n 1: exit 0, XDEV_RANK=0 XDEV_SIZE=1" test "$RC$(var XDEV_RANK 0)$(var XDEV_SIZE 0)" = 001

run -n 16 true
check "-n 16 true: exit 0" rc_is 0

run -n 2 sh -c 'test "$1" = --grace && test "$2" = -n' sh --grace -n
check "options after the program are the program's" rc_is 0

check "no boot directory left in TMPDIR" no_boot_dir_left
finish
