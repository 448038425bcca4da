#!/bin/sh
# Build the initramfs for the ibv test VM:  mkinitramfs.sh OUTDIR
#
# Writes OUTDIR/initramfs.cpio.gz and OUTDIR/kernel-version.  The image holds
# only a static busybox, the virtio + 9p kernel modules (from the installed
# linux-image-amd64 kernel, in modules.dep order) and /init, which mounts the
# host root read-only over 9p and switch_roots into it to run
# test/ibv/vm-stage2.sh (named on the kernel command line by vm-run.sh).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"

[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
OUT=$1
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

BUSYBOX=/bin/busybox
[ -x "$BUSYBOX" ] || ibv_die "no $BUSYBOX (install busybox-static: scripts/install-deps.sh)"
if ! file_out=$(LC_ALL=C file -L "$BUSYBOX" 2>/dev/null) || ! echo "$file_out" | grep -q 'statically linked'; then
    # 'file' may be absent; fall back to checking for an ELF interpreter.
    if command -v readelf >/dev/null 2>&1 && readelf -l "$BUSYBOX" | grep -q 'program interpreter'; then
        ibv_die "$BUSYBOX is not statically linked (install busybox-static)"
    fi
fi

KVER=$(ibv_kernel_version)
[ -n "$KVER" ] || ibv_die "no /boot/vmlinuz-VER with matching /lib/modules/VER (install linux-image-amd64: scripts/install-deps.sh)"
MODDIR=/lib/modules/$KVER

# Wanted top-level modules; dependencies are pulled from modules.dep.
WANT="virtio_pci 9pnet_virtio 9p"

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/ibv-initramfs.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT INT TERM

# Resolve dependency order: emit deps (recursively) before the module.
ORDER="$STAGE/order"
: > "$ORDER"
resolve() {
    local _name _line _path _dep _dn
    _name=$1
    _line=$(grep -E "(^|/)${_name}\.ko(\.xz|\.zst|\.gz)?:" "$MODDIR/modules.dep" | head -n 1 || true)
    if [ -z "$_line" ]; then
        if grep -qE "/${_name}\.ko" "$MODDIR/modules.builtin" 2>/dev/null; then
            return 0   # built into the kernel
        fi
        ibv_die "module $_name not found in $MODDIR/modules.dep"
    fi
    _path=${_line%%:*}
    grep -qxF "$_path" "$ORDER" && return 0
    for _dep in ${_line#*:}; do
        _dn=$(basename "$_dep"); _dn=${_dn%%.ko*}
        resolve "$_dn"
    done
    grep -qxF "$_path" "$ORDER" || echo "$_path" >> "$ORDER"
}
for m in $WANT; do resolve "$m"; done

ROOT="$STAGE/root"
mkdir -p "$ROOT/bin" "$ROOT/dev" "$ROOT/proc" "$ROOT/sys" "$ROOT/newroot" "$ROOT/lib/modules"
cp "$BUSYBOX" "$ROOT/bin/busybox"
# A console node for the kernel to open before /init runs (harmless if it fails;
# /init re-opens the console after mounting devtmpfs).
mknod -m 600 "$ROOT/dev/console" c 5 1 2>/dev/null || true
mknod -m 666 "$ROOT/dev/null" c 1 3 2>/dev/null || true

: > "$ROOT/lib/modules/load-order"
while read -r rel; do
    base=$(basename "$rel")
    case "$base" in
        *.ko.xz)  xz -dc "$MODDIR/$rel" > "$ROOT/lib/modules/${base%.xz}"; base=${base%.xz} ;;
        *.ko.zst) zstd -qdc "$MODDIR/$rel" > "$ROOT/lib/modules/${base%.zst}"; base=${base%.zst} ;;
        *.ko.gz)  gzip -dc "$MODDIR/$rel" > "$ROOT/lib/modules/${base%.gz}"; base=${base%.gz} ;;
        *.ko)     cp "$MODDIR/$rel" "$ROOT/lib/modules/$base" ;;
        *) ibv_die "unexpected module file $rel" ;;
    esac
    echo "$base" >> "$ROOT/lib/modules/load-order"
done < "$ORDER"

cat > "$ROOT/init" <<'INIT'
#!/bin/busybox sh
# ibv test VM stage 1 (initramfs).  Any failure powers the VM off; the host
# notices the missing status file and fails loudly.
/bin/busybox mkdir -p /usr/bin /sbin /usr/sbin
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t devtmpfs devtmpfs /dev
exec 0</dev/console 1>/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys

die() {
    echo "ibv-vm-init: FATAL: $*"
    echo o > /proc/sysrq-trigger
    sleep 30
    exit 1
}

arg() {  # arg NAME -> value of NAME=... on the kernel command line
    for w in $(cat /proc/cmdline); do
        case "$w" in "$1"=*) echo "${w#*=}"; return 0 ;; esac
    done
    return 1
}

echo "ibv-vm-init: kernel $(uname -r), loading virtio/9p modules"
while read -r m; do
    insmod "/lib/modules/$m" || die "insmod $m failed"
done < /lib/modules/load-order

# 9p needs the virtio-pci device probed; it normally is by now, but be patient.
i=0
while ! mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot /newroot 2>/dev/null; do
    i=$((i+1)); [ $i -lt 50 ] || die "cannot mount host root (9p tag hostroot)"
    sleep 0.1
done

STAGE2=$(arg xdev_ibv_stage2) || die "no xdev_ibv_stage2= on the kernel command line"
[ -f "/newroot$STAGE2" ] || die "stage 2 script $STAGE2 not visible through the 9p root"

for d in proc sys dev; do mount --move /$d /newroot/$d || die "move /$d"; done
mount -t tmpfs -o mode=755 tmpfs /newroot/run || die "tmpfs /run"
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts devpts /newroot/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm

exec switch_root /newroot /bin/sh "$STAGE2"
die "switch_root failed"
INIT
chmod 755 "$ROOT/init"

if command -v cpio >/dev/null 2>&1; then CPIO="cpio --quiet"; else CPIO="$BUSYBOX cpio"; fi
# shellcheck disable=SC2086
(cd "$ROOT" && find . | LC_ALL=C sort | $CPIO -o -H newc) | gzip -9 > "$OUT/initramfs.cpio.gz.tmp"
mv "$OUT/initramfs.cpio.gz.tmp" "$OUT/initramfs.cpio.gz"
echo "$KVER" > "$OUT/kernel-version"
echo "mkinitramfs: $OUT/initramfs.cpio.gz for kernel $KVER ($(wc -l < "$ROOT/lib/modules/load-order") modules: $(tr '\n' ' ' < "$ROOT/lib/modules/load-order"))"
