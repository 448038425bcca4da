package org.xdev.tests;

import static org.xdev.tests.Check.equal;
import static org.xdev.tests.Check.raises;
import static org.xdev.tests.Check.that;

import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

import org.xdev.Config;
import org.xdev.Device;
import org.xdev.Message;
import org.xdev.PeerState;
import org.xdev.Request;
import org.xdev.Stats;
import org.xdev.Status;
import org.xdev.XdevException;

/** Every call of the binding between the two ranks of a job. */
public final class Calls {
    private final Device dev;
    private final int me, peer;

    private Calls(Device dev) {
        this.dev = dev;
        this.me = dev.rank();
        this.peer = 1 - me;
    }

    public static void main(String[] args) {
        Device dev = Device.init();
        Calls t = new Calls(dev);
        Check.run(dev, "rank, size, version", t::accessors);
        Check.run(dev, "send and recv", t::sendRecv);
        Check.run(dev, "issend completes only once matched", t::issendWaitsForMatch);
        Check.run(dev, "isend, irecv and waitFor", t::nonblocking);
        Check.run(dev, "test", t::test);
        Check.run(dev, "iprobe and probe", t::probes);
        Check.run(dev, "peek hands out the posted Request objects", t::peek);
        Check.run(dev, "peekTimed", t::peekTimed);
        Check.run(dev, "cancel", t::cancel);
        Check.run(dev, "improbe, mprobe and Message receives", t::matchedProbe);
        Check.run(dev, "testSome and waitSome", t::testSomeWaitSome);
        Check.run(dev, "peerState", t::peerState);
        Check.run(dev, "stats", t::stats);
        Check.run(dev, "wakeup leaves uninterrupted calls waiting", t::wakeup);
        Check.run(dev, "bad arguments", t::badArguments);
        Check.run(dev, "Config reaches xdev_init", Calls::config);
        Check.run(dev, "close", t::close);
    }

    private static ByteBuffer direct(int bytes) {
        return ByteBuffer.allocateDirect(bytes);
    }

    private void accessors() {
        that(me == 0 || me == 1, "rank " + me);
        equal(2, dev.size(), "size");
        that(Device.version().matches("\\d+\\.\\d+\\.\\d+"), "version " + Device.version());
    }

    private void sendRecv() {
        ByteBuffer out = direct(8).putLong(0, 1000 + me);
        ByteBuffer in = direct(8);
        Status st = new Status();
        if (me == 0) {
            dev.send(out, peer, 1, 3);
            dev.recv(in, Device.ANY_SOURCE, Device.ANY_TAG, 3, st);
        } else {
            dev.recv(in, Device.ANY_SOURCE, Device.ANY_TAG, 3, st);
            dev.ssend(out, peer, 1, 3);
        }
        equal(1000 + peer, in.getLong(0), "payload");
        equal(peer, st.source(), "source");
        equal(1, st.tag(), "tag");
        equal(3, st.ctx(), "ctx");
        equal(8, st.count(), "count");
        equal(8, st.msgLen(), "msgLen");
        equal(XdevException.OK, st.error(), "error");
    }

    /* Rank 1 receives the issend's message only after a go message, sent
     * after rank 0 tested the issend. */
    private void issendWaitsForMatch() {
        int[] data = { 42 };
        if (me == 0) {
            Request r = dev.issend(data, 0, 1, peer, 5, 0);
            that(r.test() == null, "issend completed before a receive matched it");
            dev.send(new byte[0], 0, 0, peer, 6, 0);
            Status st = r.waitFor();
            equal(4, st.count(), "count sent");
        } else {
            dev.recv(new byte[0], 0, 0, peer, 6, 0);
            int[] in = new int[1];
            dev.recv(in, 0, 1, peer, 5, 0);
            equal(42, in[0], "payload");
        }
    }

    private void nonblocking() {
        ByteBuffer in = direct(16);
        ByteBuffer out = direct(16).putLong(0, me).putLong(8, -me);
        Request r = dev.irecv(in, peer, 2, 0);
        Request s = dev.isend(out, peer, 2, 0);
        Status sst = s.waitFor();
        Status rst = r.waitFor();
        equal(16, sst.count(), "send count");
        equal(peer, rst.source(), "source");
        equal(16, rst.count(), "count");
        equal(peer, in.getLong(0), "payload");
        equal(-peer, in.getLong(8), "payload");
        that(r.isDone() && r.status() == rst && r.waitFor() == rst, "a reaped request keeps its status");
    }

    private void test() {
        if (me == 0) {
            long[] in = new long[1];
            Request r = dev.irecv(in, 0, 1, peer, 7, 0);
            that(r.test() == null, "test found a message the peer has not sent");
            dev.send(new byte[0], 0, 0, peer, 8, 0);
            Status st;
            while ((st = r.test()) == null)
                Thread.onSpinWait();
            equal(77, in[0], "payload");
            that(r.test() == st, "test after completion returns the same status");
        } else {
            dev.recv(new byte[0], 0, 0, peer, 8, 0);
            dev.send(new long[] { 77 }, 0, 1, peer, 7, 0);
        }
    }

    private void probes() {
        if (me == 1) {
            dev.send(new byte[24], 0, 24, peer, 9, 4);
        } else {
            Status st = dev.probe(peer, 9, 4);
            equal(peer, st.source(), "source");
            equal(9, st.tag(), "tag");
            equal(4, st.ctx(), "ctx");
            equal(24, st.count(), "count");
            Status again = dev.iprobe(Device.ANY_SOURCE, Device.ANY_TAG, 4);
            that(again != null && again.count() == 24, "iprobe finds the probed message");
            that(dev.iprobe(peer, 10, 4) == null, "iprobe found a message of another tag");
            dev.recv(new byte[24], 0, 24, peer, 9, 4);
            that(dev.iprobe(peer, 9, 4) == null, "the message stayed after it was received");
        }
        Check.barrier(dev);
    }

    /* Rank 1 sends in the order 12, 10, 11; rank 0 posted 10, 11, 12 and
     * dropped nothing: each peek must return one of its own objects. */
    private void peek() {
        if (me == 0) {
            Set<Request> posted = new HashSet<>();
            for (int tag = 10; tag <= 12; tag++)
                posted.add(dev.irecv(direct(4), peer, tag, 0));
            dev.send(new byte[0], 0, 0, peer, 13, 0);
            Set<Request> peeked = new HashSet<>();
            for (int i = 0; i < 3; i++) {
                Request r = dev.peek();
                that(posted.contains(r), "peek returned an object that was not posted");
                that(peeked.add(r), "peek returned a request twice");
                that(r.waitFor().count() == 4, "count");
            }
        } else {
            dev.recv(new byte[0], 0, 0, peer, 13, 0);
            for (int tag : new int[] { 12, 10, 11 })
                dev.send(direct(4), peer, tag, 0);
        }
        Check.barrier(dev);
    }

    private void peekTimed() {
        long t0 = System.nanoTime();
        that(dev.peekTimed(50) == null, "peekTimed with nothing posted returned a request");
        long ms = (System.nanoTime() - t0) / 1_000_000;
        that(ms >= 45, "peekTimed(50) returned after " + ms + " ms");
        that(dev.peekTimed(0) == null, "peekTimed(0) returned a request");
        raises(IllegalArgumentException.class, () -> dev.peekTimed(-2));
        Request r = dev.irecv(direct(4), me, 40, 0);
        dev.send(direct(4), me, 40, 0);
        that(dev.peekTimed(-1) == r, "peekTimed(-1) did not wait for the receive");
        equal(4, r.waitFor().count(), "count");
    }

    private void cancel() {
        Request r = dev.irecv(direct(8), peer, 14, 0);
        that(r.cancel(), "cancel of a receive nothing matched");
        Status st = r.waitFor();
        that(st.isCancelled(), "a cancelled receive's status: " + st);
        equal(0, st.count(), "count");
        that(!r.cancel(), "cancel of a reaped request");
        Request s = dev.isend(direct(8), me, 15, 0);
        dev.recv(direct(8), me, 15, 0);
        that(!s.cancel(), "cancel of a send its receive has taken");
        equal(8, s.waitFor().count(), "send count");
    }

    private void matchedProbe() {
        if (me == 1) {
            dev.send(new byte[16], 0, 16, peer, 20, 0);
            dev.send(new int[] { 1, 2, 3, 4, 5, 6, 7, 8 }, 0, 8, peer, 20, 0);
        } else {
            Message m;
            while ((m = dev.improbe(peer, 20, 0)) == null)
                Thread.onSpinWait();
            equal(16, m.status().msgLen(), "first message's length");
            Status next = dev.iprobe(peer, 20, 0);
            that(next == null || next.count() == 32, "a claimed message is out of matching");
            ByteBuffer in = direct(16);
            equal(16, m.recv(in).count(), "Message.recv count");
            Message used = m;
            XdevException e = raises(XdevException.class, () -> used.recv(direct(16)));
            equal(XdevException.ARG, e.code(), "a second receive of one message");

            Message m2 = dev.mprobe(peer, 20, 0);
            equal(32, m2.status().count(), "second message's length");
            int[] ints = new int[10];
            Status st = m2.irecv(ints, 1, 8).waitFor();
            equal(32, st.count(), "Message.irecv count");
            that(Arrays.equals(ints, new int[] { 0, 1, 2, 3, 4, 5, 6, 7, 8, 0 }),
                 "Message.irecv payload " + Arrays.toString(ints));
        }
        Check.barrier(dev);
    }

    private void testSomeWaitSome() {
        /* As xdev refuses a request listed twice, before reaping anything
         * (it used to look again forever). */
        Request twice = dev.irecv(direct(4), me, 28, 0);
        dev.send(direct(4), me, 28, 0);
        raises(IllegalArgumentException.class, () -> Request.testSome(twice, null, twice));
        raises(IllegalArgumentException.class, () -> Request.waitSome(twice, twice));
        that(!twice.isDone(), "a refused testSome or waitSome reaped it");
        equal(0, Request.waitSome(twice)[0], "the index of the one entry");
        raises(IllegalArgumentException.class, () -> Request.testSome(twice, twice)); /* reaped too */
        if (me == 0) {
            Request[] reqs = new Request[5];
            for (int i = 0; i < 4; i++)
                reqs[i] = dev.irecv(direct(4), peer, 21 + i, 0);
            /* reqs[4] stays null: skipped */
            equal(0, Request.testSome(reqs).length, "testSome before anything was sent");
            dev.send(new byte[0], 0, 0, peer, 26, 0);
            Set<Integer> done = new HashSet<>();
            while (done.size() < 2)
                for (int i : Request.waitSome(reqs))
                    that(done.add(i), "index " + i + " reaped twice");
            that(done.equals(Set.of(1, 3)), "waitSome reaped " + done);
            that(reqs[1].isDone() && reqs[1].status().tag() == 22, "status of a reaped entry");
            dev.send(new byte[0], 0, 0, peer, 26, 0);
            while (done.size() < 4)
                for (int i : Request.testSome(reqs))
                    that(done.add(i), "index " + i + " reaped twice");
            equal(0, Request.waitSome(reqs).length, "waitSome with nothing active");
        } else {
            dev.recv(new byte[0], 0, 0, peer, 26, 0);
            dev.send(direct(4), peer, 22, 0);
            dev.send(direct(4), peer, 24, 0);
            dev.recv(new byte[0], 0, 0, peer, 26, 0);
            dev.send(direct(4), peer, 21, 0);
            dev.send(direct(4), peer, 23, 0);
        }
        Check.barrier(dev);
    }

    private void peerState() {
        that(dev.peerState(peer) == PeerState.ALIVE, "a peer that sent is " + dev.peerState(peer));
        that(dev.peerState(me) == PeerState.ALIVE, "self is " + dev.peerState(me));
        XdevException e = raises(XdevException.class, () -> dev.peerState(2));
        equal(XdevException.ARG, e.code(), "peerState of a rank out of range");
    }

    private void stats() {
        Stats s = dev.stats();
        that(!s.transports().isEmpty(), "no transport");
        long sent = 0;
        for (Stats.Transport t : s.transports())
            sent += t.msgsSent;
        that(sent > 10, "messages sent to the peer: " + sent);
        that(s.selfMessages() >= 1, "messages to self: " + s.selfMessages());
        equal(0, s.peersDead(), "dead peers");
    }

    /* A wakeup makes the blocked recv return to its loop, which waits
     * again: the thread is still blocked until the message comes. */
    private void wakeup() throws InterruptedException {
        if (me == 0) {
            long[] in = new long[1];
            Thread t = new Thread(() -> dev.recv(in, 0, 1, peer, 27, 0));
            t.start();
            Thread.sleep(50);
            dev.wakeup();
            Thread.sleep(50);
            that(t.isAlive(), "a recv returned after a wakeup, with no message");
            dev.send(new byte[0], 0, 0, peer, 28, 0);
            t.join(10_000);
            that(!t.isAlive(), "the recv did not get its message");
            equal(27, in[0], "payload");
        } else {
            dev.recv(new byte[0], 0, 0, peer, 28, 0);
            dev.send(new long[] { 27 }, 0, 1, peer, 27, 0);
        }
    }

    private void badArguments() {
        equal(XdevException.ARG, raises(XdevException.class, () -> dev.send(direct(1), 2, 0, 0)).code(),
              "send to a rank out of range");
        equal(XdevException.ARG, raises(XdevException.class, () -> dev.isend(direct(1), peer, -2, 0)).code(),
              "isend with a negative tag");
        equal(XdevException.ARG, raises(XdevException.class, () -> dev.irecv(new int[1], 0, 1, peer, 0, -1)).code(),
              "irecv with a negative context");
        raises(IndexOutOfBoundsException.class, () -> dev.send(new int[4], 2, 3, peer, 0, 0));
        raises(IllegalArgumentException.class, () -> dev.send(new boolean[4], 0, 4, peer, 0, 0));
        raises(IllegalArgumentException.class, () -> dev.send("text", 0, 4, peer, 0, 0));
        raises(ReadOnlyBufferException.class, () -> dev.recv(direct(4).asReadOnlyBuffer(), peer, 0, 0));
        /* a read-only heap buffer alike, whose array is hidden */
        raises(ReadOnlyBufferException.class, () -> dev.recv(ByteBuffer.allocate(4).asReadOnlyBuffer(), peer, 0, 0));
        raises(ReadOnlyBufferException.class, () -> dev.irecv(ByteBuffer.allocate(4).asReadOnlyBuffer(), peer, 0, 0));
        raises(NullPointerException.class, () -> dev.send((ByteBuffer) null, peer, 0, 0));
    }

    /* A second device of the same rank would clash with this one: check
     * that Config's fields reach xdev_init through the errors they cause. */
    private static void config() {
        equal(XdevException.ARG,
              raises(XdevException.class, () -> Device.init(new Config().jobSecret("short"))).code(),
              "a job secret under 16 characters");
        equal(XdevException.INIT,
              raises(XdevException.class, () -> Device.init(new Config().transport("carrier-pigeon"))).code(),
              "an unknown transport");
        equal(XdevException.ARG,
              raises(XdevException.class, () -> Device.init(new Config().rank(5).size(2))).code(),
              "a rank out of range");
    }

    private void close() {
        Check.barrier(dev);
        Request reaped = dev.irecv(direct(1), me, 16, 0);
        dev.send(direct(1), me, 16, 0);
        equal(1, reaped.waitFor().count(), "count");
        Request abandoned = dev.irecv(direct(1), peer, 17, 0);
        dev.close();
        dev.close();
        /* a Request outlives its device: nothing left to reap is no call */
        that(abandoned.test().isCancelled(), "close abandoned the receive");
        equal(0, Request.testSome(reaped, abandoned).length, "testSome after close");
        equal(0, Request.waitSome(abandoned, null, reaped).length, "waitSome after close");
        raises(IllegalStateException.class, () -> dev.send(direct(1), peer, 0, 0));
        raises(IllegalStateException.class, () -> dev.iprobe(peer, 0, 0));
        raises(IllegalStateException.class, dev::rank);
        raises(IllegalStateException.class, dev::size);
    }
}
