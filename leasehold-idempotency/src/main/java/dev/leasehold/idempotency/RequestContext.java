package dev.leasehold.idempotency;

import dev.leasehold.Lease;
import java.sql.Connection;
import java.util.Optional;

/**
 * What a request's work gets while it runs: its claim, its session lease if any, a check to call
 * before and after slow steps (each call to a model or another service, for example), and the
 * SUCCESS mark to write in the work's own transaction.
 */
public interface RequestContext {

    /** The claim on the request record. */
    RequestHandle request();

    /**
     * The request's fence: it grows with every claim, so a business write can be guarded with {@code
     * FencedUpdate.tryAccept(connection, request().fenceResource(), fence())}.
     */
    default long fence() {
        return request().fence();
    }

    /** The session lease taken for the request, if a session key was given. */
    Optional<Lease> session();

    /**
     * Throws if this execution no longer owns its request or session, or if its claim could not be
     * renewed in time: stop instead of running in parallel with a new owner.
     *
     * @throws IdempotencyConflictException (TAKEN_OVER) if the request's heartbeat found it taken, or
     *     {@link ClaimExpiredException} if the claim could not be renewed before its local deadline
     * @throws dev.leasehold.LeaseLostException if the session lease was lost
     */
    void assertOwned();

    /**
     * Marks the request SUCCESS with {@code response} on {@code transaction}, the caller's open
     * transaction (autocommit off): the mark commits or rolls back with the business write. The
     * UPDATE names this claim's token and fence, so it changes nothing (and this throws) if the
     * request was taken over; the caller must then roll back. After this call the request's
     * heartbeat stops: the row stays locked by the transaction until it ends.
     *
     * @throws IdempotencyConflictException (TAKEN_OVER, or {@link ClaimExpiredException}) if the claim
     *     is no longer this execution's: roll back
     * @throws IllegalStateException if the connection is in autocommit mode
     */
    void completeInTransaction(Connection transaction, StoredResponse response);
}
