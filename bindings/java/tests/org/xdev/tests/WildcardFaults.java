package org.xdev.tests;

import static org.xdev.tests.Check.equal;
import static org.xdev.tests.Check.that;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;

import org.xdev.Device;
import org.xdev.Message;
import org.xdev.PeerFailedException;
import org.xdev.PeerState;
import org.xdev.Status;
import org.xdev.XdevException;

/**
 * Run with 3 ranks and XDEV_WILDCARD_FAILS=1. Rank 2 dies (halt: no
 * finalize) while twelve threads of each survivor wait from ANY_SOURCE
 * for a tag nobody sends, four each in probe, mprobe and recv. Each must
 * fail with
 * PeerFailedException (PEER_PENDING, its status as called), also when
 * the death was noticed by another thread's call while wakeup() had sent
 * it back round the binding's retry: the main thread keeps waking them
 * and probing the victim until it sees the death.
 */
public final class WildcardFaults {
    private static final int VICTIM = 2;
    private static final int NEVER = 70; /* a tag nobody sends */
    private static final int READY = 71;
    private static final int LIVE = 72;
    private static final int WAITERS = 12; /* of each kind in turn */
    private static final Set<String> WAIT_NATIVES = Set.of("probe", "mprobe", "recvArray");

    public static void main(String[] args) throws Exception {
        Device dev = Device.init();
        equal(3, dev.size(), "ranks");
        if (dev.rank() == VICTIM) {
            byte[] one = new byte[1];
            for (int r = 0; r < 2; r++)
                dev.recv(one, 0, 1, r, READY, 0);
            Thread.sleep(200); /* the survivors' main threads are waking their waiters */
            Runtime.getRuntime().halt(0);
        }
        Check.run(dev, "a death fails the blocking wildcard calls under way, woken or not",
                  () -> survive(dev));
        dev.close();
    }

    /* A frame of the wait's own native shows it under way, its dead counted. */
    private static boolean inXdev(Thread t) {
        for (StackTraceElement f : t.getStackTrace())
            if (f.getClassName().equals("org.xdev.Native")
                    && WAIT_NATIVES.contains(f.getMethodName()))
                return true;
        return false;
    }

    private interface Wait {
        void run() throws Exception;
    }

    private static void survive(Device dev) throws Exception {
        Wait[] waits = {
            () -> dev.probe(Device.ANY_SOURCE, NEVER, 0),
            () -> dev.mprobe(Device.ANY_SOURCE, NEVER, 0),
            () -> dev.recv(new byte[1], 0, 1, Device.ANY_SOURCE, NEVER, 0),
        };
        List<Thread> threads = new ArrayList<>();
        List<AtomicReference<Throwable>> outcomes = new ArrayList<>();
        for (int i = 0; i < WAITERS; i++) {
            Wait w = waits[i % waits.length];
            AtomicReference<Throwable> outcome = new AtomicReference<>();
            Thread t = new Thread(() -> {
                try {
                    w.run();
                } catch (Throwable e) {
                    outcome.set(e);
                }
            });
            t.start();
            threads.add(t);
            outcomes.add(outcome);
        }
        /* A waiter that counted the dead only after the death would rightly
         * wait for ever: the victim dies once every one is in xdev. */
        for (Thread t : threads)
            while (!inXdev(t))
                Thread.sleep(1);
        dev.send(new byte[1], 0, 1, VICTIM, READY, 0);
        Thread noticer = new Thread(() -> {
            while (dev.peerState(VICTIM) != PeerState.DEAD)
                dev.iprobe(VICTIM, NEVER, 0); /* its progress notices the death */
        });
        noticer.start();
        while (noticer.isAlive())
            dev.wakeup();
        for (int i = 0; i < threads.size(); i++) {
            threads.get(i).join(20_000);
            that(!threads.get(i).isAlive(), "wait " + i + " still blocked after the death");
            Throwable e = outcomes.get(i).get();
            that(e instanceof PeerFailedException, "wait " + i + " ended with " + e);
            PeerFailedException p = (PeerFailedException) e;
            equal(XdevException.PEER_PENDING, p.code(), "wait " + i + "'s code");
            Status st = p.status();
            that(st != null, "wait " + i + " has no status");
            equal(Device.ANY_SOURCE, st.source(), "its status's source");
            equal(NEVER, st.tag(), "its status's tag");
            equal(XdevException.PEER_PENDING, st.error(), "its status's error");
            equal(0, st.count(), "its status's count");
        }
        /* The death is known now: a wildcard call begun after it is not
         * failed by it, and gets what the other survivor sends. */
        int other = 1 - dev.rank();
        dev.send(new byte[] { 42 }, 0, 1, other, LIVE, 0);
        equal(other, dev.probe(Device.ANY_SOURCE, LIVE, 0).source(), "probe after the death");
        Message m = dev.mprobe(Device.ANY_SOURCE, LIVE, 0);
        byte[] got = new byte[1];
        equal(1, m.recv(got, 0, 1).count(), "the survivor's message");
        equal(42, got[0], "its byte");
    }
}
