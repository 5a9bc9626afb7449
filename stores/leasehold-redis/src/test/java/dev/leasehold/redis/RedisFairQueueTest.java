package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.Lease;
import dev.leasehold.LeaseInfo;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.BatchAcquireResult;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import dev.leasehold.testkit.TcpProxy;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The fair mode of the Redis store ({@code fairQueue}) on a private {@code redis-server}: separate
 * store instances stand for separate processes; owner tokens are explicit, so each "waiter" asks
 * again with the same token as a waiting caller does.
 */
class RedisFairQueueTest {

    private static final Duration LEASE = Duration.ofSeconds(30);
    private static LocalRedis local;
    private static RedisClient client;
    private static int port;
    private static StatefulRedisConnection<String, String> probe;
    private static int keys;

    @BeforeAll
    static void start() throws Exception {
        local = new LocalRedis();
        port = LocalRedis.freePortPair();
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

    private static RedisLeaseStore fairStore(Duration queueTtl) {
        return RedisLeaseStore.builder(client)
                .keyPrefix("fairq-test:")
                .fairQueue(queueTtl)
                .build();
    }

    private static RedisLeaseStore defaultStore() {
        return RedisLeaseStore.builder(client).keyPrefix("fairq-test:").build();
    }

    private static LockKey newKey() {
        return LockKey.of("fair", "k" + (++keys) + "-" + System.nanoTime());
    }

    /** A waiter's two asks: the first is told busy, the second takes its place in the queue. */
    private static void queue(RedisLeaseStore store, LockKey key, String owner) {
        assertThat(store.tryAcquire(key, owner, LEASE)).isInstanceOf(AcquireResult.Busy.class);
        assertThat(store.tryAcquire(key, owner, LEASE)).isInstanceOf(AcquireResult.Busy.class);
    }

    private static String holder(RedisLeaseStore store, LockKey key) {
        return store.inspect(key).map(LeaseInfo::ownerToken).orElse(null);
    }

    @Test
    void releaseHandsTheKeyToWaitersInArrivalOrderAcrossStoreInstances() {
        LockKey key = newKey();
        try (RedisLeaseStore a = fairStore(Duration.ofSeconds(10));
                RedisLeaseStore b = fairStore(Duration.ofSeconds(10))) {
            assertThat(a.tryAcquire(key, "holder-a-000000000", LEASE)).isInstanceOf(AcquireResult.Granted.class);
            queue(b, key, "waiter-b1-00000000");
            queue(a, key, "waiter-a2-00000000");
            queue(b, key, "waiter-b3-00000000");

            long previousFence = 0;
            String releasing = "holder-a-000000000";
            RedisLeaseStore releasingStore = a;
            for (String[] next : new String[][] {
                {"waiter-b1-00000000", "b"}, {"waiter-a2-00000000", "a"}, {"waiter-b3-00000000", "b"}
            }) {
                // a newcomer that asks twice does not jump the queue
                queue(a, key, "newcomer-" + next[0]);
                assertThat(releasingStore.release(key, releasing)).isTrue();
                assertThat(holder(a, key)).isEqualTo(next[0]);
                RedisLeaseStore owner = next[1].equals("a") ? a : b;
                AcquireResult taken = owner.tryAcquire(key, next[0], LEASE);
                assertThat(taken).isInstanceOf(AcquireResult.Granted.class);
                long fence = ((AcquireResult.Granted) taken).grant().fence();
                assertThat(fence).isGreaterThan(previousFence);
                previousFence = fence;
                releasing = next[0];
                releasingStore = owner;
            }
            // then the newcomers, in the order they came
            assertThat(releasingStore.release(key, releasing)).isTrue();
            assertThat(holder(a, key)).isEqualTo("newcomer-waiter-b1-00000000");
        }
    }

    @Test
    void aSingleTryTakesNoPlaceAndDoesNotBlockTheNextWaiter() {
        LockKey key = newKey();
        try (RedisLeaseStore a = fairStore(Duration.ofSeconds(10));
                RedisLeaseStore b = fairStore(Duration.ofSeconds(10))) {
            assertThat(a.tryAcquire(key, "holder-a-000000000", LEASE)).isInstanceOf(AcquireResult.Granted.class);
            assertThat(b.tryAcquire(key, "single-try-0000000", LEASE)).isInstanceOf(AcquireResult.Busy.class);
            queue(b, key, "waiter-b-000000000");

            assertThat(a.release(key, "holder-a-000000000")).isTrue();

            assertThat(holder(a, key)).isEqualTo("waiter-b-000000000");
        }
    }

    @Test
    void aFirstAskTakesAPlaceWhileTheStoreAlreadyWaitsForTheKey() {
        LockKey key = newKey();
        try (RedisLeaseStore a = fairStore(Duration.ofSeconds(10));
                RedisLeaseStore b = fairStore(Duration.ofSeconds(10))) {
            ReleaseSubscription waiting = b.subscribe(key, notice -> {});
            try {
                assertThat(a.tryAcquire(key, "holder-a-000000000", LEASE)).isInstanceOf(AcquireResult.Granted.class);
                assertThat(b.tryAcquire(key, "next-waiter-b-0000", LEASE)).isInstanceOf(AcquireResult.Busy.class);

                assertThat(a.release(key, "holder-a-000000000")).isTrue();

                assertThat(holder(a, key)).isEqualTo("next-waiter-b-0000");
            } finally {
                waiting.close();
            }
        }
    }

    @Test
    void aWaiterThatStoppedAskingIsSkippedOnceItsQueueTtlRanOut() {
        LockKey key = newKey();
        Duration queueTtl = Duration.ofMillis(600);
        try (RedisLeaseStore a = fairStore(queueTtl);
                RedisLeaseStore crashed = fairStore(queueTtl);
                RedisLeaseStore c = fairStore(queueTtl)) {
            assertThat(a.tryAcquire(key, "holder-a-000000000", LEASE)).isInstanceOf(AcquireResult.Granted.class);
            queue(crashed, key, "crashed-waiter-000");
            long crashedAt = System.nanoTime();
            // from here on the crashed waiter never asks again
            queue(c, key, "waiter-c-000000000");

            assertThat(a.release(key, "holder-a-000000000")).isTrue();
            // handed to the first in line, which will never take it: its place expires with its TTL
            assertThat(holder(a, key)).isEqualTo("crashed-waiter-000");
            AcquireResult busy = c.tryAcquire(key, "waiter-c-000000000", LEASE);
            assertThat(busy).isInstanceOf(AcquireResult.Busy.class);
            assertThat(((AcquireResult.Busy) busy).holderRemaining()).isLessThanOrEqualTo(queueTtl);

            Awaitility.await()
                    .atMost(Duration.ofSeconds(5))
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> c.tryAcquire(key, "waiter-c-000000000", LEASE) instanceof AcquireResult.Granted);
            long heldUpNanos = System.nanoTime() - crashedAt;
            // the crashed waiter held the key up no longer than its queue TTL (plus the poll and slack)
            assertThat(Duration.ofNanos(heldUpNanos)).isLessThan(queueTtl.plusMillis(1500));
            assertThat(holder(a, key)).isEqualTo("waiter-c-000000000");
        }
    }

    /**
     * The default mode is the fair queue with {@link RedisLeaseStore#DEFAULT_FAIR_QUEUE_TTL}: a
     * waiter that crashed once queued is handed the key, yet holds it no longer than the rest of
     * its place, at most that TTL after its last ask; then the next waiter gets it.
     */
    @Test
    void byDefaultACrashedQueuedWaiterHoldsTheKeyUpForAtMostTheDefaultQueueTtl() {
        LockKey key = newKey();
        Duration queueTtl = RedisLeaseStore.DEFAULT_FAIR_QUEUE_TTL;
        try (RedisLeaseStore a = defaultStore();
                RedisLeaseStore crashed = defaultStore();
                RedisLeaseStore c = defaultStore()) {
            assertThat(a.tryAcquire(key, "holder-a-000000000", LEASE)).isInstanceOf(AcquireResult.Granted.class);
            queue(crashed, key, "crashed-waiter-000");
            // from here on the crashed waiter never asks again
            queue(c, key, "waiter-c-000000000");

            assertThat(a.release(key, "holder-a-000000000")).isTrue();
            assertThat(holder(a, key)).as("handed to the first in line").isEqualTo("crashed-waiter-000");
            LeaseInfo handed = a.inspect(key).orElseThrow();
            assertThat(handed.remaining())
                    .as("the handed lease lasts the rest of the crashed waiter's place")
                    .isPositive()
                    .isLessThanOrEqualTo(queueTtl);

            Awaitility.await()
                    .atMost(Duration.ofSeconds(10))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> c.tryAcquire(key, "waiter-c-000000000", LEASE) instanceof AcquireResult.Granted);
            assertThat(holder(a, key)).isEqualTo("waiter-c-000000000");
        }
    }

    @Test
    void aHandOffWakesOnlyTheStoreOfTheWaiterItWentTo() throws Exception {
        LockKey key = newKey();
        try (RedisLeaseStore a = fairStore(Duration.ofSeconds(10));
                RedisLeaseStore b = fairStore(Duration.ofSeconds(10));
                RedisLeaseStore c = fairStore(Duration.ofSeconds(10))) {
            LinkedBlockingQueue<ReleaseNotice> atB = new LinkedBlockingQueue<>();
            LinkedBlockingQueue<ReleaseNotice> atC = new LinkedBlockingQueue<>();
            ReleaseSubscription sb = b.subscribe(key, atB::add);
            ReleaseSubscription sc = c.subscribe(key, atC::add);
            try {
                assertThat(a.tryAcquire(key, "holder-a-000000000", LEASE)).isInstanceOf(AcquireResult.Granted.class);
                queue(b, key, "waiter-b-000000000");
                queue(c, key, "waiter-c-000000000");

                assertThat(a.release(key, "holder-a-000000000")).isTrue(); // to b
                ReleaseNotice first = atB.poll(5, TimeUnit.SECONDS);
                assertThat(first).isNotNull();
                assertThat(first.key()).isEqualTo(key.render());
                assertThat(b.tryAcquire(key, "waiter-b-000000000", LEASE)).isInstanceOf(AcquireResult.Granted.class);
                assertThat(b.release(key, "waiter-b-000000000")).isTrue(); // to c

                assertThat(atC.poll(5, TimeUnit.SECONDS)).isNotNull();
                // messages reach each subscriber in publish order: had c been woken by the first
                // hand-off, that notice would have come before this one
                assertThat(atC).isEmpty();
                assertThat(atB).isEmpty();
            } finally {
                sb.close();
                sc.close();
            }
        }
    }

    @Test
    void aHandOffCostsOneRoundTripAfterTheReleaseCountedAtTheServer() throws Exception {
        LockKey key = newKey();
        Duration queueTtl = Duration.ofSeconds(10);
        try (RedisLeaseStore a = fairStore(queueTtl);
                RedisLeaseStore b = fairStore(queueTtl)) {
            LinkedBlockingQueue<ReleaseNotice> atB = new LinkedBlockingQueue<>();
            ReleaseSubscription waiting = b.subscribe(key, atB::add);
            try {
                AcquireResult first = a.tryAcquire(key, "holder-a-000000000", LEASE);
                long holderFence = ((AcquireResult.Granted) first).grant().fence();
                assertThat(b.tryAcquire(key, "waiter-b-000000000", LEASE)).isInstanceOf(AcquireResult.Busy.class);

                Map<String, Long> before = commandCalls();
                assertThat(a.release(key, "holder-a-000000000")).isTrue();
                assertThat(atB.poll(5, TimeUnit.SECONDS)).isNotNull(); // the wake-up, carrying the grant
                AcquireResult taken = b.tryAcquire(key, "waiter-b-000000000", LEASE);
                Map<String, Long> after = commandCalls();

                // the release is the only script: the waiter's acquire was answered from the wake-up
                assertThat(delta(before, after, "evalsha")).isEqualTo(1);
                assertThat(delta(before, after, "eval")).isZero();
                assertThat(delta(before, after, "publish")).isEqualTo(1);
                assertThat(taken).isInstanceOf(AcquireResult.Granted.class);
                dev.leasehold.spi.Grant grant = ((AcquireResult.Granted) taken).grant();
                assertThat(grant.fence()).isGreaterThan(holderFence);
                // valid no longer than the hand-off the server gave (the rest of the queue place)
                assertThat(grant.remaining()).isPositive().isLessThanOrEqualTo(queueTtl);
                LeaseInfo onServer = a.inspect(key).orElseThrow();
                assertThat(onServer.ownerToken()).isEqualTo("waiter-b-000000000");
                assertThat(onServer.fence()).isEqualTo(grant.fence());
                assertThat(onServer.expiresAt())
                        .isAfterOrEqualTo(grant.expiresAt().minusMillis(1));
            } finally {
                waiting.close();
            }
        }
    }

    @Test
    void aHandOffForceReleasedBeforeTheWaiterTookItIsNotTakenFromTheWakeUp() throws Exception {
        LockKey key = newKey();
        try (RedisLeaseStore a = fairStore(Duration.ofSeconds(10));
                RedisLeaseStore b = fairStore(Duration.ofSeconds(10))) {
            LinkedBlockingQueue<ReleaseNotice> atB = new LinkedBlockingQueue<>();
            ReleaseSubscription waiting = b.subscribe(key, atB::add);
            try {
                assertThat(a.tryAcquire(key, "holder-a-000000000", LEASE)).isInstanceOf(AcquireResult.Granted.class);
                assertThat(b.tryAcquire(key, "waiter-b-000000000", LEASE)).isInstanceOf(AcquireResult.Busy.class);
                assertThat(a.release(key, "holder-a-000000000")).isTrue();
                assertThat(atB.poll(5, TimeUnit.SECONDS)).isNotNull(); // the hand-off's wake-up
                long handedFence = a.inspect(key).orElseThrow().fence();

                assertThat(a.forceRelease(key)).isTrue(); // an operator removes the handed-off grant
                ReleaseNotice forced = atB.poll(5, TimeUnit.SECONDS);
                assertThat(forced).isNotNull();
                assertThat(forced.forced()).isTrue();
                // the key is free; b asks Redis and gets a NEW grant, never the removed one
                AcquireResult taken = b.tryAcquire(key, "waiter-b-000000000", LEASE);

                assertThat(taken).isInstanceOf(AcquireResult.Granted.class);
                assertThat(((AcquireResult.Granted) taken).grant().fence()).isGreaterThan(handedFence);
                assertThat(a.inspect(key).orElseThrow().fence())
                        .isEqualTo(((AcquireResult.Granted) taken).grant().fence());
            } finally {
                waiting.close();
            }
        }
    }

    @Test
    void withoutItsWakeUpAWaiterTakesTheHandOffWithOneMoreRoundTrip() {
        LockKey key = newKey();
        try (RedisLeaseStore a = fairStore(Duration.ofSeconds(10));
                RedisLeaseStore b = fairStore(Duration.ofSeconds(10))) {
            assertThat(a.tryAcquire(key, "holder-a-000000000", LEASE)).isInstanceOf(AcquireResult.Granted.class);
            queue(b, key, "waiter-b-000000000");

            Map<String, Long> before = commandCalls();
            assertThat(a.release(key, "holder-a-000000000")).isTrue();
            assertThat(b.tryAcquire(key, "waiter-b-000000000", LEASE)).isInstanceOf(AcquireResult.Granted.class);
            Map<String, Long> after = commandCalls();

            // two scripts (the release that hands over, the waiter's take), one message to one channel
            assertThat(delta(before, after, "evalsha")).isEqualTo(2);
            assertThat(delta(before, after, "eval")).isZero();
            assertThat(delta(before, after, "publish")).isEqualTo(1);
        }
    }

    @Test
    void lockServiceWaitersWithTheirOwnTokensAreWokenByTheHandOffInQueueOrder() throws Exception {
        LockKey key = newKey();
        LeaseOptions options = LeaseOptions.builder()
                .leaseFor(LEASE)
                .waitFor(Duration.ofSeconds(20))
                .build();
        ExecutorService waiters = Executors.newFixedThreadPool(2);
        try (RedisLeaseStore sa = fairStore(Duration.ofSeconds(10));
                RedisLeaseStore sb = fairStore(Duration.ofSeconds(10));
                RedisLeaseStore sc = fairStore(Duration.ofSeconds(10));
                // polls so rare that only the hand-off's wake-up can get a waiter going in time
                LockService a =
                        LockService.builder(sa).maxPoll(Duration.ofSeconds(30)).build();
                LockService b =
                        LockService.builder(sb).maxPoll(Duration.ofSeconds(30)).build();
                LockService c =
                        LockService.builder(sc).maxPoll(Duration.ofSeconds(30)).build()) {
            Lease held = a.acquire(key, options, LockOwner.create("a"));
            Future<Lease> atB = waiters.submit(() -> b.acquire(key, options, LockOwner.create("b")));
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> queued(key) == 1);
            Future<Lease> atC = waiters.submit(() -> c.acquire(key, options, LockOwner.create("c")));
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> queued(key) == 2);

            held.close();
            // the holder's lease had 30 s left and the waiters poll every 30 s: only the wake-up
            // sent to b's store by the hand-off gets b the key within seconds
            Lease atBLease = atB.get(5, TimeUnit.SECONDS);
            assertThat(atBLease.fence()).isGreaterThan(held.fence());
            assertThat(atC).isNotDone();
            atBLease.close();
            Lease atCLease = atC.get(5, TimeUnit.SECONDS);
            assertThat(atCLease.fence()).isGreaterThan(atBLease.fence());
            atCLease.close();
        } finally {
            waiters.shutdownNow();
        }
    }

    @Test
    void aWaiterHandedTheKeyForTheRestOfItsPlaceIsToldItLostItWithinItsLease() throws Exception {
        // The hand-off lasts the rest of the waiter's queue place (10 s here) at the server and
        // travels with the wake-up; the waiter asked for 500 ms without renewal, so it is told it
        // lost the key within about that, not at the end of the place.
        LockKey key = newKey();
        LeaseOptions shortOnce = LeaseOptions.builder()
                .leaseFor(Duration.ofMillis(500))
                .waitFor(Duration.ofSeconds(20))
                .renewal(false)
                .build();
        try (RedisLeaseStore sa = fairStore(Duration.ofSeconds(10));
                RedisLeaseStore sb = fairStore(Duration.ofSeconds(10));
                LockService a = LockService.builder(sa).build();
                LockService b = rarePolls(sb)) {
            Lease handed = handedOff(a, b, key, shortOnce);
            LinkedBlockingQueue<Object> lost = new LinkedBlockingQueue<>();
            handed.onLost(lost::add);

            assertThat(lost.poll(5, TimeUnit.SECONDS))
                    .as("told lost well before the place's 10 s")
                    .isNotNull();
            assertThat(handed.isHeld()).isFalse();
            // the server keeps the hand-off for the rest of the place: nobody else took the key
            assertThat(holder(sa, key)).isEqualTo(handed.ownerToken());
        }
    }

    @Test
    void aHandedKeyRenewedAndThenCutOffIsNoLongerHeldOnceRedisLetItGo() throws Exception {
        // The hand-off lasts the rest of the waiter's place (10 s); its first renewal brings the
        // key's expiry at the server down to the lease (1 s). Cut off after that, the holder must
        // not believe it holds the key once Redis has let it go.
        LockKey key = newKey();
        LeaseOptions renewed = LeaseOptions.builder()
                .leaseFor(Duration.ofSeconds(1))
                .waitFor(Duration.ofSeconds(20))
                .build();
        String leaseKey = "fairq-test:{" + key.render() + "}";
        try (TcpProxy proxy = TcpProxy.to("127.0.0.1", port)) {
            RedisClient far = RedisClient.create(RedisURI.create(proxy.host(), proxy.port()));
            far.setOptions(ClientOptions.builder()
                    .timeoutOptions(TimeoutOptions.enabled(Duration.ofMillis(500)))
                    .build());
            try (RedisLeaseStore sa = fairStore(Duration.ofSeconds(10));
                    RedisLeaseStore sb = RedisLeaseStore.builder(far)
                            .keyPrefix("fairq-test:")
                            .fairQueue(Duration.ofSeconds(10))
                            .build();
                    LockService a = LockService.builder(sa).build();
                    LockService b = rarePolls(sb)) {
                Lease handed = handedOff(a, b, key, renewed);
                Awaitility.await()
                        .atMost(Duration.ofSeconds(5))
                        .until(() -> probe.sync().pttl(leaseKey) <= 1000);

                proxy.blackhole(TcpProxy.Direction.BOTH);
                Awaitility.await().atMost(Duration.ofSeconds(15)).until(() -> holder(sa, key) == null);

                assertThat(handed.isHeld())
                        .as("held after Redis let the key go")
                        .isFalse();
            } finally {
                far.shutdown(Duration.ZERO, Duration.ofSeconds(1));
            }
        }
    }

    /** A lock service that polls so rarely that only a hand-off's wake-up gets its waiter going. */
    private static LockService rarePolls(RedisLeaseStore store) {
        return LockService.builder(store).maxPoll(Duration.ofSeconds(30)).build();
    }

    /**
     * A holder of {@code a} releases {@code key} while a waiter of {@code b} waits for it with
     * {@code waiting}. Returns the waiter's lease, handed the key.
     */
    private static Lease handedOff(LockService a, LockService b, LockKey key, LeaseOptions waiting) throws Exception {
        ExecutorService waiters = Executors.newSingleThreadExecutor();
        try {
            Lease held = a.acquire(key, LeaseOptions.builder().leaseFor(LEASE).build(), LockOwner.create("a"));
            Future<Lease> atB = waiters.submit(() -> b.acquire(key, waiting, LockOwner.create("b")));
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> queued(key) == 1);
            held.close();
            return atB.get(5, TimeUnit.SECONDS);
        } finally {
            waiters.shutdownNow();
        }
    }

    private static long queued(LockKey key) {
        return probe.sync().zcard("fairq-test:{" + key.render() + "}:queue");
    }

    /**
     * The holder's lease runs out (it never releases, so nothing is handed off): the key is free
     * but a waiter of another store holds the head of its queue. A batch with that key is refused
     * and holds nothing; the waiter then gets the key.
     */
    @Test
    void aBatchIsRefusedAKeyWhoseQueueHasALiveWaiterAndHoldsNothing() {
        LockKey free = newKey();
        LockKey queued = newKey();
        try (RedisLeaseStore holderStore = fairStore(Duration.ofSeconds(30));
                RedisLeaseStore waiterStore = fairStore(Duration.ofSeconds(30));
                RedisLeaseStore batchStore = fairStore(Duration.ofSeconds(30))) {
            assertThat(holderStore.tryAcquire(queued, "holder-0000000000", Duration.ofMillis(300)))
                    .isInstanceOf(AcquireResult.Granted.class);
            for (int ask = 0; ask < 2; ask++) { // the second ask takes a place
                assertThat(waiterStore.tryAcquire(queued, "waiter-0000000000", Duration.ofSeconds(30)))
                        .isInstanceOf(AcquireResult.Busy.class);
            }
            Awaitility.await("the holder's lease ran out")
                    .atMost(Duration.ofSeconds(10))
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> holderStore.inspect(queued).isEmpty());

            BatchAcquireResult batch =
                    batchStore.tryAcquireAll(List.of(free, queued), "batch-00000000000", Duration.ofSeconds(30));

            assertThat(batch).isInstanceOf(BatchAcquireResult.Busy.class);
            assertThat(((BatchAcquireResult.Busy) batch).key()).isEqualTo(queued);
            assertThat(batchStore.inspect(free))
                    .as("nothing of the refused batch is held")
                    .isEmpty();
            assertThat(waiterStore.tryAcquire(queued, "waiter-0000000000", Duration.ofSeconds(30)))
                    .as("the queued waiter's next ask")
                    .isInstanceOf(AcquireResult.Granted.class);
        }
    }

    @Test
    void fairQueueTtlOutOfRangeIsRefusedNamingTheValue() {
        assertThatThrownBy(() -> RedisLeaseStore.builder(client).fairQueue(Duration.ofMillis(5)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fairQueue TTL")
                .hasMessageContaining("PT0.005S");
        assertThatThrownBy(() -> RedisLeaseStore.builder(client).fairQueue(null))
                .isInstanceOf(IllegalArgumentException.class);
    }

    private static Map<String, Long> commandCalls() {
        Map<String, Long> calls = new TreeMap<>();
        for (String line : probe.sync().info("commandstats").split("\r?\n")) {
            if (line.startsWith("cmdstat_")) {
                int at = line.indexOf("calls=") + 6;
                calls.put(
                        line.substring(8, line.indexOf(':')),
                        Long.parseLong(line.substring(at, line.indexOf(',', at))));
            }
        }
        return calls;
    }

    private static long delta(Map<String, Long> before, Map<String, Long> after, String command) {
        return after.getOrDefault(command, 0L) - before.getOrDefault(command, 0L);
    }
}
