package dev.leasehold.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.spi.AcquireRequest;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.testkit.TestServices;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Many processes on one key: each "process" is its own pool, {@link JdbcLeaseStore} and {@link
 * LockService}, as separate JVMs would have. Waiters of every process get the key (the waiter
 * queue and the hand-off at release), in both the default mode and the fair mode.
 */
abstract class AbstractJdbcQueueTest {

    protected abstract TestServices.JdbcEndpoint endpoint();

    protected abstract Database database();

    private final List<AutoCloseable> resources = new ArrayList<>();
    private HikariDataSource admin;
    private String namespace;

    @BeforeEach
    void namespace() {
        namespace = "lq-" + UUID.randomUUID().toString().substring(0, 8);
    }

    @AfterEach
    void closeAll() throws Exception {
        for (int i = resources.size() - 1; i >= 0; i--) {
            resources.get(i).close();
        }
        resources.clear();
        admin = null;
    }

    protected LockKey key(String id) {
        return LockKey.of(namespace, id);
    }

    /** A process's pool, with the schema created. */
    protected HikariDataSource pool() {
        TestServices.JdbcEndpoint endpoint = endpoint();
        HikariDataSource pool =
                AbstractJdbcLeaseStoreTest.pool(endpoint.url(), endpoint.user(), endpoint.password(), database(), null);
        resources.add(pool);
        return pool;
    }

    /** A process's store on a pool of its own. */
    protected JdbcLeaseStore store(UnaryOperator<JdbcLeaseStore.Builder> settings) {
        JdbcLeaseStore store = settings.apply(JdbcLeaseStore.builder(pool()).database(database()))
                .build();
        resources.add(store);
        return store;
    }

    /** A lock service of its own over {@code store}, closed after the test with the store. */
    protected LockService service(JdbcLeaseStore store) {
        resources.add(store);
        LockService service = LockService.builder(store).build();
        resources.add(service::close);
        return service;
    }

    /** A process: its own pool, store and lock service. */
    protected LockService service(UnaryOperator<JdbcLeaseStore.Builder> settings) {
        LockService service = LockService.builder(store(settings)).build();
        resources.add(service::close);
        return service;
    }

    /**
     * 8 processes with 8 threads each on ONE key, 1 ms critical section, until 400 grants in all:
     * every process gets between half and one and a half times its share, and each takes the key
     * over from another process at least once (the releaser re-acquiring at once no longer starves the others). One
     * holder at a time, fences strictly increasing in grant order.
     */
    @Test
    void everyProcessGetsItsShareOfOneKeyByDefault() throws Exception {
        assertEveryProcessGetsItsShare(b -> b);
    }

    protected void assertEveryProcessGetsItsShare(UnaryOperator<JdbcLeaseStore.Builder> settings) throws Exception {
        int processes = 8;
        int threads = 8;
        int total = 400;
        LockKey key = key("one");
        List<LockService> services = new ArrayList<>();
        for (int p = 0; p < processes; p++) {
            services.add(service(settings));
        }
        LeaseOptions options = LeaseOptions.builder()
                .leaseFor(Duration.ofSeconds(30))
                .waitFor(Duration.ofSeconds(60))
                .build();
        AtomicInteger grants = new AtomicInteger();
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger maxInside = new AtomicInteger();
        AtomicInteger lastProcess = new AtomicInteger(-1);
        AtomicLong lastFence = new AtomicLong(Long.MIN_VALUE);
        AtomicInteger fenceViolations = new AtomicInteger();
        int[] perProcess = new int[processes];
        int[] takenOver = new int[processes];
        ExecutorService pool = Executors.newFixedThreadPool(processes * threads);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int p = 0; p < processes; p++) {
                int process = p;
                LockService service = services.get(p);
                for (int t = 0; t < threads; t++) {
                    done.add(pool.submit(() -> {
                        while (grants.get() < total) {
                            try (Lease lease = service.acquire(key, options)) {
                                maxInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
                                if (lease.fence() <= lastFence.getAndSet(lease.fence())) {
                                    fenceViolations.incrementAndGet();
                                }
                                synchronized (perProcess) {
                                    perProcess[process]++;
                                    if (lastProcess.getAndSet(process) != process) {
                                        takenOver[process]++;
                                    }
                                }
                                grants.incrementAndGet();
                                Thread.sleep(1); // the critical section's work
                                inside.decrementAndGet();
                            }
                        }
                        return null;
                    }));
                }
            }
            for (Future<?> f : done) {
                f.get(120, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        int sum = 0;
        for (int n : perProcess) {
            sum += n;
        }
        assertThat(maxInside.get()).as("holders at once").isEqualTo(1);
        assertThat(fenceViolations.get())
                .as("grants whose fence was not above the last")
                .isZero();
        String shares = java.util.Arrays.toString(perProcess);
        int share = sum / processes;
        assertThat(java.util.Arrays.stream(perProcess).min().orElseThrow())
                .as("fewest grants of a process, of %d: %s", sum, shares)
                .isGreaterThanOrEqualTo(share / 2);
        assertThat(java.util.Arrays.stream(perProcess).max().orElseThrow())
                .as("most grants of a process, of %d: %s", sum, shares)
                .isLessThanOrEqualTo(share * 3 / 2);
        assertThat(java.util.Arrays.stream(takenOver).min().orElseThrow())
                .as("fewest take-overs from another process: %s", java.util.Arrays.toString(takenOver))
                .isPositive();
    }

    /** The same in fair mode: every process gets its share. */
    @Test
    void everyProcessGetsItsShareOfOneKeyInFairMode() throws Exception {
        assertEveryProcessGetsItsShare(b -> b.fairQueue(Duration.ofSeconds(2)));
    }

    /**
     * Fair mode across two lock services: B queues first, then C; when A releases, the key goes to
     * B (handed over in the release), and only after B's release to C.
     */
    @Test
    void inFairModeTwoServicesAreServedInArrivalOrder() throws Exception {
        UnaryOperator<JdbcLeaseStore.Builder> fair = b -> b.fairQueue(Duration.ofSeconds(5));
        LockKey key = key("ordered");
        LockService a = service(fair);
        LockService b = service(fair);
        LockService c = service(fair);
        LeaseOptions wait =
                LeaseOptions.builder().waitFor(Duration.ofSeconds(30)).build();
        List<String> order = java.util.Collections.synchronizedList(new ArrayList<>());
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            Lease held = a.tryAcquire(key, LeaseOptions.defaults()).orElseThrow();
            java.util.concurrent.CountDownLatch bHolds = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.CountDownLatch bMayRelease = new java.util.concurrent.CountDownLatch(1);
            Future<Long> bFence = pool.submit(() -> {
                try (Lease lease = b.acquire(key, wait)) {
                    order.add("B");
                    bHolds.countDown();
                    bMayRelease.await();
                    return lease.fence();
                }
            });
            awaitPlaces(key, 1);
            Future<Long> cFence = pool.submit(() -> {
                try (Lease lease = c.acquire(key, wait)) {
                    order.add("C");
                    return lease.fence();
                }
            });
            awaitPlaces(key, 2);
            long aFence = held.fence();
            held.close();
            bHolds.await(30, TimeUnit.SECONDS);
            assertThat(order).containsExactly("B");
            bMayRelease.countDown();
            long second = bFence.get(30, TimeUnit.SECONDS);
            long third = cFence.get(30, TimeUnit.SECONDS);
            assertThat(order).containsExactly("B", "C");
            assertThat(second).as("fence handed to B").isGreaterThan(aFence);
            assertThat(third).as("fence handed to C").isGreaterThan(second);
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * A waiter that took a place and stopped asking (crashed) is handed the key at the release, but
     * only until its place ends: the handed lease runs out at most one queue TTL after its last
     * ask, and then the next waiter gets the key, with a higher fence.
     */
    @Test
    void aCrashedWaiterHoldsTheKeyUpForAtMostItsQueueTtl() throws Exception {
        Duration ttl = Duration.ofMillis(500);
        JdbcLeaseStore holderStore = store(b -> b.fairQueue(ttl));
        JdbcLeaseStore crashedStore = store(b -> b.fairQueue(ttl));
        LockService next = service(b -> b.fairQueue(ttl));
        LockKey key = key("crashed");
        String holder = "holder-" + UUID.randomUUID();
        String crashed = "crashed-" + UUID.randomUUID();
        long first = ((dev.leasehold.spi.AcquireResult.Granted)
                        holderStore.tryAcquire(key, holder, Duration.ofSeconds(30)))
                .grant()
                .fence();
        // Two asks: the second takes a place; then it never asks again.
        assertThat(crashedStore.tryAcquire(key, crashed, Duration.ofSeconds(30)))
                .isInstanceOf(dev.leasehold.spi.AcquireResult.Busy.class);
        assertThat(crashedStore.tryAcquire(key, crashed, Duration.ofSeconds(30)))
                .isInstanceOf(dev.leasehold.spi.AcquireResult.Busy.class);
        assertThat(places(key)).containsExactly(crashed);
        assertThat(holderStore.release(key, holder)).isTrue();
        dev.leasehold.LeaseInfo handed = holderStore.inspect(key).orElseThrow();
        assertThat(handed.ownerToken())
                .as("the key handed to the queued waiter")
                .isEqualTo(crashed);
        assertThat(handed.fence()).isGreaterThan(first);
        assertThat(handed.remaining())
                .as("the hand-off lasts the rest of its place")
                .isLessThanOrEqualTo(ttl);
        try (Lease lease = next.acquire(
                key, LeaseOptions.builder().waitFor(Duration.ofSeconds(30)).build())) {
            assertThat(lease.fence()).isGreaterThan(handed.fence());
        }
    }

    /**
     * The store follows what the request says, not how often a token asks: a single try takes no
     * place however often it asks with one token; in fair mode a waiter takes its place at its
     * first refusal, by default once it has been refused for the barging bound.
     */
    @Test
    void onlyARequestThatWaitsTakesAPlaceAndWhenThePolicySaysSo() throws Exception {
        Duration lease = Duration.ofSeconds(30);
        for (boolean fair : new boolean[] {true, false}) {
            JdbcLeaseStore store = store(b -> fair ? b.fairQueue(Duration.ofSeconds(5)) : b);
            LockKey key = key("request-" + fair);
            String holder = "holder-" + UUID.randomUUID();
            assertThat(store.tryAcquire(key, holder, lease)).isInstanceOf(AcquireResult.Granted.class);

            String single = "single-" + UUID.randomUUID();
            for (int i = 0; i < 3; i++) {
                assertThat(store.tryAcquire(AcquireRequest.once(key, single, lease)))
                        .isInstanceOf(AcquireResult.Busy.class);
            }
            assertThat(places(key))
                    .as("places after single tries, fair=%s", fair)
                    .isEmpty();

            String waiter = "waiter-" + UUID.randomUUID();
            assertThat(store.tryAcquire(AcquireRequest.waiting(key, waiter, lease, null)))
                    .isInstanceOf(AcquireResult.Busy.class);
            if (fair) {
                assertThat(places(key))
                        .as("a fair waiter's place at its first refusal")
                        .containsExactly(waiter);
            } else {
                assertThat(places(key))
                        .as("a waiter refused for less than the bound")
                        .isEmpty();
                assertThat(store.tryAcquire(AcquireRequest.waiting(key, waiter, lease, Duration.ofMillis(10))))
                        .isInstanceOf(AcquireResult.Busy.class);
                assertThat(places(key)).as("still within the bound").isEmpty();
                assertThat(store.tryAcquire(AcquireRequest.waiting(key, waiter, lease, Duration.ofMillis(60))))
                        .isInstanceOf(AcquireResult.Busy.class);
                assertThat(places(key)).as("refused for the bound").containsExactly(waiter);
            }
            store.leaveQueue(key, waiter);
            assertThat(places(key)).isEmpty();
            assertThat(store.release(key, holder)).isTrue();
        }
    }

    /**
     * A lease that ran out while a waiter was queued (its holder stopped renewing) goes to that
     * waiter: callers without a place, a single try and a waiter of another store that has not
     * queued yet, are refused until the queued waiter has taken it.
     */
    @Test
    void anExpiredLeaseWithAQueuedWaiterGoesToThatWaiterNotToACallerWithoutAPlace() throws Exception {
        JdbcLeaseStore store = store(b -> b.fairQueue(Duration.ofSeconds(30)));
        JdbcLeaseStore other = store(b -> b.fairQueue(Duration.ofSeconds(30)));
        LockKey key = key("expired-queued");
        Duration lease = Duration.ofSeconds(30);
        String holder = "holder-" + UUID.randomUUID();
        assertThat(store.tryAcquire(key, holder, Duration.ofMillis(300))).isInstanceOf(AcquireResult.Granted.class);
        String waiter = "waiter-" + UUID.randomUUID();
        assertThat(store.tryAcquire(AcquireRequest.waiting(key, waiter, lease, null)))
                .isInstanceOf(AcquireResult.Busy.class);
        assertThat(places(key)).containsExactly(waiter);
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> store.inspect(key)
                .isEmpty());

        assertThat(other.tryAcquire(AcquireRequest.once(key, "single-" + UUID.randomUUID(), lease)))
                .as("a single try of the expired key, with a waiter queued")
                .isInstanceOf(AcquireResult.Busy.class);
        assertThat(other.tryAcquire(key, "plain-" + UUID.randomUUID(), lease))
                .as("a plain acquire of the expired key, with a waiter queued")
                .isInstanceOf(AcquireResult.Busy.class);
        assertThat(store.tryAcquire(AcquireRequest.waiting(key, waiter, lease, Duration.ofMillis(400))))
                .as("the queued waiter")
                .isInstanceOf(AcquireResult.Granted.class);
        assertThat(store.release(key, waiter)).isTrue();
    }

    /**
     * An owner token queued for one key is granted another key meanwhile (another thread of one
     * {@code LockOwner}). Handed the first key, it takes it, and that grant still ends its place: when
     * its lease then runs out (it crashed), the next caller takes the key instead of waiting out the
     * place's TTL.
     */
    @Test
    void aGrantOfAnotherKeyWhileQueuedDoesNotKeepThisKeysPlaceAlive() throws Exception {
        Duration lease = Duration.ofSeconds(30);
        JdbcLeaseStore store = store(b -> b.fairQueue(Duration.ofSeconds(30)));
        JdbcLeaseStore next = store(b -> b.fairQueue(Duration.ofSeconds(30)));
        LockKey other = key("granted-other");
        LockKey key = key("granted-queued");
        String owner = "owner-" + UUID.randomUUID();
        String holder = "holder-" + UUID.randomUUID();
        assertThat(store.tryAcquire(key, holder, lease)).isInstanceOf(AcquireResult.Granted.class);
        assertThat(store.tryAcquire(AcquireRequest.waiting(key, owner, lease, null)))
                .isInstanceOf(AcquireResult.Busy.class);
        assertThat(places(key)).containsExactly(owner);
        assertThat(store.tryAcquire(AcquireRequest.waiting(other, owner, lease, null)))
                .isInstanceOf(AcquireResult.Granted.class);
        assertThat(store.release(key, holder)).isTrue(); // handed to the owner
        assertThat(store.tryAcquire(AcquireRequest.waiting(key, owner, Duration.ofMillis(300), null)))
                .as("the owner asks again and takes the key it was handed")
                .isInstanceOf(AcquireResult.Granted.class);
        assertThat(places(key))
                .as("places of the key after its grant to the queued owner")
                .isEmpty();
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> store.inspect(key)
                .isEmpty());
        assertThat(next.tryAcquire(AcquireRequest.once(key, "next-" + UUID.randomUUID(), lease)))
                .as("a caller of the key after the owner's lease ran out")
                .isInstanceOf(AcquireResult.Granted.class);
    }

    /**
     * One owner token holds one key and waits, queued, for another (a {@code LockOwner} may be used
     * from several threads). Releasing the first key does not make the store forget its place on the
     * second: handed that key, it takes it and gives it back, its place ends, and the next caller is
     * served at once.
     */
    @Test
    void anOwnerThatReleasesAnotherKeyWhileQueuedStillEndsItsPlace() throws Exception {
        Duration lease = Duration.ofSeconds(30);
        JdbcLeaseStore store = store(b -> b.fairQueue(Duration.ofSeconds(30)));
        LockKey other = key("other");
        LockKey key = key("queued");
        String owner = "owner-" + UUID.randomUUID();
        String holder = "holder-" + UUID.randomUUID();
        assertThat(store.tryAcquire(other, owner, lease)).isInstanceOf(AcquireResult.Granted.class);
        assertThat(store.tryAcquire(key, holder, lease)).isInstanceOf(AcquireResult.Granted.class);
        assertThat(store.tryAcquire(AcquireRequest.waiting(key, owner, lease, null)))
                .isInstanceOf(AcquireResult.Busy.class);
        assertThat(places(key)).containsExactly(owner);
        assertThat(store.release(other, owner)).isTrue();
        assertThat(store.release(key, holder)).isTrue(); // handed to the owner
        assertThat(store.tryAcquire(AcquireRequest.waiting(key, owner, lease, null)))
                .as("the owner asks again and takes the key it was handed")
                .isInstanceOf(AcquireResult.Granted.class);
        assertThat(store.release(key, owner)).isTrue();
        assertThat(store.tryAcquire(AcquireRequest.once(key, "next-" + UUID.randomUUID(), lease)))
                .as("the next caller of the free key")
                .isInstanceOf(AcquireResult.Granted.class);
        assertThat(places(key))
                .as("places after the owner took and released the key")
                .isEmpty();
    }

    /**
     * The head of a key's queue, with a waiter of another store behind it, takes the key when its
     * holder's lease runs out, also after it released another key meanwhile.
     */
    @Test
    void theHeadWaiterTakesAnExpiredKeyAfterReleasingAnotherKey() throws Exception {
        Duration lease = Duration.ofSeconds(30);
        JdbcLeaseStore store = store(b -> b.fairQueue(Duration.ofSeconds(30)));
        JdbcLeaseStore behindStore = store(b -> b.fairQueue(Duration.ofSeconds(30)));
        LockKey other = key("other-head");
        LockKey key = key("expired-head");
        String owner = "owner-" + UUID.randomUUID();
        String behind = "behind-" + UUID.randomUUID();
        String holder = "holder-" + UUID.randomUUID();
        assertThat(store.tryAcquire(other, owner, lease)).isInstanceOf(AcquireResult.Granted.class);
        assertThat(store.tryAcquire(key, holder, Duration.ofMillis(500))).isInstanceOf(AcquireResult.Granted.class);
        assertThat(store.tryAcquire(AcquireRequest.waiting(key, owner, lease, null)))
                .isInstanceOf(AcquireResult.Busy.class);
        assertThat(behindStore.tryAcquire(AcquireRequest.waiting(key, behind, lease, null)))
                .isInstanceOf(AcquireResult.Busy.class);
        assertThat(places(key)).containsExactly(owner, behind);
        assertThat(store.release(other, owner)).isTrue();
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> store.inspect(key)
                .isEmpty());
        assertThat(store.tryAcquire(AcquireRequest.waiting(key, owner, lease, null)))
                .as("the head waiter asks for the expired key")
                .isInstanceOf(AcquireResult.Granted.class);
        assertThat(store.release(key, owner)).isTrue();
    }

    /**
     * A waiter handed the key by a release, that gives it back before asking again (so no acquire
     * of its own deleted its place), ends its place with that release: the next caller takes the
     * free key at once instead of waiting out the place's TTL behind a waiter that is gone.
     */
    @Test
    void aWaiterHandedTheKeyEndsItsPlaceWhenItReleasesIt() throws Exception {
        Duration lease = Duration.ofSeconds(30);
        JdbcLeaseStore store = store(b -> b.fairQueue(Duration.ofSeconds(60)));
        LockKey key = key("handed-release");
        String holder = "holder-" + UUID.randomUUID();
        assertThat(store.tryAcquire(key, holder, lease)).isInstanceOf(AcquireResult.Granted.class);
        String waiter = "waiter-" + UUID.randomUUID();
        assertThat(store.tryAcquire(AcquireRequest.waiting(key, waiter, lease, null)))
                .isInstanceOf(AcquireResult.Busy.class);
        assertThat(places(key)).containsExactly(waiter);
        assertThat(store.release(key, holder)).isTrue();
        assertThat(store.release(key, waiter))
                .as("the waiter was handed the key")
                .isTrue();
        assertThat(places(key))
                .as("places after the waiter released the key it was handed")
                .isEmpty();
        assertThat(store.tryAcquire(AcquireRequest.once(key, "next-" + UUID.randomUUID(), lease)))
                .isInstanceOf(AcquireResult.Granted.class);
    }

    /** A single try (no wait) is refused and takes no place; the next waiter is then served at the release. */
    @Test
    void aSingleTryTakesNoPlace() throws Exception {
        for (UnaryOperator<JdbcLeaseStore.Builder> mode :
                List.<UnaryOperator<JdbcLeaseStore.Builder>>of(b -> b.fairQueue(Duration.ofSeconds(5)), b -> b)) {
            LockKey key = key("single-" + UUID.randomUUID().toString().substring(0, 6));
            LockService a = service(mode);
            LockService single = service(mode);
            LockService waiter = service(mode);
            Lease held = a.tryAcquire(key, LeaseOptions.defaults()).orElseThrow();
            for (int i = 0; i < 3; i++) {
                assertThat(single.tryAcquire(key, LeaseOptions.defaults())).isEmpty();
            }
            assertThat(places(key)).isEmpty();
            ExecutorService pool = Executors.newSingleThreadExecutor();
            try {
                Future<Long> waited = pool.submit(() -> {
                    try (Lease lease = waiter.acquire(
                            key,
                            LeaseOptions.builder()
                                    .waitFor(Duration.ofSeconds(30))
                                    .build())) {
                        return lease.fence();
                    }
                });
                awaitPlaces(key, 1);
                assertThat(places(key)).hasSize(1);
                long fence = held.fence();
                held.close();
                assertThat(waited.get(30, TimeUnit.SECONDS)).isGreaterThan(fence);
            } finally {
                pool.shutdownNow();
            }
        }
    }

    /**
     * Force-releases and expiries during hand-offs never give the key to two owners at once:
     * contenders with short leases and no renewal hold for a while and then confirm with a renewal
     * that they still held the key; no two confirmed holds overlap, and no fence is granted twice.
     */
    @Test
    void forceReleasesAndExpiriesDuringHandOffsNeverGrantTwoOwners() throws Exception {
        int processes = 4;
        LockKey key = key("forced");
        List<JdbcLeaseStore> stores = new ArrayList<>();
        for (int p = 0; p < processes; p++) {
            stores.add(store(b -> b.bargingBound(Duration.ofMillis(5))));
        }
        JdbcLeaseStore operator = store(b -> b);
        record Hold(long start, long end, long fence) {}
        List<Hold> confirmed = java.util.Collections.synchronizedList(new ArrayList<>());
        java.util.Set<Long> fences = java.util.concurrent.ConcurrentHashMap.newKeySet();
        AtomicInteger duplicates = new AtomicInteger();
        AtomicInteger rounds = new AtomicInteger();
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        ExecutorService pool = Executors.newFixedThreadPool(processes + 1);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (JdbcLeaseStore store : stores) {
                done.add(pool.submit(() -> {
                    while (!stop.get()) {
                        String owner = "w-" + UUID.randomUUID();
                        dev.leasehold.spi.AcquireResult result;
                        while (!((result = store.tryAcquire(key, owner, Duration.ofMillis(40)))
                                instanceof dev.leasehold.spi.AcquireResult.Granted)) {
                            if (stop.get()) {
                                return null;
                            }
                            Thread.sleep(1);
                        }
                        long fence = ((dev.leasehold.spi.AcquireResult.Granted) result)
                                .grant()
                                .fence();
                        if (!fences.add(fence)) {
                            duplicates.incrementAndGet();
                        }
                        long start = System.nanoTime();
                        Thread.sleep(ThreadLocalRandomHolder.next(1, 60)); // sometimes past the lease
                        // A confirmed renewal ran at the database after it was sent, so the owner
                        // certainly held the key from its grant until the renewal was sent; the
                        // answer's return can come after the next owner's grant on a loaded machine.
                        long renewalSent = System.nanoTime();
                        if (store.renew(key, owner, Duration.ofMillis(40)).isPresent()) {
                            confirmed.add(new Hold(start, renewalSent, fence));
                        }
                        store.release(key, owner);
                        rounds.incrementAndGet();
                    }
                    return null;
                }));
            }
            done.add(pool.submit(() -> {
                while (!stop.get()) {
                    operator.forceRelease(key);
                    Thread.sleep(7);
                }
                return null;
            }));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (rounds.get() < 200 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            stop.set(true);
            for (Future<?> f : done) {
                f.get(30, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(rounds.get()).isGreaterThanOrEqualTo(200);
        assertThat(duplicates.get()).as("fences granted twice").isZero();
        List<Hold> holds = new ArrayList<>(confirmed);
        holds.sort(java.util.Comparator.comparingLong(Hold::start));
        for (int i = 1; i < holds.size(); i++) {
            assertThat(holds.get(i).start())
                    .as("confirmed hold %s began before %s ended", holds.get(i), holds.get(i - 1))
                    .isGreaterThan(holds.get(i - 1).end());
        }
        assertThat(holds).isNotEmpty();
    }

    /**
     * A waiter whose wait runs out leaves the queue: its place is gone once the wait ended (it
     * would otherwise live for its whole 60 s queue TTL), so the release that follows frees the key
     * and a single try of another caller is granted at once.
     */
    @Test
    void aWaiterWhoseWaitRunsOutLeavesTheQueue() throws Exception {
        UnaryOperator<JdbcLeaseStore.Builder> fair = b -> b.fairQueue(Duration.ofSeconds(60));
        LockKey key = key("gave-up");
        JdbcLeaseStore holderStore = store(fair);
        LockService waiter = service(fair);
        JdbcLeaseStore next = store(fair);
        String holder = "holder-" + UUID.randomUUID();
        assertThat(holderStore.tryAcquire(key, holder, Duration.ofSeconds(30)))
                .isInstanceOf(dev.leasehold.spi.AcquireResult.Granted.class);
        // a first statement on a fresh pool may take longer than the wait below
        waiter.tryAcquire(key("warm-up"), LeaseOptions.defaults()).orElseThrow().close();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> waiter.acquire(
                        key,
                        LeaseOptions.builder().waitFor(Duration.ofMillis(300)).build()))
                .isInstanceOf(dev.leasehold.LockBusyException.class);
        org.awaitility.Awaitility.await("the waiter that gave up has left the queue")
                .atMost(Duration.ofSeconds(5))
                .until(() -> places(key).isEmpty());
        assertThat(holderStore.release(key, holder)).isTrue();
        assertThat(next.tryAcquire(key, "next-" + UUID.randomUUID(), Duration.ofSeconds(30)))
                .as("a single try right after the release")
                .isInstanceOf(dev.leasehold.spi.AcquireResult.Granted.class);
    }

    /**
     * A waiter interrupted during its wait leaves the queue too.
     */
    @Test
    void anInterruptedWaiterLeavesTheQueue() throws Exception {
        UnaryOperator<JdbcLeaseStore.Builder> fair = b -> b.fairQueue(Duration.ofSeconds(60));
        LockKey key = key("interrupted");
        JdbcLeaseStore holderStore = store(fair);
        LockService waiter = service(fair);
        String holder = "holder-" + UUID.randomUUID();
        assertThat(holderStore.tryAcquire(key, holder, Duration.ofSeconds(30)))
                .isInstanceOf(dev.leasehold.spi.AcquireResult.Granted.class);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<?> waiting = pool.submit(() -> {
                try (Lease lease = waiter.acquire(
                        key,
                        LeaseOptions.builder().waitFor(Duration.ofSeconds(60)).build())) {
                    return lease.fence();
                }
            });
            awaitPlaces(key, 1);
            waiting.cancel(true);
            org.awaitility.Awaitility.await("the interrupted waiter has left the queue")
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> places(key).isEmpty());
        } finally {
            pool.shutdownNow();
        }
        assertThat(holderStore.release(key, holder)).isTrue();
        assertThat(holderStore.inspect(key))
                .as("the released key, handed to nobody")
                .isEmpty();
    }

    /**
     * A key that a release handed to a waiter that then left goes on at once, in the leave itself:
     * to the next live waiter (with a higher fence), or, with none, it is free.
     */
    @Test
    void aKeyHandedToAWaiterThatLeftGoesOnAtOnce() throws Exception {
        UnaryOperator<JdbcLeaseStore.Builder> fair = b -> b.fairQueue(Duration.ofSeconds(60));
        LockKey key = key("handed");
        JdbcLeaseStore holderStore = store(fair);
        JdbcLeaseStore leaverStore = store(fair);
        JdbcLeaseStore nextStore = store(fair);
        String holder = "holder-" + UUID.randomUUID();
        String leaver = "leaver-" + UUID.randomUUID();
        String next = "next-" + UUID.randomUUID();
        assertThat(holderStore.tryAcquire(key, holder, Duration.ofSeconds(30)))
                .isInstanceOf(dev.leasehold.spi.AcquireResult.Granted.class);
        for (String owner : List.of(leaver, next)) {
            JdbcLeaseStore store = owner.equals(leaver) ? leaverStore : nextStore;
            for (int ask = 0; ask < 2; ask++) { // the second ask takes the place
                assertThat(store.tryAcquire(key, owner, Duration.ofSeconds(30)))
                        .isInstanceOf(dev.leasehold.spi.AcquireResult.Busy.class);
            }
        }
        assertThat(places(key)).containsExactly(leaver, next);
        assertThat(holderStore.release(key, holder)).isTrue();
        dev.leasehold.LeaseInfo handed = holderStore.inspect(key).orElseThrow();
        assertThat(handed.ownerToken()).isEqualTo(leaver);

        leaverStore.leaveQueue(key, leaver);

        dev.leasehold.LeaseInfo onward = holderStore.inspect(key).orElseThrow();
        assertThat(onward.ownerToken()).as("the key went on to the next waiter").isEqualTo(next);
        assertThat(onward.fence()).isGreaterThan(handed.fence());
        assertThat(places(key)).containsExactly(next);

        nextStore.leaveQueue(key, next);
        assertThat(holderStore.inspect(key))
                .as("with nobody left the key is free")
                .isEmpty();
        assertThat(places(key)).isEmpty();
        String late = "late-" + UUID.randomUUID();
        assertThat(holderStore.tryAcquire(key, late, Duration.ofSeconds(30)))
                .isInstanceOf(dev.leasehold.spi.AcquireResult.Granted.class);
        // leaving is harmless for an owner that holds nothing and waits nowhere
        leaverStore.leaveQueue(key, leaver);
        assertThat(holderStore.inspect(key).orElseThrow().ownerToken()).isEqualTo(late);
    }

    /**
     * No queue row outlives its place: places of waiters that stopped asking (crashed) are deleted
     * by housekeeping ({@link JdbcLeaseStore#deleteExpired}) once they ended, on keys nobody uses
     * any more; live places stay.
     */
    @Test
    void housekeepingDeletesEndedPlaces() throws Exception {
        Duration ttl = Duration.ofSeconds(1);
        JdbcLeaseStore holderStore = store(b -> b.fairQueue(ttl));
        JdbcLeaseStore crashedStore = store(b -> b.fairQueue(ttl));
        JdbcLeaseStore liveStore = store(b -> b.fairQueue(Duration.ofSeconds(60)));
        List<LockKey> keys = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            LockKey key = key("leak-" + i);
            keys.add(key);
            String holder = "holder-" + UUID.randomUUID();
            assertThat(holderStore.tryAcquire(key, holder, Duration.ofSeconds(30)))
                    .isInstanceOf(dev.leasehold.spi.AcquireResult.Granted.class);
            for (int w = 0; w < 3; w++) {
                String owner = "crashed-" + UUID.randomUUID();
                crashedStore.tryAcquire(key, owner, Duration.ofSeconds(30));
                crashedStore.tryAcquire(key, owner, Duration.ofSeconds(30));
            }
            assertThat(holderStore.forceRelease(key)).isTrue(); // a force-release hands nothing over
        }
        LockKey liveKey = key("live");
        String liveHolder = "holder-" + UUID.randomUUID();
        String liveWaiter = "live-" + UUID.randomUUID();
        holderStore.tryAcquire(liveKey, liveHolder, Duration.ofSeconds(30));
        liveStore.tryAcquire(liveKey, liveWaiter, Duration.ofSeconds(30));
        liveStore.tryAcquire(liveKey, liveWaiter, Duration.ofSeconds(30));
        for (LockKey key : keys) {
            assertThat(rows(key)).isEqualTo(3);
        }
        org.awaitility.Awaitility.await("housekeeping deleted the ended places")
                .atMost(Duration.ofSeconds(5))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> {
                    holderStore.deleteExpired(Duration.ofMinutes(1), 10_000);
                    int left = 0;
                    for (LockKey key : keys) {
                        left += rows(key);
                    }
                    return left == 0;
                });
        assertThat(places(liveKey)).containsExactly(liveWaiter);
    }

    /** The arrival of a store's watch of a key (PostgreSQL): a row of the waiter table, never a place. */
    private static final String WATCHES = PostgresDialect.WATCHING;

    /** How many places the key has in the waiter table, live or ended (a store's watch is no place). */
    protected int rows(LockKey key) throws java.sql.SQLException {
        if (admin == null) {
            admin = pool();
        }
        try (java.sql.Connection connection = admin.getConnection();
                java.sql.PreparedStatement statement = connection.prepareStatement(
                        "SELECT COUNT(*) FROM leasehold_waiter WHERE lock_key = ? AND arrived_us < " + WATCHES)) {
            statement.setString(1, key.render());
            try (java.sql.ResultSet row = statement.executeQuery()) {
                row.next();
                return row.getInt(1);
            }
        }
    }

    private static final class ThreadLocalRandomHolder {
        static long next(int from, int to) {
            return java.util.concurrent.ThreadLocalRandom.current().nextInt(from, to);
        }
    }

    /** The owners with a live place in the key's queue, in arrival order. */
    protected List<String> places(LockKey key) throws java.sql.SQLException {
        if (admin == null) {
            admin = pool();
        }
        try (java.sql.Connection connection = admin.getConnection();
                java.sql.PreparedStatement statement = connection.prepareStatement(
                        "SELECT owner_token FROM leasehold_waiter WHERE lock_key = ? AND expires_at_ms > ?"
                                + " AND arrived_us < " + WATCHES + " ORDER BY arrived_us")) {
            statement.setString(1, key.render());
            statement.setLong(2, System.currentTimeMillis() - 60_000); // ended places are 0
            List<String> owners = new ArrayList<>();
            try (java.sql.ResultSet row = statement.executeQuery()) {
                while (row.next()) {
                    owners.add(row.getString(1));
                }
            }
            return owners;
        }
    }

    private void awaitPlaces(LockKey key, int count) {
        org.awaitility.Awaitility.await()
                .atMost(Duration.ofSeconds(30))
                .until(() -> places(key).size() >= count);
    }
}
