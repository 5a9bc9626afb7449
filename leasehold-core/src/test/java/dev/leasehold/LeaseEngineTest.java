package dev.leasehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.ScriptedStore.Gate;
import dev.leasehold.ScriptedStore.Op;
import dev.leasehold.spi.ReleaseNotice;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The engine on fake time over a scripted store: each test is one guarantee, and no test sleeps.
 * Time moves only through {@link FakeTime#advance}; other threads are waited for through the
 * store's call log, events and latches, each bounded.
 */
class LeaseEngineTest extends EngineHarness {

    static final Duration HOUR = Duration.ofHours(1);
    static final String OTHER = "other-process-owner-01";

    @Nested
    class StoreCallbacks {

        @Test
        void aReleaseNoticeDeliveredDuringASubscribeNeverStallsTheStoresIoThread() throws Exception {
            ScriptedStore store = store(true);
            LockService service = service(store, b -> b.maxPoll(HOUR));
            long fence = holdElsewhere(store, OTHER, HOUR);
            // A release published before an earlier unsubscribe took effect reaches the new
            // subscription while its SUBSCRIBE is still waiting for its reply.
            store.script(
                    Op.SUBSCRIBE,
                    KEY,
                    ScriptedStore.before(() -> store.publish(new ReleaseNotice(KEY.render(), fence - 1, false))));
            Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));

            store.awaitCall(Op.SUBSCRIBE, KEY, 1);
            store.awaitIoIdle();

            assertThat(store.release(KEY, OTHER)).isTrue();
            try (Lease lease = await(waiter)) {
                assertThat(lease.fence()).isGreaterThan(fence);
            }
        }

        @Test
        void manySubscriptionsAndReleasesOnOneIoThreadNeverStall() throws Exception {
            ScriptedStore store = store(true);
            LockService service = service(store, b -> b.maxPoll(HOUR));
            LeaseOptions options = waiting(HOUR, HOUR);
            for (int round = 0; round < 20; round++) {
                long fence = holdElsewhere(store, OTHER, HOUR);
                store.script(
                        Op.SUBSCRIBE,
                        KEY,
                        ScriptedStore.before(() -> store.publish(new ReleaseNotice(KEY.render(), fence, false))));
                List<Future<Long>> waiters = new ArrayList<>();
                for (String name : List.of("a", "b")) {
                    waiters.add(async(() -> {
                        try (Lease lease = service.acquire(KEY, options, LockOwner.create(name))) {
                            return lease.fence();
                        }
                    }));
                }
                store.awaitCall(Op.SUBSCRIBE, KEY, round + 1);
                store.awaitIoIdle();
                assertThat(store.release(KEY, OTHER)).isTrue();
                for (Future<Long> waiter : waiters) {
                    assertThat(await(waiter)).isGreaterThan(fence);
                }
            }
            assertThat(store.backend.inspect(KEY)).isEmpty();
        }
    }

    @Nested
    class LossSignal {

        @Test
        void onLostFiresAtTheLocalExpiryWhileEveryRenewalHangs() throws Exception {
            ScriptedStore store = store(true);
            LockService service = service(store);
            Gate gate = new Gate();
            store.always(Op.RENEW, ScriptedStore.hang(gate));
            List<Lease> leases = new ArrayList<>();
            List<LeaseLostException> causes = new CopyOnWriteArrayList<>();
            CountDownLatch lost = new CountDownLatch(6);
            for (int i = 0; i < 6; i++) {
                Lease lease = service.tryAcquire(LockKey.of("t", "six", "k" + i), lease(Duration.ofSeconds(3), true))
                        .orElseThrow();
                lease.onLost(cause -> {
                    causes.add(cause);
                    lost.countDown();
                });
                leases.add(lease);
            }
            try {
                time.advance(Duration.ofSeconds(1)); // renewals fall due and hang
                gate.awaitEntered();
                time.advance(Duration.ofMillis(1999));
                assertThat(leases).allMatch(Lease::isHeld);

                time.advance(Duration.ofMillis(1)); // the local deadline
                assertThat(leases).noneMatch(Lease::isHeld);
                assertThat(lost.await(5, TimeUnit.SECONDS))
                        .as("onLost of all six")
                        .isTrue();
                assertThat(causes).hasSize(6).allSatisfy(cause -> assertThat(cause.getMessage())
                        .contains("no renewal was confirmed"));
            } finally {
                gate.open();
            }
        }

        @Test
        void aHungRenewalIsAbandonedAtTheLeaseDeadlineSoRenewalsOfOtherLeasesGoOn() throws Exception {
            ScriptedStore store = store(true);
            LockService service = service(store);
            Gate gate = new Gate();
            store.always(Op.RENEW, ScriptedStore.hang(gate));
            CountDownLatch lost = new CountDownLatch(16);
            for (int i = 0; i < 16; i++) {
                service.tryAcquire(LockKey.of("t", "hung", "k" + i), lease(Duration.ofSeconds(3), true))
                        .orElseThrow()
                        .onLost(e -> lost.countDown());
            }
            time.advance(Duration.ofSeconds(1));
            gate.awaitEntered();
            time.advance(Duration.ofSeconds(2));
            assertThat(lost.await(5, TimeUnit.SECONDS)).isTrue();

            store.always(Op.RENEW, ScriptedStore.pass());
            try (Lease fresh =
                    service.tryAcquire(KEY, lease(Duration.ofSeconds(3), true)).orElseThrow()) {
                time.advance(Duration.ofSeconds(1));
                awaitEvents(LeaseEventType.RENEWED, 1);
                assertThat(fresh.isHeld()).isTrue();
            } finally {
                gate.open();
            }
        }

        @Test
        void closeNeverWaitsForARenewalInFlightAndTheLateReplySeesReleased() throws Exception {
            ScriptedStore store = store(true);
            LockService service = service(store);
            Gate gate = new Gate();
            store.script(Op.RENEW, ScriptedStore.hang(gate));
            Lease lease =
                    service.tryAcquire(KEY, lease(Duration.ofSeconds(3), true)).orElseThrow();
            AtomicReference<LeaseLostException> lost = new AtomicReference<>();
            lease.onLost(lost::set);
            time.advance(Duration.ofSeconds(1));
            gate.awaitEntered();

            lease.close(); // on the test thread: must not wait for the hung renewal
            assertThat(store.backend.inspect(KEY)).as("released in the store").isEmpty();

            gate.open();
            store.awaitCall(Op.RELEASE, KEY, 1);
            time.advance(Duration.ofSeconds(10));
            assertThat(store.count(Op.RENEW, KEY)).as("renewals after release").isEqualTo(1);
            assertThat(lost.get()).isNull();
            assertThat(lease.isHeld()).isFalse();
            assertThat(count(LeaseEventType.LOST)).isZero();
            assertThat(count(LeaseEventType.RENEWED)).isZero();
        }

        @Test
        void theLostCauseIsNeverNullEvenWhenTheCallbackRacesTheLoss() throws Exception {
            ScriptedStore store = store(true);
            LockService service = service(store);
            for (int i = 0; i < 200; i++) {
                LockKey key = LockKey.of("t", "race", "k" + i);
                Lease lease = service.tryAcquire(key, lease(Duration.ofSeconds(1), false))
                        .orElseThrow();
                AtomicReference<Object> seen = new AtomicReference<>("not run");
                CountDownLatch ran = new CountDownLatch(1);
                Future<?> registrar = async(() -> {
                    lease.onLost(cause -> {
                        seen.set(cause);
                        ran.countDown();
                    });
                    return null;
                });
                time.advance(Duration.ofSeconds(1));
                await(registrar);
                assertThat(ran.await(5, TimeUnit.SECONDS)).isTrue();
                assertThat(seen.get()).as("cause of loss %d", i).isInstanceOf(LeaseLostException.class);
                lease.close();
            }
        }

        @Test
        void isHeldTurnsFalseAtTheLocalDeadlineEvenBeforeTheExpiryWatchRuns() {
            ScriptedStore store = store(true);
            LockService service = service(store);
            Lease lease =
                    service.tryAcquire(KEY, lease(Duration.ofSeconds(1), false)).orElseThrow();
            time.advanceTickerOnly(Duration.ofMillis(999));
            assertThat(lease.isHeld()).isTrue();
            time.advanceTickerOnly(Duration.ofMillis(1));
            assertThat(lease.isHeld()).isFalse();
            assertThatThrownBy(lease::assertHeld).isInstanceOf(LeaseLostException.class);
        }

        @Test
        void aRenewalThatFindsTheKeyTakenOverSignalsLossAtOnce() throws Exception {
            ScriptedStore store = store(true);
            LockService service = service(store);
            Lease lease =
                    service.tryAcquire(KEY, lease(Duration.ofSeconds(3), true)).orElseThrow();
            CountDownLatch lost = new CountDownLatch(1);
            AtomicReference<LeaseLostException> cause = new AtomicReference<>();
            lease.onLost(e -> {
                cause.set(e);
                lost.countDown();
            });
            // Behind the engine's back, and without any notice: only the renewal can tell.
            store.backend.forceRelease(KEY);
            holdElsewhere(store, OTHER, HOUR);

            time.advance(Duration.ofSeconds(1));
            assertThat(lost.await(5, TimeUnit.SECONDS)).isTrue();
            assertThat(lease.isHeld()).isFalse();
            assertThat(cause.get().getMessage()).contains("no longer holds");
            lease.close();
            assertThat(store.backend.inspect(KEY).orElseThrow().ownerToken()).isEqualTo(OTHER);
        }

        @Test
        void renewalFailuresEndInLossAtTheDeadline() throws Exception {
            ScriptedStore store = store(true);
            LockService service = service(store);
            store.always(Op.RENEW, ScriptedStore.fail());
            Lease lease =
                    service.tryAcquire(KEY, lease(Duration.ofSeconds(3), true)).orElseThrow();
            CountDownLatch lost = new CountDownLatch(1);
            lease.onLost(e -> lost.countDown());
            time.advance(Duration.ofSeconds(1));
            awaitEvents(LeaseEventType.RENEWAL_FAILED, 1);
            time.advance(Duration.ofSeconds(1));
            awaitEvents(LeaseEventType.RENEWAL_FAILED, 2);
            assertThat(lease.isHeld()).isTrue();
            time.advance(Duration.ofSeconds(1));
            assertThat(lost.await(5, TimeUnit.SECONDS)).isTrue();
            assertThat(lease.isHeld()).isFalse();
        }

        @Test
        void aRenewedLeaseStaysHeldPastItsFirstLease() throws Exception {
            ScriptedStore store = store(true);
            LockService service = service(store);
            try (Lease lease =
                    service.tryAcquire(KEY, lease(Duration.ofSeconds(3), true)).orElseThrow()) {
                for (int i = 1; i <= 6; i++) {
                    time.advance(Duration.ofSeconds(1));
                    awaitEvents(LeaseEventType.RENEWED, i);
                }
                assertThat(lease.isHeld()).isTrue();
                assertThat(count(LeaseEventType.LOST)).isZero();
            }
        }

        @Test
        void aGrantShorterThanItsLeaseTimeIsRenewedBeforeItsDeadline() throws Exception {
            ScriptedStore store = store(true);
            LockService service = service(store);
            // the store grants 2 s of a 30 s lease (as a store handing a waiter the key for the rest
            // of its queue place does); the first renewal at lease/3 = 10 s would come too late
            store.script(Op.ACQUIRE, new ScriptedStore.Step() {
                @Override
                @SuppressWarnings("unchecked")
                public <T> T apply(ScriptedStore.Call call, java.util.function.Supplier<T> real) {
                    T value = real.get();
                    if (value instanceof dev.leasehold.spi.AcquireResult.Granted granted) {
                        dev.leasehold.spi.Grant g = granted.grant();
                        return (T) new dev.leasehold.spi.AcquireResult.Granted(new dev.leasehold.spi.Grant(
                                g.fence(),
                                Duration.ofSeconds(2),
                                g.expiresAt().minus(g.remaining()).plusSeconds(2)));
                    }
                    return value;
                }
            });
            try (Lease lease =
                    service.tryAcquire(KEY, lease(Duration.ofSeconds(30), true)).orElseThrow()) {
                time.advance(Duration.ofMillis(1100));
                awaitEvents(LeaseEventType.RENEWED, 1);
                time.advance(Duration.ofSeconds(2));
                assertThat(lease.isHeld()).isTrue();
                assertThat(count(LeaseEventType.LOST)).isZero();
            }
        }

        @Test
        void aReleasedLeaseIsNeverRenewed() {
            ScriptedStore store = store(true);
            LockService service = service(store);
            Lease lease =
                    service.tryAcquire(KEY, lease(Duration.ofSeconds(3), true)).orElseThrow();
            lease.close();
            time.advance(Duration.ofSeconds(10));
            assertThat(store.count(Op.RENEW, null)).isZero();
            assertThat(store.backend.inspect(KEY)).isEmpty();
        }
    }

    @Nested
    class Batches {

        @Test
        void aBatchReleasesAGrantTheStoreAppliedButReportedAsFailed() throws Exception {
            for (Duration wait : List.of(Duration.ZERO, Duration.ofSeconds(5))) {
                ScriptedStore store = store(true);
                LockService service = service(store);
                LockKey a = LockKey.of("t", "batch", "a");
                LockKey b = LockKey.of("t", "batch", "b");
                LockKey c = LockKey.of("t", "batch", "c");
                store.script(Op.ACQUIRE, b, ScriptedStore.applyThenFail());

                assertThatThrownBy(() -> service.acquireAll(List.of(c, b, a), waiting(HOUR, wait)))
                        .isInstanceOf(LeaseStoreException.class)
                        .hasMessageContaining(b.render());

                assertThat(store.backend.inspect(a))
                        .as("taken before the failure, wait %s", wait)
                        .isEmpty();
                awaitFree(store, b); // the ambiguous grant
                assertThat(store.count(Op.ACQUIRE, c)).as("never tried").isZero();
            }
        }

        @Test
        void anErrorFromTheStoreStillReleasesWhatTheBatchTook() {
            ScriptedStore store = store(true);
            LockService service = service(store);
            LockKey a = LockKey.of("t", "batch", "a");
            LockKey b = LockKey.of("t", "batch", "b");
            store.script(Op.ACQUIRE, b, ScriptedStore.error(new AssertionError("thrown by the store")));

            assertThatThrownBy(() -> service.acquireAll(List.of(a, b), lease(HOUR, true)))
                    .isInstanceOf(AssertionError.class);

            assertThat(store.backend.inspect(a)).isEmpty();
            assertThat(service.heldLeases()).isEmpty();
        }

        @Test
        void aBatchReleasesWhatItTookWhenAStoreCallFails() {
            ScriptedStore store = store(true);
            LockService service = service(store);
            LockKey a = LockKey.of("t", "batch", "a");
            LockKey b = LockKey.of("t", "batch", "b");
            store.script(Op.ACQUIRE, b, ScriptedStore.fail());

            assertThatThrownBy(() -> service.acquireAll(List.of(a, b), lease(HOUR, true)))
                    .isInstanceOf(LeaseStoreException.class);

            assertThat(store.backend.inspect(a)).isEmpty();
            assertThat(service.heldLeases()).isEmpty();
            time.advance(Duration.ofMinutes(30));
            assertThat(store.count(Op.RENEW, null)).isZero();
        }
    }

    @Nested
    class ForceRelease {

        @Test
        void aForceReleaseInAnotherProcessIsSeenByTheHolderWithoutWaitingForARenewal() throws Exception {
            ScriptedStore store = store(true);
            LockService holderSide = service(store);
            LockService operatorSide = service(store);
            Lease lease = holderSide.tryAcquire(KEY, LeaseOptions.defaults()).orElseThrow();
            CountDownLatch lost = new CountDownLatch(1);
            AtomicReference<LeaseLostException> cause = new AtomicReference<>();
            lease.onLost(e -> {
                cause.set(e);
                lost.countDown();
            });

            assertThat(operatorSide.forceRelease(KEY, "ticket OPS-2")).isTrue();

            assertThat(lost.await(5, TimeUnit.SECONDS))
                    .as("lost without time passing")
                    .isTrue();
            assertThat(lease.isHeld()).isFalse();
            assertThat(cause.get().getMessage()).contains("force-released");
            assertThat(store.count(Op.RENEW, null)).isZero();
        }

        @Test
        void aForceReleaseNeverMarksANewerLocalHolderLost() throws Exception {
            ScriptedStore store = store(true);
            LockService service = service(store);
            Lease first = service.tryAcquire(KEY, LeaseOptions.defaults(), LockOwner.create("first"))
                    .orElseThrow();
            Gate gate = new Gate();
            store.script(Op.FORCE_RELEASE, KEY, ScriptedStore.applyThenHang(gate));
            Future<Boolean> forced = async(() -> service.forceRelease(KEY, "ticket OPS-3"));
            gate.awaitEntered(); // removed in the store; the call has not returned yet

            Lease second = service.tryAcquire(KEY, LeaseOptions.defaults(), LockOwner.create("second"))
                    .orElseThrow();
            AtomicReference<LeaseLostException> secondLost = new AtomicReference<>();
            second.onLost(secondLost::set);
            gate.open();
            assertThat(await(forced)).isTrue();
            store.awaitIoIdle();

            assertThat(first.isHeld()).isFalse();
            assertThat(second.fence()).isGreaterThan(first.fence());
            assertThat(second.isHeld()).as("the newer holder").isTrue();
            assertThat(secondLost.get()).isNull();
            second.close();
            first.close();
        }

        @Test
        void aForceNoticeForAnOlderFenceLeavesTheCurrentHolderAlone() throws Exception {
            ScriptedStore store = store(true);
            LockService service = service(store);
            LockKey other = LockKey.of("t", "k2");
            Lease current = service.tryAcquire(KEY, LeaseOptions.defaults()).orElseThrow();
            Lease elsewhere = service.tryAcquire(other, LeaseOptions.defaults()).orElseThrow();
            CountDownLatch elsewhereLost = new CountDownLatch(1);
            elsewhere.onLost(e -> elsewhereLost.countDown());

            // A late notice about the key's previous grant, then a true one about another key:
            // notices are handled in order, so once the second is seen the first was too.
            store.publish(new ReleaseNotice(KEY.render(), current.fence() - 1, true));
            store.publish(new ReleaseNotice(other.render(), elsewhere.fence(), true));
            assertThat(elsewhereLost.await(5, TimeUnit.SECONDS)).isTrue();

            assertThat(current.isHeld()).isTrue();
            current.close();
            elsewhere.close();
        }
    }

    @Nested
    class Waiting {

        @Test
        void aReleaseInAnotherProcessWakesTheWaiter() throws Exception {
            ScriptedStore store = store(true);
            LockService service = service(store, b -> b.maxPoll(HOUR));
            holdElsewhere(store, OTHER, HOUR);
            Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
            awaitEvents(LeaseEventType.WAITING, 1);
            time.awaitTaskDueWithin(HOUR);

            assertThat(store.release(KEY, OTHER)).isTrue();
            await(waiter).close();
        }

        @Test
        void aLocalReleaseOrForceReleaseWakesALocalWaiter() throws Exception {
            for (boolean forced : List.of(false, true)) {
                ScriptedStore store = store(false);
                LockService service = service(store, b -> b.minPoll(HOUR).maxPoll(HOUR));
                Lease held = service.tryAcquire(KEY, lease(HOUR, false), LockOwner.create("holder"))
                        .orElseThrow();
                Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
                awaitEvents(LeaseEventType.WAITING, forced ? 2 : 1);
                time.awaitTaskDueWithin(HOUR);

                if (forced) {
                    assertThat(service.forceRelease(KEY, "ticket OPS-6")).isTrue();
                    assertThat(held.isHeld()).isFalse();
                } else {
                    held.close();
                }
                try (Lease lease = await(waiter)) {
                    assertThat(lease.fence()).as("forced: %s", forced).isGreaterThan(held.fence());
                }
                if (forced) {
                    held.close(); // after the waiter was served: only the force-release woke it
                }
            }
        }

        @Test
        void aReleaseJustBeforeTheSubscriptionTakesEffectIsNotMissed() throws Exception {
            ScriptedStore store = store(true);
            LockService service = service(store, b -> b.maxPoll(HOUR));
            holdElsewhere(store, OTHER, HOUR);
            // Released silently after the first try and before the subscription is active.
            store.script(Op.SUBSCRIBE, KEY, ScriptedStore.before(() -> store.backend.release(KEY, OTHER)));
            Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
            await(waiter).close();
        }

        @Test
        void aHeadWaiterRetriesWhenTheHoldersLeaseEnds() throws Exception {
            ScriptedStore store = store(true);
            LockService service = service(store, b -> b.maxPoll(HOUR));
            holdElsewhere(store, OTHER, Duration.ofSeconds(2)); // expires; nobody announces it
            Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
            awaitEvents(LeaseEventType.WAITING, 1);
            time.awaitTaskDueWithin(Duration.ofMillis(2001));

            time.advance(Duration.ofMillis(2001));
            await(waiter).close();
        }

        @Test
        void aHeadWaiterThatLeavesPassesItsTurn() throws Exception {
            ScriptedStore store = store(false);
            LockService service = service(store, b -> b.fair(true).minPoll(HOUR).maxPoll(HOUR));
            holdElsewhere(store, OTHER, HOUR.multipliedBy(3));
            Future<Lease> head = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
            awaitEvents(LeaseEventType.WAITING, 1);
            Future<Lease> second = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
            awaitEvents(LeaseEventType.WAITING, 2);
            long attempts = store.count(Op.ACQUIRE, KEY);

            store.backend.release(KEY, OTHER); // silently: no store notifies here
            head.cancel(true); // the head leaves without the key
            try (Lease lease = await(second)) {
                assertThat(lease.isHeld()).isTrue();
            }
            assertThat(store.count(Op.ACQUIRE, KEY)).isGreaterThan(attempts);
        }

        @Test
        void aNewcomerDoesNotOvertakeAQueuedWaiter() throws Exception {
            ScriptedStore store = store(false);
            Duration poll = Duration.ofMinutes(30);
            LockService service = service(store, b -> b.fair(true).minPoll(poll).maxPoll(poll));
            holdElsewhere(store, OTHER, HOUR.multipliedBy(3));
            Future<Lease> queued = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
            awaitEvents(LeaseEventType.WAITING, 1);
            time.awaitTaskDueWithin(poll);
            long attempts = store.count(Op.ACQUIRE, KEY);
            store.backend.release(KEY, OTHER);

            Optional<Lease> newcomer = service.tryAcquire(KEY, LeaseOptions.defaults(), LockOwner.create("new"));
            assertThat(newcomer).isEmpty();
            assertThat(store.count(Op.ACQUIRE, KEY))
                    .as("no store call for the newcomer")
                    .isEqualTo(attempts);

            time.advance(poll);
            await(queued).close();
        }

        @Test
        void waitersInOneProcessAreServedInArrivalOrder() throws Exception {
            ScriptedStore store = store(true);
            LockService service = service(store, b -> b.fair(true).maxPoll(HOUR));
            holdElsewhere(store, OTHER, HOUR);
            List<Integer> served = new CopyOnWriteArrayList<>();
            List<Future<?>> waiters = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                int index = i;
                waiters.add(async(() -> {
                    try (Lease lease = service.acquire(KEY, waiting(HOUR, HOUR))) {
                        assertThat(lease.isHeld()).isTrue();
                        served.add(index);
                    }
                    return null;
                }));
                awaitEvents(LeaseEventType.WAITING, i + 1);
            }
            assertThat(store.release(KEY, OTHER)).isTrue();
            for (Future<?> waiter : waiters) {
                await(waiter);
            }
            assertThat(served).containsExactly(0, 1, 2, 3, 4);
        }

        /** On a worker of the engine, or (asynchronous client) answered on the store's client thread. */
        @org.junit.jupiter.params.ParameterizedTest(name = "asynchronous client: {0}")
        @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
        void aWaitingAcquireNeverOutlastsItsWaitWhenTheStoreHangs(boolean asynchronous) throws Exception {
            ScriptedStore store = store(true);
            if (asynchronous) {
                store.answerAsync(false);
            }
            LockService service = service(store);
            Gate gate = new Gate();
            store.always(Op.ACQUIRE, ScriptedStore.hang(gate));
            Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, Duration.ofMillis(500))));
            gate.awaitEntered();
            time.awaitTaskDueWithin(Duration.ofMillis(500));

            time.advance(Duration.ofMillis(500));
            assertThatThrownBy(() -> await(waiter))
                    .isInstanceOf(LockBusyException.class)
                    .hasMessageContaining(KEY.render());

            // The grant that arrives after the waiter left is given back, never on the client's thread.
            store.always(Op.ACQUIRE, ScriptedStore.pass());
            gate.open();
            awaitFree(store, KEY);
            assertThat(store.awaitCall(Op.RELEASE, KEY, 1).thread()).isNotEqualTo(ScriptedStore.CLIENT_THREAD);
            if (asynchronous) {
                assertThat(store.awaitCall(Op.ACQUIRE, KEY, 1).thread()).isEqualTo(ScriptedStore.CLIENT_THREAD);
            }
        }

        @Test
        void aWaiterThatSawTheKeyBusyGivesUpAsBusyWhenTheStoreStopsAnswering() throws Exception {
            ScriptedStore store = store(false);
            LockService service =
                    service(store, b -> b.minPoll(Duration.ofMillis(100)).maxPoll(Duration.ofMillis(100)));
            holdElsewhere(store, OTHER, HOUR);
            Gate gate = new Gate();
            store.script(Op.ACQUIRE, KEY, ScriptedStore.pass(), ScriptedStore.pass(), ScriptedStore.hang(gate));
            Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, Duration.ofMillis(500))));
            awaitEvents(LeaseEventType.WAITING, 1);
            for (int attempt = 2; attempt <= 3; attempt++) {
                time.awaitTaskDueWithin(Duration.ofMillis(100)); // the poll
                time.advance(Duration.ofMillis(100));
                store.awaitCall(Op.ACQUIRE, KEY, attempt);
            }
            gate.awaitEntered();
            time.advance(Duration.ofMillis(500));
            assertThatThrownBy(() -> await(waiter)).isInstanceOf(LockBusyException.class);
            gate.open();
        }
    }
}
