#!/bin/bash
# Host side of the xdev-over-ibv VM run:
#
#   xdev-vm.sh [--timeout S] BUILD_DIR RESULTS_DIR TEST...
#
# Writes what vm-xdev.sh reads (the build and source dirs, the test names)
# into RESULTS_DIR and boots the VM with vm-run.sh, whose exit status and
# output it passes on. Each TEST gives one "ok NAME"/"FAIL NAME" line in
# RESULTS_DIR/results, which check-result.sh turns into one meson test.
set -u
HERE=$(dirname "$(realpath -e "${BASH_SOURCE[0]}")")
tmo=()
if [ "${1:-}" = --timeout ]; then tmo=(--timeout "$2"); shift 2; fi
[ $# -ge 3 ] || { echo "usage: $0 [--timeout S] BUILD_DIR RESULTS_DIR TEST..." >&2; exit 2; }
build=$(realpath -e "$1") || exit 1
mkdir -p "$2" || exit 1
results=$(realpath -e "$2")
shift 2
echo "$build" > "$results/build-dir"
realpath -e "$HERE/../.." > "$results/source-dir"
printf '%s\n' "$@" > "$results/tests"
printf '%s\n' ${XDEV_VM_ENV:-} > "$results/env"
# Two 2 GiB buffers (conformance sizes) and the page cache of the 9p root.
export XDEV_IBV_MEM=${XDEV_IBV_MEM:-8192}
exec "$HERE/vm-run.sh" "${tmo[@]}" "$HERE/vm-xdev.sh" "$results"
