"""With XDEV_WILDCARD_FAILS=1, a blocking wildcard probe that a death ends
fails with PeerError (ERR_PEER_PENDING), its Status as called, as
xdev_probe and xdev_mprobe do in C. Run with 3 ranks."""
import os
import time

import pytest
import xdev
from conftest import barrier

VICTIM = 2
NEVER = 70  # a tag nobody sends
LIVE = 72


def test_a_death_fails_the_blocking_wildcard_probes_under_way(dev):
    assert dev.size == 3
    barrier(dev)
    if dev.rank == VICTIM:
        # Die only once both survivors have said they are about to probe:
        # a survivor notices a death only inside a call of its own, so
        # each is in its probe, begun, when it notices this one.
        for r in range(2):
            dev.recv(bytearray(1), r, 71)
        time.sleep(0.2)
        os._exit(0)
    dev.send(b"p", VICTIM, 71)
    probe = dev.probe if dev.rank == 0 else dev.mprobe
    with pytest.raises(xdev.PeerError) as e:
        probe(xdev.ANY_SOURCE, NEVER)
    assert e.value.code == xdev.ERR_PEER_PENDING
    st = e.value.status
    assert (st.source, st.tag, st.error, st.count) == \
        (xdev.ANY_SOURCE, NEVER, xdev.ERR_PEER_PENDING, 0)
    assert dev.peer_state(VICTIM) == xdev.PEER_DEAD
    # the death is known now: a probe begun after it is not failed by it,
    # and finds what a survivor sends
    other = 1 - dev.rank
    dev.send(b"live", other, LIVE)
    found = probe(xdev.ANY_SOURCE, LIVE)
    got = bytearray(4)
    if dev.rank == 0:
        assert (found.source, found.count) == (other, 4)
        dev.recv(got, other, LIVE)
    else:
        assert (found.status.source, found.status.count) == (other, 4)
        found.recv(got)
    assert got == b"live"
