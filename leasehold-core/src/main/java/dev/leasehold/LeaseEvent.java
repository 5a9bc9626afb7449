package dev.leasehold;

import java.time.Duration;
import java.util.Objects;

/**
 * One thing that happened to a lease, as delivered to {@link LeaseListener}s: metrics and audit
 * logs are built from these. Immutable. The owner is abbreviated, never the whole token.
 *
 * @param type what happened
 * @param key the key
 * @param store the store's name, a bounded value fit for a metric tag
 * @param owner the abbreviated owner token, or {@code null} where no owner is known
 * @param fence the lease's fence, or 0 where no lease was granted
 * @param waited how long the caller waited, for ACQUIRED and BUSY; zero otherwise
 * @param held how long the lease was held, for RELEASED and LOST; zero otherwise
 * @param detail a reason or other detail, or {@code null}
 * @param failure the store failure, for RENEWAL_FAILED and for a RELEASED whose store release
 *     failed (the lease then ends at its expiry); otherwise {@code null}
 */
public record LeaseEvent(
        LeaseEventType type,
        LockKey key,
        String store,
        String owner,
        long fence,
        Duration waited,
        Duration held,
        String detail,
        Throwable failure) {

    /** Checks the required fields. */
    public LeaseEvent {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(store, "store");
        waited = waited == null ? Duration.ZERO : waited;
        held = held == null ? Duration.ZERO : held;
    }
}
