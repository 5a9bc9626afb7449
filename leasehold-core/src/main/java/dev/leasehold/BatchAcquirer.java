package dev.leasehold;

import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.BatchAcquireResult;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeSet;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Acquires several keys for one holder, all or nothing: first one attempt at every key together
 * ({@link LeaseStore#tryAcquireAll}); if a key is busy and the caller may wait, then key by key
 * in sorted order with the rest of the wait. Nothing of a batch that fails stays held.
 * Thread-safe.
 */
final class BatchAcquirer {

    private static final Logger log = LoggerFactory.getLogger(BatchAcquirer.class);

    private final LeaseHost host;
    private final KeyAcquirer keyAcquirer;
    private final HolderSlots slots;
    private final LocalWaitQueues queues;
    private final AcquireCalls calls;
    private final ForceReleaseWatch forceWatch;
    private final BooleanSupplier closed;
    private final boolean fair;
    private final boolean reentrant;

    BatchAcquirer(
            LeaseHost host,
            KeyAcquirer keyAcquirer,
            HolderSlots slots,
            LocalWaitQueues queues,
            AcquireCalls calls,
            ForceReleaseWatch forceWatch,
            BooleanSupplier closed,
            boolean fair,
            boolean reentrant) {
        this.host = host;
        this.keyAcquirer = keyAcquirer;
        this.slots = slots;
        this.queues = queues;
        this.calls = calls;
        this.forceWatch = forceWatch;
        this.closed = closed;
        this.fair = fair;
        this.reentrant = reentrant;
    }

    /** The outcome of one attempt at a whole batch: the group, or the busy key, or no answer in time. */
    private record BatchAttempt(LeaseGroup group, LockKey busyKey, boolean answered) {
        static final BatchAttempt UNANSWERED = new BatchAttempt(null, null, false);
    }

    /** The keys, sorted, without duplicates. */
    static List<LockKey> sortedDistinct(Collection<LockKey> keys) {
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

    /** The sorted keys, waiting up to the options' wait. */
    LeaseGroup acquireAll(List<LockKey> sorted, LeaseOptions options, Object owner, String token)
            throws InterruptedException {
        long start = host.nanos();
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
            throw batchBusy(keyAcquirer.busy(sorted.get(0), start), sorted.size()); // no answer within the wait
        }
        if (waitNanos == 0) {
            throw batchBusy(keyAcquirer.busy(attempt.busyKey(), start), sorted.size());
        }
        List<Lease> taken = new ArrayList<>(sorted.size());
        try {
            for (LockKey key : sorted) {
                long left = waitNanos - (host.nanos() - start);
                if (left <= 0) {
                    // The wait ran out on an earlier key: a wait of zero would still ask the store.
                    throw keyAcquirer.busy(key, start);
                }
                Object holder = reentrant ? owner : new Object();
                taken.add(keyAcquirer.acquire(key, options.withWait(Duration.ofNanos(left)), holder, token));
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

    /** The batch in one attempt, never waiting; empty if a key is busy. */
    Optional<LeaseGroup> tryAcquireAll(List<LockKey> sorted, LeaseOptions options, Object owner, String token) {
        try {
            return Optional.of(acquireAll(sorted, options.withWait(Duration.ZERO), owner, token));
        } catch (LockBusyException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            // Unreachable without a wait; keep the flag for the caller all the same.
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }

    private static LockBusyException batchBusy(LockBusyException e, int size) {
        return new LockBusyException(
                e.key(), e.waited(), "batch of " + size + " keys not taken, nothing of it is held: " + e.getMessage());
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
        if (closed.getAsBoolean()) {
            throw new IllegalStateException("the lock service is closed");
        }
        boolean bounded = deadline != Long.MAX_VALUE;
        int size = sorted.size();
        HolderSlots.HolderKey[] holderKeys = new HolderSlots.HolderKey[size];
        HolderSlots.HolderSlot[] locks = new HolderSlots.HolderSlot[size];
        int locked = 0;
        try {
            for (int i = 0; i < size; i++) {
                holderKeys[i] = new HolderSlots.HolderKey(reentrant ? owner : new Object(), sorted.get(i));
                HolderSlots.HolderSlot slot = slots.lock(holderKeys[i], bounded, deadline);
                if (slot == null) {
                    return BatchAttempt.UNANSWERED;
                }
                locks[i] = slot;
                locked++;
            }
            return attemptLocked(sorted, options, token, start, deadline, holderKeys, locks);
        } finally {
            for (int i = locked - 1; i >= 0; i--) {
                slots.retire(holderKeys[i], locks[i]);
                locks[i].lock.unlock();
            }
        }
    }

    private BatchAttempt attemptLocked(
            List<LockKey> sorted,
            LeaseOptions options,
            String token,
            long start,
            long deadline,
            HolderSlots.HolderKey[] holderKeys,
            HolderSlots.HolderSlot[] locks)
            throws InterruptedException {
        int size = sorted.size();
        Lease[] leases = new Lease[size];
        List<HeldLease> reentered = new ArrayList<>();
        List<Integer> fresh = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            HeldLease current = locks[i].lease.get();
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
                if (fair && queues.hasWaiters(sorted.get(i))) {
                    return new BatchAttempt(null, sorted.get(i), true); // no barging past a queued waiter
                }
            }
            if (!fresh.isEmpty()) {
                forceWatch.await(deadline);
                if (deadline != Long.MAX_VALUE && deadline - host.nanos() <= 0) {
                    // The wait ran out while the force-release watch subscribed: ask nothing now,
                    // or an answer that came at once would still be taken after the wait ended.
                    return BatchAttempt.UNANSWERED;
                }
                List<LockKey> asked = fresh.stream().map(sorted::get).toList();
                String grantToken = KeyAcquirer.grantToken(token);
                long sent = host.nanos();
                BatchAcquireResult result = calls.acquireAll(asked, grantToken, options.leaseFor(), deadline);
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
                        leases[i] = keyAcquirer.install(
                                holderKeys[i],
                                locks[i],
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
                            calls.releaseAmbiguous(sorted.get(fresh.get(k)), grantToken);
                        }
                        throw e;
                    }
                }
            }
            done = true;
            for (HeldLease held : reentered) {
                host.emit(held.event(LeaseEventType.REENTERED));
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

    private static void releaseTaken(List<Lease> taken, Throwable failure) {
        try {
            LeaseGroup.releaseInReverse(taken);
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
    }
}
