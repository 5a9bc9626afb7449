package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A waiting acquire sends the acquire script without a thread of the engine waiting for it
 * ({@link RedisLeaseStore#tryAcquireAsync}), on a server of its own (the test flushes its scripts).
 */
class RedisWaitingAcquireTest {

    private static LocalRedis redis;
    private static RedisClient client;

    @BeforeAll
    static void startServer() throws Exception {
        redis = new LocalRedis();
        int port = LocalRedis.freePortPair();
        redis.server(port);
        client = LocalRedis.client(port);
    }

    @AfterAll
    static void stopServer() throws Exception {
        if (client != null) {
            client.shutdown();
        }
        if (redis != null) {
            redis.close();
        }
    }

    @Test
    void aWaitingAcquireSendsTheScriptWholeWhenTheServerHasForgottenIt() throws Exception {
        try (StatefulRedisConnection<String, String> raw = client.connect();
                RedisLeaseStore store = RedisLeaseStore.builder(client).build();
                LockService locks = LockService.builder(store).build()) {
            LockKey key = LockKey.of("waiting", "k");
            LeaseOptions waiting = LeaseOptions.builder()
                    .leaseFor(Duration.ofSeconds(30))
                    .waitFor(Duration.ofSeconds(5))
                    .build();
            long before;
            try (Lease first = locks.acquire(key, waiting)) {
                before = first.fence();
            }
            assertThat(raw.sync().scriptFlush()).isEqualTo("OK");

            try (Lease second = locks.acquire(key, waiting)) {
                assertThat(second.isHeld()).isTrue();
                assertThat(second.fence()).isGreaterThan(before);
                assertThat(store.inspect(key).orElseThrow().ownerToken()).isEqualTo(second.ownerToken());
            }
            assertThat(store.inspect(key)).as("released").isEmpty();
        }
    }

    @Test
    void aSingleTryAndAReleaseSendTheirScriptsWholeWhenTheServerHasForgottenThem() throws Exception {
        try (StatefulRedisConnection<String, String> raw = client.connect();
                RedisLeaseStore store = RedisLeaseStore.builder(client).build();
                LockService locks = LockService.builder(store).build()) {
            LockKey key = LockKey.of("waiting", "single-try");
            Lease first = locks.tryAcquire(key, LeaseOptions.defaults()).orElseThrow();
            assertThat(raw.sync().scriptFlush()).isEqualTo("OK");
            assertThat(locks.tryAcquire(key, LeaseOptions.defaults(), LockOwner.create("another holder")))
                    .as("busy, asked by the whole script")
                    .isEmpty();
            assertThat(raw.sync().scriptFlush()).isEqualTo("OK");
            first.close();
            assertThat(store.inspect(key)).as("released by the whole script").isEmpty();
            assertThat(raw.sync().scriptFlush()).isEqualTo("OK");
            try (Lease second = locks.tryAcquire(key, LeaseOptions.defaults()).orElseThrow()) {
                assertThat(second.fence()).isGreaterThan(first.fence());
                assertThat(store.inspect(key).orElseThrow().ownerToken()).isEqualTo(second.ownerToken());
            }
        }
    }

    @Test
    void aWaitingAcquireOfAHeldKeyIsBusyThenGrantedAtTheRelease() throws Exception {
        try (StatefulRedisConnection<String, String> raw = client.connect();
                RedisLeaseStore store = RedisLeaseStore.builder(client).build();
                LockService holder = LockService.builder(store).build();
                LockService waiter = LockService.builder(store).build()) {
            LockKey key = LockKey.of("waiting", "held");
            String channel = new RedisKeys("leasehold:").channel(key);
            Lease held = holder.tryAcquire(key, LeaseOptions.defaults()).orElseThrow();
            java.util.concurrent.CompletableFuture<Lease> waited =
                    java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                        try {
                            return waiter.acquire(
                                    key,
                                    LeaseOptions.builder()
                                            .waitFor(Duration.ofSeconds(20))
                                            .build());
                        } catch (InterruptedException e) {
                            throw new IllegalStateException(e);
                        }
                    });
            // the waiter asks (busy), subscribes, and is granted once the holder lets go
            org.awaitility.Awaitility.await()
                    .atMost(Duration.ofSeconds(10))
                    .until(() -> raw.sync().pubsubNumsub(channel).getOrDefault(channel, 0L) > 0);
            long fence = held.fence();
            held.close();
            Lease lease = waited.get(15, java.util.concurrent.TimeUnit.SECONDS);
            assertThat(lease.fence()).isGreaterThan(fence);
            lease.close();
        }
    }
}
