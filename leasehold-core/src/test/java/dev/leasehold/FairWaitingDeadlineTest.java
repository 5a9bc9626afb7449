package dev.leasehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.ScriptedStore.Gate;
import dev.leasehold.ScriptedStore.Op;
import java.time.Duration;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * How a fair wait ends at its deadline: a waiter that queued behind another waiter of the same
 * service waited out contention, so running out of time is {@link LockBusyException}, even when
 * its turn came too late for the store to answer; so is a waiter that never met contention and
 * got no answer from the store within its wait (the late grant is given back).
 */
class FairWaitingDeadlineTest extends EngineHarness {

    private static final Duration HOUR = Duration.ofHours(1);
    private static final Duration WAIT = Duration.ofSeconds(3);
    private static final String OTHER = "other-process";

    /** A holder elsewhere, waiter A at the head of the queue, waiter B (waiting {@link #WAIT}) behind it. */
    private record Queue(LockService service, Future<Lease> head, Future<Lease> second) {}

    private Queue queueBehindAHead(ScriptedStore store) {
        LockService service = service(store, b -> b.fair(true).minPoll(HOUR).maxPoll(HOUR));
        holdElsewhere(store, OTHER, HOUR.multipliedBy(3));
        Future<Lease> head = async(() -> service.acquire(KEY, waiting(HOUR, HOUR)));
        awaitEvents(LeaseEventType.WAITING, 1);
        Future<Lease> second = async(() -> service.acquire(KEY, waiting(HOUR, WAIT)));
        awaitEvents(LeaseEventType.WAITING, 2);
        assertThat(store.count(Op.ACQUIRE, KEY))
                .as("only the head asked the store")
                .isEqualTo(1);
        return new Queue(service, head, second);
    }

    @Test
    void aQueuedWaiterWhoseTurnComesAfterItsDeadlineGivesUpAsBusy() throws Exception {
        ScriptedStore store = store(false);
        Queue queue = queueBehindAHead(store);

        // The deadline of B passes (its alarm has not rung yet, as with a late timer thread) and
        // then A leaves: B's turn comes with no time left to ask the store.
        time.advanceTickerOnly(WAIT);
        queue.head().cancel(true);

        assertThatThrownBy(() -> await(queue.second()))
                .isInstanceOf(LockBusyException.class)
                .hasMessageContaining(KEY.render());
        assertThat(store.count(Op.ACQUIRE, KEY)).as("B never reached the store").isEqualTo(1);
        assertThat(count(LeaseEventType.BUSY)).isEqualTo(1);
    }

    @Test
    void aQueuedWaiterWhoseTurnComesTooLateForTheStoreToAnswerGivesUpAsBusy() throws Exception {
        ScriptedStore store = store(false);
        Gate gate = new Gate();
        Queue queue = queueBehindAHead(store);
        store.script(Op.ACQUIRE, KEY, ScriptedStore.hang(gate));

        queue.head().cancel(true); // A leaves: B's turn, and B asks the store
        gate.awaitEntered();
        time.awaitTaskDueWithin(WAIT); // B waits for the answer until its deadline
        time.advance(WAIT);

        assertThatThrownBy(() -> await(queue.second()))
                .isInstanceOf(LockBusyException.class)
                .hasMessageContaining(KEY.render());
        gate.open(); // the late answer is Busy: the other process still holds
        assertThat(store.backend.inspect(KEY).orElseThrow().ownerToken()).isEqualTo(OTHER);
    }

    @Test
    void aFairWaiterWhoseStoreGivesNoAnswerWithinTheWaitGivesUpAsBusy() throws Exception {
        ScriptedStore store = store(false);
        LockService service = service(store, b -> b.fair(true).minPoll(HOUR).maxPoll(HOUR));
        Gate gate = new Gate();
        store.script(Op.ACQUIRE, KEY, ScriptedStore.hang(gate));
        Future<Lease> alone = async(() -> service.acquire(KEY, waiting(HOUR, WAIT)));
        gate.awaitEntered();
        time.awaitTaskDueWithin(WAIT);
        time.advance(WAIT);

        assertThatThrownBy(() -> await(alone))
                .isInstanceOf(LockBusyException.class)
                .hasMessageContaining(KEY.render());
        gate.open(); // the late grant is given back
        awaitFree(store, KEY);
    }
}
