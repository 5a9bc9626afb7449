package dev.leasehold.spring.actuator;

import dev.leasehold.LeaseEvent;
import dev.leasehold.LeaseListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Records lease events as Micrometer meters named in {@link LeaseholdMetricNames}, each with a
 * description and bounded tags. Each meter is built once per tag combination and then reused.
 * Thread-safe.
 */
public final class LeaseholdMetrics implements LeaseListener {

    private final MeterRegistry registry;
    private final AtomicInteger stale = new AtomicInteger();
    private final Map<List<String>, Timer> timers = new ConcurrentHashMap<>();
    private final Map<List<String>, Counter> counters = new ConcurrentHashMap<>();

    /** Metrics into {@code registry}. */
    public LeaseholdMetrics(MeterRegistry registry) {
        this.registry = registry;
        Gauge.builder(LeaseholdMetricNames.LOCK_STALE, stale, AtomicInteger::get)
                .description("Leases held far beyond their lease time at the last stale-lease scan")
                .register(registry);
    }

    @Override
    public void onEvent(LeaseEvent event) {
        String namespace = event.key().namespace();
        String backend = event.store();
        switch (event.type()) {
            case ACQUIRED, BUSY ->
                timer(
                                LeaseholdMetricNames.LOCK_WAIT,
                                "How long callers waited for a lease; outcome busy counts the conflicts",
                                "namespace",
                                namespace,
                                "backend",
                                backend,
                                "outcome",
                                event.type() == dev.leasehold.LeaseEventType.BUSY ? "busy" : "acquired")
                        .record(event.waited());
            case RELEASED -> {
                timer(
                                LeaseholdMetricNames.LOCK_HOLD,
                                "How long leases were held, from grant to release",
                                "namespace",
                                namespace,
                                "backend",
                                backend)
                        .record(event.held());
                if (event.failure() != null) {
                    counter(
                                    LeaseholdMetricNames.LOCK_RELEASE_FAILURES,
                                    "Releases that failed in the store; those leases end at their expiry",
                                    "namespace",
                                    namespace,
                                    "backend",
                                    backend)
                            .increment();
                }
            }
            case LOST ->
                counter(
                                LeaseholdMetricNames.LOCK_LOST,
                                "Leases lost before their holder released them",
                                "namespace",
                                namespace,
                                "backend",
                                backend)
                        .increment();
            case RENEWAL_FAILED ->
                counter(
                                LeaseholdMetricNames.LOCK_RENEWAL_FAILURES,
                                "Lease renewals that failed in the store",
                                "namespace",
                                namespace,
                                "backend",
                                backend)
                        .increment();
            case FORCE_RELEASED ->
                counter(
                                LeaseholdMetricNames.LOCK_FORCE_RELEASES,
                                "Leases force-released by an operator",
                                "namespace",
                                namespace,
                                "backend",
                                backend)
                        .increment();
            case RENEWED ->
                timer(
                                LeaseholdMetricNames.LOCK_RENEWAL_LAG,
                                "How long after it fell due each renewal was confirmed; a lease is lost past two"
                                        + " thirds of its lease time",
                                "backend",
                                backend)
                        .record(event.waited());
            default -> {
                // REENTERED, WAITING: not measured
            }
        }
    }

    public void bypassed(String namespace) {
        counter(
                        LeaseholdMetricNames.LOCK_BYPASSED,
                        "Locked methods run without their lock because lock-mode is bypass",
                        "namespace",
                        namespace)
                .increment();
    }

    /** Counts an idempotent request by outcome (executed, replayed, in_progress, mismatch, ...). */
    public void idempotency(String outcome) {
        counter(LeaseholdMetricNames.IDEMPOTENCY_REQUESTS, "Idempotent requests by outcome", "outcome", outcome)
                .increment();
    }

    public void retry(String outcome) {
        counter(LeaseholdMetricNames.RETRIES, "Delayed retries by outcome", "outcome", outcome)
                .increment();
    }

    public void stale(int count) {
        stale.set(count);
    }

    private Timer timer(String name, String description, String... tags) {
        return timers.computeIfAbsent(
                key(name, tags),
                k -> Timer.builder(name).description(description).tags(tags).register(registry));
    }

    private Counter counter(String name, String description, String... tags) {
        return counters.computeIfAbsent(
                key(name, tags),
                k -> Counter.builder(name).description(description).tags(tags).register(registry));
    }

    private static List<String> key(String name, String... tags) {
        String[] parts = new String[tags.length + 1];
        parts[0] = name;
        System.arraycopy(tags, 0, parts, 1, tags.length);
        return List.of(parts);
    }
}
