package dev.leasehold.spi;

import dev.leasehold.LockKey;
import java.time.Duration;
import java.util.Objects;

/**
 * One lease of a {@link LeaseStore#renewAll} batch: extend {@code key}'s lease to {@code leaseFor}
 * from now if {@code owner} still holds it.
 *
 * @param key the key
 * @param owner the owner token the lease was granted to
 * @param leaseFor the new lease time, from the store's now
 */
public record Renewal(LockKey key, String owner, Duration leaseFor) {

    /** Checks that nothing is missing. */
    public Renewal {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(owner, "owner");
        Objects.requireNonNull(leaseFor, "leaseFor");
    }
}
