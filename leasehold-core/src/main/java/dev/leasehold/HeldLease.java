package dev.leasehold;

import dev.leasehold.spi.Grant;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One grant from the store to one owner, shared by every re-entrant hold of that owner on the key.
 * Owns the renewal task and the expiry watch.
 *
 * <p>Locking: the hold count changes only under the holder slot's lock; a renewal's store call and
 * the switch to RELEASED both run under {@link #renewalLock}, so once release has begun no renewal
 * is in flight and none can start. Loss is a compare-and-set on {@link #state} and takes no lock,
 * so a renewal hung on the network cannot delay the lost signal past the lease's expiry.
 */
final class HeldLease {

    private static final Logger log = LoggerFactory.getLogger(HeldLease.class);

    enum State {
        HELD,
        LOST,
        RELEASED
    }

    private final LeaseEngine engine;
    final LeaseEngine.HolderKey holderKey;
    final LeaseEngine.HolderSlot slot;
    final LockKey key;
    final String token;
    final long fence;
    private final LeaseOptions options;
    private final long acquiredNanos;

    private volatile int holds = 1;
    private volatile long deadlineNanos;
    private volatile Instant validUntil;
    private final AtomicReference<State> state = new AtomicReference<>(State.HELD);
    private volatile LeaseLostException lostCause;
    private final List<LostCallback> lostCallbacks = new CopyOnWriteArrayList<>();
    private final ReentrantLock renewalLock = new ReentrantLock();
    private ScheduledFuture<?> renewalTask;
    private volatile ScheduledFuture<?> expiryWatch;

    HeldLease(
            LeaseEngine engine,
            LeaseEngine.HolderKey holderKey,
            LeaseEngine.HolderSlot slot,
            String token,
            LeaseOptions options,
            Grant grant,
            long requestSentNanos) {
        this.engine = engine;
        this.holderKey = holderKey;
        this.slot = slot;
        this.key = holderKey.key();
        this.token = token;
        this.fence = grant.fence();
        this.options = options;
        this.acquiredNanos = requestSentNanos;
        // The store measured `remaining` after it received the request, so counting it from the
        // moment the request was sent gives a local deadline no later than the store's expiry.
        this.deadlineNanos = requestSentNanos + grant.remaining().toNanos();
        this.validUntil = grant.expiresAt();
    }

    /** Starts the watchdog (if asked for) and the expiry watch. */
    void start() {
        renewalLock.lock();
        try {
            if (options.renewal()) {
                long period = Math.max(1, options.leaseFor().toNanos() / 3);
                renewalTask =
                        engine.scheduler.scheduleWithFixedDelay(this::renew, period, period, TimeUnit.NANOSECONDS);
            }
            scheduleExpiryWatch();
        } finally {
            renewalLock.unlock();
        }
    }

    private void scheduleExpiryWatch() {
        long delay = Math.max(0, deadlineNanos - engine.ticker.nanos());
        expiryWatch = engine.scheduler.schedule(this::checkExpiry, delay, TimeUnit.NANOSECONDS);
    }

    private void checkExpiry() {
        if (state.get() != State.HELD) {
            return;
        }
        if (deadlineNanos - engine.ticker.nanos() > 0) {
            scheduleExpiryWatch();
        } else {
            markLost(
                    options.renewal()
                            ? "no renewal was confirmed by the store before the lease expired"
                            : "the lease expired (renewal was off)");
        }
    }

    private void renew() {
        renewalLock.lock();
        try {
            if (state.get() != State.HELD) {
                return;
            }
            long sent = engine.ticker.nanos();
            Optional<Grant> grant;
            try {
                grant = engine.store.renew(key, token, options.leaseFor());
            } catch (RuntimeException e) {
                engine.emit(event(LeaseEventType.RENEWAL_FAILED, Duration.ZERO, "renewal failed", e));
                if (deadlineNanos - engine.ticker.nanos() <= 0) {
                    markLost("renewal failed and the lease expired: " + e.getMessage());
                }
                return;
            }
            if (grant.isEmpty()) {
                markLost("the store reports this owner no longer holds the key (expired or taken over)");
                return;
            }
            if (state.get() == State.HELD) {
                deadlineNanos = sent + grant.get().remaining().toNanos();
                validUntil = grant.get().expiresAt();
                engine.emit(event(LeaseEventType.RENEWED, Duration.ZERO, null, null));
            }
        } catch (RuntimeException e) {
            // A periodic task that throws is cancelled silently; never let that happen.
            log.warn("renewal of {} failed unexpectedly", key, e);
        } finally {
            renewalLock.unlock();
        }
    }

    /** Marks the lease lost once and runs the callbacks; does nothing if released or already lost. */
    void markLost(String reason) {
        LeaseLostException cause = new LeaseLostException(key, fence, reason);
        if (!state.compareAndSet(State.HELD, State.LOST)) {
            return;
        }
        lostCause = cause;
        cancelTasks();
        engine.emit(event(LeaseEventType.LOST, heldFor(), reason, null));
        log.warn("lease on {} (fence {}, owner {}) lost: {}", key, fence, LockOwner.abbreviate(token), reason);
        for (LostCallback callback : lostCallbacks) {
            callback.run(cause);
        }
    }

    private void cancelTasks() {
        ScheduledFuture<?> renewal = renewalTask;
        if (renewal != null) {
            renewal.cancel(false);
        }
        ScheduledFuture<?> watch = expiryWatch;
        if (watch != null) {
            watch.cancel(false);
        }
    }

    /** Adds a hold if the lease is still held; the caller holds the slot lock. */
    boolean tryReenter() {
        if (isHeld()) {
            holds++;
            return true;
        }
        if (state.get() == State.HELD) {
            markLost("the lease expired before it was re-entered");
        }
        return false;
    }

    boolean isHeld() {
        return state.get() == State.HELD && deadlineNanos - engine.ticker.nanos() > 0;
    }

    LeaseLostException lostException() {
        LeaseLostException cause = lostCause;
        if (cause != null) {
            return cause;
        }
        return new LeaseLostException(key, fence, "the lease expired");
    }

    int holdCount() {
        return holds;
    }

    Instant validUntil() {
        return validUntil;
    }

    void onLost(Consumer<LeaseLostException> callback) {
        LostCallback registered = new LostCallback(callback);
        lostCallbacks.add(registered);
        if (state.get() == State.LOST) {
            registered.run(lostCause);
        }
    }

    /**
     * Drops one hold; the last one releases the key in the store. The store call happens under the
     * slot lock, so the same owner cannot re-acquire the key (with the same token) between our
     * decision to release and the store's compare-and-delete.
     */
    void releaseOne() {
        slot.lock.lock();
        try {
            holds--;
            if (holds > 0) {
                return;
            }
            State previous;
            renewalLock.lock();
            try {
                previous = state.getAndSet(State.RELEASED);
                cancelTasks();
            } finally {
                renewalLock.unlock();
            }
            boolean sameTokenNowHolds = slot.lease != this && slot.lease != null && slot.lease.token.equals(token);
            String detail = previous == State.LOST ? "released after the lease was lost" : null;
            try {
                if (!sameTokenNowHolds && !engine.storeRelease(key, token) && detail == null) {
                    detail = "the store no longer had this owner at release";
                }
            } catch (RuntimeException e) {
                engine.emit(event(
                        LeaseEventType.RELEASED, heldFor(), "store release failed; the lease ends at its expiry", e));
                throw e;
            } finally {
                // Retire the slot only after the store call, so the same owner re-acquiring meanwhile
                // waits on this slot's lock instead of racing our compare-and-delete.
                if (slot.lease == this) {
                    slot.lease = null;
                }
                if (slot.lease == null) {
                    engine.retireSlot(holderKey, slot);
                }
            }
            engine.emit(event(LeaseEventType.RELEASED, heldFor(), detail, null));
        } finally {
            slot.lock.unlock();
        }
        engine.signalReleased(key);
    }

    /** Ends the lease when the service closes: best-effort release, no events to callers. */
    void abandon() {
        renewalLock.lock();
        try {
            if (state.getAndSet(State.RELEASED) == State.RELEASED) {
                return;
            }
            cancelTasks();
        } finally {
            renewalLock.unlock();
        }
        try {
            engine.storeRelease(key, token);
        } catch (RuntimeException e) {
            log.warn("could not release {} while closing; it ends at its expiry", key, e);
        }
    }

    HeldLeaseInfo info() {
        return new HeldLeaseInfo(key, LockOwner.abbreviate(token), fence, holds, heldFor(), options.leaseFor());
    }

    private Duration heldFor() {
        return Duration.ofNanos(Math.max(0, engine.ticker.nanos() - acquiredNanos));
    }

    LeaseEvent event(LeaseEventType type, Duration held, String detail, Throwable failure) {
        return new LeaseEvent(
                type,
                key,
                engine.store.name(),
                LockOwner.abbreviate(token),
                fence,
                Duration.ZERO,
                held,
                detail,
                failure);
    }

    Lease newHandle() {
        return new Handle();
    }

    /** A callback run at most once. */
    private static final class LostCallback {
        private final Consumer<LeaseLostException> callback;
        private final AtomicBoolean ran = new AtomicBoolean();

        LostCallback(Consumer<LeaseLostException> callback) {
            this.callback = callback;
        }

        void run(LeaseLostException cause) {
            if (ran.compareAndSet(false, true)) {
                try {
                    callback.accept(cause);
                } catch (RuntimeException e) {
                    log.warn("a lease-lost callback for {} failed", cause.key(), e);
                }
            }
        }
    }

    /** One hold on the grant; what callers see as a {@link Lease}. */
    private final class Handle implements Lease {
        private final AtomicBoolean closed = new AtomicBoolean();

        @Override
        public LockKey key() {
            return key;
        }

        @Override
        public String ownerToken() {
            return token;
        }

        @Override
        public long fence() {
            return fence;
        }

        @Override
        public int holdCount() {
            return holds;
        }

        @Override
        public Instant validUntil() {
            return validUntil;
        }

        @Override
        public boolean isHeld() {
            return !closed.get() && HeldLease.this.isHeld();
        }

        @Override
        public void assertHeld() {
            if (closed.get()) {
                throw new IllegalStateException("lease on " + key + " was already released by this holder");
            }
            if (!HeldLease.this.isHeld()) {
                throw lostException();
            }
        }

        @Override
        public void onLost(Consumer<LeaseLostException> callback) {
            HeldLease.this.onLost(java.util.Objects.requireNonNull(callback, "callback is missing (null)"));
        }

        @Override
        public void close() {
            if (!closed.compareAndSet(false, true)) {
                throw new IllegalStateException("lease on " + key + " was already released by this holder");
            }
            releaseOne();
        }

        @Override
        public String toString() {
            return "Lease{key=" + key + ", fence=" + fence + ", owner=" + LockOwner.abbreviate(token) + ", holds="
                    + holds + ", held=" + isHeld() + "}";
        }
    }
}
