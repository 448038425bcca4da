package org.xdev;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * One per thread that calls xdev: which device it is inside a call on, if
 * any, the block its blocking calls and probes get their status in, and
 * its scratch memory for blocking calls on arrays.
 *
 * <p>{@code inside} is how {@link Device#close()} knows when no thread is
 * in a call any more (xdev_finalize must not run beside one), and how the
 * {@link InterruptWatch} finds interrupted threads blocked in xdev. A
 * thread publishes it with a volatile write before it reads the device's
 * closed flag, and close sets that flag before it reads {@code inside}:
 * either the thread sees the device closed, or close sees the thread
 * inside and waits for it.
 */
final class Caller {
    private static final ThreadLocal<Caller> CURRENT = ThreadLocal.withInitial(Caller::register);
    private static final CopyOnWriteArrayList<Caller> ALL = new CopyOnWriteArrayList<>();
    private static final VarHandle INSIDE;

    static {
        try {
            INSIDE = MethodHandles.lookup().findVarHandle(Caller.class, "inside", Device.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /* Blocking calls on arrays keep this much scratch memory per thread;
     * larger messages borrow from the pool for the call. */
    private static final long SCRATCH_KEPT = 1L << 20;

    private final WeakReference<Thread> thread;
    /* A native xdev_status_t, read through the buffer (Status.read). */
    final ByteBuffer status = ByteBuffer.allocateDirect(Status.BYTES).order(ByteOrder.nativeOrder());
    final long statusAddr = Native.address(status);
    private volatile Device inside;
    private boolean blocking; /* published by the write of inside */
    private int deadAtStart;  /* as blocking; see Device.deadAtStart */
    private long scratch, scratchBytes;
    private long borrowed, borrowedBytes;

    private Caller(Thread t) {
        thread = new WeakReference<>(t);
    }

    private static Caller register() {
        Caller c = new Caller(Thread.currentThread());
        ALL.add(c);
        return c;
    }

    static Caller current() {
        return CURRENT.get();
    }

    /**
     * Marks the thread inside a call on d; then the caller checks d's
     * closed flag. dead is Device.deadAtStart's count for a wildcard call
     * a death fails, else -1.
     */
    void enter(Device d, boolean blocks, int dead) {
        blocking = blocks;
        deadAtStart = dead;
        inside = d;
    }

    void leave() {
        INSIDE.setRelease(this, null);
    }

    /** What the last blocking call or probe wrote to this thread's status block. */
    Status readStatus(Status into) {
        return into.read(status, 0);
    }

    /** Native memory for a blocking call's copy of an array, until releaseScratch. */
    long scratch(long bytes) {
        if (bytes <= scratchBytes)
            return scratch;
        if (bytes <= SCRATCH_KEPT) {
            Pool.give(scratch, scratchBytes);
            scratch = 0;
            scratchBytes = 0;
            scratch = Pool.take(bytes);
            scratchBytes = Pool.capacity(bytes);
            return scratch;
        }
        borrowed = Pool.take(bytes);
        borrowedBytes = bytes;
        return borrowed;
    }

    void releaseScratch() {
        if (borrowed != 0) {
            Pool.give(borrowed, borrowedBytes);
            borrowed = 0;
        }
    }

    /** Is any thread inside a call on d? */
    static boolean anyInside(Device d) {
        for (Caller c : ALL)
            if (c.inside == d)
                return true;
        return false;
    }

    /**
     * Wakes the devices that interrupted threads are blocked on, or threads
     * in a wildcard call that a death since it began fails, and forgets the
     * threads that have ended (their scratch back to the pool).
     */
    static void wakeInterrupted() {
        for (Caller c : ALL) {
            Thread t = c.thread.get();
            Device d = c.inside;
            if (t == null || !t.isAlive()) {
                if (d == null && ALL.remove(c))
                    Pool.give(c.scratch, c.scratchBytes);
            } else if (d != null && c.blocking
                       && (t.isInterrupted() || d.diedSince(c.deadAtStart))) {
                d.wakeupQuietly();
            }
        }
    }
}
