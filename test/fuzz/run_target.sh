#!/usr/bin/env bash
# Run one fuzz target for a bounded time: first over its seeds and every
# regression input (a crash among those fails at once), then fuzzing on.
# What it finds stays in a scratch directory, not in the repository's
# corpus; a crashing input is kept under the build directory for the
# regression folder (test/fuzz/regress/<target>/).
#   run_target.sh FUZZER SECONDS CORPUS_DIR REGRESS_DIR
set -euo pipefail
fuzzer=$1 seconds=$2 corpus=$3 regress=$4
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
crashes=$PWD/fuzz-crashes
mkdir -p "$crashes"
dirs=("$scratch" "$corpus")
[ -d "$regress" ] && dirs+=("$regress")
# UBSan must stop the run for libFuzzer to call a finding a crash.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# A crash must fail the test: libFuzzer's own exit code for one, 77, is
# meson's for a skipped test.
exec "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -error_exitcode=1 \
    -artifact_prefix="$crashes/$(basename "$fuzzer")-" "${dirs[@]}"
