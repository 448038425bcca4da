#!/usr/bin/env bash
# pkgconfig.sh BUILD_DIR SOURCE_DIR XDEVRUN - what `meson install` ships is
# enough to build against: install into a scratch DESTDIR, build
# examples/hello.c with nothing but `pkg-config --cflags --libs xdev`, and
# a program calling libxdev_coll with `pkg-config ... xdev_coll`, and run
# the first under xdevrun with the installed library.
set -euo pipefail
build=$1 src=$2 xdevrun=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/xdev-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root

meson install -C "$build" --destdir "$root" --no-rebuild --quiet
pc=$(find "$root" -name xdev.pc | head -n1)
[ -n "$pc" ] || { echo "FAIL: no xdev.pc installed"; exit 1; }
for f in xdev.h xdev_coll.h; do
    [ -n "$(find "$root" -name "$f")" ] || { echo "FAIL: $f not installed"; exit 1; }
done
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$root
libdir=$(dirname "$(dirname "$pc")")
echo "xdev: $(pkg-config --cflags --libs xdev)"
echo "xdev_coll: $(pkg-config --cflags --libs xdev_coll)"

# A sanitizer build's library wants its runtime loaded first. (grep reads
# all of ldd's output: with -q it may stop first, and under pipefail the
# SIGPIPE ldd then gets would make the test fail as if there were none.)
san=()
if ldd "$libdir/libxdev.so" | grep libasan >/dev/null; then san=(-fsanitize=address,undefined); fi

# shellcheck disable=SC2046 # pkg-config's words are meant to split
cc "${san[@]}" -o "$tmp/hello" "$src/examples/hello.c" $(pkg-config --cflags --libs xdev)
cat >"$tmp/coll.c" <<'C'
#include <xdev_coll.h>
int main(void) { return xdev_coll_barrier(0) == XDEV_ERR_ARG ? 0 : 1; }
C
# shellcheck disable=SC2046
cc "${san[@]}" -o "$tmp/coll" "$tmp/coll.c" $(pkg-config --cflags --libs xdev_coll)

export LD_LIBRARY_PATH=$libdir
"$tmp/coll" || { echo "FAIL: the libxdev_coll program"; exit 1; }
out=$("$xdevrun" -n 3 "$tmp/hello")
echo "$out"
case $out in
*"came back as 2"*) echo "PASS: built and ran from the installed files alone" ;;
*) echo "FAIL: hello built from the installed files did not pass its token"; exit 1 ;;
esac
