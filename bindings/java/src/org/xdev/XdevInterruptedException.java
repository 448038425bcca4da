package org.xdev;

/**
 * A blocking call was made by, or blocked in, a thread that was
 * interrupted. As with {@link InterruptedException}, the thread's
 * interrupt status is cleared when this is thrown. What the call had not
 * begun is undone (a receive that matched nothing takes no message); a
 * waited-for request stays active, to be waited for again or cancelled.
 */
public final class XdevInterruptedException extends XdevException {
    private static final long serialVersionUID = 1L;

    XdevInterruptedException() {
        super(WOKEN, null, "interrupted while blocked in xdev");
    }
}
