package dev.leasehold;

/**
 * Work run while a lease is held, by {@link LockService#runLocked}. It receives the lease, so it
 * can read the fence for guarded writes or check {@link Lease#assertHeld()} between steps.
 *
 * @param <T> the result
 * @param <X> the checked exception the work may throw, passed through unchanged
 */
@FunctionalInterface
public interface LockedWork<T, X extends Exception> {

    /** Runs the work under the lease. */
    T run(Lease lease) throws X;
}
