package dev.leasehold.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.memory.InMemoryLeaseStore;
import dev.leasehold.redis.RedisLeaseStore;
import dev.leasehold.spi.ForwardingLeaseStore;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.testkit.ForwardingCheck;
import dev.leasehold.testkit.TestServices;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/** The store the starter builds around a client of its own. */
class OwningStoreTest {

    @Test
    void everyOperationOfTheSpiReachesTheStoreAsItWasCalled() {
        assertThat(ForwardingCheck.unforwarded(store -> new OwningStore(store, () -> {}), "close"))
                .isEmpty();
    }

    @Test
    void closingClosesTheStoreThenTheClient() throws Exception {
        StringBuilder order = new StringBuilder();
        LeaseStore store = new ForwardingLeaseStore() {
            @Override
            protected LeaseStore delegate() {
                return new InMemoryLeaseStore();
            }

            @Override
            public void close() {
                order.append("store ");
            }
        };
        new OwningStore(store, () -> order.append("client")).close();
        assertThat(order).hasToString("store client");
    }

    /**
     * With a client of its own, the starter's Redis store still learns that a single try is no
     * waiter: it takes no place in the key's queue while a waiter of the same store waits.
     */
    @Test
    void aSingleTryThroughTheOwningStoreTakesNoPlaceWhileAWaiterOfTheSameStoreWaits() throws Exception {
        String url = TestServices.redis().uri();
        String prefix = "owning-" + System.nanoTime() + ":";
        LockKey key = LockKey.of("owning", "k");
        RedisClient client = RedisClient.create(url);
        ExecutorService threads = Executors.newCachedThreadPool();
        AtomicBoolean closed = new AtomicBoolean();
        try (StatefulRedisConnection<String, String> probe = client.connect();
                RedisLeaseStore elsewhere = RedisLeaseStore.builder(client)
                        .keyPrefix(prefix)
                        .fairQueue(Duration.ofSeconds(20))
                        .build();
                LeaseStore here = new OwningStore(
                        RedisLeaseStore.builder(client)
                                .keyPrefix(prefix)
                                .fairQueue(Duration.ofSeconds(20))
                                .build(),
                        () -> closed.set(true));
                LockService other = LockService.builder(elsewhere).build();
                LockService locks = LockService.builder(here).fair(false).build()) {
            String queue = prefix + "{" + key.render() + "}:queue";
            Lease held = other.tryAcquire(key, LeaseOptions.defaults()).orElseThrow();
            Future<Boolean> waiter = threads.submit(() -> {
                try (Lease lease = locks.acquire(key, LeaseOptions.defaults().withWait(Duration.ofSeconds(30)))) {
                    return lease.isHeld();
                }
            });
            Awaitility.await()
                    .atMost(Duration.ofSeconds(10))
                    .until(() -> probe.sync().zcard(queue) == 1);

            assertThat(locks.tryAcquire(key, LeaseOptions.defaults())).isEmpty();
            assertThat(probe.sync().zcard(queue))
                    .as("places after a single try")
                    .isEqualTo(1);

            held.close();
            assertThat(waiter.get(10, TimeUnit.SECONDS)).isTrue();
        } finally {
            threads.shutdownNow();
            client.shutdown();
        }
        assertThat(closed).isTrue();
    }
}
