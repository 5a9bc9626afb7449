package dev.leasehold;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The leases of one batch, taken in sorted key order by {@link LockService#acquireAll}. Closing the group releases every lease in reverse order; a failure to release one does
 * not stop the others. Thread-safe; close it once.
 */
public final class LeaseGroup implements AutoCloseable {

    private final List<Lease> leases;

    LeaseGroup(List<Lease> leases) {
        this.leases = Collections.unmodifiableList(new ArrayList<>(leases));
    }

    /** The leases, in the order they were taken (sorted by key). */
    public List<Lease> leases() {
        return leases;
    }

    /** Whether every lease of the group is still held. */
    public boolean isHeld() {
        return leases.stream().allMatch(Lease::isHeld);
    }

    /**
     * Throws if any lease of the group was lost.
     *
     * @throws LeaseLostException for the first lease found lost
     */
    public void assertHeld() {
        leases.forEach(Lease::assertHeld);
    }

    /**
     * Releases every lease in reverse order.
     *
     * @throws LeaseholdException the first failure, with the others suppressed, after trying all
     */
    @Override
    public void close() {
        releaseInReverse(leases);
    }

    static void releaseInReverse(List<Lease> leases) {
        RuntimeException failure = null;
        for (int i = leases.size() - 1; i >= 0; i--) {
            try {
                leases.get(i).close();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
