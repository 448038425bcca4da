"""asyncio: `await dev.arecv(...)` and `await request` run on the loop,
driven by the device's fd, while other tasks keep running."""
import asyncio
import time

import xdev
from conftest import barrier


def test_await_receive_while_the_loop_runs(dev, ring):
    nxt, prev = ring

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.005)
                ticks += 1

        t = asyncio.create_task(ticker())
        got = bytearray(6)
        if dev.rank == 0:
            st = await dev.arecv(got, prev, 50)
            await dev.isend(b"second", nxt, 51)
        else:
            await asyncio.sleep(0.3)  # the receiver waits meanwhile
            await dev.isend(b"first!", nxt, 50)
            st = await dev.arecv(got, prev, 51)
        t.cancel()
        return st, got, ticks

    start = time.monotonic()
    st, got, ticks = asyncio.run(main())
    assert st.source == prev and st.count == 6
    assert got == (b"first!" if dev.rank == 0 else b"second")
    if dev.rank == 0:
        assert ticks >= 20  # the loop was not blocked while it waited
    assert time.monotonic() - start < 5
    barrier(dev)


def test_a_cancelled_arecv_takes_no_message(dev, ring):
    """A timed-out (cancelled) arecv cancels its receive: the message sent
    afterwards goes to the next receive, not into the abandoned buffer."""
    nxt, prev = ring
    abandoned, got = bytearray(5), bytearray(5)

    async def timed_out():
        try:
            await asyncio.wait_for(dev.arecv(abandoned, prev, 52), 0.05)
        except asyncio.TimeoutError:
            return True
        return False

    assert asyncio.run(timed_out())
    barrier(dev)
    dev.send(b"late!", nxt, 52)
    req = dev.irecv(got, prev, 52)
    deadline = time.monotonic() + 5
    st = req.test()
    while st is None and time.monotonic() < deadline:
        time.sleep(0.001)
        st = req.test()
    if st is None:
        req.cancel()
    assert st is not None and got == b"late!", "the message went to the cancelled arecv"
    assert abandoned == bytearray(5)
    barrier(dev)
