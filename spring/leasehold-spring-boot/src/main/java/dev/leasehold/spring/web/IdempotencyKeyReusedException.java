package dev.leasehold.spring.web;

import dev.leasehold.LeaseholdException;

/** Thrown when an idempotency key is reused with another payload (HTTP 422). Nothing ran. */
public class IdempotencyKeyReusedException extends LeaseholdException {
    private static final long serialVersionUID = 1L;

    /** A reuse failure for a key. */
    public IdempotencyKeyReusedException(String key) {
        super("idempotency key '" + key + "' was already used with another payload; use a new key for a new request");
    }
}
