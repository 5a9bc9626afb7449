package dev.leasehold.spring.scheduling;

import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.LeaseStore;
import java.time.Duration;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a scheduled task on at most one instance at a time, the way ShedLock's users expect:
 *
 * <ol>
 *   <li>the task's key {@code scheduled:<name>} is taken without waiting, for {@code lockAtMostFor}
 *       by the store's clock (no renewal): an instance that dies mid-run frees the slot after that
 *       long. Busy: the run is skipped on this instance;
 *   <li>the task runs;
 *   <li>if it finished sooner than {@code lockAtLeastFor}, the lease is shortened to what is left of
 *       it (an owner-checked renewal), so other instances whose clocks fire a little later skip this
 *       round instead of running it again; otherwise the lease is released.
 * </ol>
 *
 * A task running longer than {@code lockAtMostFor} can overlap the next instance's run: choose it
 * well above the longest run. Thread-safe.
 */
public final class ScheduledTaskLock {

    private static final Logger log = LoggerFactory.getLogger(ScheduledTaskLock.class);

    private final LeaseStore store;

    /** Scheduled-task locks in {@code store}. */
    public ScheduledTaskLock(LeaseStore store) {
        this.store = Objects.requireNonNull(store, "store");
    }

    /**
     * Runs {@code task} unless another instance holds {@code name}.
     *
     * @return whether the task ran here
     * @throws IllegalArgumentException if lockAtMostFor is not positive or lockAtLeastFor exceeds it
     */
    public boolean runIfFree(String name, Duration lockAtMostFor, Duration lockAtLeastFor, Runnable task) {
        if (lockAtMostFor == null || lockAtMostFor.isNegative() || lockAtMostFor.isZero()) {
            throw new IllegalArgumentException("lockAtMostFor must be > 0, was " + lockAtMostFor);
        }
        if (lockAtLeastFor == null || lockAtLeastFor.isNegative() || lockAtLeastFor.compareTo(lockAtMostFor) > 0) {
            throw new IllegalArgumentException("lockAtLeastFor must be between 0 and lockAtMostFor (" + lockAtMostFor
                    + "), was " + lockAtLeastFor);
        }
        LockKey key = LockKey.of("scheduled", name);
        String owner = LockOwner.create("scheduled " + name).token();
        AcquireResult result = store.tryAcquire(key, owner, lockAtMostFor);
        if (result instanceof AcquireResult.Busy busy) {
            log.debug("scheduled task {} skipped: another instance holds it for {} more", name, busy.holderRemaining());
            return false;
        }
        long started = System.nanoTime();
        try {
            task.run();
        } finally {
            Duration ran = Duration.ofNanos(System.nanoTime() - started);
            Duration left = lockAtLeastFor.minus(ran);
            // Shorter than the smallest lease a store keeps: release instead.
            if (left.compareTo(Duration.ofMillis(20)) >= 0) {
                store.renew(key, owner, left);
            } else {
                store.release(key, owner);
            }
        }
        return true;
    }
}
