package dev.leasehold;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches how late renewals are confirmed. A renewal falls due a third of the lease after the last
 * confirmation, so a lease is lost only when its renewal is more than two thirds of the lease late;
 * a renewal confirmed more than a sixth of the lease after it fell due is reported with a warning
 * that names the lag, at most once per interval, long before any lease is lost. Thread-safe.
 */
final class RenewalLag {

    private static final Logger log = LoggerFactory.getLogger(RenewalLag.class);
    static final long WARN_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final AtomicLong nextWarning = new AtomicLong(Long.MIN_VALUE);
    private final AtomicLong lateSinceWarning = new AtomicLong();

    /** Whether a renewal this late, for a lease of {@code leaseForNanos}, eats into the margin. */
    static boolean late(long lagNanos, long leaseForNanos) {
        return lagNanos > leaseForNanos / 6;
    }

    /**
     * Records one confirmed renewal, {@code lagNanos} after it fell due, at {@code nowNanos}.
     *
     * @return whether this renewal was reported with a warning
     */
    boolean record(LockKey key, long lagNanos, long leaseForNanos, long nowNanos) {
        if (!late(lagNanos, leaseForNanos)) {
            return false;
        }
        long late = lateSinceWarning.incrementAndGet();
        long next = nextWarning.get();
        if ((next != Long.MIN_VALUE && nowNanos - next < 0)
                || !nextWarning.compareAndSet(next, nowNanos + WARN_INTERVAL_NANOS)) {
            return false;
        }
        lateSinceWarning.addAndGet(-late);
        log.warn(
                "renewals are falling behind: the renewal of {} was confirmed {} ms after it fell due, with a lease"
                        + " of {} ms ({} late renewals since the last warning); a lease is lost when its renewal"
                        + " is more than two thirds of the lease late: renew fewer leases per service, lengthen"
                        + " the lease, or give the store more capacity",
                key,
                TimeUnit.NANOSECONDS.toMillis(lagNanos),
                TimeUnit.NANOSECONDS.toMillis(leaseForNanos),
                late);
        return true;
    }
}
