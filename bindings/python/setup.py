"""Builds xdev._xdev for `pip install ./bindings/python` (pyproject.toml).

The extension links the xdev C library that pkg-config reports (xdev.pc,
installed by `meson install`; PKG_CONFIG_PATH and PKG_CONFIG_SYSROOT_DIR
point it elsewhere) and records its directory as the runtime search path,
so the module loads without LD_LIBRARY_PATH. Meson builds the same module
for the build tree (meson.build here); this file is only pip's way in.
"""
import shlex
import subprocess

from setuptools import Extension, setup


def pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args, "xdev"], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit("xdev: pkg-config cannot find xdev.pc (install the C library with "
                         "`meson install`, or set PKG_CONFIG_PATH): %s" % e) from e
    return shlex.split(out)


cflags, libs = pkg_config("--cflags"), pkg_config("--libs")
lib_dirs = [f[2:] for f in libs if f.startswith("-L")]
setup(ext_modules=[Extension(
    "xdev._xdev", ["xdev/_xdev.c"],
    include_dirs=[f[2:] for f in cflags if f.startswith("-I")],
    library_dirs=lib_dirs, runtime_library_dirs=lib_dirs,
    libraries=[f[2:] for f in libs if f.startswith("-l")],
)])
