package org.xdev.tests;

import static org.xdev.tests.Check.equal;
import static org.xdev.tests.Check.raises;
import static org.xdev.tests.Check.that;

import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import org.xdev.Device;
import org.xdev.Internals;
import org.xdev.Message;
import org.xdev.Request;
import org.xdev.Status;
import org.xdev.XdevInterruptedException;

/**
 * Threads and the lifetime of requests: interrupting a thread blocked in
 * xdev, several threads sharing one device, requests the program dropped,
 * and close abandoning what was never reaped.
 */
public final class Threads {
    /* The binding promises interrupts within a tick (20 ms) or so. */
    private static final long INTERRUPT_MS = 100;

    private final Device dev;
    private final int me, peer;

    private Threads(Device dev) {
        this.dev = dev;
        this.me = dev.rank();
        this.peer = 1 - me;
    }

    public static void main(String[] args) throws Exception {
        Device dev = Device.init();
        Threads t = new Threads(dev);
        Check.run(dev, "interrupt a recv blocked in xdev", () -> t.interrupted(
                () -> dev.recv(new long[1], 0, 1, t.peer, 1, 0), 1));
        Check.run(dev, "interrupt a probe", () -> t.interrupted(() -> dev.probe(t.peer, 2, 0), 2));
        Check.run(dev, "interrupt a peek", () -> t.interrupted(dev::peek, -1));
        Check.run(dev, "interrupt a waitFor: the request stays active", t::interruptWaitFor);
        Check.run(dev, "an interrupted ssend finishes once matched, the interrupt kept",
                  t::interruptSsend);
        Check.run(dev, "an interrupted thread's blocking calls throw at once", t::interruptedBefore);
        Check.run(dev, "the collector runs while a receive into an array waits", t::collectWhileBlocked);
        Check.run(dev, "four threads share the device", t::sharedDevice);
        Check.run(dev, "two threads wait for one request", t::twoWaiters);
        Check.run(dev, "waitSome races waitSome, waitFor and test for one request", t::waitSomeRace);
        Check.run(dev, "waitSome returns when waitFor reaps one of its requests", t::waitSomeLosesOne);
        Check.run(dev, "a dropped request lives until peek hands it out", t::droppedRequest);
        Check.run(dev, "peek and waitFor race for the same requests", t::peekRacesWait);
        Check.run(dev, "overlapping peeks do not hold reaped requests' storage",
                  t::overlappingPeeks);
        Check.run(dev, "close wakes a blocked thread, abandons what was never reaped, and lets it go",
                  t::close);
    }

    private interface Blocking {
        void call();
    }

    /**
     * Rank 0 interrupts a thread blocked in call, which must throw within
     * INTERRUPT_MS with its interrupt status cleared; then rank 1 sends on
     * tag (if not -1), and that message must still be there: an interrupted
     * receive takes none.
     */
    private void interrupted(Blocking call, int tag) throws Exception {
        if (me == 0) {
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            long[] thrownAt = new long[1];
            boolean[] stillInterrupted = new boolean[1];
            Thread t = new Thread(() -> {
                try {
                    call.call();
                } catch (Throwable e) {
                    thrownAt[0] = System.nanoTime();
                    thrown.set(e);
                    stillInterrupted[0] = Thread.currentThread().isInterrupted();
                }
            });
            t.start();
            Thread.sleep(200); /* long enough to be asleep in xdev */
            long t0 = System.nanoTime();
            t.interrupt();
            t.join(5000);
            that(thrown.get() instanceof XdevInterruptedException, "the blocked call ended with " + thrown.get());
            long ms = (thrownAt[0] - t0) / 1_000_000;
            that(ms < INTERRUPT_MS, "interrupt took " + ms + " ms");
            System.out.println("  (the blocked call threw " + ms + " ms after the interrupt)");
            that(!stillInterrupted[0], "the interrupt status was not cleared");
        }
        Check.barrier(dev);
        if (tag < 0)
            return;
        if (me == 1) {
            dev.send(new long[] { tag }, 0, 1, peer, tag, 0);
        } else {
            long[] in = new long[1];
            dev.recv(in, 0, 1, peer, tag, 0);
            equal(tag, in[0], "the message the interrupted call was waiting for");
        }
    }

    /* A blocking send has begun once posted: interrupted before its
     * receive matched it, it waits for the match and returns normally,
     * and the thread's interrupt status stays set for its next call. */
    private void interruptSsend() throws Exception {
        if (me == 1) {
            dev.recv(new byte[0], 0, 0, peer, 35, 0);
            int[] in = new int[1];
            dev.recv(in, 0, 1, peer, 34, 0);
            equal(34, in[0], "the ssend's message");
            return;
        }
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        boolean[] returned = new boolean[1], stillInterrupted = new boolean[1];
        Thread t = new Thread(() -> {
            try {
                dev.ssend(new int[] { 34 }, 0, 1, peer, 34, 0);
                returned[0] = true;
                stillInterrupted[0] = Thread.currentThread().isInterrupted();
            } catch (Throwable e) {
                thrown.set(e);
            }
        });
        t.start();
        Thread.sleep(200);
        t.interrupt();
        Thread.sleep(3 * INTERRUPT_MS); /* the watcher has woken it by now */
        that(t.isAlive(), "the interrupted ssend returned before its receive was posted");
        dev.send(new byte[0], 0, 0, peer, 35, 0);
        t.join(5000);
        that(thrown.get() == null && returned[0], "the ssend ended with " + thrown.get());
        that(stillInterrupted[0], "the ssend cleared the interrupt status");
    }

    private void interruptWaitFor() throws Exception {
        if (me == 0) {
            int[] in = new int[1];
            Request r = dev.irecv(in, 0, 1, peer, 3, 0);
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            Thread t = new Thread(() -> {
                try {
                    r.waitFor();
                } catch (Throwable e) {
                    thrown.set(e);
                }
            });
            t.start();
            Thread.sleep(100);
            t.interrupt();
            t.join(5000);
            that(thrown.get() instanceof XdevInterruptedException, "waitFor ended with " + thrown.get());
            that(!r.isDone(), "the interrupted request was reaped");
            dev.send(new byte[0], 0, 0, peer, 4, 0);
            equal(4, r.waitFor().count(), "count");
            equal(33, in[0], "payload");
        } else {
            dev.recv(new byte[0], 0, 0, peer, 4, 0);
            dev.send(new int[] { 33 }, 0, 1, peer, 3, 0);
        }
    }

    private void interruptedBefore() {
        Thread.currentThread().interrupt();
        raises(XdevInterruptedException.class, () -> dev.recv(ByteBuffer.allocateDirect(1), peer, 5, 0));
        that(!Thread.interrupted(), "the interrupt status was not cleared");
        Thread.currentThread().interrupt();
        that(dev.iprobe(peer, 5, 0) == null, "iprobe");
        that(Thread.interrupted(), "a nonblocking call cleared the interrupt status");

        /* Message.recv throws before it receives: the claim is kept. */
        dev.send(new byte[] { 1, 2, (byte) me }, 0, 3, peer, 17, 0);
        Message m = dev.mprobe(peer, 17, 0);
        byte[] got = new byte[3];
        Thread.currentThread().interrupt();
        raises(XdevInterruptedException.class, () -> m.recv(got, 0, 3));
        that(!Thread.interrupted(), "Message.recv left the interrupt status set");
        equal(0, got[0], "a byte received by the interrupted Message.recv");
        equal(3, m.recv(got, 0, 3).count(), "the claimed message's count");
        that(Arrays.equals(got, new byte[] { 1, 2, (byte) peer }), "the claimed message's bytes");
    }

    /* Arrays are copied, never pinned: a full collection must not wait for
     * a receive into one (a JNI critical section would make it). */
    private void collectWhileBlocked() throws Exception {
        if (me == 0) {
            byte[] big = new byte[1 << 20];
            Thread t = new Thread(() -> dev.recv(big, 0, big.length, peer, 6, 0));
            t.start();
            Thread.sleep(50);
            long t0 = System.nanoTime();
            collectGarbage();
            long ms = (System.nanoTime() - t0) / 1_000_000;
            that(t.isAlive(), "the receive returned with nothing sent");
            that(ms < 2000, "three collections took " + ms + " ms");
            dev.send(new byte[0], 0, 0, peer, 7, 0);
            t.join(5000);
            that(!t.isAlive() && big[0] == 6, "the receive did not complete");
        } else {
            dev.recv(new byte[0], 0, 0, peer, 7, 0);
            byte[] msg = new byte[1 << 20];
            msg[0] = 6;
            dev.send(msg, 0, msg.length, peer, 6, 0);
        }
    }

    /* Each thread ping-pongs on its own tag, alternately with a direct
     * ByteBuffer and an int[], and checks every payload. */
    private void sharedDevice() throws Exception {
        int threads = 4, rounds = 300;
        List<Thread> list = new ArrayList<>();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        for (int i = 0; i < threads; i++) {
            int tag = 10 + i;
            Thread t = new Thread(() -> {
                try {
                    pingPong(tag, rounds);
                } catch (Throwable e) {
                    failed.compareAndSet(null, e);
                }
            });
            list.add(t);
            t.start();
        }
        for (Thread t : list)
            t.join();
        if (failed.get() != null)
            throw new AssertionError("a thread failed", failed.get());
    }

    private void pingPong(int tag, int rounds) {
        ByteBuffer buf = ByteBuffer.allocateDirect(8);
        int[] ints = new int[2];
        Status st = new Status();
        for (int i = 0; i < rounds; i++) {
            boolean direct = i % 2 == 0;
            if (me == 0) {
                buf.putInt(0, tag).putInt(4, i);
                if (direct)
                    dev.send(buf, peer, tag, 0);
                else
                    dev.send(new int[] { tag, i }, 0, 2, peer, tag, 0);
            }
            if (direct) {
                dev.recv(buf, peer, tag, 0, st);
                ints[0] = buf.getInt(0);
                ints[1] = buf.getInt(4);
            } else {
                dev.recv(ints, 0, 2, peer, tag, 0, st);
            }
            that(ints[0] == tag && ints[1] == i, "thread " + tag + " round " + i + " got " + ints[0] + "," + ints[1]);
            if (me == 1) {
                if (direct)
                    dev.send(buf, peer, tag, 0);
                else
                    dev.send(ints, 0, 2, peer, tag, 0);
            }
        }
    }

    private void twoWaiters() throws Exception {
        if (me == 0) {
            Request r = dev.irecv(new byte[4], 0, 4, peer, 20, 0);
            Status[] got = new Status[2];
            Thread[] waiters = new Thread[2];
            for (int i = 0; i < 2; i++) {
                int k = i;
                waiters[i] = new Thread(() -> got[k] = r.waitFor());
                waiters[i].start();
            }
            Thread.sleep(50);
            dev.send(new byte[0], 0, 0, peer, 21, 0);
            for (Thread t : waiters)
                t.join(5000);
            that(got[0] != null && got[0] == got[1], "the waiters got " + got[0] + " and " + got[1]);
            equal(4, got[0].count(), "count");
        } else {
            dev.recv(new byte[0], 0, 0, peer, 21, 0);
            dev.send(new byte[4], 0, 4, peer, 20, 0);
        }
    }

    /*
     * Two threads reap one receive into an array, one with waitSome and
     * the other with waitSome, waitFor or a test loop, as this thread sends
     * the message (to itself): both return, and it is reaped once. Each
     * rank, hundreds of times (a second or two). xdev_waitsome used to reap
     * again, when it woke, what another thread had reaped while it slept:
     * the JVM crashed in copyOut, or both waited forever.
     */
    private void waitSomeRace() throws Exception {
        long end = System.nanoTime() + 3_000_000_000L;
        int it;
        for (it = 0; it < 600 && System.nanoTime() < end; it++) {
            int mode = it % 3, value = it;
            int[] in = new int[1];
            Request r = dev.irecv(in, 0, 1, me, 1, 5);
            AtomicReference<Throwable> failed = new AtomicReference<>();
            int[][] got = { new int[0], new int[0] };
            Thread a = new Thread(() -> {
                try {
                    got[0] = Request.waitSome(r);
                } catch (Throwable e) {
                    failed.set(e);
                }
            });
            Thread b = new Thread(() -> {
                try {
                    if (mode == 0)
                        got[1] = Request.waitSome(r);
                    else if (mode == 1)
                        r.waitFor();
                    else
                        while (r.test() == null)
                            Thread.onSpinWait();
                } catch (Throwable e) {
                    failed.set(e);
                }
            });
            a.setDaemon(true);
            b.setDaemon(true);
            a.start();
            b.start();
            dev.send(new int[] { value }, 0, 1, me, 1, 5);
            a.join(5000);
            b.join(5000);
            String where = "iteration " + it + " (" + new String[] { "waitSome", "waitFor", "test" }[mode] + ")";
            that(!a.isAlive() && !b.isAlive(), where + ": a thread still waits");
            that(failed.get() == null, where + ": " + failed.get());
            that(r.isDone() && r.status().count() == 4 && in[0] == value, where + ": " + r.status());
            that(got[0].length + got[1].length <= 1 && (mode != 0 || got[0].length + got[1].length == 1),
                 where + ": waitSome reported it " + (got[0].length + got[1].length) + " times");
        }
        that(it >= 100, "only " + it + " iterations");
        that(dev.iprobe(me, Device.ANY_TAG, 5) == null, "a message left over");
    }

    /*
     * A thread in waitSome(r, never) while another reaps r with waitFor: the
     * loser returns (with nothing reaped by it), as xdev_waitsome's losing
     * waiter does, instead of waiting on for `never`, which nobody sends.
     * It used to wait on in about half the rounds.
     */
    private void waitSomeLosesOne() throws Exception {
        for (int it = 0; it < 12; it++) {
            int[] in = new int[1], none = new int[1];
            CountDownLatch calling = new CountDownLatch(1);
            Request r = dev.irecv(in, 0, 1, me, 1, 6);
            Request never = dev.irecv(none, 0, 1, me, 2, 6);
            AtomicReference<Throwable> failed = new AtomicReference<>();
            int[][] got = { null };
            Thread a = new Thread(() -> {
                try {
                    calling.countDown();
                    got[0] = Request.waitSome(r, never);
                } catch (Throwable e) {
                    failed.set(e);
                }
            });
            a.setDaemon(true);
            a.start();
            calling.await();
            Thread.sleep(20); /* a is asleep in waitSome by now */
            dev.send(new int[] { it }, 0, 1, me, 1, 6);
            Status st = r.waitFor();
            a.join(5000);
            boolean stuck = a.isAlive();
            never.cancel();
            never.waitFor();
            a.join(5000);
            that(!stuck, "round " + it + ": waitSome waited on for the request nobody sends");
            that(failed.get() == null, "round " + it + ": " + failed.get());
            that(st.count() == 4 && in[0] == it, "round " + it + ": " + st);
            that(got[0] != null && got[0].length <= 1, "round " + it + ": " + Arrays.toString(got[0]));
        }
    }

    /* Rank 0 keeps only a weak reference to its request and the array; the
     * device must keep both until peek hands the request out, and reap it
     * once only. */
    private void droppedRequest() {
        if (me == 0) {
            int[] in = new int[3];
            WeakReference<Request> weak = new WeakReference<>(dev.irecv(in, 0, 3, peer, 22, 0));
            collectGarbage();
            that(weak.get() != null, "the device let an active request be collected");
            dev.send(new byte[0], 0, 0, peer, 23, 0);
            Request r = dev.peek();
            that(r == weak.get(), "peek returned another object than the one posted");
            Status st = r.waitFor();
            equal(12, st.count(), "count");
            that(in[0] == 1 && in[1] == 2 && in[2] == 3, "payload");
            that(r.waitFor() == st, "a second waitFor");
            that(dev.peekTimed(0) == null, "peek handed the request out twice");
        } else {
            dev.recv(new byte[0], 0, 0, peer, 23, 0);
            dev.send(new int[] { 1, 2, 3 }, 0, 3, peer, 22, 0);
        }
    }

    /* One thread peeks while another reaps the same requests: peek may hand
     * out a request the other is reaping (or has reaped), never another
     * object, never one twice, and slots are not reused under it. */
    private void peekRacesWait() throws Exception {
        int n = 500;
        if (me == 1) {
            dev.recv(new byte[0], 0, 0, peer, 31, 0);
            for (int i = 0; i < n; i++)
                dev.send(new int[] { i }, 0, 1, peer, 30, 0);
            return;
        }
        Request[] posted = new Request[n];
        for (int i = 0; i < n; i++)
            posted[i] = dev.irecv(new int[1], 0, 1, peer, 30, 0);
        Set<Request> all = Collections.newSetFromMap(new IdentityHashMap<>());
        all.addAll(Arrays.asList(posted));
        List<Request> peeked = new ArrayList<>();
        Thread peeker = new Thread(() -> {
            Request r;
            while ((r = dev.peekTimed(200)) != null)
                peeked.add(r);
        });
        peeker.start();
        dev.send(new byte[0], 0, 0, peer, 31, 0);
        for (Request r : posted)
            equal(4, r.waitFor().count(), "count");
        peeker.join();
        Set<Request> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        for (Request r : peeked) {
            that(all.contains(r), "peek returned an object that was not posted");
            that(seen.add(r), "peek returned a request twice");
        }
    }

    /* Two threads in peekTimed loops are never both outside a peek; the
     * requests reaped meanwhile must still give their slots back (they
     * once waited for a moment with no peek under way, which never came). */
    private void overlappingPeeks() throws Exception {
        int n = 50_000;
        int before = Internals.requestSlots(dev);
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> peekers = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            Thread p = new Thread(() -> {
                while (!stop.get())
                    dev.peekTimed(20);
            });
            p.start();
            peekers.add(p);
        }
        ByteBuffer in = ByteBuffer.allocateDirect(4), out = ByteBuffer.allocateDirect(4);
        for (int i = 0; i < n; i++) {
            Request r = dev.irecv(in.clear(), me, 33, 0);
            dev.send(out.clear(), me, 33, 0);
            equal(4, r.waitFor().count(), "count");
        }
        stop.set(true);
        for (Thread p : peekers)
            p.join();
        int after = Internals.requestSlots(dev);
        that(after <= before + 64, n + " requests reaped under overlapping peeks left "
             + after + " slots (" + before + " before)");
        Check.barrier(dev);
    }

    private void close() throws Exception {
        Check.barrier(dev);
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread blocked = new Thread(() -> {
            try { /* from any source: the peer's own close does not fail it */
                dev.recv(new byte[8], 0, 8, Device.ANY_SOURCE, 26, 0);
            } catch (Throwable e) {
                thrown.set(e);
            }
        });
        blocked.start();
        WeakReference<Request> weak = new WeakReference<>(dev.irecv(new byte[8], 0, 8, peer, 24, 0));
        Request kept = dev.irecv(ByteBuffer.allocateDirect(8), peer, 25, 0);
        Thread.sleep(50);
        dev.close();
        blocked.join(5000);
        that(thrown.get() instanceof IllegalStateException, "the blocked recv ended with " + thrown.get());
        that(kept.isDone() && kept.status().isCancelled(), "an abandoned request: " + kept.status());
        that(kept.waitFor().isCancelled(), "waitFor of an abandoned request");
        collectGarbage();
        that(weak.get() == null, "the closed device still holds a dropped request");
    }

    private static void collectGarbage() {
        for (int i = 0; i < 3; i++) {
            System.gc();
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
