"""OSU-style ping-pong and bandwidth from Python, with xdev or with mpi4py,
measured the way xdev-bench measures (src/tools/bench_method.h), for
test/bench/compare-bindings.sh.

    xdevrun -n 2 python3 bench.py --api xdev --buf bytearray
    mpirun -n 2 python3 bench.py --api mpi4py --buf numpy

--buf: bytearray or numpy (buffer calls: send/recv, isend/irecv), objects
(pickled: send_obj/recv_obj, mpi4py's lowercase send/recv). Prints CSV
lines test,size,iters,value,unit (us for latency, MB/s for bw) on rank 0.
"""
import argparse
import sys
import time

ACK_BYTES = 4


def defaults(test, size):
    """xdev-bench's iteration counts: (iters, warmup)."""
    small = size <= 8192
    if test == "latency":
        return (10000, 1000) if small else (1000, 100)
    return (1000, 100) if small else (20, 2)


class XdevApi:
    def __init__(self):
        import xdev
        self.dev = xdev.Device()
        self.rank = self.dev.rank
        self.send, self.recv = self.dev.send, self.dev.recv
        self.isend, self.irecv = self.dev.isend, self.dev.irecv
        self.send_obj = self.dev.send_obj
        self.recv_obj = lambda src: self.dev.recv_obj(src)[0]

    def waitall(self, reqs):
        for r in reqs:
            r.wait()

    def close(self):
        self.dev.close()


class Mpi4pyApi:
    def __init__(self):
        from mpi4py import MPI
        self.MPI, self.comm = MPI, MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.send = lambda buf, dst: self.comm.Send(buf, dst, 0)
        self.recv = lambda buf, src: self.comm.Recv(buf, src, 0)
        self.isend = lambda buf, dst: self.comm.Isend(buf, dst, 0)
        self.irecv = lambda buf, src: self.comm.Irecv(buf, src, 0)
        self.send_obj = lambda obj, dst: self.comm.send(obj, dst, 0)
        self.recv_obj = lambda src: self.comm.recv(source=src, tag=0)

    def waitall(self, reqs):
        self.MPI.Request.Waitall(reqs)

    def close(self):
        pass


def make_buffer(kind, size):
    if kind == "numpy":
        import numpy as np
        return np.zeros(size, dtype=np.uint8)
    return bytearray(size)


def latency(api, kind, size, iters, warmup):
    peer = 1 - api.rank
    if kind == "objects":
        obj = b"x" * size
        send, recv = (lambda: api.send_obj(obj, peer)), (lambda: api.recv_obj(peer))
    else:
        sbuf, rbuf = make_buffer(kind, size), make_buffer(kind, size)
        send, recv = (lambda: api.send(sbuf, peer)), (lambda: api.recv(rbuf, peer))
    for i in range(warmup + iters):
        if i == warmup:
            start = time.perf_counter()
        if api.rank == 0:
            send()
            recv()
        else:
            recv()
            send()
    return (time.perf_counter() - start) * 1e6 / (2 * iters)


def bandwidth(api, kind, size, iters, warmup, window):
    peer = 1 - api.rank
    bufs = [make_buffer(kind, size) for _ in range(window)]
    ack = make_buffer(kind, ACK_BYTES)
    for i in range(warmup + iters):
        if i == warmup:
            start = time.perf_counter()
        if api.rank == 0:
            api.waitall([api.isend(b, peer) for b in bufs])
            api.recv(ack, peer)
        else:
            api.waitall([api.irecv(b, peer) for b in bufs])
            api.send(ack, peer)
    return size * window * iters / (time.perf_counter() - start) / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--api", choices=["xdev", "mpi4py"], default="xdev")
    ap.add_argument("--buf", choices=["bytearray", "numpy", "objects"], default="bytearray")
    ap.add_argument("--tests", default="latency,bw")
    ap.add_argument("--sizes", default="8,4194304")
    ap.add_argument("--window", type=int, default=64)
    args = ap.parse_args()
    api = XdevApi() if args.api == "xdev" else Mpi4pyApi()
    if api.rank == 0:
        print("test,size,iters,value,unit")
    for test in args.tests.split(","):
        for size in (int(s) for s in args.sizes.split(",")):
            iters, warmup = defaults(test, size)
            if test == "latency":
                value, unit = latency(api, args.buf, size, iters, warmup), "us"
            elif args.buf == "objects":
                continue  # objects are measured by their round trip only
            else:
                value, unit = bandwidth(api, args.buf, size, iters, warmup, args.window), "MB/s"
            if api.rank == 0:
                print(f"{test},{size},{iters},{value:.3f},{unit}", flush=True)
    api.close()


if __name__ == "__main__":
    sys.exit(main())
