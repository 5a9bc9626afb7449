package dev.leasehold.spring.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leasehold.HeldLeaseInfo;
import dev.leasehold.Lease;
import dev.leasehold.LeaseEventType;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.Ticker;
import dev.leasehold.memory.InMemoryLeaseStore;
import dev.leasehold.spring.LeaseholdStaleScanProperties;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class StaleLeaseScanTest {

    /**
     * Time is a ticker the test moves (the store's expiry and the service's held-for share it), in
     * steps of half the lease, each followed by two renewals, the second one surely sent at the new
     * time: a slow machine can delay the renewals but never lets the lease lapse.
     */
    @Test
    void reportsALeaseKeptAliveFarBeyondItsLeaseTimeAndNothingElse() {
        LeaseholdStaleScanProperties settings = new LeaseholdStaleScanProperties();
        settings.setLeaseMultiple(3);
        AtomicInteger gauge = new AtomicInteger(-1);
        AtomicLong now = new AtomicLong();
        Ticker ticker = now::get;
        AtomicInteger renewals = new AtomicInteger();
        LockKey stuck = LockKey.of("borrow", "stuck");
        try (LockService locks = LockService.builder(new InMemoryLeaseStore(ticker, Clock.systemUTC()))
                .ticker(ticker)
                .listener(event -> {
                    if (event.type() == LeaseEventType.RENEWED && event.key().equals(stuck)) {
                        renewals.incrementAndGet();
                    }
                })
                .build()) {
            StaleLeaseScan scan = new StaleLeaseScan(locks, settings, gauge::set);
            Duration lease = Duration.ofMillis(100);
            // A holder that never finishes: renewal keeps its 100 ms lease alive.
            Lease held = locks.tryAcquire(
                            stuck, LeaseOptions.builder().leaseFor(lease).build())
                    .orElseThrow();
            Lease fresh = locks.tryAcquire(LockKey.of("borrow", "fresh"), LeaseOptions.defaults())
                    .orElseThrow();

            assertThat(scan.scan()).isEmpty();
            assertThat(gauge.get()).isZero();

            for (int step = 1; step <= 7; step++) { // 7 x 50 ms = 350 ms > 3 x 100 ms
                now.addAndGet(lease.dividedBy(2).toNanos());
                int before = renewals.get();
                // renewals follow the ticker: a third of the lease is due within each 50 ms step
                await().atMost(Duration.ofSeconds(10)).until(() -> renewals.get() >= before + 1);
                assertThat(held.isHeld())
                        .as("still alive through renewal, step " + step)
                        .isTrue();
                if (step <= 6) {
                    assertThat(scan.scan()).as("held %d ms", step * 50).isEmpty();
                }
            }
            assertThat(scan.scan()).extracting(HeldLeaseInfo::key).containsExactly(stuck);
            assertThat(gauge.get()).isEqualTo(1);
            fresh.close();
            held.close();
            assertThat(scan.scan()).isEmpty();
        }
    }
}
