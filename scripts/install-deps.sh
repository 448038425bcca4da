#!/usr/bin/env bash
# Install what building and testing xdev needs on Debian 12, as root (or
# through sudo). Safe to run again: it only installs what is missing.
set -euo pipefail

packages=(gcc libc6-dev meson ninja-build pkg-config python3 iproute2 procps
    # the libfabric transport (src/ofi) and fi_pingpong for its comparison
    libfabric-dev libfabric-bin
    # the Soft-RoCE VM that the ibv tests boot (test/ibv)
    qemu-system-x86 linux-image-amd64 busybox-static rdma-core ibverbs-utils perftest
    # the ibv transport (src/ibv) builds against rdma-core's libibverbs
    libibverbs-dev ibverbs-providers
    # starting under a PMIx server (src/core/boot_pmix.c) and its mpirun test
    libpmix-dev openmpi-bin
    # ... and its srun test, with private daemons (auth/none, no munge)
    slurmctld slurmd slurm-client slurm-wlm-basic-plugins
    # the bindings (bindings/java, bindings/python) and their tests
    openjdk-17-jdk-headless python3-dev python3-pytest python3-numpy
    # pip install ./bindings/python offline (its test), and mpi4py for
    # test/bench/compare-bindings.sh
    python3-venv python3-pip python3-setuptools python3-wheel python3-mpi4py
    # the fuzz targets (test/fuzz, scripts/fuzz.sh): libFuzzer comes with clang
    clang-14 libfuzzer-14-dev)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
