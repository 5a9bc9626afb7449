package dev.leasehold.spring.actuator;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.LeaseEvent;
import dev.leasehold.LeaseEventType;
import dev.leasehold.LockKey;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class LeaseholdMetricsTest {

    @Test
    void everyConfirmedRenewalRecordsHowLateItWasUnderItsBackend() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        LeaseholdMetrics metrics = new LeaseholdMetrics(registry);
        LockKey key = LockKey.of("orders", "42");

        metrics.onEvent(new LeaseEvent(
                LeaseEventType.RENEWED, key, "redis", "abc", 7, Duration.ofMillis(1200), null, null, null));
        metrics.onEvent(new LeaseEvent(
                LeaseEventType.RENEWED, key, "redis", "abc", 7, Duration.ofMillis(30), null, null, null));

        Timer lag = registry.get(LeaseholdMetricNames.LOCK_RENEWAL_LAG)
                .tag("backend", "redis")
                .timer();
        assertThat(lag.count()).isEqualTo(2);
        assertThat(lag.max(TimeUnit.MILLISECONDS)).isEqualTo(1200);
        assertThat(lag.getId().getTag("namespace"))
                .as("no per-namespace series")
                .isNull();
    }
}
