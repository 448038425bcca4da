package org.xdev;

/** What the tests read of the binding's insides (same package, other jar). */
public final class Internals {
    private Internals() {}

    /** How many request slots d's table holds: its native request memory. */
    public static int requestSlots(Device d) {
        return d.requests.capacity();
    }
}
