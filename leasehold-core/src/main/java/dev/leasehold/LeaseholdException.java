package dev.leasehold;

/**
 * The root of every exception Leasehold throws on purpose. Unchecked: callers decide where to
 * handle contention and infrastructure failures, usually at a request boundary.
 */
public class LeaseholdException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** An exception with a message a user can act on. */
    public LeaseholdException(String message) {
        super(message);
    }

    /** An exception with a message and its cause. */
    public LeaseholdException(String message, Throwable cause) {
        super(message, cause);
    }
}
