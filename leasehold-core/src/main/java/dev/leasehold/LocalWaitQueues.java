package dev.leasehold;

import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spi.ReleaseSubscription;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This JVM's waiters, per key, in arrival order, with the key's release subscription shared by
 * them. A queue's lock is held only for a few field updates, never across a store call; a retired
 * queue (its last waiter left) takes no one, and the next waiter starts a new one. A wake-up
 * signals the head (every waiter, when not fair). Thread-safe.
 */
final class LocalWaitQueues {

    private static final Logger log = LoggerFactory.getLogger(LocalWaitQueues.class);

    private final LeaseStore store;
    private final EngineThreads threads;
    private final boolean fair;
    private final BooleanSupplier closed;
    private final ConcurrentHashMap<LockKey, WaitQueue> queues = new ConcurrentHashMap<>();

    LocalWaitQueues(LeaseStore store, EngineThreads threads, boolean fair, BooleanSupplier closed) {
        this.store = store;
        this.threads = threads;
        this.fair = fair;
        this.closed = closed;
    }

    /** One waiting caller: woken by a signal or its alarm. */
    static final class Waiter {
        private final Thread thread = Thread.currentThread();
        private final AtomicBoolean signaled = new AtomicBoolean();

        void signal() {
            signaled.set(true);
            LockSupport.unpark(thread);
        }

        /** Waits until signaled or {@code nanos} pass; returns whether it was signaled. */
        boolean await(Parking parking, long nanos) throws InterruptedException {
            parking.parkUntil(signaled::get, parking.now() + nanos);
            return signaled.getAndSet(false);
        }
    }

    /** The waiters for one key and their shared release subscription. */
    final class WaitQueue {
        final LockKey key;
        final ReentrantLock lock = new ReentrantLock();
        // room for two before it grows: most keys have one waiter at a time
        final ArrayDeque<Waiter> waiters = new ArrayDeque<>(2); // guarded by lock
        boolean retired; // guarded by lock
        boolean subscribeClaimed; // guarded by lock
        ReleaseSubscription subscription; // guarded by lock
        volatile boolean active;

        WaitQueue(LockKey key) {
            this.key = key;
        }

        boolean isHead(Waiter waiter) {
            lock.lock();
            try {
                return waiters.peekFirst() == waiter;
            } finally {
                lock.unlock();
            }
        }

        /** Whether the caller should subscribe: true once per queue, when the store pushes releases. */
        boolean claimSubscription() {
            if (!store.supportsReleaseNotifications()) {
                return false;
            }
            lock.lock();
            try {
                if (subscribeClaimed || retired) {
                    return false;
                }
                subscribeClaimed = true;
                return true;
            } finally {
                lock.unlock();
            }
        }

        /** Whether the key's release subscription is active, so releases are pushed. */
        boolean subscribed() {
            return active;
        }

        /** The subscription arrived: keep it while anyone waits, and let the waiters try again. */
        void subscriptionArrived(ReleaseSubscription arrived) {
            boolean keep;
            lock.lock();
            try {
                keep = !retired;
                if (keep) {
                    subscription = arrived;
                    active = true;
                }
            } finally {
                lock.unlock();
            }
            if (keep) {
                wakeQueue(this, false);
            } else {
                closeLater(arrived);
            }
        }
    }

    /** Puts the waiter at the end of the key's queue, starting a queue if none takes it. */
    WaitQueue join(LockKey key, Waiter waiter) {
        while (true) {
            WaitQueue queue = queues.computeIfAbsent(key, WaitQueue::new);
            queue.lock.lock();
            try {
                if (!queue.retired) {
                    queue.waiters.addLast(waiter);
                    return queue;
                }
            } finally {
                queue.lock.unlock();
            }
            queues.remove(key, queue);
        }
    }

    /**
     * Takes the waiter out. A head that leaves without the key passes its turn to the next; the
     * last one retires the queue and closes its subscription.
     */
    void leave(WaitQueue queue, Waiter waiter, boolean acquired) {
        Waiter next = null;
        ReleaseSubscription toClose = null;
        queue.lock.lock();
        try {
            boolean wasHead = queue.waiters.peekFirst() == waiter;
            queue.waiters.remove(waiter);
            if (queue.waiters.isEmpty()) {
                queue.retired = true;
                queue.active = false;
                toClose = queue.subscription;
                queue.subscription = null;
                queues.remove(queue.key, queue);
            } else if (!acquired && wasHead) {
                next = queue.waiters.peekFirst(); // pass the turn on
            }
        } finally {
            queue.lock.unlock();
        }
        if (next != null) {
            next.signal();
        }
        if (toClose != null) {
            closeLater(toClose);
        }
    }

    /** Closing may block in the store (a subscribe in flight holds its lock): never on a caller's path. */
    private void closeLater(ReleaseSubscription subscription) {
        threads.offCaller(() -> closeQuietly(subscription, "a key"));
    }

    static void closeQuietly(ReleaseSubscription subscription, Object what) {
        try {
            subscription.close();
        } catch (RuntimeException e) {
            log.warn("could not close the release subscription of {}", what, e);
        }
    }

    /**
     * Subscribes to the queue's key on a worker, waiting until the deadline at most; the
     * subscription, when it arrives (also later), wakes the queue's waiters. A close of the
     * service ends the wait at once ({@link #wakeEveryone} unparks the caller).
     */
    void subscribe(WaitQueue queue, long deadline) throws InterruptedException {
        LockKey key = queue.key;
        StoreCall<ReleaseSubscription> call = StoreCall.start(
                threads.calls(), () -> store.subscribe(key, notice -> threads.handOff(() -> wake(key))), orphan -> {
                    if (orphan.value() != null) {
                        queue.subscriptionArrived(orphan.value());
                    } else {
                        log.warn("could not subscribe to releases of {}; waiters poll instead", key, orphan.failure());
                    }
                });
        if (!call.await(threads.parking(), deadline, closed)) {
            return;
        }
        if (call.failure() != null) {
            if (call.failure() instanceof Error error) {
                throw error;
            }
            log.warn("could not subscribe to releases of {}; waiters poll instead", key, call.failure());
            return;
        }
        queue.subscriptionArrived(call.value());
    }

    /** Whether anyone in this JVM waits for the key. */
    boolean hasWaiters(LockKey key) {
        WaitQueue queue = queues.get(key);
        if (queue == null) {
            return false;
        }
        queue.lock.lock();
        try {
            return !queue.waiters.isEmpty();
        } finally {
            queue.lock.unlock();
        }
    }

    /** Wakes the first waiter for the key (every waiter, when not fair): on a release, a notice, a force-release. */
    void wake(LockKey key) {
        WaitQueue queue = queues.get(key);
        if (queue != null) {
            wakeQueue(queue, false);
        }
    }

    /** Wakes every waiter of every key, so that each sees at once that the service closed. */
    void wakeEveryone() {
        queues.values().forEach(queue -> wakeQueue(queue, true));
    }

    /** Wakes the head of the queue when fair, else (or when {@code everyone}) every waiter. */
    private void wakeQueue(WaitQueue queue, boolean everyone) {
        List<Waiter> toWake;
        queue.lock.lock();
        try {
            if (queue.waiters.isEmpty()) {
                return;
            }
            toWake = fair && !everyone ? List.of(queue.waiters.peekFirst()) : List.copyOf(queue.waiters);
        } finally {
            queue.lock.unlock();
        }
        toWake.forEach(Waiter::signal);
    }
}
