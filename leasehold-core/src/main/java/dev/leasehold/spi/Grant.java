package dev.leasehold.spi;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * A lease granted or extended by a store: its fence, and how long it is valid measured by the
 * store's own clock. Immutable.
 *
 * @param fence the fence; strictly greater than the fence of any earlier holder of the key, and
 *     unchanged when the same owner re-acquires or renews
 * @param remaining how long the lease stays valid from the moment the store applied the operation
 * @param expiresAt when it expires by the store's clock
 */
public record Grant(long fence, Duration remaining, Instant expiresAt) {

    /** Checks the fields. */
    public Grant {
        if (fence <= 0) {
            throw new IllegalArgumentException("fence must be > 0, was " + fence);
        }
        Objects.requireNonNull(remaining, "remaining");
        Objects.requireNonNull(expiresAt, "expiresAt");
    }
}
