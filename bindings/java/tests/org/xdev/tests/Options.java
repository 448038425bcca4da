package org.xdev.tests;

import static org.xdev.tests.Check.equal;
import static org.xdev.tests.Check.raises;
import static org.xdev.tests.Check.that;

import java.nio.ByteBuffer;

import org.xdev.Config;
import org.xdev.Device;
import org.xdev.XdevException;

/**
 * Config.option, in a job whose environment holds a value shm refuses
 * (meson's java-options: XDEV_SHM_CMA_MODE=sideways, --transport shm), so
 * a device starts only if the option reaches xdev: a bad option fails
 * Device.init(config) with ARG, the environment alone fails to start, and
 * the option over it starts a device that carries a message.
 */
public final class Options {
    private static final int LEN = 1 << 20;

    public static void main(String[] args) {
        that("sideways".equals(System.getenv("XDEV_SHM_CMA_MODE")),
                "run with XDEV_SHM_CMA_MODE=sideways in the environment");
        refused(new Config().option("XDEV_NO_SUCH_OPTION", "1"), "an unknown name");
        refused(new Config().option("XDEV_EAGER_LIMIT", "4k"), "a variable that is not an option");
        refused(new Config().option("XDEV_SHM_RING", "banana"), "a bad value");
        /* "name=value" reaches xdev: a name with '=' (or NUL) would be read
         * as another name and value. Next to options that start a device
         * here, so that only the bad one can fail it: the first used to
         * pass as XDEV_OFI_PROVIDER = "tcp=x". */
        refused(startable().option("XDEV_OFI_PROVIDER=tcp", "x"), "a name with '='");
        refused(startable().option("XDEV_OFI_PROVIDER\0", "tcp"), "a name with NUL");
        refused(startable().option("", "tcp"), "an empty name");
        refused(startable().option("XDEV_OFI_PROVIDER", "tcp\0"), "a value with NUL");
        equal(XdevException.INIT, raises(XdevException.class, Device::init).code(),
                "the environment alone");

        try (Device dev = Device.init(startable())) {
            Check.run(dev, "the option overrides the environment", () -> exchange(dev));
            Check.barrier(dev);
        }
    }

    /* What starts a device over the environment's bad CMA mode. CMA_MIN 0:
     * the rendezvous is one copy, pushed by the sender as write says (where
     * the kernel allows CMA; else streamed). */
    private static Config startable() {
        return new Config().option("XDEV_SHM_CMA_MODE", "write").option("XDEV_SHM_CMA_MIN", "0");
    }

    private static void refused(Config config, String what) {
        XdevException e = raises(XdevException.class, () -> Device.init(config).close());
        equal(XdevException.ARG, e.code(), what);
    }

    /* Rank 0 sends LEN bytes to rank 1, which returns them. */
    private static void exchange(Device dev) {
        int peer = 1 - dev.rank();
        ByteBuffer buf = ByteBuffer.allocateDirect(LEN);
        if (dev.rank() == 0) {
            for (int i = 0; i < LEN; i++)
                buf.put(i, (byte) (i * 7));
            dev.send(buf, peer, 1, 0);
            for (int i = 0; i < LEN; i++)
                buf.put(i, (byte) 0);
            equal(LEN, dev.recv(buf, peer, 2, 0).count(), "count");
            for (int i = 0; i < LEN; i++)
                equal((byte) (i * 7), buf.get(i), "byte " + i);
        } else {
            equal(LEN, dev.recv(buf, peer, 1, 0).count(), "count");
            dev.send(buf, peer, 2, 0);
        }
    }
}
