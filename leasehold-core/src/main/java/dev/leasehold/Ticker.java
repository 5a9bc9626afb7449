package dev.leasehold;

/**
 * A monotonic time source in nanoseconds, injected so tests can control time. It is used only to
 * measure durations and to keep a conservative local bound on a lease; whether a lease is expired
 * is always decided by the store's clock.
 */
@FunctionalInterface
public interface Ticker {

    /** The current reading; only differences between readings are meaningful. */
    long nanos();

    /** The system's monotonic clock. */
    static Ticker system() {
        return SystemTicker.INSTANCE;
    }
}
