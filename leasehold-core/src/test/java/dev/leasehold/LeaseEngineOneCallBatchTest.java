package dev.leasehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.ScriptedStore.Op;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.BatchAcquireResult;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * A batch through the lock service is ONE store call ({@link LeaseStore#tryAcquireAll}) when its
 * keys are free, and stays all or nothing, renewed key by key, released on failure and signalled on
 * loss; a busy batch that may wait goes on key by key in sorted order.
 */
class LeaseEngineOneCallBatchTest extends EngineHarness {

    private static final Duration HOUR = Duration.ofHours(1);
    private static final String OTHER = "another-process";

    /** The scripted store with an atomic batch of its own, each batch call recorded. */
    static final class BatchStore implements LeaseStore {
        final ScriptedStore scripted;
        final List<List<LockKey>> batches = new CopyOnWriteArrayList<>();
        /** What the next batch call does after (or instead of) its grants; null passes. */
        final AtomicReference<RuntimeException> failAfterApplying = new AtomicReference<>();

        BatchStore(ScriptedStore scripted) {
            this.scripted = scripted;
        }

        /** Steps the next batch calls run around the real batch, in order; later ones pass. */
        final ConcurrentLinkedQueue<ScriptedStore.Step> steps = new ConcurrentLinkedQueue<>();

        @Override
        public BatchAcquireResult tryAcquireAll(List<LockKey> keys, String owner, Duration leaseFor) {
            LeaseStore.checkBatch(keys);
            batches.add(List.copyOf(keys));
            ScriptedStore.Step step = steps.poll();
            Supplier<BatchAcquireResult> real = () -> applyBatch(keys, owner, leaseFor);
            return step == null
                    ? real.get()
                    : step.apply(new ScriptedStore.Call(Op.ACQUIRE, null, owner, "batch"), real);
        }

        private synchronized BatchAcquireResult applyBatch(List<LockKey> keys, String owner, Duration leaseFor) {
            for (LockKey key : keys) {
                Optional<LeaseInfo> lease = scripted.backend.inspect(key);
                if (lease.isPresent() && !lease.get().ownerToken().equals(owner)) {
                    return new BatchAcquireResult.Busy(key, lease.get().remaining());
                }
            }
            List<Grant> grants = new ArrayList<>();
            for (LockKey key : keys) {
                grants.add(((AcquireResult.Granted) scripted.backend.tryAcquire(key, owner, leaseFor)).grant());
            }
            RuntimeException failure = failAfterApplying.getAndSet(null);
            if (failure != null) {
                throw failure;
            }
            return new BatchAcquireResult.Granted(grants);
        }

        @Override
        public AcquireResult tryAcquire(LockKey key, String owner, Duration leaseFor) {
            return scripted.tryAcquire(key, owner, leaseFor);
        }

        @Override
        public Optional<Grant> renew(LockKey key, String owner, Duration leaseFor) {
            return scripted.renew(key, owner, leaseFor);
        }

        @Override
        public boolean release(LockKey key, String owner) {
            return scripted.release(key, owner);
        }

        @Override
        public Optional<LeaseInfo> inspect(LockKey key) {
            return scripted.inspect(key);
        }

        @Override
        public boolean forceRelease(LockKey key) {
            return scripted.forceRelease(key);
        }

        @Override
        public boolean supportsReleaseNotifications() {
            return scripted.supportsReleaseNotifications();
        }

        @Override
        public ReleaseSubscription subscribe(LockKey key, Consumer<ReleaseNotice> onRelease) {
            return scripted.subscribe(key, onRelease);
        }

        @Override
        public ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease) {
            return scripted.subscribeForceReleases(onForceRelease);
        }

        @Override
        public String name() {
            return "batch-scripted";
        }
    }

    private BatchStore batchStore() {
        return new BatchStore(store(true));
    }

    private LockService service(BatchStore store, boolean fair) {
        LockService.Builder builder = LockService.builder(store)
                .ticker(time)
                .scheduler(time.scheduler())
                .fair(fair)
                .listener(events::add);
        LockService service = builder.build();
        closeLater(service);
        return service;
    }

    private final List<LockService> opened = new ArrayList<>();

    private void closeLater(LockService service) {
        opened.add(service);
    }

    @org.junit.jupiter.api.AfterEach
    void closeServices() {
        opened.forEach(LockService::close);
    }

    private static List<LockKey> keys(int n) {
        return IntStream.range(0, n)
                .mapToObj(i -> LockKey.of("t", "batch", "k" + i))
                .toList();
    }

    private static List<LockKey> shuffled(List<LockKey> keys) {
        List<LockKey> copy = new ArrayList<>(keys);
        Collections.reverse(copy);
        return copy;
    }

    @Test
    void aFreeBatchOfTenKeysIsOneStoreCallInSortedOrderAndEveryKeyIsRenewed() throws Exception {
        BatchStore store = batchStore();
        LockService service = service(store, false);
        List<LockKey> keys = keys(10);

        try (LeaseGroup group = service.acquireAll(shuffled(keys), lease(Duration.ofSeconds(3), true))) {
            assertThat(store.batches).containsExactly(keys);
            assertThat(store.scripted.count(Op.ACQUIRE, null)).isZero();
            assertThat(group.leases()).extracting(Lease::key).containsExactlyElementsOf(keys);
            assertThat(group.leases()).extracting(Lease::fence).doesNotHaveDuplicates();
            for (LockKey key : keys) {
                assertThat(store.scripted.backend.inspect(key)).isPresent();
            }

            for (int round = 1; round <= 4; round++) {
                time.advance(Duration.ofSeconds(1));
                awaitEvents(LeaseEventType.RENEWED, 10 * round);
            }
            for (LockKey key : keys) {
                assertThat(store.scripted.count(Op.RENEW, key))
                        .as("renewals of %s", key)
                        .isEqualTo(4);
            }
            assertThat(group.isHeld()).as("held past its first lease of 3 s").isTrue();
            assertThat(count(LeaseEventType.LOST)).isZero();
        }
        for (LockKey key : keys) {
            assertThat(store.scripted.backend.inspect(key))
                    .as("released: %s", key)
                    .isEmpty();
        }
        assertThat(service.heldLeases()).isEmpty();
    }

    @Test
    void aBusyKeyRefusesTheWholeBatchInOneCallAndNothingIsHeld() {
        BatchStore store = batchStore();
        LockService service = service(store, false);
        List<LockKey> keys = keys(5);
        assertThat(store.scripted.backend.tryAcquire(keys.get(3), OTHER, HOUR))
                .isInstanceOf(AcquireResult.Granted.class);

        assertThat(service.tryAcquireAll(keys, lease(HOUR, true))).isEmpty();
        assertThatThrownBy(() -> service.acquireAll(keys, lease(HOUR, true)))
                .isInstanceOf(LockBusyException.class)
                .hasMessageContaining("nothing of it is held")
                .hasMessageContaining(keys.get(3).toString());

        assertThat(store.batches).hasSize(2);
        assertThat(store.scripted.count(Op.ACQUIRE, null)).isZero();
        for (LockKey key : keys) {
            if (!key.equals(keys.get(3))) {
                assertThat(store.scripted.backend.inspect(key)).as("%s", key).isEmpty();
            }
        }
        assertThat(service.heldLeases()).isEmpty();
    }

    @Test
    void aBatchThatMayWaitTakesEveryKeyOnceTheBusyOneIsReleased() throws Exception {
        BatchStore store = batchStore();
        LockService service = service(store, false);
        List<LockKey> keys = keys(4);
        LockKey busy = keys.get(2);
        long fence = ((AcquireResult.Granted) store.scripted.backend.tryAcquire(busy, OTHER, HOUR))
                .grant()
                .fence();

        Future<LeaseGroup> waiter = async(() -> service.acquireAll(keys, waiting(HOUR, HOUR)));
        store.scripted.awaitCall(Op.SUBSCRIBE, busy, 1);
        store.scripted.awaitIoIdle();
        assertThat(store.release(busy, OTHER)).isTrue();

        try (LeaseGroup group = await(waiter)) {
            assertThat(group.isHeld()).isTrue();
            assertThat(group.leases()).extracting(Lease::key).containsExactlyElementsOf(keys);
            assertThat(group.leases().get(2).fence()).isGreaterThan(fence);
        }
        assertThat(store.batches).as("the first attempt").hasSize(1);
        for (LockKey key : keys) {
            assertThat(store.scripted.backend.inspect(key)).isEmpty();
        }
    }

    @Test
    void aWaitingBatchThatRunsOutOfTimeHoldsNothing() throws Exception {
        BatchStore store = batchStore();
        LockService service = service(store, false);
        List<LockKey> keys = keys(4);
        store.scripted.backend.tryAcquire(keys.get(3), OTHER, HOUR);

        Future<LeaseGroup> waiter = async(() -> service.acquireAll(keys, waiting(HOUR, Duration.ofSeconds(2))));
        store.scripted.awaitCall(Op.SUBSCRIBE, keys.get(3), 1);
        time.awaitTaskDueWithin(Duration.ofSeconds(2));
        time.advance(Duration.ofSeconds(3));

        assertThatThrownBy(() -> await(waiter))
                .isInstanceOf(LockBusyException.class)
                .hasMessageContaining("nothing of it is held");
        for (int i = 0; i < 3; i++) {
            awaitFree(store.scripted, keys.get(i));
        }
        assertThat(service.heldLeases()).isEmpty();
    }

    @Test
    void aBatchCallThatFailsAfterItWasAppliedLeavesNoKeyHeld() {
        for (Duration wait : List.of(Duration.ZERO, Duration.ofSeconds(5))) {
            BatchStore store = batchStore();
            LockService service = service(store, false);
            List<LockKey> keys = keys(3);
            store.failAfterApplying.set(
                    new LeaseStoreException("acquire", keys.get(0).render(), new RuntimeException("reply lost")));

            assertThatThrownBy(() -> service.acquireAll(keys, waiting(HOUR, wait)))
                    .isInstanceOf(LeaseStoreException.class)
                    .hasMessageContaining("reply lost");

            for (LockKey key : keys) {
                awaitFree(store.scripted, key);
            }
            assertThat(service.heldLeases()).as("wait %s", wait).isEmpty();
        }
    }

    @Test
    void aKeyTheHolderHoldsIsReenteredAndOnlyTheOthersAreAskedFor() throws Exception {
        BatchStore store = batchStore();
        LockService service = service(store, false);
        List<LockKey> keys = keys(3);
        Lease first = service.tryAcquire(keys.get(1), lease(HOUR, true)).orElseThrow();

        try (LeaseGroup group = service.acquireAll(keys, lease(HOUR, true))) {
            assertThat(store.batches).containsExactly(List.of(keys.get(0), keys.get(2)));
            assertThat(group.leases().get(1).fence()).isEqualTo(first.fence());
            assertThat(first.holdCount()).isEqualTo(2);
        }
        assertThat(first.isHeld()).isTrue();
        assertThat(first.holdCount()).isEqualTo(1);
        assertThat(store.scripted.backend.inspect(keys.get(1))).isPresent();

        // refused: the re-entered hold is given back, the first hold stays
        store.scripted.backend.tryAcquire(keys.get(2), OTHER, HOUR);
        assertThat(service.tryAcquireAll(keys, lease(HOUR, true))).isEmpty();
        assertThat(first.holdCount()).isEqualTo(1);
        assertThat(first.isHeld()).isTrue();
        assertThat(store.scripted.backend.inspect(keys.get(0))).isEmpty();
        first.close();
        assertThat(store.scripted.backend.inspect(keys.get(1))).isEmpty();
    }

    @Test
    void aKeyOfTheBatchTakenOverIsSignalledAsLostOnItsOwn() throws Exception {
        BatchStore store = batchStore();
        LockService service = service(store, false);
        List<LockKey> keys = keys(3);
        try (LeaseGroup group = service.acquireAll(keys, lease(Duration.ofSeconds(3), true))) {
            store.scripted.backend.forceRelease(keys.get(1)); // behind the engine's back, no notice
            store.scripted.backend.tryAcquire(keys.get(1), OTHER, HOUR);
            time.advance(Duration.ofSeconds(2));
            awaitEvents(LeaseEventType.LOST, 1);

            assertThat(group.leases().get(1).isHeld()).isFalse();
            assertThat(group.leases().get(0).isHeld()).isTrue();
            assertThat(group.leases().get(2).isHeld()).isTrue();
            assertThat(group.isHeld()).isFalse();
            assertThatThrownBy(group::assertHeld).isInstanceOf(LeaseLostException.class);
        }
        assertThat(store.scripted.backend.inspect(keys.get(1)).orElseThrow().ownerToken())
                .isEqualTo(OTHER);
        assertThat(store.scripted.backend.inspect(keys.get(0))).isEmpty();
    }

    @Test
    void aFairServiceNeverLetsABatchBargePastAWaiterOfOneOfItsKeys() throws Exception {
        BatchStore store = batchStore();
        LockService service = service(store, true);
        List<LockKey> keys = keys(3);
        store.scripted.backend.tryAcquire(keys.get(1), OTHER, HOUR);
        Future<Lease> waiter = async(() -> service.acquire(keys.get(1), waiting(HOUR, HOUR), LockOwner.create("w")));
        store.scripted.awaitCall(Op.SUBSCRIBE, keys.get(1), 1);
        // the holder leaves behind the engine's back: the key is free but a waiter queues for it
        store.scripted.backend.release(keys.get(1), OTHER);

        assertThat(service.tryAcquireAll(keys, lease(HOUR, true))).isEmpty();
        assertThat(store.batches).isEmpty();
        assertThat(store.scripted.backend.inspect(keys.get(0))).isEmpty();

        store.scripted.publish(new ReleaseNotice(keys.get(1).render(), 1, false));
        try (Lease lease = await(waiter)) {
            assertThat(lease.key()).isEqualTo(keys.get(1));
        }
    }
}
