package org.xdev.tests;

import static org.xdev.tests.Check.equal;
import static org.xdev.tests.Check.raises;
import static org.xdev.tests.Check.that;

import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

import org.xdev.Config;
import org.xdev.Device;
import org.xdev.Request;
import org.xdev.Status;

/**
 * What a message is made of: direct ByteBuffers (position to limit, in
 * place), heap ByteBuffers and every kind of primitive array (copied),
 * blocking and nonblocking, from 0 bytes to rendezvous sizes.
 */
public final class Buffers {
    private static final String KINDS = "BSCIJFD"; /* byte short char int long float double */
    private static final int[] KIND_BYTES = { 1, 2, 2, 4, 8, 4, 8 };

    private final Device dev;
    private final int me, peer;

    private Buffers(Device dev) {
        this.dev = dev;
        this.me = dev.rank();
        this.peer = 1 - me;
    }

    /* Set through Config, and seen to take effect in the case config(). */
    private static final int EAGER_LIMIT = 1024;

    public static void main(String[] args) {
        try (Device dev = Device.init(new Config().eagerLimit(EAGER_LIMIT))) {
            Buffers t = new Buffers(dev);
            Check.run(dev, "Config: the eager limit set is the one used", t::config);
            Check.run(dev, "direct ByteBuffer: position to limit, blocking", () -> t.directSlice(false));
            Check.run(dev, "direct ByteBuffer: position to limit, nonblocking", () -> t.directSlice(true));
            Check.run(dev, "heap ByteBuffer", t::heapBuffer);
            Check.run(dev, "read-only heap ByteBuffer: sent, never received into", t::readOnlyHeap);
            Check.run(dev, "arrays of every kind, blocking", t::arraysBlocking);
            Check.run(dev, "arrays of every kind, nonblocking: copied in on post, out when reaped",
                      t::arraysNonblocking);
            Check.run(dev, "zero bytes", t::zeroBytes);
            Check.run(dev, "large messages", t::large);
            Check.run(dev, "300 requests outstanding", t::manyOutstanding);
            Check.barrier(dev);
        }
    }

    /* Rank 0 sends bytes [3, 11) of 16; rank 1 receives them into [5, 13)
     * of 20 and nothing else of its buffer changes, nor either's position
     * and limit. */
    private void directSlice(boolean nonblocking) {
        if (me == 0) {
            ByteBuffer out = ByteBuffer.allocateDirect(16);
            for (int i = 0; i < 16; i++)
                out.put(i, (byte) i);
            out.position(3).limit(11);
            if (nonblocking)
                dev.isend(out, peer, 1, 0).waitFor();
            else
                dev.send(out, peer, 1, 0);
            that(out.position() == 3 && out.limit() == 11, "send moved position or limit");
        } else {
            ByteBuffer in = ByteBuffer.allocateDirect(20);
            for (int i = 0; i < 20; i++)
                in.put(i, (byte) 0x55);
            in.position(5).limit(13);
            Status st = nonblocking ? dev.irecv(in, peer, 1, 0).waitFor() : dev.recv(in, peer, 1, 0);
            equal(8, st.count(), "count");
            that(in.position() == 5 && in.limit() == 13, "recv moved position or limit");
            ByteBuffer all = in.duplicate().clear();
            for (int i = 0; i < 20; i++)
                equal(i >= 5 && i < 13 ? i - 2 : 0x55, all.get(i), "byte " + i);
        }
    }

    private void config() {
        if (me == 0) {
            long before = dev.stats().rendezvousSent();
            dev.send(new byte[EAGER_LIMIT], 0, EAGER_LIMIT, peer, 11, 0);
            equal(before, dev.stats().rendezvousSent(), "rendezvous at the eager limit");
            dev.send(new byte[EAGER_LIMIT + 1], 0, EAGER_LIMIT + 1, peer, 11, 0);
            equal(before + 1, dev.stats().rendezvousSent(), "rendezvous past the eager limit");
        } else {
            byte[] in = new byte[EAGER_LIMIT + 1];
            dev.recv(in, 0, in.length, peer, 11, 0);
            dev.recv(in, 0, in.length, peer, 11, 0);
        }
    }

    private void heapBuffer() {
        byte[] backing = new byte[16];
        Arrays.fill(backing, (byte) 0x55);
        ByteBuffer buf = ByteBuffer.wrap(backing, 4, 8).slice(); /* arrayOffset 4 */
        buf.position(2);
        if (me == 0) {
            for (int i = 0; i < 6; i++)
                buf.put(2 + i, (byte) i);
            dev.send(buf, peer, 2, 0);
            dev.isend(buf, peer, 2, 0).waitFor();
        } else {
            byte[] expected = backing.clone();
            for (int i = 0; i < 6; i++)
                expected[6 + i] = (byte) i;
            equal(6, dev.recv(buf, peer, 2, 0).count(), "count");
            that(Arrays.equals(backing, expected), "recv into a heap buffer: " + Arrays.toString(backing));
            Arrays.fill(backing, (byte) 0x55);
            equal(6, dev.irecv(buf, peer, 2, 0).waitFor().count(), "count");
            that(Arrays.equals(backing, expected), "irecv into a heap buffer: " + Arrays.toString(backing));
            equal(2, buf.position(), "position");
        }
    }

    /* Its array is hidden, but sending only reads: it is copied from (used
     * to throw IllegalArgumentException), and a receive into it throws
     * what one into a read-only direct buffer does. */
    private void readOnlyHeap() {
        ByteBuffer ro = ByteBuffer.wrap(new byte[] { 9, 8, 7, 6, 5 }).position(1).asReadOnlyBuffer();
        if (me == 0) {
            dev.send(ro, peer, 12, 0);
            dev.isend(ro, peer, 12, 0).waitFor();
            equal(1, ro.position(), "position");
        } else {
            for (int i = 0; i < 2; i++) {
                byte[] in = new byte[4];
                equal(4, dev.recv(in, 0, 4, peer, 12, 0).count(), "count");
                that(Arrays.equals(in, new byte[] { 8, 7, 6, 5 }), "payload " + Arrays.toString(in));
            }
        }
        for (ByteBuffer b : new ByteBuffer[] { ByteBuffer.allocate(4).asReadOnlyBuffer(),
                                               ByteBuffer.allocateDirect(4).asReadOnlyBuffer() }) {
            raises(ReadOnlyBufferException.class, () -> dev.recv(b, peer, 12, 0));
            raises(ReadOnlyBufferException.class, () -> dev.irecv(b, peer, 12, 0));
        }
    }

    /* An array of kind k and n elements, each different from the
     * elements of another seed. */
    private static Object array(char k, int n, int seed) {
        switch (k) {
        case 'B': { byte[] a = new byte[n]; for (int i = 0; i < n; i++) a[i] = (byte) (seed + i); return a; }
        case 'S': { short[] a = new short[n]; for (int i = 0; i < n; i++) a[i] = (short) (1000 * seed + i); return a; }
        case 'C': { char[] a = new char[n]; for (int i = 0; i < n; i++) a[i] = (char) (1000 * seed + i); return a; }
        case 'I': { int[] a = new int[n]; for (int i = 0; i < n; i++) a[i] = 100_000 * seed + i; return a; }
        case 'J': { long[] a = new long[n]; for (int i = 0; i < n; i++) a[i] = 1L << 40 | 1000L * seed + i; return a; }
        case 'F': { float[] a = new float[n]; for (int i = 0; i < n; i++) a[i] = seed + i + 0.5f; return a; }
        default: { double[] a = new double[n]; for (int i = 0; i < n; i++) a[i] = seed + i + 0.25; return a; }
        }
    }

    /* What the receiver's array of seed 9 holds once elements [2, 7) of
     * the sender's array of seed 1 have arrived at offset 3. */
    private static Object expectedAfter(char k) {
        Object expected = array(k, 10, 9);
        System.arraycopy(array(k, 10, 1), 2, expected, 3, 5);
        return expected;
    }

    private static int elementBytes(char k) {
        return KIND_BYTES[KINDS.indexOf(k)];
    }

    private void arraysBlocking() {
        for (char k : KINDS.toCharArray()) {
            if (me == 0) {
                dev.send(array(k, 10, 1), 2, 5, peer, 3, 0);
            } else {
                Object in = array(k, 10, 9);
                Status st = dev.recv(in, 3, 5, peer, 3, 0);
                equal(5L * elementBytes(k), st.count(), k + " count");
                that(Objects.deepEquals(in, expectedAfter(k)), k + " array received: " + str(in));
            }
        }
    }

    /* Rank 1 checks its arrays after rank 0's sends completed but before
     * reaping its receives: the data waits in native memory until then.
     * Rank 0 overwrites its arrays right after posting: they were copied. */
    private void arraysNonblocking() {
        List<Request> reqs = new ArrayList<>();
        List<Object> arrays = new ArrayList<>();
        for (char k : KINDS.toCharArray()) {
            Object a = array(k, 10, me == 0 ? 1 : 9);
            reqs.add(me == 0 ? dev.isend(a, 2, 5, peer, 4, 0) : dev.irecv(a, 3, 5, peer, 4, 0));
            arrays.add(a);
            if (me == 0)
                System.arraycopy(array(k, 10, 50), 0, a, 0, 10);
        }
        if (me == 0) {
            for (Request r : reqs)
                r.waitFor();
            dev.send(new byte[0], 0, 0, peer, 5, 0);
            return;
        }
        dev.recv(new byte[0], 0, 0, peer, 5, 0);
        for (int i = 0; i < KINDS.length(); i++) {
            char k = KINDS.charAt(i);
            that(Objects.deepEquals(arrays.get(i), array(k, 10, 9)), k + " array changed before its receive was reaped");
            equal(5L * elementBytes(k), reqs.get(i).waitFor().count(), k + " count");
            that(Objects.deepEquals(arrays.get(i), expectedAfter(k)), k + " array received: " + str(arrays.get(i)));
        }
    }

    private void zeroBytes() {
        ByteBuffer empty = ByteBuffer.allocateDirect(8).position(8);
        if (me == 0) {
            dev.send(empty, peer, 6, 0);
            dev.send(new double[4], 4, 0, peer, 6, 0);
            dev.isend(new int[0], 0, 0, peer, 6, 0).waitFor();
        } else {
            equal(0, dev.recv(empty, peer, 6, 0).count(), "ByteBuffer count");
            equal(0, dev.recv(new double[4], 4, 0, peer, 6, 0).count(), "double[] count");
            equal(0, dev.irecv(new int[0], 0, 0, peer, 6, 0).waitFor().count(), "int[] count");
        }
    }

    /* Past the eager limit: rendezvous, blocking and not, direct and arrays. */
    private void large() {
        int n = 1 << 17; /* 1 MiB of longs */
        ByteBuffer direct = ByteBuffer.allocateDirect(4 << 20);
        if (me == 0) {
            long[] longs = new long[n];
            for (int i = 0; i < n; i++)
                longs[i] = i * 3L;
            for (int i = 0; i < direct.capacity(); i += 8)
                direct.putLong(i, ~i);
            dev.send(longs, 0, n, peer, 7, 0);
            Request a = dev.isend(longs, 0, n, peer, 8, 0);
            Request b = dev.isend(direct, peer, 9, 0);
            a.waitFor();
            b.waitFor();
        } else {
            long[] in = new long[n];
            equal(8L * n, dev.recv(in, 0, n, peer, 7, 0).count(), "blocking count");
            for (int i = 0; i < n; i++)
                equal(i * 3L, in[i], "blocking element " + i);
            long[] in2 = new long[n];
            Request a = dev.irecv(in2, 0, n, peer, 8, 0);
            Request b = dev.irecv(direct, peer, 9, 0);
            equal(8L * n, a.waitFor().count(), "nonblocking count");
            equal(4 << 20, b.waitFor().count(), "direct count");
            that(Arrays.equals(in, in2), "nonblocking long[] payload");
            for (int i = 0; i < direct.capacity(); i += 8)
                equal(~i, direct.getLong(i), "direct at " + i);
        }
    }

    private void manyOutstanding() {
        int n = 300;
        int[][] in = new int[n][1];
        Request[] reqs = new Request[n];
        for (int i = 0; i < n; i++)
            reqs[i] = me == 1 ? dev.irecv(in[i], 0, 1, peer, 10, 0) : dev.isend(new int[] { i }, 0, 1, peer, 10, 0);
        for (int i = 0; i < n; i++)
            reqs[i].waitFor();
        for (int i = 0; me == 1 && i < n; i++)
            equal(i, in[i][0], "message " + i);
    }

    private static String str(Object array) {
        return Arrays.deepToString(new Object[] { array });
    }
}
