package org.xdev;

import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.util.Objects;

/**
 * One rank's endpoint in an xdev job: xdev_t.
 *
 * <p>Buffers. A message is a ByteBuffer's remaining bytes (position to
 * limit; no call moves either), or count elements of a primitive array
 * from offset. A direct ByteBuffer is used in place; a heap ByteBuffer or
 * an array is copied through native memory: in before a send, out when a
 * receive completes (see {@link Request}). Array elements travel in the
 * host's byte order.
 *
 * <p>Threads. Any thread may call anything at any time (unless the device
 * was made with {@link Config#SINGLE_THREAD}). No call holds a monitor or
 * a JNI critical section while it waits. A thread interrupted while
 * blocked in a call, or interrupted when it makes one, gets
 * {@link XdevInterruptedException}, within {@value InterruptWatch#TICK_MS}
 * ms or so (see InterruptWatch).
 *
 * <p>Errors are {@link XdevException}s carrying xdev's code, with
 * {@link TruncationException} and {@link PeerFailedException} for
 * truncation and a dead peer. Java's own checks (a null buffer, an offset
 * out of range) throw Java's usual exceptions; a call on a closed device
 * throws IllegalStateException.
 */
public final class Device implements AutoCloseable {
    public static final int ANY_SOURCE = -1;
    public static final int ANY_TAG = -1;

    /* jni_transfer.c's post operations */
    private static final int OP_ISEND = 0, OP_ISSEND = 1, OP_IRECV = 2, OP_IMRECV = 3;

    final long handle;
    final RequestTable requests = new RequestTable();
    private final int rank, size;
    /* WILDCARD_FAILS without SINGLE_THREAD: one thread alone cannot miss
     * a death between its calls (see deadAtStart), and the watcher must
     * not read a device that only its owner may call. */
    private final boolean wildcardFails;
    private final Object lifecycle = new Object();
    private volatile boolean closed;

    private Device(long handle, int flags) {
        this.handle = handle;
        this.rank = Native.rank(handle);
        this.size = Native.size(handle);
        this.wildcardFails = (flags & (Config.WILDCARD_FAILS | Config.SINGLE_THREAD))
                == Config.WILDCARD_FAILS;
        InterruptWatch.deviceOpened();
    }

    /** Starts a device from the environment the launcher (xdevrun) sets. */
    public static Device init() {
        return open(Native.init(false, 0, 0, 0, null, null, null, 0, 0, 0, 0, 0, null),
                    Native.envFlags());
    }

    /** Starts a device from the environment, overridden by what config sets. */
    public static Device init(Config config) {
        return open(config.start(), config.deviceFlags());
    }

    private static Device open(long handle, int flags) {
        if (handle < 0)
            throw XdevException.of((int) handle, null);
        return new Device(handle, flags);
    }

    /* Kept from init, but a closed device has no rank: as every call, they throw. */
    public int rank() {
        checkOpen();
        return rank;
    }

    public int size() {
        checkOpen();
        return size;
    }

    /** xdev's version, "MAJOR.MINOR.PATCH". */
    public static String version() { return Native.version(); }

    /* ---- blocking point-to-point ---- */

    public void send(ByteBuffer buf, int dst, int tag, int ctx) { sendBuffer(buf, dst, tag, ctx, false); }

    /** Synchronous send: returns once the receiver has matched the message. */
    public void ssend(ByteBuffer buf, int dst, int tag, int ctx) { sendBuffer(buf, dst, tag, ctx, true); }

    public void send(Object array, int offset, int count, int dst, int tag, int ctx) {
        sendArray(array, offset, count, dst, tag, ctx, false);
    }

    public void ssend(Object array, int offset, int count, int dst, int tag, int ctx) {
        sendArray(array, offset, count, dst, tag, ctx, true);
    }

    public Status recv(ByteBuffer buf, int src, int tag, int ctx) {
        return recv(buf, src, tag, ctx, new Status());
    }

    /**
     * Receives into buf's remaining bytes and fills into (reused: nothing is
     * allocated). src may be ANY_SOURCE, tag ANY_TAG.
     */
    public Status recv(ByteBuffer buf, int src, int tag, int ctx, Status into) {
        Objects.requireNonNull(into, "into");
        if (!buf.isDirect())
            return recv(backing(buf), backingOffset(buf), buf.remaining(), src, tag, ctx, into);
        writable(buf);
        int dead = deadAtStart(src);
        int rc;
        do {
            Caller c = enter(true, dead);
            try {
                rc = unlessDied(Native.recv(handle, buf, buf.position(), length(buf), src, tag, ctx,
                        c.statusAddr), dead, tag, ctx, c);
                c.readStatus(into);
            } finally {
                c.leave();
            }
        } while (rc == XdevException.WOKEN);
        XdevException.check(rc, into);
        return into;
    }

    public Status recv(Object array, int offset, int count, int src, int tag, int ctx) {
        return recv(array, offset, count, src, tag, ctx, new Status());
    }

    /** Receives into array[offset, offset + count): the whole elements that arrived. */
    public Status recv(Object array, int offset, int count, int src, int tag, int ctx, Status into) {
        Objects.requireNonNull(into, "into");
        ArrayKind k = ArrayKind.of(array, offset, count);
        int dead = deadAtStart(src);
        int rc;
        do {
            Caller c = enter(true, dead);
            try {
                rc = unlessDied(Native.recvArray(handle, array, k.ordinal(), offset, count,
                        c.scratch(k.bytes(count)), src, tag, ctx, c.statusAddr), dead, tag, ctx, c);
                c.readStatus(into);
            } finally {
                c.releaseScratch();
                c.leave();
            }
        } while (rc == XdevException.WOKEN);
        XdevException.check(rc, into);
        return into;
    }

    private void sendBuffer(ByteBuffer buf, int dst, int tag, int ctx, boolean sync) {
        if (!buf.isDirect() && !buf.hasArray()) {
            sendCopy(buf, dst, tag, ctx, sync);
            return;
        }
        if (!buf.isDirect()) {
            sendArray(backing(buf), backingOffset(buf), buf.remaining(), dst, tag, ctx, sync);
            return;
        }
        int rc;
        do {
            Caller c = enter(true);
            try {
                rc = Native.send(handle, buf, buf.position(), length(buf), dst, tag, ctx, sync);
            } finally {
                c.leave();
            }
        } while (rc == XdevException.WOKEN);
        XdevException.check(rc, null);
    }

    /*
     * A read-only heap ByteBuffer hides its array, but sending only reads:
     * its bytes are copied (get on a duplicate, which leaves buf alone)
     * into the thread's scratch memory, as an array's would be.
     */
    private void sendCopy(ByteBuffer buf, int dst, int tag, int ctx, boolean sync) {
        int len = buf.remaining();
        int rc;
        do {
            Caller c = enter(true);
            try {
                long mem = c.scratch(len);
                if (len > 0)
                    Native.view(mem, len).put(buf.duplicate());
                rc = Native.send(handle, null, mem, len, dst, tag, ctx, sync);
            } finally {
                c.releaseScratch();
                c.leave();
            }
        } while (rc == XdevException.WOKEN);
        XdevException.check(rc, null);
    }

    private void sendArray(Object array, int offset, int count, int dst, int tag, int ctx, boolean sync) {
        ArrayKind k = ArrayKind.of(array, offset, count);
        int rc;
        do {
            Caller c = enter(true);
            try {
                rc = Native.sendArray(handle, array, k.ordinal(), offset, count,
                        c.scratch(k.bytes(count)), dst, tag, ctx, sync);
            } finally {
                c.releaseScratch();
                c.leave();
            }
        } while (rc == XdevException.WOKEN);
        XdevException.check(rc, null);
    }

    /*
     * With Config.WILDCARD_FAILS a death fails the blocking receives and
     * probes from ANY_SOURCE under way. After WOKEN (a wakeup meant for
     * another thread) this binding calls again, a new call in C that a
     * death another thread noticed in between would not fail. So such a
     * call counts the dead peers as it begins (-1: not such a call); a
     * retry that finds the count moved fails as the first call would have,
     * and InterruptWatch wakes a call that began waiting after the move.
     */
    private int deadAtStart(int src) {
        if (src != ANY_SOURCE || !wildcardFails)
            return -1;
        Caller c = enter(false);
        try {
            return XdevException.check(Native.peersDead(handle), null);
        } finally {
            c.leave();
        }
    }

    /* For InterruptWatch: has a peer died since a call counted dead? */
    boolean diedSince(int dead) {
        if (dead < 0)
            return false;
        synchronized (lifecycle) {
            return !closed && Native.peersDead(handle) != dead;
        }
    }

    private int unlessDied(int rc, int dead, int tag, int ctx, Caller c) {
        if (rc != XdevException.WOKEN || dead < 0)
            return rc;
        return Native.diedSince(handle, dead, tag, ctx, c.statusAddr);
    }

    /* ---- nonblocking point-to-point ---- */

    public Request isend(ByteBuffer buf, int dst, int tag, int ctx) { return post(OP_ISEND, buf, dst, tag, ctx, null); }

    public Request issend(ByteBuffer buf, int dst, int tag, int ctx) { return post(OP_ISSEND, buf, dst, tag, ctx, null); }

    public Request irecv(ByteBuffer buf, int src, int tag, int ctx) { return post(OP_IRECV, buf, src, tag, ctx, null); }

    /** Sends array[offset, offset + count), copied now: the array may be reused at once. */
    public Request isend(Object array, int offset, int count, int dst, int tag, int ctx) {
        return post(OP_ISEND, array, offset, count, dst, tag, ctx, null);
    }

    public Request issend(Object array, int offset, int count, int dst, int tag, int ctx) {
        return post(OP_ISSEND, array, offset, count, dst, tag, ctx, null);
    }

    /** Receives into array[offset, offset + count) when the request is reaped. */
    public Request irecv(Object array, int offset, int count, int src, int tag, int ctx) {
        return post(OP_IRECV, array, offset, count, src, tag, ctx, null);
    }

    private Request post(int op, ByteBuffer buf, int peer, int tag, int ctx, long[] msg) {
        if (!buf.isDirect() && !buf.hasArray() && op < OP_IRECV)
            return postCopy(op, buf, peer, tag, ctx);
        if (!buf.isDirect())
            return post(op, backing(buf), backingOffset(buf), buf.remaining(), peer, tag, ctx, msg);
        if (op >= OP_IRECV)
            writable(buf);
        Caller c = enter(false);
        try {
            Request r = new Request(this, buf, null, 0, 0, 0, 0, false);
            return post(r, op, buf, buf.position(), length(buf), peer, tag, ctx, msg);
        } finally {
            c.leave();
        }
    }

    private Request post(int op, Object array, int offset, int count, int peer, int tag, int ctx, long[] msg) {
        ArrayKind k = ArrayKind.of(array, offset, count);
        long bytes = k.bytes(count);
        boolean receive = op >= OP_IRECV;
        Caller c = enter(false);
        try {
            long mem = Pool.take(bytes);
            if (!receive)
                Native.copyIn(array, k.ordinal(), offset, count, mem);
            /* a send's array was copied: the request need not keep it */
            Request r = new Request(this, receive ? array : null, k, offset, count, mem, bytes, receive);
            return post(r, op, null, mem, bytes, peer, tag, ctx, msg);
        } finally {
            c.leave();
        }
    }

    /* A send from a read-only heap ByteBuffer: its bytes copied into a pooled
     * block now (as sendCopy), which the request holds until reaped. */
    private Request postCopy(int op, ByteBuffer buf, int peer, int tag, int ctx) {
        int len = buf.remaining();
        Caller c = enter(false);
        try {
            long mem = Pool.take(len);
            if (len > 0)
                Native.view(mem, len).put(buf.duplicate());
            Request r = new Request(this, null, null, 0, 0, mem, len, false);
            return post(r, op, null, mem, len, peer, tag, ctx, null);
        } finally {
            c.leave();
        }
    }

    /* Inside a call (entered): the request gets its storage, then is posted. */
    private Request post(Request r, int op, ByteBuffer buf, long off, long len, int peer, int tag,
                         int ctx, long[] msg) {
        requests.add(r);
        int rc = Native.post(handle, op, buf, off, len, peer, tag, ctx, r.addr, r.user, msg);
        if (rc != XdevException.OK) {
            r.discard();
            throw XdevException.of(rc, null);
        }
        return r;
    }

    /* ---- probes ---- */

    /** The status of a message matching (src, tag, ctx) waiting to be received, or null. */
    public Status iprobe(int src, int tag, int ctx) {
        Status st = new Status();
        int rc;
        Caller c = enter(false);
        try {
            rc = Native.iprobe(handle, src, tag, ctx, c.statusAddr);
            c.readStatus(st);
        } finally {
            c.leave();
        }
        return XdevException.check(rc, null) == 1 ? st : null;
    }

    /** Blocks until a message matching (src, tag, ctx) is waiting; its status. */
    public Status probe(int src, int tag, int ctx) {
        Status st = new Status();
        int dead = deadAtStart(src);
        int rc;
        do {
            Caller c = enter(true, dead);
            try {
                rc = unlessDied(Native.probe(handle, src, tag, ctx, c.statusAddr),
                        dead, tag, ctx, c);
                c.readStatus(st);
            } finally {
                c.leave();
            }
        } while (rc == XdevException.WOKEN);
        XdevException.check(rc, st);
        return st;
    }

    /** Claims a matching message if one is waiting, else null. */
    public Message improbe(int src, int tag, int ctx) { return mprobe(src, tag, ctx, false); }

    /** Blocks until it can claim a matching message. */
    public Message mprobe(int src, int tag, int ctx) { return mprobe(src, tag, ctx, true); }

    private Message mprobe(int src, int tag, int ctx, boolean block) {
        Message m = new Message(this);
        int dead = block ? deadAtStart(src) : -1;
        int rc;
        do {
            Caller c = enter(block, dead);
            try {
                rc = unlessDied(Native.mprobe(handle, src, tag, ctx, block, m.words, c.statusAddr),
                        dead, tag, ctx, c);
                c.readStatus(m.status);
            } finally {
                c.leave();
            }
        } while (rc == XdevException.WOKEN);
        return XdevException.check(rc, m.status) == 1 ? m : null;
    }

    Status mrecv(Message m, ByteBuffer buf) {
        if (!buf.isDirect())
            return mrecv(m, backing(buf), backingOffset(buf), buf.remaining());
        writable(buf);
        int rc;
        Caller c = enter(true);
        try {
            rc = Native.mrecv(handle, m.words, buf, buf.position(), length(buf), c.statusAddr);
            c.readStatus(m.status);
        } finally {
            c.leave();
        }
        XdevException.check(rc, m.status);
        return m.status;
    }

    Status mrecv(Message m, Object array, int offset, int count) {
        ArrayKind k = ArrayKind.of(array, offset, count);
        int rc;
        Caller c = enter(true);
        try {
            long mem = c.scratch(k.bytes(count));
            rc = Native.mrecv(handle, m.words, null, mem, k.bytes(count), c.statusAddr);
            c.readStatus(m.status);
            if (rc == XdevException.OK || rc == XdevException.TRUNCATE)
                Native.copyOut(array, k.ordinal(), offset, Math.min(count, m.status.elements(k.bytes)), mem);
        } finally {
            c.releaseScratch();
            c.leave();
        }
        XdevException.check(rc, m.status);
        return m.status;
    }

    Request imrecv(Message m, ByteBuffer buf) { return post(OP_IMRECV, buf, 0, 0, 0, m.words); }

    Request imrecv(Message m, Object array, int offset, int count) {
        return post(OP_IMRECV, array, offset, count, 0, 0, 0, m.words);
    }

    /* ---- completions ---- */

    /**
     * Blocks until some request posted on this device has completed and not
     * yet been handed out or reaped, and returns it: the same Request object
     * the post returned, still to be reaped (its waitFor returns at once).
     */
    public Request peek() {
        return peek(-1);
    }

    /**
     * peek, waiting at most timeoutMs (0: look once, -1: forever, as
     * xdev_peek_timed); null if nothing completed.
     */
    public Request peekTimed(int timeoutMs) {
        if (timeoutMs < -1)
            throw new IllegalArgumentException("timeoutMs < -1");
        return peek(timeoutMs);
    }

    private Request peek(int timeoutMs) {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        for (;;) {
            long rc;
            Request r = null;
            Caller c = enter(timeoutMs != 0);
            try { /* looked up inside the call: close frees the table after */
                rc = Native.peek(handle, timeoutMs);
                if (rc >= 0)
                    r = requests.peeked(rc);
            } finally {
                c.leave();
            }
            if (r != null)
                return r;
            if (rc >= 0) {
                if (timeoutMs == 0) /* the one completion was reaped meanwhile */
                    return null;
            } else if (rc == XdevException.TIMEOUT) {
                return null;
            } else if (rc != XdevException.WOKEN) {
                throw XdevException.of((int) rc, null);
            }
            if (timeoutMs > 0) /* woken for another thread, or lost a race: wait out the rest */
                timeoutMs = (int) Math.max(0, (deadline - System.nanoTime()) / 1_000_000L);
        }
    }

    /**
     * Makes every call blocked on this device return to its caller's loop:
     * an interrupted thread's call throws, the others wait again. Safe from
     * any thread; does nothing once the device is closed.
     */
    public void wakeup() {
        wakeupQuietly();
    }

    void wakeupQuietly() {
        synchronized (lifecycle) {
            if (!closed)
                Native.wakeup(handle);
        }
    }

    /* ---- what the device knows ---- */

    public PeerState peerState(int rank) {
        int rc;
        Caller c = enter(false);
        try {
            rc = Native.peerState(handle, rank);
        } finally {
            c.leave();
        }
        return PeerState.values()[XdevException.check(rc, null)];
    }

    public Stats stats() {
        Stats s = new Stats();
        int rc;
        Caller c = enter(false);
        try {
            rc = Native.stats(handle, s.counters, s.names);
        } finally {
            c.leave();
        }
        s.ntransports = XdevException.check(rc, null);
        return s;
    }

    /**
     * Finishes with the device (xdev_finalize): wakes the threads blocked in
     * it and waits until every thread has left its calls, then flushes
     * active sends, closes connections in order and frees everything.
     * Requests never reaped are abandoned: their Status says cancelled and
     * their buffers are let go. Calls made afterwards throw
     * IllegalStateException; a second close does nothing.
     */
    @Override
    public void close() {
        synchronized (lifecycle) {
            if (closed)
                return;
            closed = true;
        }
        boolean interrupted = false;
        while (Caller.anyInside(this)) {
            Native.wakeup(handle);
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        int rc = Native.finalizeDevice(handle);
        for (Request r : requests.close())
            r.abandon();
        InterruptWatch.deviceClosed();
        if (interrupted)
            Thread.currentThread().interrupt();
        if (rc < 0 && rc != XdevException.CANCELED)
            throw XdevException.of(rc, null);
    }

    /* ---- helpers ---- */

    /**
     * Counts the calling thread into a call on this device (see Caller),
     * unless the device is closed or, for a blocking call, the thread has
     * been interrupted.
     */
    Caller enter(boolean blocks) {
        return enter(blocks, -1);
    }

    private Caller enter(boolean blocks, int dead) {
        Caller c = Caller.current();
        c.enter(this, blocks, dead);
        if (closed) {
            c.leave();
            throw new IllegalStateException("the xdev device is closed");
        }
        if (blocks && Thread.interrupted()) {
            c.leave();
            throw new XdevInterruptedException();
        }
        return c;
    }

    private void checkOpen() {
        if (closed)
            throw new IllegalStateException("the xdev device is closed");
    }

    /*
     * A heap ByteBuffer takes the array path: its array from arrayOffset +
     * position. Only a read-only one hides its array, and sends copy those
     * (sendCopy, postCopy): what gets here without one is a receive into it.
     */
    private static byte[] backing(ByteBuffer buf) {
        if (!buf.hasArray())
            throw new ReadOnlyBufferException();
        return buf.array();
    }

    private static int backingOffset(ByteBuffer buf) {
        return buf.arrayOffset() + buf.position();
    }

    /*
     * buf.remaining() without its clamp at 0, which cannot apply (position
     * never passes limit): the JIT drops a branch it has never seen taken,
     * and the first empty message after many full ones would throw the
     * compiled code away in the middle of a benchmark.
     */
    private static int length(ByteBuffer buf) {
        return buf.limit() - buf.position();
    }

    private static void writable(ByteBuffer buf) {
        if (buf.isReadOnly())
            throw new ReadOnlyBufferException();
    }
}
