package org.xdev;

/**
 * A message was longer than the receive buffer: the buffer was filled
 * ({@code status().count()} bytes) and nothing was written past it;
 * {@code status().msgLen()} is the message's full length.
 */
public final class TruncationException extends XdevException {
    private static final long serialVersionUID = 1L;

    TruncationException(Status status) {
        super(TRUNCATE, status);
    }
}
