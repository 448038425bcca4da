package org.xdev;

/**
 * Turns {@link Thread#interrupt()} of a thread blocked in xdev into
 * xdev_wakeup of its device.
 *
 * <p>Java has no public hook on interrupt other than an
 * AbstractInterruptibleChannel's begin/end, and that costs about 55 ns per
 * blocking call here (two monitor handoffs), a quarter of an 8-byte
 * message. Instead a daemon thread looks every {@value #TICK_MS} ms, while
 * a device is open, for threads that are blocked in a call and
 * interrupted, and wakes their device. The blocked call returns
 * XDEV_ERR_WOKEN, sees the interrupt and throws
 * {@link XdevInterruptedException}; the other threads blocked on that
 * device go back to waiting. A wakeup that comes before the blocked call
 * began to wait (and so is lost) is repeated at the next tick, which a
 * hook fired once by interrupt() could not do. Blocking calls pay three
 * field writes for this; an idle device, a wakeup of this thread every
 * tick. It also wakes a device where a thread waits in a wildcard call
 * that a death since the call began fails (see Device.deadAtStart).
 */
final class InterruptWatch implements Runnable {
    static final int TICK_MS = 20;

    private static int openDevices;
    private static Thread watcher;

    private InterruptWatch() {}

    static synchronized void deviceOpened() {
        if (openDevices++ > 0)
            return;
        if (watcher == null) {
            watcher = new Thread(new InterruptWatch(), "xdev-interrupt-watch");
            watcher.setDaemon(true);
            watcher.start();
        } else {
            InterruptWatch.class.notifyAll();
        }
    }

    static synchronized void deviceClosed() {
        openDevices--;
    }

    private static synchronized void awaitOpenDevice() throws InterruptedException {
        while (openDevices == 0)
            InterruptWatch.class.wait();
    }

    @Override
    public void run() {
        for (;;) {
            try {
                awaitOpenDevice();
                Thread.sleep(TICK_MS);
            } catch (InterruptedException e) {
                /* nobody should interrupt this thread; it costs a tick */
            }
            Caller.wakeInterrupted();
        }
    }
}
