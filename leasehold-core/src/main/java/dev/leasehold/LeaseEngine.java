package dev.leasehold;

import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine behind {@link LockService}, written once for every store: re-entry, waiting with
 * wake-ups, batches, renewal and loss, force-release notices and events. A facade over the parts
 * that each keep one concurrency rule: {@link KeyAcquirer} and {@link BatchAcquirer} (acquiring),
 * {@link LocalWaitQueues} (waiting in this JVM), {@link HolderSlots} (one holder's acquisitions
 * of a key), {@link AcquireCalls} (no grant left behind), {@link ForceReleaseWatch} and {@link
 * EngineThreads}. How they work together is described in docs/design/engine.md. Thread-safe.
 */
final class LeaseEngine implements LockService {

    private static final Logger log = LoggerFactory.getLogger(LeaseEngine.class);

    private final LeaseStore store;
    final EngineThreads threads;
    private final Listeners listeners;
    private final HolderSlots slots;
    private final LocalWaitQueues queues;
    private final ForceReleaseWatch forceWatch;
    private final KeyAcquirer keyAcquirer;
    private final BatchAcquirer batchAcquirer;
    private final boolean reentrant;
    private final LeaseHost host;
    /** Asked of the store at the first renewal, not at build: a store may connect on first use. */
    private final AtomicReference<Optional<RenewalBatches>> renewalBatches = new AtomicReference<>();

    private final RenewalLag renewalLag = new RenewalLag();
    private final AtomicBoolean closed = new AtomicBoolean();

    LeaseEngine(
            LeaseStore store,
            ScheduledExecutorService scheduler,
            ExecutorService storeCalls,
            Ticker ticker,
            List<LeaseListener> listeners,
            boolean fair,
            boolean reentrant,
            Duration minPoll,
            Duration maxPoll) {
        this.store = store;
        this.threads = new EngineThreads(scheduler, storeCalls, ticker);
        this.listeners = new Listeners(listeners);
        this.reentrant = reentrant;
        this.slots = new HolderSlots(ticker);
        this.queues = new LocalWaitQueues(store, threads, fair, closed::get);
        this.forceWatch = new ForceReleaseWatch(store, threads, slots, closed::get);
        AcquireCalls calls = new AcquireCalls(store, threads, queues, closed::get);
        LeaseHost host = new Host(ticker);
        this.host = host;
        this.keyAcquirer =
                new KeyAcquirer(host, threads, slots, queues, calls, forceWatch, closed::get, fair, minPoll, maxPoll);
        this.batchAcquirer =
                new BatchAcquirer(host, keyAcquirer, slots, queues, calls, forceWatch, closed::get, fair, reentrant);
    }

    // ---------------------------------------------------------------- acquiring

    @Override
    public Optional<Lease> tryAcquire(LockKey key, LeaseOptions options) {
        checkArguments(key, options);
        return keyAcquirer.tryAcquire(key, options, implicitOwner(), null);
    }

    @Override
    public Optional<Lease> tryAcquire(LockKey key, LeaseOptions options, LockOwner owner) {
        checkArguments(key, options);
        Objects.requireNonNull(owner, "owner is missing (null)");
        return keyAcquirer.tryAcquire(key, options, explicitOwner(owner), owner.token());
    }

    @Override
    public Lease acquire(LockKey key, LeaseOptions options) throws InterruptedException {
        checkArguments(key, options);
        return keyAcquirer.acquire(key, options, implicitOwner(), null);
    }

    @Override
    public Lease acquire(LockKey key, LeaseOptions options, LockOwner owner) throws InterruptedException {
        checkArguments(key, options);
        Objects.requireNonNull(owner, "owner is missing (null)");
        return keyAcquirer.acquire(key, options, explicitOwner(owner), owner.token());
    }

    @Override
    public LeaseGroup acquireAll(Collection<LockKey> keys, LeaseOptions options) throws InterruptedException {
        Objects.requireNonNull(options, "lease options are missing (null)");
        return batchAcquirer.acquireAll(BatchAcquirer.sortedDistinct(keys), options, implicitOwner(), null);
    }

    @Override
    public LeaseGroup acquireAll(Collection<LockKey> keys, LeaseOptions options, LockOwner owner)
            throws InterruptedException {
        Objects.requireNonNull(options, "lease options are missing (null)");
        Objects.requireNonNull(owner, "owner is missing (null)");
        return batchAcquirer.acquireAll(
                BatchAcquirer.sortedDistinct(keys), options, explicitOwner(owner), owner.token());
    }

    @Override
    public Optional<LeaseGroup> tryAcquireAll(Collection<LockKey> keys, LeaseOptions options) {
        Objects.requireNonNull(options, "lease options are missing (null)");
        return batchAcquirer.tryAcquireAll(BatchAcquirer.sortedDistinct(keys), options, implicitOwner(), null);
    }

    @Override
    public Optional<LeaseGroup> tryAcquireAll(Collection<LockKey> keys, LeaseOptions options, LockOwner owner) {
        Objects.requireNonNull(options, "lease options are missing (null)");
        Objects.requireNonNull(owner, "owner is missing (null)");
        return batchAcquirer.tryAcquireAll(
                BatchAcquirer.sortedDistinct(keys), options, explicitOwner(owner), owner.token());
    }

    /** The thread holds, when re-entrant; otherwise every acquisition is a holder of its own. */
    private Object implicitOwner() {
        return reentrant ? Thread.currentThread() : new Object();
    }

    private Object explicitOwner(LockOwner owner) {
        return reentrant ? owner : new Object();
    }

    private static void checkArguments(LockKey key, LeaseOptions options) {
        LockKey.requireKey(key);
        Objects.requireNonNull(options, "lease options are missing (null)");
    }

    /** How many holder slots are tracked: one per holder and key with a lease or an attempt in progress. */
    int holderSlots() {
        return slots.size();
    }

    // ---------------------------------------------------------------- operations

    @Override
    public List<HeldLeaseInfo> heldLeases() {
        List<HeldLeaseInfo> held = new ArrayList<>();
        for (HeldLease lease : slots.leases()) {
            if (lease.isHeld()) {
                held.add(lease.info());
            }
        }
        held.sort(Comparator.comparing(HeldLeaseInfo::heldFor).reversed());
        return held;
    }

    @Override
    public Optional<LeaseInfo> inspect(LockKey key) {
        LockKey.requireKey(key);
        try {
            return store.inspect(key);
        } catch (RuntimeException e) {
            throw AcquireCalls.storeFailure("inspect", key, e);
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
        List<HeldLease> before = slots.leasesOn(key);
        boolean removed;
        try {
            removed = store.forceRelease(key);
        } catch (RuntimeException e) {
            throw AcquireCalls.storeFailure("force-release", key, e);
        }
        listeners.emit(LeaseEvent.forceReleased(key, store.name(), reason + (removed ? "" : " (no lease was held)")));
        for (HeldLease lease : before) {
            lease.markLost("force-released by an operator: " + reason);
        }
        queues.wake(key);
        return removed;
    }

    private boolean storeRelease(LockKey key, String token) {
        try {
            return store.release(key, token);
        } catch (RuntimeException e) {
            throw AcquireCalls.storeFailure("release", key, e);
        }
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        List<HeldLease> held = new ArrayList<>();
        for (HeldLease lease : slots.leases()) {
            if (lease.abandon()) {
                held.add(lease);
            }
        }
        for (HeldLease lease : held) {
            try {
                storeRelease(lease.key, lease.token);
            } catch (RuntimeException e) {
                log.warn("could not release {} while closing; it ends at its expiry", lease.key, e);
            }
        }
        forceWatch.close();
        queues.wakeEveryone(); // each wait ends now, not at its next poll
        threads.close();
    }

    /** The batches of a store that renews in batches; null when each lease is renewed on its own. */
    private RenewalBatches renewalBatches() {
        Optional<RenewalBatches> known = renewalBatches.get();
        if (known == null) {
            int limit = store.renewalBatchLimit();
            renewalBatches.compareAndSet(
                    null, Optional.ofNullable(limit > 1 ? new RenewalBatches(store, limit, host, threads) : null));
            known = renewalBatches.get();
        }
        return known.orElse(null);
    }

    /** What the engine's held leases use of it. */
    private final class Host implements LeaseHost {
        private final Ticker ticker;

        Host(Ticker ticker) {
            this.ticker = ticker;
        }

        @Override
        public long nanos() {
            return ticker.nanos();
        }

        @Override
        public LeaseTimer.Entry schedule(Runnable task, long delayNanos) {
            return threads.leaseTimer().schedule(task, delayNanos);
        }

        @Override
        public LeaseTimer.Entry scheduleAt(Runnable task, long atNanos) {
            return threads.leaseTimer().scheduleAt(task, atNanos);
        }

        @Override
        public Future<?> requestRenewal(HeldLease lease, long dueNanos) {
            RenewalBatches batches = renewalBatches();
            if (batches == null) {
                return threads.submitRenewal(() -> lease.renewNow(dueNanos));
            }
            return batches.add(
                    lease, RenewalBatches.window(lease.renewal().leaseFor().toNanos()));
        }

        @Override
        public long renewalGrid(long leaseForNanos) {
            return renewalBatches() == null ? 1 : RenewalBatches.window(leaseForNanos);
        }

        @Override
        public void renewalConfirmed(LockKey key, long lagNanos, long leaseForNanos) {
            renewalLag.record(key, lagNanos, leaseForNanos, ticker.nanos());
        }

        @Override
        public Optional<Grant> renew(LockKey key, String token, Duration leaseFor) {
            return store.renew(key, token, leaseFor);
        }

        @Override
        public boolean release(LockKey key, String token) {
            return storeRelease(key, token);
        }

        @Override
        public void forget(HeldLease lease) {
            slots.forget(lease);
        }

        @Override
        public void wake(LockKey key) {
            queues.wake(key);
        }

        @Override
        public boolean listening() {
            return listeners.active();
        }

        @Override
        public void emit(LeaseEvent event) {
            listeners.emit(event);
        }

        @Override
        public void runCallback(Runnable work) {
            threads.runCallback(work);
        }

        @Override
        public String storeName() {
            return store.name();
        }
    }
}
