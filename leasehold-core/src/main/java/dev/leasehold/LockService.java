package dev.leasehold;

import dev.leasehold.spi.LeaseStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;

/**
 * Lease locks over a {@link LeaseStore}: the API application code uses.
 *
 * <p>Guarantees, while the store is reachable: at most one owner holds a key at a time; every new
 * holder gets a greater {@linkplain Lease#fence() fence}; a lease renewed by the watchdog stays held
 * until released, and a lease that is lost is reported through {@link Lease#isHeld()} and {@link
 * Lease#onLost} by its local deadline, whatever the store does. Busy is a result ({@link
 * #tryAcquire} returns empty) or, after waiting, a {@link LockBusyException}; a waiting acquire
 * never waits past its wait time, also when the store stops answering or when it waits behind
 * others in the queue; store failures are {@link LeaseStoreException}s naming the key.
 *
 * <p>Owners: without an explicit {@link LockOwner}, the current thread owns the lease, and the same
 * thread acquiring the same key again re-enters it (one fence, a hold count); see {@link
 * Builder#reentrant} for why that is the default and when to turn it off. Asynchronous code passes
 * a {@link LockOwner} instead. Each grant is known to the store by a token of its own, so two
 * processes sharing one owner token never both hold a key.
 *
 * <p>Thread-safe. Build one per store with {@link #builder(LeaseStore)} and share it; close it on
 * shutdown.
 */
public interface LockService extends AutoCloseable {

    /** A builder for a service over {@code store}. */
    static Builder builder(LeaseStore store) {
        return new Builder(store);
    }

    /**
     * Takes the key for the current thread if it is free, never waiting (the HTTP 409 style).
     *
     * @return the lease, or empty if another owner holds the key
     * @throws LeaseStoreException if the store fails
     */
    Optional<Lease> tryAcquire(LockKey key, LeaseOptions options);

    /** As {@link #tryAcquire(LockKey, LeaseOptions)}, for an explicit owner. */
    Optional<Lease> tryAcquire(LockKey key, LeaseOptions options, LockOwner owner);

    /**
     * Takes the key for the current thread, waiting up to {@link LeaseOptions#waitFor()}; woken by
     * release notifications where the store has them, otherwise by a bounded poll.
     *
     * @throws LockBusyException if the wait ran out without the key: the store answered Busy, or
     *     (fair) the caller queued behind another waiter of this service, or the store gave no
     *     answer within the wait (a grant that comes later is given back)
     * @throws LeaseStoreException if a store call fails
     * @throws InterruptedException if the thread is interrupted while waiting
     */
    Lease acquire(LockKey key, LeaseOptions options) throws InterruptedException;

    /** As {@link #acquire(LockKey, LeaseOptions)}, for an explicit owner. */
    Lease acquire(LockKey key, LeaseOptions options, LockOwner owner) throws InterruptedException;

    /**
     * Takes every key, in sorted order so that two batches never deadlock, sharing one wait time;
     * all or nothing: if one key cannot be had, the ones already taken are released before the
     * failure is thrown. Duplicate keys are taken once.
     *
     * <p>The first attempt asks the store for every key in one call ({@link
     * dev.leasehold.spi.LeaseStore#tryAcquireAll}): on Redis, keys that share a {@linkplain
     * LockKey#withHashTag hash tag} are then ONE script, atomically all or nothing. If a key is
     * busy and the options allow a wait, the keys are then taken one by one in sorted order, each
     * waited for as {@link #acquire} waits.
     *
     * @throws LockBusyException naming the key that could not be had
     * @throws IllegalArgumentException if there are no keys
     */
    LeaseGroup acquireAll(Collection<LockKey> keys, LeaseOptions options) throws InterruptedException;

    /**
     * As {@link #acquireAll(Collection, LeaseOptions)}, for an explicit owner: the leases re-enter
     * (and are re-entered by) that owner's other leases on the same keys, from any thread.
     */
    LeaseGroup acquireAll(Collection<LockKey> keys, LeaseOptions options, LockOwner owner) throws InterruptedException;

    /**
     * Takes every key without waiting, all or nothing.
     *
     * @return the group, or empty if any key is busy (nothing is then held)
     */
    Optional<LeaseGroup> tryAcquireAll(Collection<LockKey> keys, LeaseOptions options);

    /** As {@link #tryAcquireAll(Collection, LeaseOptions)}, for an explicit owner. */
    Optional<LeaseGroup> tryAcquireAll(Collection<LockKey> keys, LeaseOptions options, LockOwner owner);

    /**
     * Runs {@code work} holding the key, waiting as {@link #acquire} does, and releases the key
     * afterwards, whether the work returns or throws.
     */
    default <T, X extends Exception> T runLocked(LockKey key, LeaseOptions options, LockedWork<T, X> work)
            throws X, InterruptedException {
        try (Lease lease = acquire(key, options)) {
            return work.run(lease);
        }
    }

    /** The leases currently held through this service (in this JVM), oldest first. */
    List<HeldLeaseInfo> heldLeases();

    /** The unexpired lease on the key as the store reports it, if any. */
    Optional<LeaseInfo> inspect(LockKey key);

    /**
     * Removes the lease on the key whoever holds it: an operator's tool for a stuck lock.
     * The holder sees its lease lost; the next holder gets a greater fence. Emits {@link
     * LeaseEventType#FORCE_RELEASED} with the reason.
     *
     * @return whether a lease was removed
     */
    boolean forceRelease(LockKey key, String reason);

    /**
     * Stops renewals and releases the leases still held through this service, then stops the
     * scheduler if the service created it.
     */
    @Override
    void close();

    /** Builds a {@link LockService}. Not thread-safe. */
    final class Builder {
        private final LeaseStore store;
        private ScheduledExecutorService scheduler;
        private Ticker ticker = Ticker.system();
        private final List<LeaseListener> listeners = new ArrayList<>();
        private boolean fair = true;
        private boolean reentrant = true;
        private Duration maxPoll = Duration.ofSeconds(1);
        private Duration minPoll = Duration.ofMillis(2);
        private ExecutorService storeCalls;

        private Builder(LeaseStore store) {
            this.store = Objects.requireNonNull(store, "store is missing (null)");
        }

        /**
         * The timer for renewal due times, expiry watches and the alarms of waits. The service runs
         * only short, non-blocking tasks on it (store calls run on workers of its own), and when
         * given does not shut it down; by default the service creates (and owns) a daemon timer.
         */
        public Builder scheduler(ScheduledExecutorService scheduler) {
            this.scheduler = Objects.requireNonNull(scheduler, "scheduler is missing (null)");
            return this;
        }

        /** The monotonic time source (default: {@link System#nanoTime()}). */
        public Builder ticker(Ticker ticker) {
            this.ticker = Objects.requireNonNull(ticker, "ticker is missing (null)");
            return this;
        }

        /** Adds a listener for lease events. */
        public Builder listener(LeaseListener listener) {
            listeners.add(Objects.requireNonNull(listener, "listener is missing (null)"));
            return this;
        }

        /**
         * Whether waiters in this JVM get a key in arrival order (default {@code true}): a newcomer,
         * also one calling {@code tryAcquire}, does not overtake a waiter already queued for the
         * key, and a head waiter that gives up passes its turn on. Without it a release wakes every
         * waiter and each tries.
         */
        public Builder fair(boolean fair) {
            this.fair = fair;
            return this;
        }

        /**
         * Whether an owner acquiring a key it already holds re-enters its lease (default {@code
         * true}): one fence, a hold count, released at count zero.
         *
         * <p>Without an explicit {@link LockOwner} the owner is the current thread, which is what
         * nested methods locking the same key need (a {@code @Locked} method calling another one
         * on the same thread), and why re-entry is the default. A thread of a pool runs unrelated
         * tasks one after the other, though: a task that leaves a lease open (handed to a
         * callback, say) would be re-entered by the next task on that thread. Code running tasks
         * on pooled threads passes a {@link LockOwner} per task, or builds its service with {@code
         * reentrant(false)}: then every acquisition is a holder of its own, and a key already held
         * through this service is busy to every other acquisition, whoever makes it.
         */
        public Builder reentrant(boolean reentrant) {
            this.reentrant = reentrant;
            return this;
        }

        /**
         * The longest a waiter sleeps between two attempts when no wake-up arrives (default 1 s).
         * With release notifications this only bounds the cost of a lost notification; without
         * them the poll starts at {@link #minPoll}, doubles up to this bound, and starts again at
         * {@link #minPoll} after a wake-up. A waiter never sleeps past the holder's remaining
         * lease.
         */
        public Builder maxPoll(Duration maxPoll) {
            Objects.requireNonNull(maxPoll, "maxPoll is missing (null)");
            if (maxPoll.isNegative() || maxPoll.isZero()) {
                throw new IllegalArgumentException("maxPoll must be > 0, was " + maxPoll);
            }
            this.maxPoll = maxPoll;
            return this;
        }

        /** The first poll interval for stores without release notifications (default 2 ms). */
        public Builder minPoll(Duration minPoll) {
            Objects.requireNonNull(minPoll, "minPoll is missing (null)");
            if (minPoll.isNegative() || minPoll.isZero()) {
                throw new IllegalArgumentException("minPoll must be > 0, was " + minPoll);
            }
            this.minPoll = minPoll;
            return this;
        }

        /**
         * Runs the store calls that a caller waits for on {@code executor} instead of the service's
         * own pool; not shut down by the service. For deterministic engine tests only.
         */
        Builder storeCallsOn(ExecutorService executor) {
            this.storeCalls = Objects.requireNonNull(executor, "executor is missing (null)");
            return this;
        }

        /**
         * The service.
         *
         * @throws IllegalArgumentException if minPoll exceeds maxPoll
         */
        public LockService build() {
            if (minPoll.compareTo(maxPoll) > 0) {
                throw new IllegalArgumentException(
                        "minPoll (" + minPoll + ") must not exceed maxPoll (" + maxPoll + ")");
            }
            return new LeaseEngine(
                    store, scheduler, storeCalls, ticker, List.copyOf(listeners), fair, reentrant, minPoll, maxPoll);
        }
    }
}
