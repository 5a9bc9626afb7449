package dev.leasehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.ScriptedStore.Call;
import dev.leasehold.ScriptedStore.Gate;
import dev.leasehold.ScriptedStore.Op;
import dev.leasehold.spi.AcquireRequest;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * How a wait ends without the key: it runs out as busy also when the store gave no answer in time,
 * it leaves the store's queue on every path (without waiting for the store, never on the caller's
 * thread for a store whose leave blocks), and only a waiter's asks say that the caller waits.
 */
class WaitGiveUpTest extends EngineHarness {

    private static final Duration HOUR = Duration.ofHours(1);
    private static final Duration SECOND = Duration.ofSeconds(1);
    private static final Duration WAIT = Duration.ofSeconds(3);
    private static final String OTHER = "other-process";

    @Test
    void aWaitWhoseOnlyAskGetsNoAnswerInTimeRunsOutAsBusyAndLeavesTheQueue() throws Exception {
        ScriptedStore store = store(false);
        LockService service = service(store, b -> b.minPoll(HOUR).maxPoll(HOUR));
        Gate gate = new Gate();
        store.script(Op.ACQUIRE, KEY, ScriptedStore.hang(gate));
        Future<Lease> alone = async(() -> service.acquire(KEY, waiting(HOUR, WAIT)));
        gate.awaitEntered();
        time.awaitTaskDueWithin(WAIT);
        time.advance(WAIT);

        assertThatThrownBy(() -> await(alone))
                .isInstanceOf(LockBusyException.class)
                .hasMessageContaining(KEY.render());
        Call leave = store.awaitCall(Op.LEAVE_QUEUE, KEY, 1);
        assertThat(leave.owner())
                .as("the wait's own token leaves")
                .isEqualTo(store.requests().get(0).owner());
        gate.open(); // the late grant is given back, and the late ask leaves the queue again
        awaitFree(store, KEY);
        store.awaitCall(Op.LEAVE_QUEUE, KEY, 2);
    }

    @Test
    void aWaitWhoseAskFailsAfterTheStoreQueuedItStillLeavesTheQueue() throws Exception {
        ScriptedStore store = store(false);
        LockService service = service(store, b -> b.minPoll(HOUR).maxPoll(HOUR));
        store.script(Op.ACQUIRE, KEY, ScriptedStore.applyThenFail()); // a reply lost to a timeout
        Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, WAIT)));

        assertThatThrownBy(() -> await(waiter)).isInstanceOf(LeaseStoreException.class);
        Call leave = store.awaitCall(Op.LEAVE_QUEUE, KEY, 1);
        assertThat(leave.owner())
                .as("the token of the ask that threw leaves")
                .isEqualTo(store.requests().get(0).owner());
        awaitFree(store, KEY); // and its grant is given back
    }

    @Test
    void aWaitInterruptedWhileItsAskIsInTheStoreStillLeavesTheQueue() throws Exception {
        ScriptedStore store = store(false);
        LockService service = service(store, b -> b.minPoll(HOUR).maxPoll(HOUR));
        Gate gate = new Gate();
        store.script(Op.ACQUIRE, KEY, ScriptedStore.hang(gate));
        Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, WAIT)));
        gate.awaitEntered();
        waiter.cancel(true); // interrupts the caller while the ask has no answer yet

        Call leave = store.awaitCall(Op.LEAVE_QUEUE, KEY, 1);
        assertThat(leave.owner())
                .as("left before the ask answered")
                .isEqualTo(store.requests().get(0).owner());
        gate.open(); // the late grant is given back
        awaitFree(store, KEY);
    }

    @Test
    void aWaitEndedByCloseLeavesTheQueueOffTheCallersThread() throws Exception {
        ScriptedStore store = store(false);
        LockService service = service(store, b -> b.minPoll(SECOND).maxPoll(SECOND));
        holdElsewhere(store, OTHER, HOUR);
        Gate gate = new Gate();
        store.script(Op.LEAVE_QUEUE, KEY, ScriptedStore.hang(gate)); // a store that stopped answering
        Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
        awaitEvents(LeaseEventType.WAITING, 1);
        time.awaitTaskDueWithin(SECOND);
        service.close();
        time.advance(SECOND); // the waiter wakes to a closed service

        assertThatThrownBy(() -> await(waiter))
                .as("the caller returns while the leave hangs in the store")
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        Call leave = store.awaitCall(Op.LEAVE_QUEUE, KEY, 1);
        gate.awaitEntered(); // and it hangs there, on a thread of its own
        assertThat(leave.thread()).as("the leave's thread").doesNotStartWith("test-caller");
        gate.open();
    }

    @Test
    void closingTheServiceEndsAWaitWhoseReleaseSubscriptionHasNoAnswer() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store, b -> b.minPoll(HOUR).maxPoll(HOUR));
        holdElsewhere(store, OTHER, HOUR);
        Gate gate = new Gate();
        store.script(Op.SUBSCRIBE, KEY, ScriptedStore.hang(gate)); // a store that stopped answering
        Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
        gate.awaitEntered(); // told busy, the waiter now waits for its subscription

        service.close(); // no time passes: only the close can end this wait

        assertThatThrownBy(() -> await(waiter))
                .as("the caller returns while its subscription hangs in the store")
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        gate.open(); // the late subscription is closed again
        org.awaitility.Awaitility.await("the late subscription closed")
                .atMost(FakeTime.PATIENCE)
                .pollInterval(Duration.ofMillis(1))
                .until(() -> store.subscriberCount(KEY) == 0);
    }

    @Test
    void closingTheServiceEndsAWaitWhoseAskHasNoAnswer() throws Exception {
        ScriptedStore store = store(false);
        LockService service = service(store, b -> b.minPoll(HOUR).maxPoll(HOUR));
        holdElsewhere(store, OTHER, HOUR);
        Gate gate = new Gate();
        store.script(Op.ACQUIRE, KEY, ScriptedStore.hang(gate)); // a store that stopped answering
        Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
        gate.awaitEntered();

        service.close(); // no time passes: only the close can end this wait

        assertThatThrownBy(() -> await(waiter))
                .as("the caller returns while its ask hangs in the store")
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        store.awaitCall(Op.LEAVE_QUEUE, KEY, 1); // the ask may have taken a place: it is left
        gate.open();
    }

    @Test
    void closingTheServiceEndsEveryWaitAtOnceNotAtItsNextPoll() throws Exception {
        ScriptedStore store = store(false);
        LockService service = service(store, b -> b.fair(true).minPoll(HOUR).maxPoll(HOUR));
        holdElsewhere(store, OTHER, HOUR);
        Future<Lease> head = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
        awaitEvents(LeaseEventType.WAITING, 1);
        Future<Lease> queued = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
        awaitEvents(LeaseEventType.WAITING, 2);

        service.close(); // no time passes: only the close can end these waits

        assertThatThrownBy(() -> await(head))
                .as("the head of the queue")
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        assertThatThrownBy(() -> await(queued))
                .as("a waiter queued behind it, which never had its turn")
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        store.awaitCall(Op.LEAVE_QUEUE, KEY, 1); // the head had asked the store
    }

    @Test
    void aWaitThatGetsTheKeyDoesNotLeaveTheStoresQueue() throws Exception {
        ScriptedStore store = store(false);
        store.leaveWithoutBlocking(); // a leave would be sent from the caller's thread, before it returns
        LockService service = service(store, b -> b.minPoll(SECOND).maxPoll(SECOND));
        holdElsewhere(store, OTHER, HOUR);
        Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, WAIT)));
        awaitEvents(LeaseEventType.WAITING, 1);
        store.backend.release(KEY, OTHER);
        time.awaitTaskDueWithin(SECOND);
        time.advance(SECOND); // its next ask is granted

        Lease lease = await(waiter);
        assertThat(lease.isHeld()).isTrue();
        assertThat(store.calls())
                .as("the grant ends the wait's place in the store's queue; no leave follows it")
                .extracting(Call::op)
                .doesNotContain(Op.LEAVE_QUEUE);
        lease.close();
    }

    @Test
    void aWaitThatWakesAtItsDeadlineAsksTheStoreNoMore() throws Exception {
        ScriptedStore store = store(false);
        store.answerAsync(false); // an ask is recorded as it is sent, on the caller's thread
        LockService service = service(store, b -> b.minPoll(HOUR).maxPoll(HOUR));
        holdElsewhere(store, OTHER, HOUR);
        Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, WAIT)));
        awaitEvents(LeaseEventType.WAITING, 1);
        time.awaitTaskDueWithin(WAIT);
        time.advance(WAIT); // its alarm rings at the deadline: no time is left for another ask

        assertThatThrownBy(() -> await(waiter)).isInstanceOf(LockBusyException.class);
        assertThat(store.requests())
                .as("the first ask only, none whose answer could no longer be awaited")
                .hasSize(1);
    }

    @Test
    void aStoreWhoseLeaveDoesNotBlockIsLeftFromTheCallersThreadBeforeItReturns() throws Exception {
        ScriptedStore store = store(false);
        store.leaveWithoutBlocking();
        LockService service = service(store, b -> b.minPoll(HOUR).maxPoll(HOUR));
        holdElsewhere(store, OTHER, HOUR);
        Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, WAIT)));
        awaitEvents(LeaseEventType.WAITING, 1);
        time.awaitTaskDueWithin(WAIT);
        time.advance(WAIT);

        assertThatThrownBy(() -> await(waiter)).isInstanceOf(LockBusyException.class);
        List<Call> leaves =
                store.calls().stream().filter(c -> c.op() == Op.LEAVE_QUEUE).toList();
        assertThat(leaves).as("left before the caller returned").hasSize(1);
        assertThat(leaves.get(0).thread()).isEqualTo("test-caller");
    }

    @Test
    void aWaitThatNeverAskedTheStoreDoesNotLeaveIt() throws Exception {
        ScriptedStore store = store(false);
        LockService service = service(store, b -> b.fair(true).minPoll(HOUR).maxPoll(HOUR));
        holdElsewhere(store, OTHER, HOUR);
        Future<Lease> head = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
        awaitEvents(LeaseEventType.WAITING, 1);
        Future<Lease> second = async(() -> service.acquire(KEY, waiting(HOUR, WAIT)));
        awaitEvents(LeaseEventType.WAITING, 2);
        time.advanceTickerOnly(WAIT);
        head.cancel(true); // the turn comes to the second waiter after its deadline

        assertThatThrownBy(() -> await(second)).isInstanceOf(LockBusyException.class);
        Call leave = store.awaitCall(Op.LEAVE_QUEUE, KEY, 1);
        assertThat(leave.owner())
                .as("only the head, which asked, leaves")
                .isEqualTo(store.requests().get(0).owner());
        assertThat(store.requests()).hasSize(1);
    }

    @Test
    void onlyAWaiterAsksAsOneThatWaitsAndSaysSinceWhenItIsRefused() throws Exception {
        ScriptedStore store = store(false);
        LockService service = service(store, b -> b.minPoll(SECOND).maxPoll(SECOND));
        holdElsewhere(store, OTHER, HOUR);
        LockKey other = LockKey.of("t", "k2");

        assertThat(service.tryAcquire(KEY, lease(HOUR, false))).isEmpty();
        assertThat(service.tryAcquireAll(List.of(KEY, other), lease(HOUR, false)))
                .isEmpty();
        assertThat(store.requests()).hasSize(2).allSatisfy(r -> {
            assertThat(r.waiting()).as("a single try or a batch").isFalse();
            assertThat(r.again()).isFalse();
        });

        Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
        awaitEvents(LeaseEventType.WAITING, 1);
        time.awaitTaskDueWithin(SECOND);
        time.advance(SECOND);
        store.awaitCall(Op.ACQUIRE, KEY, 4);
        time.awaitTaskDueWithin(SECOND);
        time.advance(SECOND);
        store.awaitCall(Op.ACQUIRE, KEY, 5);

        List<AcquireRequest> asks = store.requests().subList(2, 5);
        assertThat(asks).allSatisfy(r -> assertThat(r.waiting()).isTrue());
        assertThat(asks)
                .extracting(AcquireRequest::owner)
                .containsOnly(asks.get(0).owner());
        assertThat(asks).extracting(AcquireRequest::refusedFor).containsExactly(null, SECOND, SECOND.multipliedBy(2));
        waiter.cancel(true);
    }

    @Test
    void aRequestSaysWhatItIs() {
        AcquireRequest once = AcquireRequest.once(KEY, "o", HOUR);
        assertThat(once.waiting()).isFalse();
        assertThat(once.again()).isFalse();
        AcquireRequest first = AcquireRequest.waiting(KEY, "o", HOUR, null);
        assertThat(first.waiting()).isTrue();
        assertThat(first.again()).isFalse();
        AcquireRequest again = AcquireRequest.waiting(KEY, "o", HOUR, Duration.ZERO);
        assertThat(again.again()).isTrue();
        assertThatThrownBy(() -> new AcquireRequest(KEY, "o", HOUR, false, Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("single try");
        assertThatThrownBy(() -> AcquireRequest.waiting(KEY, "o", HOUR, Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("PT-0.001S");
        assertThatThrownBy(() -> AcquireRequest.once(null, "o", HOUR))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("key");
        assertThatThrownBy(() -> AcquireRequest.once(KEY, null, HOUR))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("owner");
        assertThatThrownBy(() -> AcquireRequest.once(KEY, "o", null))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("leaseFor");
    }
}
