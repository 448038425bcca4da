"""wakeup() and close() with calls blocked in other threads, a forked
child's exit, and the signal handlers the import keeps. Run with 2 ranks;
the last test closes the device."""
import atexit
import os
import subprocess
import sys
import threading
import time

import pytest
import xdev
from conftest import barrier


def blocked(fn):
    """Run fn in a thread; the thread's outcome once it ends."""
    out = {}

    def run():
        try:
            out["result"] = fn()
        except BaseException as e:  # reported to the test
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    return t, out


def woken(t, out, within=2.0):
    t.join(within)
    assert not t.is_alive(), "still blocked after the wakeup"
    e = out.get("error")
    assert isinstance(e, xdev.Error) and e.code == xdev.ERR_WOKEN, out


CALLS = {
    "recv": lambda dev: dev.recv(bytearray(4), dev.rank, 50),
    "probe": lambda dev: dev.probe(dev.rank, 51),
    "mprobe": lambda dev: dev.mprobe(dev.rank, 52),
    "recv_bytes": lambda dev: dev.recv_bytes(dev.rank, 53),
    "recv_obj": lambda dev: dev.recv_obj(dev.rank, 54),
    "peek": lambda dev: dev.peek(),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_wakeup_ends_a_blocked_call(dev, call):
    t, out = blocked(lambda: CALLS[call](dev))
    time.sleep(0.2)
    assert t.is_alive(), out
    dev.wakeup()
    woken(t, out)


def test_woken_receive_took_nothing(dev):
    t, out = blocked(lambda: dev.recv(bytearray(4), dev.rank, 55))
    time.sleep(0.2)
    dev.wakeup()
    woken(t, out)
    dev.send(b"next", dev.rank, 55)  # goes to the next receive
    got = bytearray(4)
    assert dev.recv(got, dev.rank, 55).count == 4 and got == b"next"


def test_woken_request_wait_leaves_it_active(dev):
    req = dev.irecv(bytearray(4), dev.rank, 56)
    t, out = blocked(req.wait)
    time.sleep(0.2)
    dev.wakeup()
    woken(t, out)
    assert req.active
    dev.send(b"done", dev.rank, 56)
    assert req.wait().count == 4


def test_forked_child_exit_leaves_the_device_alone(dev, ring):
    nxt, prev = ring
    pid = os.fork()
    if pid == 0:  # a child that exits normally: atexit runs, the GC runs
        try:
            atexit._run_exitfuncs()
        finally:
            os._exit(0)
    assert os.waitpid(pid, 0)[1] == 0
    dev.send(b"after", nxt, 58)
    got = bytearray(5)
    dev.recv(got, prev, 58)
    assert got == b"after"
    barrier(dev)


def test_import_keeps_faulthandler():
    code = "import faulthandler, ctypes, xdev; ctypes.string_at(0)"
    for flags in (["-X", "faulthandler"], []):
        run = subprocess.run([sys.executable] + flags + ["-c",
                             code if flags else "import faulthandler; faulthandler.enable(); "
                             + code], capture_output=True, text=True, timeout=60)
        assert "Fatal Python error: Segmentation fault" in run.stderr, run.stderr
        assert run.returncode == -11, run.returncode


def test_close_wakes_blocked_threads(dev):
    barrier(dev)
    req = dev.irecv(bytearray(4), dev.rank, 59)
    waiters = [blocked(lambda: dev.recv(bytearray(4), dev.rank, 60)), blocked(dev.peek),
               blocked(req.wait)]
    time.sleep(0.2)
    start = time.monotonic()
    dev.close()
    assert time.monotonic() - start < 2
    for t, out in waiters:
        woken(t, out)
    with pytest.raises(ValueError):
        dev.recv(bytearray(4), dev.rank, 60)
