"""Point-to-point calls, every buffer type, truncation, probes, peek,
cancel, dropped requests, threads and Ctrl-C."""
import gc
import os
import pathlib
import re
import signal
import threading
import time

import numpy as np
import pytest
import xdev
from conftest import barrier


def pattern(sender, n, salt=0):
    return bytes((sender * 31 + i * 7 + salt) & 0xFF for i in range(n))


def messages_sent(dev):
    s = dev.stats()
    return s["self_msgs"] + sum(t["msgs_sent"] for t in s["transports"].values())


def test_rank_and_size(dev):
    assert dev.size == int(os.environ["XDEV_SIZE"])
    assert 0 <= dev.rank < dev.size


@pytest.mark.parametrize("n", [0, 8, 70000, 3 << 20])
def test_every_buffer_type(dev, ring, n):
    nxt, prev = ring
    want = pattern(prev, n)
    sends = [pattern(dev.rank, n), bytearray(pattern(dev.rank, n)),
             memoryview(pattern(dev.rank, n)), np.frombuffer(pattern(dev.rank, n), np.uint8)]
    for tag, out in enumerate(sends):
        inbox = [bytearray(n), memoryview(bytearray(n)), np.zeros(n, np.uint8)]
        for buf in inbox:
            req = dev.irecv(buf, prev, tag)
            dev.send(out, nxt, tag)
            st = req.wait()
            assert (st.source, st.tag, st.count, st.msg_len, st.error) == (prev, tag, n, n, 0)
            assert bytes(buf) == want


def test_typed_numpy_and_offsets(dev, ring):
    nxt, prev = ring
    out = np.arange(1000, dtype=np.float64) * (dev.rank + 1)
    got = np.zeros(1000, np.float64)
    req = dev.irecv(got, prev, 5)
    dev.send(out, nxt, 5)
    assert req.wait().count == 8000
    assert np.array_equal(got, np.arange(1000, dtype=np.float64) * (prev + 1))
    # a slice of a bytearray through a memoryview: the offset is respected
    big = bytearray(b"\xee" * 100)
    req = dev.irecv(memoryview(big)[10:20], prev, 6)
    dev.send(pattern(dev.rank, 10), nxt, 6)
    req.wait()
    assert big[10:20] == pattern(prev, 10) and big[:10] == b"\xee" * 10 and big[20:] == b"\xee" * 80


def test_bad_buffers(dev, ring):
    nxt, prev = ring
    sent = messages_sent(dev)
    with pytest.raises(BufferError):
        dev.irecv(b"read-only", prev)
    with pytest.raises(BufferError):
        dev.isend(np.arange(10)[::2], nxt)  # not contiguous
    for not_a_buffer in ("text", [1, 2], 7, None):
        with pytest.raises(TypeError):
            dev.isend(not_a_buffer, nxt)
        with pytest.raises(TypeError):
            dev.irecv(not_a_buffer, prev)
    with pytest.raises(ValueError):
        dev.isend(b"x", dev.size)  # no such rank
    with pytest.raises(TypeError):
        dev.send(b"x")  # no destination
    with pytest.raises(TypeError):
        dev.send(b"x", nxt, 0, 0, 0)  # one too many
    with pytest.raises(TypeError):
        dev.send(b"x", nxt, colour=1)  # no such argument
    with pytest.raises(TypeError):
        dev.send(b"x", nxt, dest=nxt)  # given twice
    with pytest.raises(TypeError):
        dev.isend(b"x", nxt, tag=1.5)  # not an integer
    for big in (1 << 31, 1 << 40, 1 << 64):  # out of an int: a bad value, as -2 is
        with pytest.raises(ValueError):
            dev.isend(b"x", nxt, ctx=big)
        with pytest.raises(ValueError):
            dev.isend(b"x", big)
        with pytest.raises(ValueError):
            dev.peer_state(big)
    with pytest.raises(TypeError):
        dev.iprobe(prev, tg=1)
    assert messages_sent(dev) == sent  # refused before anything was posted


def test_truncation(dev, ring):
    nxt, prev = ring
    small = bytearray(b"\xee" * 12)
    req = dev.irecv(memoryview(small)[:4], prev, 7)
    dev.send(pattern(dev.rank, 100), nxt, 7)
    with pytest.raises(xdev.TruncationError) as e:
        req.wait()
    assert e.value.code == xdev.ERR_TRUNCATE
    st = e.value.status
    assert (st.source, st.count, st.msg_len) == (prev, 4, 100)
    assert small[:4] == pattern(prev, 4) and small[4:] == b"\xee" * 8
    assert not req.active
    with pytest.raises(ValueError):
        req.wait()  # reaped once, never twice


def test_blocking_forms_and_ssend(dev, ring):
    nxt, prev = ring
    got = bytearray(16)
    req = dev.irecv(got, prev, 8)
    barrier(dev)
    dev.ssend(pattern(dev.rank, 16), nxt, 8)  # matched already: returns
    req.wait()
    assert got == pattern(prev, 16)
    if dev.rank % 2 == 0:
        dev.send(b"ping", nxt, 9)
        dev.recv(got, prev, 9)
    else:
        dev.recv(got, prev, 9)
        dev.send(b"ping", nxt, 9)
    assert got[:4] == b"ping"


def test_probes(dev, ring):
    nxt, prev = ring
    assert dev.iprobe(prev, 10) is None
    barrier(dev)
    dev.send(pattern(dev.rank, 33), nxt, 10)
    st = dev.probe(prev, 10)
    assert (st.source, st.tag, st.count) == (prev, 10, 33)
    msg = dev.improbe(prev, 10)
    assert msg is not None and msg.status.msg_len == 33
    assert dev.iprobe(prev, 10) is None  # claimed: out of matching
    got = bytearray(33)
    msg.recv(got)
    assert got == pattern(prev, 33)
    with pytest.raises(ValueError):
        msg.recv(got)
    barrier(dev)


def test_peek_returns_the_posted_request(dev, ring):
    nxt, prev = ring
    assert dev.peek(0) is None
    req = dev.irecv(bytearray(8), prev, 11)
    dev.send(b"12345678", nxt, 11)
    seen = set()
    while req not in seen:  # our own send's request is private to send()
        seen.add(dev.peek())
    assert seen == {req}
    assert req.wait().count == 8


def test_every_error_code_is_exported():
    """xdev.ERR_X for every XDEV_ERR_X in the C header, with its value."""
    header = pathlib.Path(__file__).resolve().parents[3] / "include" / "xdev.h"
    codes = dict(re.findall(r"XDEV_(ERR_[A-Z_]+) = (-\d+),", header.read_text()))
    assert len(codes) >= 12
    for name, value in codes.items():
        assert getattr(xdev, name) == int(value), name


def test_peek_timeouts(dev):
    """-1 waits forever, as in C; below -1 is refused, changing nothing."""
    me = dev.rank
    req = dev.irecv(bytearray(4), me, 40)
    for below in (-2, -2**31 - 1, -2**40):  # past an int too: still a ValueError
        with pytest.raises(ValueError):
            dev.peek(below)
    assert dev.peek(0) is None
    dev.send(b"self", me, 40)
    assert dev.peek(-1) is req
    assert req.wait().count == 4


def test_keywords(dev, ring):
    nxt, prev = ring
    req = dev.irecv(buf=bytearray(3), tag=15, source=prev)
    dev.send(dest=nxt, buf=b"kw!", ctx=0, tag=15)
    st = req.wait()
    assert (st.source, st.tag, st.count) == (prev, 15, 3)
    dev.send_obj(obj=[1, "two"], dest=nxt, tag=16)
    assert dev.recv_obj(tag=16, source=prev)[0] == [1, "two"]
    dev.send(b"whole message", nxt, 17)
    data, st = dev.recv_bytes(prev, 17)
    assert data == b"whole message" and st.msg_len == 13


def test_peek_passes_over_a_blocking_call(dev, ring):
    """A blocking call's request is its own: peek never hands it out."""
    nxt, prev = ring
    got, done = bytearray(4), threading.Event()
    t = threading.Thread(target=lambda: (dev.recv(got, prev, 18), done.set()))
    t.start()
    barrier(dev)
    dev.send(b"mine", nxt, 18)
    assert done.wait(10)
    assert dev.peek(100) is None  # the receive completed, and was not handed out
    t.join()
    assert got == b"mine"


def test_cancel(dev, ring):
    nxt, prev = ring
    req = dev.irecv(bytearray(8), prev, 12)
    assert req.cancel() is True
    with pytest.raises(xdev.Error) as e:
        req.wait()
    assert e.value.code == xdev.ERR_CANCELED
    # the cancelled receive took nothing: this one gets the message (sent
    # only once every rank has cancelled, or it could match the first)
    barrier(dev)
    dev.send(b"after", nxt, 12)
    got = bytearray(5)
    dev.recv(got, prev, 12)
    assert got == b"after"


def test_dropped_request_stays_alive(dev, ring):
    nxt, prev = ring
    dropped = bytearray(1)
    req = dev.irecv(dropped, prev, 13)
    del req
    gc.collect()
    barrier(dev)
    dev.send(b"A", nxt, 13)  # goes to the dropped request's buffer
    dev.send(b"B", nxt, 13)
    got = bytearray(1)
    dev.recv(got, prev, 13)
    assert got == b"B"
    assert dropped == b"A"  # it stayed alive and received


def test_threads_share_a_device(dev, ring):
    nxt, prev = ring
    errors = []

    def worker(t):
        try:
            for i in range(50):
                got = bytearray(64)
                req = dev.irecv(got, prev, 100 + t)
                dev.send(pattern(dev.rank, 64, t + i), nxt, 100 + t)
                req.wait()
                assert got == pattern(prev, 64, t + i)
        except Exception as e:  # reported below, on the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_ctrl_c_interrupts_a_blocked_receive(dev, ring):
    nxt, prev = ring
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        dev.recv(bytearray(4), prev, 14)  # nobody sends it yet
    assert time.monotonic() - start < 2
    barrier(dev)
    # the interrupted receive was cancelled: it took nothing
    dev.send(b"late", nxt, 14)
    got = bytearray(4)
    dev.recv(got, prev, 14)
    assert got == b"late"


def test_ctrl_c_in_wait_leaves_a_begun_send_active(dev, ring):
    """Ctrl-C in Request.wait on an issend nobody has matched raises at once:
    the send has begun, so it cannot be cancelled, and the Request keeps it
    (and its buffer) active; waiting again completes it once matched."""
    nxt, prev = ring
    req = dev.issend(b"sync", nxt, 15)
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        req.wait()
    assert time.monotonic() - start < 2
    assert req.active
    barrier(dev)  # every rank's wait was interrupted before anyone receives
    got = bytearray(4)
    dev.recv(got, prev, 15)
    assert req.wait().count == 4 and got == b"sync"
    barrier(dev)


def test_stats_and_peer_state(dev, ring):
    nxt, prev = ring
    s = dev.stats()
    assert sum(t["msgs_sent"] for t in s["transports"].values()) > 0
    assert dev.peer_state(prev) == xdev.PEER_ALIVE
    assert dev.peer_state(dev.rank) == xdev.PEER_ALIVE
    with pytest.raises(ValueError):
        dev.peer_state(dev.size)
    barrier(dev)
