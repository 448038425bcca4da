"""Pickled objects: send_obj/recv_obj, and threads racing for them."""
import threading

import numpy as np
import xdev
from conftest import barrier


def test_objects_round_trip(dev, ring):
    nxt, prev = ring
    things = [None, 42, "text", {"a": [1, 2.5, (3, b"x")]}, np.arange(10),
              b"\x00" * (1 << 20)]
    for i, obj in enumerate(things):
        # every rank sends first: a blocking send of the 1 MiB one
        # (rendezvous) would wait for a receive its peer has not posted
        req = dev.isend_obj((dev.rank, obj), nxt, 20 + i)
        (sender, got), st = dev.recv_obj(prev, 20 + i)
        req.wait()
        assert sender == prev and st.source == prev
        if isinstance(obj, np.ndarray):
            assert np.array_equal(got, obj)
        else:
            assert got == obj


def test_threads_racing_for_objects(dev, ring):
    nxt, prev = ring
    n, takers = 200, 4
    got, lock = [], threading.Lock()

    def take():
        for _ in range(n // takers):
            obj, _ = dev.recv_obj(xdev.ANY_SOURCE, 30)
            with lock:
                got.append(obj)

    threads = [threading.Thread(target=take) for _ in range(takers)]
    for t in threads:
        t.start()
    for i in range(n):
        dev.send_obj(i, nxt, 30)
    for t in threads:
        t.join()
    assert sorted(got) == list(range(n))  # each exactly once
    barrier(dev)
