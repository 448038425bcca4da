package org.xdev;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A device's request storage and the Requests that hold it.
 *
 * <p>Storage: slots in native slabs of {@value #SLAB}, each an
 * xdev_request_t and the xdev_status_t it is reaped into (read through a
 * ByteBuffer view of the slab). Slabs never move (xdev owns an active
 * request's storage where it is) and are freed only after xdev_finalize.
 * A slot belongs to one Request from its post until it is reaped and no
 * thread is inside a call with it (Request counts those), then goes back
 * to the free list.
 *
 * <p>Owners: {@code owners[slot]} holds each posted Request strongly, so a
 * Request the program dropped, and the buffer it keeps, stays alive until
 * peek hands it out and it is reaped, or until close abandons it; the
 * collector never frees memory xdev may still write.
 *
 * <p>Peek: xdev_peek hands out a completion by its user field, the slot
 * number and the slot's generation, and the Request is looked up here
 * afterwards. Another thread may reap that request in between and the
 * slot go to a new Request; the generation, counted up each time a slot
 * is freed, tells, and the peek then has nothing to return. So nothing
 * waits for peeks to end (threads may peek without pause).
 */
final class RequestTable {
    private static final int SLAB = 64;

    private static final int REQUEST_BYTES = Native.requestSize();
    private static final int SLOT_BYTES = REQUEST_BYTES + Status.BYTES;

    private long[] slabs = new long[0];
    private ByteBuffer[] views = new ByteBuffer[0];
    private Request[] owners = new Request[0];
    private int[] generations = new int[0];
    private int[] free = new int[0];
    private int nfree;

    /**
     * Gives r a slot: sets r.slot, r.user (slot and generation, for the
     * request's user field), r.addr (its xdev_request_t) and where its
     * status is.
     */
    synchronized void add(Request r) {
        if (nfree == 0)
            grow();
        int slot = free[--nfree];
        int at = slot % SLAB * SLOT_BYTES;
        owners[slot] = r;
        r.slot = slot;
        r.user = (long) generations[slot] << 32 | slot;
        r.addr = slabs[slot / SLAB] + at;
        r.slab = views[slot / SLAB];
        r.statusAt = at + REQUEST_BYTES;
    }

    /** The slot's request was reaped (or never posted) and is left by every thread. */
    synchronized void remove(int slot) {
        owners[slot] = null;
        generations[slot] = (generations[slot] + 1) & Integer.MAX_VALUE; /* user stays >= 0 */
        free[nfree++] = slot;
    }

    /** The Request whose user field a peek returned, or null if it has been reaped since. */
    synchronized Request peeked(long user) {
        int slot = (int) user;
        return generations[slot] == (int) (user >>> 32) ? owners[slot] : null;
    }

    /** How many slots the table has: a test's view of its native memory. */
    synchronized int capacity() {
        return owners.length;
    }

    /**
     * After xdev_finalize (no thread inside a call): frees the slabs and
     * returns the Requests that were never reaped, for the caller to abandon.
     */
    synchronized List<Request> close() {
        List<Request> active = new ArrayList<>();
        for (Request r : owners)
            if (r != null)
                active.add(r);
        for (long slab : slabs)
            Native.free(slab);
        slabs = new long[0];
        views = new ByteBuffer[0];
        owners = new Request[0];
        nfree = 0;
        return active;
    }

    private void grow() {
        long slab = Native.allocate(SLAB * SLOT_BYTES, true);
        if (slab == 0)
            throw new OutOfMemoryError("xdev: no native memory for requests");
        int first = owners.length;
        slabs = Arrays.copyOf(slabs, slabs.length + 1);
        slabs[slabs.length - 1] = slab;
        views = Arrays.copyOf(views, views.length + 1);
        views[views.length - 1] = Native.view(slab, SLAB * SLOT_BYTES).order(ByteOrder.nativeOrder());
        owners = Arrays.copyOf(owners, first + SLAB);
        generations = Arrays.copyOf(generations, first + SLAB);
        free = Arrays.copyOf(free, first + SLAB);
        for (int i = SLAB - 1; i >= 0; i--)
            free[nfree++] = first + i;
    }
}
