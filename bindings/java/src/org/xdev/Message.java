package org.xdev;

import java.nio.ByteBuffer;

/**
 * A message claimed by {@link Device#improbe} or {@link Device#mprobe}:
 * out of matching, so that only a receive through this handle gets it
 * (MPI_Mprobe, MPJ's iprobeAndFetch). Receive it once, with recv or irecv;
 * a second receive throws {@link XdevException} with code ARG. A claimed
 * message never received is freed by {@link Device#close()}.
 */
public final class Message {
    private final Device device;
    final long[] words = new long[WORDS]; /* the xdev_message_t, rebuilt by each native call */
    final Status status = new Status();

    private static final int WORDS = Native.messageWords();

    Message(Device device) {
        this.device = device;
    }

    /** The message's source, tag, context and length (msgLen). */
    public Status status() {
        return status;
    }

    /** Receives it into buf's remaining bytes, as {@link Device#recv(ByteBuffer, int, int, int)}. */
    public Status recv(ByteBuffer buf) {
        return device.mrecv(this, buf);
    }

    /** Receives it into array[offset, offset + count), as Device.recv on arrays. */
    public Status recv(Object array, int offset, int count) {
        return device.mrecv(this, array, offset, count);
    }

    /** Starts receiving it into buf's remaining bytes. */
    public Request irecv(ByteBuffer buf) {
        return device.imrecv(this, buf);
    }

    /** Starts receiving it into array[offset, offset + count). */
    public Request irecv(Object array, int offset, int count) {
        return device.imrecv(this, array, offset, count);
    }
}
