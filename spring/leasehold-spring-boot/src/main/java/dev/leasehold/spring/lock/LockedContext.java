package dev.leasehold.spring.lock;

import dev.leasehold.Lease;
import dev.leasehold.LeaseGroup;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Optional;

/**
 * The leases of the {@link Locked} method running on the current thread, so that the method can
 * fence its writes with their fences ({@code FencedUpdate.tryAccept(connection,
 * LockedContext.current())} in its transaction) or check them before a slow step ({@link
 * #assertHeld()}). Bound for the
 * duration of the call only; a nested {@code @Locked} call sees its own leases, and its caller's
 * again once it returns.
 */
public final class LockedContext {

    private static final ThreadLocal<Deque<Frame>> HELD = ThreadLocal.withInitial(ArrayDeque::new);

    /**
     * One running {@code @Locked} call: its leases, and the check its transaction makes before
     * committing; a call whose lock is bypassed has neither.
     */
    private record Frame(List<Lease> leases, Runnable commitCheck, boolean bypassed) {}

    private LockedContext() {}

    /**
     * The lease of the innermost {@code @Locked} method on this thread.
     *
     * @throws IllegalStateException outside a {@code @Locked} method, or in one that holds a batch of
     *     keys (use {@link #leases()})
     */
    public static Lease current() {
        List<Lease> leases = leases();
        if (leases.size() != 1) {
            throw new IllegalStateException("the @Locked method holds " + leases.size() + " leases; use leases()");
        }
        return leases.get(0);
    }

    /** The lease of the innermost {@code @Locked} method on this thread, if one runs and holds one key. */
    public static Optional<Lease> find() {
        Frame frame = HELD.get().peek();
        return frame != null && frame.leases().size() == 1
                ? Optional.of(frame.leases().get(0))
                : Optional.empty();
    }

    /**
     * The leases of the innermost {@code @Locked} method on this thread, in key order (one for a
     * single key).
     *
     * @throws IllegalStateException outside a {@code @Locked} method (a bypassed lock included)
     */
    public static List<Lease> leases() {
        Frame frame = HELD.get().peek();
        if (frame == null || frame.bypassed()) {
            throw new IllegalStateException("no @Locked method runs on this thread (or its lock is bypassed)");
        }
        return frame.leases();
    }

    /**
     * Throws if a lease of the {@code @Locked} methods running on this thread is no longer held:
     * call it before and after slow steps, so that work whose lock was lost stops there instead of
     * going on unprotected. It checks every lease of every {@code @Locked} call running here (the
     * innermost first, a batch's every key), as {@link Lease#assertHeld()} does: locally, without
     * asking the store (not released, not known to be lost, within the local bound of the last
     * grant or renewal the store confirmed). A transaction of the method is also checked against
     * the store before it commits. In a call whose lock is bypassed ({@code leasehold.lock.mode=bypass})
     * it returns normally: such a call runs without its lock on purpose.
     *
     * @throws dev.leasehold.LeaseLostException if one of them was lost
     * @throws IllegalStateException outside a {@code @Locked} method
     */
    public static void assertHeld() {
        Deque<Frame> held = HELD.get();
        if (held.isEmpty()) {
            HELD.remove();
            throw new IllegalStateException("no @Locked method runs on this thread");
        }
        for (Frame frame : held) {
            frame.leases().forEach(Lease::assertHeld);
        }
    }

    /**
     * The check a transaction begun on this thread now must pass before it commits: every lease of
     * the {@code @Locked} calls running here is still held; null when none runs.
     */
    static Runnable commitCheck() {
        Deque<Frame> held = HELD.get();
        if (held.isEmpty()) {
            HELD.remove();
            return null;
        }
        List<Runnable> checks = new ArrayList<>();
        held.descendingIterator().forEachRemaining(frame -> {
            if (!frame.bypassed()) {
                checks.add(frame.commitCheck());
            }
        });
        return checks.isEmpty() ? null : () -> checks.forEach(Runnable::run);
    }

    /**
     * Binds {@code held} (a {@link Lease} or a {@link LeaseGroup}) for the call, with the check its
     * transactions run before they commit; close the scope after the call.
     */
    static Scope bind(AutoCloseable held, Runnable commitCheck) {
        List<Lease> leases = held instanceof Lease lease
                ? List.of(lease)
                : held instanceof LeaseGroup group ? List.copyOf(group.leases()) : List.of();
        return push(new Frame(leases, commitCheck, false));
    }

    /** Marks a {@code @Locked} call whose lock is bypassed for its duration; close the scope after the call. */
    static Scope bindBypassed() {
        return push(new Frame(List.of(), null, true));
    }

    private static Scope push(Frame frame) {
        Deque<Frame> stack = HELD.get();
        stack.push(frame);
        return () -> {
            stack.pop();
            if (stack.isEmpty()) {
                HELD.remove();
            }
        };
    }

    /** Ends a binding. */
    interface Scope extends AutoCloseable {
        @Override
        void close();
    }
}
