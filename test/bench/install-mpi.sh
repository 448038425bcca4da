#!/usr/bin/env bash
# install-mpi.sh - install the MPI libraries compare-shm.sh measures xdev
# against, on Debian 12, as root (or through sudo). Safe to run again: it
# only installs what is missing, and does nothing if nothing is.
#
#   openmpi-bin libopenmpi-dev  Open MPI 4.1: mpicc.openmpi, mpirun.openmpi
#   mpich libmpich-dev          MPICH 4.0 (ch4:ucx): mpicc.mpich, mpirun.mpich
#   ucx-utils                   ucx_perftest, ucx_info
#
# Debian's plain mpicc/mpirun are alternatives that point at one of the two
# MPIs; compare-shm.sh always calls the explicit .openmpi / .mpich names.
set -euo pipefail

packages=(openmpi-bin libopenmpi-dev mpich libmpich-dev ucx-utils)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}" >&2
$sudo apt-get update -qq
# Recommends stay out (they pull in documentation and Fortran/C++ extras);
# the -dev packages depend on everything needed to compile C programs.
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
