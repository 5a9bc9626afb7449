package dev.leasehold.spring.web;

import dev.leasehold.LeaseholdException;

/**
 * The answer of an {@link Idempotent} method cannot be stored (the application's JSON mapper cannot
 * write it, or a header is malformed), or its payload cannot be written for its fingerprint: its
 * transaction is rolled back and nothing is stored, so a retry runs again (HTTP 500, problem type
 * {@code response-not-storable}).
 */
public class ResponseNotStorableException extends LeaseholdException {
    private static final long serialVersionUID = 1L;

    /** The answer cannot be stored, for {@code cause}. */
    public ResponseNotStorableException(String message, Throwable cause) {
        super(message, cause);
    }
}
