package dev.leasehold;

/**
 * Signals that a lease is no longer held although its holder has not released it: it expired
 * because renewal failed or was off, the store reports another owner, or an operator force-released
 * it. Work done under the lease must stop; writes that must not race the next holder
 * should be guarded by the lease's fence.
 */
public class LeaseLostException extends LeaseholdException {
    private static final long serialVersionUID = 1L;

    private final transient LockKey key;
    private final long fence;

    /** A loss of the lease on {@code key} granted with {@code fence}, for the given reason. */
    public LeaseLostException(LockKey key, long fence, String reason) {
        super("lease on " + key + " (fence " + fence + ") was lost: " + reason);
        this.key = key;
        this.fence = fence;
    }

    /** The key whose lease was lost. */
    public LockKey key() {
        return key;
    }

    /** The fence of the lost lease. */
    public long fence() {
        return fence;
    }
}
