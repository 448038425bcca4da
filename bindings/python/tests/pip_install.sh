#!/usr/bin/env bash
# pip_install.sh BUILD_DIR XDEVRUN PYTHON: `pip install ./bindings/python`
# as a user does it, offline: the C library installed (meson install, to a
# scratch root), a venv of PYTHON, pip building the module from a copy of
# this directory; then the example runs on two ranks with the venv's
# python and nothing on PYTHONPATH, and must import the venv's module.
set -euo pipefail
build=$1 xdevrun=$(realpath -e "$2") python=$3
here=$(dirname "$(realpath -e "${BASH_SOURCE[0]}")")/..
tmp=$(mktemp -d "${TMPDIR:-/tmp}/xdev-pip.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
meson install -C "$build" --no-rebuild --quiet --destdir "$tmp/root" >/dev/null
pc=$(dirname "$(find "$tmp/root" -name xdev.pc -print -quit)")
# the venv sees the interpreter's setuptools and wheel (Debian's packages)
"$python" -m venv --system-site-packages "$tmp/venv"
cp -r "$here" "$tmp/src"
rm -rf "$tmp/src/build" "$tmp/src/xdev.egg-info"
PKG_CONFIG_PATH=$pc PKG_CONFIG_SYSROOT_DIR=$tmp/root \
    "$tmp/venv/bin/python" -m pip install --quiet --no-index --no-build-isolation "$tmp/src"
unset PYTHONPATH
cd "$tmp"
where=$("$tmp/venv/bin/python" -c 'import xdev, os; print(os.path.dirname(xdev._xdev.__file__))')
case "$where" in
"$tmp/venv/"*) ;;
*) echo "imported xdev from $where, not from the venv"; exit 1 ;;
esac
out=$("$xdevrun" -n 2 "$tmp/venv/bin/python" "$here/examples/hello.py")
echo "$out"
[ "$out" = "token went around 2 ranks and came back as 1" ]
