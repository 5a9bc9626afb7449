package dev.leasehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leasehold.memory.InMemoryLeaseStore;
import dev.leasehold.spi.ForwardingLeaseStore;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spi.PartialRenewalException;
import dev.leasehold.spi.Renewal;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Renewals of a store that renews in batches: the renewals that fall due together reach the store
 * in a few calls of at most its limit, and each lease still learns its own answer. On fake time;
 * the batches run on the engine's real renewal workers, which the test waits for.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class RenewalBatchesTest {

    private static final int LIMIT = 100;
    private static final Duration LEASE = Duration.ofSeconds(3);

    private final FakeTime time = new FakeTime();
    private final List<LeaseEvent> events = new CopyOnWriteArrayList<>();
    private final BatchingStore store = new BatchingStore(new InMemoryLeaseStore(time, Clock.systemUTC()));
    private final LockService service = LockService.builder(store)
            .ticker(time)
            .scheduler(time.scheduler())
            .listener(events::add)
            .build();

    @AfterEach
    void close() {
        store.neverAnswers.countDown();
        service.close();
    }

    /** Forwards to the in-memory store; renews in batches of at most {@link #LIMIT}, and counts the calls. */
    private static final class BatchingStore extends ForwardingLeaseStore {
        private final LeaseStore inner;
        final List<Integer> batches = new CopyOnWriteArrayList<>();
        final AtomicInteger singleRenewals = new AtomicInteger();
        volatile LockKey takenOver;
        final AtomicBoolean failing = new AtomicBoolean();
        /** While set, a batch call blocks like a store that does not answer, until interrupted. */
        final AtomicBoolean hanging = new AtomicBoolean();

        final java.util.concurrent.CountDownLatch hung = new java.util.concurrent.CountDownLatch(1);
        final java.util.concurrent.CountDownLatch neverAnswers = new java.util.concurrent.CountDownLatch(1);
        final AtomicInteger interruptedCalls = new AtomicInteger();
        /** Keys whose renewal fails on its own while the rest of their batch is answered. */
        final java.util.Set<LockKey> partFailing = java.util.concurrent.ConcurrentHashMap.newKeySet();

        BatchingStore(LeaseStore inner) {
            this.inner = inner;
        }

        @Override
        protected LeaseStore delegate() {
            return inner;
        }

        @Override
        public int renewalBatchLimit() {
            return LIMIT;
        }

        @Override
        public Optional<Grant> renew(LockKey key, String owner, Duration leaseFor) {
            singleRenewals.incrementAndGet();
            return super.renew(key, owner, leaseFor);
        }

        @Override
        public List<Optional<Grant>> renewAll(List<Renewal> batch) {
            batches.add(batch.size());
            if (failing.get()) {
                throw new LeaseStoreException("renew", batch.size() + " leases", new IllegalStateException("down"));
            }
            if (hanging.get()) {
                hung.countDown();
                try {
                    neverAnswers.await(); // released only when the test ends
                } catch (InterruptedException e) {
                    interruptedCalls.incrementAndGet();
                    Thread.currentThread().interrupt();
                    throw new LeaseStoreException("renew", batch.size() + " leases", e);
                }
            }
            List<Optional<Grant>> answers = new ArrayList<>(inner.renewAll(batch));
            List<RuntimeException> failures = new ArrayList<>();
            for (int i = 0; i < batch.size(); i++) {
                if (batch.get(i).key().equals(takenOver)) {
                    answers.set(i, Optional.empty()); // another owner has the key in the store
                }
                failures.add(null);
                if (partFailing.contains(batch.get(i).key())) {
                    answers.set(i, null);
                    failures.set(
                            i,
                            new LeaseStoreException(
                                    "renew",
                                    batch.get(i).key().render(),
                                    new IllegalStateException("its server is down")));
                }
            }
            if (failures.stream().anyMatch(java.util.Objects::nonNull)) {
                throw new PartialRenewalException(answers, failures);
            }
            return answers;
        }
    }

    private List<Lease> hold(int count) {
        List<Lease> leases = new ArrayList<>();
        LeaseOptions options =
                LeaseOptions.builder().leaseFor(LEASE).renewal(true).build();
        for (int i = 0; i < count; i++) {
            leases.add(service.tryAcquire(LockKey.of("batch", "k" + i), options).orElseThrow());
        }
        return leases;
    }

    private long count(LeaseEventType type) {
        return events.stream().filter(e -> e.type() == type).count();
    }

    @Test
    void renewalsThatFallDueTogetherReachTheStoreInAFewCallsAndEachLeaseLearnsItsOwnAnswer() {
        List<Lease> leases = hold(250);
        Lease lost = leases.get(7);
        List<LeaseLostException> lostCauses = new CopyOnWriteArrayList<>();
        lost.onLost(lostCauses::add);
        store.takenOver = lost.key();

        time.advance(Duration.ofSeconds(1)); // every renewal falls due; full batches leave at once
        time.advance(Duration.ofMillis(50)); // the window of the rest ends
        await().atMost(FakeTime.PATIENCE).until(() -> count(LeaseEventType.RENEWED) == 249 && lostCauses.size() == 1);

        assertThat(store.singleRenewals).as("renewals sent one by one").hasValue(0);
        assertThat(store.batches.stream().mapToInt(Integer::intValue).sum())
                .as("leases renewed")
                .isEqualTo(250);
        assertThat(store.batches).as("batch sizes").allSatisfy(size -> assertThat(size)
                .isBetween(1, LIMIT));
        assertThat(store.batches.size()).as("store calls for 250 renewals").isLessThanOrEqualTo(6);
        assertThat(lostCauses.get(0).getMessage()).contains("no longer holds the key");
        assertThat(lost.isHeld()).isFalse();

        time.advanceTickerOnly(Duration.ofMillis(2200)); // t = 3.25 s: past every first grant's end
        for (Lease lease : leases) {
            if (lease != lost) {
                assertThat(lease.isHeld())
                        .as("%s renewed in its batch", lease.key())
                        .isTrue();
            }
        }
        assertThat(events)
                .filteredOn(e -> e.type() == LeaseEventType.RENEWED)
                .allSatisfy(e -> assertThat(e.waited()).as("renewal lag").isLessThanOrEqualTo(Duration.ofMillis(50)));
    }

    @Test
    void aBatchedLeasesNextRenewalFallsDueOnTheGridOfTheBatchWindow() {
        // lease 3 s: renewed every 1 s, gathered for 50 ms; the next renewal falls due a period
        // after the last one fell due, rounded up to a multiple of 50 ms, so that leases renewed
        // together fall due together again.
        time.advance(Duration.ofMillis(13));
        hold(1);
        time.advance(Duration.ofSeconds(1)); // t = 1.013 s: falls due, its window ends at 1.063 s
        time.advance(Duration.ofMillis(50));
        await().atMost(FakeTime.PATIENCE).until(() -> count(LeaseEventType.RENEWED) == 1);
        // a period after 1.013 s is 2.013 s, on the grid 2.05 s: 987 ms after 1.063 s
        assertThat(time.awaitEarliestTaskWithin(Duration.ofSeconds(1))).isEqualTo(Duration.ofMillis(987));
    }

    @Test
    void aBatchTheStoreFailsIsAFailedRenewalOfEachOfItsLeasesWhichAreTriedAgain() {
        List<Lease> leases = hold(120);
        store.failing.set(true);
        time.advance(Duration.ofSeconds(1));
        time.advance(Duration.ofMillis(50));
        await().atMost(FakeTime.PATIENCE).until(() -> count(LeaseEventType.RENEWAL_FAILED) == 120);
        assertThat(count(LeaseEventType.LOST))
                .as("leases lost while still valid")
                .isZero();
        assertThat(leases).allSatisfy(lease -> assertThat(lease.isHeld()).isTrue());

        store.failing.set(false);
        time.advance(Duration.ofSeconds(1)); // the retries fall due a period later
        time.advance(Duration.ofMillis(50));
        await().atMost(FakeTime.PATIENCE).until(() -> count(LeaseEventType.RENEWED) == 120);
        assertThat(count(LeaseEventType.LOST)).isZero();
    }

    /**
     * A store that renews part of a batch and fails the rest (a batch over several servers, one of
     * which is down) gives each lease its own outcome: the answered leases stay held past their
     * first grant's end, only the failed ones fail and are lost at their deadline.
     */
    @Test
    void aPartlyFailedBatchFailsOnlyTheLeasesWhoseRenewalFailed() {
        List<Lease> leases = hold(40);
        List<LockKey> down = leases.stream().limit(10).map(Lease::key).toList();
        store.partFailing.addAll(down);
        for (int period = 0; period < 3; period++) { // t = 3.15 s: past every first grant's end
            time.advance(Duration.ofSeconds(1));
            time.advance(Duration.ofMillis(50));
            int renewals = 30 * (period + 1);
            await().atMost(FakeTime.PATIENCE).until(() -> count(LeaseEventType.RENEWED) == renewals);
        }
        await().atMost(FakeTime.PATIENCE).until(() -> count(LeaseEventType.LOST) == 10);

        assertThat(store.batches.size()).as("store calls").isLessThanOrEqualTo(6);
        assertThat(events)
                .filteredOn(e -> e.type() == LeaseEventType.RENEWAL_FAILED)
                .allSatisfy(e -> assertThat(down).contains(e.key()));
        assertThat(events).filteredOn(e -> e.type() == LeaseEventType.LOST).allSatisfy(e -> assertThat(down)
                .contains(e.key()));
        assertThat(events)
                .filteredOn(e -> e.type() == LeaseEventType.RENEWAL_FAILED)
                .allSatisfy(e -> assertThat(e.failure()).hasMessageContaining("its server is down"));
        for (Lease lease : leases) {
            assertThat(lease.isHeld()).as("%s held", lease.key()).isEqualTo(!down.contains(lease.key()));
        }
    }

    /**
     * A batch call the store never answers: each lease is still lost at its own local deadline, on
     * the timer, and once every lease of the call is lost the call is interrupted, so the worker is
     * free again and the renewals of leases taken later are answered.
     */
    @Test
    void aHungBatchLosesItsLeasesAtTheirDeadlineAndIsInterruptedThen() throws Exception {
        List<Lease> leases = hold(5);
        store.hanging.set(true);
        time.advance(Duration.ofSeconds(1));
        time.advance(Duration.ofMillis(50));
        assertThat(store.hung.await(FakeTime.PATIENCE.toMillis(), TimeUnit.MILLISECONDS))
                .as("the batch reached the store")
                .isTrue();
        time.advance(Duration.ofMillis(2000)); // t = 3.05 s: past every lease's local deadline
        await().atMost(FakeTime.PATIENCE).until(() -> count(LeaseEventType.LOST) == 5);
        assertThat(leases).allSatisfy(lease -> assertThat(lease.isHeld()).isFalse());

        await().atMost(FakeTime.PATIENCE).until(() -> store.interruptedCalls.get() == 1);
        store.hanging.set(false);
        Lease later = service.tryAcquire(
                        LockKey.of("batch", "later"),
                        LeaseOptions.builder().leaseFor(LEASE).renewal(true).build())
                .orElseThrow();
        for (int period = 0; period < 4; period++) { // past the later lease's first grant's end
            time.advance(Duration.ofSeconds(1));
            time.advance(Duration.ofMillis(50));
            long renewed = period + 1;
            await().atMost(FakeTime.PATIENCE)
                    .until(() -> events.stream()
                                    .filter(e -> e.type() == LeaseEventType.RENEWED
                                            && e.key().equals(later.key()))
                                    .count()
                            == renewed);
        }
        assertThat(later.isHeld()).isTrue();
    }

    @Test
    void aFewRenewalsLeaveWhenTheirWindowEndsAlsoOnATickerThatReadsNegative() {
        FakeTime negative = new FakeTime(Long.MIN_VALUE / 2);
        List<LeaseEvent> seen = new CopyOnWriteArrayList<>();
        BatchingStore batching = new BatchingStore(new InMemoryLeaseStore(negative, Clock.systemUTC()));
        try (LockService negativeService = LockService.builder(batching)
                .ticker(negative)
                .scheduler(negative.scheduler())
                .listener(seen::add)
                .build()) {
            LeaseOptions options =
                    LeaseOptions.builder().leaseFor(LEASE).renewal(true).build();
            for (int i = 0; i < 3; i++) {
                negativeService
                        .tryAcquire(LockKey.of("batch", "n" + i), options)
                        .orElseThrow();
            }
            negative.advance(Duration.ofSeconds(1));
            negative.advance(Duration.ofMillis(50)); // fewer than a batch: they go when the window ends
            await().atMost(FakeTime.PATIENCE)
                    .until(() -> seen.stream()
                                    .filter(e -> e.type() == LeaseEventType.RENEWED)
                                    .count()
                            == 3);
            assertThat(batching.batches).containsExactly(3);
        }
    }

    @Test
    void aLateRenewalIsReportedOncePerIntervalAndATimelyOneNever() {
        RenewalLag lag = new RenewalLag();
        LockKey key = LockKey.of("batch", "lag");
        long lease = TimeUnit.SECONDS.toNanos(6);
        long now = 0;
        assertThat(lag.record(key, TimeUnit.SECONDS.toNanos(1), lease, now))
                .as("a sixth of the lease late")
                .isFalse();
        assertThat(lag.record(key, TimeUnit.SECONDS.toNanos(1) + 1, lease, now))
                .as("more than a sixth late")
                .isTrue();
        assertThat(lag.record(key, TimeUnit.SECONDS.toNanos(3), lease, now + RenewalLag.WARN_INTERVAL_NANOS - 1))
                .as("within the interval")
                .isFalse();
        assertThat(lag.record(key, TimeUnit.SECONDS.toNanos(3), lease, now + RenewalLag.WARN_INTERVAL_NANOS))
                .as("after the interval")
                .isTrue();
    }

    @Test
    void theWindowIsAThirtiethOfTheLeaseAndAtMost50Ms() {
        assertThat(RenewalBatches.window(TimeUnit.SECONDS.toNanos(6))).isEqualTo(TimeUnit.MILLISECONDS.toNanos(50));
        assertThat(RenewalBatches.window(TimeUnit.MILLISECONDS.toNanos(300)))
                .isEqualTo(TimeUnit.MILLISECONDS.toNanos(10));
        assertThat(RenewalBatches.window(10)).isEqualTo(1);
    }
}
