package dev.leasehold;

import java.util.concurrent.Callable;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * One store call run on a worker so that its caller can stop waiting for it: a waiting acquire
 * never waits past its deadline, however long the store takes. A call the caller gave up on is
 * <em>orphaned</em>: if it was never sent it is dropped; if it was in flight, its outcome is handed
 * to the orphan handler when it arrives (an acquire granted late is released there).
 *
 * @param <T> the result
 */
final class StoreCall<T> implements Runnable {

    private static final int PENDING = 0;
    private static final int RUNNING = 1;
    private static final int DONE = 2;
    private static final int ORPHANED = 3;

    private final Callable<T> body;
    private final Consumer<StoreCall<T>> orphanHandler;
    private final AtomicInteger state = new AtomicInteger(PENDING);
    private final Thread caller = Thread.currentThread();
    private volatile T value;
    private volatile Throwable failure;

    /** A call not yet started; the current thread is the one that waits for it. */
    StoreCall(Callable<T> body, Consumer<StoreCall<T>> orphanHandler) {
        this.body = body;
        this.orphanHandler = orphanHandler;
    }

    /** Starts {@code body} on {@code workers}; the current thread is the one that waits for it. */
    static <T> StoreCall<T> start(Executor workers, Callable<T> body, Consumer<StoreCall<T>> orphanHandler) {
        return new StoreCall<>(body, orphanHandler).startOn(workers);
    }

    /**
     * A call already sent by an asynchronous client: its answer is {@code answer}'s outcome. The
     * orphan handler then runs where the answer completes (a client's I/O thread): it must only
     * hand work on.
     */
    static <T> StoreCall<T> of(CompletionStage<T> answer, Consumer<StoreCall<T>> orphanHandler) {
        StoreCall<T> call = new StoreCall<>(null, orphanHandler);
        call.state.set(RUNNING);
        answer.whenComplete((value, failure) -> call.complete(
                value,
                failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure));
        return call;
    }

    StoreCall<T> startOn(Executor workers) {
        try {
            workers.execute(this);
        } catch (RejectedExecutionException e) {
            throw new IllegalStateException("the lock service is closed", e);
        }
        return this;
    }

    @Override
    public void run() {
        if (!state.compareAndSet(PENDING, RUNNING)) {
            return; // given up on before it was sent: nothing happened in the store
        }
        T result = null;
        Throwable thrown = null;
        try {
            result = body.call();
        } catch (Throwable e) {
            thrown = e;
        }
        complete(result, thrown);
    }

    private void complete(T result, Throwable thrown) {
        value = result;
        failure = thrown;
        if (state.compareAndSet(RUNNING, DONE)) {
            LockSupport.unpark(caller);
        } else {
            orphanHandler.accept(this);
        }
    }

    /**
     * Waits for the outcome until {@code deadline}; past it, the call is orphaned.
     *
     * @return whether the outcome arrived in time
     */
    boolean await(Parking parking, long deadline) throws InterruptedException {
        return await(parking, deadline, () -> false);
    }

    /**
     * As {@link #await(Parking, long)}, also giving up as soon as {@code giveUp} holds (checked
     * whenever the caller is unparked, e.g. by the service's close).
     */
    boolean await(Parking parking, long deadline, BooleanSupplier giveUp) throws InterruptedException {
        try {
            parking.parkUntil(() -> isDone() || giveUp.getAsBoolean(), deadline);
        } catch (InterruptedException | RuntimeException | Error e) {
            if (!orphan()) {
                // It arrived after all; as the caller leaves, the outcome goes to the orphan handler.
                orphanHandler.accept(this);
            }
            throw e;
        }
        return !orphan(); // fails only once the outcome is there
    }

    /** Gives the call up; false if its outcome had already arrived. */
    private boolean orphan() {
        return state.compareAndSet(PENDING, ORPHANED) || state.compareAndSet(RUNNING, ORPHANED);
    }

    boolean isDone() {
        return state.get() == DONE;
    }

    T value() {
        return value;
    }

    Throwable failure() {
        return failure;
    }
}
