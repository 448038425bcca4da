package org.xdev.tests;

import org.xdev.Device;

/**
 * The tests' runner and assertions (JUnit is not available): every rank
 * runs the same cases in the same order; the first failure prints its
 * stack trace and exits 1, which makes xdevrun end the job.
 */
final class Check {
    private Check() {}

    /** Tag of the barrier's messages; the cases use tags below it. */
    static final int BARRIER_TAG = 30000;

    interface Action {
        void run() throws Exception;
    }

    static void run(Device dev, String name, Action c) {
        int rank = dev.rank(); /* read first: a case may close the device */
        try {
            c.run();
        } catch (Throwable t) {
            System.err.println("FAIL rank " + rank + ": " + name);
            t.printStackTrace();
            System.exit(1);
        }
        if (rank == 0)
            System.out.println("ok " + name);
    }

    static void that(boolean condition, String what) {
        if (!condition)
            throw new AssertionError(what);
    }

    static void equal(long expected, long actual, String what) {
        if (expected != actual)
            throw new AssertionError(what + ": expected " + expected + ", got " + actual);
    }

    /** Runs action and returns what it threw, which must be a type. */
    static <T extends Throwable> T raises(Class<T> type, Action action) {
        try {
            action.run();
        } catch (Throwable t) {
            if (type.isInstance(t))
                return type.cast(t);
            throw new AssertionError("expected " + type.getSimpleName() + ", got " + t, t);
        }
        throw new AssertionError("expected " + type.getSimpleName() + ", nothing was thrown");
    }

    /** A zero-byte exchange with the other rank of a 2-rank job. */
    static void barrier(Device dev) {
        int peer = 1 - dev.rank();
        byte[] none = new byte[0];
        if (dev.rank() == 0) {
            dev.send(none, 0, 0, peer, BARRIER_TAG, 0);
            dev.recv(none, 0, 0, peer, BARRIER_TAG, 0);
        } else {
            dev.recv(none, 0, 0, peer, BARRIER_TAG, 0);
            dev.send(none, 0, 0, peer, BARRIER_TAG, 0);
        }
    }
}
