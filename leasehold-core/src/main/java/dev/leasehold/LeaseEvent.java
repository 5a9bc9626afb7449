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
 * @param waited how long the caller waited, for ACQUIRED and BUSY; for RENEWED, how long after it
 *     fell due the renewal was confirmed (a growing value means renewals fall behind); zero otherwise
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

    /** A caller gave up on a busy key after {@code waited} (zero for a try that did not wait). */
    static LeaseEvent busy(LockKey key, String store, Duration waited) {
        return new LeaseEvent(LeaseEventType.BUSY, key, store, null, 0, waited, null, null, null);
    }

    /** A caller found the key busy and waits for it. */
    static LeaseEvent waiting(LockKey key, String store) {
        return new LeaseEvent(LeaseEventType.WAITING, key, store, null, 0, Duration.ZERO, null, null, null);
    }

    /** A new grant, after the caller waited {@code waited} for it. */
    static LeaseEvent acquired(LockKey key, String store, String owner, long fence, Duration waited) {
        return new LeaseEvent(LeaseEventType.ACQUIRED, key, store, owner, fence, waited, null, null, null);
    }

    /** A renewal confirmed {@code lag} after it fell due. */
    static LeaseEvent renewed(LockKey key, String store, String owner, long fence, Duration lag) {
        return new LeaseEvent(LeaseEventType.RENEWED, key, store, owner, fence, lag, null, null, null);
    }

    /** An operator removed the lease on the key, whoever held it. */
    static LeaseEvent forceReleased(LockKey key, String store, String detail) {
        return new LeaseEvent(LeaseEventType.FORCE_RELEASED, key, store, null, 0, Duration.ZERO, null, detail, null);
    }

    /** Something that happened to a granted lease: re-entered, renewed, lost, released. */
    static LeaseEvent ofLease(
            LeaseEventType type,
            LockKey key,
            String store,
            String owner,
            long fence,
            Duration held,
            String detail,
            Throwable failure) {
        return new LeaseEvent(type, key, store, owner, fence, Duration.ZERO, held, detail, failure);
    }
}
