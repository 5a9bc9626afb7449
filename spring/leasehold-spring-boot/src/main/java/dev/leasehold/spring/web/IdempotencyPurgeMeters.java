package dev.leasehold.spring.web;

import dev.leasehold.idempotency.RecordStats;
import dev.leasehold.spring.actuator.LeaseholdMetricNames;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;

/** The purge's gauges and counter ({@link IdempotencyPurge}); used only where Micrometer is present. */
final class IdempotencyPurgeMeters {

    private IdempotencyPurgeMeters() {}

    /** Registers the gauges and the counter of {@code purge} in {@code registry}. */
    static void bind(IdempotencyPurge purge, MeterRegistry registry) {
        Gauge.builder(LeaseholdMetricNames.IDEMPOTENCY_RECORDS, purge, p -> count(p, RecordStats::records))
                .description("Request records in the database, as of the last purge run")
                .register(registry);
        Gauge.builder(LeaseholdMetricNames.IDEMPOTENCY_PROCESSING, purge, p -> count(p, RecordStats::processing))
                .description("Request records in PROCESSING, as of the last purge run")
                .register(registry);
        Gauge.builder(LeaseholdMetricNames.IDEMPOTENCY_PROCESSING_OLDEST, purge, IdempotencyPurgeMeters::oldestSeconds)
                .description("Seconds since the oldest PROCESSING request record's last heartbeat (0 if none)")
                .baseUnit("seconds")
                .register(registry);
        Counter purged = Counter.builder(LeaseholdMetricNames.IDEMPOTENCY_PURGED)
                .description("Request records deleted by the purge")
                .register(registry);
        purge.countPurgedWith(purged::increment);
    }

    private static double count(IdempotencyPurge purge, java.util.function.ToLongFunction<RecordStats> value) {
        RecordStats stats = purge.lastStats();
        return stats == null ? 0 : value.applyAsLong(stats);
    }

    private static double oldestSeconds(IdempotencyPurge purge) {
        RecordStats stats = purge.lastStats();
        return stats == null
                ? 0
                : stats.oldestProcessingAge().map(a -> a.toMillis() / 1000.0).orElse(0.0);
    }
}
