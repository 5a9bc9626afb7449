package dev.leasehold.spring.lock;

import dev.leasehold.HeldLeaseInfo;
import dev.leasehold.LockService;
import dev.leasehold.spring.LeaseholdStaleScanProperties;
import dev.leasehold.spring.internal.AuditLine;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;
import org.slf4j.event.Level;
import org.springframework.context.SmartLifecycle;

/**
 * Reports leases held far beyond their lease time: the watchdog keeps a stuck holder's lease
 * alive forever, so a lease held, say, ten lease times is worth an alert. Each scan logs the stale
 * leases and sets the {@code leasehold.lock.stale} gauge. Thread-safe.
 */
final class StaleLeaseScan implements SmartLifecycle {

    private final LockService locks;
    private final LeaseholdStaleScanProperties settings;
    private final IntConsumer gauge;
    private ScheduledExecutorService scheduler;

    StaleLeaseScan(LockService locks, LeaseholdStaleScanProperties settings, IntConsumer gauge) {
        this.locks = locks;
        this.settings = settings;
        this.gauge = gauge;
    }

    /** Scans once; returns the stale leases. */
    List<HeldLeaseInfo> scan() {
        List<HeldLeaseInfo> stale = locks.heldLeases().stream()
                .filter(h -> h.heldFor().compareTo(h.leaseFor().multipliedBy(settings.getLeaseMultiple())) > 0)
                .toList();
        for (HeldLeaseInfo lease : stale) {
            AuditLine.of("lease.stale")
                    .text("key", lease.key().render())
                    .text("owner", lease.owner())
                    .number("fence", lease.fence())
                    .number("heldMs", lease.heldFor().toMillis())
                    .number("leaseMs", lease.leaseFor().toMillis())
                    .number("leaseMultiple", settings.getLeaseMultiple())
                    .log(Level.WARN);
        }
        gauge.accept(stale.size());
        return stale;
    }

    @Override
    public void start() {
        scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread thread = new Thread(r, "leasehold-stale-scan");
            thread.setDaemon(true);
            return thread;
        });
        long period = Math.max(1000, settings.getInterval().toMillis());
        scheduler.scheduleWithFixedDelay(
                () -> {
                    try {
                        scan();
                    } catch (RuntimeException e) {
                        AuditLine.of("lease.stale-scan-failed")
                                .text("error", e.toString())
                                .log(Level.WARN);
                    }
                },
                period,
                period,
                TimeUnit.MILLISECONDS);
    }

    @Override
    public void stop() {
        if (scheduler != null) {
            scheduler.shutdownNow();
            scheduler = null;
        }
    }

    @Override
    public boolean isRunning() {
        return scheduler != null;
    }
}
