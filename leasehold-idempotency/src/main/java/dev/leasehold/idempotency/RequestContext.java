package dev.leasehold.idempotency;

import dev.leasehold.Lease;
import java.util.Optional;

/**
 * What a request's work gets while it runs: its claim, its session lease if any, and a check to
 * call before and after slow steps (S1.10: "assert ownership before and after each model call").
 */
public interface RequestContext {

    /** The claim on the request record. */
    RequestHandle request();

    /** The session lease taken for the request, if a session key was given. */
    Optional<Lease> session();

    /**
     * Throws if this execution no longer owns its request or session: stop instead of running in
     * parallel with the new owner (S1.11).
     *
     * @throws IdempotencyConflictException (TAKEN_OVER) if the request's heartbeat found it taken
     * @throws dev.leasehold.LeaseLostException if the session lease was lost
     */
    void assertOwned();
}
