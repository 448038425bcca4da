package org.xdev.bench;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.Arrays;

import org.xdev.Device;
import org.xdev.Request;
import org.xdev.Status;

/**
 * xdev-bench through the Java binding (OMB-J style): latency, bandwidth,
 * bidirectional bandwidth and message rate between the two ranks of a
 * job, with direct ByteBuffers or byte[] (--buffer). The timed loops are
 * bench_loops.h's; Method is bench_method.c's options and output.
 *
 *   xdevrun -n 2 java -Djava.library.path=DIR -cp xdev.jar:xdev-bench.jar \
 *       org.xdev.bench.Bench --tests latency,bw --min 8 --max 4M
 */
public final class Bench {
    private static final int TAG_DATA = 1, TAG_ACK = 2, TAG_BARRIER = 3;

    /** How data messages travel: the loops are the same for both. */
    private abstract static class Messages {
        final Device dev;
        final int peer, ctx;
        final Status status = new Status();

        Messages(Device dev, int ctx) {
            this.dev = dev;
            this.peer = 1 - dev.rank();
            this.ctx = ctx;
        }

        /** The size of the messages from now on. */
        abstract void size(int bytes);
        abstract void send(int tag);
        abstract void recv(int tag);
        abstract Request isend(int tag);
        abstract Request irecv(int tag);
    }

    /* Direct ByteBuffers, page-aligned, used in place. */
    private static final class DirectBuffers extends Messages {
        private final ByteBuffer sendBuf, recvBuf;
        private ByteBuffer s, r;

        DirectBuffers(Device dev, int ctx, int max) {
            super(dev, ctx);
            sendBuf = filled(max, dev.rank());
            recvBuf = filled(max, dev.rank());
        }

        private static ByteBuffer filled(int max, int rank) {
            int pages = (max + 4095) / 4096;
            ByteBuffer b = ByteBuffer.allocateDirect((pages + 1) * 4096).alignedSlice(4096);
            for (int i = 0; i < max; i++) /* touch every page before timing */
                b.put(i, (byte) ('a' + rank));
            return b;
        }

        @Override void size(int bytes) {
            s = sendBuf.slice(0, bytes);
            r = recvBuf.slice(0, bytes);
        }
        @Override void send(int tag) { dev.send(s, peer, tag, ctx); }
        @Override void recv(int tag) { dev.recv(r, peer, tag, ctx, status); }
        @Override Request isend(int tag) { return dev.isend(s, peer, tag, ctx); }
        @Override Request irecv(int tag) { return dev.irecv(r, peer, tag, ctx); }
    }

    /* byte[], copied through the binding's native memory. */
    private static final class ByteArrays extends Messages {
        private final byte[] sendArray, recvArray;
        private int n;

        ByteArrays(Device dev, int ctx, int max) {
            super(dev, ctx);
            sendArray = new byte[max];
            recvArray = new byte[max];
            Arrays.fill(sendArray, (byte) ('a' + dev.rank()));
        }

        @Override void size(int bytes) { n = bytes; }
        @Override void send(int tag) { dev.send(sendArray, 0, n, peer, tag, ctx); }
        @Override void recv(int tag) { dev.recv(recvArray, 0, n, peer, tag, ctx, status); }
        @Override Request isend(int tag) { return dev.isend(sendArray, 0, n, peer, tag, ctx); }
        @Override Request irecv(int tag) { return dev.irecv(recvArray, 0, n, peer, tag, ctx); }
    }

    private final Messages m;
    private final int rank, window;
    private final Request[] sends, recvs;
    private final ByteBuffer ack = ByteBuffer.allocateDirect(4), none = ByteBuffer.allocateDirect(0);

    private Bench(Messages m, int window) {
        this.m = m;
        this.rank = m.dev.rank();
        this.window = window;
        this.sends = new Request[window];
        this.recvs = new Request[window];
    }

    private void barrier() {
        if (rank == 0) {
            m.dev.send(none, m.peer, TAG_BARRIER, m.ctx);
            m.dev.recv(none, m.peer, TAG_BARRIER, m.ctx, m.status);
        } else {
            m.dev.recv(none, m.peer, TAG_BARRIER, m.ctx, m.status);
            m.dev.send(none, m.peer, TAG_BARRIER, m.ctx);
        }
    }

    private void pingPong() {
        if (rank == 0) {
            m.send(TAG_DATA);
            m.recv(TAG_DATA);
        } else {
            m.recv(TAG_DATA);
            m.send(TAG_DATA);
        }
    }

    private static void waitAll(Request[] reqs) {
        for (Request r : reqs)
            r.waitFor();
    }

    /* The bw pattern: rank 0 sends a window, rank 1 acks it. */
    private void window() {
        if (rank == 0) {
            for (int i = 0; i < window; i++)
                sends[i] = m.isend(TAG_DATA);
            waitAll(sends);
            m.dev.recv(ack, m.peer, TAG_ACK, m.ctx, m.status);
        } else {
            for (int i = 0; i < window; i++)
                recvs[i] = m.irecv(TAG_DATA);
            waitAll(recvs);
            m.dev.send(ack, m.peer, TAG_ACK, m.ctx);
        }
    }

    /* The bibw pattern: a window each way at once. */
    private void exchange() {
        for (int i = 0; i < window; i++)
            recvs[i] = m.irecv(TAG_DATA);
        for (int i = 0; i < window; i++)
            sends[i] = m.isend(TAG_DATA);
        waitAll(sends);
        waitAll(recvs);
    }

    /* One loop per pattern, each compiled on its own: a loop shared by the
     * tests would be compiled for the one warmed up last and thrown away
     * when the next test begins. */
    private void repeat(Method.Test test, long n) {
        switch (test) {
        case LATENCY: pingPongs(n); break;
        case BW: case RATE: windows(n); break;
        case BIBW: exchanges(n); break;
        }
    }

    private void pingPongs(long n) {
        for (long i = 0; i < n; i++)
            pingPong();
    }

    private void windows(long n) {
        for (long i = 0; i < n; i++)
            window();
    }

    private void exchanges(long n) {
        for (long i = 0; i < n; i++)
            exchange();
    }

    private double run(Method.Test test, long size, long iters, long warmup) {
        m.size((int) size);
        repeat(test, warmup);
        long t0 = System.nanoTime();
        repeat(test, iters);
        return (System.nanoTime() - t0) * 1e-9;
    }

    public static void main(String[] args) {
        Method o = Method.parse(args);
        if (o.arrays && System.getProperty("org.xdev.pool.max") == null) /* a window of copies */
            System.setProperty("org.xdev.pool.max", Long.toString(2L * o.window * o.maxSize));
        String transport = System.getenv("XDEV_TRANSPORT");
        if (transport == null || transport.isEmpty())
            transport = "auto";
        String system = "xdev-java (" + (o.arrays ? "byte[]" : "ByteBuffer") + ")";
        String setup = "transport " + transport + ", 2 ranks";

        boolean twoRanks;
        try (Device dev = Device.init()) {
            twoRanks = dev.size() == 2;
            if (twoRanks)
                runTests(dev, o, system, setup, transport);
            else if (dev.rank() == 0)
                System.err.println("xdev-java-bench: needs exactly 2 ranks, the job has " + dev.size());
        }
        if (!twoRanks)
            System.exit(1);
    }

    private static void runTests(Device dev, Method o, String system, String setup, String transport) {
        int max = (int) Math.max(o.maxSize, 1);
        Messages m = o.arrays ? new ByteArrays(dev, o.ctx, max) : new DirectBuffers(dev, o.ctx, max);
        Bench b = new Bench(m, o.window);
        b.warmJit(o);
        if (dev.rank() == 0)
            o.printHeader();
        for (Method.Test t : Method.Test.values()) {
            if (!o.tests[t.ordinal()])
                continue;
            b.barrier();
            if (dev.rank() == 0)
                o.printTitle(t, system, setup);
            for (long size = o.firstSize(); o.runsAt(t, size); size = Method.nextSize(size)) {
                long iters = o.iterations(t, size);
                b.barrier();
                double secs = b.run(t, size, iters, o.warmups(t, size));
                if (dev.rank() == 0)
                    o.printRow(t, size, iters, o.value(t, secs, size, iters), transport);
            }
            if (dev.rank() == 0)
                o.printEnd();
        }
        b.barrier();
    }

    /*
     * The JIT compiles a loop after some ten thousand passes; C needs no such
     * warm-up, so it is done before, not inside, any timing: a few passes at
     * every size the run will time, so that the compiled code has every
     * branch a size takes (an empty message, a bigger scratch block) and is
     * not thrown away later, then many at a small size. Each rank is bound
     * to one CPU by xdevrun, where the compiler threads would take time
     * from the timed loops: they get to finish first.
     */
    private void warmJit(Method o) {
        if (o.jitWarmup == 0)
            return;
        long small = Math.min(Math.max(o.firstSize(), 1), Math.min(o.maxSize, 1024));
        for (Method.Test t : Method.Test.values()) {
            if (!o.tests[t.ordinal()])
                continue;
            barrier();
            for (long size = o.firstSize(); o.runsAt(t, size); size = Method.nextSize(size))
                run(t, size, t.windowed ? 2 : 100, 0);
            run(t, small, t.windowed ? Math.max(1, o.jitWarmup / window) : o.jitWarmup, 0);
            for (int i = 0; i < 1000; i++) /* and the code that prints a row */
                o.row(t, i, i, i * 0.001, "");
        }
        awaitQuietJit();
    }

    /* Until 50 ms pass with no compilation finished, for at most 2 s;
     * yielding to the compiler threads but not sleeping, so that the CPU
     * is not idle (and slow to come back) when the timing starts. */
    private static void awaitQuietJit() {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        if (jit == null || !jit.isCompilationTimeMonitoringSupported())
            return;
        long start = System.nanoTime(), since = start, compiled = jit.getTotalCompilationTime();
        for (long now = start; now - since < 50_000_000 && now - start < 2_000_000_000L; now = System.nanoTime()) {
            Thread.yield();
            long c = jit.getTotalCompilationTime();
            if (c != compiled) {
                compiled = c;
                since = now;
            }
        }
    }
}
