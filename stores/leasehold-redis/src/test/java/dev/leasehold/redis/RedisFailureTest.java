package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leasehold.Lease;
import dev.leasehold.LeaseEventType;
import dev.leasehold.LeaseLostException;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.BatchAcquireResult;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import redis.embedded.RedisServer;

/**
 * What holders see when Redis fails: a server of the test's own (embedded, without persistence)
 * is stopped and restarted under a live store.
 */
class RedisFailureTest {

    private int port;
    private RedisServer server;
    private RedisClient client;
    private RedisLeaseStore store;
    private final RedisKeys keys = new RedisKeys("leasehold:");

    @BeforeEach
    void start() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        server = newServer();
        server.start();
        client = RedisClient.create(RedisURI.builder()
                .withHost("127.0.0.1")
                .withPort(port)
                .withTimeout(Duration.ofMillis(500))
                .build());
        store = RedisLeaseStore.builder(client).build();
    }

    private RedisServer newServer() throws IOException {
        return RedisServer.newRedisServer()
                .port(port)
                .bind("127.0.0.1")
                .setting("save \"\"")
                .setting("appendonly no")
                .build();
    }

    @AfterEach
    void stop() throws IOException {
        store.close();
        client.shutdown();
        if (server.isActive()) {
            server.stop();
        }
    }

    @Test
    void unreachableRedisIsATypedExceptionNamingTheKey() throws IOException {
        LockKey key = LockKey.of("borrow", "B-unreachable");
        server.stop();

        assertThatThrownBy(() -> store.tryAcquire(key, LockOwner.create("t").token(), Duration.ofSeconds(5)))
                .isInstanceOf(LeaseStoreException.class)
                .hasMessageContaining("acquire")
                .hasMessageContaining(key.render());
        try (LockService locks = LockService.builder(store).build()) {
            assertThatThrownBy(() -> locks.tryAcquire(key, LeaseOptions.defaults()))
                    .isInstanceOf(LeaseStoreException.class)
                    .hasMessageContaining(key.render());
        }
    }

    @Test
    void holderWhoseRenewalsFailGetsTheLostSignal() throws IOException {
        List<LeaseEventType> events = new CopyOnWriteArrayList<>();
        try (LockService locks =
                LockService.builder(store).listener(e -> events.add(e.type())).build()) {
            LockKey key = LockKey.of("borrow", "B-renewal-fails");
            Lease lease = locks.tryAcquire(
                            key,
                            LeaseOptions.builder()
                                    .leaseFor(Duration.ofMillis(900))
                                    .build())
                    .orElseThrow();
            AtomicReference<LeaseLostException> lost = new AtomicReference<>();
            lease.onLost(lost::set);

            server.stop();

            await().atMost(Duration.ofSeconds(15)).until(() -> lost.get() != null);
            assertThat(lease.isHeld()).isFalse();
            assertThat(events).contains(LeaseEventType.RENEWAL_FAILED, LeaseEventType.LOST);
            assertThat(lost.get().getMessage()).contains(key.render());
        }
    }

    @Test
    void fencesNeverGoBackwardsWhenRedisRestartsWithoutPersistence() throws IOException {
        LockKey key = LockKey.of("borrow", "B-restart");
        long before = 0;
        for (int i = 0; i < 5; i++) {
            String owner = LockOwner.create("t").token();
            before = ((AcquireResult.Granted) store.tryAcquire(key, owner, Duration.ofSeconds(30)))
                    .grant()
                    .fence();
            store.release(key, owner);
        }

        server.stop();
        server = newServer();
        server.start();

        try (StatefulRedisConnection<String, String> raw = client.connect()) {
            // The restart really lost the counter: a plain INCR would now start again at 1.
            assertThat(raw.sync().exists(keys.fence(key))).isZero();
        }
        String owner = LockOwner.create("t").token();
        AcquireResult after = await().atMost(Duration.ofSeconds(10))
                .ignoreExceptions()
                .until(() -> store.tryAcquire(key, owner, Duration.ofSeconds(30)), r -> r != null);
        assertThat(((AcquireResult.Granted) after).grant().fence()).isGreaterThan(before);
    }

    @Test
    void eachOperationIsOneScriptCallAndOneRoundTrip() {
        LockKey key = LockKey.of("borrow", "B-commands");
        try (StatefulRedisConnection<String, String> raw = client.connect()) {
            raw.sync().configResetstat();
            String owner = LockOwner.create("t").token();
            List<Long> roundTrips = new java.util.ArrayList<>();
            roundTrips.add(roundTrips(raw, () -> store.tryAcquire(key, owner, Duration.ofSeconds(30))));
            roundTrips.add(roundTrips(raw, () -> store.tryAcquire(key, "someone-else-000", Duration.ofSeconds(30))));
            roundTrips.add(roundTrips(raw, () -> store.renew(key, owner, Duration.ofSeconds(30))));
            roundTrips.add(roundTrips(raw, () -> store.inspect(key)));
            roundTrips.add(roundTrips(raw, () -> store.release(key, owner)));
            roundTrips.add(roundTrips(raw, () -> store.forceRelease(key)));
            assertThat(roundTrips)
                    .as("requests the server read for acquire, busy acquire, renew, inspect, release, force-release")
                    .containsExactly(1L, 1L, 1L, 1L, 1L, 1L);
            String stats = raw.sync().info("commandstats");
            assertThat(stats).contains("cmdstat_evalsha:calls=6,");
            assertThat(stats).doesNotContain("cmdstat_eval:");
        }
    }

    /**
     * A batch on one server is one script, whatever its keys: ten keys granted, or refused when one
     * is busy, in one EVALSHA and one round trip, counted at the server.
     */
    @Test
    void aBatchOfTenKeysIsOneScriptCallAndOneRoundTrip() {
        List<LockKey> batch = java.util.stream.IntStream.range(0, 10)
                .mapToObj(i -> LockKey.ofTenant("loan", "t42", "B7", "L" + i))
                .toList();
        String stranger = LockOwner.create("stranger").token();
        String owner = LockOwner.create("batch").token();
        try (StatefulRedisConnection<String, String> raw = client.connect()) {
            assertThat(store.tryAcquire(batch.get(6), stranger, Duration.ofSeconds(30)))
                    .isInstanceOf(AcquireResult.Granted.class);
            CommandStats before = CommandStats.of(raw.sync());
            AtomicReference<BatchAcquireResult> refused = new AtomicReference<>();
            long refusedTrips =
                    roundTrips(raw, () -> refused.set(store.tryAcquireAll(batch, owner, Duration.ofSeconds(30))));
            CommandStats afterRefused = CommandStats.of(raw.sync());
            assertThat(refused.get()).isInstanceOfSatisfying(BatchAcquireResult.Busy.class, busy -> {
                assertThat(busy.key()).isEqualTo(batch.get(6));
                assertThat(busy.holderRemaining()).isPositive();
            });
            assertThat(afterRefused.scriptCallsSince(before))
                    .as("script calls of the refused batch")
                    .isEqualTo(1);
            assertThat(refusedTrips).isEqualTo(1);
            for (LockKey key : batch) {
                if (!key.equals(batch.get(6))) {
                    assertThat(raw.sync().exists(keys.lease(key)))
                            .as("%s after the refusal", key)
                            .isZero();
                }
            }

            assertThat(store.release(batch.get(6), stranger)).isTrue();
            CommandStats beforeGrant = CommandStats.of(raw.sync());
            AtomicReference<BatchAcquireResult> granted = new AtomicReference<>();
            long grantTrips =
                    roundTrips(raw, () -> granted.set(store.tryAcquireAll(batch, owner, Duration.ofSeconds(30))));
            CommandStats afterGrant = CommandStats.of(raw.sync());
            assertThat(afterGrant.scriptCallsSince(beforeGrant))
                    .as("script calls of the granted batch")
                    .isEqualTo(1);
            assertThat(grantTrips).isEqualTo(1);
            List<dev.leasehold.spi.Grant> grants = ((BatchAcquireResult.Granted) granted.get()).grants();
            assertThat(grants)
                    .extracting(dev.leasehold.spi.Grant::fence)
                    .as("the fences of one batch: distinct, increasing in the batch's order")
                    .hasSize(10)
                    .doesNotHaveDuplicates()
                    .isSorted();
            for (int i = 0; i < batch.size(); i++) {
                assertThat(raw.sync().hget(keys.lease(batch.get(i)), "owner")).isEqualTo(owner);
                assertThat(raw.sync().hget(keys.lease(batch.get(i)), "fence"))
                        .isEqualTo(Long.toString(grants.get(i).fence()));
            }
        }
    }

    /**
     * The requests the server read from clients during {@code operation} ({@code
     * total_reads_processed}; each INFO counts its own read, so one is taken off).
     */
    private static long roundTrips(StatefulRedisConnection<String, String> raw, Runnable operation) {
        long before = CommandStats.readsProcessed(raw.sync());
        operation.run();
        return CommandStats.readsProcessed(raw.sync()) - before - 1;
    }
}
