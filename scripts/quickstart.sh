#!/usr/bin/env bash
# Build everything, then run the main job: two processes exchanging
# messages over the default transport, with xdev-bench printing latency
# and bandwidth.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
[ -d build ] || meson setup build --buildtype=release >/dev/null
ninja -C build >/dev/null
exec build/src/tools/xdevrun -n 2 build/src/tools/xdev-bench --tests latency,bw "$@"
