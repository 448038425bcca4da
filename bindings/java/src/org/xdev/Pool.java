package org.xdev;

/**
 * Native memory for messages to and from Java arrays, kept for reuse.
 *
 * <p>An array is copied into a block before a send and out of one after a
 * receive completes, so that xdev never holds a pointer into the Java
 * heap (which moves) and the collector is never held up by a message in
 * flight. Blocks come in power-of-two sizes from 256 bytes, page-aligned;
 * up to {@code org.xdev.pool.max} bytes (default 64 MiB) of returned
 * blocks are kept, the rest freed at once.
 */
final class Pool {
    private Pool() {}

    private static final int MIN_CLASS = 8;      /* 256 bytes */
    private static final int CLASSES = 63;
    private static final int KEEP_PER_CLASS = 64;
    private static final long KEEP_BYTES = Long.getLong("org.xdev.pool.max", 64L << 20);

    private static final long[][] kept = new long[CLASSES][KEEP_PER_CLASS];
    private static final int[] nkept = new int[CLASSES];
    private static long keptBytes;

    private static int sizeClass(long bytes) {
        return Math.max(MIN_CLASS, 64 - Long.numberOfLeadingZeros(bytes - 1));
    }

    /** The size of the block take(bytes) returns. */
    static long capacity(long bytes) {
        return bytes == 0 ? 0 : 1L << sizeClass(bytes);
    }

    /** A block of at least bytes; 0 for 0 bytes. Throws OutOfMemoryError. */
    static long take(long bytes) {
        if (bytes == 0)
            return 0;
        int c = sizeClass(bytes);
        synchronized (Pool.class) {
            if (nkept[c] > 0) {
                keptBytes -= 1L << c;
                return kept[c][--nkept[c]];
            }
        }
        long mem = Native.allocate(1L << c, false);
        if (mem == 0)
            throw new OutOfMemoryError("xdev: no native memory for a message of " + bytes + " bytes");
        return mem;
    }

    /** Gives back what take(bytes) returned. */
    static void give(long mem, long bytes) {
        if (mem == 0)
            return;
        int c = sizeClass(bytes);
        synchronized (Pool.class) {
            if (nkept[c] < KEEP_PER_CLASS && keptBytes + (1L << c) <= KEEP_BYTES) {
                kept[c][nkept[c]++] = mem;
                keptBytes += 1L << c;
                return;
            }
        }
        Native.free(mem);
    }
}
