package dev.leasehold.spi;

import dev.leasehold.LockKey;
import java.time.Duration;
import java.util.Objects;

/**
 * One ask for a key, saying what the caller will do when refused: a single try asks once and never
 * holds a place in a store's waiter queue; a waiter asks again within one wait, with one owner
 * token for the whole wait, and says how long it has been refused so far.
 *
 * @param key the key asked for
 * @param owner the owner token of the grant (of the whole wait, for a waiter)
 * @param leaseFor how long the lease lasts
 * @param waiting whether the caller waits: refused, it asks again with the same owner token until
 *     its wait ends, and then leaves the store's queue ({@link LeaseStore#leaveQueue})
 * @param refusedFor for a waiter asking again, how long ago the store first refused it in this wait;
 *     {@code null} for a single try and for a waiter's first ask
 */
public record AcquireRequest(LockKey key, String owner, Duration leaseFor, boolean waiting, Duration refusedFor) {

    public AcquireRequest {
        Objects.requireNonNull(key, "key is missing (null)");
        Objects.requireNonNull(owner, "owner is missing (null)");
        Objects.requireNonNull(leaseFor, "leaseFor is missing (null)");
        if (refusedFor != null && (!waiting || refusedFor.isNegative())) {
            throw new IllegalArgumentException("only a waiter asks again, after a refusal of zero or more time: "
                    + refusedFor + (waiting ? "" : " (a single try)"));
        }
    }

    /** A single try: asks once, and never takes a place in a queue. */
    public static AcquireRequest once(LockKey key, String owner, Duration leaseFor) {
        return new AcquireRequest(key, owner, leaseFor, false, null);
    }

    /** A waiter's ask: the first of its wait ({@code refusedFor} null), or again after refusals. */
    public static AcquireRequest waiting(LockKey key, String owner, Duration leaseFor, Duration refusedFor) {
        return new AcquireRequest(key, owner, leaseFor, true, refusedFor);
    }

    /** Whether this waiter asked before in this wait and was refused. */
    public boolean again() {
        return refusedFor != null;
    }
}
