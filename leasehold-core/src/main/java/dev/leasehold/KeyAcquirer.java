package dev.leasehold;

import dev.leasehold.spi.AcquireRequest;
import dev.leasehold.spi.AcquireResult;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Acquires one key for one holder: re-enters the holder's own lease, or asks the store once, or
 * waits in the key's local queue until a grant, the deadline or a failure. A wait that ends
 * without the key throws {@link LockBusyException}, also when its last store call got no answer
 * in time; only a store call that fails is a {@link LeaseStoreException}. Thread-safe.
 */
final class KeyAcquirer {

    private static final int MAX_TOKEN = 128;
    private static final int SUFFIX = 17; // '.' and 16 hex digits

    private final LeaseHost host;
    private final EngineThreads threads;
    private final HolderSlots slots;
    private final LocalWaitQueues queues;
    private final AcquireCalls calls;
    private final ForceReleaseWatch forceWatch;
    private final BooleanSupplier closed;
    private final boolean fair;
    private final long minPollNanos;
    private final long maxPollNanos;

    KeyAcquirer(
            LeaseHost host,
            EngineThreads threads,
            HolderSlots slots,
            LocalWaitQueues queues,
            AcquireCalls calls,
            ForceReleaseWatch forceWatch,
            BooleanSupplier closed,
            boolean fair,
            Duration minPoll,
            Duration maxPoll) {
        this.host = host;
        this.threads = threads;
        this.slots = slots;
        this.queues = queues;
        this.calls = calls;
        this.forceWatch = forceWatch;
        this.closed = closed;
        this.fair = fair;
        this.minPollNanos = minPoll.toNanos();
        this.maxPollNanos = maxPoll.toNanos();
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

    /** One attempt, never waiting; empty if the key is busy. */
    Optional<Lease> tryAcquire(LockKey key, LeaseOptions options, Object owner, String token) {
        long start = host.nanos();
        Attempt attempt;
        try {
            attempt = attempt(key, options, owner, token, null, null, start, Long.MAX_VALUE, false);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // unreachable without a deadline; keep the flag
            throw new LeaseStoreException("acquire", key.render(), e);
        }
        if (attempt.lease() == null && host.listening()) {
            host.emit(LeaseEvent.busy(key, host.storeName(), Duration.ZERO));
        }
        return Optional.ofNullable(attempt.lease());
    }

    /** The key, waiting up to the options' wait. */
    Lease acquire(LockKey key, LeaseOptions options, Object owner, String token) throws InterruptedException {
        long start = host.nanos();
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
        LocalWaitQueues.Waiter waiter = new LocalWaitQueues.Waiter();
        LocalWaitQueues.WaitQueue queue = queues.join(key, waiter);
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
                if (closed.getAsBoolean()) {
                    throw new IllegalStateException("the lock service is closed");
                }
                boolean myTurn = !fair || queue.isHead(waiter);
                if (myTurn) {
                    Duration refusedFor = refused ? Duration.ofNanos(Math.max(0, host.nanos() - firstRefused)) : null;
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
                        if (closed.getAsBoolean()) {
                            throw new IllegalStateException("the lock service is closed");
                        }
                        throw busy(key, start); // no answer within the wait: the wait ran out
                    }
                    if (!refused) {
                        refused = true;
                        firstRefused = host.nanos();
                    }
                    holderRemaining = attempt.holderRemainingNanos();
                }
                if (!waitingTold && host.listening()) {
                    waitingTold = true;
                    host.emit(LeaseEvent.waiting(key, host.storeName()));
                }
                if (queue.claimSubscription()) {
                    // Once active, the subscription wakes the waiters to try again: no release
                    // between their last try and the subscription is missed.
                    queues.subscribe(queue, deadline);
                }
                long left = deadline - host.nanos();
                if (left <= 0) {
                    throw busy(key, start);
                }
                boolean pushed = queue.subscribed();
                long pause = myTurn && !pushed ? poll : maxPollNanos;
                if (myTurn && holderRemaining >= 0) {
                    // Never sleep past the holder's expiry: a lost notice costs at most that.
                    pause = Math.min(pause, holderRemaining + TimeUnit.MILLISECONDS.toNanos(1));
                }
                if (waiter.await(threads.parking(), Math.min(left, pause))) {
                    poll = minPollNanos;
                } else if (!pushed) {
                    poll = Math.min(poll * 2, maxPollNanos);
                }
            }
        } finally {
            queues.leave(queue, waiter, acquired);
            if (!acquired && askedStore) {
                calls.leaveStoreQueue(key, waitToken);
            }
        }
    }

    /** The busy outcome of a wait that began at {@code start}, with its event. */
    LockBusyException busy(LockKey key, long start) {
        Duration waited = Duration.ofNanos(Math.max(0, host.nanos() - start));
        if (host.listening()) {
            host.emit(LeaseEvent.busy(key, host.storeName(), waited));
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
        if (closed.getAsBoolean()) {
            throw new IllegalStateException("the lock service is closed");
        }
        HolderSlots.HolderKey holderKey = new HolderSlots.HolderKey(owner, key);
        HolderSlots.HolderSlot slot = slots.lock(holderKey, deadline != Long.MAX_VALUE, deadline);
        if (slot == null) {
            return Attempt.NOT_ASKED;
        }
        try {
            HeldLease current = slot.lease.get();
            if (current != null && current.tryReenter()) {
                if (host.listening()) {
                    host.emit(current.event(LeaseEventType.REENTERED));
                }
                return new Attempt(current.newHandle(), 0);
            }
            if (!queued && fair && queues.hasWaiters(key)) {
                slots.retire(holderKey, slot);
                return new Attempt(null, -1); // no barging past a queued waiter
            }
            forceWatch.await(deadline);
            if (deadline != Long.MAX_VALUE && deadline - host.nanos() <= 0) {
                // The wait ran out while the force-release watch subscribed: ask nothing now, or
                // an answer that came at once would still be taken after the wait had ended.
                slots.retire(holderKey, slot);
                return Attempt.NOT_ASKED;
            }
            String grantToken = waitToken != null ? waitToken : grantToken(token);
            AcquireRequest request = waitToken != null
                    ? AcquireRequest.waiting(key, grantToken, options.leaseFor(), refusedFor)
                    : AcquireRequest.once(key, grantToken, options.leaseFor());
            long sent = host.nanos();
            AcquireResult result;
            try {
                result = calls.acquire(request, deadline);
            } catch (RuntimeException | Error | InterruptedException e) {
                slots.retire(holderKey, slot); // nothing is held: leave no slot behind
                throw e;
            }
            if (result == null) {
                slots.retire(holderKey, slot);
                return Attempt.UNANSWERED;
            }
            if (result instanceof AcquireResult.Granted granted) {
                return new Attempt(install(holderKey, slot, grantToken, options, granted, sent, start), 0);
            }
            slots.retire(holderKey, slot);
            return new Attempt(
                    null, ((AcquireResult.Busy) result).holderRemaining().toNanos());
        } finally {
            slot.lock.unlock();
        }
    }

    /**
     * The store token of one grant: 128 bits from the secure random source, or the owner's token
     * with a random suffix of this grant's own. Drawn per grant, never derived from a base and a
     * counter (see docs/design/engine.md).
     */
    static String grantToken(String ownerToken) {
        if (ownerToken == null) {
            return LockOwner.grantToken();
        }
        String base = ownerToken.substring(0, Math.min(ownerToken.length(), MAX_TOKEN - SUFFIX));
        return base + "."
                + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong());
    }

    /**
     * Makes the grant a lease and the holder's current one; the caller holds the slot's lock. If
     * anything fails on the way, the grant is given back.
     */
    Lease install(
            HolderSlots.HolderKey holderKey,
            HolderSlots.HolderSlot slot,
            String grantToken,
            LeaseOptions options,
            AcquireResult.Granted granted,
            long sent,
            long start) {
        HeldLease lease = null;
        try {
            lease = new HeldLease(host, holderKey, slot, grantToken, options, granted.grant(), sent);
            slot.lease.set(lease);
            lease.start();
            if (host.listening()) {
                host.emit(LeaseEvent.acquired(
                        holderKey.key(),
                        host.storeName(),
                        LockOwner.abbreviate(grantToken),
                        lease.fence,
                        Duration.ofNanos(Math.max(0, host.nanos() - start))));
            }
            return lease.newHandle();
        } catch (RuntimeException | Error e) {
            if (lease != null) {
                lease.abandon();
                slot.lease.compareAndSet(lease, null);
            }
            slots.retire(holderKey, slot);
            calls.releaseAmbiguous(holderKey.key(), grantToken);
            throw e;
        }
    }
}
