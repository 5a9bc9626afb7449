package dev.leasehold.spi;

import dev.leasehold.LockKey;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * The outcome of {@link LeaseStore#tryAcquireAll}: every key of the batch was granted, or none was.
 * Contention is a result; store failures are exceptions.
 */
public sealed interface BatchAcquireResult permits BatchAcquireResult.Granted, BatchAcquireResult.Busy {

    /**
     * Every key was granted (or, where the owner already held it, extended).
     *
     * @param grants one per key, in the order the keys were given
     */
    record Granted(List<Grant> grants) implements BatchAcquireResult {
        /** Checks the grants are present, and copies them. */
        public Granted {
            grants = List.copyOf(Objects.requireNonNull(grants, "grants"));
        }
    }

    /**
     * A key of the batch is held by another owner, and nothing of the batch is held by the caller.
     *
     * @param key the busy key (the first one found)
     * @param holderRemaining how long its holder's lease remains valid by the store's clock
     */
    record Busy(LockKey key, Duration holderRemaining) implements BatchAcquireResult {
        /** Checks the fields are present. */
        public Busy {
            Objects.requireNonNull(key, "key");
            Objects.requireNonNull(holderRemaining, "holderRemaining");
        }
    }
}
