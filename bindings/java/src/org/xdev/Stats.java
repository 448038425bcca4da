package org.xdev;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** A device's counters (xdev_stats), as {@link Device#stats()} read them. */
public final class Stats {
    private static final int MAX_TRANSPORTS = 4; /* XDEV_STATS_MAX_TRANSPORTS */

    /* Filled by jni_device.c: 4 counters per transport, then the 6 totals. */
    final long[] counters = new long[4 * MAX_TRANSPORTS + 6];
    final String[] names = new String[MAX_TRANSPORTS];
    int ntransports;

    Stats() {}

    /** One transport's traffic: the caller's messages it carried. */
    public static final class Transport {
        public final String name;
        public final long msgsSent, bytesSent, msgsReceived, bytesReceived;

        Transport(String name, long[] c, int at) {
            this.name = name;
            this.msgsSent = c[at];
            this.bytesSent = c[at + 1];
            this.msgsReceived = c[at + 2];
            this.bytesReceived = c[at + 3];
        }

        @Override
        public String toString() {
            return name + ": sent " + msgsSent + " msgs, " + bytesSent + " bytes; received "
                    + msgsReceived + " msgs, " + bytesReceived + " bytes";
        }
    }

    public List<Transport> transports() {
        List<Transport> list = new ArrayList<>();
        for (int i = 0; i < ntransports; i++)
            list.add(new Transport(names[i], counters, 4 * i));
        return Collections.unmodifiableList(list);
    }

    private long total(int i) { return counters[4 * MAX_TRANSPORTS + i]; }

    /** Sends to one's own rank. */
    public long selfMessages() { return total(0); }

    public long rendezvousSent() { return total(1); }

    public long rendezvousReceived() { return total(2); }

    /** Unexpected-message memory held now, and the most it ever held. */
    public long unexpectedBytes() { return total(3); }

    public long unexpectedPeak() { return total(4); }

    /** Ranks seen dead. */
    public int peersDead() { return (int) total(5); }
}
