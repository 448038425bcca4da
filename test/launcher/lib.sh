# Shared helpers for the launcher tests; sourced by each test script, whose
# first argument is the xdevrun to test.
XDEVRUN=${1:?usage: $0 path/to/xdevrun}
[ -x "$XDEVRUN" ] || { echo "not an executable: $XDEVRUN"; exit 1; }

# Every job's boot directory goes under $WORK/tmp, so leftovers are visible.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/xdevrun-test.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
mkdir "$WORK/tmp"
export WORK TMPDIR=$WORK/tmp
unset XDEV_TIMEOUT XDEV_TRANSPORT

failures=0
pass() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }
# check DESCRIPTION COMMAND...: passes if COMMAND succeeds.
check() {
    local what=$1
    shift
    if "$@"; then pass "$what"; else fail "$what"; fi
}

now_ms() {
    local t=${EPOCHREALTIME//[.,]/}
    echo $((10#$t / 1000))
}

# run ARGS...: run xdevrun in the foreground; sets RC (exit status) and MS
# (elapsed milliseconds); its stderr (and the ranks') goes to $WORK/err.
run() {
    local t0
    t0=$(now_ms)
    "$XDEVRUN" "$@" 2>"$WORK/err"
    RC=$?
    MS=$(($(now_ms) - t0))
}

# Expectations on the last run().
rc_is() { [ "$RC" -eq "$1" ] || { echo "     exit status $RC, expected $1"; return 1; }; }
took_under() { [ "$MS" -lt "$1" ] || { echo "     took $MS ms, limit $1 ms"; return 1; }; }
took_over() { [ "$MS" -ge "$1" ] || { echo "     took only $MS ms, expected >= $1 ms"; return 1; }; }
err_has() { grep -Eq -- "$1" "$WORK/err" || { echo "     stderr lacks /$1/:"; sed 's/^/     | /' "$WORK/err"; return 1; }; }
err_lines() { local n; n=$(grep -c '^xdevrun:' "$WORK/err"); [ "$n" -eq "$1" ] || { echo "     $n xdevrun lines, expected $1"; return 1; }; }

# Ranks that should be long gone: each wrote its pid to $WORK/pid.<rank>.
no_rank_alive() {
    local f pid
    for f in "$WORK"/pid.*; do
        [ -e "$f" ] || continue
        pid=$(cat "$f")
        if kill -0 "$pid" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; then
            echo "     rank pid $pid is still alive"
            return 1
        fi
    done
}

# The launcher must leave no boot directory behind.
no_boot_dir_left() {
    local left
    left=$(ls -A "$WORK/tmp")
    [ -z "$left" ] || { echo "     left behind in TMPDIR: $left"; return 1; }
}

# wait_for_files N PATTERN-PREFIX: wait up to 5 s until PREFIX0..PREFIX(N-1) exist.
wait_for_files() {
    local i deadline=$(($(now_ms) + 5000)) missing
    while :; do
        missing=0
        for ((i = 0; i < $1; i++)); do [ -e "$2$i" ] || missing=1; done
        [ $missing -eq 0 ] && return 0
        [ "$(now_ms)" -lt $deadline ] || return 1
        sleep 0.02
    done
}

reset_work() { rm -f "$WORK"/pid.* "$WORK"/boot.* "$WORK"/env.* "$WORK"/done.* "$WORK"/err; }

finish() {
    if [ $failures -eq 0 ]; then
        echo "PASS"
        exit 0
    fi
    echo "$failures check(s) failed"
    exit 1
}
