package dev.leasehold.idempotency;

import dev.leasehold.LeaseholdException;

/**
 * Thrown when a side effect itself failed with a checked exception. Its transaction was rolled back
 * and its record marked ERROR, so running it again retries it.
 */
public class SideEffectFailedException extends LeaseholdException {
    private static final long serialVersionUID = 1L;

    /** A failure of the named effect. */
    public SideEffectFailedException(String effectName, Throwable cause) {
        super("side effect " + effectName + " failed and was rolled back: " + cause, cause);
    }
}
