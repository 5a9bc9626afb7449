package dev.leasehold.idempotency;

import dev.leasehold.LeaseholdException;

/**
 * Thrown when a request or side effect is owned by another execution (an HTTP 409): the record was
 * taken over (this execution must stop), or a side effect is being executed by someone else right
 * now. Nothing was changed by the refused call.
 */
public class IdempotencyConflictException extends LeaseholdException {
    private static final long serialVersionUID = 1L;

    /** Why the call was refused. */
    public enum Reason {
        /** Another execution of the request is in progress: "request in progress, do not resubmit". */
        IN_PROGRESS,
        /** The request was taken over by another execution: "request taken over by another execution". */
        TAKEN_OVER,
        /** The side effect is being executed by another execution right now. */
        EFFECT_IN_PROGRESS,
        /** The session already has a request in progress: "session still has a message in progress". */
        SESSION_BUSY
    }

    private final Reason reason;

    /** A conflict for the given reason. */
    public IdempotencyConflictException(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    /** Why the call was refused. */
    public Reason reason() {
        return reason;
    }
}
