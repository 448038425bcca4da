"""Every rank of the job runs the same tests in the same order; a test
talks to the ring neighbours (next sends to, prev receives from)."""
import pytest
import xdev


@pytest.fixture(scope="session")
def dev():
    d = xdev.Device()
    yield d
    d.close()


@pytest.fixture
def ring(dev):
    return (dev.rank + 1) % dev.size, (dev.rank - 1) % dev.size


def barrier(dev, ctx=99):
    """Everyone reaches this point before anyone leaves it."""
    for r in range(dev.size):
        if r != dev.rank:
            dev.send(b"", r, 0, ctx)
    for r in range(dev.size):
        if r != dev.rank:
            dev.recv(bytearray(0), r, 0, ctx)
