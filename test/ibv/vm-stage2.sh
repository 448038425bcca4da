#!/bin/sh
# ibv test VM stage 2: runs as PID 1 inside the VM after the initramfs has
# switch_rooted into the host's root (read-only 9p).  Started by the
# initramfs /init (see mkinitramfs.sh); parameters come from the kernel
# command line written by vm-run.sh:
#   xdev_ibv_script=PATH   host path of the script to run
#   xdev_ibv_results=PATH  host path of RESULTS_DIR; the writable 9p share
#                          'results' is mounted over the same path in the VM
#   xdev_ibv_timeout=S     limit for the script (seconds)
#   xdev_ibv_netdev=DEV    netdev for rxe0 (default lo)
# Writes RESULTS_DIR/status (the script's exit status) on success of the
# setup, RESULTS_DIR/vm-error (and no status) if the setup failed; then
# powers the VM off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp LANG=C LC_ALL=C TMPDIR=/tmp

arg() {
    for w in $(cat /proc/cmdline); do
        case "$w" in "$1"=*) echo "${w#*=}"; return 0 ;; esac
    done
    return 1
}

off() {
    sync
    echo o > /proc/sysrq-trigger
    # Spin in the shell: as the power-off resets the 9p device, exec'ing
    # anything from the host root fails, and PID 1 must not exit (panic).
    while :; do :; done
}

RESULTS_OK=0
fatal() {
    echo "ibv-vm: FATAL: $*"
    if [ "$RESULTS_OK" = 1 ]; then
        echo "$*" > "$RESULTS/vm-error"
    fi
    off
}

SCRIPT=$(arg xdev_ibv_script) || fatal "no xdev_ibv_script= on the kernel command line"
RESULTS=$(arg xdev_ibv_results) || fatal "no xdev_ibv_results= on the kernel command line"
TMO=$(arg xdev_ibv_timeout) || TMO=240
NETDEV=$(arg xdev_ibv_netdev) || NETDEV=lo

# A writable /tmp that shows the host's (a checkout or build dir there,
# CI's say) at its own paths: an overlay, whose writes stay in the VM.
# Binding each directory of the host's /tmp took 62 s of a boot with 226
# of them (three programs read over 9p, emulated, for each).
modprobe overlay || fatal "modprobe overlay failed"
mkdir -p /run/tmp/upper /run/tmp/work && chmod 1777 /run/tmp/upper
mount -t overlay -o lowerdir=/tmp,upperdir=/run/tmp/upper,workdir=/run/tmp/work overlay /tmp \
    || fatal "cannot mount the writable /tmp"
mkdir -p "$RESULTS" 2>/dev/null
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 results "$RESULTS" \
    || fatal "cannot mount the results share at $RESULTS"
RESULTS_OK=1
echo "ibv-vm: userspace up at $(cut -d' ' -f1 /proc/uptime)s (kernel $(uname -r))"
echo "$(cut -d' ' -f1 /proc/uptime)" > "$RESULTS/vm-uptime-at-stage2"

hostname ibv-vm 2>/dev/null

modprobe rdma_rxe || fatal "modprobe rdma_rxe failed"
ip link set lo up || fatal "ip link set lo up failed"
rdma link add rxe0 type rxe netdev "$NETDEV" || fatal "rdma link add rxe0 type rxe netdev $NETDEV failed"
i=0
while [ ! -e /sys/class/infiniband/rxe0 ] || ! ls /dev/infiniband/uverbs* >/dev/null 2>&1; do
    i=$((i+1)); [ $i -lt 100 ] || fatal "rxe0 or /dev/infiniband/uverbs* did not appear"
    sleep 0.1
done
ulimit -l unlimited 2>/dev/null
echo "ibv-vm: rxe0 ready at $(cut -d' ' -f1 /proc/uptime)s: $(rdma link show rxe0/1 2>&1)"
cat /sys/class/infiniband/rxe0/ports/1/gids/0 /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null \
    | sed 's/^/ibv-vm: gid: /'

[ -f "$SCRIPT" ] || fatal "script $SCRIPT not visible in the VM"
cd /tmp || fatal "no /tmp"
echo "ibv-vm: running $SCRIPT $RESULTS (limit ${TMO}s)"
if [ -x "$SCRIPT" ]; then
    timeout -k 10 "$TMO" "$SCRIPT" "$RESULTS"
else
    timeout -k 10 "$TMO" /bin/sh "$SCRIPT" "$RESULTS"
fi
st=$?
[ $st -eq 124 ] && echo "ibv-vm: script timed out after ${TMO}s"
echo "ibv-vm: script exited with status $st at $(cut -d' ' -f1 /proc/uptime)s"
echo "$st" > "$RESULTS/status.tmp" && mv "$RESULTS/status.tmp" "$RESULTS/status"
off
