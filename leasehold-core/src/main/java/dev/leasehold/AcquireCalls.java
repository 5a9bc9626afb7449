package dev.leasehold;

import dev.leasehold.spi.AcquireRequest;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.BatchAcquireResult;
import dev.leasehold.spi.LeaseStore;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The store's acquire calls, made so that no grant is left behind: a call that fails may have
 * been applied, and a call whose answer arrives after its caller gave up may have granted; either
 * way the grant is released, best effort and never on the thread that brought the answer. With a
 * deadline the caller waits for the answer until then only. Thread-safe.
 */
final class AcquireCalls {

    private static final Logger log = LoggerFactory.getLogger(AcquireCalls.class);

    private final LeaseStore store;
    private final EngineThreads threads;
    private final LocalWaitQueues queues;
    private final BooleanSupplier closed;

    AcquireCalls(LeaseStore store, EngineThreads threads, LocalWaitQueues queues, BooleanSupplier closed) {
        this.store = store;
        this.threads = threads;
        this.queues = queues;
        this.closed = closed;
    }

    /**
     * One key's acquire; with a finite {@code deadline} its answer is waited for until then, and
     * null is returned if none came in time. An answer after the deadline is handled where it
     * arrives: a grant (or a failure, of unknown outcome) is given back, and the waiter leaves the
     * store's queue again, as the ask may have taken a place after the wait's own leave was sent.
     */
    AcquireResult acquire(AcquireRequest request, long deadline) throws InterruptedException {
        LockKey key = request.key();
        String grantToken = request.owner();
        List<LockKey> keys = List.of(key);
        if (deadline == Long.MAX_VALUE) {
            return callNow(() -> store.tryAcquire(request), keys, grantToken);
        }
        Consumer<StoreCall<AcquireResult>> orphaned = this.<AcquireResult>giveBackIfGranted(
                        AcquireResult.Granted.class, keys, grantToken)
                .andThen(orphan -> threads.offCaller(() -> leaveQuietly(key, grantToken)));
        StoreCall<AcquireResult> call;
        if (store.acquiresAsynchronously()) {
            CompletionStage<AcquireResult> answer;
            try {
                answer = store.tryAcquireAsync(request);
            } catch (RuntimeException | Error e) {
                answer = CompletableFuture.failedFuture(e);
            }
            call = StoreCall.of(answer, orphaned);
        } else {
            call = StoreCall.start(threads.calls(), () -> store.tryAcquire(request), orphaned);
        }
        return answerBy(call, deadline, keys, grantToken);
    }

    /** A batch's acquire in one store call, as {@link #acquire}: null if no answer came in time. */
    BatchAcquireResult acquireAll(List<LockKey> keys, String grantToken, Duration leaseFor, long deadline)
            throws InterruptedException {
        Supplier<BatchAcquireResult> body = () -> checkedBatch(keys, store.tryAcquireAll(keys, grantToken, leaseFor));
        if (deadline == Long.MAX_VALUE) {
            return callNow(body, keys, grantToken);
        }
        StoreCall<BatchAcquireResult> call = StoreCall.start(
                threads.calls(), body::get, giveBackIfGranted(BatchAcquireResult.Granted.class, keys, grantToken));
        return answerBy(call, deadline, keys, grantToken);
    }

    /** The call on this thread; if it fails, whatever it may have granted is given back. */
    private <T> T callNow(Supplier<T> body, List<LockKey> keys, String grantToken) {
        try {
            return body.get();
        } catch (RuntimeException | Error e) {
            keys.forEach(key -> releaseAmbiguous(key, grantToken));
            throw storeFailure("acquire", keys.get(0), e);
        }
    }

    /**
     * The call's answer by the deadline, or null (also once the service closed: its close wakes
     * the caller); a failure gives back what it may have granted.
     */
    private <T> T answerBy(StoreCall<T> call, long deadline, List<LockKey> keys, String grantToken)
            throws InterruptedException {
        if (!call.await(threads.parking(), deadline, closed)) {
            return null;
        }
        if (call.failure() != null) {
            keys.forEach(key -> releaseAmbiguous(key, grantToken));
            throw storeFailure("acquire", keys.get(0), call.failure());
        }
        return call.value();
    }

    /** For an answer nobody waits for any more: granted, or failed with an unknown outcome, it goes back. */
    private <T> Consumer<StoreCall<T>> giveBackIfGranted(Class<?> granted, List<LockKey> keys, String grantToken) {
        return orphan -> {
            if (orphan.failure() != null || granted.isInstance(orphan.value())) {
                keys.forEach(key -> releaseAmbiguous(key, grantToken));
            }
        };
    }

    /** A grant per key asked for, or the store broke its contract (then nothing of it is kept). */
    private static BatchAcquireResult checkedBatch(List<LockKey> keys, BatchAcquireResult result) {
        if (result instanceof BatchAcquireResult.Granted granted
                && granted.grants().size() != keys.size()) {
            throw new IllegalStateException(
                    "the store granted " + granted.grants().size() + " of a batch of " + keys.size() + " keys");
        }
        return Objects.requireNonNull(result, "the store answered a batch with nothing (null)");
    }

    /** The store may have applied an acquire that failed: release its grant, best effort, off this thread. */
    void releaseAmbiguous(LockKey key, String grantToken) {
        // Closed or not, never on this thread, which may be the store client's I/O thread (a
        // blocking release there waits for a reply only that thread can read).
        threads.offCaller(() -> releaseQuietly(key, grantToken));
    }

    private void releaseQuietly(LockKey key, String grantToken) {
        try {
            if (store.release(key, grantToken)) {
                log.info("released a grant of {} whose acquire reported a failure or came too late", key);
                queues.wake(key);
            }
        } catch (RuntimeException e) {
            log.warn("could not release a grant of {} of unknown outcome; it ends at its expiry", key, e);
        }
    }

    /**
     * A wait that asked the store ends without the key: the store drops its place ({@link
     * LeaseStore#leaveQueue}), so that a release does not hand the key to this waiter, and a key
     * already handed to it goes on. The caller never waits for it: a store whose leave does not
     * block is called on this thread (what the caller sends next then follows the leave), any
     * other on a worker.
     */
    void leaveStoreQueue(LockKey key, String waitToken) {
        if (store.leavesQueueWithoutBlocking()) {
            leaveQuietly(key, waitToken);
        } else {
            threads.offCaller(() -> leaveQuietly(key, waitToken));
        }
    }

    private void leaveQuietly(LockKey key, String waitToken) {
        try {
            store.leaveQueue(key, waitToken);
        } catch (RuntimeException e) {
            log.debug("could not leave the store's queue of {}; the place ends at its queue TTL", key, e);
        }
    }

    /** A store failure as callers see it: a {@link LeaseholdException} naming the key; an Error is thrown. */
    static RuntimeException storeFailure(String operation, LockKey key, Throwable failure) {
        if (failure instanceof Error error) {
            throw error;
        }
        if (failure instanceof LeaseholdException e) {
            return e;
        }
        return new LeaseStoreException(operation, key.render(), failure);
    }
}
