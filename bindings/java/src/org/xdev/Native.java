package org.xdev;

import java.nio.ByteBuffer;

/**
 * The natives of libxdev_jni.so (bindings/java/native), one per xdev call
 * or close to it. They return xdev's codes; callers turn them into
 * exceptions. A (ByteBuffer, offset) pair names memory: a direct buffer's
 * address plus offset, or with a null buffer, offset as a native address.
 * Statuses are written to native memory (a long address): the calling
 * thread's status block, or a request's slot; see Status.read.
 *
 * <p>The library is loaded from the path in the system property
 * {@code org.xdev.library} if set, else as {@code xdev_jni} from
 * {@code java.library.path}.
 */
final class Native {
    private Native() {}

    static {
        String path = System.getProperty("org.xdev.library");
        if (path != null)
            System.load(path);
        else
            System.loadLibrary("xdev_jni");
    }

    /* jni_device.c */
    static native long init(boolean fromConfig, int set, int rank, int size, String[] peers,
                            String transport, String jobSecret, long eagerLimit,
                            long unexpectedLimit, int peerTimeoutMs, int finalizeTimeoutMs,
                            int flags, String[] options);
    static native int finalizeDevice(long dev);
    static native int rank(long dev);
    static native int size(long dev);
    static native String strerror(int code);
    static native String version();
    static native int wakeup(long dev);
    static native int peerState(long dev, int rank);
    static native int stats(long dev, long[] counters, String[] names);
    static native int envFlags();
    static native int peersDead(long dev);
    static native int diedSince(long dev, int dead, int tag, int ctx, long status);
    static native int requestSize();
    static native int statusSize();
    static native long allocate(long bytes, boolean zeroed);
    static native void free(long addr);
    static native ByteBuffer view(long addr, long bytes);
    static native long address(ByteBuffer buf);

    /* jni_transfer.c */
    static native int send(long dev, ByteBuffer buf, long off, long len, int dst, int tag,
                           int ctx, boolean sync);
    static native int recv(long dev, ByteBuffer buf, long off, long len, int src, int tag,
                           int ctx, long status);
    static native int sendArray(long dev, Object array, int kind, int off, int n, long scratch,
                                int dst, int tag, int ctx, boolean sync);
    static native int recvArray(long dev, Object array, int kind, int off, int n, long scratch,
                                int src, int tag, int ctx, long status);
    static native int post(long dev, int op, ByteBuffer buf, long off, long len, int peer,
                           int tag, int ctx, long req, long user, long[] msg);
    static native int await(long req);
    static native int test(long req);
    static native int cancel(long req);
    static native int some(boolean block, long[] reqs, int[] index);

    /* jni_probe.c */
    static native int iprobe(long dev, int src, int tag, int ctx, long status);
    static native int probe(long dev, int src, int tag, int ctx, long status);
    static native int mprobe(long dev, int src, int tag, int ctx, boolean block, long[] msg,
                             long status);
    static native int mrecv(long dev, long[] msg, ByteBuffer buf, long off, long len, long status);
    static native long peek(long dev, int timeoutMs);
    static native int messageWords();

    /* jni_arrays.c */
    static native void copyIn(Object array, int kind, int off, int n, long mem);
    static native void copyOut(Object array, int kind, int off, int n, long mem);
}
