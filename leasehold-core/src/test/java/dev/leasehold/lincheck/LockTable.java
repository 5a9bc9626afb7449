package dev.leasehold.lincheck;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.memory.InMemoryLeaseStore;
import dev.leasehold.spi.LeaseStore;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.Delayed;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * What the Lincheck tests run: a {@link LockService} over the in-memory store, an owner per thread, two
 * keys, and each owner's holds of each key (newest last), so that an operation names its owner and
 * a release gives back that owner's newest hold. Leases last an hour and are not renewed: no timer
 * fires during a run, so what is checked is the engine and the store under contention, not expiry.
 *
 * <p>The store announces no releases ({@link #withoutNotifications}): the service then starts no
 * force-release subscription on a thread of its own, and waiters are woken by local releases (and
 * polls). A model checker controls the test's threads only; work handed to another thread is
 * invisible to it, and a subscription on an engine thread was what kept an earlier version of this
 * test from finishing.
 */
final class LockTable {

    /** Owners are named by Lincheck's thread ids, which may run past the number of threads. */
    static final int OWNERS = 6;

    static final int KEYS = 2;
    static final LeaseOptions TRY =
            LeaseOptions.builder().leaseFor(Duration.ofHours(1)).renewal(false).build();

    private static final ScheduledExecutorService SCHEDULER = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "lincheck-lock-service");
        t.setDaemon(true);
        return t;
    });

    final LockService locks;
    private final LockOwner[] owners = new LockOwner[OWNERS];
    private final List<Deque<Lease>> held = new ArrayList<>();

    /**
     * A table over a service in fair mode or not ({@link LockService.Builder#fair}), on the shared
     * timer, or on one that never fires ({@link NoTimer}).
     */
    LockTable(boolean fair, boolean timer) {
        locks = LockService.builder(withoutNotifications(new InMemoryLeaseStore()))
                .scheduler(timer ? SCHEDULER : new NoTimer())
                .fair(fair)
                .build();
        for (int o = 0; o < OWNERS; o++) {
            owners[o] = LockOwner.create("owner-" + o);
            for (int k = 0; k < KEYS; k++) {
                held.add(new ConcurrentLinkedDeque<>());
            }
        }
    }

    /**
     * A timer that never fires, for model checking: nothing is due within a run (the leases last an
     * hour, no renewal, no wait), and an alarm on a shared timer would keep every earlier run's
     * service reachable from the next one, whose object graph Lincheck walks at each invocation.
     */
    static final class NoTimer extends AbstractExecutorService implements ScheduledExecutorService {
        @Override
        public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
            return new Never<>();
        }

        @Override
        public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
            return new Never<>();
        }

        @Override
        public ScheduledFuture<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period, TimeUnit unit) {
            return new Never<>();
        }

        @Override
        public ScheduledFuture<?> scheduleWithFixedDelay(
                Runnable command, long initialDelay, long delay, TimeUnit unit) {
            return new Never<>();
        }

        @Override
        public void execute(Runnable command) {
            throw new UnsupportedOperationException("nothing runs on the timer in a model-checked run");
        }

        @Override
        public void shutdown() {}

        @Override
        public List<Runnable> shutdownNow() {
            return List.of();
        }

        @Override
        public boolean isShutdown() {
            return false;
        }

        @Override
        public boolean isTerminated() {
            return false;
        }

        @Override
        public boolean awaitTermination(long timeout, TimeUnit unit) {
            return true;
        }
    }

    /** A task of {@link NoTimer}: never due, never done. */
    private static final class Never<V> implements ScheduledFuture<V> {
        @Override
        public long getDelay(TimeUnit unit) {
            return Long.MAX_VALUE;
        }

        @Override
        public int compareTo(Delayed other) {
            return Long.compare(getDelay(TimeUnit.NANOSECONDS), other.getDelay(TimeUnit.NANOSECONDS));
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            return true;
        }

        @Override
        public boolean isCancelled() {
            return false;
        }

        @Override
        public boolean isDone() {
            return false;
        }

        @Override
        public V get() {
            throw new CancellationException("never due");
        }

        @Override
        public V get(long timeout, TimeUnit unit) {
            throw new CancellationException("never due");
        }
    }

    /** The in-memory store, saying it pushes no release notifications. */
    static LeaseStore withoutNotifications(LeaseStore store) {
        return (LeaseStore) Proxy.newProxyInstance(
                LeaseStore.class.getClassLoader(), new Class<?>[] {LeaseStore.class}, (proxy, method, args) -> {
                    if (method.getName().equals("supportsReleaseNotifications")) {
                        return false;
                    }
                    try {
                        return method.invoke(store, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    static LockKey key(int key) {
        return LockKey.of("lincheck", "k" + key);
    }

    LockOwner owner(int owner) {
        return owners[owner];
    }

    /** Takes the key without waiting: the owner's hold count, or 0 if another owner holds it. */
    int tryAcquire(int owner, int key) {
        return locks.tryAcquire(key(key), TRY, owners[owner])
                .map(lease -> hold(owner, key, lease))
                .orElse(0);
    }

    /** Gives back the owner's newest hold of the key: the holds left, or -1 if it held none. */
    int release(int owner, int key) {
        Lease lease = held(owner, key).pollLast();
        if (lease == null) {
            return -1;
        }
        lease.close();
        return held(owner, key).size();
    }

    /** Whether the store shows anyone holding the key. */
    boolean isTaken(int key) {
        return locks.inspect(key(key)).isPresent();
    }

    int hold(int owner, int key, Lease lease) {
        held(owner, key).addLast(lease);
        return lease.holdCount();
    }

    private Deque<Lease> held(int owner, int key) {
        return held.get(owner * KEYS + key);
    }

    /** The sequential lock table the concurrent results must match: an owner and a hold count per key. */
    public static final class Sequential {
        private final int[] owner = {-1, -1};
        private final int[] holds = new int[KEYS];

        public int tryAcquire(int who, int key) {
            if (owner[key] != -1 && owner[key] != who) {
                return 0;
            }
            owner[key] = who;
            return ++holds[key];
        }

        /** A wait that ran out is busy: it linearizes at a moment another owner held the key. */
        public int acquire(int who, int key) {
            return tryAcquire(who, key);
        }

        public int release(int who, int key) {
            if (owner[key] != who) {
                return -1;
            }
            if (--holds[key] == 0) {
                owner[key] = -1;
            }
            return holds[key];
        }

        public boolean isTaken(int key) {
            return owner[key] != -1;
        }
    }
}
