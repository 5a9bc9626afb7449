package dev.leasehold;

import java.time.Duration;

/**
 * Thrown when a key stays held by another owner for the whole wait time: the resource is being
 * processed elsewhere and the caller should retry later. Busy is an ordinary
 * outcome; {@code tryAcquire} reports it as an empty result instead.
 */
public class LockBusyException extends LeaseholdException {
    private static final long serialVersionUID = 1L;

    private final transient LockKey key;
    private final Duration waited;

    /** A busy failure for a key after waiting {@code waited}. */
    public LockBusyException(LockKey key, Duration waited) {
        this(
                key,
                waited,
                key + " is being processed by another owner; gave up after waiting " + waited + ". Retry later.");
    }

    /** A busy failure with a custom message. */
    public LockBusyException(LockKey key, Duration waited, String message) {
        super(message);
        this.key = key;
        this.waited = waited;
    }

    /** The key that was busy. */
    public LockKey key() {
        return key;
    }

    /** How long the caller waited before giving up. */
    public Duration waited() {
        return waited;
    }
}
