package dev.leasehold.idempotency;

/**
 * A claim on a request record: the right to execute it, proven by the token. Every transition
 * (heartbeat, complete, fail, give back) is accepted only while the record still carries this
 * token. Immutable.
 *
 * @param id the record's id
 * @param scope the scope (for example a chat session, or tenant and caller)
 * @param clientKey the client's idempotency key
 * @param token the claimant's secret; also usable as a lease owner token (session lease, S1.1)
 * @param fence grows with every claim of the record; guards writes like a lease's fence
 * @param kind how the claim was made
 * @param previousStatus for a retry or take-over, the status before the claim (for give-back)
 * @param previousToken for a retry or take-over, the token before the claim
 * @param previousUpdatedAtMs for a retry or take-over, the heartbeat before the claim
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
        long previousUpdatedAtMs) {

    @Override
    public String toString() {
        return "RequestHandle{id=" + id + ", scope=" + scope + ", key=" + clientKey + ", kind=" + kind + ", fence="
                + fence + "}";
    }
}
