package dev.leasehold.idempotency;

/**
 * What {@link RequestRecords#begin} found for a request key: the caller switches on it. Only {@link
 * Claimed} lets the caller execute; every other outcome changed nothing in the record.
 */
public sealed interface Claim permits Claim.Claimed, Claim.Replay, Claim.InProgress, Claim.Mismatch {

    /** How a claim was made. */
    enum Kind {
        /** The request is new: this caller created its record. */
        NEW,
        /** The request had failed: this caller re-claimed it to try again. */
        RETRY,
        /** The request's executor stopped sending heartbeats: this caller took it over. */
        TAKE_OVER
    }

    /**
     * Execute the request; complete or fail it with the handle.
     *
     * @param handle the claim
     */
    record Claimed(RequestHandle handle) implements Claim {}

    /**
     * The request already succeeded: return the stored response, do nothing else.
     *
     * @param requestId the record's id
     * @param response the stored response
     */
    record Replay(String requestId, StoredResponse response) implements Claim {}

    /**
     * Another execution of the request is in flight and alive: answer 409, do not resubmit now.
     *
     * @param requestId the record's id
     */
    record InProgress(String requestId) implements Claim {}

    /**
     * The key was used before with another payload: answer 422; the key cannot be reused.
     *
     * @param requestId the record's id
     */
    record Mismatch(String requestId) implements Claim {}
}
