package dev.leasehold;

import dev.leasehold.spi.Grant;
import dev.leasehold.spi.Renewal;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One grant from the store to one holder, shared by every re-entrant hold of it. Owns the renewal
 * and the expiry watch, on one timer entry.
 *
 * <p>Threads: the timer only decides (a renewal is due, the local deadline passed) and never calls
 * the store; each lease has one timer entry at a time: at its next renewal or its local deadline,
 * and while a renewal is in flight a period after it was sent, where the next one falls due if
 * this one was answered by then; renewals run on the engine's renewal workers, on their own or in
 * a store batch. The state and the loss cause change
 * together in one compare-and-set, so a loss is never seen without its cause. No lock is taken:
 * {@code close()} switches the state to RELEASED and calls the store at once, whatever renewal is
 * in flight, and a renewal reply that arrives later sees RELEASED and is dropped.
 */
final class HeldLease {

    private static final Logger log = LoggerFactory.getLogger(HeldLease.class);

    enum State {
        HELD,
        LOST,
        RELEASED
    }

    /** The state, and the cause when it is LOST. */
    record Status(State state, LeaseLostException cause) {}

    private static final Status HELD = new Status(State.HELD, null);
    private static final Status RELEASED = new Status(State.RELEASED, null);

    private final LeaseHost host;
    final HolderSlots.HolderKey holderKey;
    final HolderSlots.HolderSlot slot;
    final LockKey key;
    final String token;
    final long fence;
    private final LeaseOptions options;
    private final long acquiredNanos;
    /** What a batch sends to renew it: the same every time. */
    private final Renewal renewal;

    private final AtomicInteger holds = new AtomicInteger(1);
    private final AtomicReference<Status> status = new AtomicReference<>(HELD);
    private volatile long deadlineNanos;
    private volatile Instant validUntil;
    private final List<LostCallback> lostCallbacks = new CopyOnWriteArrayList<>();
    /** What the timer runs for this lease: one method reference, made once. */
    private final Runnable onTimer = this::timerRings;
    /**
     * The lease's one timer entry: at its next renewal's due time or at its local deadline,
     * whichever comes first. Swapped, never locked (see {@link #arm}).
     */
    private volatile LeaseTimer.Entry timer;
    /** When the next renewal falls due; {@link #NO_RENEWAL} while renewal is off or one is in flight. */
    private volatile long renewalDueNanos = NO_RENEWAL;
    /** Where the entry set when the last renewal was sent rings: a period after it, or the deadline. */
    private volatile long nextRingNanos;

    private volatile Future<?> renewalInFlight;

    private static final long NO_RENEWAL = Long.MIN_VALUE;
    private static final VarHandle TIMER;
    private static final VarHandle RENEWAL_DUE;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            TIMER = lookup.findVarHandle(HeldLease.class, "timer", LeaseTimer.Entry.class);
            RENEWAL_DUE = lookup.findVarHandle(HeldLease.class, "renewalDueNanos", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    HeldLease(
            LeaseHost host,
            HolderSlots.HolderKey holderKey,
            HolderSlots.HolderSlot slot,
            String token,
            LeaseOptions options,
            Grant grant,
            long requestSentNanos) {
        this.host = host;
        this.holderKey = holderKey;
        this.slot = slot;
        this.key = holderKey.key();
        this.token = token;
        this.fence = grant.fence();
        this.options = options;
        this.acquiredNanos = requestSentNanos;
        this.renewal = new Renewal(key, token, options.leaseFor());
        // The store measured `remaining` after it received the request, so counting it from the
        // moment the request was sent gives a local deadline no later than the store's expiry.
        this.deadlineNanos = requestSentNanos + trusted(grant, options);
        this.validUntil = grant.expiresAt();
    }

    /**
     * How long after its request a grant or renewal is trusted: what the store reported, but never
     * more than the lease time, so a holder is told it lost the key at the latest one lease after
     * its last confirmed request even where the store keeps the key longer (a key handed to a
     * waiter lasts the rest of its queue place; etcd rounds a lease up to whole seconds).
     */
    private static long trusted(Grant grant, LeaseOptions options) {
        return Math.min(grant.remaining().toNanos(), options.leaseFor().toNanos());
    }

    /**
     * Arms the lease's one timer entry: at the first renewal (if asked for), which comes before the
     * local deadline, else at the deadline. The entry decides what is due when it rings; the
     * deadline is watched whenever no renewal is due before it.
     */
    void start() {
        if (options.renewal()) {
            // The first one at most half the grant's validity away: a grant shorter than its
            // lease time (a store that hands a waiter the key for the rest of its queue place)
            // becomes a full lease in time. Later ones (and retries) keep the lease/3 period.
            long now = host.nanos();
            renewalDueNanos = now + Math.min(renewalPeriod(), Math.max(1, (deadlineNanos - now) / 2));
        }
        arm();
    }

    private long renewalPeriod() {
        return Math.max(1, options.leaseFor().toNanos() / 3);
    }

    /** After a renewal's failure: the next one a period from now. */
    private void scheduleRenewal() {
        if (status.get().state() != State.HELD) {
            return;
        }
        renewalDueNanos = host.nanos() + renewalPeriod();
        arm();
    }

    /** When the entry must ring: the next renewal or the local deadline, whichever comes first. */
    private long dueAt() {
        long renewal = renewalDueNanos;
        long deadline = deadlineNanos;
        return renewal != NO_RENEWAL && renewal - deadline < 0 ? renewal : deadline;
    }

    /**
     * Sets the timer entry for {@link #dueAt} in place of the one set before, without a lock: the
     * new entry is swapped in and the one it replaces cancelled, so every entry made is either the
     * current one or cancelled. A thread that swapped in an entry computed from fields another
     * thread changed meanwhile sees the change after its swap and sets the entry again; once the
     * lease is no longer held, the entry is taken out (its end, {@link #cancelTasks}, takes out
     * whatever entry it finds after the state changed).
     */
    private void arm() {
        while (true) {
            long at = dueAt();
            if (!armAt(at) || dueAt() == at) {
                return;
            }
        }
    }

    /**
     * Sets the timer entry for {@code at} in place of the one set before (see {@link #arm}).
     *
     * @return false when the lease is no longer held: the entry is then taken out
     */
    private boolean armAt(long at) {
        LeaseTimer.Entry previous = (LeaseTimer.Entry) TIMER.getAndSet(this, host.scheduleAt(onTimer, at));
        if (previous != null) {
            previous.cancel();
        }
        if (status.get().state() != State.HELD) {
            cancelTimer();
            return false;
        }
        return true;
    }

    private void cancelTimer() {
        LeaseTimer.Entry entry = (LeaseTimer.Entry) TIMER.getAndSet(this, null);
        if (entry != null) {
            entry.cancel();
        }
    }

    /**
     * On the timer: the lease is lost when the local deadline passed without a confirmed renewal;
     * else a renewal that fell due is handed to a worker or a batch (never calling the store here),
     * and the entry is set again (at the deadline while that renewal is in flight).
     */
    private void timerRings() {
        if (status.get().state() != State.HELD) {
            return;
        }
        long now = host.nanos();
        if (deadlineNanos - now <= 0) {
            markLost(
                    options.renewal()
                            ? "no renewal was confirmed by the store before the lease expired"
                            : "the lease expired (renewal was off)");
            return;
        }
        long due = renewalDueNanos;
        boolean renew = due != NO_RENEWAL && due - now <= 0 && RENEWAL_DUE.compareAndSet(this, due, NO_RENEWAL);
        if (!renew) {
            arm();
            return;
        }
        // The entry that watches this renewal rings a period from now, rounded up to the store's
        // renewal grid so that leases renewed in one batch fall due together again (at the
        // deadline if that comes first): the next renewal falls due then if this one is confirmed
        // by then, and renewed() leaves the entry as it is; else it is set at the deadline when it
        // rings. So a renewal answered in time costs the timer one entry, none added or taken out
        // at its answer.
        long grid = host.renewalGrid(options.leaseFor().toNanos());
        long next = Math.floorDiv(now + renewalPeriod() + grid - 1, grid) * grid;
        long at = next - deadlineNanos < 0 ? next : deadlineNanos;
        nextRingNanos = at;
        armAt(at);
        try {
            renewalInFlight = host.requestRenewal(this, now);
        } catch (RejectedExecutionException e) {
            // The service is closing.
        }
        if (status.get().state() != State.HELD) {
            cancelTasks(false);
        }
    }

    /** Whether a renewal is still wanted: the lease is neither released nor lost. */
    boolean renewalWanted() {
        return status.get().state() == State.HELD;
    }

    /** This lease's renewal, for a batch. */
    Renewal renewal() {
        return renewal;
    }

    /** On a renewal worker: renews this lease on its own; it fell due at {@code dueNanos}. */
    void renewNow(long dueNanos) {
        if (status.get().state() != State.HELD) {
            return;
        }
        long sent = host.nanos();
        Optional<Grant> grant;
        try {
            grant = host.renew(key, token, options.leaseFor());
        } catch (Throwable e) {
            renewalFailed(e);
            if (e instanceof VirtualMachineError error) {
                throw error;
            }
            return;
        }
        renewed(sent, dueNanos, grant);
    }

    /** The store failed to renew: tried again at the next period unless the lease has expired. */
    void renewalFailed(Throwable e) {
        if (status.get().state() != State.HELD) {
            return; // released or lost meanwhile: the reply no longer matters
        }
        host.emit(event(LeaseEventType.RENEWAL_FAILED, Duration.ZERO, "renewal failed", e));
        if (!isHeld()) {
            markLost("renewal failed and the lease expired: " + e.getMessage());
        } else {
            scheduleRenewal();
        }
    }

    /**
     * The store's answer to a renewal sent at {@code sentNanos} that fell due at {@code dueNanos}:
     * the extended grant, or empty when the owner no longer holds the key.
     */
    void renewed(long sentNanos, long dueNanos, Optional<Grant> grant) {
        if (status.get().state() != State.HELD) {
            return; // release won; a late reply changes nothing
        }
        if (grant.isEmpty()) {
            markLost("the store reports this owner no longer holds the key (expired or taken over)");
            return;
        }
        long now = host.nanos();
        if (deadlineNanos - now <= 0) {
            // Not provably held for a moment: once isHeld() said false, it stays false.
            markLost("the renewal was confirmed only after the local deadline");
            return;
        }
        // A renewal sets the key's expiry at the store, it does not add to it: its answer is the
        // store's last word, even where it is sooner than what an earlier grant said.
        deadlineNanos = sentNanos + trusted(grant.get(), options);
        validUntil = grant.get().expiresAt();
        long lag = Math.max(0, now - dueNanos);
        host.renewalConfirmed(key, lag, options.leaseFor().toNanos());
        if (status.get().state() == State.HELD) {
            // The next renewal falls due where the entry set when this one was sent rings, unless
            // the answer came more than half a period after this one fell due: then half a period
            // from now, so a slow store is not asked again at once.
            long floor = now + renewalPeriod() / 2;
            long next = nextRingNanos - floor < 0 ? floor : nextRingNanos;
            renewalDueNanos = next;
            // The entry stays where it is only if it rings when it must: at the next renewal or
            // at the deadline this answer set, whichever comes first.
            LeaseTimer.Entry entry = timer;
            if (entry == null || entry.ran() || entry.due() != dueAt()) {
                arm();
            }
        }
        if (host.listening()) {
            host.emit(LeaseEvent.renewed(
                    key, host.storeName(), LockOwner.abbreviate(token), fence, Duration.ofNanos(lag)));
        }
    }

    /**
     * Marks the lease lost once: the cause is part of the same compare-and-set as the state. The
     * event and the callbacks run on the engine's callback threads, never on the timer.
     */
    void markLost(String reason) {
        Status lost = new Status(State.LOST, new LeaseLostException(key, fence, reason));
        while (true) {
            Status current = status.get();
            if (current.state() != State.HELD) {
                return;
            }
            if (status.compareAndSet(current, lost)) {
                break;
            }
        }
        cancelTasks(true);
        host.runCallback(() -> {
            host.emit(event(LeaseEventType.LOST, heldFor(), reason));
            log.warn("lease on {} (fence {}, owner {}) lost: {}", key, fence, LockOwner.abbreviate(token), reason);
            for (LostCallback callback : lostCallbacks) {
                callback.run(lost.cause());
            }
        });
    }

    private void cancelTasks(boolean interruptRenewal) {
        cancelTimer();
        Future<?> inFlight = renewalInFlight;
        if (inFlight != null) {
            // At the deadline a hung renewal is abandoned, which frees its worker; at release it is
            // left to finish, and its reply is dropped.
            inFlight.cancel(interruptRenewal);
        }
    }

    /** Adds a hold if the lease is still held. */
    boolean tryReenter() {
        while (true) {
            int current = holds.get();
            if (current <= 0) {
                return false;
            }
            if (!isHeld()) {
                if (status.get().state() == State.HELD) {
                    markLost("the lease expired before it was re-entered");
                }
                return false;
            }
            if (holds.compareAndSet(current, current + 1)) {
                return true;
            }
        }
    }

    boolean isHeld() {
        return status.get().state() == State.HELD && deadlineNanos - host.nanos() > 0;
    }

    LeaseLostException lostException() {
        LeaseLostException cause = status.get().cause();
        return cause != null ? cause : new LeaseLostException(key, fence, "the lease expired");
    }

    int holdCount() {
        return Math.max(0, holds.get());
    }

    void onLost(Consumer<LeaseLostException> callback) {
        LostCallback registered = new LostCallback(callback);
        lostCallbacks.add(registered);
        Status current = status.get();
        if (current.state() == State.LOST) {
            registered.run(current.cause());
        }
    }

    /** Drops one hold; the last one releases the key in the store, whatever renewal is in flight. */
    void releaseOne() {
        if (holds.decrementAndGet() > 0) {
            return;
        }
        Status previous = status.getAndSet(RELEASED);
        cancelTasks(false);
        host.forget(this);
        String detail = previous.state() == State.LOST ? "released after the lease was lost" : null;
        try {
            if (!host.release(key, token) && detail == null) {
                detail = "the store no longer had this owner at release";
            }
        } catch (RuntimeException | Error e) {
            host.emit(
                    event(LeaseEventType.RELEASED, heldFor(), "store release failed; the lease ends at its expiry", e));
            host.wake(key);
            throw e;
        }
        if (host.listening()) {
            host.emit(event(LeaseEventType.RELEASED, heldFor(), detail));
        }
        host.wake(key);
    }

    /** Ends the lease when the service closes: no events to callers; the caller releases it in the store. */
    boolean abandon() {
        Status previous = status.getAndSet(RELEASED);
        cancelTasks(false);
        return previous.state() != State.RELEASED;
    }

    HeldLeaseInfo info() {
        return new HeldLeaseInfo(key, LockOwner.abbreviate(token), fence, holdCount(), heldFor(), options.leaseFor());
    }

    private Duration heldFor() {
        return Duration.ofNanos(Math.max(0, host.nanos() - acquiredNanos));
    }

    /** An event of this lease with nothing more to say than its type. */
    LeaseEvent event(LeaseEventType type) {
        return event(type, Duration.ZERO, null, null);
    }

    LeaseEvent event(LeaseEventType type, Duration held, String detail) {
        return event(type, held, detail, null);
    }

    LeaseEvent event(LeaseEventType type, Duration held, String detail, Throwable failure) {
        return LeaseEvent.ofLease(
                type, key, host.storeName(), LockOwner.abbreviate(token), fence, held, detail, failure);
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
            return HeldLease.this.holdCount();
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
                    + holdCount() + ", held=" + isHeld() + "}";
        }
    }
}
