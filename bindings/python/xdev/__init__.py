"""xdev for Python: point-to-point messages between the ranks of a job.

    import xdev
    with xdev.Device() as dev:          # from xdevrun's (or mpirun's) environment
        if dev.rank == 0:
            dev.send(b"hello", 1)
        else:
            buf = bytearray(5)
            st = dev.recv(buf, 0)       # Status(source, tag, ctx, count, msg_len, error)

Buffers are anything with the buffer protocol (bytes, bytearray,
memoryview, numpy arrays), C-contiguous; receives need writable ones.
send_obj/recv_obj move any picklable object. Every blocking call releases
the GIL, and Ctrl-C interrupts it (a receive not yet matched is cancelled;
a send, which has begun once posted, is finished first: Request.wait
raises at once, leaving it active).
A Request is awaitable in asyncio, and Device.arecv awaits a receive, both
driven by the device's file descriptor on the running loop.
"""
import asyncio
import atexit
import pickle
import weakref

from . import _xdev
from ._xdev import (ANY_SOURCE, ANY_TAG, ERR_ARG, ERR_BUSY, ERR_CANCELED, ERR_INIT, ERR_NOMEM,
                    ERR_PEER, ERR_PEER_PENDING, ERR_SYSTEM, ERR_TIMEOUT, ERR_TOO_LATE,
                    ERR_TRUNCATE, ERR_WOKEN, PEER_ALIVE, PEER_DEAD, PEER_UNKNOWN, Error, Message,
                    PeerError, Request, Status, TruncationError, version)

_CODES = ["ERR_ARG", "ERR_NOMEM", "ERR_TRUNCATE", "ERR_PEER", "ERR_CANCELED", "ERR_INIT",
          "ERR_SYSTEM", "ERR_TOO_LATE", "ERR_TIMEOUT", "ERR_WOKEN", "ERR_PEER_PENDING",
          "ERR_BUSY"]
__all__ = ["Device", "Request", "Message", "Status", "Error", "TruncationError", "PeerError",
           "ANY_SOURCE", "ANY_TAG", "PEER_UNKNOWN", "PEER_ALIVE", "PEER_DEAD", "version"] + _CODES

# The exceptions carry (code, text, status): name the parts.
Error.code = property(lambda e: e.args[0], doc="the XDEV_ERR code")
Error.status = property(lambda e: e.args[2] if len(e.args) > 2 else None,
                        doc="the Status of the failed operation, when it has one")

_open_devices = weakref.WeakSet()


def _fail_if_pending(fut):
    if not fut.done():
        fut.set_exception(Error(ERR_WOKEN, "the device was closed", None))


@atexit.register
def _close_all():
    # A device still open at exit leaves in order, so its peers see it go.
    for dev in list(_open_devices):
        dev.close()


class Device(_xdev.Device):
    """This rank's endpoint; a context manager that finalizes on exit.

    Device(options=None) joins the job the launcher's environment describes.
    options: transport options for this device alone, a mapping of the
    variable's name to its value, e.g. {"XDEV_SHM_RING": "4m",
    "XDEV_OFI_PROVIDER": "tcp;ofi_rxm"}: the variables the README's
    Environment table marks "(option)". A value is a str, or an int (written
    in decimal; True and False as 1 and 0). Each one given overrides the
    environment's variable; the others still come from the environment,
    which is never changed. A name that is not an option, or a value the
    option refuses, raises ValueError and starts nothing; a bad value in
    the environment raises Error (code ERR_INIT) when its transport opens.
    """

    def __init__(self, *, options=None):
        super().__init__(options=options)
        _open_devices.add(self)
        self._loop_reader = None
        self._awaited = {}

    def isend_obj(self, obj, dest, tag=0, ctx=0):
        """Start sending a picklable object; the Request holds the bytes."""
        return self.isend(pickle.dumps(obj, protocol=5), dest, tag, ctx)

    # ---- asyncio ----

    def _drive(self):
        """The loop's reader: progress, finish awaited requests, re-arm."""
        self.progress()
        for req, fut in list(self._awaited.items()):
            if fut.done():
                del self._awaited[req]
                continue
            try:
                st = req.test()
            except Error as e:
                del self._awaited[req]
                fut.set_exception(e)
                continue
            if st is not None:
                del self._awaited[req]
                fut.set_result(st)
        if self._awaited and not self.arm():
            asyncio.get_running_loop().call_soon(self._drive)

    def _watch(self, req):
        """A future for req's Status, which the loop's reader completes."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        st = req.test()
        if st is not None:
            fut.set_result(st)
            return fut
        if self._loop_reader is not loop:
            loop.add_reader(self.fileno(), self._drive)
            self._loop_reader = loop
        self._awaited[req] = fut
        loop.call_soon(self._drive)
        return fut

    async def wait_async(self, req):
        """Await req's completion on the running loop; its Status."""
        return await self._watch(req)

    async def arecv(self, buf, source=ANY_SOURCE, tag=ANY_TAG, ctx=0):
        """Receive into buf without blocking the loop; its Status.

        Cancelled (task.cancel(), a timeout of asyncio.wait_for, Ctrl-C in
        asyncio.run) before a message matched it, the receive is cancelled
        too and takes no message. One that had matched already is finished
        into buf and its Status returned: a message is never left in a
        buffer nobody looks at."""
        req = self.irecv(buf, source, tag, ctx)
        fut = self._watch(req)
        try:
            return await asyncio.shield(fut)
        except asyncio.CancelledError:
            if not fut.done() and req.active and req.cancel():
                del self._awaited[req]
                try:
                    req.wait()  # complete at once, as cancelled
                except Error:
                    pass
                raise
        while True:  # matched: finish it, whatever more cancels come
            try:
                return await asyncio.shield(fut)
            except asyncio.CancelledError:
                pass

    def close(self):
        """Finalize. Calls blocked in the device (in any thread) are woken
        first and raise Error (code ERR_WOKEN), or finish a request that had
        begun; requests awaited in asyncio fail with the same Error."""
        loop = getattr(self, "_loop_reader", None)
        if loop is not None and not loop.is_closed():
            loop.remove_reader(self.fileno())
        self._loop_reader = None
        _open_devices.discard(self)
        awaited = getattr(self, "_awaited", {})
        super().close()
        for fut in awaited.values():
            if not fut.done() and not fut.get_loop().is_closed():
                fut.get_loop().call_soon_threadsafe(_fail_if_pending, fut)
        awaited.clear()

