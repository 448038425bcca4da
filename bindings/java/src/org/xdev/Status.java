package org.xdev;

import java.nio.ByteBuffer;

/**
 * The status of a completed request or a probed message: xdev_status_t.
 * A blocking receive may be given one to reuse, so that it allocates
 * nothing.
 */
public final class Status {
    /** Bytes of an xdev_status_t in native memory, where xdev writes it. */
    static final int BYTES = Native.statusSize();

    int source;
    int tag;
    int ctx;
    int error;
    long count;
    long msgLen;

    public Status() {}

    /** The sender's rank; for a send, the destination's. */
    public int source() { return source; }

    public int tag() { return tag; }

    public int ctx() { return ctx; }

    /**
     * The operation's outcome: {@link XdevException#OK}, or an error code
     * such as {@link XdevException#TRUNCATE}, {@link XdevException#PEER}
     * or {@link XdevException#CANCELED}.
     */
    public int error() { return error; }

    /** Bytes delivered (receives, probes) or sent (sends). */
    public long count() { return count; }

    /** The message's full length: count, unless a receive was truncated or failed. */
    public long msgLen() { return msgLen; }

    /** Whole elements of {@code elementBytes} bytes delivered (for a receive into an array). */
    public int elements(int elementBytes) { return (int) (count / elementBytes); }

    public boolean isCancelled() { return error == XdevException.CANCELED; }

    /**
     * Reads the xdev_status_t at b[at]: int source, tag, ctx, error, then
     * size_t count, msg_len, in the host's order (jni_device.c checks
     * the layout).
     */
    Status read(ByteBuffer b, int at) {
        source = b.getInt(at);
        tag = b.getInt(at + 4);
        ctx = b.getInt(at + 8);
        error = b.getInt(at + 12);
        count = b.getLong(at + 16);
        msgLen = b.getLong(at + 24);
        return this;
    }

    Status copy() {
        Status s = new Status();
        s.source = source;
        s.tag = tag;
        s.ctx = ctx;
        s.error = error;
        s.count = count;
        s.msgLen = msgLen;
        return s;
    }

    @Override
    public String toString() {
        return "Status[source=" + source + ", tag=" + tag + ", ctx=" + ctx + ", error=" + error
                + ", count=" + count + ", msgLen=" + msgLen + "]";
    }
}
