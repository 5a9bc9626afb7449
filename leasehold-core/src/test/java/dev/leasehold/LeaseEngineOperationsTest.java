package dev.leasehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.ScriptedStore.Op;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The engine's bookkeeping: events, handles, groups, operator views and closing the service. */
class LeaseEngineOperationsTest extends EngineHarness {

    private static final LockKey A = LockKey.of("t", "ops", "a");
    private static final LockKey B = LockKey.of("t", "ops", "b");

    @Test
    void eventsTellWhatHappenedToALease() {
        ScriptedStore store = store(true);
        LockService service = service(store);
        Lease lease = service.tryAcquire(KEY, LeaseOptions.defaults()).orElseThrow();
        Lease inner = service.tryAcquire(KEY, LeaseOptions.defaults()).orElseThrow();
        assertThat(service.tryAcquire(KEY, LeaseOptions.defaults(), LockOwner.create("other")))
                .isEmpty();
        inner.close();
        lease.close();

        assertThat(events)
                .extracting(LeaseEvent::type)
                .containsExactly(
                        LeaseEventType.ACQUIRED,
                        LeaseEventType.REENTERED,
                        LeaseEventType.BUSY,
                        LeaseEventType.RELEASED);
        LeaseEvent acquired = events.get(0);
        assertThat(acquired.key()).isEqualTo(KEY);
        assertThat(acquired.store()).isEqualTo("scripted");
        assertThat(acquired.fence()).isEqualTo(lease.fence());
        assertThat(acquired.owner()).isEqualTo(LockOwner.abbreviate(lease.ownerToken()));
        assertThat(events.get(3).detail()).isNull();
        assertThat(lease.holdCount()).isZero();
    }

    @Test
    void aHandleClosesOnceAndTellsItsStateAfterwards() {
        ScriptedStore store = store(true);
        LockService service = service(store);
        Lease lease =
                service.tryAcquire(KEY, lease(Duration.ofSeconds(30), false)).orElseThrow();
        assertThat(lease.key()).isEqualTo(KEY);
        assertThat(Duration.between(
                                lease.validUntil(),
                                store.backend.inspect(KEY).orElseThrow().expiresAt())
                        .abs())
                .isLessThan(Duration.ofSeconds(1));
        assertThat(lease.toString()).contains(KEY.render()).doesNotContain(lease.ownerToken());
        lease.assertHeld();
        lease.close();
        assertThat(lease.isHeld()).isFalse();
        assertThatThrownBy(lease::close)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(KEY.render());
        assertThatThrownBy(lease::assertHeld).isInstanceOf(IllegalStateException.class);
        assertThat(store.count(Op.RELEASE, KEY)).isEqualTo(1);
    }

    @Test
    void aLeaseReleasedAfterItWasLostSaysSo() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        Lease lease =
                service.tryAcquire(KEY, lease(Duration.ofSeconds(1), false)).orElseThrow();
        CountDownLatch lost = new CountDownLatch(1);
        java.util.concurrent.atomic.AtomicReference<LeaseLostException> cause =
                new java.util.concurrent.atomic.AtomicReference<>();
        lease.onLost(e -> {
            cause.set(e);
            lost.countDown();
        });
        time.advance(Duration.ofSeconds(1));
        assertThat(lost.await(5, TimeUnit.SECONDS)).isTrue();
        assertThat(cause.get().getMessage()).contains("renewal was off");
        awaitEvents(LeaseEventType.LOST, 1);
        CountDownLatch late = new CountDownLatch(1);
        lease.onLost(e -> late.countDown()); // already lost: runs at once
        assertThat(late.getCount()).isZero();
        lease.close();
        assertThat(events)
                .filteredOn(e -> e.type() == LeaseEventType.RELEASED)
                .singleElement()
                .satisfies(e -> assertThat(e.detail()).contains("lost"));
    }

    @Test
    void aReleaseTheStoreFailsIsReportedAndTheKeyEndsAtItsExpiry() {
        ScriptedStore store = store(true);
        LockService service = service(store);
        Lease lease =
                service.tryAcquire(KEY, lease(Duration.ofSeconds(30), false)).orElseThrow();
        store.script(Op.RELEASE, KEY, ScriptedStore.fail());
        assertThatThrownBy(lease::close).isInstanceOf(LeaseStoreException.class);
        assertThat(events)
                .filteredOn(e -> e.type() == LeaseEventType.RELEASED)
                .singleElement()
                .satisfies(e -> assertThat(e.failure()).isNotNull());
        assertThat(service.heldLeases()).isEmpty();
    }

    @Test
    void aGroupIsHeldWhileEveryLeaseIsAndReleasesAllEvenWhenOneFails() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        LeaseGroup group = service.acquireAll(List.of(B, A), lease(Duration.ofSeconds(30), false));
        assertThat(group.isHeld()).isTrue();
        group.assertHeld();
        assertThat(service.heldLeases()).extracting(HeldLeaseInfo::key).containsExactlyInAnyOrder(A, B);

        store.backend.forceRelease(A);
        assertThat(service.forceRelease(A, "ticket OPS-4")).isFalse();
        assertThat(group.isHeld()).isFalse();
        assertThatThrownBy(group::assertHeld).isInstanceOf(LeaseLostException.class);

        store.script(Op.RELEASE, B, ScriptedStore.fail());
        assertThatThrownBy(group::close).isInstanceOf(LeaseStoreException.class);
        assertThat(store.count(Op.RELEASE, A))
                .as("still released after B failed")
                .isEqualTo(1);
    }

    @Test
    void heldLeasesListTheLongestHeldFirst() {
        ScriptedStore store = store(true);
        LockService service = service(store);
        List<LockKey> keys = new java.util.ArrayList<>();
        for (String name : List.of("e", "c", "a", "d", "b", "f")) {
            LockKey key = LockKey.of("t", "held", name);
            service.tryAcquire(key, LeaseOptions.defaults()).orElseThrow();
            keys.add(key);
            time.advance(Duration.ofSeconds(1));
        }
        assertThat(service.heldLeases()).extracting(HeldLeaseInfo::key).containsExactlyElementsOf(keys);
    }

    @Test
    void invalidArgumentsAreRefusedBeforeAnyStoreCall() {
        ScriptedStore store = store(true);
        LockService service = service(store);
        LockOwner owner = LockOwner.create("job");
        LeaseOptions options = LeaseOptions.defaults();
        List<org.assertj.core.api.ThrowableAssert.ThrowingCallable> calls = List.of(
                () -> service.tryAcquire(null, options),
                () -> service.tryAcquire(KEY, null),
                () -> service.tryAcquire(null, options, owner),
                () -> service.tryAcquire(KEY, null, owner),
                () -> service.acquire(null, options),
                () -> service.acquire(KEY, null),
                () -> service.acquire(null, options, owner),
                () -> service.acquire(KEY, null, owner));
        for (org.assertj.core.api.ThrowableAssert.ThrowingCallable call : calls) {
            assertThatThrownBy(call).isInstanceOf(NullPointerException.class).hasMessageContaining("missing");
        }
        assertThat(store.calls()).isEmpty();
    }

    @Test
    void aStoresOwnExceptionReachesTheCallerAsItIsAndAnyOtherIsWrappedNamingTheKey() {
        ScriptedStore store = store(true);
        LockService service = service(store);
        LeaseStoreException own = new LeaseStoreException("acquire", KEY.render(), new RuntimeException("own"));
        IllegalStateException plain = new IllegalStateException("plain");
        store.script(Op.ACQUIRE, KEY, raising(own), raising(plain));
        assertThatThrownBy(() -> service.tryAcquire(KEY, LeaseOptions.defaults()))
                .isSameAs(own);
        assertThatThrownBy(() -> service.tryAcquire(KEY, LeaseOptions.defaults()))
                .isInstanceOf(LeaseStoreException.class)
                .hasMessageContaining(KEY.render())
                .hasCause(plain);
    }

    static ScriptedStore.Step raising(RuntimeException failure) {
        return new ScriptedStore.Step() {
            @Override
            public <T> T apply(ScriptedStore.Call call, java.util.function.Supplier<T> real) {
                throw failure;
            }
        };
    }

    @Test
    void everyFailureOfABatchReleaseReachesTheCaller() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        LockKey c = LockKey.of("t", "ops", "c");
        LeaseGroup group = service.acquireAll(List.of(A, B, c), lease(Duration.ofSeconds(30), false));
        store.script(Op.RELEASE, A, ScriptedStore.fail());
        store.script(Op.RELEASE, c, ScriptedStore.fail());
        assertThatThrownBy(group::close)
                .isInstanceOf(LeaseStoreException.class)
                .hasMessageContaining(c.render())
                .satisfies(e -> assertThat(e.getSuppressed()).singleElement().satisfies(s -> assertThat(s)
                        .hasMessageContaining(A.render())));
        assertThat(store.backend.inspect(B)).isEmpty();

        // A batch that fails, and fails to give back what it took: the caller sees both.
        store.script(Op.ACQUIRE, c, ScriptedStore.fail());
        store.script(Op.RELEASE, B, ScriptedStore.fail());
        store.backend.forceRelease(A);
        store.backend.forceRelease(c);
        assertThatThrownBy(() -> service.acquireAll(List.of(B, c), lease(Duration.ofSeconds(30), false)))
                .isInstanceOf(LeaseStoreException.class)
                .hasMessageContaining(c.render())
                .satisfies(e -> assertThat(e.getSuppressed()).singleElement().satisfies(s -> assertThat(s)
                        .hasMessageContaining(B.render())));
    }

    @Test
    void aBatchWithoutWaitingTakesEveryFreeKey() {
        ScriptedStore store = store(true);
        LockService service = service(store);
        LeaseGroup group =
                service.tryAcquireAll(List.of(B, A), LeaseOptions.defaults()).orElseThrow();
        assertThat(group.leases()).extracting(Lease::key).containsExactly(A, B);
        assertThat(group.isHeld()).isTrue();
        group.close();
        assertThat(store.backend.inspect(A)).isEmpty();
        assertThat(store.backend.inspect(B)).isEmpty();
    }

    @Test
    void operatorsSeeHeldLeasesAndInspectTheStore() {
        ScriptedStore store = store(true);
        LockService service = service(store);
        Lease older = service.tryAcquire(A, LeaseOptions.defaults()).orElseThrow();
        time.advance(Duration.ofSeconds(1));
        Lease newer = service.tryAcquire(B, LeaseOptions.defaults()).orElseThrow();
        assertThat(service.heldLeases()).extracting(HeldLeaseInfo::key).containsExactly(A, B);
        assertThat(service.heldLeases().get(0).heldFor()).isEqualTo(Duration.ofSeconds(1));
        assertThat(service.inspect(A).orElseThrow().fence()).isEqualTo(older.fence());
        store.script(Op.INSPECT, A, ScriptedStore.fail());
        assertThatThrownBy(() -> service.inspect(A)).isInstanceOf(LeaseStoreException.class);
        assertThatThrownBy(() -> service.forceRelease(A, " ")).isInstanceOf(IllegalArgumentException.class);
        store.script(Op.FORCE_RELEASE, A, ScriptedStore.fail());
        assertThatThrownBy(() -> service.forceRelease(A, "ticket")).isInstanceOf(LeaseStoreException.class);
        assertThat(older.isHeld()).isTrue();
        newer.close();
        older.close();
    }

    @Test
    void closingTheServiceReleasesWhatItHoldsAndRefusesNewWork() {
        ScriptedStore store = store(true);
        LockService service = service(store);
        Lease held =
                service.tryAcquire(KEY, lease(Duration.ofSeconds(30), true)).orElseThrow();
        service.close();
        assertThat(store.backend.inspect(KEY)).isEmpty();
        assertThat(held.isHeld()).isFalse();
        assertThatThrownBy(() -> service.tryAcquire(A, LeaseOptions.defaults()))
                .isInstanceOf(IllegalStateException.class);
        time.advance(Duration.ofMinutes(1));
        assertThat(store.count(Op.RENEW, null)).isZero();
        service.close(); // twice is harmless
    }

    @Test
    void aThrowingListenerNeverBreaksLocking() {
        ScriptedStore store = store(true);
        LockService service = service(
                store,
                b -> b.listener(e -> {
                    throw new IllegalStateException("listener broken on purpose");
                }));
        try (Lease lease = service.tryAcquire(KEY, LeaseOptions.defaults()).orElseThrow()) {
            assertThat(lease.isHeld()).isTrue();
        }
        assertThat(store.backend.inspect(KEY)).isEmpty();
    }

    @Test
    void aStoreFailureOnAcquireIsAStoreExceptionNamingTheKey() {
        ScriptedStore store = store(true);
        LockService service = service(store);
        store.script(Op.ACQUIRE, KEY, ScriptedStore.fail());
        assertThatThrownBy(() -> service.tryAcquire(KEY, LeaseOptions.defaults()))
                .isInstanceOf(LeaseStoreException.class)
                .hasMessageContaining(KEY.render());
        assertThat(service.heldLeases()).isEmpty();
        assertThat(service.tryAcquire(KEY, LeaseOptions.defaults()))
                .isPresent()
                .get()
                .satisfies(Lease::close);
    }

    @Test
    void busyWithoutWaitingIsALockBusyExceptionNamingTheKey() {
        ScriptedStore store = store(true);
        LockService service = service(store);
        holdElsewhere(store, "other-process-owner-01", Duration.ofSeconds(30));
        assertThatThrownBy(() -> service.acquire(KEY, LeaseOptions.defaults()))
                .isInstanceOf(LockBusyException.class)
                .hasMessageContaining(KEY.render());
        assertThat(service.tryAcquireAll(List.of(A, KEY), LeaseOptions.defaults()))
                .isEmpty();
        assertThat(store.backend.inspect(A)).isEmpty();
        assertThatThrownBy(() -> service.acquireAll(List.of(), LeaseOptions.defaults()))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void withoutFairnessANewcomerMayTakeAFreeKeyAndEveryWaiterIsWoken() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store, b -> b.fair(false).maxPoll(Duration.ofHours(1)));
        holdElsewhere(store, "other-process-owner-01", Duration.ofMinutes(30));
        List<java.util.concurrent.Future<Long>> waiters = new java.util.ArrayList<>();
        for (String name : List.of("one", "two")) {
            waiters.add(async(() -> {
                try (Lease lease = service.acquire(
                        KEY, waiting(Duration.ofSeconds(30), Duration.ofHours(1)), LockOwner.create(name))) {
                    return lease.fence();
                }
            }));
        }
        awaitEvents(LeaseEventType.WAITING, 2);
        store.awaitCall(Op.SUBSCRIBE, KEY, 1);
        time.awaitTasksDueWithin(2, Duration.ofMinutes(31)); // both asleep until the holder's expiry
        store.backend.release(KEY, "other-process-owner-01");
        Lease newcomer = service.tryAcquire(KEY, LeaseOptions.defaults(), LockOwner.create("new"))
                .orElseThrow();
        long before = store.count(Op.ACQUIRE, KEY);
        newcomer.close(); // wakes both waiters: each tries
        store.awaitCall(Op.ACQUIRE, KEY, (int) before + 2);
        for (java.util.concurrent.Future<Long> waiter : waiters) {
            assertThat(await(waiter)).isGreaterThan(newcomer.fence());
        }
    }

    @Test
    void aRenewalConfirmedOnlyAfterTheLocalDeadlineIsALoss() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        ScriptedStore.Gate gate = new ScriptedStore.Gate();
        store.script(Op.RENEW, ScriptedStore.applyThenHang(gate));
        Lease lease =
                service.tryAcquire(KEY, lease(Duration.ofSeconds(3), true)).orElseThrow();
        CountDownLatch lost = new CountDownLatch(1);
        lease.onLost(e -> lost.countDown());
        time.advance(Duration.ofSeconds(1));
        gate.awaitEntered(); // renewed in the store until 4 s; the reply is late
        time.advanceTickerOnly(Duration.ofSeconds(2)); // the local deadline (3 s) is reached; the watch is late
        gate.open();
        assertThat(lost.await(5, TimeUnit.SECONDS)).isTrue();
        assertThat(lease.isHeld()).isFalse();
        assertThat(count(LeaseEventType.RENEWED)).isZero();
    }

    @Test
    void reenteringALeasePastItsLocalDeadlineTakesANewGrantAndTellsTheOldOneLost() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        Lease old = service.tryAcquire(KEY, lease(Duration.ofSeconds(1), false)).orElseThrow();
        CountDownLatch lost = new CountDownLatch(1);
        old.onLost(e -> lost.countDown());
        time.advanceTickerOnly(Duration.ofSeconds(1));
        try (Lease fresh =
                service.tryAcquire(KEY, lease(Duration.ofSeconds(30), false)).orElseThrow()) {
            assertThat(fresh.fence()).isGreaterThan(old.fence());
            assertThat(fresh.holdCount()).isEqualTo(1);
            assertThat(lost.await(5, TimeUnit.SECONDS)).isTrue();
        }
        old.close();
    }

    @Test
    void aCallerInterruptedWhileTheStoreHangsLeavesAndTheLateGrantIsGivenBack() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        ScriptedStore.Gate gate = new ScriptedStore.Gate();
        store.script(Op.ACQUIRE, KEY, ScriptedStore.hang(gate));
        java.util.concurrent.atomic.AtomicReference<Throwable> outcome =
                new java.util.concurrent.atomic.AtomicReference<>();
        Thread caller = new Thread(() -> {
            try {
                service.acquire(KEY, waiting(Duration.ofSeconds(30), Duration.ofHours(1)));
                outcome.set(new AssertionError("acquired although interrupted while the store hung"));
            } catch (Throwable e) {
                outcome.set(e);
            }
        });
        caller.start();
        gate.awaitEntered();
        caller.interrupt();
        caller.join(FakeTime.PATIENCE.toMillis());
        assertThat(outcome.get()).isInstanceOf(InterruptedException.class);
        gate.open(); // the grant arrives after the caller left
        awaitFree(store, KEY);
        assertThat(service.heldLeases()).isEmpty();
    }

    @Test
    void anInterruptedCallerDoesNotStartToWait() {
        ScriptedStore store = store(true);
        LockService service = service(store);
        Thread.currentThread().interrupt();
        assertThatThrownBy(() -> service.acquire(KEY, waiting(Duration.ofSeconds(30), Duration.ofSeconds(5))))
                .isInstanceOf(InterruptedException.class);
        assertThat(Thread.interrupted()).isFalse();
        assertThat(store.count(Op.ACQUIRE, KEY)).isZero();
    }

    @Test
    void theKeysSubscriptionEndsWhenItsLastWaiterLeaves() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store, b -> b.maxPoll(Duration.ofHours(1)));
        holdElsewhere(store, "other-process-owner-01", Duration.ofHours(1));
        java.util.concurrent.Future<Lease> waiter =
                async(() -> service.acquire(KEY, waiting(Duration.ofSeconds(30), Duration.ofHours(1))));
        store.awaitCall(Op.SUBSCRIBE, KEY, 1);
        awaitEvents(LeaseEventType.WAITING, 1);
        assertThat(store.release(KEY, "other-process-owner-01")).isTrue();
        await(waiter).close();
        org.awaitility.Awaitility.await()
                .atMost(FakeTime.PATIENCE)
                .pollInterval(Duration.ofMillis(1))
                .until(() -> store.subscriberCount(KEY) == 0);
    }

    @Test
    void aStoreThatCannotSubscribeLeavesWaitersPollingUntilTheHolderExpires() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store, b -> b.minPoll(Duration.ofHours(1)).maxPoll(Duration.ofHours(1)));
        holdElsewhere(store, "other-process-owner-01", Duration.ofSeconds(2));
        store.script(Op.SUBSCRIBE, KEY, ScriptedStore.fail());
        java.util.concurrent.Future<Lease> waiter =
                async(() -> service.acquire(KEY, waiting(Duration.ofSeconds(30), Duration.ofHours(1))));
        store.awaitCall(Op.SUBSCRIBE, KEY, 1);
        time.awaitTaskDueWithin(Duration.ofMillis(2001));
        time.advance(Duration.ofMillis(2001));
        await(waiter).close();
    }

    @Test
    void releaseAndForceReleaseSayWhatTheStoreFound() {
        ScriptedStore store = store(true);
        LockService service = service(store);
        Lease lease = service.tryAcquire(KEY, LeaseOptions.defaults()).orElseThrow();
        assertThat(service.heldLeases()).singleElement().satisfies(info -> {
            assertThat(info.holdCount()).isEqualTo(1);
            assertThat(info.fence()).isEqualTo(lease.fence());
            assertThat(info.leaseFor()).isEqualTo(LeaseOptions.defaults().leaseFor());
            assertThat(info.owner()).isEqualTo(LockOwner.abbreviate(lease.ownerToken()));
        });
        store.backend.forceRelease(KEY); // behind the engine's back
        lease.close();
        assertThat(events)
                .filteredOn(e -> e.type() == LeaseEventType.RELEASED)
                .singleElement()
                .satisfies(e -> assertThat(e.detail()).contains("no longer had"));
        assertThat(service.forceRelease(KEY, "ticket OPS-5")).isFalse();
        assertThat(events)
                .filteredOn(e -> e.type() == LeaseEventType.FORCE_RELEASED)
                .singleElement()
                .satisfies(e -> assertThat(e.detail()).contains("OPS-5").contains("no lease was held"));
    }

    @Test
    void aBusyBatchSaysNothingOfItIsHeld() {
        ScriptedStore store = store(true);
        LockService service = service(store);
        holdElsewhere(store, "other-process-owner-01", Duration.ofSeconds(30));
        assertThatThrownBy(() -> service.acquireAll(List.of(A, KEY), LeaseOptions.defaults()))
                .isInstanceOf(LockBusyException.class)
                .hasMessageContaining("nothing of it is held")
                .hasMessageContaining(KEY.render());
        assertThat(service.heldLeases()).isEmpty();
    }
}
