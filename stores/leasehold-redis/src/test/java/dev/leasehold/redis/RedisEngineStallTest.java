package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.testkit.TestServices;
import io.lettuce.core.RedisClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The engine on real Redis under a release flood with subscription churn: 24 callers in two
 * services take and release 5 keys 1 000 times, so each key's queue empties and fills again all
 * the time (an UNSUBSCRIBE and a SUBSCRIBE each time) while releases keep publishing on the same
 * channels. A store callback that waited for a lock held across a SUBSCRIBE would stall the pub/sub
 * connection until Lettuce's command timeout (60 s by default, which this test keeps): no
 * operation may take anywhere near that.
 */
class RedisEngineStallTest {

    @Test
    void aReleaseFloodWithSubscriptionChurnNeverStallsAWaiter() throws Exception {
        RedisClient client = RedisClient.create(TestServices.redis().uri()); // default 60 s command timeout
        String prefix = "lh-flood-" + UUID.randomUUID().toString().substring(0, 8) + ":";
        ExecutorService pool = Executors.newFixedThreadPool(24);
        try (RedisLeaseStore store =
                        RedisLeaseStore.builder(client).keyPrefix(prefix).build();
                LockService one = LockService.builder(store).build();
                LockService two = LockService.builder(store).build()) {
            LeaseOptions options = LeaseOptions.builder()
                    .leaseFor(Duration.ofSeconds(30))
                    .waitFor(Duration.ofSeconds(50))
                    .build();
            AtomicInteger left = new AtomicInteger(1000);
            AtomicInteger done = new AtomicInteger();
            AtomicLong slowest = new AtomicLong();
            List<Future<?>> callers = new ArrayList<>();
            for (int c = 0; c < 24; c++) {
                LockService service = c % 2 == 0 ? one : two;
                callers.add(pool.submit(() -> {
                    while (left.getAndDecrement() > 0) {
                        LockKey key = LockKey.of(
                                "note", "N" + ThreadLocalRandom.current().nextInt(5));
                        long start = System.nanoTime();
                        try (Lease lease = service.acquire(key, options)) {
                            slowest.accumulateAndGet(System.nanoTime() - start, Math::max);
                            assertThat(lease.isHeld()).isTrue();
                        }
                        done.incrementAndGet();
                    }
                    return null;
                }));
            }
            for (Future<?> caller : callers) {
                caller.get(45, TimeUnit.SECONDS);
            }
            assertThat(done.get()).isEqualTo(1000);
            assertThat(Duration.ofNanos(slowest.get()))
                    .as("the slowest acquire; a stalled pub/sub connection takes the 60 s command timeout")
                    .isLessThan(Duration.ofSeconds(10));
        } finally {
            pool.shutdownNow();
            client.shutdown();
        }
    }
}
