package dev.leasehold.spring;

import dev.leasehold.jdbc.JdbcLeaseStore;
import dev.leasehold.spi.LeaseStore;
import java.time.Instant;
import java.util.concurrent.ScheduledFuture;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.scheduling.TaskScheduler;

/**
 * Deletes the SQL lease store's rows whose lease ended more than {@code
 * leasehold.jdbc.housekeeping.retention} ago, and the queue places that ended, every {@code
 * interval}, on the application's {@link TaskScheduler} (or one of its own). A live lease is never
 * deleted, and a key's next row starts above any fence it had ({@link JdbcLeaseStore#deleteExpired}).
 * Runs on every instance: deleting a deleted row changes nothing. With another lease store it does
 * nothing and is never running. Thread-safe.
 */
final class LeaseRowHousekeeping implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(LeaseRowHousekeeping.class);
    private static final int MAX_BATCHES = 100;

    private final JdbcLeaseStore store;
    private final LeaseholdJdbcProperties.Housekeeping settings;
    private final Supplier<TaskScheduler> scheduler;
    private volatile ScheduledFuture<?> task;

    LeaseRowHousekeeping(
            LeaseStore store, LeaseholdJdbcProperties.Housekeeping settings, Supplier<TaskScheduler> scheduler) {
        this.store = store instanceof JdbcLeaseStore jdbc ? jdbc : null;
        this.settings = settings;
        this.scheduler = scheduler;
    }

    /** One run: deletes in batches until a batch comes back short; returns the rows deleted. */
    int runOnce() {
        if (store == null) {
            return 0;
        }
        int total = 0;
        for (int batch = 0; batch < MAX_BATCHES; batch++) {
            int deleted = store.deleteExpired(settings.getRetention(), settings.getBatchSize());
            total += deleted;
            if (deleted < settings.getBatchSize()) {
                break;
            }
        }
        if (total > 0) {
            log.info("deleted {} ended lease rows and queue places", total);
        }
        return total;
    }

    private void run() {
        try {
            runOnce();
        } catch (RuntimeException e) {
            log.warn("lease row housekeeping failed; next run in {}", settings.getInterval(), e);
        }
    }

    @Override
    public synchronized void start() {
        if (store == null) {
            return;
        }
        task = scheduler
                .get()
                .scheduleWithFixedDelay(this::run, Instant.now().plus(settings.getInterval()), settings.getInterval());
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
