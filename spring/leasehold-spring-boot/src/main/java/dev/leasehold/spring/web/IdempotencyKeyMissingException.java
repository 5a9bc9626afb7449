package dev.leasehold.spring.web;

import dev.leasehold.LeaseholdException;

/** Thrown when an {@link Idempotent} call has no idempotency key (HTTP 400). Nothing ran. */
public class IdempotencyKeyMissingException extends LeaseholdException {
    private static final long serialVersionUID = 1L;

    /** A missing-key failure. */
    public IdempotencyKeyMissingException(String message) {
        super(message);
    }
}
