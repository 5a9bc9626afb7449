package dev.leasehold;

import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spi.ReleaseSubscription;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine behind {@link LockService}, written once for every store: re-entry, waiting with
 * wake-ups, batches, renewal scheduling and events.
 *
 * <p>Waiting works in four steps:
 *
 * <ol>
 *   <li>try the store once; if the key is busy and the caller may wait,
 *   <li>join the key's FIFO queue in this JVM; the first waiter subscribes to the store's release
 *       notifications for the key, shared by every later waiter;
 *   <li>try again (a release between step 1 and the subscription would otherwise be missed), then
 *       sleep until woken by a release (local or notified) or until the bounded poll interval,
 *       which never exceeds the holder's remaining lease;
 *   <li>on each wake, the head of the queue (any waiter, when not fair) tries again, until granted
 *       or the wait time is spent. A waiter that leaves without the key passes its turn on.
 * </ol>
 */
final class LeaseEngine implements LockService {

    private static final Logger log = LoggerFactory.getLogger(LeaseEngine.class);

    final LeaseStore store;
    final ScheduledExecutorService scheduler;
    final Ticker ticker;
    private final boolean ownsScheduler;
    private final List<LeaseListener> listeners;
    private final boolean fair;
    private final long minPollNanos;
    private final long maxPollNanos;
    private final ConcurrentHashMap<HolderKey, HolderSlot> holders = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<LockKey, WaitQueue> queues = new ConcurrentHashMap<>();
    private final AtomicBoolean closed = new AtomicBoolean();

    LeaseEngine(
            LeaseStore store,
            ScheduledExecutorService scheduler,
            Ticker ticker,
            List<LeaseListener> listeners,
            boolean fair,
            Duration minPoll,
            Duration maxPoll) {
        this.store = store;
        this.ownsScheduler = scheduler == null;
        this.scheduler = scheduler != null ? scheduler : defaultScheduler();
        this.ticker = ticker;
        this.listeners = listeners;
        this.fair = fair;
        this.minPollNanos = minPoll.toNanos();
        this.maxPollNanos = maxPoll.toNanos();
    }

    private static ScheduledExecutorService defaultScheduler() {
        AtomicInteger count = new AtomicInteger();
        ThreadFactory threads = runnable -> {
            Thread thread = new Thread(runnable, "leasehold-renewal-" + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
        ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(2, threads);
        executor.setRemoveOnCancelPolicy(true);
        return executor;
    }

    /** Who holds: a thread, or an explicit {@link LockOwner}; and on which key. */
    record HolderKey(Object owner, LockKey key) {}

    /** The current grant of one holder key; its lock orders acquisitions and releases of that owner. */
    static final class HolderSlot {
        final ReentrantLock lock = new ReentrantLock();
        HeldLease lease;
    }

    /** A lease, or the holder's remaining time when the key is busy. */
    private record Attempt(Lease lease, long holderRemainingNanos) {}

    // ---------------------------------------------------------------- acquiring

    @Override
    public Optional<Lease> tryAcquire(LockKey key, LeaseOptions options) {
        return tryAcquire(key, options, Thread.currentThread(), null);
    }

    @Override
    public Optional<Lease> tryAcquire(LockKey key, LeaseOptions options, LockOwner owner) {
        Objects.requireNonNull(owner, "owner is missing (null)");
        return tryAcquire(key, options, owner, owner.token());
    }

    private Optional<Lease> tryAcquire(LockKey key, LeaseOptions options, Object owner, String token) {
        checkArguments(key, options);
        long start = ticker.nanos();
        Attempt attempt = attempt(key, options, owner, token, start, false);
        if (attempt.lease() == null) {
            emit(new LeaseEvent(LeaseEventType.BUSY, key, store.name(), null, 0, Duration.ZERO, null, null, null));
        }
        return Optional.ofNullable(attempt.lease());
    }

    @Override
    public Lease acquire(LockKey key, LeaseOptions options) throws InterruptedException {
        return acquire(key, options, Thread.currentThread(), null);
    }

    @Override
    public Lease acquire(LockKey key, LeaseOptions options, LockOwner owner) throws InterruptedException {
        Objects.requireNonNull(owner, "owner is missing (null)");
        return acquire(key, options, owner, owner.token());
    }

    private Lease acquire(LockKey key, LeaseOptions options, Object owner, String token) throws InterruptedException {
        checkArguments(key, options);
        long start = ticker.nanos();
        Attempt first = attempt(key, options, owner, token, start, false);
        if (first.lease() != null) {
            return first.lease();
        }
        long waitNanos = options.waitFor().toNanos();
        if (waitNanos == 0) {
            throw busy(key, start);
        }
        if (Thread.interrupted()) {
            throw new InterruptedException("interrupted before waiting for " + key);
        }
        Waiter waiter = enqueue(key);
        emit(new LeaseEvent(LeaseEventType.WAITING, key, store.name(), null, 0, Duration.ZERO, null, null, null));
        boolean acquired = false;
        try {
            long holderRemaining = first.holderRemainingNanos();
            long poll = minPollNanos;
            boolean notified = store.supportsReleaseNotifications();
            while (true) {
                boolean myTurn = !fair || isHead(key, waiter);
                if (myTurn) {
                    Attempt attempt = attempt(key, options, owner, token, start, true);
                    if (attempt.lease() != null) {
                        acquired = true;
                        return attempt.lease();
                    }
                    holderRemaining = attempt.holderRemainingNanos();
                }
                long left = start + waitNanos - ticker.nanos();
                if (left <= 0) {
                    throw busy(key, start);
                }
                // A waiter behind others is woken when its turn comes; the head polls, never past the
                // holder's expiry, so a lost notification costs at most that.
                long pause = myTurn && !notified ? poll : maxPollNanos;
                if (myTurn && holderRemaining >= 0) {
                    pause = Math.min(pause, holderRemaining + TimeUnit.MILLISECONDS.toNanos(1));
                }
                pause = Math.min(left, pause);
                if (waiter.await(pause)) {
                    poll = minPollNanos;
                } else if (!notified) {
                    poll = Math.min(poll * 2, maxPollNanos);
                }
            }
        } finally {
            dequeue(key, waiter, acquired);
        }
    }

    private LockBusyException busy(LockKey key, long start) {
        Duration waited = Duration.ofNanos(Math.max(0, ticker.nanos() - start));
        emit(new LeaseEvent(LeaseEventType.BUSY, key, store.name(), null, 0, waited, null, null, null));
        return new LockBusyException(key, waited);
    }

    /**
     * One attempt: re-enter the owner's own lease, or ask the store. Under the holder slot's lock,
     * so one owner's acquisitions and releases of a key are ordered.
     */
    private Attempt attempt(LockKey key, LeaseOptions options, Object owner, String token, long start, boolean waiter) {
        if (closed.get()) {
            throw new IllegalStateException("the lock service is closed");
        }
        HolderKey holderKey = new HolderKey(owner, key);
        while (true) {
            HolderSlot slot = holders.computeIfAbsent(holderKey, k -> new HolderSlot());
            slot.lock.lock();
            try {
                if (holders.get(holderKey) != slot) {
                    continue; // retired while we waited for its lock
                }
                HeldLease current = slot.lease;
                if (current != null && current.tryReenter()) {
                    emit(current.event(LeaseEventType.REENTERED, Duration.ZERO, null, null));
                    return new Attempt(current.newHandle(), 0);
                }
                if (!waiter && fair && hasWaiters(key)) {
                    retireSlot(holderKey, slot);
                    return new Attempt(null, -1);
                }
                String grantToken = token != null ? token : LockOwner.randomToken();
                long sent = ticker.nanos();
                AcquireResult result;
                try {
                    result = store.tryAcquire(key, grantToken, options.leaseFor());
                } catch (LeaseholdException e) {
                    retireSlot(holderKey, slot);
                    throw e;
                } catch (RuntimeException e) {
                    retireSlot(holderKey, slot);
                    throw new LeaseStoreException("acquire", key.render(), e);
                }
                if (result instanceof AcquireResult.Granted granted) {
                    HeldLease lease = new HeldLease(this, holderKey, slot, grantToken, options, granted.grant(), sent);
                    slot.lease = lease;
                    lease.start();
                    emit(new LeaseEvent(
                            LeaseEventType.ACQUIRED,
                            key,
                            store.name(),
                            LockOwner.abbreviate(grantToken),
                            lease.fence,
                            Duration.ofNanos(Math.max(0, ticker.nanos() - start)),
                            null,
                            null,
                            null));
                    return new Attempt(lease.newHandle(), 0);
                }
                retireSlot(holderKey, slot);
                return new Attempt(
                        null, ((AcquireResult.Busy) result).holderRemaining().toNanos());
            } finally {
                slot.lock.unlock();
            }
        }
    }

    /** Forgets a slot that holds no lease; the caller holds its lock. */
    void retireSlot(HolderKey holderKey, HolderSlot slot) {
        if (slot.lease == null) {
            holders.remove(holderKey, slot);
        }
    }

    private static void checkArguments(LockKey key, LeaseOptions options) {
        LockKey.requireKey(key);
        Objects.requireNonNull(options, "lease options are missing (null)");
    }

    // ---------------------------------------------------------------- batches

    @Override
    public LeaseGroup acquireAll(Collection<LockKey> keys, LeaseOptions options) throws InterruptedException {
        Objects.requireNonNull(options, "lease options are missing (null)");
        List<LockKey> sorted = sortedDistinct(keys);
        long start = ticker.nanos();
        long waitNanos = options.waitFor().toNanos();
        List<Lease> taken = new ArrayList<>(sorted.size());
        try {
            for (LockKey key : sorted) {
                long left = Math.max(0, waitNanos - (ticker.nanos() - start));
                taken.add(acquire(key, options.withWait(Duration.ofNanos(left)), Thread.currentThread(), null));
            }
            return new LeaseGroup(taken);
        } catch (LockBusyException e) {
            releaseQuietly(taken, e);
            throw new LockBusyException(
                    e.key(),
                    e.waited(),
                    "batch of " + sorted.size() + " keys not taken, nothing of it is held: " + e.getMessage());
        } catch (InterruptedException | RuntimeException e) {
            releaseQuietly(taken, e);
            throw e;
        }
    }

    @Override
    public Optional<LeaseGroup> tryAcquireAll(Collection<LockKey> keys, LeaseOptions options) {
        try {
            return Optional.of(acquireAll(keys, options.withWait(Duration.ZERO)));
        } catch (LockBusyException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            // Unreachable without a wait; keep the flag for the caller all the same.
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }

    private static List<LockKey> sortedDistinct(Collection<LockKey> keys) {
        Objects.requireNonNull(keys, "keys are missing (null)");
        TreeSet<LockKey> sorted = new TreeSet<>();
        for (LockKey key : keys) {
            sorted.add(LockKey.requireKey(key));
        }
        if (sorted.isEmpty()) {
            throw new IllegalArgumentException("a batch needs at least one key");
        }
        return new ArrayList<>(sorted);
    }

    private static void releaseQuietly(List<Lease> taken, Exception failure) {
        try {
            LeaseGroup.releaseInReverse(taken);
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
    }

    // ---------------------------------------------------------------- operations

    @Override
    public List<HeldLeaseInfo> heldLeases() {
        List<HeldLeaseInfo> held = new ArrayList<>();
        for (HolderSlot slot : holders.values()) {
            HeldLease lease = slot.lease;
            if (lease != null && lease.isHeld()) {
                held.add(lease.info());
            }
        }
        held.sort(java.util.Comparator.comparing(HeldLeaseInfo::heldFor).reversed());
        return held;
    }

    @Override
    public Optional<LeaseInfo> inspect(LockKey key) {
        LockKey.requireKey(key);
        try {
            return store.inspect(key);
        } catch (LeaseholdException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new LeaseStoreException("inspect", key.render(), e);
        }
    }

    @Override
    public boolean forceRelease(LockKey key, String reason) {
        LockKey.requireKey(key);
        if (reason == null || reason.isBlank()) {
            throw new IllegalArgumentException("a force-release needs a reason for the audit log");
        }
        boolean removed;
        try {
            removed = store.forceRelease(key);
        } catch (LeaseholdException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new LeaseStoreException("force-release", key.render(), e);
        }
        emit(new LeaseEvent(
                LeaseEventType.FORCE_RELEASED,
                key,
                store.name(),
                null,
                0,
                Duration.ZERO,
                null,
                reason + (removed ? "" : " (no lease was held)"),
                null));
        holders.forEach((holderKey, slot) -> {
            HeldLease lease = slot.lease;
            if (holderKey.key().equals(key) && lease != null) {
                lease.markLost("force-released by an operator: " + reason);
            }
        });
        signalReleased(key);
        return removed;
    }

    boolean storeRelease(LockKey key, String token) {
        try {
            return store.release(key, token);
        } catch (LeaseholdException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new LeaseStoreException("release", key.render(), e);
        }
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        holders.values().forEach(slot -> {
            HeldLease lease = slot.lease;
            if (lease != null) {
                lease.abandon();
            }
        });
        if (ownsScheduler) {
            scheduler.shutdownNow();
        }
    }

    void emit(LeaseEvent event) {
        for (LeaseListener listener : listeners) {
            try {
                listener.onEvent(event);
            } catch (VirtualMachineError e) {
                throw e;
            } catch (Throwable e) {
                log.warn("lease listener {} failed on {} of {}; ignored", listener, event.type(), event.key(), e);
            }
        }
    }

    // ---------------------------------------------------------------- waiting

    /** The FIFO of this JVM's waiters for one key, and the key's shared release subscription. */
    private static final class WaitQueue {
        final ArrayDeque<Waiter> waiters = new ArrayDeque<>();
        ReleaseSubscription subscription;
        boolean subscribeTried;
    }

    /** One waiting caller; woken by a signal or its timeout. */
    private static final class Waiter {
        private boolean signaled;

        synchronized void signal() {
            signaled = true;
            notifyAll();
        }

        /** Waits until signaled or {@code nanos} pass; returns whether it was signaled. */
        synchronized boolean await(long nanos) throws InterruptedException {
            if (!signaled) {
                TimeUnit.NANOSECONDS.timedWait(this, nanos);
            }
            boolean result = signaled;
            signaled = false;
            return result;
        }

        synchronized boolean signaled() {
            return signaled;
        }
    }

    private Waiter enqueue(LockKey key) {
        Waiter waiter = new Waiter();
        WaitQueue queue = queues.compute(key, (k, existing) -> {
            WaitQueue q = existing != null ? existing : new WaitQueue();
            synchronized (q) {
                q.waiters.addLast(waiter);
            }
            return q;
        });
        if (store.supportsReleaseNotifications()) {
            synchronized (queue) {
                if (!queue.subscribeTried) {
                    queue.subscribeTried = true;
                    try {
                        queue.subscription = store.subscribe(key, notice -> signalReleased(key));
                    } catch (RuntimeException e) {
                        log.warn("could not subscribe to releases of {}; waiters poll instead", key, e);
                    }
                }
            }
        }
        return waiter;
    }

    private void dequeue(LockKey key, Waiter waiter, boolean acquired) {
        ReleaseSubscription[] toClose = new ReleaseSubscription[1];
        Waiter[] next = new Waiter[1];
        queues.computeIfPresent(key, (k, q) -> {
            synchronized (q) {
                boolean wasHead = q.waiters.peekFirst() == waiter;
                q.waiters.remove(waiter);
                if (q.waiters.isEmpty()) {
                    toClose[0] = q.subscription;
                    q.subscription = null;
                    return null;
                }
                if (!acquired && (wasHead || waiter.signaled())) {
                    next[0] = q.waiters.peekFirst();
                }
                return q;
            }
        });
        if (toClose[0] != null) {
            try {
                toClose[0].close();
            } catch (RuntimeException e) {
                log.warn("could not close the release subscription of {}", key, e);
            }
        }
        if (next[0] != null) {
            next[0].signal();
        }
    }

    private boolean isHead(LockKey key, Waiter waiter) {
        WaitQueue queue = queues.get(key);
        if (queue == null) {
            return true;
        }
        synchronized (queue) {
            return queue.waiters.peekFirst() == waiter;
        }
    }

    private boolean hasWaiters(LockKey key) {
        WaitQueue queue = queues.get(key);
        if (queue == null) {
            return false;
        }
        synchronized (queue) {
            return !queue.waiters.isEmpty();
        }
    }

    /** Wakes the first waiter for the key (every waiter, when not fair): on a release, notification, force-release. */
    void signalReleased(LockKey key) {
        WaitQueue queue = queues.get(key);
        if (queue == null) {
            return;
        }
        List<Waiter> toWake;
        synchronized (queue) {
            if (queue.waiters.isEmpty()) {
                return;
            }
            toWake = fair ? List.of(queue.waiters.peekFirst()) : List.copyOf(queue.waiters);
        }
        toWake.forEach(Waiter::signal);
    }
}
