package dev.leasehold.spring.actuator;

/**
 * The names of Leasehold's Micrometer meters, in one place. Tags are bounded: {@code namespace}
 * (the lock key's first part), {@code backend}, {@code outcome}; never a raw key.
 *
 * <p>In Prometheus: {@code leasehold_lock_wait_seconds} (its count with {@code outcome="busy"} is
 * the conflict count), {@code leasehold_lock_hold_seconds}, {@code leasehold_lock_lost_total}, {@code
 * leasehold_lock_renewal_failures_total}, {@code leasehold_lock_renewal_lag_seconds}, {@code
 * leasehold_lock_release_failures_total}, {@code
 * leasehold_lock_force_releases_total}, {@code
 * leasehold_lock_bypassed_total}, {@code leasehold_lock_stale}, {@code
 * leasehold_idempotency_requests_total}, {@code leasehold_retry_total}.
 */
public final class LeaseholdMetricNames {

    /** Timer: how long callers waited for a lease (outcome acquired or busy: the conflicts). */
    public static final String LOCK_WAIT = "leasehold.lock.wait";
    /** Timer: how long leases were held. */
    public static final String LOCK_HOLD = "leasehold.lock.hold";
    /** Counter: a lease was lost before its holder released it. */
    public static final String LOCK_LOST = "leasehold.lock.lost";
    /** Counter: a renewal failed in the store. */
    public static final String LOCK_RENEWAL_FAILURES = "leasehold.lock.renewal.failures";
    /**
     * Timer: how long after it fell due each renewal was confirmed (tag backend only: one per lease
     * would be unbounded). Renewals fall due a third of the lease after the last one; a lease is
     * lost when its renewal is more than two thirds of the lease late, and the engine warns past a
     * sixth.
     */
    public static final String LOCK_RENEWAL_LAG = "leasehold.lock.renewal.lag";
    /** Counter: a release failed in the store; the lease ends at its expiry. */
    public static final String LOCK_RELEASE_FAILURES = "leasehold.lock.release.failures";
    /** Counter: an operator force-released a lease. */
    public static final String LOCK_FORCE_RELEASES = "leasehold.lock.force.releases";
    /** Counter: a locked method ran without its lock because lock-mode is BYPASS. */
    public static final String LOCK_BYPASSED = "leasehold.lock.bypassed";
    /** Gauge: leases held far beyond their lease time at the last scan. */
    public static final String LOCK_STALE = "leasehold.lock.stale";
    /** Counter: idempotent requests by outcome. */
    public static final String IDEMPOTENCY_REQUESTS = "leasehold.idempotency.requests";
    /** Gauge: request records in the database, as of the last purge run. */
    public static final String IDEMPOTENCY_RECORDS = "leasehold.idempotency.records";
    /** Gauge: request records in PROCESSING, as of the last purge run. */
    public static final String IDEMPOTENCY_PROCESSING = "leasehold.idempotency.processing";
    /** Gauge: seconds since the oldest PROCESSING record's last heartbeat, as of the last purge run. */
    public static final String IDEMPOTENCY_PROCESSING_OLDEST = "leasehold.idempotency.processing.oldest";
    /** Counter: request records deleted by the purge. */
    public static final String IDEMPOTENCY_PURGED = "leasehold.idempotency.purged";
    /** Counter: delayed retries by outcome (scheduled, rescheduled, completed, failed). */
    public static final String RETRIES = "leasehold.retry";

    private LeaseholdMetricNames() {}
}
