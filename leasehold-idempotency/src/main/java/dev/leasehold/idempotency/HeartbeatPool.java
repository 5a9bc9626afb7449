package dev.leasehold.idempotency;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/** The daemon threads that run the claims' heartbeats, and the count of heartbeats that failed. */
final class HeartbeatPool implements AutoCloseable {

    private final ScheduledThreadPoolExecutor threads;
    private final AtomicLong failures = new AtomicLong();

    HeartbeatPool(int size) {
        AtomicInteger count = new AtomicInteger();
        this.threads = new ScheduledThreadPoolExecutor(size, r -> {
            Thread thread = new Thread(r, "leasehold-request-heartbeat-" + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        });
        this.threads.setRemoveOnCancelPolicy(true);
    }

    /** Runs {@code beat} every {@code periodMs}, first after one period. */
    ScheduledFuture<?> every(long periodMs, Runnable beat) {
        return threads.scheduleWithFixedDelay(beat, periodMs, periodMs, TimeUnit.MILLISECONDS);
    }

    /** Counts one failed heartbeat; returns the count so far. */
    long failed() {
        return failures.incrementAndGet();
    }

    long failures() {
        return failures.get();
    }

    @Override
    public void close() {
        threads.shutdownNow();
    }
}
