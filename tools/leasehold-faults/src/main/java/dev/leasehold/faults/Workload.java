package dev.leasehold.faults;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockBusyException;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.faults.History.Kind;
import dev.leasehold.faults.History.Result;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * Operations a scenario runs in the background while it injects its faults, each recorded in its
 * {@link History}: a few threads, each its own owner, take one of a few shared keys (a short wait),
 * write through the grant's fence at the guarded table {@value #RESOURCE} (when the scenario has a
 * database), and release it, over and over until {@link #close() closed}. A loss ({@code onLost})
 * is recorded when the holder is told. A call that fails is recorded with an unknown outcome.
 * The short profile paces the threads so that they add little load to a build; the long one does
 * not, so that its histories hold thousands of operations under the faults. A scenario may also
 * have the threads {@link #contend contend} for a key of its own, the one its fault hits, and a
 * workload may run in a child JVM that is killed, its history streamed to the parent ({@link
 * ChildOps}): every operation is told to the history's journal as it is invoked.
 */
final class Workload implements AutoCloseable {

    static final String RESOURCE = "fault_history_log";

    private final String process;
    private final LockService locks;
    private final DataSource guarded;
    private final History history;
    private final String keyPrefix;
    private final LeaseOptions options;
    private final long paceNanos;
    private final List<Thread> threads = new ArrayList<>();
    private final AtomicInteger operations = new AtomicInteger();
    private volatile List<LockKey> contended = List.of();
    private final AtomicInteger contendedGranted = new AtomicInteger();
    private final AtomicInteger contendedRefused = new AtomicInteger();
    private volatile boolean stopped;

    /**
     * Starts the threads.
     *
     * @param process the history's process name; thread {@code i} is {@code process + i}
     * @param locks the protected lock service under the fault
     * @param guarded the database of the guarded table (see {@link #createTable}), or {@code null}
     *     for grants alone
     * @param keyPrefix the keys' id prefix, distinct from the scenario's own keys
     * @param lease each grant's lease
     */
    Workload(
            String process,
            LockService locks,
            DataSource guarded,
            History history,
            String keyPrefix,
            Duration lease,
            Profile profile) {
        this.process = process;
        this.locks = locks;
        this.guarded = guarded;
        this.history = history;
        this.keyPrefix = keyPrefix;
        this.options = LeaseOptions.builder()
                .leaseFor(lease)
                .waitFor(Duration.ofMillis(200))
                .build();
        this.paceNanos = profile == Profile.SHORT ? TimeUnit.MILLISECONDS.toNanos(25) : 0;
        for (int i = 0; i < 3; i++) {
            String name = process + i;
            Thread thread = new Thread(() -> loop(name), "workload-" + name);
            thread.setDaemon(true);
            threads.add(thread);
            thread.start();
        }
    }

    /** Creates the guarded table the workload writes to. */
    static void createTable(PrivateDatabase db) throws Exception {
        db.execute("CREATE TABLE " + RESOURCE + " (effect VARCHAR(120) NOT NULL, lock_key VARCHAR(100) NOT NULL,"
                + " fence BIGINT NOT NULL)");
    }

    /** How many times each effect the workload wrote exists at its table. */
    static Map<String, Long> effectCounts(DataSource dataSource) throws SQLException {
        return HistoryChecker.effectCounts(dataSource, RESOURCE);
    }

    /**
     * From now on each thread also takes {@code key}, as often as each of the workload's own two
     * keys ({@code null}: no longer).
     */
    void contend(LockKey key) {
        contend(key == null ? List.of() : List.of(key));
    }

    /**
     * From now on each thread also takes each of {@code keys}, each as often as each of the
     * workload's own two keys (empty: no longer): the keys another process locks, such as a
     * service's, so that the workload's grants and that process's interleave.
     */
    void contend(List<LockKey> keys) {
        contended = List.copyOf(keys);
    }

    /** How many acquires of a {@link #contend contended} key were granted so far. */
    int contendedGranted() {
        return contendedGranted.get();
    }

    /**
     * How many acquires of a {@link #contend contended} key were refused so far: the key stayed
     * taken for the whole wait, by another process or another thread of the workload.
     */
    int contendedRefused() {
        return contendedRefused.get();
    }

    /** How many operations the workload has recorded so far. */
    int operations() {
        return operations.get();
    }

    /**
     * Waits until the workload has recorded at least {@code count} operations in all, at most
     * {@code atMost}; whether it has.
     */
    boolean awaitOperations(int count, Duration atMost) throws InterruptedException {
        long deadline = System.nanoTime() + atMost.toNanos();
        while (operations.get() < count) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            TimeUnit.MILLISECONDS.sleep(10); // polls a counter; nothing to be notified of
        }
        return true;
    }

    private void loop(String name) {
        LockOwner owner = LockOwner.create(name);
        long n = 0;
        while (!stopped) {
            List<LockKey> extra = contended;
            int pick = ThreadLocalRandom.current().nextInt(2 + extra.size());
            LockKey key = pick >= 2 ? extra.get(pick - 2) : LockKey.of("load", keyPrefix + pick);
            once(name, owner, key, name + "-" + n++, pick >= 2);
            if (paceNanos > 0) {
                LockSupport.parkNanos(paceNanos);
            }
        }
    }

    private void once(String name, LockOwner owner, LockKey key, String effect, boolean contendedKey) {
        String id = key.render();
        long invoked = History.now();
        history.invoking(name, Kind.ACQUIRE, id, null, invoked, 0, null, null);
        Lease lease;
        try {
            lease = locks.acquire(key, options, owner);
        } catch (LockBusyException e) {
            record(name, Kind.ACQUIRE, id, null, invoked, 0, Result.REFUSED, null, null);
            if (contendedKey) {
                contendedRefused.incrementAndGet();
            }
            return;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopped = true;
            return;
        } catch (RuntimeException e) {
            record(name, Kind.ACQUIRE, id, null, invoked, 0, Result.UNKNOWN, null, null);
            return;
        }
        record(name, Kind.ACQUIRE, id, lease.ownerToken(), invoked, lease.fence(), Result.OK, null, null);
        if (contendedKey) {
            contendedGranted.incrementAndGet();
        }
        lease.onLost(e -> {
            history.lost(name, lease);
            operations.incrementAndGet();
        });
        if (guarded != null) {
            write(name, lease, effect);
        }
        long release = History.now();
        history.invoking(name, Kind.RELEASE, id, lease.ownerToken(), release, lease.fence(), null, null);
        Result released;
        try {
            lease.close();
            released = Result.OK;
        } catch (RuntimeException e) {
            released = Result.UNKNOWN;
        }
        record(name, Kind.RELEASE, id, lease.ownerToken(), release, lease.fence(), released, null, null);
    }

    private void record(
            String name,
            Kind kind,
            String key,
            String ownerToken,
            long invoked,
            long fence,
            Result result,
            String resource,
            String effect) {
        history.add(name, kind, key, ownerToken, invoked, fence, result, resource, effect);
        operations.incrementAndGet();
    }

    private void write(String name, Lease lease, String effect) {
        String id = lease.key().render();
        long invoked = History.now();
        history.invoking(name, Kind.WRITE, id, lease.ownerToken(), invoked, lease.fence(), RESOURCE, effect);
        Result result;
        try {
            boolean accepted = Library.fencedWrite(guarded, lease, tx -> {
                try (PreparedStatement insert = tx.prepareStatement(
                        "INSERT INTO " + RESOURCE + " (effect, lock_key, fence) VALUES (?, ?, ?)")) {
                    insert.setString(1, effect);
                    insert.setString(2, id);
                    insert.setLong(3, lease.fence());
                    insert.executeUpdate();
                }
            });
            result = accepted ? Result.OK : Result.REFUSED;
        } catch (SQLException | RuntimeException e) {
            result = Result.UNKNOWN;
        }
        record(name, Kind.WRITE, id, lease.ownerToken(), invoked, lease.fence(), result, RESOURCE, effect);
    }

    /** Tells the threads to stop after their operation, without waiting for them ({@link #close} waits). */
    void stop() {
        stopped = true;
    }

    /** Stops the threads and waits for each to finish its operation. */
    @Override
    public void close() {
        stopped = true;
        boolean interrupted = false;
        for (Thread thread : threads) {
            try {
                thread.join(TimeUnit.SECONDS.toMillis(60));
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
