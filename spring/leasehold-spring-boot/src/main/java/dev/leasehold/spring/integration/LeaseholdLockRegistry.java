package dev.leasehold.spring.integration;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockBusyException;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.spring.retry.RetryTask;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import org.springframework.integration.support.locks.LockRegistry;

/**
 * A Spring Integration {@link LockRegistry} on Leasehold leases, so leader election, aggregators and
 * idempotent receivers exclude across instances on Leasehold's stores. {@code obtain(key)} gives a
 * {@link Lock} on {@code <namespace>:<key>}; a key that is not a valid lock-key part (white space,
 * {@code :}, ...) is replaced by its hash.
 *
 * <p>Lock semantics: owned by the thread that locked, re-entrant (a hold count), renewed while held,
 * {@code unlock} by another thread throws {@link IllegalMonitorStateException}; conditions are not
 * supported. Exclusion holds while the store is reachable; a lease lost meanwhile (store down, the
 * process paused past its lease) is not reported through the {@code Lock} interface, so work that
 * must not race a former holder uses the fence of {@link LockService} directly. Thread-safe.
 */
public final class LeaseholdLockRegistry implements LockRegistry<Lock> {

    private final LockService locks;
    private final String namespace;
    private final LeaseOptions options;
    private final ConcurrentHashMap<LockKey, LeaseLock> cache = new ConcurrentHashMap<>();

    /**
     * A registry whose locks live in namespace {@code namespace}, each lease {@code leaseFor} long
     * and renewed while held.
     */
    public LeaseholdLockRegistry(LockService locks, String namespace, Duration leaseFor) {
        this.locks = Objects.requireNonNull(locks, "locks");
        this.namespace = LockKey.of(namespace, "check").namespace();
        this.options = LeaseOptions.builder().leaseFor(leaseFor).build();
    }

    @Override
    public Lock obtain(Object lockKey) {
        Objects.requireNonNull(lockKey, "lockKey");
        return cache.computeIfAbsent(key(String.valueOf(lockKey)), LeaseLock::new);
    }

    LockKey key(String text) {
        try {
            return LockKey.of(namespace, text);
        } catch (IllegalArgumentException e) {
            return LockKey.of(namespace, "h-" + RetryTask.keyOf(text));
        }
    }

    /** One key's lock: the leases its threads hold, newest last. */
    private final class LeaseLock implements Lock {
        private final LockKey key;
        private final ThreadLocal<Deque<Lease>> held = ThreadLocal.withInitial(ArrayDeque::new);

        LeaseLock(LockKey key) {
            this.key = key;
        }

        @Override
        public void lock() {
            boolean interrupted = false;
            while (true) {
                try {
                    lockInterruptibly();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true; // lock() is not interruptible: keep waiting, restore the flag
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public void lockInterruptibly() throws InterruptedException {
            while (!tryLock(LeaseOptions.MAX_WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
                // waited the longest single wait; wait again
            }
        }

        @Override
        public boolean tryLock() {
            return locks.tryAcquire(key, options).map(this::push).orElse(false);
        }

        @Override
        public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
            Duration wait = Duration.ofNanos(unit.toNanos(Math.max(0, time)));
            if (wait.compareTo(LeaseOptions.MAX_WAIT) > 0) {
                wait = LeaseOptions.MAX_WAIT;
            }
            if (wait.isZero()) {
                return tryLock();
            }
            try {
                return push(locks.acquire(key, options.withWait(wait)));
            } catch (LockBusyException busy) {
                return false;
            }
        }

        private boolean push(Lease lease) {
            held.get().push(lease);
            return true;
        }

        @Override
        public void unlock() {
            Deque<Lease> mine = held.get();
            Lease lease = mine.poll();
            if (lease == null) {
                throw new IllegalMonitorStateException("lock " + key + " is not held by this thread");
            }
            if (mine.isEmpty()) {
                held.remove();
            }
            lease.close();
        }

        @Override
        public Condition newCondition() {
            throw new UnsupportedOperationException("lease locks have no conditions");
        }

        @Override
        public String toString() {
            return "LeaseholdLock[" + key + "]";
        }
    }
}
