package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.LockKey;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.testkit.LeaseStoreConformance;
import dev.leasehold.testkit.RawLease;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Redis store on a real three-node Redis Cluster the test starts on loopback ports (skipped
 * where redis-server or redis-cli is not installed).
 */
class RedisClusterConformanceTest extends LeaseStoreConformance {

    private static LocalRedis redis;
    private static RedisClusterClient client;
    private static StatefulRedisClusterConnection<String, String> probe;
    private static final RedisKeys KEYS = new RedisKeys("leasehold:");

    @BeforeAll
    static void startCluster() throws Exception {
        redis = new LocalRedis();
        LocalRedis.requireInstalled("redis-cli");
        int[] ports = new int[3];
        for (int i = 0; i < ports.length; i++) {
            ports[i] = LocalRedis.freePortPair();
            redis.server(ports[i], "--cluster-enabled", "yes", "--cluster-config-file", "nodes-" + ports[i] + ".conf");
        }
        redis.cli(
                "--cluster",
                "create",
                "127.0.0.1:" + ports[0],
                "127.0.0.1:" + ports[1],
                "127.0.0.1:" + ports[2],
                "--cluster-replicas",
                "0",
                "--cluster-yes");
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!redis.cli("-p", String.valueOf(ports[0]), "cluster", "info").contains("cluster_state:ok")) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("cluster did not become ok");
            }
            Thread.sleep(100);
        }
        client = RedisClusterClient.create(
                List.of(RedisURI.create("127.0.0.1", ports[0]), RedisURI.create("127.0.0.1", ports[1])));
        probe = client.connect();
    }

    @AfterAll
    static void stopCluster() {
        if (client != null) {
            probe.close();
            client.shutdown();
        }
        if (redis != null) {
            redis.close();
        }
    }

    @Override
    protected LeaseStore createStore() {
        return RedisLeaseStore.builder(client).build();
    }

    @Override
    protected Optional<RawLease> rawLease(LockKey key) {
        return RedisRaw.read(probe.sync(), KEYS.lease(key));
    }

    @Test
    void aLeaseItsFenceCounterAndItsChannelShareOneSlot() {
        LockKey key = LockKey.ofTenant("borrow", "t42", "B20240315001");
        int slot = SlotHash.getSlot(KEYS.lease(key));
        assertThat(SlotHash.getSlot(KEYS.fence(key))).isEqualTo(slot);
        assertThat(SlotHash.getSlot(KEYS.channel(key))).isEqualTo(slot);
    }

    @Test
    void batchSpanningSlotsOnSeveralNodesIsAllOrNothing() throws Exception {
        List<LockKey> keys = List.of(key("a"), key("b"), key("c"), key("d"), key("e"), key("f"));
        assertThat(keys.stream()
                        .map(k -> SlotHash.getSlot(KEYS.lease(k)))
                        .distinct()
                        .count())
                .isGreaterThan(1);
        try (var group = service().acquireAll(keys, dev.leasehold.LeaseOptions.defaults())) {
            for (LockKey k : keys) {
                assertThat(rawLease(k)).isPresent();
            }
            assertThat(group.leases()).hasSize(keys.size());
        }
        for (LockKey k : keys) {
            assertThat(rawLease(k)).isEmpty();
        }
    }

    /**
     * Keys whose lease keys hash to one slot (so one node holds them all, in one slot a migration
     * moves together) are batched like any others: all or nothing, each with its own fence.
     */
    @Test
    void batchOfKeysInOneSlotIsAllOrNothing() throws InterruptedException {
        List<LockKey> sameSlot = new java.util.ArrayList<>();
        int slot = SlotHash.getSlot(KEYS.lease(key("s0")));
        for (int i = 0; sameSlot.size() < 3 && i < 1_000_000; i++) {
            LockKey candidate = key("s" + i);
            if (SlotHash.getSlot(KEYS.lease(candidate)) == slot) {
                sameSlot.add(candidate);
            }
        }
        assertThat(sameSlot).hasSize(3);
        String stranger = dev.leasehold.LockOwner.create("stranger").token();
        assertThat(store.tryAcquire(sameSlot.get(2), stranger, Duration.ofSeconds(30)))
                .isInstanceOf(dev.leasehold.spi.AcquireResult.Granted.class);
        var options = dev.leasehold.LeaseOptions.defaults().withWait(Duration.ofMillis(50));
        assertThat(org.assertj.core.api.Assertions.catchThrowable(
                        () -> service().acquireAll(sameSlot, options)))
                .isInstanceOf(dev.leasehold.LockBusyException.class);
        assertThat(rawLease(sameSlot.get(0)))
                .as("released after the batch failed")
                .isEmpty();
        assertThat(rawLease(sameSlot.get(1)))
                .as("released after the batch failed")
                .isEmpty();

        assertThat(store.release(sameSlot.get(2), stranger)).isTrue();
        try (var group = service().acquireAll(sameSlot, options)) {
            assertThat(group.leases()).extracting(dev.leasehold.Lease::fence).doesNotHaveDuplicates();
            for (LockKey k : sameSlot) {
                assertThat(rawLease(k)).isPresent();
            }
        }
        for (LockKey k : sameSlot) {
            assertThat(rawLease(k)).isEmpty();
        }
    }
}
