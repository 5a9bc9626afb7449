package dev.leasehold.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leasehold.HeldLeaseInfo;
import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.memory.InMemoryLeaseStore;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class StaleLeaseScanTest {

    @Test
    void reportsALeaseKeptAliveFarBeyondItsLeaseTimeAndNothingElse() {
        LeaseholdProperties.StaleScan settings = new LeaseholdProperties.StaleScan();
        settings.setLeaseMultiple(3);
        AtomicInteger gauge = new AtomicInteger(-1);
        try (LockService locks = LockService.builder(new InMemoryLeaseStore()).build()) {
            StaleLeaseScan scan = new StaleLeaseScan(locks, settings, gauge::set);
            LockKey stuck = LockKey.of("borrow", "stuck");
            // A holder that never finishes: renewal keeps its 100 ms lease alive.
            Lease held = locks.tryAcquire(
                            stuck,
                            LeaseOptions.builder()
                                    .leaseFor(Duration.ofMillis(100))
                                    .build())
                    .orElseThrow();
            Lease fresh = locks.tryAcquire(LockKey.of("borrow", "fresh"), LeaseOptions.defaults())
                    .orElseThrow();

            assertThat(scan.scan()).isEmpty();
            assertThat(gauge.get()).isZero();

            await().atMost(Duration.ofSeconds(10)).until(() -> !scan.scan().isEmpty());
            assertThat(scan.scan()).extracting(HeldLeaseInfo::key).containsExactly(stuck);
            assertThat(gauge.get()).isEqualTo(1);
            assertThat(held.isHeld()).as("still alive through renewal").isTrue();
            fresh.close();
            held.close();
            assertThat(scan.scan()).isEmpty();
        }
    }
}
