package dev.leasehold.spring.actuator;

import dev.leasehold.LockKey;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.util.List;
import java.util.Objects;

/**
 * Micrometer Observations of Leasehold's work, which tracing turns into spans and the metrics
 * handler into timers:
 *
 * <ul>
 *   <li>{@value #ACQUIRE}: taking the lease of a {@code @Locked} method, low-cardinality {@code
 *       namespace} and {@code outcome} (acquired, busy, error), high-cardinality {@code key};
 *   <li>{@value #HOLD}: the method running under its lease, until the release (after the
 *       transaction when there is one);
 *   <li>{@value #IDEMPOTENT}: one idempotent execution, {@code scope} (high cardinality) and {@code
 *       outcome} (low), started by the {@code @Idempotent} interceptor through {@link
 *       #startIdempotent}.
 * </ul>
 *
 * With no {@code ObservationRegistry} bean every observation is a no-op. Thread-safe.
 */
public final class LeaseholdObservations {

    /** The name of the acquire observation. */
    public static final String ACQUIRE = "leasehold.lock.acquire";
    /** The name of the hold observation. */
    public static final String HOLD = "leasehold.lock.held";
    /** The name of the idempotent-execution observation. */
    public static final String IDEMPOTENT = "leasehold.idempotent.execution";

    private final ObservationRegistry registry;

    /** Observations into {@code registry}. */
    public LeaseholdObservations(ObservationRegistry registry) {
        this.registry = Objects.requireNonNull(registry, "registry");
    }

    /** Starts the acquire observation of {@code keys}; the caller sets the outcome and stops it. */
    public Observation startAcquire(List<LockKey> keys) {
        return start(ACQUIRE, keys)
                .contextualName("lease acquire " + keys.get(0).namespace());
    }

    /** Starts the hold observation of {@code keys}; stopped at release. */
    public Observation startHold(List<LockKey> keys) {
        return start(HOLD, keys).contextualName("lease held " + keys.get(0).namespace());
    }

    private Observation start(String name, List<LockKey> keys) {
        return Observation.createNotStarted(name, registry)
                .lowCardinalityKeyValue("namespace", keys.get(0).namespace())
                .highCardinalityKeyValue(
                        "key", keys.size() == 1 ? keys.get(0).render() : keys.size() + " keys from " + keys.get(0))
                .start();
    }

    /**
     * Starts the observation of one idempotent execution in {@code scope}. The caller opens a scope
     * around the work, sets {@code outcome} with {@link #outcome} (executed, replayed, in_progress,
     * mismatch, ...), records a failure with {@code error(...)} and stops it.
     */
    public Observation startIdempotent(String scope) {
        return Observation.createNotStarted(IDEMPOTENT, registry)
                .contextualName("idempotent execution")
                .highCardinalityKeyValue("scope", String.valueOf(scope))
                .start();
    }

    /** Sets the low-cardinality {@code outcome} of an observation. */
    public static Observation outcome(Observation observation, String outcome) {
        return observation.lowCardinalityKeyValue("outcome", outcome);
    }
}
