package dev.leasehold.jdbc;

import dev.leasehold.LeaseholdException;

/**
 * Thrown when a write is refused because a newer fence was already accepted for the resource (or
 * the same fence from another owner): the writer's lease was lost (it was paused, or expired) and
 * another holder has written since. The
 * write did not happen; the writer must stop, not retry with the same fence.
 */
public class StaleFenceException extends LeaseholdException {
    private static final long serialVersionUID = 1L;

    private final String resource;
    private final long fence;
    private final long newest;

    /**
     * A refusal of {@code fence} on {@code resource}, where {@code newest} was accepted before (equal
     * to {@code fence}: accepted from another owner).
     */
    public StaleFenceException(String resource, long fence, long newest) {
        super(
                newest == fence
                        ? "write to " + resource + " with fence " + fence + " refused: the same fence was accepted from"
                                + " another owner, so two holders were handed one fence; this one must stop"
                        : "write to " + resource + " with fence " + fence + " refused: fence " + newest
                                + " was accepted before, so this lease was lost to a newer holder");
        this.resource = resource;
        this.fence = fence;
        this.newest = newest;
    }

    /** The guarded resource. */
    public String resource() {
        return resource;
    }

    /** The refused fence. */
    public long fence() {
        return fence;
    }

    /** The newest fence accepted for the resource. */
    public long newest() {
        return newest;
    }
}
