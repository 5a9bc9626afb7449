package dev.leasehold.spi;

import java.time.Duration;
import java.util.Objects;

/**
 * When a refused caller takes a place in a store's waiter queue, for every store that queues: only
 * a {@linkplain AcquireRequest#waiting() waiter} ever does, never a single try; in the fair mode
 * from its first refusal, in the default mode (bounded barging) once it has been refused for at
 * least the barging bound. Immutable.
 *
 * @param fair whether every refused waiter queues at once
 * @param bargingBound how long a waiter may be refused before it queues, outside the fair mode
 */
public record WaiterPolicy(boolean fair, Duration bargingBound) {

    public WaiterPolicy {
        Objects.requireNonNull(bargingBound, "bargingBound is missing (null)");
        if (bargingBound.isNegative()) {
            throw new IllegalArgumentException("bargingBound must not be negative, was " + bargingBound);
        }
    }

    /** The fair mode: a waiter queues from its first refusal. */
    public static WaiterPolicy fairQueue() {
        return new WaiterPolicy(true, Duration.ZERO);
    }

    /** Bounded barging: a waiter queues once it has been refused for {@code bound}. */
    public static WaiterPolicy bargingFor(Duration bound) {
        return new WaiterPolicy(false, bound);
    }

    /** Whether the caller of {@code request}, if it is refused, takes or keeps a place. */
    public boolean takesPlace(AcquireRequest request) {
        if (!request.waiting()) {
            return false;
        }
        return fair || (request.again() && request.refusedFor().compareTo(bargingBound) >= 0);
    }

    /**
     * For a refused waiter that takes no place yet, how long until it is due one: it should ask
     * again by then. Zero for one that takes a place, and for a single try, which is never due one.
     */
    public Duration untilPlace(AcquireRequest request) {
        if (!request.waiting() || takesPlace(request)) {
            return Duration.ZERO;
        }
        return request.again() ? bargingBound.minus(request.refusedFor()) : bargingBound;
    }
}
