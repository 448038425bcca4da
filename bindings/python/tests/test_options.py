"""Device(options=...): transport options for one device, over the
environment's. meson runs this under `xdevrun -n 2 --transport shm` with
XDEV_SHM_CMA_MODE=sideways in the environment, a value shm refuses: a
plain Device() fails there, and only options can fix it."""
import os

import pytest
import xdev

ARG_ERROR = "^xdev: invalid argument"  # xdev_strerror(XDEV_ERR_ARG)


def test_run_as_meson_says():
    assert os.environ.get("XDEV_SHM_CMA_MODE") == "sideways"
    assert os.environ.get("XDEV_TRANSPORT") == "shm"
    assert int(os.environ["XDEV_SIZE"]) == 2


@pytest.mark.parametrize("options", [
    {"XDEV_NO_SUCH": "1"},                                    # no such variable
    {"XDEV_SHM_RING": "banana"},                              # not a size
    {"XDEV_SHM_CMA_MODE": "sideways"},                        # not one of read|write
    {"XDEV_TRANSPORT": "shm"},                                # a variable, not an option
    {"XDEV_SHM_CMA_MODE": "write", "XDEV_NO_SUCH": "1"},      # one bad among good ones
    {"XDEV_SHM_CMA_MODE": "write", "XDEV_SHM_RING": "banana"},
])
def test_bad_options_are_xdev_err_arg(options):
    # xdev_init's XDEV_ERR_ARG, before any transport opens: the environment's
    # bad XDEV_SHM_CMA_MODE would be xdev.Error (XDEV_ERR_INIT) instead.
    with pytest.raises(ValueError, match=ARG_ERROR) as e:
        xdev.Device(options=options)
    assert not isinstance(e.value, xdev.Error)


@pytest.mark.parametrize("options, error", [
    (["XDEV_SHM_RING=4m"], TypeError),          # not a mapping
    ("XDEV_SHM_RING=4m", TypeError),
    ({1: "4m"}, TypeError),                     # the name is a str
    ({"XDEV_SHM_RING": 4.0}, TypeError),        # the value a str or an int
    ({"XDEV_SHM_RING": None}, TypeError),
    ({"XDEV_SHM_RING=4m": "x"}, ValueError),    # no '=' in a name
    ({"": "x"}, ValueError),
    ({"XDEV_SHM_RING": "4m\0"}, ValueError),    # no NUL anywhere
])
def test_options_checked_by_the_binding(options, error):
    with pytest.raises(error, match="^xdev: ") as e:
        xdev.Device(options=options)
    assert not isinstance(e.value, xdev.Error)


def test_positional_argument_refused():
    with pytest.raises(TypeError):
        xdev.Device({"XDEV_SHM_CMA_MODE": "write"})


@pytest.mark.parametrize("options", [None, {}])
def test_environment_refused(options):
    # None and {} are Device(): the environment's value, refused when shm opens
    with pytest.raises(xdev.Error) as e:
        xdev.Device(options=options)
    assert e.value.code == xdev.ERR_INIT


def test_option_overrides_environment():
    # CMA_MIN as an int (65536): the 1 MiB message below is a single-copy
    # rendezvous, pushed by the sender (write), where the kernel allows it.
    with xdev.Device(options={"XDEV_SHM_CMA_MODE": "write", "XDEV_SHM_CMA_MIN": 65536}) as dev:
        assert dev.size == 2
        peer = 1 - dev.rank
        for n in (5, 1 << 20):
            out = bytes([dev.rank + 1]) * n
            buf = bytearray(n)
            req = dev.isend(out, peer, 7)
            st = dev.recv(buf, peer, 7)
            req.wait()
            assert st.source == peer and st.count == n
            assert buf == bytes([peer + 1]) * n
        assert dev.stats()["transports"]["shm"]
    # the options were the device's alone: the environment is as it was
    assert os.environ["XDEV_SHM_CMA_MODE"] == "sideways"
    with pytest.raises(xdev.Error) as e:
        xdev.Device()
    assert e.value.code == xdev.ERR_INIT
