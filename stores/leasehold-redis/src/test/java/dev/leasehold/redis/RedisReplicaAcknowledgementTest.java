package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.spi.AcquireRequest;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.testkit.RawLease;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code replicaAcknowledgement(1, 300 ms)}: a grant or renewal returns only once a replica has
 * it. A master and a replica of the test's own on loopback ports; the replica is paused with
 * {@code SIGSTOP} where it must not answer.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class RedisReplicaAcknowledgementTest {

    private static final RedisKeys KEYS = new RedisKeys("leasehold:");
    private static final Duration ACK_TIMEOUT = Duration.ofMillis(300);
    private static final int MEASURED = 500;

    private LocalRedis redis;
    private int masterPort;
    private int replicaPort;
    private Process master;
    private Process replica;
    private final List<RedisClient> clients = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        redis = new LocalRedis();
        LocalRedis.requireInstalled("redis-cli");
        masterPort = LocalRedis.freePortPair();
        replicaPort = LocalRedis.freePortPair();
        master = redis.server(masterPort);
        replica = redis.server(replicaPort, "--replicaof", "127.0.0.1", String.valueOf(masterPort));
        await().atMost(Duration.ofSeconds(20))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> redis.cli("-p", String.valueOf(replicaPort), "info", "replication")
                        .contains("master_link_status:up"));
    }

    @AfterEach
    void stop() throws Exception {
        if (replica.isAlive()) {
            LocalRedis.signal(replica, "CONT");
        }
        clients.forEach(RedisClient::shutdown);
        redis.close();
    }

    @Test
    void acknowledgedGrantsAndRenewalsAreOnTheReplicaWhenTheCallReturns() {
        try (RedisLeaseStore store = acknowledgingStore(masterPort);
                StatefulRedisConnection<String, String> onReplica = connect(replicaPort)) {
            for (int i = 0; i < 20; i++) {
                LockKey key = LockKey.of("borrow", "B-ack-" + i);
                String owner = owner();
                long fence = fence(store.tryAcquire(key, owner, Duration.ofSeconds(30)));
                assertThat(RedisRaw.read(onReplica.sync(), KEYS.lease(key)))
                        .as("grant %d read from the replica right after acquire returned", i)
                        .contains(new RawLease(owner, fence));
                assertThat(store.renew(key, owner, Duration.ofSeconds(60))).isPresent();
                assertThat(onReplica.sync().pttl(KEYS.lease(key)))
                        .as("the renewal on the replica")
                        .isGreaterThan(30_000L);
            }
        }
    }

    @Test
    void grantNotAcknowledgedInTimeFailsNamingTheShortfallAndIsReleased() throws Exception {
        LockKey key = LockKey.of("borrow", "B-unacknowledged");
        try (RedisLeaseStore store = acknowledgingStore(masterPort)) {
            String holder = owner();
            fence(store.tryAcquire(key, holder, Duration.ofSeconds(30)));

            LocalRedis.signal(replica, "STOP");
            String other = owner();
            LockKey free = LockKey.of("borrow", "B-unacknowledged-free");
            long started = System.nanoTime();
            ReplicaAcknowledgementException refused = catchThrowableOfType(
                    ReplicaAcknowledgementException.class, () -> store.tryAcquire(free, other, Duration.ofSeconds(30)));
            Duration took = Duration.ofNanos(System.nanoTime() - started);

            assertThat(refused).isNotNull();
            assertThat(refused.required()).isEqualTo(1);
            assertThat(refused.acknowledged()).isZero();
            assertThat(refused.getMessage())
                    .contains("acquire of lock " + free.render())
                    .contains("0 of 1 replicas (WAIT 1 300) acknowledged within 300 ms")
                    .contains("the grant was released again");
            assertThat(took).as("the acquire waited for the acknowledgement").isGreaterThanOrEqualTo(ACK_TIMEOUT);
            assertThat(store.inspect(free))
                    .as("the unacknowledged grant on the master")
                    .isEmpty();

            ReplicaAcknowledgementException renewal = catchThrowableOfType(
                    ReplicaAcknowledgementException.class, () -> store.renew(key, holder, Duration.ofSeconds(30)));
            assertThat(renewal.getMessage())
                    .contains("renew of lock " + key.render())
                    .contains("the renewal stays on the master");
            assertThat(store.inspect(key).orElseThrow().ownerToken()).isEqualTo(holder);

            LocalRedis.signal(replica, "CONT");
            assertThat(store.tryAcquire(free, other, Duration.ofSeconds(30))).isInstanceOf(AcquireResult.Granted.class);
        }
    }

    /**
     * With an acknowledgement a waiter's leave is a write that is waited for, so the store says its
     * leave blocks (the lock service then leaves on a worker); without one it only sends.
     */
    @Test
    void aLeaveIsWaitedForWithAnAcknowledgementAndOnlySentWithout() throws Exception {
        LockKey key = LockKey.of("borrow", "B-leave");
        try (RedisLeaseStore plain = RedisLeaseStore.builder(client(masterPort)).build();
                RedisLeaseStore store = RedisLeaseStore.builder(client(masterPort))
                        .replicaAcknowledgement(1, ACK_TIMEOUT)
                        .fairQueue(Duration.ofSeconds(30))
                        .build();
                StatefulRedisConnection<String, String> onMaster = connect(masterPort)) {
            assertThat(plain.leavesQueueWithoutBlocking())
                    .as("without an acknowledgement")
                    .isTrue();
            assertThat(store.leavesQueueWithoutBlocking())
                    .as("with an acknowledgement")
                    .isFalse();
            assertThat(plain.acquiresAsynchronously())
                    .as("an acquire only sent, without an acknowledgement")
                    .isTrue();
            assertThat(store.acquiresAsynchronously())
                    .as("an acquire waited for, with an acknowledgement")
                    .isFalse();
            assertThatThrownBy(() -> store.tryAcquireAsync(
                            AcquireRequest.once(LockKey.of("borrow", "B-async"), owner(), Duration.ofSeconds(30))))
                    .isInstanceOf(UnsupportedOperationException.class)
                    .hasMessageContaining("replica acknowledgement");
            String holder = owner();
            fence(store.tryAcquire(key, holder, Duration.ofSeconds(30)));
            String waiter = owner();
            assertThat(store.tryAcquire(AcquireRequest.waiting(key, waiter, Duration.ofSeconds(30), null)))
                    .isInstanceOf(AcquireResult.Busy.class);
            String[] queueKeys = RedisWaiterQueue.keys(KEYS, key);
            assertThat(onMaster.sync().zscore(queueKeys[2], waiter))
                    .as("the waiter's place")
                    .isNotNull();

            LocalRedis.signal(replica, "STOP");
            ReplicaAcknowledgementException refused =
                    catchThrowableOfType(ReplicaAcknowledgementException.class, () -> store.leaveQueue(key, waiter));

            assertThat(refused).as("the leave waited for the replica").isNotNull();
            assertThat(refused.getMessage()).contains("leave the queue of lock " + key.render());
            assertThat(onMaster.sync().zscore(queueKeys[2], waiter))
                    .as("the place on the master")
                    .isNull();
            assertThat(store.inspect(key).orElseThrow().ownerToken()).isEqualTo(holder);
        }
    }

    /**
     * A batch refused for want of an acknowledgement undoes only its new grants: a key of the batch
     * the owner held before the call is still held, so its holder is not left believing it holds a
     * released key.
     */
    @Test
    void aBatchNotAcknowledgedKeepsTheLeasesItsOwnerHeldBefore() throws Exception {
        LockKey held = LockKey.of("borrow", "B-batch-held");
        LockKey fresh = LockKey.of("borrow", "B-batch-fresh");
        try (RedisLeaseStore store = acknowledgingStore(masterPort)) {
            String holder = owner();
            long fence = fence(store.tryAcquire(held, holder, Duration.ofSeconds(30)));
            LocalRedis.signal(replica, "STOP");
            ReplicaAcknowledgementException refused = catchThrowableOfType(
                    ReplicaAcknowledgementException.class,
                    () -> store.tryAcquireAll(List.of(held, fresh), holder, Duration.ofSeconds(30)));
            assertThat(refused).isNotNull();
            assertThat(refused.getMessage()).contains("leases held before by the same owner are kept");
            assertThat(store.inspect(held))
                    .as("the lease held before the batch")
                    .hasValueSatisfying(info -> {
                        assertThat(info.ownerToken()).isEqualTo(holder);
                        assertThat(info.fence()).isEqualTo(fence);
                    });
            assertThat(store.inspect(fresh)).as("the batch's new grant").isEmpty();
        }
    }

    /**
     * What the acknowledgement buys, with the same lag as the Sentinel canary: the replica is cut
     * off, so a grant made on the master alone is refused to its caller, and after the master dies
     * the promoted replica knows every holder that was told it holds its key.
     */
    @Test
    void everyGrantItsCallerWasToldOfSurvivesPromotionOfTheReplica() throws Exception {
        LockKey key = LockKey.of("borrow", "B-promoted");
        LockKey lagging = LockKey.of("borrow", "B-lagging");
        String holder = owner();
        long fence;
        try (RedisLeaseStore store = acknowledgingStore(masterPort)) {
            fence = fence(store.tryAcquire(key, holder, Duration.ofSeconds(30)));
            LocalRedis.signal(replica, "STOP");
            try {
                redis.cli("-p", String.valueOf(masterPort), "client", "kill", "type", "replica");
                assertThat(catchThrowableOfType(
                                ReplicaAcknowledgementException.class,
                                () -> store.tryAcquire(lagging, owner(), Duration.ofSeconds(30))))
                        .as("a grant the replica never got is not reported as held")
                        .isNotNull();
                LocalRedis.crash(master);
            } finally {
                LocalRedis.signal(replica, "CONT");
            }
        }
        redis.cli("-p", String.valueOf(replicaPort), "replicaof", "no", "one");

        try (RedisLeaseStore promoted =
                RedisLeaseStore.builder(client(replicaPort)).build()) {
            assertThat(promoted.tryAcquire(key, owner(), Duration.ofSeconds(30)))
                    .as("a second holder after the failover")
                    .isInstanceOf(AcquireResult.Busy.class);
            assertThat(promoted.inspect(key).orElseThrow().fence()).isEqualTo(fence);
            assertThat(promoted.tryAcquire(lagging, owner(), Duration.ofSeconds(30)))
                    .as("the refused grant's key: nobody believes they hold it")
                    .isInstanceOf(AcquireResult.Granted.class);
        }
    }

    /**
     * What {@code WAIT} costs, measured on this master and replica (both on loopback, so the
     * replica's acknowledgement is all the added time): {@value #MEASURED} acquires with and
     * without {@code replicaAcknowledgement(1, 1 s)}, p50 and p99 printed for the README. The
     * bound is the guarantee that {@code WAIT} returns as soon as the replica has the grant, not
     * at its timeout: p99 below the 1 s timeout; and every acknowledged grant is on the replica.
     */
    @Test
    void anAcknowledgedAcquireReturnsAsSoonAsTheReplicaHasItAndItsCostIsMeasured() {
        Duration timeout = Duration.ofSeconds(1);
        try (RedisLeaseStore plain = RedisLeaseStore.builder(client(masterPort)).build();
                RedisLeaseStore acknowledging = RedisLeaseStore.builder(client(masterPort))
                        .replicaAcknowledgement(1, timeout)
                        .build();
                StatefulRedisConnection<String, String> onReplica = connect(replicaPort)) {
            acquireTimes(plain, "warm-plain", 50, null);
            acquireTimes(acknowledging, "warm-ack", 50, null);
            long[] without = acquireTimes(plain, "plain", MEASURED, null);
            long[] with = acquireTimes(acknowledging, "ack", MEASURED, onReplica);
            System.out.printf(
                    "[redis WAIT cost] acquires=%d p50 %.2f ms / p99 %.2f ms without; p50 %.2f ms / p99 %.2f ms"
                            + " with replicaAcknowledgement(1, %d ms)%n",
                    MEASURED,
                    percentile(without, 50),
                    percentile(without, 99),
                    percentile(with, 50),
                    percentile(with, 99),
                    timeout.toMillis());
            assertThat(percentile(with, 99))
                    .as("p99 of acknowledged acquires, ms: WAIT returns when the replica answers")
                    .isLessThan(timeout.toMillis());
        }
    }

    /**
     * Nanoseconds of each of {@code count} acquires of fresh keys (each released outside the
     * timing); with {@code replica}, each grant is read back from it.
     */
    private long[] acquireTimes(
            RedisLeaseStore store, String name, int count, StatefulRedisConnection<String, String> replica) {
        long[] nanos = new long[count];
        for (int i = 0; i < count; i++) {
            LockKey key = LockKey.of("cost", name + "-" + i);
            String owner = owner();
            long started = System.nanoTime();
            AcquireResult result = store.tryAcquire(key, owner, Duration.ofSeconds(30));
            nanos[i] = System.nanoTime() - started;
            long fence = fence(result);
            if (replica != null) {
                assertThat(RedisRaw.read(replica.sync(), KEYS.lease(key)))
                        .as("acknowledged grant %d on the replica", i)
                        .contains(new RawLease(owner, fence));
            }
            assertThat(store.release(key, owner)).isTrue();
        }
        return nanos;
    }

    /** The {@code p}th percentile, in milliseconds. */
    private static double percentile(long[] nanos, int p) {
        long[] sorted = nanos.clone();
        java.util.Arrays.sort(sorted);
        int index = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, index)] / 1_000_000.0;
    }

    private RedisLeaseStore acknowledgingStore(int port) {
        return RedisLeaseStore.builder(client(port))
                .replicaAcknowledgement(1, ACK_TIMEOUT)
                .build();
    }

    private RedisClient client(int port) {
        RedisClient client = LocalRedis.client(port);
        clients.add(client);
        return client;
    }

    private StatefulRedisConnection<String, String> connect(int port) {
        return client(port).connect();
    }

    private static String owner() {
        return LockOwner.create("test").token();
    }

    private static long fence(AcquireResult result) {
        assertThat(result).isInstanceOf(AcquireResult.Granted.class);
        return ((AcquireResult.Granted) result).grant().fence();
    }
}
