# Shared helpers for the ibv VM harness (sourced, not executed).
# shellcheck shell=sh

# ibv_kernel_version: print the version of the newest kernel that has both
# /boot/vmlinuz-VER and /lib/modules/VER/modules.dep (i.e. the one that the
# linux-image-amd64 package installed; the container's running kernel has
# no modules here and is never used).
ibv_kernel_version() {
    _best=""
    for _k in /boot/vmlinuz-*; do
        [ -e "$_k" ] || continue
        _v=${_k#/boot/vmlinuz-}
        [ -f "/lib/modules/$_v/modules.dep" ] || continue
        _best="$_best$_v
"
    done
    printf '%s' "$_best" | sort -V | tail -n 1
}

ibv_die() {
    echo "ibv-vm: ERROR: $*" >&2
    exit 1
}
