package org.xdev;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.IdentityHashMap;

/**
 * A nonblocking operation: what isend, issend, irecv and
 * {@link Message#irecv} return, and what {@link Device#peek()} hands back
 * (the same object).
 *
 * <p>The request keeps its buffer reachable until it is reaped: by
 * {@link #waitFor()}, {@link #test()} that finds it complete,
 * {@link #testSome} or {@link #waitSome}. xdev reaps it exactly once,
 * whichever threads ask; after that every waitFor or test reports the
 * same outcome without calling xdev again. A request the program drops
 * stays alive (the device holds it) until peek hands it out and it is
 * reaped, or until {@link Device#close()} abandons it.
 *
 * <p>Outcome: waitFor and test return the Status, or throw the operation's
 * error ({@link TruncationException}, {@link PeerFailedException}, ...)
 * with the Status in {@link XdevException#status()}; {@link #status()} has
 * it too. A cancelled request is not an error: its Status says
 * {@link Status#isCancelled()}. testSome and waitSome never throw for an
 * operation's error: they reap, and waitFor on each tells.
 *
 * <p>A receive into an array completes into the array when it is reaped
 * (the whole elements that arrived); a send from an array was copied when
 * posted, so the array may be reused at once.
 */
public final class Request {
    private static final int REAPED = 1 << 30; /* the rest of state counts threads inside */
    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(Request.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final Device device;
    /* Set by RequestTable.add: the slot, the xdev request's user field,
     * its xdev_request_t, and the view of its slab where the status is
     * reaped to. */
    int slot;
    long user;
    long addr;
    ByteBuffer slab;
    int statusAt;
    final Status status = new Status();
    private volatile int state;

    /* What the operation's memory belongs to, kept until reaped: the direct
     * ByteBuffer, or the native copy of an array (and the array, for a
     * receive into it). */
    private Object buffer;
    private final ArrayKind kind;      /* null for a ByteBuffer */
    private final int offset, count;   /* the array's elements */
    private long mem;
    private final long memBytes;
    private final boolean copyOut;     /* a receive into an array */

    Request(Device device, Object buffer, ArrayKind kind, int offset, int count, long mem,
            long memBytes, boolean copyOut) {
        this.device = device;
        this.buffer = buffer;
        this.kind = kind;
        this.offset = offset;
        this.count = count;
        this.mem = mem;
        this.memBytes = memBytes;
        this.copyOut = copyOut;
    }

    /**
     * Blocks until the operation completes, reaps it and returns its Status,
     * or throws its error. Throws {@link XdevInterruptedException} if the
     * thread is interrupted: the request then stays active.
     */
    public Status waitFor() {
        while (!isReaped()) {
            Caller c = device.enter(true);
            int rc = XdevException.ARG;
            boolean held = acquire();
            try {
                if (held)
                    rc = Native.await(addr);
                if (rc == XdevException.OK)
                    reaped();
            } finally {
                if (held)
                    release();
                c.leave();
            }
            if (rc == XdevException.ARG)
                awaitReaped();
        }
        return outcome();
    }

    /**
     * Reaps the request if it has completed and returns its Status (or
     * throws its error, as waitFor); null if it has not completed.
     */
    public Status test() {
        if (isReaped())
            return outcome();
        Caller c = device.enter(false);
        int rc = XdevException.ARG;
        boolean held = acquire();
        try {
            if (held)
                rc = Native.test(addr);
            if (rc == 1)
                reaped();
        } finally {
            if (held)
                release();
            c.leave();
        }
        if (rc == 0)
            return null;
        awaitReaped(); /* at once, unless another thread was reaping it */
        return outcome();
    }

    /**
     * Cancels the operation if it has not begun (a receive nothing has
     * matched): true, and it completes with a cancelled Status, to be reaped
     * as usual. False if it has begun or completed: it completes whole.
     */
    public boolean cancel() {
        if (isReaped())
            return false;
        Caller c = device.enter(false);
        int rc = XdevException.ARG;
        boolean held = acquire();
        try {
            if (held)
                rc = Native.cancel(addr);
        } finally {
            if (held)
                release();
            c.leave();
        }
        return rc == XdevException.OK;
    }

    /** Has it been reaped (or abandoned by close)? */
    public boolean isDone() {
        return isReaped();
    }

    /** The Status once reaped, else null. */
    public Status status() {
        return isReaped() ? status : null;
    }

    /**
     * Reaps every request of reqs that has completed, with one progress pass
     * (xdev_testsome), and returns their indices. Null entries, and
     * requests already reaped, are skipped; with none left it returns none
     * and calls nothing, so it works after the device's close() as test()
     * does. All must belong to one device, and none may be listed twice
     * (IllegalArgumentException, as xdev refuses both, before anything is
     * reaped).
     */
    public static int[] testSome(Request... reqs) {
        return some(reqs, false);
    }

    /**
     * As testSome, but blocks until at least one has completed (returns at
     * once, with none, if no entry is active, and returns with none when
     * another thread reaps one of them while it waits, as xdev_waitsome's
     * losing waiter does: that one's outcome is in its status()).
     */
    public static int[] waitSome(Request... reqs) {
        return some(reqs, true);
    }

    private static int[] some(Request[] reqs, boolean block) {
        Device d = null;
        for (Request r : reqs) {
            if (r != null && d != null && r.device != d)
                throw new IllegalArgumentException("requests of different devices");
            if (r != null)
                d = r.device;
        }
        if (d == null)
            return new int[0];
        refuseListedTwice(reqs);
        int n = reqs.length;
        long[] addrs = new long[n]; /* 0: not held by this call */
        boolean[] listed = new boolean[n]; /* active when this call held it */
        int[] index = new int[n];
        for (;;) {
            /* Lost to another thread, which reaped one of them meanwhile: as
             * xdev_waitsome's losing waiter, return with none reaped here,
             * rather than go on waiting for the others. */
            for (int i = 0; i < n; i++)
                if (listed[i] && reqs[i].isReaped())
                    return new int[0];
            /* nothing to reap: no call, so no device needed (it may be closed) */
            if (noneActive(reqs))
                return new int[0];
            Caller c = d.enter(block);
            int held = 0, rc = 0;
            try {
                for (int i = 0; i < n; i++) {
                    Request r = reqs[i];
                    addrs[i] = r != null && r.acquire() ? r.addr : 0;
                    listed[i] |= addrs[i] != 0;
                    held += addrs[i] != 0 ? 1 : 0;
                }
                if (held > 0)
                    rc = Native.some(block, addrs, index);
                for (int k = 0; k < rc; k++)
                    reqs[index[k]].reaped();
            } finally {
                for (int i = 0; i < n; i++)
                    if (addrs[i] != 0)
                        reqs[i].release();
                c.leave();
            }
            if (rc >= 0)
                return Arrays.copyOf(index, rc);
            if (rc == XdevException.ARG)
                Thread.yield(); /* one was reaped by another thread meanwhile: look again */
            else if (rc != XdevException.WOKEN)
                throw XdevException.of(rc, null);
        }
    }

    private static boolean noneActive(Request[] reqs) {
        for (Request r : reqs)
            if (r != null && !r.isReaped())
                return false;
        return true;
    }

    /* xdev_testsome and xdev_waitsome refuse a request listed twice, and
     * so does this, whether it is active or not: else xdev's refusal would
     * send the loop above round again for ever. */
    private static void refuseListedTwice(Request[] reqs) {
        if (reqs.length <= 16) {
            for (int i = 0; i < reqs.length; i++)
                for (int j = i + 1; j < reqs.length; j++)
                    if (reqs[i] != null && reqs[i] == reqs[j])
                        throw new IllegalArgumentException("a request listed twice");
            return;
        }
        IdentityHashMap<Request, Boolean> seen = new IdentityHashMap<>();
        for (Request r : reqs)
            if (r != null && seen.put(r, Boolean.TRUE) != null)
                throw new IllegalArgumentException("a request listed twice");
    }

    /* ---- the reaping protocol ---- */

    boolean isReaped() {
        return (state & REAPED) != 0;
    }

    /** Counts the caller in, unless the request has been reaped. */
    private boolean acquire() {
        for (;;) {
            int s = state;
            if ((s & REAPED) != 0)
                return false;
            if (STATE.compareAndSet(this, s, s + 1))
                return true;
        }
    }

    /** The last thread out of a reaped request frees its slot. */
    private void release() {
        if ((int) STATE.getAndAdd(this, -1) - 1 == REAPED)
            device.requests.remove(slot);
    }

    /**
     * The caller's native call reaped it, its status in the slot: read it,
     * deliver an array receive, let the buffer go, and publish. Called
     * holding the request.
     */
    private void reaped() {
        if (isReaped())
            return; /* listed twice in one testSome */
        try {
            status.read(slab, statusAt);
            if (copyOut && (status.error == XdevException.OK || status.error == XdevException.TRUNCATE))
                Native.copyOut(buffer, kind.ordinal(), offset, Math.min(count, status.elements(kind.bytes)), mem);
            dropBuffer();
        } finally {
            STATE.getAndBitwiseOr(this, REAPED);
        }
    }

    /** The reaper is between its native call and reaped(): microseconds. */
    private void awaitReaped() {
        while (!isReaped())
            Thread.yield();
    }

    /** Never posted (the post failed): give everything back. */
    void discard() {
        dropBuffer();
        STATE.getAndBitwiseOr(this, REAPED);
        device.requests.remove(slot);
    }

    /** xdev_finalize abandoned it: xdev will never touch its buffer again. */
    void abandon() {
        status.error = XdevException.CANCELED;
        status.count = 0;
        dropBuffer();
        STATE.getAndBitwiseOr(this, REAPED);
    }

    private void dropBuffer() {
        Pool.give(mem, memBytes);
        mem = 0;
        buffer = null;
    }

    private Status outcome() {
        int e = status.error;
        if (e == XdevException.OK || e == XdevException.CANCELED)
            return status;
        throw XdevException.of(e, status);
    }
}
