"""Pass a token around the ring of ranks.

    build/src/tools/xdevrun -n 4 python3 bindings/python/examples/hello.py
(with PYTHONPATH=build/bindings/python, or after pip install ./bindings/python)
"""
import xdev

with xdev.Device() as dev:
    nxt, prev = (dev.rank + 1) % dev.size, (dev.rank - 1) % dev.size
    token = bytearray(8)
    if dev.rank == 0:
        dev.send(int(0).to_bytes(8, "little"), nxt)
    dev.recv(token, prev)
    value = int.from_bytes(token, "little")
    if dev.rank != 0:
        dev.send((value + 1).to_bytes(8, "little"), nxt)
    else:
        assert value == dev.size - 1, value
        print(f"token went around {dev.size} ranks and came back as {value}")
