package dev.leasehold.spring;

import dev.leasehold.LeaseEvent;
import dev.leasehold.LeaseListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.concurrent.atomic.AtomicInteger;

/** Records lease events as Micrometer meters named in {@link LeaseholdMetricNames}. Thread-safe. */
public final class LeaseholdMetrics implements LeaseListener {

    private final MeterRegistry registry;
    private final AtomicInteger stale = new AtomicInteger();

    /** Metrics into {@code registry}. */
    public LeaseholdMetrics(MeterRegistry registry) {
        this.registry = registry;
        registry.gauge(LeaseholdMetricNames.LOCK_STALE, stale);
    }

    @Override
    public void onEvent(LeaseEvent event) {
        String namespace = event.key().namespace();
        String backend = event.store();
        switch (event.type()) {
            case ACQUIRED ->
                timer(LeaseholdMetricNames.LOCK_WAIT, namespace, backend, "acquired")
                        .record(event.waited());
            case BUSY -> {
                timer(LeaseholdMetricNames.LOCK_WAIT, namespace, backend, "busy")
                        .record(event.waited());
                counter(LeaseholdMetricNames.LOCK_BUSY, namespace, backend).increment();
            }
            case RELEASED ->
                Timer.builder(LeaseholdMetricNames.LOCK_HOLD)
                        .tags("namespace", namespace, "backend", backend)
                        .register(registry)
                        .record(event.held());
            case LOST ->
                counter(LeaseholdMetricNames.LOCK_LOST, namespace, backend).increment();
            case RENEWAL_FAILED ->
                counter(LeaseholdMetricNames.LOCK_RENEWAL_FAILURES, namespace, backend)
                        .increment();
            case FORCE_RELEASED ->
                counter(LeaseholdMetricNames.LOCK_FORCE_RELEASES, namespace, backend)
                        .increment();
            default -> {
                // REENTERED, WAITING, RENEWED: not measured
            }
        }
    }

    void bypassed(String namespace) {
        Counter.builder(LeaseholdMetricNames.LOCK_BYPASSED)
                .tag("namespace", namespace)
                .register(registry)
                .increment();
    }

    void idempotency(String outcome) {
        Counter.builder(LeaseholdMetricNames.IDEMPOTENCY_REQUESTS)
                .tag("outcome", outcome)
                .register(registry)
                .increment();
    }

    void retry(String outcome) {
        Counter.builder(LeaseholdMetricNames.RETRIES)
                .tag("outcome", outcome)
                .register(registry)
                .increment();
    }

    void stale(int count) {
        stale.set(count);
    }

    private Timer timer(String name, String namespace, String backend, String outcome) {
        return Timer.builder(name)
                .tags("namespace", namespace, "backend", backend, "outcome", outcome)
                .register(registry);
    }

    private Counter counter(String name, String namespace, String backend) {
        return Counter.builder(name)
                .tags("namespace", namespace, "backend", backend)
                .register(registry);
    }
}
