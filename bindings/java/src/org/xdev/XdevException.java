package org.xdev;

/**
 * An xdev call failed: {@link #code()} is its XDEV_ERR code. Truncation,
 * a dead peer and an interrupt have subclasses of their own. Unchecked,
 * as the errors of a message layer are mostly not recoverable where they
 * happen.
 */
public class XdevException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /* The XDEV_ERR codes of xdev.h. */
    public static final int OK = 0;
    public static final int ARG = -1;
    public static final int NOMEM = -2;
    public static final int TRUNCATE = -3;
    public static final int PEER = -4;
    public static final int CANCELED = -5;
    public static final int INIT = -6;
    public static final int SYSTEM = -7;
    public static final int TOO_LATE = -8;
    public static final int TIMEOUT = -9;
    public static final int WOKEN = -10;
    public static final int PEER_PENDING = -11;
    public static final int BUSY = -12;

    private final int code;
    private final Status status;

    XdevException(int code, Status status) {
        this(code, status, Native.strerror(code) + " (" + code + ")"
                + (status != null ? ": " + status : ""));
    }

    XdevException(int code, Status status, String message) {
        super(message);
        this.code = code;
        this.status = status;
    }

    /** The XDEV_ERR code. */
    public int code() { return code; }

    /** The failed operation's status, for a receive, a probe or a request; else null. */
    public Status status() { return status; }

    /**
     * The exception for a negative code; st (may be null) is copied into it
     * if the code is an operation's outcome (truncation, a dead peer).
     */
    static XdevException of(int code, Status st) {
        boolean outcome = code == TRUNCATE || code == PEER || code == PEER_PENDING;
        Status s = outcome && st != null ? st.copy() : null;
        switch (code) {
        case TRUNCATE: return new TruncationException(s);
        case PEER:
        case PEER_PENDING: return new PeerFailedException(code, s);
        case WOKEN: return new XdevInterruptedException();
        default: return new XdevException(code, s);
        }
    }

    /** rc if it is not an error, else the exception for it. */
    static int check(int rc, Status st) {
        if (rc < 0)
            throw of(rc, st);
        return rc;
    }
}
