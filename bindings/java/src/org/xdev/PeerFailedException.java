package org.xdev;

/**
 * The peer died, left or broke the protocol ({@link XdevException#PEER}),
 * or with {@code Config.WILDCARD_FAILS} a wildcard receive learned that a
 * rank that could have sent it died ({@link XdevException#PEER_PENDING}).
 * The device stays usable for the other ranks.
 */
public final class PeerFailedException extends XdevException {
    private static final long serialVersionUID = 1L;

    PeerFailedException(int code, Status status) {
        super(code, status);
    }
}
