package dev.leasehold;

import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The engine's threads: the timer (given by the caller or owned), the bounded pools for renewals
 * and for store calls, the notice thread for store callbacks, the callback threads for loss
 * events, and the cleanup pool that outlives {@link #close}. Every pool's threads are daemons and
 * end when idle. Thread-safe.
 */
final class EngineThreads {

    private static final int RENEWAL_THREADS = 4;
    private static final int CALL_THREADS = 16;

    private final ScheduledExecutorService timer;
    private final boolean ownsTimer;
    private final Parking parking;
    private final LeaseTimer leaseTimer;
    private final ExecutorService renewals;
    private final ExecutorService calls;
    private final boolean ownsCalls;
    /** Leaves and late releases after the service closed: never shut down, its threads end when idle. */
    private final ExecutorService cleanup;

    private final ExecutorService callbacks;
    private final ExecutorService notices;

    /**
     * Threads on {@code scheduler}, or on a timer of their own when it is {@code null}; store
     * calls on {@code storeCalls} (not shut down here), or on a pool of their own when it is null.
     */
    EngineThreads(ScheduledExecutorService scheduler, ExecutorService storeCalls, Ticker ticker) {
        this.ownsTimer = scheduler == null;
        this.timer = scheduler != null ? scheduler : defaultTimer();
        this.parking = new Parking(timer, ticker);
        this.leaseTimer = new LeaseTimer(timer, ticker);
        this.renewals = pool("leasehold-renewal-", RENEWAL_THREADS);
        this.calls = storeCalls != null ? storeCalls : pool("leasehold-call-", CALL_THREADS);
        this.ownsCalls = storeCalls == null;
        this.notices = pool("leasehold-notice-", 1);
        this.cleanup = pool("leasehold-cleanup-", 2);
        this.callbacks = new ThreadPoolExecutor(
                0, Integer.MAX_VALUE, 10, TimeUnit.SECONDS, new SynchronousQueue<>(), threads("leasehold-callback-"));
    }

    private static ScheduledExecutorService defaultTimer() {
        ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1, threads("leasehold-timer-"));
        executor.setRemoveOnCancelPolicy(true);
        return executor;
    }

    private static ExecutorService pool(String name, int size) {
        ThreadPoolExecutor executor =
                new ThreadPoolExecutor(size, size, 10, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), threads(name));
        executor.allowCoreThreadTimeOut(true);
        return executor;
    }

    private static ThreadFactory threads(String name) {
        AtomicInteger count = new AtomicInteger();
        return runnable -> {
            Thread thread = new Thread(runnable, name + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
    }

    /** How callers wait: parked, until a condition holds or the timer says the time is up. */
    Parking parking() {
        return parking;
    }

    /** The held leases' timed work on one alarm of the timer. */
    LeaseTimer leaseTimer() {
        return leaseTimer;
    }

    /** The bounded pool for store calls a caller waits for until its deadline. */
    Executor calls() {
        return calls;
    }

    /**
     * Runs a renewal on the renewal pool.
     *
     * @throws RejectedExecutionException once the service is closing
     */
    Future<?> submitRenewal(Runnable renewal) {
        return renewals.submit(renewal);
    }

    /** Runs store work that nobody waits for on a worker; after the service closed, on the cleanup pool. */
    void offCaller(Runnable work) {
        try {
            calls.execute(work);
        } catch (RejectedExecutionException e) {
            cleanup.execute(work);
        }
    }

    /** Runs loss events and callbacks off the timer and the store's threads. */
    void runCallback(Runnable work) {
        try {
            callbacks.execute(work);
        } catch (RejectedExecutionException e) {
            work.run(); // closing: run it here rather than lose it
        }
    }

    /** What a store callback does: hand the work to the notice thread, never more. */
    void handOff(Runnable work) {
        try {
            notices.execute(work);
        } catch (RejectedExecutionException e) {
            // Closed: nobody waits any more.
        }
    }

    /**
     * Drops the timed work and stops the pools (a renewal in flight is interrupted); the timer too
     * if it is the engine's own. The cleanup pool goes on with what it was given.
     */
    void close() {
        leaseTimer.close();
        renewals.shutdownNow();
        if (ownsCalls) {
            calls.shutdown();
        }
        notices.shutdown();
        callbacks.shutdown();
        if (ownsTimer) {
            timer.shutdownNow();
        }
    }
}
