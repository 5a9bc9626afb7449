package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What a release costs the server, counted by the server ({@code INFO commandstats}) on a private
 * {@code redis-server}: a lock nobody waits for is released without a PUBLISH, in both modes, and
 * a key someone waits for still publishes its release, so the waiter is woken by it.
 */
class RedisReleaseCostTest {

    private static final int CYCLES = 50;
    private static final String PREFIX = "cost-test:";
    private static LocalRedis local;
    private static RedisClient client;
    private static StatefulRedisConnection<String, String> probe;
    private static int keys;
    private final ExecutorService threads = Executors.newCachedThreadPool();

    @BeforeAll
    static void start() throws Exception {
        local = new LocalRedis();
        int port = LocalRedis.freePortPair();
        local.server(port);
        client = RedisClient.create("redis://127.0.0.1:" + port);
        probe = client.connect();
    }

    @AfterAll
    static void stop() {
        if (probe != null) {
            probe.close();
            client.shutdown();
        }
        if (local != null) {
            local.close();
        }
    }

    @AfterEach
    void stopThreads() {
        threads.shutdownNow();
    }

    private static LockKey newKey() {
        return LockKey.of("cost", "k" + (++keys) + "-" + System.nanoTime());
    }

    private static RedisLeaseStore defaultStore() {
        return RedisLeaseStore.builder(client).keyPrefix(PREFIX).build();
    }

    private static RedisLeaseStore bargingStore() {
        return RedisLeaseStore.builder(client)
                .keyPrefix(PREFIX)
                .bargingBound(RedisLeaseStore.DEFAULT_BARGING_BOUND)
                .build();
    }

    /** The server's calls per command over {@link #CYCLES} lock+unlock on one key, nobody waiting. */
    private static Map<String, Long> lockUnlockWithNobodyWaiting(Supplier<RedisLeaseStore> stores) {
        LockKey key = newKey();
        try (RedisLeaseStore store = stores.get();
                LockService locks = LockService.builder(store).build()) {
            locks.tryAcquire(key, LeaseOptions.defaults()).orElseThrow().close(); // scripts loaded
            CommandStats before = CommandStats.of(probe.sync());
            for (int i = 0; i < CYCLES; i++) {
                locks.tryAcquire(key, LeaseOptions.defaults()).orElseThrow().close();
            }
            CommandStats after = CommandStats.of(probe.sync());
            Map<String, Long> calls = new TreeMap<>();
            for (String command : new String[] {"evalsha", "publish", "spublish", "hmget", "hget", "exists", "del"}) {
                calls.put(command, after.since(before, command));
            }
            return calls;
        }
    }

    @Test
    void inTheDefaultModeALockNobodyWaitsForIsReleasedWithoutAPublish() {
        Map<String, Long> calls = lockUnlockWithNobodyWaiting(RedisReleaseCostTest::defaultStore);

        assertThat(calls.get("evalsha"))
                .as("scripts: one acquire, one release per cycle")
                .isEqualTo(2L * CYCLES);
        assertThat(calls.get("publish") + calls.get("spublish"))
                .as("PUBLISH per %d lock+unlock with nobody waiting, %s", CYCLES, calls)
                .isZero();
    }

    @Test
    void inTheBargingModeALockNobodyWaitsForIsReleasedWithoutAPublish() {
        Map<String, Long> calls = lockUnlockWithNobodyWaiting(RedisReleaseCostTest::bargingStore);

        assertThat(calls.get("evalsha"))
                .as("scripts: one acquire, one release per cycle")
                .isEqualTo(2L * CYCLES);
        assertThat(calls.get("publish") + calls.get("spublish"))
                .as("PUBLISH per %d lock+unlock with nobody waiting, %s", CYCLES, calls)
                .isZero();
    }

    @Test
    void aReleaseOfAKeySomeoneWaitsForStillPublishesAndWakesTheWaiter() throws Exception {
        LockKey key = newKey();
        // A waiter that barges for a minute takes no place: only the release's PUBLISH wakes it
        // before its bounded poll (one hour here).
        try (RedisLeaseStore elsewhere = defaultStore();
                RedisLeaseStore here = RedisLeaseStore.builder(client)
                        .keyPrefix(PREFIX)
                        .bargingBound(Duration.ofMinutes(1))
                        .build();
                LockService other = LockService.builder(elsewhere).build();
                LockService locks =
                        LockService.builder(here).maxPoll(Duration.ofHours(1)).build()) {
            Lease held = other.tryAcquire(
                            key,
                            LeaseOptions.builder().leaseFor(Duration.ofHours(1)).build())
                    .orElseThrow();
            Future<Boolean> waiter = threads.submit(() -> {
                try (Lease lease = locks.acquire(
                        key,
                        LeaseOptions.builder()
                                .leaseFor(Duration.ofSeconds(30))
                                .waitFor(Duration.ofHours(1))
                                .build())) {
                    return lease.isHeld();
                }
            });
            Awaitility.await()
                    .atMost(Duration.ofSeconds(10))
                    .until(() -> probe.sync().exists(new RedisKeys(PREFIX).listening(key)) == 1);
            CommandStats before = CommandStats.of(probe.sync());
            held.close();

            assertThat(waiter.get(10, TimeUnit.SECONDS))
                    .as("woken by the release")
                    .isTrue();
            CommandStats after = CommandStats.of(probe.sync());
            assertThat(after.since(before, "publish"))
                    .as("the release's PUBLISH")
                    .isPositive();
        }
    }
}
