package dev.leasehold;

import java.time.Instant;
import java.util.function.Consumer;

/**
 * A held lease on one key: what {@link LockService} hands to the holder. Closing it releases this
 * hold (try-with-resources); the key is released in the store when the last hold of the same owner
 * is closed (re-entry).
 *
 * <p>Guarantees: while the store is reachable, at most one owner holds a key at a time. A lease can
 * still be lost while its holder is paused (GC, VM stop), so:
 *
 * <ul>
 *   <li>{@link #fence()} grows strictly with every new holder of the key; pass it to guarded
 *       writes so a former holder's late write is rejected;
 *   <li>{@link #isHeld()} turns false, and {@link #onLost} callbacks run, as soon as the engine
 *       learns the lease is gone (a renewal finds it taken over, a force-release is announced)
 *       and at the latest at the local deadline, whatever the store does.
 * </ul>
 *
 * <p>Thread-safe. Each handle may be closed once; closing it again is an {@link
 * IllegalStateException}.
 */
public interface Lease extends AutoCloseable {

    /** The key this lease is on. */
    LockKey key();

    /**
     * The owner token the store knows this lease by. It is a secret of the holder; log {@link
     * LockOwner#abbreviate(String)} of it, never the whole token.
     */
    String ownerToken();

    /** The fencing token: strictly greater than the fence of every earlier holder of this key. */
    long fence();

    /** How many holds of this owner are open on the key (1 unless re-entered). */
    int holdCount();

    /** When the lease expires by the store's clock, as the store last reported it. */
    Instant validUntil();

    /**
     * Whether the lease is still held: not released, not known to be lost, and within the local
     * conservative bound of the last grant or renewal the store confirmed.
     */
    boolean isHeld();

    /**
     * Throws if the lease is no longer held; call it before and after slow steps.
     *
     * @throws LeaseLostException if the lease was lost
     * @throws IllegalStateException if this handle was already closed
     */
    void assertHeld();

    /**
     * Registers a callback run once when the lease is lost (on a callback thread of the service; at
     * once, on the calling thread, if it is already lost), with the cause, never null. It is not
     * run when the lease is released normally. A callback that throws is logged and ignored.
     */
    void onLost(Consumer<LeaseLostException> callback);

    /**
     * Releases this hold. The last hold releases the key in the store at once, never waiting for a
     * renewal in flight, whose late reply is then dropped.
     *
     * @throws IllegalStateException if this handle was already closed
     * @throws LeaseStoreException if the store could not be told; the lease then ends at its expiry
     */
    @Override
    void close();
}
