#!/usr/bin/env bash
# The whole test suite: build normally and with sanitizers, run every test
# in each build, and end with one line "N passed, N failed".
#
#   scripts/test.sh              release + ASan/UBSan + TSan builds, one
#                                without libpmix (a selection), and the
#                                fuzz targets for 10 s each (clang)
#   XDEV_TEST_BUILDS=plain scripts/test.sh   only the plain build
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }

builds=${XDEV_TEST_BUILDS:-"plain asan tsan nopmix fuzz"}
summary=$(mktemp) failures=$(mktemp)
trap 'rm -f "$summary" "$failures"' EXIT

setup() { # name, meson options... (CC and targets from build_cc, build_targets)
    local dir=build-test-$1; shift
    [ -d "$dir" ] || env ${build_cc:+CC=$build_cc} meson setup "$dir" "$@" >/dev/null || return 1
    ninja -C "$dir" $build_targets >/dev/null
}

# Test names of a build but the in-VM ibv ones, without their suites.
list_tests() {
    meson test -C "build-test-$1" --list 2>/dev/null | grep -v '^xdev:ibv ' | sed 's/^[^/]*\/ *//'
}

for b in $builds; do
    build_cc='' build_targets=''
    case $b in
    plain) opts=(--buildtype=debugoptimized) ;;
    # The bindings load libxdev into a JVM or CPython, which the sanitizer
    # runtimes would have to be preloaded into: they run in the plain build.
    # The sanitized builds are optimized, as the sanitizers' own documents
    # advise: at -O0 the CPU-bound cases (filling and checking 2 GiB, the
    # reductions) ran two to three times slower than they need to.
    asan) opts=(--buildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false -Db_lto=false
                -Djava=disabled -Dpython=disabled) ;;
    tsan) opts=(--buildtype=debugoptimized -Db_sanitize=thread -Db_lundef=false -Db_lto=false
                -Djava=disabled -Dpython=disabled) ;;
    # Without libpmix (a machine that lacks it): everything else still works.
    nopmix) opts=(--buildtype=debugoptimized -Db_lto=false -Dpmix=disabled
                  -Djava=disabled -Dpython=disabled) ;;
    # libFuzzer needs clang, and the library compiled for its coverage;
    # only the targets are built (test/fuzz/meson.build).
    fuzz) opts=(--buildtype=debugoptimized -Dfuzz=enabled -Db_sanitize=address,undefined
                -Db_lundef=false -Db_lto=false -Dc_args=-fsanitize=fuzzer-no-link
                -Djava=disabled -Dpython=disabled)
          build_cc=clang-14 build_targets=fuzz ;;
    *) echo "unknown build $b"; exit 2 ;;
    esac
    echo "=== build: $b"
    if ! setup "$b" "${opts[@]}"; then
        echo "build $b failed"
        echo "build-$b FAIL" >>"$summary"
        continue
    fi
    # TSan is for races between threads: it runs the tests where several
    # threads share a device (threads, peek, mprobe, wakeup, handoff, the progress thread), not the
    # single-threaded bulk tests it would only slow down tenfold, nor the
    # in-VM ibv results (the VM runs in the plain build only).
    # The ibv VM tests run in the plain build only: what they exercise
    # inside the VM is not built with the sanitizers.
    selection=(--no-suite ibv)
    [ "$b" = plain ] && selection=()
    [ "$b" = fuzz ] && selection=(--suite fuzz)
    if [ "$b" = nopmix ]; then
        mapfile -t selection < <(list_tests "$b" |
            grep -E -- '^(tcp|shm|auto)-np4-(matching|sizes|vector|event)$|^install-|^example-|^multihost|^leftovers')
    fi
    # ASan+UBSan look for memory errors on the paths a case takes, which
    # are the same at 2, 4 and 8 ranks: a conformance case that runs at 4
    # ranks runs only there, but for the 2 GiB message that only a 2-rank
    # job sends (over tcp), and ofi runs on its tcp provider (xdev's code
    # is the same on both). The fault cases under auto on one host take
    # shm's paths, which run in their own right: auto keeps the ones on
    # pretend hosts, where it mixes transports. Collectives keep 2-5 and
    # 8 ranks (the odd and non-power-of-two shapes); pmix keeps mpirun's
    # check, one conformance case, the kill and two nodes (srun and the
    # other cases start the same client code); random stops (timing, not
    # memory) and the 4096-rank launcher usage stay plain. The plain build
    # runs them all.
    if [ "$b" = asan ]; then
        mapfile -t selection < <(list_tests "$b" | awk '
            { all[NR] = $0; have[$0] = 1 }
            END {
                for (i = 1; i <= NR; i++) {
                    t = all[i]; four = t
                    if (t !~ /^coll-/ && sub(/-np[28]-/, "-np4-", four) && (four in have) &&
                        t != "tcp-np2-sizes")
                        continue
                    if (t ~ /^coll-np[679]-/ || t ~ /^ofi-shm-/ || t ~ /random-stop/ ||
                        (t ~ /^fault-.*-auto$/ && t !~ /hosts/) ||
                        t == "pmix-srun" || t == "launcher-usage" ||
                        (t ~ /^pmix-mpirun-conf-/ && t != "pmix-mpirun-conf-matching"))
                        continue
                    print t
                }
            }')
    fi
    # TSan, for the same reason, leaves out 8 ranks, and ofi's 2.
    if [ "$b" = tsan ]; then
        mapfile -t selection < <(list_tests "$b" | grep -v -E -- '-np8-|^ofi-[a-z]+-np2-' |
            grep -E 'threads|peek|progress|worker|poller|mprobe|wakeup|handoff|^unit-|^leftovers')
    fi
    # The fuzz targets are independent single-threaded processes: one a core.
    jobs=1
    [ "$b" = fuzz ] && jobs=2
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    LSAN_OPTIONS=suppressions=$PWD/scripts/lsan.supp \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
        meson test -C "build-test-$b" --print-errorlogs --num-processes "$jobs" "${selection[@]}"
    # A failed test's output is also kept for the end of the log: CI may
    # show only the log's last lines, and the verdict is there.
    python3 - "build-test-$b/meson-logs/testlog.json" "$b" "$failures" >>"$summary" <<'PY'
import json, sys
log, build, failures = sys.argv[1:]
with open(failures, "a") as out:
    for line in open(log):
        t = json.loads(line)
        print(f"{build}:{t['name']} {t['result']}")
        if t["result"] != "OK":
            tail = t.get("stdout", "").splitlines()[-40:]
            out.write(f"--- {build}:{t['name']} {t['result']} (its last {len(tail)} lines)\n")
            out.writelines(l + "\n" for l in tail)
PY
done

if [ -s "$failures" ]; then
    echo
    echo "=== output of the failed tests"
    cat "$failures"
fi
echo
echo "=== results"
grep -v ' OK$' "$summary" || true
passed=$(grep -c ' OK$' "$summary")
failed=$(grep -vc ' OK$' "$summary")
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
