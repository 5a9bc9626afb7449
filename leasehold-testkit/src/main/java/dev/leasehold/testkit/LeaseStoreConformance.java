package dev.leasehold.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import dev.leasehold.Lease;
import dev.leasehold.LeaseEvent;
import dev.leasehold.LeaseEventType;
import dev.leasehold.LeaseGroup;
import dev.leasehold.LeaseInfo;
import dev.leasehold.LeaseLostException;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockBusyException;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.BatchAcquireResult;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import dev.leasehold.spi.Renewal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The conformance suite every {@link LeaseStore} runs: a backend is correct when a subclass with the
 * two hooks passes it. Checks mutual exclusion (with an overlap detector), owner-checked renew and
 * release verified in raw backend state, expiry by the backend clock and take-over, re-entry,
 * strictly increasing fences, sorted all-or-nothing batches, renewal and the lost signal, prompt
 * wake-ups, fairness and bad input.
 *
 * <p>Each test uses its own random key namespace, so suites can share a server. Time is the subject
 * only where expiry is: those tests use {@link #shortLease()} and assert on the backend's state.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
public abstract class LeaseStoreConformance {

    /** A new store for one test; closed after it. */
    protected abstract LeaseStore createStore();

    /**
     * Reads the lease on a key directly from the backend, not through the store under test (a
     * backend whose only view is the store itself may use {@code inspect}).
     */
    protected abstract Optional<RawLease> rawLease(LockKey key);

    /**
     * Optional, where the backend can simulate it: saves the backend's state now and returns how to
     * bring that older state back later, as a restart from an older snapshot, a restore from a
     * backup or a promoted replica that missed writes would; the test's store must work again
     * after it (it may have to reconnect, which the suite waits for). Empty (the default) skips
     * {@link #fencesNeverRepeatAfterARestoreOfOlderState}.
     */
    protected Optional<OlderState> simulateRestoreFromOlderState() throws Exception {
        return Optional.empty();
    }

    /** Brings back the state saved by {@link #simulateRestoreFromOlderState()}. */
    @FunctionalInterface
    public interface OlderState {
        /** Replaces the backend's state with the saved one. */
        void restore() throws Exception;
    }

    /** A lease short enough to watch expire, long enough to be renewed reliably on this backend. */
    protected Duration shortLease() {
        return Duration.ofMillis(800);
    }

    /**
     * Optional: a store whose commands (statements, round trips) are counted at the server, for
     * {@link #eachOperationIsOneCommandAtTheServer}. Empty (the default) skips that check.
     */
    protected Optional<CommandCounter> commandCounter() {
        return Optional.empty();
    }

    /**
     * Counts what the server receives from one store: statements or round trips, whichever the
     * backend can count; its own counting is not included. Closed after the check.
     */
    public interface CommandCounter extends AutoCloseable {
        /** The store whose commands are counted. */
        LeaseStore store();

        /** Commands the server received from {@link #store()} so far. */
        long commands();

        @Override
        default void close() {}
    }

    /**
     * Optional: whether the store refuses owner tokens that contain a control character (U+0000 to
     * U+001F, U+007F to U+009F) with an {@link IllegalArgumentException}, as {@code
     * OwnerTokens.check} does; true by default, as every Leasehold store applies that rule. A store
     * with a rule of its own overrides false: such a token must then be either refused as bad input
     * or kept exactly; never a store failure.
     */
    protected boolean refusesControlCharactersInOwnerTokens() {
        return true;
    }

    /** The store of the running test. */
    protected LeaseStore store;

    private final List<LockService> services = new ArrayList<>();
    private final List<ExecutorService> executors = new ArrayList<>();
    private String namespace;

    @BeforeEach
    void openStore() {
        store = createStore();
        namespace = "lh-" + UUID.randomUUID().toString().substring(0, 8);
    }

    @AfterEach
    void closeStore() {
        executors.forEach(ExecutorService::shutdownNow);
        services.forEach(LockService::close);
        if (store != null) {
            store.close(); // null when the backend was missing and the test was skipped
        }
    }

    /** A key in this test's namespace. */
    protected LockKey key(String... ids) {
        return LockKey.of(namespace, ids);
    }

    /** A lock service over the test's store, as a separate process would have; closed after the test. */
    protected LockService service(Consumer<LockService.Builder> customizer) {
        LockService.Builder builder = LockService.builder(store);
        customizer.accept(builder);
        LockService service = builder.build();
        services.add(service);
        return service;
    }

    /** A lock service with default settings. */
    protected LockService service() {
        return service(b -> {});
    }

    private ExecutorService threads(int count) {
        ExecutorService executor = Executors.newFixedThreadPool(count);
        executors.add(executor);
        return executor;
    }

    private static String owner() {
        return LockOwner.create("test").token();
    }

    private LeaseOptions lease(Duration leaseFor, boolean renewal) {
        return LeaseOptions.builder().leaseFor(leaseFor).renewal(renewal).build();
    }

    private static long fenceOf(AcquireResult result) {
        assertThat(result).isInstanceOf(AcquireResult.Granted.class);
        return ((AcquireResult.Granted) result).grant().fence();
    }

    // ------------------------------------------------------------------ exclusion

    @Test
    void concurrentFirstAcquiresOfANewKeyGrantExactlyOne() throws Exception {
        int contenders = 12;
        ExecutorService pool = threads(contenders);
        for (int round = 0; round < 15; round++) {
            LockKey key = key("fresh", String.valueOf(round));
            CyclicBarrier start = new CyclicBarrier(contenders);
            List<Future<String>> results = new ArrayList<>();
            for (int i = 0; i < contenders; i++) {
                String owner = owner();
                results.add(pool.submit(() -> {
                    start.await();
                    AcquireResult result = store.tryAcquire(key, owner, Duration.ofSeconds(30));
                    return result instanceof AcquireResult.Granted ? owner : null;
                }));
            }
            List<String> winners = new ArrayList<>();
            for (Future<String> result : results) {
                String winner = result.get(30, TimeUnit.SECONDS);
                if (winner != null) {
                    winners.add(winner);
                }
            }
            assertThat(winners).as("owners granted the new key %s", key).hasSize(1);
            assertThat(rawLease(key)).map(RawLease::owner).contains(winners.get(0));
        }
    }

    @Test
    void mutualExclusionUnderContention() throws Exception {
        LockKey key = key("counter");
        int processes = 3;
        int threadsPerProcess = 2;
        int iterations = 40;
        LeaseOptions options = LeaseOptions.builder()
                .leaseFor(Duration.ofSeconds(30))
                .waitFor(Duration.ofSeconds(60))
                .build();
        int[] counter = {0};
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger maxInside = new AtomicInteger();
        List<Long> fences = Collections.synchronizedList(new ArrayList<>());
        ExecutorService pool = threads(processes * threadsPerProcess);
        List<Future<?>> done = new ArrayList<>();
        for (int p = 0; p < processes; p++) {
            LockService service = service();
            for (int t = 0; t < threadsPerProcess; t++) {
                done.add(pool.submit(() -> {
                    for (int i = 0; i < iterations; i++) {
                        try (Lease lease = service.acquire(key, options)) {
                            maxInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
                            fences.add(lease.fence());
                            int read = counter[0];
                            Thread.yield();
                            counter[0] = read + 1;
                            inside.decrementAndGet();
                        }
                    }
                    return null;
                }));
            }
        }
        for (Future<?> f : done) {
            f.get(80, TimeUnit.SECONDS);
        }
        assertThat(maxInside.get())
                .as("holders inside the critical section at once")
                .isEqualTo(1);
        assertThat(counter[0]).as("increments kept").isEqualTo(processes * threadsPerProcess * iterations);
        assertThat(fences)
                .as("fences in order of entry")
                .isSortedAccordingTo(Long::compare)
                .doesNotHaveDuplicates();
        assertThat(rawLease(key)).isEmpty();
    }

    // ------------------------------------------------------------------ owner checks

    @Test
    void strangerCannotRenewOrRelease() {
        LockKey key = key("guarded");
        String owner = owner();
        long fence = fenceOf(store.tryAcquire(key, owner, Duration.ofSeconds(30)));
        String stranger = owner();

        assertThat(store.release(key, stranger)).isFalse();
        assertThat(store.renew(key, stranger, Duration.ofSeconds(60))).isEmpty();
        assertThat(store.tryAcquire(key, stranger, Duration.ofSeconds(30))).isInstanceOf(AcquireResult.Busy.class);

        assertThat(rawLease(key)).contains(new RawLease(owner, fence));
        assertThat(store.inspect(key).orElseThrow().remaining()).isLessThanOrEqualTo(Duration.ofSeconds(30));
    }

    @Test
    void renewAllAnswersEachLeaseOfTheBatchInItsOrderAndRenewsOnlyTheOwners() {
        LockKey mine = key("batch-mine");
        LockKey theirs = key("batch-theirs");
        LockKey free = key("batch-free");
        LockKey alsoMine = key("batch-also-mine");
        String owner = owner();
        String other = owner();
        long mineFence = fenceOf(store.tryAcquire(mine, owner, Duration.ofSeconds(5)));
        long theirFence = fenceOf(store.tryAcquire(theirs, other, Duration.ofSeconds(5)));
        long alsoMineFence = fenceOf(store.tryAcquire(alsoMine, owner, Duration.ofSeconds(5)));

        List<Optional<Grant>> answers = store.renewAll(List.of(
                new Renewal(mine, owner, Duration.ofSeconds(60)),
                new Renewal(theirs, owner, Duration.ofSeconds(60)),
                new Renewal(free, owner, Duration.ofSeconds(60)),
                new Renewal(alsoMine, owner, Duration.ofSeconds(30)),
                new Renewal(mine, other, Duration.ofSeconds(60)))); // the same key again, another owner

        assertThat(answers).hasSize(5);
        assertThat(answers.get(0)).map(Grant::fence).contains(mineFence);
        assertThat(answers.get(0).orElseThrow().remaining()).isGreaterThan(Duration.ofSeconds(30));
        assertThat(answers.get(1)).as("another owner's lease").isEmpty();
        assertThat(answers.get(2)).as("a free key").isEmpty();
        assertThat(answers.get(3)).map(Grant::fence).contains(alsoMineFence);
        assertThat(answers.get(4))
                .as("the same key for an owner that does not hold it")
                .isEmpty();
        assertThat(store.inspect(mine).orElseThrow().remaining()).isGreaterThan(Duration.ofSeconds(30));
        assertThat(store.inspect(alsoMine).orElseThrow().remaining()).isGreaterThan(Duration.ofSeconds(5));
        assertThat(store.inspect(theirs).orElseThrow().remaining())
                .as("another owner's lease is not extended")
                .isLessThanOrEqualTo(Duration.ofSeconds(5));
        assertThat(rawLease(theirs)).contains(new RawLease(other, theirFence));
        assertThat(rawLease(free)).isEmpty();
        assertThat(store.renewalBatchLimit()).isPositive();
    }

    @Test
    void releaseByTheOwnerFreesTheKeyOnce() {
        LockKey key = key("release");
        String owner = owner();
        fenceOf(store.tryAcquire(key, owner, Duration.ofSeconds(30)));

        assertThat(store.release(key, owner)).isTrue();
        assertThat(rawLease(key)).isEmpty();
        assertThat(store.release(key, owner)).as("second release").isFalse();
        assertThat(store.renew(key, owner, Duration.ofSeconds(30)))
                .as("renew after release")
                .isEmpty();
        assertThat(rawLease(key)).isEmpty();
    }

    @Test
    void sameOwnerAcquiringAgainKeepsItsFence() {
        LockKey key = key("again");
        String owner = owner();
        long first = fenceOf(store.tryAcquire(key, owner, Duration.ofSeconds(30)));
        long second = fenceOf(store.tryAcquire(key, owner, Duration.ofSeconds(30)));
        assertThat(second).isEqualTo(first);
        assertThat(rawLease(key)).contains(new RawLease(owner, first));
    }

    // ------------------------------------------------------------------ expiry and fences

    @Test
    void expiryIsDecidedByTheStoreAndAStaleLeaseIsTakenOver() {
        LockKey key = key("stale");
        String first = owner();
        long firstFence = fenceOf(store.tryAcquire(key, first, shortLease()));
        String second = owner();
        assertThat(store.tryAcquire(key, second, shortLease())).isInstanceOf(AcquireResult.Busy.class);

        AtomicLong secondFence = new AtomicLong();
        await().atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(20))
                .until(() -> {
                    AcquireResult result = store.tryAcquire(key, second, Duration.ofSeconds(30));
                    if (result instanceof AcquireResult.Granted granted) {
                        secondFence.set(granted.grant().fence());
                        return true;
                    }
                    return false;
                });

        assertThat(secondFence.get()).isGreaterThan(firstFence);
        assertThat(store.renew(key, first, Duration.ofSeconds(30)))
                .as("renew by the expired owner")
                .isEmpty();
        assertThat(store.release(key, first)).as("release by the expired owner").isFalse();
        assertThat(rawLease(key)).contains(new RawLease(second, secondFence.get()));
    }

    @Test
    void fencesStrictlyIncreaseAcrossHolders() {
        LockKey key = key("fenced");
        List<Long> fences = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            String owner = owner();
            fences.add(fenceOf(store.tryAcquire(key, owner, Duration.ofSeconds(30))));
            assertThat(store.release(key, owner)).isTrue();
        }
        String forced = owner();
        fences.add(fenceOf(store.tryAcquire(key, forced, Duration.ofSeconds(30))));
        assertThat(store.forceRelease(key)).isTrue();
        String expiring = owner();
        fences.add(fenceOf(store.tryAcquire(key, expiring, shortLease())));
        await().atMost(Duration.ofSeconds(10)).until(() -> store.inspect(key).isEmpty());
        fences.add(fenceOf(store.tryAcquire(key, owner(), Duration.ofSeconds(30))));

        for (int i = 1; i < fences.size(); i++) {
            assertThat(fences.get(i)).as("fence %d of %s", i, fences).isGreaterThan(fences.get(i - 1));
        }
    }

    @Test
    void fencesNeverRepeatAfterARestoreOfOlderState() throws Exception {
        LockKey key = key("restored");
        List<Long> before = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            String owner = owner();
            before.add(fenceOf(store.tryAcquire(key, owner, Duration.ofSeconds(30))));
            assertThat(store.release(key, owner)).isTrue();
        }
        Optional<OlderState> saved = simulateRestoreFromOlderState();
        Assumptions.assumeTrue(saved.isPresent(), store.name() + " test cannot simulate a restore of older state");
        for (int i = 0; i < 3; i++) {
            String owner = owner();
            before.add(fenceOf(store.tryAcquire(key, owner, Duration.ofSeconds(30))));
            assertThat(store.release(key, owner)).isTrue();
        }
        before.add(fenceOf(store.tryAcquire(key, owner(), Duration.ofSeconds(30)))); // held through the restore

        saved.get().restore();

        long highest = Collections.max(before);
        for (int i = 0; i < 3; i++) {
            String owner = owner();
            AtomicLong fence = new AtomicLong();
            // One owner for every attempt: an attempt whose answer was lost in a reconnect is re-entered.
            await().atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(100))
                    .ignoreExceptions()
                    .until(() -> {
                        if (store.tryAcquire(key, owner, Duration.ofSeconds(30)) instanceof AcquireResult.Granted g) {
                            fence.set(g.grant().fence());
                            return true;
                        }
                        store.forceRelease(key); // a holder the restored state still has
                        return false;
                    });
            assertThat(fence.get())
                    .as("fence %d after the restore; fences before it: %s", i, before)
                    .isGreaterThan(highest);
            highest = fence.get();
            assertThat(store.release(key, owner)).isTrue();
        }
    }

    // ------------------------------------------------------------------ engine over the store

    @Test
    void reentryKeepsOneFenceAndCountsHolds() {
        LockService service = service();
        LockKey key = key("reentry");
        Lease outer = service.tryAcquire(key, LeaseOptions.defaults()).orElseThrow();
        Lease inner = service.tryAcquire(key, LeaseOptions.defaults()).orElseThrow();

        assertThat(inner.fence()).isEqualTo(outer.fence());
        assertThat(inner.ownerToken()).isEqualTo(outer.ownerToken());
        assertThat(outer.holdCount()).isEqualTo(2);

        assertThat(service.heldLeases()).singleElement().satisfies(info -> {
            assertThat(info.key()).isEqualTo(key);
            assertThat(info.holdCount()).isEqualTo(2);
            assertThat(info.fence()).isEqualTo(outer.fence());
            assertThat(info.owner()).doesNotContain(outer.ownerToken());
        });

        inner.close();
        assertThat(outer.holdCount()).isEqualTo(1);
        assertThat(rawLease(key))
                .as("still held after the inner release")
                .contains(new RawLease(outer.ownerToken(), outer.fence()));
        assertThat(outer.isHeld()).isTrue();

        outer.close();
        assertThat(rawLease(key)).as("released at hold count zero").isEmpty();
        assertThat(service.heldLeases()).isEmpty();
        assertThatThrownBy(outer::close)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(key.render());
    }

    @Test
    void otherThreadsDoNotReenterButAnExplicitOwnerDoes() throws Exception {
        LockService service = service();
        LockKey key = key("owners");
        try (Lease held = service.tryAcquire(key, LeaseOptions.defaults()).orElseThrow()) {
            Optional<Lease> fromOtherThread = CompletableFuture.supplyAsync(
                            () -> service.tryAcquire(key, LeaseOptions.defaults()), threads(1))
                    .get(30, TimeUnit.SECONDS);
            assertThat(fromOtherThread).isEmpty();
            assertThat(held.holdCount()).isEqualTo(1);
        }

        LockOwner owner = LockOwner.create("async job");
        try (Lease first =
                service.tryAcquire(key, LeaseOptions.defaults(), owner).orElseThrow()) {
            Lease second = CompletableFuture.supplyAsync(
                            () -> service.tryAcquire(key, LeaseOptions.defaults(), owner)
                                    .orElseThrow(),
                            threads(1))
                    .get(30, TimeUnit.SECONDS);
            assertThat(second.fence()).isEqualTo(first.fence());
            assertThat(first.holdCount()).isEqualTo(2);
            // The store knows each grant by the owner's token plus a suffix of the grant's own.
            assertThat(first.ownerToken()).startsWith(owner.token() + ".");
            assertThat(rawLease(key)).map(RawLease::owner).contains(first.ownerToken());
            second.close();
        }
        assertThat(rawLease(key)).isEmpty();
    }

    @Test
    void twoServicesSharingOneOwnerTokenNeverHoldTheKeyAtOnce() {
        // Two processes configured with one owner token: the second is refused, not let in.
        LockService first = service();
        LockService second = service();
        LockKey key = key("shared-token");
        LockOwner shared =
                LockOwner.withToken("shared-" + UUID.randomUUID().toString().replace("-", ""), "shared");
        Lease held = first.tryAcquire(key, LeaseOptions.defaults(), shared).orElseThrow();

        assertThat(second.tryAcquire(key, LeaseOptions.defaults(), shared))
                .as("the same token in another service")
                .isEmpty();
        assertThat(rawLease(key)).map(RawLease::owner).contains(held.ownerToken());

        held.close();
        assertThat(rawLease(key)).isEmpty();
        try (Lease next =
                second.tryAcquire(key, LeaseOptions.defaults(), shared).orElseThrow()) {
            assertThat(next.fence()).isGreaterThan(held.fence());
            assertThat(first.tryAcquire(key, LeaseOptions.defaults(), shared)).isEmpty();
        }
        assertThat(rawLease(key)).isEmpty();
    }

    @Test
    void batchIsTakenInSortedOrderAllOrNothing() throws Exception {
        List<LockKey> acquiredOrder = new CopyOnWriteArrayList<>();
        LockService service = service(b -> b.listener(e -> {
            if (e.type() == LeaseEventType.ACQUIRED) {
                acquiredOrder.add(e.key());
            }
        }));
        LockKey a = key("B1");
        LockKey b = key("B2");
        LockKey c = key("B3");
        try (LeaseGroup group = service.acquireAll(List.of(c, a, b, a), LeaseOptions.defaults())) {
            assertThat(acquiredOrder).containsExactly(a, b, c);
            assertThat(group.leases()).extracting(Lease::key).containsExactly(a, b, c);
            assertThat(group.isHeld()).isTrue();
        }
        assertThat(rawLease(a)).isEmpty();
        assertThat(rawLease(c)).isEmpty();

        String stranger = owner();
        fenceOf(store.tryAcquire(b, stranger, Duration.ofSeconds(30)));
        assertThat(service.tryAcquireAll(List.of(a, b, c), LeaseOptions.defaults()))
                .isEmpty();
        // A wait long enough for the store to answer on a loaded machine (a 3-node etcd once took
        // longer than 50 ms, which is a store failure, not busy); B is held for 30 s either way.
        LockBusyException busy = (LockBusyException) catchThrowable(() ->
                service.acquireAll(List.of(c, b, a), LeaseOptions.defaults().withWait(Duration.ofSeconds(1))));
        assertThat(busy).isNotNull();
        assertThat(busy.key()).isEqualTo(b);
        assertThat(busy.getMessage()).contains(b.render()).contains("nothing of it is held");
        assertThat(rawLease(a)).as("released after the batch failed").isEmpty();
        assertThat(rawLease(c)).as("never taken").isEmpty();
        assertThat(rawLease(b)).map(RawLease::owner).contains(stranger);
    }

    /** The store's own batch ({@link LeaseStore#tryAcquireAll}): every key granted, or none held. */
    @Test
    void aStoreBatchIsGrantedWhollyOrNotAtAll() {
        LockKey a = key("S1");
        LockKey b = key("S2");
        LockKey c = key("S3");
        String earlier = owner();
        long earlierFence = fenceOf(store.tryAcquire(a, earlier, Duration.ofSeconds(30)));
        assertThat(store.release(a, earlier)).isTrue();
        String stranger = owner();
        fenceOf(store.tryAcquire(b, stranger, Duration.ofSeconds(30)));

        String owner = owner();
        BatchAcquireResult refused = store.tryAcquireAll(List.of(a, b, c), owner, Duration.ofSeconds(30));
        assertThat(refused).isInstanceOf(BatchAcquireResult.Busy.class);
        BatchAcquireResult.Busy busy = (BatchAcquireResult.Busy) refused;
        assertThat(busy.key()).isEqualTo(b);
        assertThat(busy.holderRemaining()).isPositive();
        assertThat(rawLease(a)).as("nothing of a refused batch is held").isEmpty();
        assertThat(rawLease(c)).as("nothing of a refused batch is held").isEmpty();
        assertThat(rawLease(b)).map(RawLease::owner).contains(stranger);

        assertThat(store.release(b, stranger)).isTrue();
        BatchAcquireResult granted = store.tryAcquireAll(List.of(a, b, c), owner, Duration.ofSeconds(30));
        assertThat(granted).isInstanceOf(BatchAcquireResult.Granted.class);
        List<Grant> grants = ((BatchAcquireResult.Granted) granted).grants();
        assertThat(grants).hasSize(3);
        assertThat(grants.get(0).fence())
                .as("a's fence after its earlier holder")
                .isGreaterThan(earlierFence);
        List<LockKey> batch = List.of(a, b, c);
        for (int i = 0; i < batch.size(); i++) {
            assertThat(rawLease(batch.get(i)))
                    .contains(new RawLease(owner, grants.get(i).fence()));
            assertThat(grants.get(i).remaining()).isPositive();
        }
        for (LockKey key : batch) {
            assertThat(store.release(key, owner)).isTrue();
        }
        assertThatThrownBy(() -> store.tryAcquireAll(List.of(a, a), owner, Duration.ofSeconds(30)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("twice");
        assertThatThrownBy(() -> store.tryAcquireAll(List.of(), owner, Duration.ofSeconds(30)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at least one key");
    }

    @Test
    void opposingBatchesNeverDeadlock() throws Exception {
        LockKey x = key("X");
        LockKey y = key("Y");
        LockKey z = key("Z");
        LeaseOptions options = LeaseOptions.defaults().withWait(Duration.ofSeconds(60));
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger maxInside = new AtomicInteger();
        AtomicInteger completed = new AtomicInteger();
        ExecutorService pool = threads(2);
        List<Future<?>> done = new ArrayList<>();
        List<List<LockKey>> orders = List.of(List.of(x, y, z), List.of(z, y, x));
        for (List<LockKey> order : orders) {
            LockService service = service();
            done.add(pool.submit(() -> {
                for (int i = 0; i < 25; i++) {
                    try (LeaseGroup group = service.acquireAll(order, options)) {
                        maxInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
                        assertThat(group.leases()).hasSize(3);
                        inside.decrementAndGet();
                    }
                    completed.incrementAndGet();
                }
                return null;
            }));
        }
        for (Future<?> f : done) {
            f.get(80, TimeUnit.SECONDS);
        }
        assertThat(completed.get()).isEqualTo(50);
        assertThat(maxInside.get()).isEqualTo(1);
    }

    @Test
    void renewalKeepsTheLeasePastItsInitialLease() throws Exception {
        LockService service = service();
        LockKey key = key("renewed");
        try (Lease lease = service.tryAcquire(key, lease(shortLease(), true)).orElseThrow()) {
            // Time is the subject here: hold for several lease lengths.
            Thread.sleep(shortLease().toMillis() * 4);
            assertThat(lease.isHeld()).isTrue();
            assertThat(rawLease(key)).contains(new RawLease(lease.ownerToken(), lease.fence()));
            assertThat(store.tryAcquire(key, owner(), shortLease())).isInstanceOf(AcquireResult.Busy.class);
        }
        assertThat(rawLease(key)).isEmpty();
    }

    @Test
    void leaseWithoutRenewalIsReportedLostAtExpiry() {
        LockService service = service();
        LockKey key = key("unrenewed");
        Lease lease = service.tryAcquire(key, lease(shortLease(), false)).orElseThrow();
        AtomicReference<LeaseLostException> lost = new AtomicReference<>();
        lease.onLost(lost::set);

        await().atMost(Duration.ofSeconds(10)).until(() -> lost.get() != null);
        assertThat(lease.isHeld()).isFalse();
        assertThatThrownBy(lease::assertHeld)
                .isInstanceOf(LeaseLostException.class)
                .hasMessageContaining(key.render());

        String next = owner();
        await().atMost(Duration.ofSeconds(10))
                .until(() -> store.tryAcquire(key, next, Duration.ofSeconds(30)) instanceof AcquireResult.Granted);
        assertThat(rawLease(key).orElseThrow().fence()).isGreaterThan(lease.fence());
        lease.close();
        assertThat(rawLease(key))
                .as("a late release does not free the next holder")
                .map(RawLease::owner)
                .contains(next);
    }

    @Test
    void takenOverLeaseSignalsLossToItsHolder() {
        LockService service = service();
        LockKey key = key("takeover");
        Lease lease = service.tryAcquire(key, lease(shortLease(), true)).orElseThrow();
        CountDownLatch lost = new CountDownLatch(1);
        lease.onLost(e -> lost.countDown());

        // Behind the engine's back, as another process or an operator would.
        assertThat(store.forceRelease(key)).isTrue();
        String usurper = owner();
        fenceOf(store.tryAcquire(key, usurper, Duration.ofSeconds(30)));

        await().atMost(Duration.ofSeconds(10)).until(() -> lost.getCount() == 0);
        assertThat(lease.isHeld()).isFalse();
        lease.close();
        assertThat(rawLease(key)).map(RawLease::owner).contains(usurper);
    }

    @Test
    void renewalNeverOutlivesRelease() throws Exception {
        LockService service = service();
        LockKey key = key("churn");
        LeaseOptions options = LeaseOptions.builder()
                .leaseFor(LeaseOptions.MIN_LEASE.multipliedBy(3))
                .renewal(true)
                .build();
        for (int i = 0; i < 30; i++) {
            Lease lease = service.tryAcquire(key, options).orElseThrow();
            Thread.sleep(i % 3 == 0 ? options.leaseFor().toMillis() / 3 : 0);
            lease.close();
            String stranger = owner();
            assertThat(store.tryAcquire(key, stranger, Duration.ofSeconds(30)))
                    .as("key free right after release %d", i)
                    .isInstanceOf(AcquireResult.Granted.class);
            assertThat(store.release(key, stranger)).isTrue();
        }
        Thread.sleep(options.leaseFor().toMillis() * 2);
        assertThat(rawLease(key)).as("nothing re-created by a late renewal").isEmpty();
    }

    @Test
    void forceReleaseFreesTheKeyAndTheHolderSeesItLost() {
        List<LeaseEvent> events = new CopyOnWriteArrayList<>();
        LockService service = service(b -> b.listener(events::add));
        LockKey key = key("stuck");
        Lease lease = service.tryAcquire(key, LeaseOptions.defaults()).orElseThrow();

        assertThat(service.forceRelease(key, "ticket OPS-1")).isTrue();
        assertThat(lease.isHeld()).isFalse();
        assertThat(rawLease(key)).isEmpty();
        assertThat(events).anySatisfy(e -> {
            assertThat(e.type()).isEqualTo(LeaseEventType.FORCE_RELEASED);
            assertThat(e.detail()).contains("OPS-1");
        });
        try (Lease next = service.tryAcquire(key, LeaseOptions.defaults()).orElseThrow()) {
            assertThat(next.fence()).isGreaterThan(lease.fence());
        }
        lease.close();
        assertThatThrownBy(() -> service.forceRelease(key, " ")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void inspectReportsOwnerFenceAndRemainingTime() {
        LockKey key = key("inspected");
        assertThat(store.inspect(key)).isEmpty();
        String owner = owner();
        long fence = fenceOf(store.tryAcquire(key, owner, Duration.ofSeconds(30)));
        LeaseInfo info = store.inspect(key).orElseThrow();
        assertThat(info.key()).isEqualTo(key);
        assertThat(info.ownerToken()).isEqualTo(owner);
        assertThat(info.fence()).isEqualTo(fence);
        assertThat(info.remaining()).isPositive().isLessThanOrEqualTo(Duration.ofSeconds(30));
        assertThat(info.toString()).doesNotContain(owner);
    }

    @Test
    void listShowsTheUnexpiredLeasesOfANamespace() {
        String a = owner();
        String b = owner();
        fenceOf(store.tryAcquire(key("L1"), a, Duration.ofSeconds(30)));
        fenceOf(store.tryAcquire(key("L2"), b, Duration.ofSeconds(30)));
        fenceOf(store.tryAcquire(key("L3"), a, Duration.ofSeconds(30)));
        assertThat(store.release(key("L3"), a)).isTrue();
        fenceOf(store.tryAcquire(LockKey.of(namespace + "x", "other"), a, Duration.ofSeconds(30)));

        List<LeaseInfo> listed;
        try {
            listed = store.list(namespace, 100);
        } catch (UnsupportedOperationException e) {
            Assumptions.abort(store.name() + " cannot list leases");
            return;
        }
        assertThat(listed).extracting(LeaseInfo::key).containsExactly(key("L1"), key("L2"));
        assertThat(listed).extracting(LeaseInfo::ownerToken).containsExactly(a, b);
        assertThat(store.list(namespace, 1)).hasSize(1);
    }

    // ------------------------------------------------------------------ waiting

    @Test
    void acquireGivesUpAfterTheWaitWithAnActionableMessage() {
        LockService service = service();
        LockKey key = key("busy");
        fenceOf(store.tryAcquire(key, owner(), Duration.ofSeconds(30)));
        LockBusyException busy = (LockBusyException) catchThrowable(
                () -> service.acquire(key, LeaseOptions.defaults().withWait(Duration.ofMillis(100))));
        assertThat(busy).isNotNull();
        assertThat(busy.key()).isEqualTo(key);
        assertThat(busy.getMessage()).contains(key.render()).contains("Retry later");
        assertThat(service.tryAcquire(key, LeaseOptions.defaults())).isEmpty();
    }

    @Test
    void waiterInTheSameServiceIsWokenPromptlyAfterRelease() throws Exception {
        // The poll bound is far longer than the assertion: only a wake-up can pass.
        LockService service = service(b -> b.maxPoll(Duration.ofSeconds(30)));
        assertWakeUp(service, service);
    }

    @Test
    void waiterInAnotherProcessIsWokenPromptlyAfterRelease() throws Exception {
        Assumptions.assumeTrue(
                store.supportsReleaseNotifications(), store.name() + " has no release notifications across processes");
        LockService holderSide = service();
        LockService waiterSide = service(b -> b.maxPoll(Duration.ofSeconds(30)));
        assertWakeUp(holderSide, waiterSide);
    }

    @Test
    void releaseNoticesNameTheEndedGrantAndForceReleasesReachEverySubscriber() throws Exception {
        Assumptions.assumeTrue(store.supportsReleaseNotifications(), store.name() + " has no release notifications");
        LockKey key = key("notice");
        String rendered = key.render();
        BlockingQueue<ReleaseNotice> ofKey = new LinkedBlockingQueue<>();
        BlockingQueue<ReleaseNotice> forced = new LinkedBlockingQueue<>();
        ReleaseSubscription keySubscription = store.subscribe(key, ofKey::add);
        ReleaseSubscription forceSubscription = store.subscribeForceReleases(notice -> {
            if (notice.key().equals(rendered)) {
                forced.add(notice);
            }
        });
        try {
            long first = fenceOf(store.tryAcquire(key, "owner-one-0000000", Duration.ofSeconds(30)));
            assertThat(store.release(key, "owner-one-0000000")).isTrue();
            assertThat(ofKey.poll(5, TimeUnit.SECONDS)).isEqualTo(new ReleaseNotice(rendered, first, false));

            long second = fenceOf(store.tryAcquire(key, "owner-two-0000000", Duration.ofSeconds(30)));
            assertThat(store.forceRelease(key)).isTrue();
            assertThat(ofKey.poll(5, TimeUnit.SECONDS)).isEqualTo(new ReleaseNotice(rendered, second, true));
            assertThat(forced.poll(5, TimeUnit.SECONDS)).isEqualTo(new ReleaseNotice(rendered, second, true));

            // A stranger's release changes nothing and announces nothing.
            fenceOf(store.tryAcquire(key, "owner-three-00000", Duration.ofSeconds(30)));
            assertThat(store.release(key, "owner-four-000000")).isFalse();
            assertThat(ofKey.poll(200, TimeUnit.MILLISECONDS)).isNull();
        } finally {
            keySubscription.close();
            forceSubscription.close();
        }
    }

    private void assertWakeUp(LockService holderSide, LockService waiterSide) throws Exception {
        LockKey key = key("wake");
        AtomicInteger waiting = new AtomicInteger();
        Lease held = holderSide
                .tryAcquire(key, lease(Duration.ofSeconds(60), true), LockOwner.create("holder"))
                .orElseThrow();
        LeaseOptions waitLong = LeaseOptions.defaults().withWait(Duration.ofSeconds(60));
        AtomicLong acquiredAt = new AtomicLong();
        Future<Long> waiter = threads(1).submit(() -> {
            waiting.incrementAndGet();
            try (Lease lease = waiterSide.acquire(key, waitLong)) {
                acquiredAt.set(System.nanoTime());
                return lease.fence();
            }
        });
        await().atMost(Duration.ofSeconds(10)).until(() -> waiting.get() == 1);
        Thread.sleep(200); // let the waiter subscribe and fall asleep
        long releasedAt = System.nanoTime();
        held.close();
        long fence = waiter.get(20, TimeUnit.SECONDS);
        Duration handOff = Duration.ofNanos(acquiredAt.get() - releasedAt);
        assertThat(fence).isGreaterThan(held.fence());
        assertThat(handOff).as("hand-off after release").isLessThan(Duration.ofSeconds(2));
    }

    @Test
    void waitersInOneServiceAreServedInArrivalOrder() throws Exception {
        AtomicInteger waitingEvents = new AtomicInteger();
        // Waiters behind the head poll every millisecond: any waiter that tried out of turn would
        // overtake the head in the moment between a release and the head's attempt.
        LockService service = service(b -> b.fair(true)
                .minPoll(Duration.ofMillis(1))
                .maxPoll(Duration.ofMillis(1))
                .listener(e -> {
                    if (e.type() == LeaseEventType.WAITING) {
                        waitingEvents.incrementAndGet();
                    }
                }));
        LockKey key = key("queue");
        Lease held = service.tryAcquire(key, LeaseOptions.defaults(), LockOwner.create("first"))
                .orElseThrow();
        List<Integer> served = new CopyOnWriteArrayList<>();
        int waiters = 8;
        ExecutorService pool = threads(waiters);
        List<Future<?>> done = new ArrayList<>();
        for (int i = 0; i < waiters; i++) {
            int index = i;
            done.add(pool.submit(() -> {
                try (Lease lease = service.acquire(key, LeaseOptions.defaults().withWait(Duration.ofSeconds(60)))) {
                    assertThat(lease.isHeld()).isTrue();
                    served.add(index);
                    Thread.sleep(3);
                }
                return null;
            }));
            await().atMost(Duration.ofSeconds(10)).until(() -> waitingEvents.get() == index + 1);
        }
        held.close();
        for (Future<?> f : done) {
            f.get(60, TimeUnit.SECONDS);
        }
        assertThat(served).containsExactly(0, 1, 2, 3, 4, 5, 6, 7);
    }

    // ------------------------------------------------------------------ cost

    @Test
    void eachOperationIsOneCommandAtTheServer() {
        Optional<CommandCounter> counter = commandCounter();
        Assumptions.assumeTrue(counter.isPresent(), store.name() + " test counts no commands at the server");
        try (CommandCounter counting = counter.get()) {
            LeaseStore counted = counting.store();
            LockKey key = key("counted");
            String owner = owner();
            String other = owner();
            assertOneCommand(
                    counting, "acquire", () -> fenceOf(counted.tryAcquire(key, owner, Duration.ofSeconds(30))));
            assertOneCommand(
                    counting, "busy acquire", () -> assertThat(counted.tryAcquire(key, other, Duration.ofSeconds(30)))
                            .isInstanceOf(AcquireResult.Busy.class));
            assertOneCommand(counting, "renew", () -> assertThat(counted.renew(key, owner, Duration.ofSeconds(30)))
                    .isPresent());
            assertOneCommand(
                    counting, "inspect", () -> assertThat(counted.inspect(key)).isPresent());
            assertOneCommand(counting, "release", () -> assertThat(counted.release(key, owner))
                    .isTrue());
            fenceOf(counted.tryAcquire(key, other, Duration.ofSeconds(30)));
            assertOneCommand(counting, "force-release", () -> assertThat(counted.forceRelease(key))
                    .isTrue());
            assertThat(rawLease(key)).isEmpty();
        }
    }

    private static void assertOneCommand(CommandCounter counter, String operation, Runnable call) {
        long before = counter.commands();
        call.run();
        assertThat(counter.commands() - before)
                .as("commands the server received for %s", operation)
                .isEqualTo(1);
    }

    // ------------------------------------------------------------------ owners and keys compared exactly

    @Test
    void ownersThatDifferOnlyByTrailingSpacesAreTwoOwners() {
        String owner = owner();
        String padded = owner + " ";
        LockKey key = key("padded-second");
        long fence = fenceOf(store.tryAcquire(key, owner, Duration.ofSeconds(30)));
        assertThat(store.tryAcquire(key, padded, Duration.ofSeconds(30)))
                .as("'%s ' is another owner than '%s'", owner, owner)
                .isInstanceOf(AcquireResult.Busy.class);
        assertThat(store.renew(key, padded, Duration.ofSeconds(30))).isEmpty();
        assertThat(store.release(key, padded)).isFalse();
        assertThat(rawLease(key)).contains(new RawLease(owner, fence));
        assertThat(store.release(key, owner)).isTrue();

        LockKey first = key("padded-first");
        long paddedFence = fenceOf(store.tryAcquire(first, padded, Duration.ofSeconds(30)));
        assertThat(store.tryAcquire(first, owner, Duration.ofSeconds(30))).isInstanceOf(AcquireResult.Busy.class);
        assertThat(store.renew(first, owner, Duration.ofSeconds(30))).isEmpty();
        assertThat(store.release(first, owner)).isFalse();
        assertThat(rawLease(first)).contains(new RawLease(padded, paddedFence));
        assertThat(store.inspect(first).orElseThrow().ownerToken()).isEqualTo(padded);
        assertThat(store.release(first, padded)).isTrue();

        // Keys: a key part with white space cannot even be built, so K1 and 'K1 ' never meet a store.
        assertThatThrownBy(() -> key("K1 ")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> LockKey.parse(key("K1").render() + " ")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void ownerTokenWithAControlCharacterIsBadInputNeverAStoreFailure() {
        LockKey key = key("control-owner");
        String owner = owner() + "\u0000x";
        if (refusesControlCharactersInOwnerTokens()) {
            assertThatThrownBy(() -> store.tryAcquire(key, owner, Duration.ofSeconds(30)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("control character");
            assertThatThrownBy(() -> store.renew(key, owner, Duration.ofSeconds(30)))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> store.release(key, owner)).isInstanceOf(IllegalArgumentException.class);
            assertThat(rawLease(key)).isEmpty();
            return;
        }
        AtomicReference<AcquireResult> result = new AtomicReference<>();
        Throwable failure = catchThrowable(() -> result.set(store.tryAcquire(key, owner, Duration.ofSeconds(30))));
        if (failure != null) {
            assertThat(failure).as("refused as bad input").isInstanceOf(IllegalArgumentException.class);
            assertThat(rawLease(key)).isEmpty();
            return;
        }
        long fence = fenceOf(result.get());
        assertThat(rawLease(key)).as("kept exactly").contains(new RawLease(owner, fence));
        assertThat(store.release(key, owner)).isTrue();
    }

    // ------------------------------------------------------------------ robustness

    @Test
    void badInputIsRejectedWithoutStateChange() {
        LockKey key = key("bad");
        assertThatThrownBy(() -> store.tryAcquire(key, null, Duration.ofSeconds(1)))
                .isInstanceOfAny(IllegalArgumentException.class, NullPointerException.class);
        assertThatThrownBy(() -> store.tryAcquire(key, " ", Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> store.tryAcquire(key, owner(), Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> store.tryAcquire(key, owner(), Duration.ofSeconds(-5)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> store.tryAcquire(null, owner(), Duration.ofSeconds(1)))
                .isInstanceOfAny(IllegalArgumentException.class, NullPointerException.class);
        assertThatThrownBy(() -> store.renew(key, null, Duration.ofSeconds(1)))
                .isInstanceOfAny(IllegalArgumentException.class, NullPointerException.class);
        assertThatThrownBy(() -> store.release(key, null))
                .isInstanceOfAny(IllegalArgumentException.class, NullPointerException.class);
        assertThat(rawLease(key)).isEmpty();

        LockService service = service();
        assertThatThrownBy(() -> service.tryAcquire(null, LeaseOptions.defaults()))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("lock key");
        assertThatThrownBy(() -> LeaseOptions.builder().leaseFor(Duration.ofDays(400)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("PT9600H");
        assertThatThrownBy(() -> service.acquireAll(List.of(), LeaseOptions.defaults()))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(rawLease(key)).isEmpty();
    }

    @Test
    void throwingListenerNeverBreaksLocking() {
        LockService service = service(b -> b.listener(e -> {
            throw new IllegalStateException("listener broken on purpose");
        }));
        LockKey key = key("listener");
        Lease lease = service.tryAcquire(key, LeaseOptions.defaults()).orElseThrow();
        assertThat(rawLease(key)).map(RawLease::owner).contains(lease.ownerToken());
        lease.close();
        assertThat(rawLease(key)).isEmpty();
        assertThat(service.tryAcquire(key, LeaseOptions.defaults()))
                .isPresent()
                .get()
                .satisfies(Lease::close);
    }

    @Test
    void runLockedReleasesWhetherTheWorkReturnsOrThrows() throws Exception {
        LockService service = service();
        LockKey key = key("run");
        long fence = service.runLocked(key, LeaseOptions.defaults(), lease -> {
            assertThat(rawLease(key)).isPresent();
            return lease.fence();
        });
        assertThat(fence).isPositive();
        assertThat(rawLease(key)).isEmpty();
        assertThatThrownBy(() -> service.runLocked(key, LeaseOptions.defaults(), lease -> {
                    throw new java.io.IOException("work failed");
                }))
                .isInstanceOf(java.io.IOException.class);
        assertThat(rawLease(key)).isEmpty();
    }
}
