package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.leasehold.Lease;
import dev.leasehold.LeaseEvent;
import dev.leasehold.LeaseEventType;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.PartialRenewalException;
import dev.leasehold.spi.Renewal;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Batched renewal on a real three-master Redis Cluster the test starts on loopback ports, one of
 * whose masters is paused with {@code SIGSTOP} (skipped where redis-server or redis-cli is not
 * installed). A batch spans the slots of every master; the paused master's slot groups fail, and
 * only their leases: the others get their real answers, in time to keep their leases.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisClusterRenewalTest {

    private static final RedisKeys KEYS = new RedisKeys("leasehold:");

    private static LocalRedis redis;
    private static final int[] PORTS = new int[3];
    private static final Map<Integer, Process> SERVERS = new HashMap<>();
    private static RedisClusterClient probeClient;

    @BeforeAll
    static void startCluster() throws Exception {
        redis = new LocalRedis();
        LocalRedis.requireInstalled("redis-cli");
        List<String> create = new ArrayList<>(List.of("--cluster", "create"));
        for (int i = 0; i < PORTS.length; i++) {
            PORTS[i] = LocalRedis.freePortPair();
            // A long node timeout: a node paused for a few seconds is not failed by the others.
            SERVERS.put(
                    PORTS[i],
                    redis.server(
                            PORTS[i],
                            "--cluster-enabled",
                            "yes",
                            "--cluster-config-file",
                            "nodes-" + PORTS[i] + ".conf",
                            "--cluster-node-timeout",
                            "60000"));
            create.add("127.0.0.1:" + PORTS[i]);
        }
        create.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
        redis.cli(create.toArray(String[]::new));
        redis.await("the cluster to report cluster_state:ok", Duration.ofSeconds(30), () -> redis.cli(
                        "-p", String.valueOf(PORTS[0]), "cluster", "info")
                .contains("cluster_state:ok"));
        probeClient = client(Duration.ofSeconds(5));
    }

    @AfterAll
    static void stopCluster() {
        if (probeClient != null) {
            probeClient.shutdown();
        }
        if (redis != null) {
            redis.close();
        }
    }

    /** A cluster client seeded with every node, with {@code timeout} as its command timeout. */
    private static RedisClusterClient client(Duration timeout) {
        List<RedisURI> seeds = new ArrayList<>();
        for (int port : PORTS) {
            seeds.add(RedisURI.builder()
                    .withHost("127.0.0.1")
                    .withPort(port)
                    .withTimeout(timeout)
                    .build());
        }
        return RedisClusterClient.create(seeds);
    }

    /** The port of the master that serves the slot of the key's lease. */
    private static int nodeOf(LockKey key) {
        try (var connection = probeClient.connect()) {
            return connection
                    .getPartitions()
                    .getPartitionBySlot(SlotHash.getSlot(KEYS.lease(key)))
                    .getUri()
                    .getPort();
        }
    }

    /** {@code perNode} keys on each master, the masters' keys interleaved, by port. */
    private static Map<Integer, List<LockKey>> keysOnEveryNode(String namespace, int perNode) {
        Map<Integer, List<LockKey>> byNode = new HashMap<>();
        for (int i = 0; byNode.values().stream().mapToInt(List::size).sum() < perNode * PORTS.length; i++) {
            LockKey key = LockKey.of(namespace, "k" + i);
            List<LockKey> keys = byNode.computeIfAbsent(nodeOf(key), port -> new ArrayList<>());
            if (keys.size() < perNode) {
                keys.add(key);
            }
        }
        assertThat(byNode).hasSize(PORTS.length);
        return byNode;
    }

    private static void pause(int port) throws Exception {
        LocalRedis.signal(SERVERS.get(port), "STOP");
    }

    private static void resume(int port) throws Exception {
        LocalRedis.signal(SERVERS.get(port), "CONT");
        redis.await("node " + port + " to answer again", Duration.ofSeconds(20), () -> LocalRedis.answers(port));
    }

    @Test
    void aPausedMastersSlotGroupsFailOnlyTheirOwnLeasesAndTheOthersGetTheirAnswers() throws Exception {
        RedisClusterClient client = client(Duration.ofSeconds(2));
        try (RedisLeaseStore store = RedisLeaseStore.builder(client).build()) {
            Map<Integer, List<LockKey>> byNode = keysOnEveryNode("renew-" + UUID.randomUUID(), 4);
            String owner = LockOwner.create("holder").token();
            Duration lease = Duration.ofSeconds(30);
            Map<LockKey, Long> fences = new HashMap<>();
            List<Renewal> batch = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                for (int port : PORTS) {
                    LockKey key = byNode.get(port).get(i);
                    AcquireResult result = store.tryAcquire(key, owner, lease);
                    assertThat(result).isInstanceOf(AcquireResult.Granted.class);
                    fences.put(key, ((AcquireResult.Granted) result).grant().fence());
                    batch.add(new Renewal(key, owner, lease));
                }
            }
            int paused = PORTS[1];
            pause(paused);
            Throwable thrown;
            try {
                thrown = catchThrowable(() -> store.renewAll(batch));
            } finally {
                resume(paused);
            }

            assertThat(thrown).isInstanceOf(PartialRenewalException.class);
            PartialRenewalException partial = (PartialRenewalException) thrown;
            assertThat(partial.size()).isEqualTo(batch.size());
            for (int i = 0; i < batch.size(); i++) {
                LockKey key = batch.get(i).key();
                if (byNode.get(paused).contains(key)) {
                    assertThat(partial.answer(i))
                            .as("answer for %s on the paused node", key)
                            .isNull();
                    assertThat(partial.failure(i)).as("failure for %s", key).isNotNull();
                } else {
                    assertThat(partial.failure(i))
                            .as("failure for %s on a live node", key)
                            .isNull();
                    assertThat(partial.answer(i))
                            .as("answer for %s on a live node", key)
                            .hasValueSatisfying(
                                    grant -> assertThat(grant.fence()).isEqualTo(fences.get(key)));
                }
            }
        } finally {
            client.shutdown();
        }
    }

    /**
     * Through the engine, with a client timeout far longer than the lease: while one master is
     * paused, the leases held on the other two are renewed again and again and none is lost; the
     * paused master's leases are lost at their local deadline.
     */
    @Test
    void whileOneMasterIsPausedTheLeasesOnTheOthersAreKept() throws Exception {
        RedisClusterClient client = client(Duration.ofSeconds(20));
        List<LeaseEvent> events = new CopyOnWriteArrayList<>();
        int paused = PORTS[2];
        try (RedisLeaseStore store = RedisLeaseStore.builder(client).build();
                LockService service =
                        LockService.builder(store).listener(events::add).build()) {
            Map<Integer, List<LockKey>> byNode = keysOnEveryNode("keep-" + UUID.randomUUID(), 5);
            LeaseOptions options = LeaseOptions.builder()
                    .leaseFor(Duration.ofSeconds(3))
                    .renewal(true)
                    .build();
            List<Lease> leases = new ArrayList<>();
            for (int i = 0; i < 5; i++) { // interleaved, so that each batch spans every master
                for (int port : PORTS) {
                    leases.add(
                            service.tryAcquire(byNode.get(port).get(i), options).orElseThrow());
                }
            }
            Set<LockKey> onPaused = Set.copyOf(byNode.get(paused));
            Set<LockKey> elsewhere = leases.stream()
                    .map(Lease::key)
                    .filter(k -> !onPaused.contains(k))
                    .collect(Collectors.toSet());
            pause(paused);
            int mark = events.size();
            try {
                Awaitility.await("the paused node's leases lost, the others renewed three times or one lost")
                        .atMost(Duration.ofSeconds(60))
                        .until(() -> lost(events, mark, onPaused) == onPaused.size()
                                && (lost(events, mark, elsewhere) > 0
                                        || elsewhere.stream().allMatch(k -> renewals(events, mark, k) >= 3)));
            } finally {
                resume(paused);
            }
            assertThat(lost(events, mark, elsewhere))
                    .as("leases lost on the live masters")
                    .isZero();
            for (Lease lease : leases) {
                assertThat(lease.isHeld()).as("%s held", lease.key()).isEqualTo(elsewhere.contains(lease.key()));
            }
        } finally {
            client.shutdown();
        }
    }

    @Test
    void aClientWithoutACommandTimeoutRenewsABatchAcrossSlots() throws Exception {
        // Lettuce takes a timeout of zero as "no timeout": it must not become a wait of nothing.
        RedisClusterClient client = client(Duration.ZERO);
        try (RedisLeaseStore store = RedisLeaseStore.builder(client).build()) {
            Map<Integer, List<LockKey>> byNode = keysOnEveryNode("untimed-" + UUID.randomUUID(), 1);
            String owner = LockOwner.create("holder").token();
            List<Renewal> batch = new ArrayList<>();
            for (int port : PORTS) {
                LockKey key = byNode.get(port).get(0);
                assertThat(store.tryAcquire(key, owner, Duration.ofSeconds(30)))
                        .isInstanceOf(AcquireResult.Granted.class);
                batch.add(new Renewal(key, owner, Duration.ofSeconds(30)));
            }
            assertThat(store.renewAll(batch)).as("each slot group renewed").allMatch(Optional::isPresent);
        } finally {
            client.shutdown();
        }
    }

    @Test
    void eachSlotGroupIsWaitedForByItsOwnShortestLeaseNotByAnotherGroups() {
        LockKey key = LockKey.of("t", "k");
        List<Renewal> shortAndLong =
                List.of(new Renewal(key, "o", Duration.ofMillis(300)), new Renewal(key, "p", Duration.ofSeconds(60)));
        List<Renewal> longOnly = List.of(new Renewal(key, "p", Duration.ofSeconds(60)));
        assertThat(RedisRenewals.groupWait(shortAndLong, Duration.ofSeconds(20)))
                .isEqualTo(Duration.ofMillis(100));
        assertThat(RedisRenewals.groupWait(longOnly, Duration.ofSeconds(10))).isEqualTo(Duration.ofSeconds(10));
        assertThat(RedisRenewals.groupWait(longOnly, Duration.ZERO))
                .as("no client timeout")
                .isEqualTo(Duration.ofSeconds(20));
        assertThat(RedisRenewals.groupWait(longOnly, Duration.ofSeconds(-1))).isEqualTo(Duration.ofSeconds(20));
    }

    private static long lost(List<LeaseEvent> events, int from, Set<LockKey> keys) {
        return events.subList(from, events.size()).stream()
                .filter(e -> e.type() == LeaseEventType.LOST && keys.contains(e.key()))
                .count();
    }

    private static long renewals(List<LeaseEvent> events, int from, LockKey key) {
        return events.subList(from, events.size()).stream()
                .filter(e -> e.type() == LeaseEventType.RENEWED && e.key().equals(key))
                .count();
    }
}
