#!/usr/bin/env bash
# Fuzz every parser of outside bytes (test/fuzz) for SECONDS each (default
# 60), one target at a time, and print per target what libFuzzer reports:
# executions, coverage (cov: edges, ft: features) and crashes. Exits non-zero
# if any target crashed. What the fuzzers add to their corpus stays in
# build-fuzz/fuzz-corpus/<target> (kept between runs, never in the repo);
# a crashing input lands in build-fuzz/fuzz-crashes/, to be copied to
# test/fuzz/regress/<target>/ once understood.
#   scripts/fuzz.sh [SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
dir=build-fuzz

if [ ! -d "$dir" ]; then
    CC=clang-14 meson setup "$dir" -Dfuzz=enabled -Db_sanitize=address,undefined -Db_lundef=false \
        -Db_lto=false -Dc_args=-fsanitize=fuzzer-no-link --buildtype=debugoptimized \
        -Djava=disabled -Dpython=disabled >/dev/null || exit 1
fi
ninja -C "$dir" fuzz >/dev/null || exit 1

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
mkdir -p "$dir/fuzz-crashes"
crashed=0
for fuzzer in "$dir"/test/fuzz/fuzz_*; do
    t=${fuzzer##*/fuzz_}
    [ -d "test/fuzz/corpus/$t" ] || continue # fuzz_gen_corpus and the like
    mkdir -p "$dir/fuzz-corpus/$t"
    inputs=("$dir/fuzz-corpus/$t" "test/fuzz/corpus/$t")
    [ -d "test/fuzz/regress/$t" ] && inputs+=("test/fuzz/regress/$t")
    log=$dir/fuzz-$t.log
    "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$dir/fuzz-crashes/$t-" "${inputs[@]}" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    if [ $rc -eq 0 ]; then
        result=ok
    else
        result="CRASH ($(grep -m1 -E 'SUMMARY|check failed' "$log"), log $log)"
        crashed=1
    fi
    printf '%-14s %4ss execs %-10s cov %-5s ft %-6s %s\n' "$t" "$seconds" "${execs:-?}" "${cov:-?}" \
        "${ft:-?}" "$result"
done
exit $crashed
