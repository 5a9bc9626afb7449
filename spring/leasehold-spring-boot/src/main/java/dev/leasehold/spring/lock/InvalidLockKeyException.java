package dev.leasehold.spring.lock;

import dev.leasehold.spring.web.Idempotent;

/**
 * Thrown when a {@link Locked} or {@link Idempotent} method's arguments do not make a valid key (a
 * null or blank part, a malformed value): the caller's input is wrong (HTTP 400), nothing was
 * locked.
 */
public class InvalidLockKeyException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    /** A key failure with its cause. */
    public InvalidLockKeyException(String message, Throwable cause) {
        super(message, cause);
    }
}
