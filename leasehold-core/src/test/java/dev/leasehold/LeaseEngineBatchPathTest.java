package dev.leasehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.leasehold.LeaseEngineOneCallBatchTest.BatchStore;
import dev.leasehold.ScriptedStore.Call;
import dev.leasehold.ScriptedStore.Gate;
import dev.leasehold.ScriptedStore.Op;
import dev.leasehold.ScriptedStore.Step;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.Grant;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * The batch path of the engine, seen from the caller: all or nothing, every key it took given back
 * when it fails or is busy, the holds of re-entered keys restored, its waits bounded, late grants
 * given back, and a lost key signalled on its own. Fake time and a scripted store; no sleeps.
 */
class LeaseEngineBatchPathTest extends EngineHarness {

    private static final Duration HOUR = Duration.ofHours(1);
    private static final String OTHER = "another-process";
    private static final LockKey A = LockKey.of("t", "path", "a");
    private static final LockKey B = LockKey.of("t", "path", "b");
    private static final LockKey C = LockKey.of("t", "path", "c");

    private static int holderSlots(LockService service) {
        return ((LeaseEngine) service).holderSlots();
    }

    private static void holdElsewhere(ScriptedStore store, LockKey key) {
        assertThat(store.backend.tryAcquire(key, OTHER, HOUR))
                .isInstanceOf(dev.leasehold.spi.AcquireResult.Granted.class);
    }

    private static void assertFree(ScriptedStore store, LockKey... keys) {
        for (LockKey key : keys) {
            awaitFree(store, key);
        }
    }

    // ------------------------------------------------------------------ refused and re-entered

    @Test
    void aBusyBatchHoldsNothingAndLeavesNoHolderSlotBehind() {
        ScriptedStore store = store(true);
        LockService service = service(store);
        holdElsewhere(store, C);

        assertThat(service.tryAcquireAll(List.of(C, B, A), lease(HOUR, true))).isEmpty();
        assertThatThrownBy(() -> service.acquireAll(List.of(A, B, C), lease(HOUR, true)))
                .isInstanceOf(LockBusyException.class)
                .hasMessageContaining(C.toString());

        assertThat(store.backend.inspect(A)).isEmpty();
        assertThat(store.backend.inspect(B)).isEmpty();
        assertThat(service.heldLeases()).isEmpty();
        assertThat(holderSlots(service)).as("slots after two refused batches").isZero();
    }

    @Test
    void aSingleAcquireWhoseStoreCallFailsLeavesNoHolderSlotBehind() {
        ScriptedStore store = store(true);
        LockService service = service(store);
        store.script(Op.ACQUIRE, A, ScriptedStore.fail(), ScriptedStore.fail());

        assertThatThrownBy(() -> service.tryAcquire(A, lease(HOUR, true))).isInstanceOf(LeaseStoreException.class);
        assertThatThrownBy(() -> service.acquire(A, lease(HOUR, true).withWait(Duration.ofSeconds(1))))
                .isInstanceOf(LeaseStoreException.class);

        assertThat(service.heldLeases()).isEmpty();
        assertThat(holderSlots(service)).as("slots after two failed acquires").isZero();
    }

    @Test
    void aReenteredKeyKeepsItsExtraHoldOnlyWhileTheBatchIsHeld() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        Lease first = service.tryAcquire(A, lease(HOUR, true)).orElseThrow();

        try (LeaseGroup group =
                service.tryAcquireAll(List.of(A, B), lease(HOUR, true)).orElseThrow()) {
            assertThat(group.leases().get(0).fence()).isEqualTo(first.fence());
            assertThat(first.holdCount()).isEqualTo(2);
            assertThat(count(LeaseEventType.REENTERED)).isOne();
        }
        assertThat(first.holdCount()).isOne();

        holdElsewhere(store, C);
        assertThat(service.tryAcquireAll(List.of(A, B, C), lease(HOUR, true))).isEmpty();
        assertThat(first.holdCount())
                .as("the hold the refused batch added is given back")
                .isOne();
        assertThat(first.isHeld()).isTrue();
        assertThat(count(LeaseEventType.REENTERED))
                .as("a refused batch re-enters nothing")
                .isOne();
        assertThat(store.backend.inspect(B)).isEmpty();

        first.close();
        assertThat(store.backend.inspect(A)).isEmpty();
        assertThat(holderSlots(service)).isZero();
    }

    @Test
    void aFairBatchNeverBargesPastAWaiterAndTakesItsKeysOnceNobodyWaits() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store, b -> b.fair(true));
        holdElsewhere(store, B);
        // The waiter's first try is refused; its next one (once subscribed) is held in the store
        // while B is freed behind the engine's back: B is free, and a waiter is queued for it.
        Gate gate = new Gate();
        store.script(Op.ACQUIRE, B, ScriptedStore.pass(), ScriptedStore.hang(gate));
        Future<Lease> waiter = async(() -> service.acquire(B, waiting(HOUR, HOUR), LockOwner.create("w")));
        gate.awaitEntered();
        store.backend.release(B, OTHER);
        long acquiresBefore = store.count(Op.ACQUIRE, null);

        assertThat(service.tryAcquireAll(List.of(A, B), lease(HOUR, true))).isEmpty();
        assertThat(store.count(Op.ACQUIRE, null)).as("no store call").isEqualTo(acquiresBefore);
        assertThat(store.backend.inspect(A)).isEmpty();

        gate.open();
        await(waiter).close();
        try (LeaseGroup group =
                service.tryAcquireAll(List.of(A, B), lease(HOUR, true)).orElseThrow()) {
            assertThat(group.isHeld()).isTrue();
        }
    }

    // ------------------------------------------------------------------ interrupts and force releases

    @Test
    void anInterruptedCallerIsRefusedBeforeAWaitingBatchAsksTheStore() {
        ScriptedStore store = store(true);
        LockService service = service(store);

        Thread.currentThread().interrupt();
        Throwable thrown =
                catchThrowable(() -> service.acquireAll(List.of(A, B), waiting(HOUR, Duration.ofSeconds(5))));

        assertThat(thrown).isInstanceOf(InterruptedException.class);
        assertThat(store.count(Op.ACQUIRE, null)).isZero();
        assertThat(store.backend.inspect(A)).isEmpty();
    }

    @Test
    void aBatchWithoutAWaitIgnoresAPendingInterruptAndKeepsIt() {
        ScriptedStore store = store(false); // no force-release watch to subscribe first
        LockService service = service(store);

        Thread.currentThread().interrupt();
        Optional<LeaseGroup> group = service.tryAcquireAll(List.of(A, B), lease(HOUR, true));
        boolean kept = Thread.interrupted();

        assertThat(group).isPresent();
        assertThat(kept).as("interrupt flag kept").isTrue();
        group.orElseThrow().close();
    }

    @Test
    void aBatchInterruptedWhileTheForceWatchSubscribesHoldsNothingAndKeepsTheFlag() throws Exception {
        assertInterruptedWhileSubscribing(service -> {
            Optional<LeaseGroup> group = service.tryAcquireAll(List.of(A, B), lease(HOUR, true));
            assertThat(group).isEmpty();
        });
        assertInterruptedWhileSubscribing(service -> assertThatThrownBy(() -> service.tryAcquire(A, lease(HOUR, true)))
                .isInstanceOf(LeaseStoreException.class));
    }

    private void assertInterruptedWhileSubscribing(java.util.function.Consumer<LockService> call) throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        Gate gate = new Gate();
        store.script(Op.SUBSCRIBE_FORCE, ScriptedStore.hang(gate));
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicBoolean flagKept = new AtomicBoolean();
        Thread caller = new Thread(() -> {
            try {
                call.accept(service);
            } catch (Throwable e) {
                failure.set(e);
            }
            flagKept.set(Thread.currentThread().isInterrupted());
        });
        caller.setDaemon(true);
        caller.start();
        gate.awaitEntered();
        caller.interrupt();
        caller.join(FakeTime.PATIENCE.toMillis());

        assertThat(caller.isAlive()).as("the caller still waits").isFalse();
        assertThat(failure.get()).isNull();
        assertThat(flagKept).as("interrupt flag kept").isTrue();
        assertThat(store.count(Op.ACQUIRE, null)).isZero();

        service.close(); // the subscription the caller left arrives after the close: it is closed at once
        gate.open();
        org.awaitility.Awaitility.await("the late force-release subscription closed")
                .atMost(FakeTime.PATIENCE)
                .pollInterval(Duration.ofMillis(1))
                .until(() -> store.forceSubscriberCount() == 0);
    }

    @Test
    void aForceReleaseOfOneKeyOfAFirstBatchIsSignalledWithoutWaitingForARenewal() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        LockService operator = service(store);

        try (LeaseGroup group =
                service.tryAcquireAll(List.of(A, B), lease(HOUR, true)).orElseThrow()) {
            assertThat(operator.forceRelease(A, "ticket OPS-7")).isTrue();
            awaitEvents(LeaseEventType.LOST, 1);

            assertThat(group.leases().get(0).isHeld()).isFalse();
            assertThat(group.leases().get(1).isHeld()).isTrue();
            assertThat(store.count(Op.RENEW, null)).isZero();
        }
        assertThat(store.backend.inspect(B)).isEmpty();
    }

    // ------------------------------------------------------------------ bounded waits

    @Test
    void aBoundedBatchIsBoundedWhileTheHoldersOwnCallOnAKeyIsInTheStore() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        LockOwner owner = LockOwner.create("o");
        Gate gate = new Gate();
        store.script(Op.ACQUIRE, A, ScriptedStore.hang(gate));
        Future<Optional<Lease>> single = async(() -> service.tryAcquire(A, lease(HOUR, true), owner));
        gate.awaitEntered(); // the single acquire holds A's slot for this owner

        Future<LeaseGroup> batch =
                async(() -> service.acquireAll(List.of(A, B), waiting(HOUR, Duration.ofMillis(20)), owner));
        assertThatThrownBy(() -> await(batch))
                .isInstanceOf(LockBusyException.class)
                .hasMessageContaining("nothing of it is held");
        assertThat(store.count(Op.ACQUIRE, B)).as("never asked").isZero();

        gate.open();
        try (Lease lease = await(single).orElseThrow()) {
            assertThat(lease.holdCount()).isOne();
            assertThat(holderSlots(service)).isOne();
        }
        assertThat(holderSlots(service)).isZero();
    }

    @Test
    void aBatchCallThatHangsPastTheWaitGivesItsLateGrantsBack() throws Exception {
        assertTheOutcomeOfALateBatchCallIsGivenBack(ScriptedStore::hang);
    }

    @Test
    void aBatchCallThatHangsPastTheWaitAndThenFailsIsGivenBackToo() throws Exception {
        assertTheOutcomeOfALateBatchCallIsGivenBack(ScriptedStore::hangThenApplyThenFail);
    }

    /** The one batch call hangs until the wait of 2 s is over; whatever it did in the store is undone. */
    private void assertTheOutcomeOfALateBatchCallIsGivenBack(java.util.function.Function<Gate, Step> late)
            throws Exception {
        BatchStore store = new BatchStore(store(true));
        LockService service = batchService(store);
        Gate gate = new Gate();
        store.steps.add(late.apply(gate));

        Future<LeaseGroup> batch = async(() -> service.acquireAll(List.of(A, B), waiting(HOUR, Duration.ofSeconds(2))));
        gate.awaitEntered();
        time.awaitTaskDueWithin(Duration.ofSeconds(2));
        time.advance(Duration.ofSeconds(3));
        assertThatThrownBy(() -> await(batch))
                .isInstanceOf(LockBusyException.class)
                .hasMessageContaining("nothing of it is held");

        gate.open();
        assertFree(store.scripted, A, B);
        assertThat(holderSlots(service)).isZero();
        assertThat(service.heldLeases()).isEmpty();
    }

    private LockService batchService(BatchStore store) {
        LockService service = LockService.builder(store)
                .ticker(time)
                .scheduler(time.scheduler())
                .listener(events::add)
                .build();
        closeAfter.add(service);
        return service;
    }

    private final List<LockService> closeAfter = new java.util.concurrent.CopyOnWriteArrayList<>();

    @org.junit.jupiter.api.AfterEach
    void closeBatchServices() {
        closeAfter.forEach(LockService::close);
    }

    // ------------------------------------------------------------------ the key-by-key wait

    @Test
    void aWaitingBatchReentersWhatTheHolderHoldsAndTakesTheRestOnceReleased() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        LockOwner owner = LockOwner.create("o");
        Lease first = service.acquire(A, lease(HOUR, true), owner);
        holdElsewhere(store, B);

        Future<LeaseGroup> batch = async(() -> service.acquireAll(List.of(A, B), waiting(HOUR, HOUR), owner));
        store.awaitCall(Op.SUBSCRIBE, B, 1);
        store.awaitIoIdle();
        assertThat(store.release(B, OTHER)).isTrue();

        try (LeaseGroup group = await(batch)) {
            assertThat(group.leases()).extracting(Lease::key).containsExactly(A, B);
            assertThat(group.leases().get(0).fence()).isEqualTo(first.fence());
            assertThat(first.holdCount()).isEqualTo(2);
        }
        assertThat(first.holdCount()).isOne();
        assertThat(store.backend.inspect(B)).isEmpty();
        first.close();
    }

    @Test
    void aWaitingBatchThatFailsGivesBackWhatItTookAndTheHoldsItAdded() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        LockOwner owner = LockOwner.create("o");
        Lease first = service.tryAcquire(A, lease(HOUR, true), owner).orElseThrow();
        holdElsewhere(store, C);
        // C: busy in the batch's first attempt, then its key-by-key acquire fails, and so does the
        // release of B that the failure sets off
        store.script(Op.ACQUIRE, C, ScriptedStore.pass(), new Step() {
            @Override
            public <T> T apply(Call call, Supplier<T> real) {
                store.script(Op.RELEASE, B, ScriptedStore.fail());
                throw new LeaseStoreException("acquire", C.render(), new RuntimeException("scripted failure"));
            }
        });

        Throwable thrown =
                catchThrowable(() -> service.acquireAll(List.of(A, B, C), waiting(HOUR, Duration.ofSeconds(5)), owner));

        assertThat(thrown).isInstanceOf(LeaseStoreException.class).hasMessageContaining("scripted failure");
        assertThat(thrown.getSuppressed())
                .as("the failed release of B")
                .singleElement()
                .isInstanceOf(LeaseStoreException.class);
        assertThat(first.holdCount()).as("the re-entered hold is given back").isOne();
        assertThat(first.isHeld()).isTrue();
        assertThat(store.count(Op.RELEASE, B)).as("B's release was tried").isGreaterThanOrEqualTo(1);
        assertThat(store.backend.inspect(C).orElseThrow().ownerToken()).isEqualTo(OTHER);
        assertThat(service.heldLeases()).extracting(HeldLeaseInfo::key).containsExactly(A);
        first.close();
    }

    // ------------------------------------------------------------------ a grant that cannot become a lease

    /** A timer whose {@code schedule} throws on its n-th call from now (not a rejection: a broken timer). */
    private static final class BreakingTimer {
        final IllegalStateException broken = new IllegalStateException("the timer is broken");
        final AtomicInteger callsUntilBreak = new AtomicInteger(-1);
        final ScheduledExecutorService timer;

        BreakingTimer(ScheduledExecutorService delegate) {
            timer = (ScheduledExecutorService) Proxy.newProxyInstance(
                    ScheduledExecutorService.class.getClassLoader(),
                    new Class<?>[] {ScheduledExecutorService.class},
                    (proxy, method, args) -> {
                        if (method.getName().equals("schedule") && callsUntilBreak.decrementAndGet() == 0) {
                            throw broken;
                        }
                        try {
                            return method.invoke(delegate, args);
                        } catch (InvocationTargetException e) {
                            throw e.getCause();
                        }
                    });
        }

        void breakOnCall(int n) {
            callsUntilBreak.set(n);
        }
    }

    private LockService serviceOn(ScriptedStore store, BreakingTimer timer) {
        LockService service = LockService.builder(store)
                .ticker(time)
                .scheduler(timer.timer)
                .listener(events::add)
                .build();
        closeAfter.add(service);
        return service;
    }

    @Test
    void aBatchWhoseFirstGrantCannotBecomeALeaseGivesEveryGrantBack() {
        assertABrokenTimerLeavesNothingOfTheBatch(1);
    }

    @Test
    void aBatchWhoseSecondGrantCannotBecomeALeaseReleasesTheFirstAndGivesTheRestBack() {
        assertABrokenTimerLeavesNothingOfTheBatch(2);
    }

    /**
     * The timer breaks at the n-th lease of a batch of three. The leases share one alarm, set again
     * only for work due before it: the store grants each key a minute less than the one before, so
     * every lease's expiry watch sets the alarm.
     */
    private void assertABrokenTimerLeavesNothingOfTheBatch(int nthLease) {
        ScriptedStore store = store(false);
        store.script(Op.ACQUIRE, B, shortenedBy(Duration.ofMinutes(1)));
        store.script(Op.ACQUIRE, C, shortenedBy(Duration.ofMinutes(2)));
        BreakingTimer timer = new BreakingTimer(time.scheduler());
        LockService service = serviceOn(store, timer);
        timer.breakOnCall(nthLease);

        Throwable thrown = catchThrowable(() -> service.acquireAll(List.of(A, B, C), lease(HOUR, false)));

        assertThat(thrown).isSameAs(timer.broken);
        assertThat(thrown.getSuppressed()).isEmpty();
        assertThat(count(LeaseEventType.ACQUIRED)).as("leases made").isEqualTo(nthLease - 1);
        assertThat(count(LeaseEventType.RELEASED)).as("and released").isEqualTo(nthLease - 1);
        assertFree(store, A, B, C);
        assertThat(service.heldLeases()).isEmpty();
        assertThat(holderSlots(service)).isZero();
    }

    /** The real grant, valid for {@code by} less than the store gave. */
    private static Step shortenedBy(Duration by) {
        return new Step() {
            @Override
            @SuppressWarnings("unchecked")
            public <T> T apply(Call call, Supplier<T> real) {
                T value = real.get();
                if (value instanceof AcquireResult.Granted granted) {
                    Grant g = granted.grant();
                    return (T) new AcquireResult.Granted(new Grant(
                            g.fence(), g.remaining().minus(by), g.expiresAt().minus(by)));
                }
                return value;
            }
        };
    }

    @Test
    void aSingleGrantThatCannotBecomeALeaseIsGivenBack() {
        ScriptedStore store = store(false);
        BreakingTimer timer = new BreakingTimer(time.scheduler());
        LockService service = serviceOn(store, timer);
        timer.breakOnCall(1);

        assertThatThrownBy(() -> service.tryAcquire(A, lease(HOUR, false))).isSameAs(timer.broken);

        assertFree(store, A);
        assertThat(service.heldLeases()).isEmpty();
        assertThat(holderSlots(service)).isZero();
    }

    // ------------------------------------------------------------------ a single key, ambiguous

    @Test
    void aSingleAcquireThatFailsAfterItWasAppliedLeavesTheKeyFree() throws Exception {
        for (Duration wait : List.of(Duration.ZERO, Duration.ofSeconds(5))) {
            ScriptedStore store = store(true);
            LockService service = service(store);
            store.script(Op.ACQUIRE, A, ScriptedStore.applyThenFail());

            assertThatThrownBy(() -> service.acquire(A, waiting(HOUR, wait)))
                    .as("wait %s", wait)
                    .isInstanceOf(LeaseStoreException.class);

            awaitFree(store, A);
            assertThat(service.heldLeases()).isEmpty();
        }
    }
}
