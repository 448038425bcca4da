#!/bin/bash
# launcher-usage: bad command lines exit 2 with a usage message.
. "$(dirname "$0")/lib.sh"

bad() {
    local what=$1
    shift
    run "$@"
    check "$what: exit 2" rc_is 2
    check "$what: prints the usage" err_has '^usage: xdevrun -n N'
}
bad "no arguments"
bad "missing -n" true
bad "-n 0" -n 0 true
bad "-n -1" -n -1 true
bad "-n 4097" -n 4097 true
bad "-n abc" -n abc true
bad "-n 2x" -n 2x true
bad "no program" -n 2
bad "unknown option --bogus" -n 2 --bogus true
bad "unknown option -x" -x -n 2 true
bad "--grace -1" -n 2 --grace -1 true
bad "--timeout abc" -n 2 --timeout abc true
bad "--timeout nan" -n 2 --timeout nan true
bad "--transport ''" -n 2 --transport '' true
bad "--transport bogus" -n 2 --transport bogus true
bad "--transport tc" -n 2 --transport tc true
bad "-n without a value" -n

XDEV_TIMEOUT=soon "$XDEVRUN" -n 1 true 2>"$WORK/err"
RC=$?
check "a malformed XDEV_TIMEOUT: exit 2" rc_is 2

"$XDEVRUN" --help >"$WORK/out" 2>&1
RC=$?
check "--help: exit 0" rc_is 0
check "--help prints the usage" grep -q '^usage: xdevrun -n N' "$WORK/out"

run -n4096 --grace=0.5 --timeout=300 true
check "-n4096 --grace=0.5 --timeout=300 (limits, attached values) are accepted" rc_is 0

check "no boot directory left in TMPDIR" no_boot_dir_left
finish
