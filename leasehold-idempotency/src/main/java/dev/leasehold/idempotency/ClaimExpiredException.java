package dev.leasehold.idempotency;

/**
 * The claim on a request could not be renewed for so long that another execution may have taken it
 * over: the work must stop, and its SUCCESS mark is refused so its transaction rolls back.
 */
public class ClaimExpiredException extends IdempotencyConflictException {
    private static final long serialVersionUID = 1L;

    /** The claim on {@code clientKey} expired. */
    public ClaimExpiredException(String clientKey, String detail) {
        super(
                Reason.TAKEN_OVER,
                "the claim on request " + clientKey + " could not be renewed in time (" + detail
                        + "); another execution may own it now, so this one stops and commits nothing");
    }
}
