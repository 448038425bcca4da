package org.xdev.tests;

import static org.xdev.tests.Check.equal;
import static org.xdev.tests.Check.raises;
import static org.xdev.tests.Check.that;

import java.nio.ByteBuffer;
import java.util.Arrays;

import org.xdev.Device;
import org.xdev.Request;
import org.xdev.Status;
import org.xdev.TruncationException;
import org.xdev.XdevException;

/**
 * Truncation, the same way through every path: a TruncationException with
 * the status (count: what fit, msgLen: what was sent), nothing written past
 * the buffer, and for requests the same outcome every time it is asked.
 * Rank 1 sends 100-byte messages; rank 0 receives them into 40 bytes.
 */
public final class Errors {
    private static final int SENT = 100, ROOM = 40;

    private final Device dev;
    private final int me, peer;

    private Errors(Device dev) {
        this.dev = dev;
        this.me = dev.rank();
        this.peer = 1 - me;
    }

    public static void main(String[] args) {
        try (Device dev = Device.init()) {
            Errors t = new Errors(dev);
            Check.run(dev, "recv into a ByteBuffer", () -> t.truncated(t::recvBuffer));
            Check.run(dev, "recv into an int[]", () -> t.truncated(t::recvInts));
            Check.run(dev, "irecv and waitFor", () -> t.truncated(t::irecvWaitFor));
            Check.run(dev, "irecv and test", () -> t.truncated(t::irecvTest));
            Check.run(dev, "irecv into a long[] and testSome", () -> t.truncated(t::irecvTestSome));
            Check.run(dev, "mprobe and Message.recv", () -> t.truncated(t::mrecv));
            Check.barrier(dev);
        }
    }

    private interface Receiver {
        void receive();
    }

    /* Rank 1 sends one message for rank 0's receiver. */
    private void truncated(Receiver r) {
        if (me == 1) {
            byte[] msg = new byte[SENT];
            Arrays.fill(msg, (byte) 7);
            dev.send(msg, 0, SENT, peer, 1, 0);
        } else {
            r.receive();
        }
    }

    private static void checkStatus(Status st) {
        equal(XdevException.TRUNCATE, st.error(), "status error");
        equal(ROOM, st.count(), "count");
        equal(SENT, st.msgLen(), "msgLen");
        equal(1, st.source(), "source");
    }

    private static void checkException(TruncationException e) {
        equal(XdevException.TRUNCATE, e.code(), "code");
        checkStatus(e.status());
    }

    /* The buffer's bytes [8, 48) of 64: the first 40 bytes of the message
     * land there and the rest of the buffer keeps its 0x55. */
    private void recvBuffer() {
        ByteBuffer in = ByteBuffer.allocateDirect(64);
        for (int i = 0; i < 64; i++)
            in.put(i, (byte) 0x55);
        in.position(8).limit(8 + ROOM);
        Status st = new Status();
        checkException(raises(TruncationException.class, () -> dev.recv(in, peer, 1, 0, st)));
        checkStatus(st);
        ByteBuffer all = in.duplicate().clear();
        for (int i = 0; i < 64; i++)
            equal(i >= 8 && i < 8 + ROOM ? 7 : 0x55, all.get(i), "byte " + i);
    }

    /* 100 bytes into 10 ints from offset 2 of 16: 40 bytes fill them all. */
    private void recvInts() {
        int[] in = new int[16];
        Arrays.fill(in, -1);
        checkException(raises(TruncationException.class, () -> dev.recv(in, 2, ROOM / 4, peer, 1, 0)));
        for (int i = 0; i < 16; i++)
            equal(i >= 2 && i < 12 ? 0x07070707 : -1, in[i], "element " + i);
    }

    private void irecvWaitFor() {
        Request r = dev.irecv(ByteBuffer.allocateDirect(ROOM), peer, 1, 0);
        TruncationException e = raises(TruncationException.class, r::waitFor);
        checkException(e);
        that(r.isDone(), "a truncated request was not reaped");
        checkStatus(r.status());
        checkException(raises(TruncationException.class, r::waitFor));
        checkException(raises(TruncationException.class, r::test));
    }

    private void irecvTest() {
        Request r = dev.irecv(new byte[ROOM], 0, ROOM, peer, 1, 0);
        TruncationException e = null;
        while (e == null) {
            try {
                that(r.test() == null, "test returned a status for a truncated receive");
            } catch (TruncationException t) {
                e = t;
            }
        }
        checkException(e);
        checkStatus(r.status());
    }

    /* testSome reaps without throwing; the status tells, and waitFor throws. */
    private void irecvTestSome() {
        long[] in = new long[ROOM / 8];
        Request r = dev.irecv(in, 0, in.length, peer, 1, 0);
        while (Request.testSome(r).length == 0)
            Thread.onSpinWait();
        checkStatus(r.status());
        checkException(raises(TruncationException.class, r::waitFor));
        equal(0x0707070707070707L, in[in.length - 1], "last element");
    }

    private void mrecv() {
        var m = dev.mprobe(peer, 1, 0);
        equal(SENT, m.status().msgLen(), "probed length");
        checkException(raises(TruncationException.class, () -> m.recv(new short[ROOM / 2], 0, ROOM / 2)));
    }
}
