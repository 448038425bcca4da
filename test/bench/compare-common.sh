# shellcheck shell=bash
# compare-common.sh - sourced by compare-shm.sh and compare-tcp.sh, which
# take the same command line, BUILD_DIR [ROUNDS], and keep runs' output
# the same way.
#
# compare_args "$@" sets $build (made absolute) and $rounds (default 5), or
# prints the calling script's usage: its leading comment.

prog=${0##*/}

die() {
    echo "$prog: $*" >&2
    exit 1
}

usage() {
    awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0" >&2
    exit 2
}

compare_args() {
    [[ $# -ge 1 && $# -le 2 ]] || usage
    [[ $1 != -h && $1 != --help ]] || usage
    rounds=${2:-5}
    [[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, not '$rounds'"
    build=$(cd "${1%/}" 2>/dev/null && pwd) || die "$1: no such directory"
}

# need_built EXE...
need_built() {
    local exe
    for exe in "$@"; do
        [[ -x $exe ]] || die "$exe not found or not executable (is $build built?)"
    done
}

# compare_workdir: $work, a scratch directory removed on exit, and $out_dir,
# where runs' output goes: $BENCH_OUT if set (kept), else $work.
# shellcheck disable=SC2034 # out_dir is for the sourcing script
compare_workdir() {
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    if [[ -n ${BENCH_OUT:-} ]]; then
        mkdir -p "$BENCH_OUT"
        out_dir=$BENCH_OUT
    else
        out_dir=$work
    fi
}
