#!/bin/bash
# Run SCRIPT inside a QEMU VM with Soft-RoCE (rdma_rxe) on its loopback:
#
#   vm-run.sh [--timeout S] SCRIPT RESULTS_DIR
#
# The VM boots the installed Debian kernel (linux-image-amd64) with a small
# busybox initramfs (mkinitramfs.sh), mounts the host's / read-only over 9p
# and RESULTS_DIR writable (over the same path), creates rxe0 on lo, runs
# "SCRIPT RESULTS_DIR" and writes its exit status to RESULTS_DIR/status.
#
# Exit status: the script's, or 1 if any line of RESULTS_DIR/results is
# "FAIL ..." (those lines are echoed to stdout); non-zero with a message on
# stderr if the VM did not boot, rxe0 could not be created, the run timed
# out or no status was written.  Never skips.
#
# Console: RESULTS_DIR/console.log (its tail goes to stderr on failure).
# A script may write a few lines saying why a test (or a run of it) failed to
# RESULTS_DIR/why; they go to stderr next to the counts, ahead of the
# console's tail, so that a log cut short still shows them.
# Environment: XDEV_IBV_ACCEL (default tcg,thread=multi; e.g. kvm),
#   XDEV_IBV_MEM (MiB, default 4096), XDEV_IBV_SMP (default 2),
#   XDEV_IBV_INITRAMFS (use this prebuilt image instead of building one),
#   XDEV_IBV_NETDEV (netdev for rxe0, default lo; only for testing the harness).
set -u

HERE=$(dirname "$(realpath -e "${BASH_SOURCE[0]}")")
. "$HERE/lib.sh"

TIMEOUT=300
usage() { echo "usage: $0 [--timeout SECONDS] SCRIPT RESULTS_DIR" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --timeout) [ $# -ge 2 ] || usage; TIMEOUT=$2; shift 2 ;;
        --timeout=*) TIMEOUT=${1#*=}; shift ;;
        -h|--help) usage ;;
        --) shift; break ;;
        -*) usage ;;
        *) break ;;
    esac
done
[ $# -eq 2 ] || usage
case "$TIMEOUT" in ''|*[!0-9]*) ibv_die "--timeout wants whole seconds, got '$TIMEOUT'" ;; esac

SCRIPT=$(realpath -e -- "$1" 2>/dev/null) || ibv_die "script '$1' not found"
mkdir -p -- "$2" || ibv_die "cannot create results dir '$2'"
RESULTS=$(realpath -e -- "$2") || ibv_die "cannot resolve results dir '$2'"

# These paths go on the kernel command line, and the VM sees the host's root
# except for /run, /dev, /proc and /sys, which are its own (its /tmp shows
# the host's, under an overlay that keeps the VM's writes).
for p in "$SCRIPT" "$RESULTS" "$HERE/vm-stage2.sh"; do
    case "$p" in *[[:space:]]*|*\"*) ibv_die "path '$p' has whitespace or quotes; not supported" ;; esac
done
# Scripts under a directory the VM has its own of run from a copy in
# /var/tmp, which the VM sees through the host root.
stage=""
for p in "$SCRIPT" "$HERE/vm-stage2.sh"; do
    case "$p" in
        /run/*|/dev/*|/proc/*|/sys/*)
            if [ -z "$stage" ]; then
                stage=$(mktemp -d /var/tmp/xdev-ibv.XXXXXX) || ibv_die "cannot stage scripts in /var/tmp"
                trap 'rm -rf "$stage"' EXIT
                cp -- "$HERE"/*.sh "$stage"/
            fi ;;
    esac
done
if [ -n "$stage" ]; then
    cp -- "$SCRIPT" "$stage/script.sh"
    SCRIPT=$stage/script.sh
    HERE=$stage
fi

for t in qemu-system-x86_64 timeout gzip; do
    command -v "$t" >/dev/null 2>&1 || ibv_die "$t not found (run scripts/install-deps.sh)"
done
for t in rdma ibv_devices; do   # needed inside the VM, from the host root
    command -v "$t" >/dev/null 2>&1 || ibv_die "$t not found (run scripts/install-deps.sh)"
done

rm -f -- "$RESULTS/status" "$RESULTS/status.tmp" "$RESULTS/results" "$RESULTS/bench.txt" \
         "$RESULTS/console.log" "$RESULTS/vm-error" "$RESULTS/qemu.log" "$RESULTS/vm-uptime-at-stage2"

if [ -n "${XDEV_IBV_INITRAMFS:-}" ]; then
    INITRD=$XDEV_IBV_INITRAMFS
    [ -f "$INITRD" ] || ibv_die "XDEV_IBV_INITRAMFS=$INITRD does not exist"
    KVER=$(cat "$(dirname "$INITRD")/kernel-version" 2>/dev/null || ibv_kernel_version)
else
    VMDIR="$RESULTS/.vm"
    "$HERE/mkinitramfs.sh" "$VMDIR" >/dev/null || ibv_die "mkinitramfs.sh failed"
    INITRD="$VMDIR/initramfs.cpio.gz"
    KVER=$(cat "$VMDIR/kernel-version")
fi
KERNEL=/boot/vmlinuz-$KVER
[ -r "$KERNEL" ] || ibv_die "kernel $KERNEL not readable"
[ -f "/lib/modules/$KVER/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko" ] || \
    [ -n "$(find "/lib/modules/$KVER" -name 'rdma_rxe.ko*' -print -quit)" ] || \
    ibv_die "kernel $KVER has no rdma_rxe module"

# The script gets most of the time; boot + shutdown need ~15-60 s under TCG.
SCRIPT_TMO=$(( TIMEOUT > 120 ? TIMEOUT - 60 : TIMEOUT / 2 ))

ACCEL=${XDEV_IBV_ACCEL:-tcg,thread=multi}
MEM=${XDEV_IBV_MEM:-4096}
SMP=${XDEV_IBV_SMP:-2}

QEMU=(qemu-system-x86_64
    -accel "$ACCEL" -cpu max -m "$MEM" -smp "$SMP"
    -display none -vga none -monitor none -parallel none
    -serial "file:$RESULTS/console.log"
    -no-reboot
    -kernel "$KERNEL" -initrd "$INITRD"
    -append "console=ttyS0 quiet panic=-1 xdev_ibv_stage2=$HERE/vm-stage2.sh xdev_ibv_script=$SCRIPT xdev_ibv_results=$RESULTS xdev_ibv_timeout=$SCRIPT_TMO xdev_ibv_netdev=${XDEV_IBV_NETDEV:-lo}"
    -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
    -virtfs "local,path=$RESULTS,mount_tag=results,security_model=none,multidevs=remap"
    -nic none)

echo "ibv-vm: booting $KERNEL ($ACCEL, ${MEM} MiB, ${SMP} cpus), script $SCRIPT, timeout ${TIMEOUT}s" >&2
start=$(date +%s)
timeout --kill-after=10 "$TIMEOUT" "${QEMU[@]}" </dev/null >"$RESULTS/qemu.log" 2>&1
qrc=$?
elapsed=$(( $(date +%s) - start ))

fail() {
    echo "ibv-vm: FAILED: $*" >&2
    if [ -s "$RESULTS/qemu.log" ]; then
        echo "---- qemu output ($RESULTS/qemu.log) ----" >&2
        tail -n 20 "$RESULTS/qemu.log" >&2
    fi
    echo "---- tail of VM console ($RESULTS/console.log) ----" >&2
    tail -n 40 "$RESULTS/console.log" >&2 2>/dev/null || echo "(no console output)" >&2
    echo "----" >&2
    exit 1
}

if [ ! -f "$RESULTS/status" ]; then
    case $qrc in
        124|137) fail "VM did not finish within ${TIMEOUT}s (qemu killed)" ;;
    esac
    [ -f "$RESULTS/vm-error" ] && fail "VM setup failed: $(cat "$RESULTS/vm-error")"
    [ -f "$RESULTS/vm-uptime-at-stage2" ] || \
        fail "VM did not start (qemu exit $qrc after ${elapsed}s; no sign of the VM reaching its stage 2)"
    fail "VM wrote no status file (qemu exit $qrc after ${elapsed}s)"
fi

status=$(cat "$RESULTS/status")
case "$status" in ''|*[!0-9]*) fail "bad status file content '$status'" ;; esac
echo "ibv-vm: VM finished in ${elapsed}s (userspace at $(cat "$RESULTS/vm-uptime-at-stage2" 2>/dev/null)s of VM uptime), script status $status" >&2

nok=0; nfail=0
if [ -f "$RESULTS/results" ]; then
    while IFS= read -r line; do
        case "$line" in
            "ok "*)   nok=$((nok+1));     echo "$line" ;;
            "FAIL "*) nfail=$((nfail+1)); echo "$line" ;;
            "") ;;
            *) echo "ibv-vm: unrecognised results line: $line" >&2 ;;
        esac
    done < "$RESULTS/results"
    echo "ibv-vm: $nok ok, $nfail FAIL" >&2
fi
[ -s "$RESULTS/why" ] && head -n 12 "$RESULTS/why" | sed 's/^/ibv-vm: why: /' >&2

if [ "$status" -ne 0 ]; then
    [ "$status" -eq 124 ] && echo "ibv-vm: script timed out inside the VM" >&2
    echo "ibv-vm: script exited with status $status" >&2
    tail -n 40 "$RESULTS/console.log" >&2
    exit "$status"
fi
if [ "$nfail" -gt 0 ]; then
    echo "ibv-vm: $nfail test(s) FAILED" >&2
    exit 1
fi
exit 0
