package dev.leasehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.ScriptedStore.Gate;
import dev.leasehold.ScriptedStore.Op;
import java.time.Duration;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * A waiting acquire on a store with an asynchronous client ({@link
 * dev.leasehold.spi.LeaseStore#tryAcquireAsync}): the caller waits for the answer itself, still
 * never past its deadline ({@code LeaseEngineTest.Waiting#aWaitingAcquireNeverOutlastsItsWaitWhenTheStoreHangs}),
 * and a late or failed answer's grant is given back.
 */
class AsyncAcquireTest extends EngineHarness {

    static final Duration HOUR = Duration.ofHours(1);

    @Test
    void aWaitingAcquireIsSentByTheStoresClientNotByAWorkerOfTheEngine() throws Exception {
        ScriptedStore store = store(true);
        store.answerAsync(false);
        LockService service = service(store);

        Lease lease = service.acquire(KEY, waiting(HOUR, Duration.ofSeconds(1)));

        assertThat(lease.isHeld()).isTrue();
        assertThat(store.awaitCall(Op.ACQUIRE, KEY, 1).thread()).isEqualTo(ScriptedStore.CLIENT_THREAD);
        lease.close();
        awaitFree(store, KEY);
    }

    @Test
    void aFailedAnswerIsAStoreFailureAndWhatItMayHaveGrantedIsGivenBack() {
        ScriptedStore store = store(true);
        store.answerAsync(false);
        LockService service = service(store);
        store.script(Op.ACQUIRE, KEY, ScriptedStore.applyThenFail());

        assertThatThrownBy(() -> service.acquire(KEY, waiting(HOUR, Duration.ofSeconds(1))))
                .as("the store's own failure, not the future's wrapper of it")
                .isInstanceOf(LeaseStoreException.class)
                .hasMessageContaining(KEY.render())
                .cause()
                .isInstanceOf(java.util.concurrent.TimeoutException.class)
                .hasMessage("reply lost");
        awaitFree(store, KEY);
        assertThat(((LeaseEngine) service).holderSlots()).isZero();
    }

    @Test
    void aCallRefusedBeforeSendingFailsTheAcquireAndLeavesNothingHeld() {
        ScriptedStore store = store(true);
        store.answerAsync(true);
        LockService service = service(store);

        assertThatThrownBy(() -> service.acquire(KEY, waiting(HOUR, Duration.ofSeconds(1))))
                .isInstanceOf(LeaseStoreException.class)
                .hasRootCauseInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(KEY.render());
        assertThat(store.count(Op.ACQUIRE, KEY)).isZero();
        assertThat(((LeaseEngine) service).holderSlots()).isZero();
        assertThat(service.tryAcquire(KEY, lease(HOUR, false)))
                .as("the key is free")
                .isPresent();
    }

    @Test
    void aGrantThatArrivesAfterTheServiceClosedIsGivenBackOffTheClientsThread() throws Exception {
        ScriptedStore store = store(true);
        store.answerAsync(false);
        LockService service = service(store);
        Gate gate = new Gate();
        store.always(Op.ACQUIRE, ScriptedStore.hang(gate));
        Future<Lease> waiter = async(() -> service.acquire(KEY, waiting(HOUR, Duration.ofMillis(500))));
        gate.awaitEntered();
        time.awaitTaskDueWithin(Duration.ofMillis(500));
        time.advance(Duration.ofMillis(500));
        assertThatThrownBy(() -> await(waiter)).isInstanceOf(LockBusyException.class);

        // The service closes (its workers stop) before the client brings the late grant.
        service.close();
        store.always(Op.ACQUIRE, ScriptedStore.pass());
        gate.open();

        awaitFree(store, KEY);
        assertThat(store.awaitCall(Op.RELEASE, KEY, 1).thread())
                .as("a blocking release on the client's thread would block the client that must answer it")
                .isNotEqualTo(ScriptedStore.CLIENT_THREAD);
    }
}
