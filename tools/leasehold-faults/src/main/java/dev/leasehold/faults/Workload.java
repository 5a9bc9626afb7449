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
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * Operations a scenario runs in the background while it injects its faults, each recorded in its
 * {@link History}: a few threads, each its own owner, take one of a few shared keys (a short wait),
 * write through the grant's fence at the guarded table {@value #RESOURCE} (when the scenario has a
 * database), and release it, over and over until {@link #close() closed}. A loss ({@code onLost})
 * is recorded when the holder is told. A call that fails is recorded with an unknown outcome.
 * The short profile paces the threads so that they add little load to a build; the long one does
 * not, so that its histories hold thousands of operations under the faults.
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

    private void loop(String name) {
        LockOwner owner = LockOwner.create(name);
        long n = 0;
        while (!stopped) {
            LockKey key =
                    LockKey.of("load", keyPrefix + ThreadLocalRandom.current().nextInt(2));
            once(name, owner, key, name + "-" + n++);
            if (paceNanos > 0) {
                LockSupport.parkNanos(paceNanos);
            }
        }
    }

    private void once(String name, LockOwner owner, LockKey key, String effect) {
        String id = key.render();
        long invoked = History.now();
        Lease lease;
        try {
            lease = locks.acquire(key, options, owner);
        } catch (LockBusyException e) {
            history.add(name, Kind.ACQUIRE, id, null, invoked, 0, Result.REFUSED, null, null);
            return;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopped = true;
            return;
        } catch (RuntimeException e) {
            history.add(name, Kind.ACQUIRE, id, null, invoked, 0, Result.UNKNOWN, null, null);
            return;
        }
        history.add(name, Kind.ACQUIRE, id, lease.ownerToken(), invoked, lease.fence(), Result.OK, null, null);
        lease.onLost(e -> history.lost(name, lease));
        if (guarded != null) {
            write(name, lease, effect);
        }
        long release = History.now();
        Result released;
        try {
            lease.close();
            released = Result.OK;
        } catch (RuntimeException e) {
            released = Result.UNKNOWN;
        }
        history.add(name, Kind.RELEASE, id, lease.ownerToken(), release, lease.fence(), released, null, null);
    }

    private void write(String name, Lease lease, String effect) {
        String id = lease.key().render();
        long invoked = History.now();
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
        history.add(name, Kind.WRITE, id, lease.ownerToken(), invoked, lease.fence(), result, RESOURCE, effect);
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
