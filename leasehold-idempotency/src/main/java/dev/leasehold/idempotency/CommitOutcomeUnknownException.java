package dev.leasehold.idempotency;

import dev.leasehold.LeaseholdException;

/**
 * The commit of a request's transaction (its business write together with its SUCCESS mark) failed,
 * so whether it committed is unknown. Both commit or neither does, so a retry with the same
 * idempotency key is safe: it replays the stored response if the transaction committed, and runs
 * the request once if it did not.
 */
public class CommitOutcomeUnknownException extends LeaseholdException {
    private static final long serialVersionUID = 1L;

    private final String clientKey;

    /** The commit of the request with {@code clientKey} failed with {@code cause}. */
    public CommitOutcomeUnknownException(String clientKey, Throwable cause) {
        super(
                "the commit of request " + clientKey + " failed (" + cause
                        + "), so it is unknown whether it took effect; retrying with the same idempotency key is safe:"
                        + " it returns the stored result if the commit took effect and runs the request once if not",
                cause);
        this.clientKey = clientKey;
    }

    /** The idempotency key of the request. */
    public String clientKey() {
        return clientKey;
    }
}
