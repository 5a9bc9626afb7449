package dev.leasehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.ScriptedStore.Gate;
import dev.leasehold.ScriptedStore.Op;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.Grant;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * When the engine acts: how long a waiter sleeps between two tries (the poll, the holder's expiry,
 * a subscription), when renewals fall due, when a wait ends, and that nothing is left behind
 * (holder slots, timer tasks, subscriptions) once nothing is held. On fake time: each sleep is read
 * off the timer as the alarm the engine set.
 */
class LeaseEngineScheduleTest extends EngineHarness {

    static final Duration HOUR = Duration.ofHours(1);
    static final String OTHER = "other-process-owner-01";

    private static Duration ms(long millis) {
        return Duration.ofMillis(millis);
    }

    /** The store answers busy with this remaining time, whoever holds the key. */
    static ScriptedStore.Step busyFor(Duration remaining) {
        return new ScriptedStore.Step() {
            @Override
            @SuppressWarnings("unchecked")
            public <T> T apply(ScriptedStore.Call call, Supplier<T> real) {
                return (T) new AcquireResult.Busy(remaining);
            }
        };
    }

    /**
     * Starts a 500 ms wait for KEY whose store call (scripted by the caller) hangs on the gate, lets
     * the wait run out, and returns what the caller got.
     */
    private Throwable waitRunsOutWhileTheStoreHangs(LockService service, Gate gate) {
        Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, ms(500))));
        gate.awaitEntered();
        time.awaitTaskDueWithin(ms(500));
        time.advance(ms(500));
        return org.assertj.core.api.Assertions.catchThrowable(() -> await(waiter));
    }

    private static int slots(LockService service) {
        return ((LeaseEngine) service).holderSlots();
    }

    private static int timedWork(LockService service) {
        return ((LeaseEngine) service).threads.leaseTimer().pending();
    }

    // ------------------------------------------------------------------ waiting

    @Test
    void withoutNotificationsAWaiterPollsFromMinPollDoublingUpToMaxPoll() throws Exception {
        ScriptedStore store = store(false);
        LockService service = service(store, b -> b.minPoll(ms(100)).maxPoll(ms(400)));
        holdElsewhere(store, OTHER, HOUR);
        Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
        int attempts = 1;
        // Looked for within maxPoll: the alarm of a store call in flight is at the wait's end.
        for (long sleep : List.of(100L, 200L, 400L, 400L)) {
            store.awaitCall(Op.ACQUIRE, KEY, attempts);
            assertThat(time.awaitEarliestTaskWithin(ms(400)))
                    .as("sleep after attempt %d", attempts)
                    .isEqualTo(ms(sleep));
            time.advance(ms(sleep));
            attempts++;
        }
        store.awaitCall(Op.ACQUIRE, KEY, attempts);
        assertThat(time.awaitEarliestTaskWithin(ms(400))).isEqualTo(ms(400)); // asleep again
        store.backend.release(KEY, OTHER);
        time.advance(ms(400));
        await(waiter).close();
        assertThat(store.count(Op.SUBSCRIBE, null))
                .as("a store without notifications is never asked to subscribe")
                .isZero();
    }

    @Test
    void aHeadWaiterSleepsUntilJustAfterTheHoldersLeaseEndsAndIsToldHowLongItWaited() throws Exception {
        ScriptedStore store = store(false);
        LockService service = service(store, b -> b.minPoll(HOUR).maxPoll(HOUR));
        holdElsewhere(store, OTHER, Duration.ofSeconds(2)); // expires; nobody announces it
        Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
        assertThat(time.awaitEarliestTaskWithin(ms(2001))).isEqualTo(ms(2001));
        time.advance(ms(2001));
        await(waiter).close();
        assertThat(events)
                .filteredOn(e -> e.type() == LeaseEventType.ACQUIRED)
                .singleElement()
                .satisfies(e -> assertThat(e.waited()).isEqualTo(ms(2001)));
    }

    @Test
    void aHolderTheStoreReportsAsEndingNowIsRetriedWithinAMillisecond() throws Exception {
        ScriptedStore store = store(false);
        LockService service = service(store, b -> b.minPoll(HOUR).maxPoll(HOUR));
        // A store rounding the holder's remaining time down (Redis PTTL under 1 ms says 0).
        store.script(Op.ACQUIRE, KEY, busyFor(Duration.ZERO));
        Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
        assertThat(time.awaitEarliestTaskWithin(ms(1))).isEqualTo(ms(1));
        time.advance(ms(1));
        await(waiter).close();
    }

    @Test
    void aSubscribedWaiterSubscribesOnceAndSleepsUpToMaxPoll() throws Exception {
        ScriptedStore store = store(true);
        Duration maxPoll = Duration.ofMinutes(10);
        LockService service = service(store, b -> b.minPoll(ms(100)).maxPoll(maxPoll));
        holdElsewhere(store, OTHER, HOUR);
        Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
        for (int round = 0; round < 3; round++) {
            // Releases are pushed: the poll is only the bound on a lost notice.
            assertThat(time.awaitEarliestTaskWithin(maxPoll)).isEqualTo(maxPoll);
            time.advance(maxPoll);
            store.awaitCall(Op.ACQUIRE, KEY, round + 3);
        }
        assertThat(store.count(Op.SUBSCRIBE, KEY)).isEqualTo(1);
        assertThat(store.release(KEY, OTHER)).isTrue();
        await(waiter).close();
    }

    @Test
    void theWaitersOfOneKeyShareOneReleaseSubscription() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store, b -> b.fair(true).minPoll(HOUR).maxPoll(HOUR));
        holdElsewhere(store, OTHER, HOUR);
        Future<Lease> first = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
        store.awaitCall(Op.SUBSCRIBE, KEY, 1);
        awaitEvents(LeaseEventType.WAITING, 1);
        Future<Lease> second = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
        awaitEvents(LeaseEventType.WAITING, 2);
        time.awaitTasksDueWithin(2, HOUR);
        assertThat(store.count(Op.SUBSCRIBE, KEY)).as("subscriptions").isEqualTo(1);

        assertThat(store.release(KEY, OTHER)).isTrue(); // pushed: the head takes the key
        await(first).close(); // and the next one after it
        await(second).close();
        assertThat(store.count(Op.SUBSCRIBE, KEY)).as("subscriptions").isEqualTo(1);
    }

    @Test
    void inFairModeOnlyTheHeadAsksTheStoreAndAQueuedWaiterGivesUpAtItsOwnBound() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store, b -> b.fair(true).maxPoll(HOUR));
        holdElsewhere(store, OTHER, HOUR);
        Future<Lease> head = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
        store.awaitCall(Op.ACQUIRE, KEY, 2); // before and after subscribing
        time.awaitTaskDueWithin(HOUR);
        Future<Lease> second = async(() -> service.acquire(KEY, waiting(HOUR, ms(500)), LockOwner.create("second")));
        awaitEvents(LeaseEventType.WAITING, 2);
        time.awaitTaskDueWithin(ms(500));
        assertThat(store.count(Op.ACQUIRE, KEY))
                .as("the queued waiter never asked")
                .isEqualTo(2);
        assertThat(service.tryAcquire(KEY, LeaseOptions.defaults(), LockOwner.create("newcomer")))
                .isEmpty();

        time.advance(ms(500));
        assertThatThrownBy(() -> await(second))
                .isInstanceOfSatisfying(
                        LockBusyException.class, e -> assertThat(e.waited()).isEqualTo(ms(500)));
        assertThat(events).filteredOn(e -> e.type() == LeaseEventType.BUSY).anySatisfy(e -> assertThat(e.waited())
                .isEqualTo(ms(500)));
        assertThat(head.isDone()).isFalse();

        assertThat(store.release(KEY, OTHER)).isTrue();
        await(head).close();
        assertThat(slots(service)).as("holder slots left").isZero();
    }

    @Test
    void aWaitingAcquireGivesUpAtItsBoundWhileACallOfTheSameOwnerHangsInTheStore() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        LockOwner owner = LockOwner.create("job");
        Gate gate = new Gate();
        store.script(Op.ACQUIRE, KEY, ScriptedStore.hang(gate));
        Future<Lease> hung = async(
                () -> service.tryAcquire(KEY, LeaseOptions.defaults(), owner).orElseThrow());
        gate.awaitEntered();
        try {
            Future<Lease> bounded = async(() -> service.acquire(KEY, waiting(HOUR, ms(200)), owner));
            assertThatThrownBy(() -> await(bounded))
                    .isInstanceOf(LockBusyException.class)
                    .hasMessageContaining(KEY.render());
        } finally {
            gate.open();
        }
        await(hung).close();
        assertThat(store.backend.inspect(KEY)).isEmpty();
    }

    @Test
    void withoutFairnessAReleaseWakesEveryWaiterAndEachTries() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store, b -> b.fair(false).maxPoll(HOUR));
        holdElsewhere(store, OTHER, HOUR);
        List<Future<Lease>> waiters = List.of(
                async(() -> service.acquire(KEY, waiting(HOUR, HOUR), LockOwner.create("one"))),
                async(() -> service.acquire(KEY, waiting(HOUR, HOUR), LockOwner.create("two"))));
        awaitEvents(LeaseEventType.WAITING, 2);
        store.awaitCall(Op.SUBSCRIBE, KEY, 1);
        // Both asleep: no ask in flight (one answered after the release would take the key without
        // a try of its own), and both alarms set.
        org.awaitility.Awaitility.await()
                .atMost(FakeTime.PATIENCE)
                .pollInterval(ms(1))
                .until(() -> store.idle() && time.hasTasksDueWithin(2, HOUR) && store.idle());
        int before = (int) store.count(Op.ACQUIRE, KEY);

        assertThat(store.release(KEY, OTHER)).isTrue();
        store.awaitCall(Op.ACQUIRE, KEY, before + 2); // the winner keeps the key meanwhile

        org.awaitility.Awaitility.await()
                .atMost(FakeTime.PATIENCE)
                .pollInterval(ms(1))
                .until(() -> waiters.stream().anyMatch(Future::isDone));
        Future<Lease> winner = waiters.get(0).isDone() ? waiters.get(0) : waiters.get(1);
        Future<Lease> loser = winner == waiters.get(0) ? waiters.get(1) : waiters.get(0);
        await(winner).close();
        await(loser).close();
    }

    @Test
    void aFailedReleaseStillWakesALocalWaiterWhichThenPollsFastAgain() throws Exception {
        ScriptedStore store = store(false);
        LockService service = service(store, b -> b.minPoll(ms(100)).maxPoll(ms(400)));
        Lease held = service.tryAcquire(KEY, lease(HOUR, false), LockOwner.create("holder"))
                .orElseThrow();
        Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
        for (int attempt = 1; attempt <= 3; attempt++) {
            store.awaitCall(Op.ACQUIRE, KEY, attempt + 1);
            time.advance(time.awaitEarliestTaskWithin(ms(400)));
        }
        store.awaitCall(Op.ACQUIRE, KEY, 5);
        assertThat(time.awaitEarliestTaskWithin(ms(400))).isEqualTo(ms(400));

        store.script(Op.RELEASE, KEY, ScriptedStore.fail());
        assertThatThrownBy(held::close).isInstanceOf(LeaseStoreException.class);
        store.awaitCall(Op.ACQUIRE, KEY, 6); // woken: the key is still taken in the store
        assertThat(time.awaitEarliestTaskWithin(ms(400))).isEqualTo(ms(100));

        store.backend.release(KEY, held.ownerToken());
        time.advance(ms(100));
        await(waiter).close();
    }

    @Test
    void aBatchSharesOneWaitAcrossItsKeysAndReleasesWhatItTookWhenItRunsOut() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store, b -> b.maxPoll(HOUR));
        LockKey a = LockKey.of("t", "batch", "a");
        LockKey b = LockKey.of("t", "batch", "b");
        store.backend.tryAcquire(b, OTHER, HOUR);
        // Taking the first key costs 600 ms of the batch's 1 s.
        store.script(Op.ACQUIRE, a, ScriptedStore.before(() -> time.advanceTickerOnly(ms(600))));
        Future<LeaseGroup> batch = async(() -> service.acquireAll(List.of(b, a), waiting(HOUR, Duration.ofSeconds(1))));
        awaitEvents(LeaseEventType.WAITING, 1);
        // Within 1 s: the first key's expiry watch (an hour away) is set too.
        assertThat(time.awaitEarliestTaskWithin(Duration.ofSeconds(1)))
                .as("the rest of the wait")
                .isEqualTo(ms(400));

        time.advance(ms(400));
        assertThatThrownBy(() -> await(batch))
                .isInstanceOf(LockBusyException.class)
                .hasMessageContaining(b.render());
        assertThat(store.backend.inspect(a)).as("taken first, released").isEmpty();
        assertThat(service.heldLeases()).isEmpty();
    }

    @Test
    void aBatchWhoseWaitRanOutOnItsFirstKeyAsksForNoOtherKey() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store, b -> b.maxPoll(HOUR).storeCallsOn(new CallerRuns()));
        LockKey a = LockKey.of("t", "batch", "a");
        LockKey b = LockKey.of("t", "batch", "b");
        store.backend.tryAcquire(a, OTHER, HOUR);
        store.script(
                Op.ACQUIRE,
                a,
                ScriptedStore.before(() -> {}), // the batch's one call: a is busy
                ScriptedStore.before(
                        () -> { // a's own wait: granted as the whole wait passes
                            store.backend.release(a, OTHER);
                            time.advanceTickerOnly(Duration.ofSeconds(1));
                        }));

        assertThatThrownBy(() -> service.acquireAll(List.of(a, b), waiting(HOUR, Duration.ofSeconds(1))))
                .isInstanceOf(LockBusyException.class);
        assertThat(store.calls())
                .as("asks for b: the batch's one call only, none after the wait ran out")
                .filteredOn(c -> b.equals(c.key()) && c.op() == Op.ACQUIRE)
                .hasSizeLessThanOrEqualTo(1);
        assertThat(store.backend.inspect(a)).as("a, taken first, given back").isEmpty();
        assertThat(store.backend.inspect(b)).isEmpty();
    }

    @Test
    void aSubscriptionThatArrivesAfterTheWaiterLeftIsClosed() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        holdElsewhere(store, OTHER, HOUR);
        Gate gate = new Gate();
        store.script(Op.SUBSCRIBE, KEY, ScriptedStore.hang(gate));
        assertThat(waitRunsOutWhileTheStoreHangs(service, gate)).isInstanceOf(LockBusyException.class);

        gate.open();
        store.awaitIoIdle();
        org.awaitility.Awaitility.await("the late subscription closed")
                .atMost(FakeTime.PATIENCE)
                .pollInterval(ms(1))
                .until(() -> store.subscriberCount(KEY) == 0);
    }

    @Test
    void aGrantAppliedButReportedFailedAfterTheWaiterLeftIsGivenBack() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        Gate gate = new Gate();
        store.script(Op.ACQUIRE, KEY, ScriptedStore.applyThenHang(gate));
        assertThat(waitRunsOutWhileTheStoreHangs(service, gate)).isInstanceOf(LockBusyException.class);
        assertThat(store.backend.inspect(KEY)).as("applied in the store").isPresent();

        gate.fail(); // the reply that finally comes is an error
        awaitFree(store, KEY);
        assertThat(slots(service)).isZero();
    }

    @Test
    void aLateGrantGivenBackWakesTheNextLocalWaiter() throws Exception {
        ScriptedStore store = store(false); // no notices: only the engine can wake the waiter
        LockService service = service(store, b -> b.fair(true).minPoll(HOUR).maxPoll(HOUR));
        Gate gate = new Gate();
        store.script(Op.ACQUIRE, KEY, ScriptedStore.applyThenHang(gate));
        Duration halfHour = Duration.ofMinutes(30);
        Future<Lease> first = async(() -> service.acquire(KEY, waiting(halfHour, ms(500)), LockOwner.create("first")));
        gate.awaitEntered(); // granted in the store; the reply hangs
        Future<Lease> next = async(() -> service.acquire(KEY, waiting(HOUR, HOUR), LockOwner.create("next")));
        awaitEvents(LeaseEventType.WAITING, 1);
        time.advance(ms(500));
        assertThatThrownBy(() -> await(first)).isInstanceOf(LockBusyException.class);
        store.awaitCall(Op.ACQUIRE, KEY, 2); // its turn passed on: busy, by the grant nobody has
        // Asleep until that grant's end, 30 min away (its store call's alarm is at the wait's end).
        time.awaitTaskDueWithin(Duration.ofMinutes(30));

        gate.open(); // the grant arrives after its caller left: given back
        try (Lease lease = await(next)) {
            assertThat(lease.isHeld()).isTrue();
        }
    }

    // ------------------------------------------------------------------ renewal and expiry

    @Test
    void renewalsFallDueEveryThirdOfTheLeaseAndARenewedLeaseIsLostAtItsNewDeadline() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        Lease lease =
                service.tryAcquire(KEY, lease(Duration.ofSeconds(3), true)).orElseThrow();
        CountDownLatch lost = new CountDownLatch(1);
        lease.onLost(e -> lost.countDown());
        // Within 1 s: the expiry watch (3 s) is set too, and the renewal after a renewal comes
        // after its RENEWED event.
        assertThat(time.awaitEarliestTaskWithin(Duration.ofSeconds(1)))
                .as("first renewal")
                .isEqualTo(Duration.ofSeconds(1));
        time.advance(Duration.ofSeconds(1));
        awaitEvents(LeaseEventType.RENEWED, 1);
        assertThat(time.awaitEarliestTaskWithin(Duration.ofSeconds(1)))
                .as("next renewal")
                .isEqualTo(Duration.ofSeconds(1));

        Gate gate = new Gate();
        store.always(Op.RENEW, ScriptedStore.hang(gate));
        try {
            time.advance(Duration.ofSeconds(1)); // t = 2 s: the second renewal hangs
            gate.awaitEntered();
            time.advance(ms(1999)); // t = 3.999 s: the first grant's end has passed, the renewed one's not
            assertThat(lease.isHeld()).isTrue();
            assertThat(lost.getCount()).isOne();
            time.advance(ms(1)); // t = 4 s: one lease after the renewal was sent
            assertThat(lease.isHeld()).isFalse();
            assertThat(lost.await(5, TimeUnit.SECONDS)).isTrue();
        } finally {
            gate.open();
        }
    }

    /** The store's grant or renewal, answered as valid for {@code remaining} whatever was asked. */
    static ScriptedStore.Step validFor(Duration remaining) {
        return new ScriptedStore.Step() {
            @Override
            @SuppressWarnings("unchecked")
            public <T> T apply(ScriptedStore.Call call, Supplier<T> real) {
                T answer = real.get();
                if (answer instanceof AcquireResult.Granted granted) {
                    return (T) new AcquireResult.Granted(longer(granted.grant(), remaining));
                }
                if (answer instanceof java.util.Optional<?> renewed && renewed.orElse(null) instanceof Grant grant) {
                    return (T) java.util.Optional.of(longer(grant, remaining));
                }
                return answer;
            }
        };
    }

    private static Grant longer(Grant grant, Duration remaining) {
        return new Grant(
                grant.fence(),
                remaining,
                grant.expiresAt().minus(grant.remaining()).plus(remaining));
    }

    @Test
    void aGrantTheStoreReportsAsOutlivingTheLeaseIsTrustedForTheLeaseTimeOnly() throws Exception {
        // A store that hands a waiter the key for the rest of its queue place answers with more
        // than the lease time; the holder is still told it lost the key one lease after it asked.
        ScriptedStore store = store(true);
        LockService service = service(store);
        store.script(Op.ACQUIRE, validFor(Duration.ofSeconds(10)));
        Lease lease =
                service.tryAcquire(KEY, lease(Duration.ofSeconds(1), false)).orElseThrow();
        CountDownLatch lost = new CountDownLatch(1);
        lease.onLost(e -> lost.countDown());

        time.advance(ms(999));
        assertThat(lease.isHeld()).isTrue();
        time.advance(ms(1));
        assertThat(lease.isHeld()).isFalse();
        assertThat(lost.await(5, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void aRenewalTheStoreReportsAsOutlivingTheLeaseIsTrustedForTheLeaseTimeOnly() throws Exception {
        // "valid for 30 s", sent at 1 s: lost one lease (3 s) after that, at 4 s
        renewedOnceThenCutOff(Duration.ofSeconds(30), Duration.ofSeconds(4));
    }

    @Test
    void aRenewalThatShortensTheLeaseAtTheStoreShortensItHereToo() throws Exception {
        // A renewal sets the key's expiry at the store; it does not add to it. A store that keeps
        // the key for less than the grant said (the grant was the rest of a queue place, the
        // renewal one lease) is believed at its last word: "valid for 1 s", sent at 1 s, lost at
        // 2 s although the grant said 3 s.
        renewedOnceThenCutOff(Duration.ofSeconds(1), Duration.ofSeconds(2));
    }

    @Test
    void aRenewalAnsweredWithLessThanAPeriodIsToldLostAtItsNewDeadline() throws Exception {
        // Sent at 1 s, watched by an entry a period later (2 s); answered "valid for 500 ms": the
        // entry moves to the new deadline, 1.5 s, and the loss is signalled there.
        renewedOnceThenCutOff(ms(500), ms(1500));
    }

    /**
     * A 3 s lease whose first renewal, sent at 1 s, the store answers as valid for {@code
     * answered}; every later renewal hangs. The lease is held until just before {@code lostAt} and
     * lost then.
     */
    private void renewedOnceThenCutOff(Duration answered, Duration lostAt) throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        Lease lease =
                service.tryAcquire(KEY, lease(Duration.ofSeconds(3), true)).orElseThrow();
        CountDownLatch lost = new CountDownLatch(1);
        lease.onLost(e -> lost.countDown());
        store.script(Op.RENEW, validFor(answered));
        assertThat(time.awaitEarliestTaskWithin(Duration.ofSeconds(1))).isEqualTo(Duration.ofSeconds(1));
        time.advance(Duration.ofSeconds(1)); // t = 1 s: renewed
        awaitEvents(LeaseEventType.RENEWED, 1);
        Gate gate = new Gate();
        store.always(Op.RENEW, ScriptedStore.hang(gate));
        try {
            time.advance(lostAt.minus(Duration.ofSeconds(1)).minus(ms(1)));
            assertThat(lease.isHeld()).isTrue();
            time.advance(ms(1));
            assertThat(lease.isHeld()).isFalse();
            assertThat(lost.await(5, TimeUnit.SECONDS)).isTrue();
        } finally {
            gate.open();
        }
    }

    @Test
    void theNextRenewalFallsDueAPeriodAfterTheLastWasSentOrHalfAPeriodAfterASlowAnswer() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        service.tryAcquire(KEY, lease(Duration.ofSeconds(3), true)).orElseThrow();
        Gate first = new Gate();
        Gate second = new Gate();
        store.script(Op.RENEW, ScriptedStore.hang(first), ScriptedStore.hang(second));

        time.advance(Duration.ofSeconds(1)); // t = 1 s: the renewal is sent and hangs
        first.awaitEntered();
        time.advance(ms(300));
        first.open(); // answered at 1.3 s: the next one falls due at 2 s, a period after 1 s
        awaitEvents(LeaseEventType.RENEWED, 1);
        assertThat(time.awaitEarliestTaskWithin(Duration.ofSeconds(1))).isEqualTo(ms(700));

        time.advance(ms(700)); // t = 2 s: sent, hangs
        second.awaitEntered();
        time.advance(ms(600));
        second.open(); // answered at 2.6 s, over half a period late: the next one at 3.1 s
        awaitEvents(LeaseEventType.RENEWED, 2);
        time.advance(ms(400)); // t = 3 s, a period after the last one fell due: not yet
        assertThat(time.awaitEarliestTaskWithin(Duration.ofSeconds(1))).isEqualTo(ms(100));
        time.advance(ms(100)); // t = 3.1 s
        store.awaitCall(Op.RENEW, KEY, 3);
    }

    @Test
    void aRenewalAnsweredInTimeCostsTheTimerOneEntry() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        Lease lease =
                service.tryAcquire(KEY, lease(Duration.ofSeconds(3), true)).orElseThrow();
        LeaseTimer timer = ((LeaseEngine) service).threads.leaseTimer();
        long before = timer.scheduled();
        for (int renewal = 1; renewal <= 3; renewal++) {
            time.advance(Duration.ofSeconds(1));
            awaitEvents(LeaseEventType.RENEWED, renewal); // sent after the entry was decided
        }
        // one entry per renewal, set when it was sent: none at its deadline, none at its answer
        assertThat(timer.scheduled() - before).isEqualTo(3);
        assertThat(timer.pending()).isOne();
        assertThat(lease.isHeld()).isTrue();
    }

    // ------------------------------------------------------------------ leases on one alarm

    @Test
    void leasesSharingOneAlarmAreEachRenewedAtTheirOwnThirdAndLostAtTheirOwnDeadline() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        LockKey later = LockKey.of("t", "later");
        LockKey sooner = LockKey.of("t", "sooner");
        LockKey hung = LockKey.of("t", "hung");
        Gate gate = new Gate();
        store.script(Op.RENEW, hung, ScriptedStore.hang(gate));
        // t = 0: the first lease sets the alarm for its renewal at 10 s
        Lease first =
                service.tryAcquire(later, lease(Duration.ofSeconds(30), true)).orElseThrow();
        time.advance(Duration.ofSeconds(1));
        // t = 1 s: two 3 s leases, renewal due at 2 s, before the alarm that is set
        Lease renewed =
                service.tryAcquire(sooner, lease(Duration.ofSeconds(3), true)).orElseThrow();
        Lease lost =
                service.tryAcquire(hung, lease(Duration.ofSeconds(3), true)).orElseThrow();
        CountDownLatch lossSignal = new CountDownLatch(1);
        lost.onLost(cause -> lossSignal.countDown());
        try {
            time.advance(Duration.ofSeconds(1)); // t = 2 s
            awaitEvents(LeaseEventType.RENEWED, 1);
            gate.awaitEntered();
            time.advance(Duration.ofSeconds(1)); // t = 3 s: the next third of the renewed lease
            awaitEvents(LeaseEventType.RENEWED, 2);
            assertThat(store.count(Op.RENEW, sooner)).isEqualTo(2);
            time.advance(ms(999));
            assertThat(lost.isHeld()).isTrue();
            time.advance(ms(1)); // t = 4 s: the hung lease's local deadline
            assertThat(lost.isHeld()).isFalse();
            assertThat(lossSignal.await(5, TimeUnit.SECONDS))
                    .as("onLost of the hung lease")
                    .isTrue();
            assertThat(renewed.isHeld()).as("renewed at 3 s, held until 6 s").isTrue();
            assertThat(store.count(Op.RENEW, later))
                    .as("the 30 s lease before its third")
                    .isZero();
            renewed.close();
            long renewalsBeforeRelease = store.count(Op.RENEW, sooner);
            time.advance(Duration.ofSeconds(6)); // t = 10 s
            store.awaitCall(Op.RENEW, later, 1);
            assertThat(first.isHeld()).isTrue();
            assertThat(store.count(Op.RENEW, sooner))
                    .as("none after its release")
                    .isEqualTo(renewalsBeforeRelease);
        } finally {
            gate.open();
            first.close();
            lost.close();
        }
    }

    // ------------------------------------------------------------------ nothing left behind

    @Test
    void nothingIsLeftBehindOnceNothingIsHeld() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        holdElsewhere(store, OTHER, HOUR);
        for (int i = 0; i < 3; i++) {
            assertThat(service.tryAcquire(KEY, LeaseOptions.defaults())).isEmpty();
        }
        assertThat(slots(service)).as("after busy tries").isZero();

        LockKey free = LockKey.of("t", "free");
        Lease lease =
                service.tryAcquire(free, lease(Duration.ofSeconds(30), true)).orElseThrow();
        Lease inner =
                service.tryAcquire(free, lease(Duration.ofSeconds(30), true)).orElseThrow();
        assertThat(slots(service)).isOne();
        assertThat(timedWork(service))
                .as("one entry per lease: its next renewal, which comes before its deadline")
                .isOne();
        assertThat(time.pendingTasks()).as("one alarm for both").isOne();
        inner.close();
        lease.close();
        assertThat(slots(service)).as("after release").isZero();
        assertThat(timedWork(service)).as("timed work after release").isZero();
        // The alarm stays set until it rings (the next lease would set it again); then nothing is left.
        time.advance(Duration.ofMinutes(1));
        assertThat(time.pendingTasks()).as("timer tasks once the alarm rang").isZero();
        assertThat(store.count(Op.RENEW, free))
                .as("renewals of the released lease")
                .isZero();

        Gate gate = new Gate();
        store.script(Op.ACQUIRE, KEY, ScriptedStore.hang(gate));
        assertThat(waitRunsOutWhileTheStoreHangs(service, gate))
                .isInstanceOf(LockBusyException.class)
                .hasMessageContaining("gave up after waiting PT0.5S");
        gate.open();
        assertThat(slots(service)).as("after an unanswered wait").isZero();
    }

    @Test
    void closingTheServiceEndsItsSubscriptionAndLeavesAGivenTimerRunning() {
        ScriptedStore store = store(true);
        LockService service = service(store);
        Lease a = service.tryAcquire(LockKey.of("t", "a"), LeaseOptions.defaults())
                .orElseThrow();
        Lease b = service.tryAcquire(LockKey.of("t", "b"), LeaseOptions.defaults())
                .orElseThrow();
        assertThat(store.count(Op.SUBSCRIBE_FORCE, null))
                .as("one store-wide subscription")
                .isEqualTo(1);
        assertThat(store.forceSubscriberCount()).isOne();

        service.close();
        assertThat(store.forceSubscriberCount()).as("subscriptions after close").isZero();
        assertThat(a.isHeld()).isFalse();
        assertThat(b.isHeld()).isFalse();
        assertThat(time.pendingTasks()).as("timer tasks after close").isZero();
        assertThat(time.scheduler().isShutdown()).as("the caller's timer").isFalse();
    }

    @Test
    void aCallerInterruptedWhileTheForceReleaseWatchSubscribesLeavesThatSubscriptionInFlight() throws Exception {
        ScriptedStore store = store(true);
        store.leaveWithoutBlocking(); // the interrupted wait leaves the store's queue before it returns
        LockService service = service(store);
        Gate gate = new Gate();
        store.script(Op.SUBSCRIBE_FORCE, ScriptedStore.hang(gate));
        Future<Lease> first = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
        gate.awaitEntered();
        first.cancel(true); // interrupted while the watch's subscription is in the store
        store.awaitCall(Op.LEAVE_QUEUE, KEY, 1); // the interrupted caller is done

        assertThat(service.tryAcquire(KEY, lease(HOUR, false))).isPresent();
        assertThat(store.count(Op.SUBSCRIBE_FORCE, null))
                .as("the subscription in flight still counts: no second one")
                .isEqualTo(1);
        gate.open(); // it arrives late, and is the watch's subscription
    }

    @Test
    void aWaitThatRunsOutWhileTheForceReleaseWatchSubscribesLeavesThatSubscriptionInFlight() throws Exception {
        ScriptedStore store = store(true);
        store.answerAsync(false); // an ask is recorded as it is sent, on the caller's thread
        LockService service = service(store);
        Gate gate = new Gate();
        store.script(Op.SUBSCRIBE_FORCE, ScriptedStore.hang(gate));
        Future<Lease> first = async(() -> service.acquire(KEY, waiting(HOUR, Duration.ofMillis(500))));
        gate.awaitEntered();
        time.awaitTaskDueWithin(Duration.ofMillis(500));
        time.advance(Duration.ofMillis(500)); // the wait runs out while the subscription is in the store
        assertThatThrownBy(() -> await(first)).isInstanceOf(LockBusyException.class);
        assertThat(store.requests()).as("asks sent after the wait ran out").isEmpty();
        assertThat(((LeaseEngine) service).holderSlots())
                .as("holder slots left")
                .isZero();

        assertThat(service.tryAcquire(LockKey.of("t", "k2"), lease(HOUR, false)))
                .isPresent();
        assertThat(store.count(Op.SUBSCRIBE_FORCE, null))
                .as("the subscription in flight still counts: no second one")
                .isEqualTo(1);
        gate.open(); // it arrives late, and is the watch's subscription
    }

    @Test
    void aRenewalConfirmedLateCarriesItsLagFromWhenItFellDue() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        // The renewal falls due at 10 s (a third of the lease); the store answers it 2 s later.
        Gate gate = new Gate();
        store.script(Op.RENEW, KEY, ScriptedStore.hang(gate));
        Lease lease =
                service.tryAcquire(KEY, lease(Duration.ofSeconds(30), true)).orElseThrow();
        time.advance(Duration.ofSeconds(10));
        gate.awaitEntered();
        // Moved on only once advance() returned: it sets the clock to its target when it ends.
        time.advanceTickerOnly(Duration.ofSeconds(2));
        gate.open();
        awaitEvents(LeaseEventType.RENEWED, 1);
        assertThat(events)
                .filteredOn(e -> e.type() == LeaseEventType.RENEWED)
                .singleElement()
                .satisfies(e -> assertThat(e.waited()).as("lag").isEqualTo(Duration.ofSeconds(2)));
        lease.close();
    }

    @Test
    void aBatchWhoseWaitRunsOutWhileTheForceReleaseWatchSubscribesAsksNothing() throws Exception {
        ScriptedStore store = store(true);
        // Store calls on the caller's thread: an ask sent after the wait ran out would be answered
        // before the caller looks at the clock again, so its grant would be returned.
        CallerRuns calls = new CallerRuns();
        LockService service = service(store, b -> b.storeCallsOn(calls));
        LockKey a = LockKey.of("t", "batch", "a");
        LockKey b = LockKey.of("t", "batch", "b");
        store.script(Op.SUBSCRIBE_FORCE, ScriptedStore.before(() -> time.advanceTickerOnly(ms(500))));

        assertThatThrownBy(() -> service.acquireAll(List.of(a, b), waiting(HOUR, Duration.ofMillis(500))))
                .isInstanceOf(LockBusyException.class);
        assertThat(store.calls())
                .as("the subscription ran on the given executor, and nothing was asked after it")
                .extracting(ScriptedStore.Call::op)
                .containsExactly(Op.SUBSCRIBE_FORCE);
        assertThat(store.calls().get(0).thread())
                .isEqualTo(Thread.currentThread().getName());
        assertThat(store.backend.inspect(a)).isEmpty();
        assertThat(store.backend.inspect(b)).isEmpty();
        assertThat(((LeaseEngine) service).holderSlots())
                .as("holder slots left")
                .isZero();
        service.close();
        assertThat(calls.shutDown)
                .as("the given executor shut down by the service")
                .isFalse();
    }

    /** Runs every task on the thread that submits it. */
    private static final class CallerRuns extends java.util.concurrent.AbstractExecutorService {
        volatile boolean shutDown;

        @Override
        public void execute(Runnable command) {
            command.run();
        }

        @Override
        public void shutdown() {
            shutDown = true;
        }

        @Override
        public List<Runnable> shutdownNow() {
            shutDown = true;
            return List.of();
        }

        @Override
        public boolean isShutdown() {
            return false;
        }

        @Override
        public boolean isTerminated() {
            return false;
        }

        @Override
        public boolean awaitTermination(long timeout, java.util.concurrent.TimeUnit unit) {
            return false;
        }
    }

    @Test
    void aFailedForceReleaseSubscriptionIsTriedAgainAtTheNextGrantButAStoreWithoutThemIsNotAskedAgain() {
        ScriptedStore.Step unsupported = new ScriptedStore.Step() {
            @Override
            public <T> T apply(ScriptedStore.Call call, Supplier<T> real) {
                throw new UnsupportedOperationException("no force-release notices here");
            }
        };
        for (boolean failed : List.of(true, false)) {
            ScriptedStore store = store(true);
            LockService service = service(store);
            store.script(Op.SUBSCRIBE_FORCE, failed ? ScriptedStore.fail() : unsupported);
            for (String name : List.of("a", "b")) {
                service.tryAcquire(LockKey.of("t", name), LeaseOptions.defaults())
                        .orElseThrow()
                        .close();
            }
            assertThat(store.count(Op.SUBSCRIBE_FORCE, null))
                    .as("failed: %s", failed)
                    .isEqualTo(failed ? 2 : 1);
            assertThat(store.forceSubscriberCount()).isEqualTo(failed ? 1 : 0);
        }
    }

    @Test
    void aServiceWithItsOwnTimerRunsOnDaemonThreads() throws Exception {
        LockService service = LockService.builder(store(true)).build();
        try (Lease lease = service.tryAcquire(KEY, LeaseOptions.defaults()).orElseThrow()) {
            assertThat(lease.isHeld()).isTrue();
            assertThat(Thread.getAllStackTraces().keySet())
                    .filteredOn(t -> t.getName().startsWith("leasehold-"))
                    .isNotEmpty()
                    .allMatch(Thread::isDaemon, "daemon: a JVM that never closes the service still exits");
        } finally {
            service.close();
        }
    }
}
