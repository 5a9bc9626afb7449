package dev.leasehold;

/**
 * Receives {@link LeaseEvent}s from a {@link LockService}, synchronously on the thread where they
 * happen; keep it fast. A listener that throws is logged and ignored: it never breaks locking or
 * leaks a lease. Implementations must be thread-safe.
 */
@FunctionalInterface
public interface LeaseListener {

    /** Called for every event. */
    void onEvent(LeaseEvent event);
}
