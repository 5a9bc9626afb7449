package dev.leasehold.idempotency;

/**
 * A claim on a request record: the right to execute it, proven by the token and the fence. Every
 * transition (heartbeat, complete, fail, give back) is accepted only while the record still carries
 * this token and fence. Immutable.
 *
 * @param id the record's id
 * @param scope the scope (for example a chat session, or tenant and caller)
 * @param clientKey the client's idempotency key
 * @param token the claimant's secret; also usable as a lease owner token (the session lease)
 * @param fence grows with every claim of the record; guards writes like a lease's fence
 * @param kind how the claim was made
 * @param previousStatus for a retry or take-over, the status before the claim (for give-back)
 * @param previousToken for a retry or take-over, the token before the claim
 * @param previousUpdatedAtMs for a retry or take-over, the heartbeat before the claim
 * @param previousErrorMessage for a retry, the error text before the claim (null otherwise)
 * @param previousExpiresAtMs for a retry, when the record would have expired (null otherwise)
 */
public record RequestHandle(
        String id,
        String scope,
        String clientKey,
        String token,
        long fence,
        Claim.Kind kind,
        String previousStatus,
        String previousToken,
        long previousUpdatedAtMs,
        String previousErrorMessage,
        Long previousExpiresAtMs) {

    /** A handle without the error text and expiry of a previous ERROR record. */
    public RequestHandle(
            String id,
            String scope,
            String clientKey,
            String token,
            long fence,
            Claim.Kind kind,
            String previousStatus,
            String previousToken,
            long previousUpdatedAtMs) {
        this(id, scope, clientKey, token, fence, kind, previousStatus, previousToken, previousUpdatedAtMs, null, null);
    }

    /**
     * The resource name under which this request's fence can guard a business write with {@code
     * dev.leasehold.jdbc.FencedUpdate}: {@code leasehold-request:<id>}.
     */
    public String fenceResource() {
        return "leasehold-request:" + id;
    }

    @Override
    public String toString() {
        return "RequestHandle{id=" + id + ", scope=" + scope + ", key=" + clientKey + ", kind=" + kind + ", fence="
                + fence + "}";
    }
}
