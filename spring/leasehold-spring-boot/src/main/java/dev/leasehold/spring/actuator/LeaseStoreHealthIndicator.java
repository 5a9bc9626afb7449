package dev.leasehold.spring.actuator;

import dev.leasehold.LockKey;
import dev.leasehold.spi.LeaseStore;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * The health of the lease store, at {@code /actuator/health/leasehold}: one {@code inspect} of a
 * probe key, UP when it answers within {@code leasehold.health.timeout}, DOWN when it fails or
 * takes longer (the probe is abandoned, so a hung store never hangs the health endpoint). Reports
 * the backend and the probe's latency. Thread-safe.
 */
public final class LeaseStoreHealthIndicator implements HealthIndicator, DisposableBean {

    private static final LockKey PROBE = LockKey.of("leasehold-health", "probe");

    private final LeaseStore store;
    private final Duration timeout;
    private final ExecutorService probes = Executors.newCachedThreadPool(r -> {
        Thread thread = new Thread(r, "leasehold-health");
        thread.setDaemon(true);
        return thread;
    });

    /** A health indicator of {@code store} that waits at most {@code timeout}. */
    public LeaseStoreHealthIndicator(LeaseStore store, Duration timeout) {
        this.store = store;
        this.timeout = timeout;
    }

    @Override
    public Health health() {
        long started = System.nanoTime();
        CompletableFuture<Object> probe = CompletableFuture.supplyAsync(() -> store.inspect(PROBE), probes);
        try {
            probe.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            return Health.up()
                    .withDetail("backend", store.name())
                    .withDetail("latencyMs", (System.nanoTime() - started) / 1_000_000)
                    .build();
        } catch (TimeoutException e) {
            probe.cancel(true);
            return Health.down()
                    .withDetail("backend", store.name())
                    .withDetail("error", "no answer within " + timeout)
                    .build();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Health.down()
                    .withDetail("backend", store.name())
                    .withDetail("error", "interrupted")
                    .build();
        } catch (java.util.concurrent.ExecutionException e) {
            return Health.down()
                    .withDetail("backend", store.name())
                    .withDetail("error", String.valueOf(e.getCause()))
                    .build();
        }
    }

    @Override
    public void destroy() {
        probes.shutdownNow();
    }
}
