package dev.leasehold.idempotency;

/**
 * The response stored with a completed request, replayed to every later submit of the same key.
 *
 * @param status the HTTP status (or any code the caller uses), 100 to 599
 * @param body the response body, usually JSON; may be {@code null}
 */
public record StoredResponse(int status, String body) {

    /** Checks the status. */
    public StoredResponse {
        if (status < 100 || status > 599) {
            throw new IllegalArgumentException("status must be between 100 and 599, was " + status);
        }
    }
}
