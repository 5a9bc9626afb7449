package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.BatchAcquireResult;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import dev.leasehold.testkit.LeaseStoreConformance;
import dev.leasehold.testkit.RawLease;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.awaitility.Awaitility;
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
    private static final int[] PORTS = new int[3];
    private static final RedisKeys KEYS = new RedisKeys("leasehold:");

    @BeforeAll
    static void startCluster() throws Exception {
        redis = new LocalRedis();
        LocalRedis.requireInstalled("redis-cli");
        int[] ports = PORTS;
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
        redis.await("the cluster to report cluster_state:ok", Duration.ofSeconds(30), () -> redis.cli(
                        "-p", String.valueOf(ports[0]), "cluster", "info")
                .contains("cluster_state:ok"));
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
        try (var group = service().acquireAll(keys, LeaseOptions.defaults())) {
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
        List<LockKey> sameSlot = new ArrayList<>();
        int slot = SlotHash.getSlot(KEYS.lease(key("s0")));
        for (int i = 0; sameSlot.size() < 3 && i < 1_000_000; i++) {
            LockKey candidate = key("s" + i);
            if (SlotHash.getSlot(KEYS.lease(candidate)) == slot) {
                sameSlot.add(candidate);
            }
        }
        assertThat(sameSlot).hasSize(3);
        String stranger = LockOwner.create("stranger").token();
        assertThat(store.tryAcquire(sameSlot.get(2), stranger, Duration.ofSeconds(30)))
                .isInstanceOf(AcquireResult.Granted.class);
        var options = LeaseOptions.defaults().withWait(Duration.ofMillis(50));
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

    /**
     * On a cluster, release notices are shard messages ({@code SPUBLISH} in the release script,
     * {@code SSUBSCRIBE} by the waiter's store): they travel to the node that serves the key's slot
     * only, not over the cluster bus to every node. The waiter's client is seeded with another node
     * and is woken all the same, well within its wait, while the holder's lease (60 s) has far to
     * run, so the engine's bounded poll cannot be what wakes it.
     */
    @Test
    void releaseNoticesTravelByShardedPubSubToTheNodeOfTheKeysSlot() throws Exception {
        LockKey key = key("sharded");
        String channel = KEYS.channel(key);
        int slotOwner = probe.getPartitions()
                .getPartitionBySlot(SlotHash.getSlot(channel))
                .getUri()
                .getPort();
        int elsewhere = Arrays.stream(PORTS)
                .filter(port -> port != slotOwner)
                .findFirst()
                .orElseThrow();
        RedisClusterClient waiterClient = RedisClusterClient.create(List.of(RedisURI.create("127.0.0.1", elsewhere)));
        ExecutorService thread = Executors.newSingleThreadExecutor();
        try (RedisLeaseStore waiterStore = RedisLeaseStore.builder(waiterClient).build();
                LockService waiters = LockService.builder(waiterStore).build()) {
            assertThat(waiterStore.shardedNotices()).isTrue();
            String holder = LockOwner.create("holder").token();
            assertThat(store.tryAcquire(key, holder, Duration.ofSeconds(60))).isInstanceOf(AcquireResult.Granted.class);
            Map<Integer, CommandStats> before = statsOfEveryNode();

            var waiting = thread.submit(
                    () -> waiters.acquire(key, LeaseOptions.defaults().withWait(Duration.ofSeconds(30))));
            Awaitility.await("the waiter's shard subscription on the node of the key's slot")
                    .atMost(Duration.ofSeconds(20))
                    .until(() -> node(slotOwner).pubsubShardNumsub(channel).get(channel) == 1L);
            for (int port : PORTS) {
                assertThat(node(port).pubsubNumsub(channel).get(channel))
                        .as("classic subscribers of the key's channel on node %d", port)
                        .isZero();
            }
            assertThat(store.release(key, holder)).isTrue();
            assertTheWaiterWokenByOneShardMessage(waiting, before, slotOwner);
        } finally {
            thread.shutdownNow();
            waiterClient.shutdown();
        }
    }

    /**
     * In the fair mode ({@code fairQueue}) on a cluster, a release hands the key to the waiter
     * queued in Redis and wakes it by a shard message on the node of the key's slot ({@code
     * SPUBLISH}, heard by the waiter's {@code SSUBSCRIBE}), never by classic {@code PUBLISH}. The
     * waiter's poll is longer than its wait and the holder's lease (60 s) far longer, so only the
     * wake-up can end its wait in time.
     */
    @Test
    void aFairHandOffWakesTheQueuedWaiterByAShardMessage() throws Exception {
        LockKey key = key("fair-sharded");
        String channel = KEYS.channel(key);
        int slotOwner = probe.getPartitions()
                .getPartitionBySlot(SlotHash.getSlot(channel))
                .getUri()
                .getPort();
        ExecutorService thread = Executors.newSingleThreadExecutor();
        try (RedisLeaseStore holderStore = fairStore();
                RedisLeaseStore waiterStore = fairStore();
                LockService waiters = LockService.builder(waiterStore)
                        .maxPoll(Duration.ofMinutes(1))
                        .build()) {
            assertThat(waiterStore.shardedNotices()).isTrue();
            String holder = LockOwner.create("holder").token();
            assertThat(holderStore.tryAcquire(key, holder, Duration.ofSeconds(60)))
                    .isInstanceOf(AcquireResult.Granted.class);
            var waiting = thread.submit(
                    () -> waiters.acquire(key, LeaseOptions.defaults().withWait(Duration.ofSeconds(30))));
            Awaitility.await("the waiter queued in Redis and subscribed on the node of the key's slot")
                    .atMost(Duration.ofSeconds(10))
                    .until(() -> node(slotOwner).zcard(KEYS.lease(key) + ":queue") == 1L
                            && node(slotOwner).pubsubShardNumsub(channel).get(channel) == 1L);
            Map<Integer, CommandStats> before = statsOfEveryNode();

            assertThat(holderStore.release(key, holder)).isTrue();
            assertTheWaiterWokenByOneShardMessage(waiting, before, slotOwner);
        } finally {
            thread.shutdownNow();
        }
    }

    /**
     * The default mode's bounded barging on a cluster: a waiter refused for longer than its bound
     * queues in the key's slot (the queue keys share the lease's hash tag), and the release hands
     * the key to it with one shard message on that slot's node.
     */
    @Test
    void aBoundedBargingHandOffWakesTheQueuedWaiterByAShardMessage() throws Exception {
        LockKey key = key("barging-sharded");
        String channel = KEYS.channel(key);
        int slotOwner = probe.getPartitions()
                .getPartitionBySlot(SlotHash.getSlot(channel))
                .getUri()
                .getPort();
        ExecutorService thread = Executors.newSingleThreadExecutor();
        try (RedisLeaseStore holderStore = RedisLeaseStore.builder(client)
                        .bargingBound(Duration.ofMillis(1))
                        .build();
                RedisLeaseStore waiterStore = RedisLeaseStore.builder(client)
                        .bargingBound(Duration.ofMillis(1))
                        .build();
                LockService waiters = LockService.builder(waiterStore)
                        .maxPoll(Duration.ofMinutes(1))
                        .build()) {
            String holder = LockOwner.create("holder").token();
            assertThat(holderStore.tryAcquire(key, holder, Duration.ofSeconds(60)))
                    .isInstanceOf(AcquireResult.Granted.class);
            var waiting = thread.submit(
                    () -> waiters.acquire(key, LeaseOptions.defaults().withWait(Duration.ofSeconds(30))));
            Awaitility.await("the waiter queued in Redis and subscribed on the node of the key's slot")
                    .atMost(Duration.ofSeconds(10))
                    .until(() -> node(slotOwner).zcard(KEYS.lease(key) + ":queue") == 1L
                            && node(slotOwner).pubsubShardNumsub(channel).get(channel) == 1L);
            Map<Integer, CommandStats> before = statsOfEveryNode();

            assertThat(holderStore.release(key, holder)).isTrue();
            assertTheWaiterWokenByOneShardMessage(waiting, before, slotOwner);
        } finally {
            thread.shutdownNow();
        }
    }

    /**
     * In the fair mode on a cluster, a release with nobody queued in Redis announces itself on
     * the key's shard channel, so a subscriber there ({@code SSUBSCRIBE}) hears of it.
     */
    @Test
    void aFairReleaseWithNobodyQueuedReachesAShardSubscriber() throws Exception {
        LockKey key = key("fair-sharded-empty");
        try (RedisLeaseStore holderStore = fairStore();
                RedisLeaseStore listenerStore = fairStore()) {
            List<ReleaseNotice> notices = new java.util.concurrent.CopyOnWriteArrayList<>();
            ReleaseSubscription subscription = listenerStore.subscribe(key, notices::add);
            try {
                String holder = LockOwner.create("holder").token();
                long fence = ((AcquireResult.Granted) holderStore.tryAcquire(key, holder, Duration.ofSeconds(60)))
                        .grant()
                        .fence();
                assertThat(holderStore.release(key, holder)).isTrue();
                Awaitility.await("the release notice on the key's shard channel")
                        .atMost(Duration.ofSeconds(10))
                        .until(() -> notices.contains(new ReleaseNotice(key.render(), fence, false)));
            } finally {
                subscription.close();
            }
        }
    }

    /**
     * The waiter gets its lease in time, and since {@code before} the release sent one shard
     * message on the node of the key's slot and no classic PUBLISH on any node.
     */
    private static void assertTheWaiterWokenByOneShardMessage(
            java.util.concurrent.Future<Lease> waiting, Map<Integer, CommandStats> before, int slotOwner)
            throws Exception {
        Map<Integer, CommandStats> after;
        try (Lease lease = waiting.get(30, TimeUnit.SECONDS)) {
            assertThat(lease.isHeld()).isTrue();
            after = statsOfEveryNode(); // before the waiter's own release publishes again
        }
        assertThat(after.get(slotOwner).since(before.get(slotOwner), "spublish"))
                .as("shard messages sent on the node of the key's slot by the release")
                .isEqualTo(1);
        for (int port : PORTS) {
            assertThat(after.get(port).since(before.get(port), "publish"))
                    .as("classic PUBLISH on node %d", port)
                    .isZero();
        }
    }

    private static RedisLeaseStore fairStore() {
        return RedisLeaseStore.builder(client).fairQueue(Duration.ofSeconds(10)).build();
    }

    /**
     * When a key's slot moves to another master, Redis drops the shard subscriptions of that slot
     * on the node that gave it up; the store subscribes again, on the new owner, so a release
     * there still reaches a subscriber that was subscribed before the move.
     */
    @Test
    void aShardSubscriptionFollowsItsSlotToAnotherNode() throws Exception {
        LockKey key = key("moving");
        String channel = KEYS.channel(key);
        int slot = SlotHash.getSlot(channel);
        int from = probe.getPartitions().getPartitionBySlot(slot).getUri().getPort();
        int to = Arrays.stream(PORTS).filter(port -> port != from).findFirst().orElseThrow();
        List<ReleaseNotice> notices = new java.util.concurrent.CopyOnWriteArrayList<>();
        ReleaseSubscription subscription = store.subscribe(key, notices::add);
        try {
            assertThat(node(from).pubsubShardNumsub(channel).get(channel)).isEqualTo(1L);

            String fromId = node(from).clusterMyId();
            String toId = node(to).clusterMyId();
            node(to).clusterSetSlotImporting(slot, fromId);
            node(from).clusterSetSlotMigrating(slot, toId);
            for (String inSlot : node(from).clusterGetKeysInSlot(slot, 100)) {
                node(from).migrate("127.0.0.1", to, inSlot, 0, 5_000); // the key's listening mark
            }
            for (int port : PORTS) {
                node(port).clusterSetSlotNode(slot, toId);
            }
            client.refreshPartitions();
            Awaitility.await("the shard subscription on the slot's new node")
                    .atMost(Duration.ofSeconds(20))
                    .until(() -> node(to).pubsubShardNumsub(channel).get(channel) == 1L);
            Awaitility.await("the key marked as listened to on the slot's new node")
                    .atMost(Duration.ofSeconds(20))
                    .until(() -> node(to).exists(KEYS.listening(key)) == 1L);

            String holder = LockOwner.create("holder").token();
            long fence = ((AcquireResult.Granted) store.tryAcquire(key, holder, Duration.ofSeconds(60)))
                    .grant()
                    .fence();
            assertThat(store.release(key, holder)).isTrue();
            Awaitility.await("the release notice from the slot's new node")
                    .atMost(Duration.ofSeconds(10))
                    .until(() -> notices.contains(new ReleaseNotice(key.render(), fence, false)));
        } finally {
            subscription.close();
        }
    }

    private static RedisClusterCommands<String, String> node(int port) {
        return probe.getConnection("127.0.0.1", port).sync();
    }

    private static Map<Integer, CommandStats> statsOfEveryNode() {
        Map<Integer, CommandStats> stats = new HashMap<>();
        for (int port : PORTS) {
            stats.put(port, CommandStats.of(node(port)));
        }
        return stats;
    }

    /**
     * Keys that name one hash tag (a borrower's loans) share a slot, so a batch of ten is one
     * script on the node of that slot, counted there with {@code INFO commandstats}: granted all at
     * once, or refused all at once when one of them is busy.
     */
    @Test
    void aBatchOfTenKeysWithOneHashTagIsOneScriptCallOnItsShard() {
        List<LockKey> loans = IntStream.range(0, 10)
                .mapToObj(i -> key("B7", "L" + i).withHashTag(0))
                .toList();
        int slot = SlotHash.getSlot(KEYS.lease(loans.get(0)));
        assertThat(loans).allSatisfy(loan -> assertThat(SlotHash.getSlot(KEYS.lease(loan)))
                .isEqualTo(slot));
        int shard = probe.getPartitions().getPartitionBySlot(slot).getUri().getPort();
        String stranger = heldByAStranger(loans.get(6));
        String owner = LockOwner.create("batch").token();

        Map<Integer, CommandStats> before = statsOfEveryNode();
        assertRefusedHoldingNothing(loans, loans.get(6), owner);
        assertScriptCalls(before, Map.of(shard, 1L));

        assertThat(store.release(loans.get(6), stranger)).isTrue();
        Map<Integer, CommandStats> beforeGrant = statsOfEveryNode();
        var granted = store.tryAcquireAll(loans, owner, Duration.ofSeconds(30));
        assertScriptCalls(beforeGrant, Map.of(shard, 1L));
        List<Grant> grants = ((BatchAcquireResult.Granted) granted).grants();
        for (int i = 0; i < loans.size(); i++) {
            assertThat(rawLease(loans.get(i)))
                    .contains(new RawLease(owner, grants.get(i).fence()));
        }
        assertThat(grants)
                .extracting(Grant::fence)
                .as("the fences of one batch: distinct, increasing in the batch's order")
                .doesNotHaveDuplicates()
                .isSorted();
    }

    /**
     * The same through the lock service ({@code LockService.acquireAll} and {@code tryAcquireAll}):
     * a batch of ten keys with one hash tag is ONE script on the node of its slot, and none on the
     * other nodes; refused as a whole, holding nothing, when one key is busy (again one script);
     * every key renewed and released on its own afterwards.
     */
    @Test
    void aBatchOfTenKeysWithOneHashTagThroughTheLockServiceIsOneScriptCall() throws Exception {
        List<LockKey> loans = IntStream.range(0, 10)
                .mapToObj(i -> key("B8", "L" + i).withHashTag(0))
                .toList();
        int shard = probe.getPartitions()
                .getPartitionBySlot(SlotHash.getSlot(KEYS.lease(loans.get(0))))
                .getUri()
                .getPort();
        LockService service = service();
        LeaseOptions options = LeaseOptions.builder()
                .leaseFor(Duration.ofSeconds(3))
                .waitFor(Duration.ofSeconds(5))
                .build();
        // the service's first grant subscribes to force-release notices (no script): not counted
        try (Lease warm = service.acquire(key("warm-up"), options)) {
            assertThat(warm.isHeld()).isTrue();
        }

        String stranger = heldByAStranger(loans.get(6));
        Map<Integer, CommandStats> beforeRefusal = statsOfEveryNode();
        assertThat(service.tryAcquireAll(loans, options)).isEmpty();
        assertScriptCalls(beforeRefusal, Map.of(shard, 1L));
        for (LockKey loan : loans) {
            if (!loan.equals(loans.get(6))) {
                assertThat(rawLease(loan)).as("%s after the refusal", loan).isEmpty();
            }
        }
        assertThat(store.release(loans.get(6), stranger)).isTrue();

        Map<Integer, CommandStats> before = statsOfEveryNode();
        try (var group = service.acquireAll(loans, options)) {
            assertScriptCalls(before, Map.of(shard, 1L));
            assertThat(group.leases()).extracting(Lease::key).containsExactlyElementsOf(loans);
            for (Lease lease : group.leases()) {
                assertThat(rawLease(lease.key())).contains(new RawLease(lease.ownerToken(), lease.fence()));
            }
            // renewed key by key (every lease/3 = 1 s): each lease's end moves on twice
            List<java.time.Instant> granted =
                    group.leases().stream().map(Lease::validUntil).toList();
            Awaitility.await("every key renewed")
                    .atMost(Duration.ofSeconds(20))
                    .until(() -> IntStream.range(0, loans.size()).allMatch(i -> group.leases()
                            .get(i)
                            .validUntil()
                            .isAfter(granted.get(i).plusMillis(1500))));
            assertThat(group.isHeld()).isTrue();
        }
        for (LockKey loan : loans) {
            assertThat(rawLease(loan)).as("%s released", loan).isEmpty();
        }
    }

    /**
     * A batch over two hash tags on two shards is two scripts, one per slot, taken in the batch's
     * order; when the second slot's key is busy, the first slot's grants are released again.
     */
    @Test
    void aBatchAcrossSlotsIsOneScriptPerSlotAndAllOrNothing() {
        int shardA = shardOf("A");
        String tagB = IntStream.range(0, 100)
                .mapToObj(i -> "B" + i)
                .filter(tag -> shardOf(tag) != shardA)
                .findFirst()
                .orElseThrow();
        int shardB = shardOf(tagB);
        List<LockKey> batch = new ArrayList<>();
        for (String tag : List.of("A", tagB)) {
            for (int i = 0; i < 3; i++) {
                batch.add(key(tag, "L" + i).withHashTag(0));
            }
        }
        String stranger = heldByAStranger(batch.get(4));
        String owner = LockOwner.create("batch").token();

        Map<Integer, CommandStats> before = statsOfEveryNode();
        assertRefusedHoldingNothing(batch, batch.get(4), owner);
        // A's script granted its three keys, B's found one busy, then A's three were released one by one.
        assertScriptCalls(before, Map.of(shardA, 4L, shardB, 1L));

        assertThat(store.release(batch.get(4), stranger)).isTrue();
        Map<Integer, CommandStats> beforeGrant = statsOfEveryNode();
        var granted = store.tryAcquireAll(batch, owner, Duration.ofSeconds(30));
        assertThat(granted).isInstanceOf(BatchAcquireResult.Granted.class);
        assertScriptCalls(beforeGrant, Map.of(shardA, 1L, shardB, 1L));
        for (LockKey k : batch) {
            assertThat(rawLease(k)).map(RawLease::owner).contains(owner);
        }
    }

    private int shardOf(String hashTag) {
        int slot = SlotHash.getSlot(KEYS.lease(key(hashTag, "L0").withHashTag(0)));
        return probe.getPartitions().getPartitionBySlot(slot).getUri().getPort();
    }

    /** Listing finds keys with a hash tag of their own (named {@code prefix{tag}{key}}) beside the others. */
    @Test
    void listFindsKeysWithAndWithoutAHashTag() {
        LockKey tagged = key("B7", "L1").withHashTag(0);
        LockKey plain = key("B7", "L2");
        String owner = LockOwner.create("lister").token();
        for (LockKey k : List.of(tagged, plain)) {
            assertThat(store.tryAcquire(k, owner, Duration.ofSeconds(30))).isInstanceOf(AcquireResult.Granted.class);
        }
        assertThat(store.list(tagged.namespace(), 10))
                .extracting(info -> info.key().render())
                .containsExactlyInAnyOrder(tagged.render(), plain.render());
        assertThat(store.list(tagged.namespace(), 10))
                .extracting(dev.leasehold.LeaseInfo::key)
                .contains(tagged);
    }

    private String heldByAStranger(LockKey key) {
        String stranger = LockOwner.create("stranger").token();
        assertThat(store.tryAcquire(key, stranger, Duration.ofSeconds(30))).isInstanceOf(AcquireResult.Granted.class);
        return stranger;
    }

    /** The batch is refused naming {@code busy}, and none of its other keys is held. */
    private void assertRefusedHoldingNothing(List<LockKey> batch, LockKey busy, String owner) {
        BatchAcquireResult refused = store.tryAcquireAll(batch, owner, Duration.ofSeconds(30));
        assertThat(refused).isInstanceOfSatisfying(BatchAcquireResult.Busy.class, result -> assertThat(result.key())
                .isEqualTo(busy));
        for (LockKey key : batch) {
            if (!key.equals(busy)) {
                assertThat(rawLease(key)).as("%s after the refusal", key).isEmpty();
            }
        }
    }

    /** Script calls on each node since {@code before}: as {@code expected}, and none on the other nodes. */
    private static void assertScriptCalls(Map<Integer, CommandStats> before, Map<Integer, Long> expected) {
        Map<Integer, CommandStats> after = statsOfEveryNode();
        for (int port : PORTS) {
            assertThat(after.get(port).scriptCallsSince(before.get(port)))
                    .as("script calls (EVALSHA, EVAL, FCALL) on node %d", port)
                    .isEqualTo(expected.getOrDefault(port, 0L));
        }
    }
}
