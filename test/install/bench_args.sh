#!/usr/bin/env bash
# bench_args.sh XDEV_BENCH
#
# xdev-bench refuses a bad command line before it starts a device: exit
# status 2, one line on stderr naming what it refused, nothing on stdout.
# --help is not an error: usage on stdout, exit status 0. Run outside
# xdevrun, so a command line it wrongly took would fail on "needs exactly 2
# ranks" (status 1) instead.
set -uo pipefail
bench=$1
fail=0
say() { echo "FAIL: $*"; fail=1; }

refused() { # what-stderr-names ARGS...
    local want=$1 out err rc
    shift
    err=$("$bench" "$@" 2>&1 >/dev/null)
    rc=$?
    out=$("$bench" "$@" 2>/dev/null)
    [ $rc -eq 2 ] || say "'$*' exited $rc, not 2"
    [ -z "$out" ] || say "'$*' wrote to stdout: $(head -c 80 <<<"$out")"
    grep -q -- "$want" <<<"$err" || say "'$*': stderr does not name $want: $(head -c 120 <<<"$err")"
}

refused --tests --tests nosuch
refused --tests --tests ''
refused --tests --tests ,
refused --tests --tests latency,
refused --tests --tests ,latency
refused --tests --tests latency,,bw
refused --iters --iters 0
refused --window --window x
refused --min --min 1Q
refused '--min is larger' --min 2K --max 1K
refused unexpected --tests latency extra
refused bogus --bogus

out=$("$bench" --help) || say "--help exited $?"
grep -q '^Usage: ' <<<"$out" || say "--help printed no usage on stdout"

[ $fail -eq 0 ] && echo "xdev-bench arguments: PASS"
exit $fail
