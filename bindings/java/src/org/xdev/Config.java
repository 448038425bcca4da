package org.xdev;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Configuration for {@link Device#init(Config)}: every field starts as the
 * environment (the XDEV_* variables xdevrun sets) or xdev's default says,
 * and what is set here overrides it (xdev_config_t).
 */
public final class Config {
    /** The caller uses the device from one thread at a time; xdev takes no locks. */
    public static final int SINGLE_THREAD = 1;
    /** A progress thread advances transfers while the application computes. */
    public static final int PROGRESS_THREAD = 2;
    /** A peer's death fails the wildcard-source receives posted at that moment. */
    public static final int WILDCARD_FAILS = 4;

    /* Bits of `set`, as jni_device.c's SET_*. */
    private static final int RANK = 1, SIZE = 2, PEERS = 4, TRANSPORT = 8, SECRET = 16,
            EAGER = 32, UNEXPECTED = 64, PEER_TIMEOUT = 128, FINALIZE_TIMEOUT = 256, FLAGS = 512,
            OPTIONS = 1024;

    private int set;
    private int rank, size, peerTimeoutMs, finalizeTimeoutMs, flags;
    private String[] peers;
    private String transport, jobSecret;
    private long eagerLimit, unexpectedLimit;
    private final List<String> options = new ArrayList<>();
    private boolean badOption;

    public Config rank(int rank) { this.rank = rank; set |= RANK; return this; }

    public Config size(int size) { this.size = size; set |= SIZE; return this; }

    /** An explicit peer table: entry i is "host:port" where rank i listens. */
    public Config peers(String... peers) {
        this.peers = peers.clone();
        for (String p : this.peers)
            Objects.requireNonNull(p, "peer address");
        set |= PEERS;
        return this;
    }

    /** "auto" (shm within a host, the best network between hosts), "shm" or "tcp". */
    public Config transport(String transport) {
        this.transport = Objects.requireNonNull(transport);
        set |= TRANSPORT;
        return this;
    }

    /** Shared by every rank of the job, at least 16 characters. */
    public Config jobSecret(String secret) {
        this.jobSecret = Objects.requireNonNull(secret);
        set |= SECRET;
        return this;
    }

    /** The largest message sent eagerly; larger ones use rendezvous. */
    public Config eagerLimit(long bytes) { this.eagerLimit = bytes; set |= EAGER; return this; }

    /** Unexpected eager data buffered before senders are slowed down. */
    public Config unexpectedLimit(long bytes) { this.unexpectedLimit = bytes; set |= UNEXPECTED; return this; }

    public Config peerTimeoutMs(int ms) { this.peerTimeoutMs = ms; set |= PEER_TIMEOUT; return this; }

    public Config finalizeTimeoutMs(int ms) { this.finalizeTimeoutMs = ms; set |= FINALIZE_TIMEOUT; return this; }

    /** SINGLE_THREAD, PROGRESS_THREAD and WILDCARD_FAILS, or'ed. */
    public Config flags(int flags) { this.flags = flags; set |= FLAGS; return this; }

    /**
     * A transport option for this device alone, over the environment's
     * variable of that name: one the README's Environment table marks as
     * an option, such as option("XDEV_SHM_RING", "4m"). Checked by
     * {@link Device#init(Config)}, which throws XdevException ARG for a
     * name that is not an option (also an empty one, or one with '=' or
     * NUL) or a value it refuses (also one with NUL). Given twice, the
     * last value holds, but each must be valid (as xdev_config_t.options).
     */
    public Config option(String name, String value) {
        Objects.requireNonNull(name, "option name");
        Objects.requireNonNull(value, "option value");
        /* xdev gets "name=value" and splits it at the first '=', and C
         * strings end at NUL: such a name or value would reach xdev as
         * another one, so init refuses it as xdev refuses a bad option. */
        if (name.isEmpty() || name.indexOf('=') >= 0 || name.indexOf('\0') >= 0
                || value.indexOf('\0') >= 0)
            badOption = true;
        options.add(name + "=" + value);
        set |= OPTIONS;
        return this;
    }

    /** The flags the device start() makes has: these, or the environment's. */
    int deviceFlags() {
        return (set & FLAGS) != 0 ? flags : Native.envFlags();
    }

    /** xdev_init with this configuration: the device's address, or an error code. */
    long start() {
        if (badOption)
            return XdevException.ARG;
        return Native.init(true, set, rank, size, peers, transport, jobSecret, eagerLimit,
                unexpectedLimit, peerTimeoutMs, finalizeTimeoutMs, flags,
                options.toArray(new String[0]));
    }
}
