package dev.leasehold.spring.web;

import dev.leasehold.idempotency.RecordStats;
import dev.leasehold.idempotency.RequestRecords;
import dev.leasehold.spring.LeaseholdIdempotencyProperties;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongConsumer;
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
 * counter {@code leasehold.idempotency.purged}; registered by {@link IdempotencyPurgeMeters}, so this
 * class names no Micrometer type and a stock application without Micrometer starts.
 */
final class IdempotencyPurge implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(IdempotencyPurge.class);

    private final RequestRecords records;
    private final LeaseholdIdempotencyProperties.Purge settings;
    private final Supplier<TaskScheduler> scheduler;
    private final AtomicReference<RecordStats> stats = new AtomicReference<>();
    private volatile LongConsumer purgedCounter;
    private volatile ScheduledFuture<?> task;

    IdempotencyPurge(
            RequestRecords records, LeaseholdIdempotencyProperties.Purge settings, Supplier<TaskScheduler> scheduler) {
        this.records = records;
        this.settings = settings;
        this.scheduler = scheduler;
    }

    /** The counts of the last run, or null before the first; read by {@link IdempotencyPurgeMeters}. */
    RecordStats lastStats() {
        return stats.get();
    }

    /** Tells {@code counter} how many records each run deleted; set by {@link IdempotencyPurgeMeters}. */
    void countPurgedWith(LongConsumer counter) {
        this.purgedCounter = counter;
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
            LongConsumer counter = purgedCounter;
            if (counter != null) {
                counter.accept(total);
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
