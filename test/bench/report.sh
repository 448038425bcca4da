#!/usr/bin/env bash
# report.sh BUILD_DIR [ROUNDS] [OUT_DIR]
#
# Runs the comparison scripts beside it and turns what they print into one
# page a person can look at: OUT_DIR/index.html (default BUILD_DIR/report)
# with plots of latency, bandwidth and message rate against message size,
# xdev beside every reference (PNG, drawn by gnuplot), and each script's
# ratio tables. OUT_DIR/PART.txt keeps what each script printed, and
# OUT_DIR/raw/PART every run's output. ROUNDS (default 5) goes to every
# script; each interleaves its systems and reports medians.
#
# Parts, in this order (REPORT_PARTS narrows them, e.g. "shm tcp"):
#   shm       compare-shm.sh over 8 B..4 MiB (REPORT_SHM_ARGS, default
#             "--tests latency,bw,rate --min 8 --max 4M")
#   tcp       compare-tcp.sh over 8 B..4 MiB (REPORT_TCP_ARGS, default
#             "--min 8 --max 4M")
#   ofi       compare-ofi.sh (shm and tcp;ofi_rxm against fi_pingpong)
#   coll      compare-coll.sh, both timings (NPS, OPS, SIZES pass through)
#   bindings  compare-bindings.sh, if the build has a binding
#   ibv       compare-ibv.sh inside the rxe VM (test/ibv/xdev-vm.sh ...
#             bench); if BUILD_DIR has the ibv transport
# A part whose script exits non-zero (a run failed, or a bar the script
# checks was missed) keeps what it printed, the page marks it, and
# report.sh then exits 1. Installs gnuplot-nox if missing (needs
# root or sudo), as the scripts install the MPIs they compare with.
set -uo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=compare-common.sh
. "$here/compare-common.sh"
[[ $# -ge 1 && $# -le 3 ]] || usage
[[ $1 != -h && $1 != --help ]] || usage
build=$(cd "${1%/}" 2>/dev/null && pwd) || die "$1: no such directory"
rounds=${2:-5}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, not '$rounds'"
out=${3:-$build/report}
mkdir -p "$out/raw" || die "cannot make $out"
out=$(cd "$out" && pwd)

if ! command -v gnuplot >/dev/null; then
    sudo=()
    [[ $(id -u) -eq 0 ]] || sudo=(sudo)
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q gnuplot-nox >/dev/null ||
        die "installing gnuplot-nox failed (it needs root or sudo)"
fi

# The systems compare-bindings.sh can run on this build; empty if no binding.
binding_systems() {
    local s=(c)
    [[ -f $build/bindings/java/xdev.jar ]] && s+=(java-direct java-array)
    [[ -d $build/bindings/python/xdev ]] && s+=(py-bytearray py-numpy py-objects)
    ((${#s[@]} > 1)) && echo "${s[*]} ompi-c mpi4py-numpy mpi4py-objects"
}
have_ibv() { ldd "$build/src/libxdev.so" 2>/dev/null | grep libibverbs >/dev/null; } # (not -q: pipefail)

read -r -a parts <<<"${REPORT_PARTS:-shm tcp ofi coll bindings ibv}"
failed=()
for part in "${parts[@]}"; do
    raw=$out/raw/$part
    rm -rf "$raw" && mkdir -p "$raw"
    txt=$out/$part.txt
    echo "$prog: $part" >&2
    case $part in
    shm) BENCH_OUT=$raw BENCH_ARGS=${REPORT_SHM_ARGS:---tests latency,bw,rate --min 8 --max 4M} \
             "$here/compare-shm.sh" "$build" "$rounds" >"$txt" ;;
    tcp) BENCH_OUT=$raw BENCH_ARGS=${REPORT_TCP_ARGS:---min 8 --max 4M} \
             "$here/compare-tcp.sh" "$build" "$rounds" >"$txt" ;;
    ofi) "$here/compare-ofi.sh" "$build" "$rounds" >"$txt" ;;
    coll) BENCH_OUT=$raw TIMING=both "$here/compare-coll.sh" "$build" "$rounds" >"$txt" ;;
    bindings)
        systems=$(binding_systems)
        [[ -n $systems ]] || { echo "# the build has neither binding" >"$txt"; continue; }
        SYSTEMS=$systems "$here/compare-bindings.sh" "$build" "$rounds" >"$txt" ;;
    ibv)
        have_ibv || { echo "# the build has no ibv transport" >"$txt"; continue; }
        XDEV_VM_ENV="BENCH_ROUNDS=$rounds" "$here/../ibv/xdev-vm.sh" --timeout 3000 "$build" "$raw" bench \
            >"$raw/vm.log" 2>&1
        status=$?
        # compare-ibv.sh's report is the tail of the VM's output.
        sed -n '/^# xdev over ibv/,$p' "$raw/vm.log" | grep -v '^ibv-vm:' >"$txt"
        [[ $status -eq 0 && -s $txt ]] ;;
    *) die "unknown part '$part' in REPORT_PARTS" ;;
    esac || { failed+=("$part"); echo "$prog: $part exited non-zero; its section says so" >&2; }
done

/usr/bin/env python3 "$here/report_page.py" "$out" "${parts[@]}" --failed "${failed[@]}" ||
    die "writing the page failed"
echo "$prog: wrote $out/index.html" >&2
((${#failed[@]} == 0))
