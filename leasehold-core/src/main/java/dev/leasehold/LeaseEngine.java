package dev.leasehold;

import dev.leasehold.spi.AcquireRequest;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.BatchAcquireResult;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine behind {@link LockService}, written once for every store: re-entry, waiting with
 * wake-ups, batches, renewal and loss, force-release notices and events.
 *
 * <p>Threads and locks (the rules that keep it from stalling):
 *
 * <ul>
 *   <li>Store callbacks (release and force-release notices, which may arrive on a store client's
 *       I/O thread) only hand the notice to the engine's notice thread; they never block or take a
 *       lock.
 *   <li>No lock of the engine is held across a store call except a holder slot's, which only
 *       callers of the same owner and key ever take (with a bounded {@code tryLock} while
 *       waiting); nothing a store callback runs takes it.
 *   <li>The timer only decides (an alarm rings, a renewal is due, a deadline passed); it never
 *       calls the store. Renewals run on a bounded pool of their own; store calls made while a
 *       caller waits run on a bounded pool too, so the caller stops waiting at its deadline
 *       whatever the store does ({@link StoreCall}).
 *   <li>Waiting threads park ({@link Parking}); no monitor is held while waiting, so virtual
 *       threads unmount.
 * </ul>
 *
 * <p>Waiting: the caller joins the key's FIFO queue in this JVM; the head (any waiter, when not
 * fair) tries the store ({@code LeaseEngineTest.Waiting#waitersInOneProcessAreServedInArrivalOrder},
 * {@code LeaseEngineScheduleTest#inFairModeOnlyTheHeadAsksTheStoreAndAQueuedWaiterGivesUpAtItsOwnBound});
 * when busy, the first waiter subscribes to the key's release notices and everyone tries again
 * once the subscription is active (a release between the try and the subscription would otherwise
 * be missed: {@code #aReleaseJustBeforeTheSubscriptionTakesEffectIsNotMissed}); then it sleeps
 * until a release wakes it (local, or notified by the store), until the holder's lease ends by the
 * store's last report, or until the bounded poll interval passes ({@code LeaseEngineScheduleTest}).
 * A head that leaves without the key passes its turn on ({@code #aHeadWaiterThatLeavesPassesItsTurn}).
 *
 * <p>How a wait ends without the key: a waiter that runs out of time gives up with {@link
 * LockBusyException}, also when its last store call got no answer or its turn came too late to
 * ask (an answer that comes later is handled then: a late grant is given back); only a store call
 * that fails is a {@link LeaseStoreException}. A wait that asked the store leaves the store's
 * queue ({@link LeaseStore#leaveQueue}) on every path it ends without the key, without waiting
 * for the store: on the caller's thread only for a store whose leave does not block, else on a
 * worker, also after the service closed.
 *
 * <p>Store tokens: every grant is asked for with a token of its own. Without an explicit owner it
 * is 128 bits from the secure random source, drawn for that grant; with a {@link LockOwner} it is
 * the owner's token plus a per-grant random suffix, so that two
 * processes sharing one owner token never both hold the key (the second is refused as busy), and
 * a late release or renewal of one grant can never touch another.
 */
final class LeaseEngine implements LockService {

    private static final Logger log = LoggerFactory.getLogger(LeaseEngine.class);
    private static final int RENEWAL_THREADS = 4;
    private static final int CALL_THREADS = 16;
    private static final int MAX_TOKEN = 128;
    private static final int SUFFIX = 17; // '.' and 16 hex digits

    final LeaseStore store;
    final ScheduledExecutorService timer;
    final Ticker ticker;
    final ExecutorService renewals;
    final LeaseTimer leaseTimer;
    private final ExecutorService calls;
    /** Leaves and late releases after the service closed: never shut down, its threads end when idle. */
    private final ExecutorService cleanup;

    private final ExecutorService callbacks;
    private final ExecutorService notices;
    private final boolean ownsTimer;
    private final Parking parking;
    private final List<LeaseListener> listeners;
    /** Whether anyone listens: without a listener no event is built at all. */
    final boolean listening;

    private final boolean fair;
    private final boolean reentrant;
    private final long minPollNanos;
    private final long maxPollNanos;
    private final ConcurrentHashMap<HolderKey, HolderSlot> holders = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<LockKey, WaitQueue> queues = new ConcurrentHashMap<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicReference<StoreCall<ReleaseSubscription>> forceWatch = new AtomicReference<>();
    private final AtomicReference<ReleaseSubscription> forceSubscription = new AtomicReference<>();

    LeaseEngine(
            LeaseStore store,
            ScheduledExecutorService scheduler,
            Ticker ticker,
            List<LeaseListener> listeners,
            boolean fair,
            boolean reentrant,
            Duration minPoll,
            Duration maxPoll) {
        this.store = store;
        this.ownsTimer = scheduler == null;
        this.timer = scheduler != null ? scheduler : defaultTimer();
        this.ticker = ticker;
        this.listeners = listeners;
        this.listening = !listeners.isEmpty();
        this.fair = fair;
        this.reentrant = reentrant;
        this.minPollNanos = minPoll.toNanos();
        this.maxPollNanos = maxPoll.toNanos();
        this.parking = new Parking(timer, ticker);
        this.leaseTimer = new LeaseTimer(timer, ticker);
        this.renewals = pool("leasehold-renewal-", RENEWAL_THREADS);
        this.calls = pool("leasehold-call-", CALL_THREADS);
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

    /** Who holds, and on which key: a thread, an explicit {@link LockOwner}, or one acquisition. */
    record HolderKey(Object owner, LockKey key) {}

    /** The current grant of one holder key; its lock orders that holder's acquisitions. */
    static final class HolderSlot {
        final ReentrantLock lock = new ReentrantLock();
        final AtomicReference<HeldLease> lease = new AtomicReference<>();
    }

    /**
     * A lease, or the holder's remaining time when the key is busy, or no answer in time; {@code
     * asked} whether the store was asked (also without an answer).
     */
    private record Attempt(Lease lease, long holderRemainingNanos, boolean answered, boolean asked) {
        static final Attempt NOT_ASKED = new Attempt(null, -1, false, false);
        static final Attempt UNANSWERED = new Attempt(null, -1, false, true);

        Attempt(Lease lease, long holderRemainingNanos) {
            this(lease, holderRemainingNanos, true, true);
        }
    }

    // ---------------------------------------------------------------- acquiring

    @Override
    public Optional<Lease> tryAcquire(LockKey key, LeaseOptions options) {
        checkArguments(key, options);
        return tryAcquire(key, options, implicitOwner(), null);
    }

    @Override
    public Optional<Lease> tryAcquire(LockKey key, LeaseOptions options, LockOwner owner) {
        checkArguments(key, options);
        Objects.requireNonNull(owner, "owner is missing (null)");
        return tryAcquire(key, options, explicitOwner(owner), owner.token());
    }

    private Object implicitOwner() {
        return reentrant ? Thread.currentThread() : new Object();
    }

    private Object explicitOwner(LockOwner owner) {
        return reentrant ? owner : new Object();
    }

    private Optional<Lease> tryAcquire(LockKey key, LeaseOptions options, Object owner, String token) {
        long start = ticker.nanos();
        Attempt attempt;
        try {
            attempt = attempt(key, options, owner, token, null, null, start, Long.MAX_VALUE, false);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // unreachable without a deadline; keep the flag
            throw new LeaseStoreException("acquire", key.render(), e);
        }
        if (attempt.lease() == null && listening) {
            emit(new LeaseEvent(LeaseEventType.BUSY, key, store.name(), null, 0, Duration.ZERO, null, null, null));
        }
        return Optional.ofNullable(attempt.lease());
    }

    @Override
    public Lease acquire(LockKey key, LeaseOptions options) throws InterruptedException {
        checkArguments(key, options);
        return acquire(key, options, implicitOwner(), null);
    }

    @Override
    public Lease acquire(LockKey key, LeaseOptions options, LockOwner owner) throws InterruptedException {
        checkArguments(key, options);
        Objects.requireNonNull(owner, "owner is missing (null)");
        return acquire(key, options, explicitOwner(owner), owner.token());
    }

    private Lease acquire(LockKey key, LeaseOptions options, Object owner, String token) throws InterruptedException {
        long start = ticker.nanos();
        long waitNanos = options.waitFor().toNanos();
        if (waitNanos == 0) {
            Attempt attempt = attempt(key, options, owner, token, null, null, start, Long.MAX_VALUE, false);
            if (attempt.lease() != null) {
                return attempt.lease();
            }
            throw busy(key, start);
        }
        if (Thread.interrupted()) {
            throw new InterruptedException("interrupted before waiting for " + key);
        }
        return await(key, options, owner, token, start, start + waitNanos);
    }

    private Lease await(LockKey key, LeaseOptions options, Object owner, String token, long start, long deadline)
            throws InterruptedException {
        Waiter waiter = new Waiter();
        WaitQueue queue = join(key, waiter);
        // One store token for every attempt of this wait, so a store that queues waiters (the Redis
        // fair mode) recognises the waiter again. Still one grant per token: the wait ends with its
        // first grant, and an attempt without an answer ends it too (its token is then given back).
        String waitToken = grantToken(token);
        boolean acquired = false;
        boolean askedStore = false;
        try {
            boolean waitingTold = false;
            long firstRefused = 0;
            boolean refused = false;
            long holderRemaining = -1;
            long poll = minPollNanos;
            while (true) {
                boolean myTurn = !fair || queue.isHead(waiter);
                if (myTurn) {
                    Duration refusedFor = refused ? Duration.ofNanos(Math.max(0, ticker.nanos() - firstRefused)) : null;
                    Attempt attempt;
                    try {
                        attempt = attempt(key, options, owner, token, waitToken, refusedFor, start, deadline, true);
                    } catch (RuntimeException | Error | InterruptedException e) {
                        askedStore = true; // the ask may have taken a place before it threw
                        throw e;
                    }
                    askedStore |= attempt.asked();
                    if (attempt.lease() != null) {
                        acquired = true;
                        return attempt.lease();
                    }
                    if (!attempt.answered()) {
                        throw busy(key, start); // no answer within the wait: the wait ran out
                    }
                    if (!refused) {
                        refused = true;
                        firstRefused = ticker.nanos();
                    }
                    holderRemaining = attempt.holderRemainingNanos();
                }
                if (!waitingTold && listening) {
                    waitingTold = true;
                    emit(new LeaseEvent(
                            LeaseEventType.WAITING, key, store.name(), null, 0, Duration.ZERO, null, null, null));
                }
                if (queue.claimSubscription()) {
                    // Once active, the subscription wakes the waiters to try again: no release
                    // between their last try and the subscription is missed.
                    subscribe(queue, deadline);
                }
                long left = deadline - ticker.nanos();
                if (left <= 0) {
                    throw busy(key, start);
                }
                boolean pushed = queue.subscribed();
                long pause = myTurn && !pushed ? poll : maxPollNanos;
                if (myTurn && holderRemaining >= 0) {
                    // Never sleep past the holder's expiry: a lost notice costs at most that.
                    pause = Math.min(pause, holderRemaining + TimeUnit.MILLISECONDS.toNanos(1));
                }
                if (waiter.await(parking, Math.min(left, pause))) {
                    poll = minPollNanos;
                } else if (!pushed) {
                    poll = Math.min(poll * 2, maxPollNanos);
                }
            }
        } finally {
            leave(queue, waiter, acquired);
            if (!acquired && askedStore) {
                leaveStoreQueue(key, waitToken);
            }
        }
    }

    /**
     * A wait that asked the store ends without the key: the store drops its place ({@link
     * LeaseStore#leaveQueue}), so that a release does not hand the key to this waiter, and a key
     * already handed to it goes on. The caller never waits for it: a store whose leave does not
     * block is called on this thread (what the caller sends next then follows the leave), any
     * other on a worker.
     */
    private void leaveStoreQueue(LockKey key, String waitToken) {
        if (store.leavesQueueWithoutBlocking()) {
            leaveQuietly(key, waitToken);
        } else {
            offCaller(() -> leaveQuietly(key, waitToken));
        }
    }

    private void leaveQuietly(LockKey key, String waitToken) {
        try {
            store.leaveQueue(key, waitToken);
        } catch (RuntimeException e) {
            log.debug("could not leave the store's queue of {}; the place ends at its queue TTL", key, e);
        }
    }

    /** Runs store work that nobody waits for on a worker; after the service closed, on the cleanup pool. */
    private void offCaller(Runnable work) {
        try {
            calls.execute(work);
        } catch (RejectedExecutionException e) {
            cleanup.execute(work);
        }
    }

    private LockBusyException busy(LockKey key, long start) {
        Duration waited = Duration.ofNanos(Math.max(0, ticker.nanos() - start));
        if (listening) {
            emit(new LeaseEvent(LeaseEventType.BUSY, key, store.name(), null, 0, waited, null, null, null));
        }
        return new LockBusyException(key, waited);
    }

    /**
     * One attempt: re-enter the holder's own lease, or ask the store. Under the holder slot's
     * lock, so one holder's attempts on a key are ordered. With a finite {@code deadline} the
     * store call runs on a worker and is waited for until the deadline only.
     */
    private Attempt attempt(
            LockKey key,
            LeaseOptions options,
            Object owner,
            String token,
            String waitToken,
            Duration refusedFor,
            long start,
            long deadline,
            boolean queued)
            throws InterruptedException {
        if (closed.get()) {
            throw new IllegalStateException("the lock service is closed");
        }
        boolean bounded = deadline != Long.MAX_VALUE;
        HolderKey holderKey = new HolderKey(owner, key);
        while (true) {
            HolderSlot slot = holders.computeIfAbsent(holderKey, k -> new HolderSlot());
            if (bounded) {
                long left = deadline - ticker.nanos();
                if (left <= 0 || !slot.lock.tryLock(left, TimeUnit.NANOSECONDS)) {
                    return Attempt.NOT_ASKED;
                }
            } else {
                slot.lock.lock();
            }
            try {
                if (holders.get(holderKey) != slot) {
                    continue; // retired while we waited for its lock
                }
                HeldLease current = slot.lease.get();
                if (current != null && current.tryReenter()) {
                    if (listening) {
                        emit(current.event(LeaseEventType.REENTERED, Duration.ZERO, null, null));
                    }
                    return new Attempt(current.newHandle(), 0);
                }
                if (!queued && fair && hasWaiters(key)) {
                    retire(holderKey, slot);
                    return new Attempt(null, -1); // no barging past a queued waiter
                }
                awaitForceWatch(deadline);
                String grantToken = waitToken != null ? waitToken : grantToken(token);
                AcquireRequest request = waitToken != null
                        ? AcquireRequest.waiting(key, grantToken, options.leaseFor(), refusedFor)
                        : AcquireRequest.once(key, grantToken, options.leaseFor());
                long sent = ticker.nanos();
                AcquireResult result;
                try {
                    result = bounded ? boundedAcquire(request, deadline) : directAcquire(request);
                } catch (RuntimeException | Error | InterruptedException e) {
                    retire(holderKey, slot); // nothing is held: leave no slot behind
                    throw e;
                }
                if (result == null) {
                    retire(holderKey, slot);
                    return Attempt.UNANSWERED;
                }
                if (result instanceof AcquireResult.Granted granted) {
                    return new Attempt(install(holderKey, slot, grantToken, options, granted, sent, start), 0);
                }
                retire(holderKey, slot);
                return new Attempt(
                        null, ((AcquireResult.Busy) result).holderRemaining().toNanos());
            } finally {
                slot.lock.unlock();
            }
        }
    }

    /**
     * The store token of one grant: 128 bits from the secure random source, or the owner's token
     * with a random suffix of this grant's own. Drawn per grant, never derived from a base and a
     * counter: a service built before a process snapshot (a CRaC checkpoint, a cloned VM) and
     * restored twice would give both copies the same tokens, which a store takes for re-entry, so
     * both would hold the key ({@code LeaseOwnersTest}).
     */
    private String grantToken(String ownerToken) {
        if (ownerToken == null) {
            return LockOwner.randomToken();
        }
        String base = ownerToken.substring(0, Math.min(ownerToken.length(), MAX_TOKEN - SUFFIX));
        return base + "."
                + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong());
    }

    private AcquireResult directAcquire(AcquireRequest request) {
        try {
            return store.tryAcquire(request);
        } catch (RuntimeException | Error e) {
            releaseAmbiguous(request.key(), request.owner());
            throw storeFailure("acquire", request.key(), e);
        }
    }

    /**
     * A waiter's acquire, its answer waited for until the deadline; null if no answer came in
     * time. An answer after the deadline is handled where it arrives: a grant (or a failure, of
     * unknown outcome) is given back, and the waiter leaves the store's queue again, as the ask may
     * have taken a place after the wait's own leave was sent.
     */
    private AcquireResult boundedAcquire(AcquireRequest request, long deadline) throws InterruptedException {
        LockKey key = request.key();
        String grantToken = request.owner();
        // Off the thread that brought the answer, which may be the store client's I/O thread.
        java.util.function.Consumer<StoreCall<AcquireResult>> orphaned = orphan -> {
            if (orphan.failure() != null || orphan.value() instanceof AcquireResult.Granted) {
                releaseAmbiguous(key, grantToken);
            }
            offCaller(() -> leaveQuietly(key, grantToken));
        };
        java.util.concurrent.CompletionStage<AcquireResult> answer;
        try {
            answer = store.tryAcquireAsync(request);
        } catch (RuntimeException | Error e) {
            answer = java.util.concurrent.CompletableFuture.failedFuture(e);
        }
        StoreCall<AcquireResult> call = answer != null
                ? StoreCall.of(answer, orphaned)
                : StoreCall.start(calls, () -> store.tryAcquire(request), orphaned);
        if (!call.await(parking, deadline)) {
            return null;
        }
        if (call.failure() != null) {
            releaseAmbiguous(key, grantToken);
            throw storeFailure("acquire", key, call.failure());
        }
        return call.value();
    }

    private static RuntimeException storeFailure(String operation, LockKey key, Throwable failure) {
        if (failure instanceof Error error) {
            throw error;
        }
        if (failure instanceof LeaseholdException e) {
            return e;
        }
        return new LeaseStoreException(operation, key.render(), failure);
    }

    /** The store may have applied an acquire that failed: release its grant, best effort, off this thread. */
    private void releaseAmbiguous(LockKey key, String grantToken) {
        // Closed or not, never on this thread, which may be the store client's I/O thread (a
        // blocking release there waits for a reply only that thread can read).
        offCaller(() -> releaseQuietly(key, grantToken));
    }

    private void releaseQuietly(LockKey key, String grantToken) {
        try {
            if (store.release(key, grantToken)) {
                log.info("released a grant of {} whose acquire reported a failure or came too late", key);
                wake(key);
            }
        } catch (RuntimeException e) {
            log.warn("could not release a grant of {} of unknown outcome; it ends at its expiry", key, e);
        }
    }

    /** Makes the grant a lease; if anything fails on the way, the grant is given back. */
    private Lease install(
            HolderKey holderKey,
            HolderSlot slot,
            String grantToken,
            LeaseOptions options,
            AcquireResult.Granted granted,
            long sent,
            long start) {
        HeldLease lease = null;
        try {
            lease = new HeldLease(this, holderKey, slot, grantToken, options, granted.grant(), sent);
            slot.lease.set(lease);
            lease.start();
            if (listening) {
                emit(new LeaseEvent(
                        LeaseEventType.ACQUIRED,
                        holderKey.key(),
                        store.name(),
                        LockOwner.abbreviate(grantToken),
                        lease.fence,
                        Duration.ofNanos(Math.max(0, ticker.nanos() - start)),
                        null,
                        null,
                        null));
            }
            return lease.newHandle();
        } catch (RuntimeException | Error e) {
            if (lease != null) {
                lease.abandon();
                slot.lease.compareAndSet(lease, null);
            }
            retire(holderKey, slot);
            releaseAmbiguous(holderKey.key(), grantToken);
            throw e;
        }
    }

    /** How many holder slots are tracked: one per holder and key with a lease or an attempt in progress. */
    int holderSlots() {
        return holders.size();
    }

    /** Forgets a slot that holds no lease; the caller holds its lock. */
    private void retire(HolderKey holderKey, HolderSlot slot) {
        if (slot.lease.get() == null) {
            holders.remove(holderKey, slot);
        }
    }

    /** Called by a lease at its last release: it is no longer the holder's current grant. */
    void forget(HeldLease lease) {
        HolderSlot slot = lease.slot;
        if (slot.lease.compareAndSet(lease, null) && slot.lock.tryLock()) {
            try {
                retire(lease.holderKey, slot);
            } finally {
                slot.lock.unlock();
            }
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
        return acquireAll(sortedDistinct(keys), options, implicitOwner(), null);
    }

    @Override
    public LeaseGroup acquireAll(Collection<LockKey> keys, LeaseOptions options, LockOwner owner)
            throws InterruptedException {
        Objects.requireNonNull(options, "lease options are missing (null)");
        Objects.requireNonNull(owner, "owner is missing (null)");
        return acquireAll(sortedDistinct(keys), options, explicitOwner(owner), owner.token());
    }

    /**
     * A batch: first ONE attempt at every key together ({@link LeaseStore#tryAcquireAll}, a single
     * script for keys on one Redis shard); if a key is busy and the caller may wait, then key by key
     * in sorted order with the rest of the wait, as a single acquire waits. All or nothing either
     * way: nothing of a batch that fails stays held.
     */
    private LeaseGroup acquireAll(List<LockKey> sorted, LeaseOptions options, Object owner, String token)
            throws InterruptedException {
        long start = ticker.nanos();
        long waitNanos = options.waitFor().toNanos();
        long deadline = waitNanos == 0 ? Long.MAX_VALUE : start + waitNanos;
        if (waitNanos != 0 && Thread.interrupted()) {
            throw new InterruptedException("interrupted before waiting for a batch of " + sorted.size() + " keys");
        }
        BatchAttempt attempt = attemptBatch(sorted, options, owner, token, start, deadline);
        if (attempt.group() != null) {
            return attempt.group();
        }
        if (!attempt.answered()) {
            throw batchBusy(busy(sorted.get(0), start), sorted.size()); // no answer within the wait
        }
        if (waitNanos == 0) {
            throw batchBusy(busy(attempt.busyKey(), start), sorted.size());
        }
        List<Lease> taken = new ArrayList<>(sorted.size());
        try {
            for (LockKey key : sorted) {
                long left = Math.max(0, waitNanos - (ticker.nanos() - start));
                Object holder = reentrant ? owner : new Object();
                taken.add(acquire(key, options.withWait(Duration.ofNanos(left)), holder, token));
            }
            return new LeaseGroup(taken);
        } catch (LockBusyException e) {
            releaseTaken(taken, e);
            throw batchBusy(e, sorted.size());
        } catch (Throwable e) {
            // Whatever escapes (also an Error), nothing taken stays held.
            releaseTaken(taken, e);
            throw e;
        }
    }

    private static LockBusyException batchBusy(LockBusyException e, int size) {
        return new LockBusyException(
                e.key(), e.waited(), "batch of " + size + " keys not taken, nothing of it is held: " + e.getMessage());
    }

    /** The outcome of one attempt at a whole batch: the group, or the busy key, or no answer in time. */
    private record BatchAttempt(LeaseGroup group, LockKey busyKey, boolean answered) {
        static final BatchAttempt UNANSWERED = new BatchAttempt(null, null, false);
    }

    /**
     * One attempt at the whole batch, under the holder slots of all its keys (locked in sorted
     * order, so two batches of one owner never wait for each other in a circle): keys the holder
     * already holds are re-entered, the others are asked for in ONE store call. Busy if any key
     * is, or (fair) if a key has waiters here; then nothing of the batch is held.
     */
    private BatchAttempt attemptBatch(
            List<LockKey> sorted, LeaseOptions options, Object owner, String token, long start, long deadline)
            throws InterruptedException {
        if (closed.get()) {
            throw new IllegalStateException("the lock service is closed");
        }
        boolean bounded = deadline != Long.MAX_VALUE;
        int size = sorted.size();
        HolderKey[] holderKeys = new HolderKey[size];
        HolderSlot[] slots = new HolderSlot[size];
        int locked = 0;
        try {
            for (int i = 0; i < size; i++) {
                holderKeys[i] = new HolderKey(reentrant ? owner : new Object(), sorted.get(i));
                HolderSlot slot = lockSlot(holderKeys[i], bounded, deadline);
                if (slot == null) {
                    return BatchAttempt.UNANSWERED;
                }
                slots[i] = slot;
                locked++;
            }
            return attemptLocked(sorted, options, token, start, deadline, holderKeys, slots);
        } finally {
            for (int i = locked - 1; i >= 0; i--) {
                retire(holderKeys[i], slots[i]);
                slots[i].lock.unlock();
            }
        }
    }

    /** The holder's current slot for the key, locked; null if it could not be locked by the deadline. */
    private HolderSlot lockSlot(HolderKey holderKey, boolean bounded, long deadline) throws InterruptedException {
        while (true) {
            HolderSlot slot = holders.computeIfAbsent(holderKey, k -> new HolderSlot());
            if (bounded) {
                long left = deadline - ticker.nanos();
                if (left <= 0 || !slot.lock.tryLock(left, TimeUnit.NANOSECONDS)) {
                    return null;
                }
            } else {
                slot.lock.lock();
            }
            if (holders.get(holderKey) == slot) {
                return slot;
            }
            slot.lock.unlock(); // retired while we waited for its lock
        }
    }

    private BatchAttempt attemptLocked(
            List<LockKey> sorted,
            LeaseOptions options,
            String token,
            long start,
            long deadline,
            HolderKey[] holderKeys,
            HolderSlot[] slots)
            throws InterruptedException {
        int size = sorted.size();
        Lease[] leases = new Lease[size];
        List<HeldLease> reentered = new ArrayList<>();
        List<Integer> fresh = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            HeldLease current = slots[i].lease.get();
            if (current != null && current.tryReenter()) {
                leases[i] = current.newHandle();
                reentered.add(current);
            } else {
                fresh.add(i);
            }
        }
        boolean done = false;
        try {
            for (int i : fresh) {
                if (fair && hasWaiters(sorted.get(i))) {
                    return new BatchAttempt(null, sorted.get(i), true); // no barging past a queued waiter
                }
            }
            if (!fresh.isEmpty()) {
                awaitForceWatch(deadline);
                List<LockKey> asked = fresh.stream().map(sorted::get).toList();
                String grantToken = grantToken(token);
                long sent = ticker.nanos();
                BatchAcquireResult result = deadline != Long.MAX_VALUE
                        ? boundedAcquireAll(asked, grantToken, options, deadline)
                        : directAcquireAll(asked, grantToken, options);
                if (result == null) {
                    return BatchAttempt.UNANSWERED;
                }
                if (result instanceof BatchAcquireResult.Busy busy) {
                    return new BatchAttempt(null, busy.key(), true);
                }
                List<Grant> grants = ((BatchAcquireResult.Granted) result).grants();
                for (int j = 0; j < fresh.size(); j++) {
                    int i = fresh.get(j);
                    try {
                        leases[i] = install(
                                holderKeys[i],
                                slots[i],
                                grantToken,
                                options,
                                new AcquireResult.Granted(grants.get(j)),
                                sent,
                                start);
                    } catch (RuntimeException | Error e) {
                        // install gave its own grant back; the leases made before it and the
                        // grants after it go back too
                        List<Lease> installed = new ArrayList<>();
                        for (int k = 0; k < j; k++) {
                            installed.add(leases[fresh.get(k)]);
                        }
                        releaseTaken(installed, e);
                        for (int k = j + 1; k < fresh.size(); k++) {
                            releaseAmbiguous(sorted.get(fresh.get(k)), grantToken);
                        }
                        throw e;
                    }
                }
            }
            done = true;
            for (HeldLease held : reentered) {
                emit(held.event(LeaseEventType.REENTERED, Duration.ZERO, null, null));
            }
            return new BatchAttempt(new LeaseGroup(List.of(leases)), null, true);
        } finally {
            if (!done) {
                for (HeldLease held : reentered) {
                    try {
                        held.releaseOne(); // gives back the hold added above
                    } catch (RuntimeException e) {
                        log.warn("could not give back a hold of {} after a refused batch", held.key, e);
                    }
                }
            }
        }
    }

    private BatchAcquireResult directAcquireAll(List<LockKey> keys, String grantToken, LeaseOptions options) {
        try {
            return checkedBatch(keys, store.tryAcquireAll(keys, grantToken, options.leaseFor()));
        } catch (RuntimeException | Error e) {
            keys.forEach(key -> releaseAmbiguous(key, grantToken));
            throw storeFailure("acquire", keys.get(0), e);
        }
    }

    /** The batch acquire on a worker, waited for until the deadline; null if no answer came in time. */
    private BatchAcquireResult boundedAcquireAll(
            List<LockKey> keys, String grantToken, LeaseOptions options, long deadline) throws InterruptedException {
        StoreCall<BatchAcquireResult> call = StoreCall.start(
                calls,
                () -> checkedBatch(keys, store.tryAcquireAll(keys, grantToken, options.leaseFor())),
                // Granted after the caller left, or failed with an unknown outcome: give it back.
                orphan -> {
                    if (orphan.failure() != null || orphan.value() instanceof BatchAcquireResult.Granted) {
                        keys.forEach(key -> releaseQuietly(key, grantToken));
                    }
                });
        if (!call.await(parking, deadline)) {
            return null;
        }
        if (call.failure() != null) {
            keys.forEach(key -> releaseAmbiguous(key, grantToken));
            throw storeFailure("acquire", keys.get(0), call.failure());
        }
        return call.value();
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

    @Override
    public Optional<LeaseGroup> tryAcquireAll(Collection<LockKey> keys, LeaseOptions options) {
        Objects.requireNonNull(options, "lease options are missing (null)");
        return tryAll(() -> acquireAll(keys, options.withWait(Duration.ZERO)));
    }

    @Override
    public Optional<LeaseGroup> tryAcquireAll(Collection<LockKey> keys, LeaseOptions options, LockOwner owner) {
        Objects.requireNonNull(options, "lease options are missing (null)");
        return tryAll(() -> acquireAll(keys, options.withWait(Duration.ZERO), owner));
    }

    private interface Batch {
        LeaseGroup take() throws InterruptedException;
    }

    private static Optional<LeaseGroup> tryAll(Batch batch) {
        try {
            return Optional.of(batch.take());
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

    private static void releaseTaken(List<Lease> taken, Throwable failure) {
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
            HeldLease lease = slot.lease.get();
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
        } catch (RuntimeException e) {
            throw storeFailure("inspect", key, e);
        }
    }

    @Override
    public boolean forceRelease(LockKey key, String reason) {
        LockKey.requireKey(key);
        if (reason == null || reason.isBlank()) {
            throw new IllegalArgumentException("a force-release needs a reason for the audit log");
        }
        // Only leases held before the call can be the one removed; one granted meanwhile is newer
        // and innocent (a notice with the removed grant's fence reaches every process, this one too).
        List<HeldLease> before = leasesOn(key);
        boolean removed;
        try {
            removed = store.forceRelease(key);
        } catch (RuntimeException e) {
            throw storeFailure("force-release", key, e);
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
        for (HeldLease lease : before) {
            lease.markLost("force-released by an operator: " + reason);
        }
        wake(key);
        return removed;
    }

    private List<HeldLease> leasesOn(LockKey key) {
        List<HeldLease> found = new ArrayList<>();
        holders.forEach((holderKey, slot) -> {
            HeldLease lease = slot.lease.get();
            if (holderKey.key().equals(key) && lease != null) {
                found.add(lease);
            }
        });
        return found;
    }

    /** On the notice thread: a force-release anywhere ends the local grant with that fence, and only it. */
    private void forceNotice(ReleaseNotice notice) {
        if (notice.fence() == 0) {
            return;
        }
        holders.forEach((holderKey, slot) -> {
            HeldLease lease = slot.lease.get();
            if (lease != null
                    && lease.fence == notice.fence()
                    && holderKey.key().render().equals(notice.key())) {
                lease.markLost("force-released by an operator (announced by the store)");
            }
        });
    }

    /**
     * Subscribes to the store's force-release notices before the first grant, so a holder here
     * hears of a force-release made anywhere. Waits for the subscription until the deadline.
     */
    private void awaitForceWatch(long deadline) throws InterruptedException {
        if (!store.supportsReleaseNotifications() || forceWatch.get() != null) {
            return;
        }
        StoreCall<ReleaseSubscription> call = new StoreCall<>(
                () -> store.subscribeForceReleases(notice -> handOff(() -> forceNotice(notice))),
                this::forceWatchEnded);
        if (!forceWatch.compareAndSet(null, call)) {
            return; // another caller subscribes
        }
        call.startOn(calls);
        // If this caller stops waiting, the call goes on and the watch is active once it returns.
        if (call.await(parking, deadline)) {
            forceWatchEnded(call);
        }
    }

    private void forceWatchEnded(StoreCall<ReleaseSubscription> call) {
        if (call.value() != null) {
            forceSubscription.set(call.value());
            if (closed.get()) {
                closeQuietly(call.value(), "force-release notices");
            }
            return;
        }
        Throwable failure = call.failure();
        if (failure instanceof UnsupportedOperationException) {
            log.info("{} announces no force-releases; holders learn of them at their next renewal", store.name());
            return;
        }
        log.warn("could not subscribe to force-release notices of {}; will try again", store.name(), failure);
        forceWatch.compareAndSet(call, null);
    }

    boolean storeRelease(LockKey key, String token) {
        try {
            return store.release(key, token);
        } catch (RuntimeException e) {
            throw storeFailure("release", key, e);
        }
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        List<HeldLease> held = new ArrayList<>();
        holders.values().forEach(slot -> {
            HeldLease lease = slot.lease.get();
            if (lease != null && lease.abandon()) {
                held.add(lease);
            }
        });
        for (HeldLease lease : held) {
            try {
                storeRelease(lease.key, lease.token);
            } catch (RuntimeException e) {
                log.warn("could not release {} while closing; it ends at its expiry", lease.key, e);
            }
        }
        ReleaseSubscription watch = forceSubscription.getAndSet(null);
        if (watch != null) {
            closeQuietly(watch, "force-release notices");
        }
        leaseTimer.close();
        renewals.shutdownNow();
        calls.shutdown();
        notices.shutdown();
        callbacks.shutdown();
        if (ownsTimer) {
            timer.shutdownNow();
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

    /** Runs loss events and callbacks off the timer and the store's threads. */
    void runCallback(Runnable work) {
        try {
            callbacks.execute(work);
        } catch (RejectedExecutionException e) {
            work.run(); // closing: run it here rather than lose it
        }
    }

    /** What a store callback does: hand the work to the notice thread, never more. */
    private void handOff(Runnable work) {
        try {
            notices.execute(work);
        } catch (RejectedExecutionException e) {
            // Closed: nobody waits any more.
        }
    }

    private static void closeQuietly(ReleaseSubscription subscription, Object what) {
        try {
            subscription.close();
        } catch (RuntimeException e) {
            log.warn("could not close the release subscription of {}", what, e);
        }
    }

    // ---------------------------------------------------------------- waiting

    /** One waiting caller: woken by a signal or its alarm. */
    private static final class Waiter {
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

    /**
     * This JVM's waiters for one key, in arrival order, and their shared release subscription. Its
     * lock is held only for a few field updates, never across a store call; a retired queue (its
     * last waiter left) takes no one, and the next waiter starts a new one.
     */
    private final class WaitQueue {
        final LockKey key;
        final ReentrantLock lock = new ReentrantLock();
        final ArrayDeque<Waiter> waiters = new ArrayDeque<>(); // guarded by lock
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
                wakeQueue(this);
            } else {
                closeLater(arrived);
            }
        }
    }

    private WaitQueue join(LockKey key, Waiter waiter) {
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

    private void leave(WaitQueue queue, Waiter waiter, boolean acquired) {
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
        offCaller(() -> closeQuietly(subscription, "a key"));
    }

    /**
     * Subscribes to the queue's key on a worker, waiting until the deadline at most; the
     * subscription, when it arrives (also later), wakes the queue's waiters.
     */
    private void subscribe(WaitQueue queue, long deadline) throws InterruptedException {
        LockKey key = queue.key;
        StoreCall<ReleaseSubscription> call =
                StoreCall.start(calls, () -> store.subscribe(key, notice -> handOff(() -> wake(key))), orphan -> {
                    if (orphan.value() != null) {
                        queue.subscriptionArrived(orphan.value());
                    } else {
                        log.warn("could not subscribe to releases of {}; waiters poll instead", key, orphan.failure());
                    }
                });
        if (!call.await(parking, deadline)) {
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

    private boolean hasWaiters(LockKey key) {
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
            wakeQueue(queue);
        }
    }

    private void wakeQueue(WaitQueue queue) {
        List<Waiter> toWake;
        queue.lock.lock();
        try {
            if (queue.waiters.isEmpty()) {
                return;
            }
            toWake = fair ? List.of(queue.waiters.peekFirst()) : List.copyOf(queue.waiters);
        } finally {
            queue.lock.unlock();
        }
        toWake.forEach(Waiter::signal);
    }
}
