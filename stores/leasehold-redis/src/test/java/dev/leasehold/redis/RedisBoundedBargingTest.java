package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.Lease;
import dev.leasehold.LeaseInfo;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.BatchAcquireResult;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The default mode's bounded barging on a private {@code redis-server}: separate store instances
 * (each with its own client where it matters) stand for separate processes; owner tokens are
 * explicit in the store-level tests, so a "waiter" asks again with the same token as a waiting
 * lock service does.
 */
class RedisBoundedBargingTest {

    private static final String PREFIX = "barge-test:";
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static LocalRedis local;
    private static String uri;
    private static RedisClient client;
    private static StatefulRedisConnection<String, String> probe;
    private static int keys;

    @BeforeAll
    static void start() throws Exception {
        local = new LocalRedis();
        int port = LocalRedis.freePortPair();
        local.server(port);
        uri = "redis://127.0.0.1:" + port;
        client = RedisClient.create(uri);
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

    /** A default-mode store that queues a waiter once it was refused for 1 ms. */
    private static RedisLeaseStore store(Duration queueTtl) {
        return RedisLeaseStore.builder(client)
                .keyPrefix(PREFIX)
                .bargingBound(Duration.ofMillis(1), queueTtl)
                .build();
    }

    private static LockKey newKey() {
        return LockKey.of("barge", "k" + (++keys) + "-" + System.nanoTime());
    }

    private static long queued(LockKey key) {
        return probe.sync().zcard(PREFIX + "{" + key.render() + "}:queue");
    }

    private static String holder(RedisLeaseStore store, LockKey key) {
        return store.inspect(key).map(LeaseInfo::ownerToken).orElse(null);
    }

    /**
     * A waiter asks until it holds a place: refused, then refused again once its bound has passed.
     * Its store waits for the key (it subscribed, as a lock service does for its waiters) until the
     * store is closed.
     */
    private static void queue(RedisLeaseStore store, LockKey key, String owner) {
        store.subscribe(key, notice -> {});
        long before = queued(key);
        Awaitility.await("a place for " + owner)
                .atMost(Duration.ofSeconds(5))
                .pollInterval(Duration.ofMillis(2))
                .until(() -> {
                    assertThat(store.tryAcquire(key, owner, LEASE)).isInstanceOf(AcquireResult.Busy.class);
                    return queued(key) == before + 1;
                });
    }

    /**
     * Eight lock services, each with its own client (eight processes), 4 threads each, on ONE key
     * with 1 ms inside: every service gets at least a quarter of its share, and Jain's fairness
     * index of the grants per service is at least 0.9. Without a bound, the releasing service's
     * next local waiter, woken in-process, often wins the free key before a notice reaches the
     * others (unbounded barging measured [92, 209, 408, 366, 143, 109, 108, 196], index 0.76, and
     * [214, 279, 164, 161, 425, 109, 119, 160], index 0.81).
     */
    @Test
    void eightLockServicesOnOneKeyGetEvenShares() throws Exception {
        int services = 8;
        int threads = 4;
        int total = 1600;
        LockKey key = newKey();
        List<RedisClient> clients = new ArrayList<>();
        List<RedisLeaseStore> stores = new ArrayList<>();
        List<LockService> locks = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(services * threads);
        AtomicLongArray grants = new AtomicLongArray(services);
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        AtomicInteger granted = new AtomicInteger();
        AtomicLong lastFence = new AtomicLong();
        AtomicInteger fenceRegressions = new AtomicInteger();
        LeaseOptions options = LeaseOptions.builder()
                .leaseFor(Duration.ofSeconds(10))
                .waitFor(Duration.ofSeconds(30))
                .build();
        try {
            for (int s = 0; s < services; s++) {
                RedisClient own = RedisClient.create(uri);
                clients.add(own);
                RedisLeaseStore store = RedisLeaseStore.builder(own)
                        .keyPrefix(PREFIX)
                        .bargingBound(RedisLeaseStore.DEFAULT_BARGING_BOUND) // the default bound
                        .build();
                stores.add(store);
                locks.add(LockService.builder(store).build());
            }
            List<Future<?>> workers = new ArrayList<>();
            for (int s = 0; s < services; s++) {
                int service = s;
                for (int t = 0; t < threads; t++) {
                    workers.add(pool.submit(() -> {
                        while (granted.get() < total) {
                            try (Lease lease = locks.get(service).acquire(key, options)) {
                                if (inside.incrementAndGet() != 1) {
                                    overlaps.incrementAndGet();
                                }
                                if (lease.fence() <= lastFence.getAndSet(lease.fence())) {
                                    fenceRegressions.incrementAndGet();
                                }
                                grants.incrementAndGet(service);
                                granted.incrementAndGet();
                                Thread.sleep(1); // the critical section's work
                                inside.decrementAndGet();
                            }
                        }
                        return null;
                    }));
                }
            }
            for (Future<?> worker : workers) {
                worker.get(120, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
            for (LockService lock : locks) {
                lock.close();
            }
            stores.forEach(RedisLeaseStore::close);
            clients.forEach(RedisClient::shutdown);
        }
        long[] perService = new long[services];
        long sum = 0;
        for (int s = 0; s < services; s++) {
            perService[s] = grants.get(s);
            sum += perService[s];
        }
        System.out.println("grants per service: " + Arrays.toString(perService));
        assertThat(overlaps).hasValue(0);
        assertThat(fenceRegressions).hasValue(0);
        long share = sum / services;
        double squares = 0;
        for (long n : perService) {
            assertThat(n)
                    .as("grants of a service against its share %d: %s", share, Arrays.toString(perService))
                    .isGreaterThanOrEqualTo(share / 4);
            squares += (double) n * n;
        }
        // Jain's fairness index: 1 for equal shares, 1/8 when one service gets everything
        double jain = (double) sum * sum / (services * squares);
        System.out.println("Jain's fairness index: " + jain);
        assertThat(jain).as("Jain's index of %s", Arrays.toString(perService)).isGreaterThanOrEqualTo(0.9);
    }

    @Test
    void aReleaseHandsTheKeyToQueuedWaitersInArrivalOrderWithIncreasingFences() {
        LockKey key = newKey();
        try (RedisLeaseStore a = store(Duration.ofSeconds(10));
                RedisLeaseStore b = store(Duration.ofSeconds(10))) {
            AcquireResult first = a.tryAcquire(key, "holder-a-000000000", LEASE);
            long previousFence = ((AcquireResult.Granted) first).grant().fence();
            queue(b, key, "waiter-b1-00000000");
            queue(a, key, "waiter-a2-00000000");

            String releasing = "holder-a-000000000";
            RedisLeaseStore releasingStore = a;
            int newcomers = 0;
            for (String[] next : new String[][] {{"waiter-b1-00000000", "b"}, {"waiter-a2-00000000", "a"}}) {
                // newcomers barging in (single tries, each with a token of its own) are refused
                assertThat(b.tryAcquire(key, "newcomer-" + (++newcomers) + "-0000000", LEASE))
                        .isInstanceOf(AcquireResult.Busy.class);
                assertThat(releasingStore.release(key, releasing)).isTrue();
                assertThat(holder(a, key)).isEqualTo(next[0]);
                assertThat(b.tryAcquire(key, "newcomer-" + (++newcomers) + "-0000000", LEASE))
                        .isInstanceOf(AcquireResult.Busy.class);
                RedisLeaseStore owner = next[1].equals("a") ? a : b;
                AcquireResult taken = owner.tryAcquire(key, next[0], LEASE);
                assertThat(taken).isInstanceOf(AcquireResult.Granted.class);
                long fence = ((AcquireResult.Granted) taken).grant().fence();
                assertThat(fence).isGreaterThan(previousFence);
                previousFence = fence;
                releasing = next[0];
                releasingStore = owner;
            }
            // the queue is empty: the release frees the key, and anyone may take it
            assertThat(releasingStore.release(key, releasing)).isTrue();
            assertThat(holder(a, key)).isNull();
            AcquireResult newcomer = b.tryAcquire(key, "newcomer-00000000", LEASE);
            assertThat(newcomer).isInstanceOf(AcquireResult.Granted.class);
            assertThat(((AcquireResult.Granted) newcomer).grant().fence()).isGreaterThan(previousFence);
        }
    }

    @Test
    void withNobodyQueuedAcquireAndReleaseAreOneScriptEachAndLeaveNoQueueBehind() {
        LockKey key = newKey();
        try (RedisLeaseStore a = store(Duration.ofSeconds(10))) {
            CommandStats before = CommandStats.of(probe.sync());
            assertThat(a.tryAcquire(key, "holder-a-000000000", LEASE)).isInstanceOf(AcquireResult.Granted.class);
            assertThat(a.release(key, "holder-a-000000000")).isTrue();
            CommandStats after = CommandStats.of(probe.sync());

            assertThat(after.scriptCallsSince(before)).isEqualTo(2);
            // the only extra work: is a queue there (acquire, release)? does anyone listen (release)?
            assertThat(after.since(before, "exists")).isEqualTo(3);
            assertThat(after.since(before, "publish"))
                    .as("nobody listens: no PUBLISH")
                    .isZero();
            assertThat(after.since(before, "zrange")).isZero();
            assertThat(probe.sync().keys(PREFIX + "{" + key.render() + "}*"))
                    .containsExactly(PREFIX + "{" + key.render() + "}:fence");
        }
    }

    @Test
    void aSingleTryNeverTakesAPlaceNorBlocksTheNextCaller() {
        LockKey key = newKey();
        try (RedisLeaseStore a = store(Duration.ofSeconds(10));
                RedisLeaseStore b = store(Duration.ofSeconds(10));
                LockService service = LockService.builder(b).build()) {
            ReleaseSubscription waiting = b.subscribe(key, notice -> {}); // b waits for the key too
            try {
                assertThat(a.tryAcquire(key, "holder-a-000000000", LEASE)).isInstanceOf(AcquireResult.Granted.class);
                for (int i = 0; i < 20; i++) {
                    // each single try asks once, with a token of its own (the HTTP 409 path)
                    assertThat(service.tryAcquire(
                                    key, LeaseOptions.builder().leaseFor(LEASE).build()))
                            .isEmpty();
                    assertThat(b.tryAcquire(key, "single-try-" + String.format("%07d", i), LEASE))
                            .isInstanceOf(AcquireResult.Busy.class);
                }
                assertThat(queued(key)).isZero();

                assertThat(a.release(key, "holder-a-000000000")).isTrue();

                assertThat(holder(a, key))
                        .as("nothing was handed to a single try")
                        .isNull();
                assertThat(a.tryAcquire(key, "next-caller-000000", LEASE)).isInstanceOf(AcquireResult.Granted.class);
            } finally {
                waiting.close();
            }
        }
    }

    @Test
    void aWaiterThatGivesUpLeavesTheQueueAndAKeyHandedToItGoesOn() throws Exception {
        LockKey key = newKey();
        Duration queueTtl = Duration.ofSeconds(60); // a place that outlives the test unless it is left
        try (RedisLeaseStore a = store(queueTtl);
                RedisLeaseStore b = store(queueTtl);
                RedisLeaseStore c = store(queueTtl);
                LockService waiter = LockService.builder(b).build()) {
            assertThat(a.tryAcquire(key, "holder-a-000000000", LEASE)).isInstanceOf(AcquireResult.Granted.class);
            assertThatThrownBy(() -> waiter.acquire(
                            key,
                            LeaseOptions.builder()
                                    .leaseFor(LEASE)
                                    .waitFor(Duration.ofMillis(300))
                                    .build()))
                    .isInstanceOf(dev.leasehold.LockBusyException.class);
            Awaitility.await("the waiter that gave up has left the queue")
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> queued(key) == 0);
            assertThat(a.release(key, "holder-a-000000000")).isTrue();
            // Without leaving, the release handed the key to the waiter that gave up, for its place's 60 s.
            Awaitility.await("a single try of another caller is granted")
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> c.tryAcquire(key, "next-caller-000000", LEASE) instanceof AcquireResult.Granted);
        }
    }

    @Test
    void aQueuedWaiterThatCrashedHoldsTheKeyUpForAtMostItsQueueTtl() {
        LockKey key = newKey();
        Duration queueTtl = Duration.ofMillis(600);
        try (RedisLeaseStore a = store(queueTtl);
                RedisLeaseStore crashed = store(queueTtl);
                RedisLeaseStore c = store(queueTtl)) {
            assertThat(a.tryAcquire(key, "holder-a-000000000", LEASE)).isInstanceOf(AcquireResult.Granted.class);
            queue(crashed, key, "crashed-waiter-000");
            long crashedAt = System.nanoTime();
            // from here on the crashed waiter never asks again
            queue(c, key, "waiter-c-000000000");

            assertThat(a.release(key, "holder-a-000000000")).isTrue();
            // handed to the first in line, which will never take it: it lasts the rest of its place
            assertThat(holder(a, key)).isEqualTo("crashed-waiter-000");
            AcquireResult busy = c.tryAcquire(key, "waiter-c-000000000", LEASE);
            assertThat(busy).isInstanceOf(AcquireResult.Busy.class);
            assertThat(((AcquireResult.Busy) busy).holderRemaining()).isLessThanOrEqualTo(queueTtl);

            Awaitility.await()
                    .atMost(Duration.ofSeconds(5))
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> c.tryAcquire(key, "waiter-c-000000000", LEASE) instanceof AcquireResult.Granted);
            // no longer than its queue TTL (plus the poll and slack)
            assertThat(Duration.ofNanos(System.nanoTime() - crashedAt)).isLessThan(queueTtl.plusMillis(1500));
            assertThat(holder(a, key)).isEqualTo("waiter-c-000000000");
        }
    }

    @Test
    void aHandOffWakesOnlyTheQueuedWaitersStoreAndCarriesItsGrant() throws Exception {
        LockKey key = newKey();
        try (RedisLeaseStore a = store(Duration.ofSeconds(10));
                RedisLeaseStore b = store(Duration.ofSeconds(10));
                RedisLeaseStore c = store(Duration.ofSeconds(10))) {
            LinkedBlockingQueue<ReleaseNotice> atB = new LinkedBlockingQueue<>();
            LinkedBlockingQueue<ReleaseNotice> atC = new LinkedBlockingQueue<>();
            ReleaseSubscription sb = b.subscribe(key, atB::add);
            ReleaseSubscription sc = c.subscribe(key, atC::add);
            try {
                long holderFence = ((AcquireResult.Granted) a.tryAcquire(key, "holder-a-000000000", LEASE))
                        .grant()
                        .fence();
                queue(b, key, "waiter-b-000000000");
                assertThat(c.tryAcquire(key, "barger-c-000000000", LEASE)).isInstanceOf(AcquireResult.Busy.class);

                CommandStats before = CommandStats.of(probe.sync());
                assertThat(a.release(key, "holder-a-000000000")).isTrue(); // to b
                assertThat(atB.poll(5, TimeUnit.SECONDS)).isNotNull();
                AcquireResult taken = b.tryAcquire(key, "waiter-b-000000000", LEASE);
                CommandStats after = CommandStats.of(probe.sync());

                assertThat(taken).isInstanceOf(AcquireResult.Granted.class);
                assertThat(((AcquireResult.Granted) taken).grant().fence()).isGreaterThan(holderFence);
                // the release is the only script: the waiter's acquire was answered from its wake-up
                assertThat(after.scriptCallsSince(before)).isEqualTo(1);
                assertThat(after.since(before, "publish")).isEqualTo(1);
                assertThat(b.release(key, "waiter-b-000000000")).isTrue(); // nobody queued: everyone is told
                assertThat(atC.poll(5, TimeUnit.SECONDS)).isNotNull();
                // messages reach each subscriber in publish order: had c been woken by the hand-off,
                // that notice would have come before this one
                assertThat(atC).isEmpty();
            } finally {
                sb.close();
                sc.close();
            }
        }
    }

    @Test
    void aForceReleaseDuringAHandOffNeverGivesTwoOwners() throws Exception {
        LockKey key = newKey();
        try (RedisLeaseStore a = store(Duration.ofSeconds(10));
                RedisLeaseStore b = store(Duration.ofSeconds(10));
                RedisLeaseStore c = store(Duration.ofSeconds(10))) {
            LinkedBlockingQueue<ReleaseNotice> atB = new LinkedBlockingQueue<>();
            ReleaseSubscription waiting = b.subscribe(key, atB::add);
            try {
                assertThat(a.tryAcquire(key, "holder-a-000000000", LEASE)).isInstanceOf(AcquireResult.Granted.class);
                queue(b, key, "waiter-b-000000000");
                assertThat(a.release(key, "holder-a-000000000")).isTrue();
                assertThat(atB.poll(5, TimeUnit.SECONDS)).isNotNull(); // the hand-off's wake-up, with its grant
                long handedFence = a.inspect(key).orElseThrow().fence();

                assertThat(a.forceRelease(key)).isTrue(); // an operator removes the handed-off grant
                ReleaseNotice forced = atB.poll(5, TimeUnit.SECONDS);
                assertThat(forced).isNotNull();
                assertThat(forced.forced()).isTrue();
                AcquireResult other = c.tryAcquire(key, "other-c-000000000", LEASE);
                assertThat(other).isInstanceOf(AcquireResult.Granted.class);
                long otherFence = ((AcquireResult.Granted) other).grant().fence();
                assertThat(otherFence).isGreaterThan(handedFence);

                // the waiter asks Redis instead of taking the removed grant from its wake-up
                assertThat(b.tryAcquire(key, "waiter-b-000000000", LEASE)).isInstanceOf(AcquireResult.Busy.class);
                assertThat(a.inspect(key).orElseThrow().ownerToken()).isEqualTo("other-c-000000000");
            } finally {
                waiting.close();
            }
        }
    }

    /**
     * The holder's lease runs out (nothing is handed off): the key is free, but a waiter of another
     * store holds the head of its queue. A batch with that key is refused and holds nothing.
     */
    @Test
    void aBatchNeverPassesAQueuedWaiter() {
        LockKey free = newKey();
        LockKey contended = newKey();
        try (RedisLeaseStore holderStore = store(Duration.ofSeconds(30));
                RedisLeaseStore waiterStore = store(Duration.ofSeconds(30));
                RedisLeaseStore batchStore = store(Duration.ofSeconds(30))) {
            assertThat(holderStore.tryAcquire(contended, "holder-0000000000", Duration.ofMillis(300)))
                    .isInstanceOf(AcquireResult.Granted.class);
            queue(waiterStore, contended, "waiter-0000000000");
            Awaitility.await("the holder's lease ran out")
                    .atMost(Duration.ofSeconds(10))
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> holderStore.inspect(contended).isEmpty());

            BatchAcquireResult batch = batchStore.tryAcquireAll(List.of(free, contended), "batch-00000000000", LEASE);

            assertThat(batch).isInstanceOf(BatchAcquireResult.Busy.class);
            assertThat(((BatchAcquireResult.Busy) batch).key()).isEqualTo(contended);
            assertThat(batchStore.inspect(free))
                    .as("nothing of the refused batch is held")
                    .isEmpty();
            assertThat(batchStore.tryAcquire(contended, "barger-0000000000", LEASE))
                    .as("a single barger neither")
                    .isInstanceOf(AcquireResult.Busy.class);
            assertThat(waiterStore.tryAcquire(contended, "waiter-0000000000", LEASE))
                    .as("the queued waiter's next ask")
                    .isInstanceOf(AcquireResult.Granted.class);
        }
    }

    @Test
    void bargingBoundOutOfRangeIsRefusedNamingTheValue() {
        assertThatThrownBy(() -> RedisLeaseStore.builder(client).bargingBound(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("bargingBound")
                .hasMessageContaining("PT0S");
        assertThatThrownBy(
                        () -> RedisLeaseStore.builder(client).bargingBound(Duration.ofMillis(50), Duration.ofMillis(5)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("PT0.005S");
    }
}
