package dev.leasehold.spring;

import dev.leasehold.idempotency.RecordStats;
import dev.leasehold.idempotency.RequestRecords;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.scheduling.TaskScheduler;

/**
 * Deletes request records past {@code leasehold.idempotency.retention} (and PROCESSING ones abandoned
 * longer than {@code abandoned-after}) every {@code leasehold.idempotency.purge.interval}, on the
 * application's {@link TaskScheduler}; each run also refreshes the record gauges. Runs on every
 * instance: a delete of an already deleted record changes nothing. Thread-safe.
 *
 * <p>Gauges (when Micrometer is there): {@code leasehold.idempotency.records} (all records), {@code
 * leasehold.idempotency.processing} and {@code leasehold.idempotency.processing.oldest} (seconds
 * since the oldest PROCESSING record's last heartbeat; 0 when there is none), as of the last run;
 * counter {@code leasehold.idempotency.purged}. Test: {@code PurgeAndGaugesTest}.
 */
final class IdempotencyPurge implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(IdempotencyPurge.class);

    private final RequestRecords records;
    private final LeaseholdProperties.Purge settings;
    private final Supplier<TaskScheduler> scheduler;
    private final AtomicReference<RecordStats> stats = new AtomicReference<>();
    private volatile Counter purged;
    private volatile ScheduledFuture<?> task;

    IdempotencyPurge(RequestRecords records, LeaseholdProperties.Purge settings, Supplier<TaskScheduler> scheduler) {
        this.records = records;
        this.settings = settings;
        this.scheduler = scheduler;
    }

    /** Registers the gauges in {@code registry}. */
    void bindTo(MeterRegistry registry) {
        Gauge.builder(LeaseholdMetricNames.IDEMPOTENCY_RECORDS, this, p -> p.stat(RecordStats::records))
                .description("Request records in the database, as of the last purge run")
                .register(registry);
        Gauge.builder(LeaseholdMetricNames.IDEMPOTENCY_PROCESSING, this, p -> p.stat(RecordStats::processing))
                .description("Request records in PROCESSING, as of the last purge run")
                .register(registry);
        Gauge.builder(
                        LeaseholdMetricNames.IDEMPOTENCY_PROCESSING_OLDEST,
                        this,
                        p -> p.stats.get() == null
                                ? 0
                                : p.stats
                                        .get()
                                        .oldestProcessingAge()
                                        .map(a -> a.toMillis() / 1000.0)
                                        .orElse(0.0))
                .description("Seconds since the oldest PROCESSING request record's last heartbeat (0 if none)")
                .baseUnit("seconds")
                .register(registry);
        purged = Counter.builder(LeaseholdMetricNames.IDEMPOTENCY_PURGED)
                .description("Request records deleted by the purge")
                .register(registry);
    }

    private double stat(java.util.function.ToLongFunction<RecordStats> value) {
        RecordStats current = stats.get();
        return current == null ? 0 : value.applyAsLong(current);
    }

    /** One run: purges in batches until a batch comes back short, then refreshes the gauges. */
    int runOnce() {
        int total = 0;
        for (int round = 0; round < 100; round++) {
            int deleted = records.purgeExpired(settings.getBatchSize());
            total += deleted;
            if (deleted < settings.getBatchSize()) {
                break;
            }
        }
        if (total > 0) {
            log.info("purged {} expired request records", total);
            Counter counter = purged;
            if (counter != null) {
                counter.increment(total);
            }
        }
        stats.set(records.stats());
        return total;
    }

    private void run() {
        try {
            runOnce();
        } catch (RuntimeException e) {
            log.warn("purge of request records failed; next run in {}", settings.getInterval(), e);
        }
    }

    @Override
    public synchronized void start() {
        Duration interval = settings.getInterval();
        task = scheduler
                .get()
                .scheduleWithFixedDelay(this::run, java.time.Instant.now().plus(interval), interval);
    }

    @Override
    public synchronized void stop() {
        if (task != null) {
            task.cancel(false);
            task = null;
        }
    }

    @Override
    public boolean isRunning() {
        return task != null;
    }
}
