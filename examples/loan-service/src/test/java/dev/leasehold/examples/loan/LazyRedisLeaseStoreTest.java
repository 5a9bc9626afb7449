package dev.leasehold.examples.loan;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockBusyException;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.testkit.TestServices;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The service's lazily connected Redis store keeps what the Redis store does for waiters. */
class LazyRedisLeaseStoreTest {

    @Test
    void aWaiterThatGivesUpLeavesTheKeysQueueAtOnce() {
        String url = TestServices.redis().uri();
        String prefix = "lazy-" + UUID.randomUUID() + ":";
        LockKey key = LockKey.of("loan", "lazy");
        RedisClient probeClient = RedisClient.create(url);
        try (StatefulRedisConnection<String, String> probe = probeClient.connect();
                LazyRedisLeaseStore elsewhere = new LazyRedisLeaseStore(url, prefix, Duration.ofSeconds(5));
                LazyRedisLeaseStore here = new LazyRedisLeaseStore(url, prefix, Duration.ofSeconds(5));
                LockService other = LockService.builder(elsewhere).build();
                LockService locks = LockService.builder(here).build()) {
            String queue = prefix + "{" + key.render() + "}:queue";
            Lease held = other.tryAcquire(key, LeaseOptions.defaults()).orElseThrow();
            // refused for longer than the barging bound, the waiter takes a place and keeps it
            assertThatThrownBy(() -> locks.acquire(key, LeaseOptions.defaults().withWait(Duration.ofMillis(400))))
                    .isInstanceOf(LockBusyException.class);
            here.inspect(key); // on the store's connection: after the leave the wait sent
            assertThat(probe.sync().zcard(queue))
                    .as("places left once the only waiter gave up")
                    .isZero();
            held.close();
        } finally {
            probeClient.shutdown();
        }
    }
}
