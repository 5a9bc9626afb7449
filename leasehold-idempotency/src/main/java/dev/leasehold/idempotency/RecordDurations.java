package dev.leasehold.idempotency;

import java.time.Duration;
import java.util.Objects;

/** The duration rules the request records and the side-effect records share. */
final class RecordDurations {

    /** How long a PROCESSING record may go without a heartbeat before it may be taken over, by default. */
    static final Duration DEFAULT_STALE_AFTER = Duration.ofMinutes(5);

    private static final Duration MIN_STALE_AFTER = Duration.ofMillis(100);
    private static final Duration MIN_LOCK_WAIT = Duration.ofMillis(20);
    private static final Duration MAX_LOCK_WAIT = Duration.ofSeconds(2);

    private RecordDurations() {}

    /** {@code staleAfter}, checked: at least 100 ms. */
    static Duration staleAfter(Duration staleAfter) {
        Objects.requireNonNull(staleAfter, "staleAfter is missing (null)");
        if (staleAfter.compareTo(MIN_STALE_AFTER) < 0) {
            throw new IllegalArgumentException("staleAfter must be at least PT0.1S, was " + staleAfter);
        }
        return staleAfter;
    }

    /** {@code value}, checked: present and above zero. */
    static Duration positive(String name, Duration value) {
        Objects.requireNonNull(value, name + " is missing (null)");
        if (value.isNegative() || value.isZero()) {
            throw new IllegalArgumentException(name + " must be > 0, was " + value);
        }
        return value;
    }

    /**
     * How long a heartbeat or a take-over waits for a row lock: a sixth of the stale threshold, 20
     * ms to 2 s.
     */
    static Duration lockWait(Duration staleAfter) {
        Duration sixth = staleAfter.dividedBy(6);
        return sixth.compareTo(MIN_LOCK_WAIT) < 0
                ? MIN_LOCK_WAIT
                : sixth.compareTo(MAX_LOCK_WAIT) > 0 ? MAX_LOCK_WAIT : sixth;
    }
}
