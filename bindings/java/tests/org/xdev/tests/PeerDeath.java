package org.xdev.tests;

import static org.xdev.tests.Check.equal;
import static org.xdev.tests.Check.raises;
import static org.xdev.tests.Check.that;

import org.xdev.Device;
import org.xdev.PeerFailedException;
import org.xdev.PeerState;
import org.xdev.Request;
import org.xdev.XdevException;

/**
 * Rank 1 sends one message and exits without closing its device (halt: no
 * finalize, no shutdown hook), as a crashed process would. Rank 0 gets
 * what it sent (the prefix rule), then every call that involves it fails
 * with PeerFailedException, a receive posted before the death included,
 * and nothing hangs.
 */
public final class PeerDeath {
    public static void main(String[] args) {
        Device dev = Device.init();
        if (dev.rank() == 1) {
            dev.send(new int[] { 123 }, 0, 1, 0, 1, 0);
            dev.recv(new byte[0], 0, 0, 0, 2, 0); /* rank 0 has posted its receive */
            Runtime.getRuntime().halt(0);
        }
        Check.run(dev, "a dead peer's calls fail with PeerFailedException", () -> survive(dev));
        dev.close();
    }

    private static void survive(Device dev) {
        int[] in = new int[1];
        Request pending = dev.irecv(in, 0, 1, 1, 3, 0);
        dev.send(new byte[0], 0, 0, 1, 2, 0);
        equal(4, dev.recv(in, 0, 1, 1, 1, 0).count(), "the message sent before dying");
        equal(123, in[0], "its payload");

        PeerFailedException e = raises(PeerFailedException.class, pending::waitFor);
        equal(XdevException.PEER, e.code(), "code of the pending receive");
        equal(XdevException.PEER, pending.status().error(), "its status");
        equal(0, pending.status().count(), "its count");

        equal(XdevException.PEER, raises(PeerFailedException.class, () -> dev.recv(in, 0, 1, 1, 1, 0)).code(),
              "a receive naming the dead rank");
        /* The blocking probes too, with xdev's status for a source gone with
         * nothing left: that rank, the error, and ANY_TAG (no message has
         * it, so it is not a cut marker's). */
        for (PeerFailedException p : new PeerFailedException[] {
                raises(PeerFailedException.class, () -> dev.probe(1, 4, 0)),
                raises(PeerFailedException.class, () -> dev.mprobe(1, 4, 0)) }) {
            equal(XdevException.PEER, p.code(), "code of a probe naming the dead rank");
            that(p.status() != null, "no status");
            equal(XdevException.PEER, p.status().error(), "its status's error");
            equal(1, p.status().source(), "its status's source");
            equal(Device.ANY_TAG, p.status().tag(), "its status's tag");
        }
        raises(PeerFailedException.class, () -> dev.send(in, 0, 1, 1, 1, 0));
        /* xdev may refuse the post or fail the request: either way it is reported */
        raises(PeerFailedException.class, () -> dev.isend(in, 0, 1, 1, 1, 0).waitFor());
        that(dev.peerState(1) == PeerState.DEAD, "peer state " + dev.peerState(1));
        equal(1, dev.stats().peersDead(), "dead peers");
    }
}
