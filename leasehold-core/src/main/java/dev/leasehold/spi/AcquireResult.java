package dev.leasehold.spi;

import java.time.Duration;
import java.util.Objects;

/**
 * The outcome of {@link LeaseStore#tryAcquire}: the lease was granted, or the key is held by another
 * owner. Contention is a result; store failures are exceptions.
 */
public sealed interface AcquireResult permits AcquireResult.Granted, AcquireResult.Busy {

    /**
     * The lease was granted (or, for the owner that already held it, extended).
     *
     * @param grant the fence and validity
     */
    record Granted(Grant grant) implements AcquireResult {
        /** Checks the grant is present. */
        public Granted {
            Objects.requireNonNull(grant, "grant");
        }
    }

    /**
     * Another owner holds the key.
     *
     * @param holderRemaining how long the holder's lease remains valid by the store's clock; a waiter
     *     that misses the release notification retries no later than this
     */
    record Busy(Duration holderRemaining) implements AcquireResult {
        /** Checks the duration is present. */
        public Busy {
            Objects.requireNonNull(holderRemaining, "holderRemaining");
        }
    }
}
