package dev.leasehold;

import dev.leasehold.spi.Grant;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;

/** What a {@link HeldLease} needs from the engine that granted it: time, threads, the store and events. */
interface LeaseHost {

    /** The engine's ticker, in nanoseconds. */
    long nanos();

    /** Runs {@code task} on the timer thread after {@code delayNanos}, unless the entry is cancelled. */
    LeaseTimer.Entry schedule(Runnable task, long delayNanos);

    /** {@link #schedule} at an instant of {@link #nanos}: the entry's due time is {@code atNanos}. */
    LeaseTimer.Entry scheduleAt(Runnable task, long atNanos);

    /**
     * Has the lease renewed, which fell due at {@code dueNanos}: on a renewal worker of its own, or
     * in the next batch of a store that renews in batches. Cancelling the returned future with
     * interruption abandons the renewal: its own call is interrupted, and a batch's call once no
     * lease of the batch wants the answer. The answer reaches {@link HeldLease#renewed} or {@link
     * HeldLease#renewalFailed}.
     *
     * @throws RejectedExecutionException once the service is closing
     */
    Future<?> requestRenewal(HeldLease lease, long dueNanos);

    /**
     * The step of the grid on which renewals of leases of {@code leaseForNanos} fall due: a store
     * that renews in batches renews the leases that fall due in one step together, and on the grid
     * they stay together; 1 where each lease is renewed on its own.
     */
    long renewalGrid(long leaseForNanos);

    /** A renewal was confirmed {@code lagNanos} after it fell due; a late one is reported. */
    void renewalConfirmed(LockKey key, long lagNanos, long leaseForNanos);

    /** The store's renew, as is: empty if the owner no longer holds the key; a failure is thrown. */
    Optional<Grant> renew(LockKey key, String token, Duration leaseFor);

    /**
     * The store's release.
     *
     * @return whether the owner still held the key
     * @throws LeaseholdException if the store call failed
     */
    boolean release(LockKey key, String token);

    /** The lease had its last release: it is no longer its holder's current grant. */
    void forget(HeldLease lease);

    /** Wakes this JVM's waiters for the key. */
    void wake(LockKey key);

    /** Whether anyone listens to events. */
    boolean listening();

    void emit(LeaseEvent event);

    /** Runs loss events and callbacks off the timer and the store's threads. */
    void runCallback(Runnable work);

    /** The store's name, for events. */
    String storeName();
}
