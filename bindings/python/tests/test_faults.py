"""A rank that dies: the others' operations that involve it fail with
PeerError, and nothing else is disturbed. Run with 3 ranks."""
import os

import pytest
import xdev
from conftest import barrier


def test_a_dead_peer_fails_only_what_involves_it(dev):
    assert dev.size == 3
    victim = 2
    barrier(dev)
    if dev.rank == victim:
        os._exit(0)  # gone without a word: no finalize
    other = 1 - dev.rank
    with pytest.raises(xdev.PeerError) as e:
        dev.recv(bytearray(4), victim, 40)
    assert e.value.code == xdev.ERR_PEER
    assert dev.peer_state(victim) == xdev.PEER_DEAD
    # the blocking calls that name it fail at once too, as in C, with the
    # Status xdev gives: the dead rank, no tag, error ERR_PEER
    for call in (lambda: dev.probe(victim, 40), lambda: dev.mprobe(victim, 40),
                 lambda: dev.recv_bytes(victim, 40), lambda: dev.recv_obj(victim, 40)):
        with pytest.raises(xdev.PeerError) as e:
            call()
        st = e.value.status
        assert st is not None
        assert (st.source, st.tag, st.error, st.count) == (victim, xdev.ANY_TAG, xdev.ERR_PEER, 0)
    assert dev.improbe(victim, 40) is None  # the nonblocking ones find nothing
    # the survivors still talk
    dev.send(b"live", other, 41)
    got = bytearray(4)
    dev.recv(got, other, 41)
    assert got == b"live"
