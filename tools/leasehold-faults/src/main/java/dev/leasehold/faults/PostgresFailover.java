package dev.leasehold.faults;

import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.faults.History.Kind;
import dev.leasehold.faults.History.Result;
import dev.leasehold.jdbc.Database;
import dev.leasehold.jdbc.JdbcSchema;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;

/**
 * 11. The SQL lease store on a PostgreSQL primary with a standby, asynchronous or synchronous.
 *
 * <p>Asynchronous: the standby is killed, so that the grants that follow are never replicated;
 * more grants are made, the last of them held, and the primary is killed ({@code SIGKILL}) while
 * clients are taking further keys; the standby is started again and promoted, and a new client
 * takes the key there. Its fence must be above every fence handed out before, at a guarded table on
 * another server and at one on the promoted server, and the old holder's fenced writes must be
 * refused at both. Canary: a plain counter on the primary used as a fence hands out a value again
 * after the failover. The acknowledged grants the promoted standby lacks are counted.
 *
 * <p>Synchronous: the same without killing the standby (every commit waits for it). On top of the
 * fences, every grant acknowledged to a client before the kill must be on the promoted standby,
 * with its owner and fence, and the plain counter must not repeat; the old holder's lease, on the
 * promoted standby too, keeps the new client out until it ends, and the history checker checks that
 * grants never overlap (200 ms bound). Canary: acquires were in flight when the primary was killed
 * (the standby's WAL receiver is stopped with {@code SIGSTOP} until a grant's commit waits for it,
 * then the primary is killed: acquires invoked before the kill and never acknowledged).
 */
final class PostgresFailover implements Scenario {

    static final String TITLE = "11 postgresql failover";
    private static final int LOST_GRANTS = 4;
    private static final String GUARDED = "fault_failover";
    /** Clients taking keys of their own while the primary is killed. */
    private static final int IN_FLIGHT_CLIENTS = 3;
    /** Grants acknowledged to those clients before the primary is killed. */
    private static final int ACKNOWLEDGED_BEFORE_KILL = 12;

    private final boolean synchronous;

    /** The asynchronous standby. */
    PostgresFailover() {
        this(false);
    }

    PostgresFailover(boolean synchronous) {
        this.synchronous = synchronous;
    }

    private String backend() {
        return synchronous ? "postgresql, synchronous standby" : "postgresql, asynchronous standby";
    }

    @Override
    public String title() {
        return TITLE;
    }

    @Override
    public List<String> backends() {
        return List.of("postgresql");
    }

    @Override
    public Outcome run(String backend, Profile profile) throws Exception {
        Optional<Path> bin = PostgresPair.binaries();
        if (bin.isEmpty()) {
            return Outcome.absent(
                    TITLE,
                    backend(),
                    Outcome.Status.TOOL_ABSENT,
                    "no PostgreSQL server binaries (initdb, postgres, pg_basebackup) under /usr/lib/postgresql");
        }
        Tally tally = new Tally(TITLE, backend());
        History history = new History();
        try (PrivateDatabase guarded = PrivateDatabase.create(Database.POSTGRESQL)) {
            guarded.execute(guardedTable());
            int rounds = profile.times(1);
            for (int round = 0; round < rounds; round++) {
                failover(bin.get(), guarded, round, tally, history);
            }
            HistoryChecker.Verdict verdict = new HistoryChecker(Duration.ofMillis(200), synchronous)
                    .check(history, HistoryChecker.effectCounts(guarded.dataSource(), GUARDED));
            tally.checked(verdict);
            tally.note("history: " + verdict.summary());
            if (!synchronous) {
                tally.note("grants are not checked for overlap: the promoted standby lacks the last grants"
                        + " (asynchronous replication), so the old holder still held while the new one was granted;"
                        + " the fence is what keeps its writes out");
            }
        }
        return tally.outcome();
    }

    private static String guardedTable() {
        return "CREATE TABLE " + GUARDED + " (effect VARCHAR(64) NOT NULL PRIMARY KEY,"
                + " lock_key VARCHAR(100) NOT NULL, fence BIGINT NOT NULL)";
    }

    private void failover(Path bin, PrivateDatabase guarded, int round, Tally tally, History history) throws Exception {
        LockKey key = LockKey.of("failover", "k" + round);
        try (PostgresPair pair = PostgresPair.start(bin, synchronous);
                HikariDataSource primary = PostgresPair.pool(pair.primaryUrl(), "failover-primary-" + round)) {
            failover(pair, primary, guarded, key, round, tally, history);
        }
    }

    private void failover(
            PostgresPair pair,
            HikariDataSource primary,
            PrivateDatabase guarded,
            LockKey key,
            int round,
            Tally tally,
            History history)
            throws Exception {
        String k = key.render();
        JdbcSchema.create(primary, Database.POSTGRESQL);
        try (Connection connection = primary.getConnection();
                var statement = connection.createStatement()) {
            statement.execute(guardedTable());
            statement.execute("CREATE TABLE fault_counter (lock_key VARCHAR(100) PRIMARY KEY, n BIGINT NOT NULL)");
            statement.execute("INSERT INTO fault_counter VALUES ('" + k + "', 0)");
        }
        long highestFence = 0;
        long highestCounter = 0;
        Library.Store oldStore = Library.jdbcStore(primary, Database.POSTGRESQL);
        LockService old = Library.locks(oldStore.store());
        Lease stillHeld = null;
        long heldFrom = 0;
        if (round == 0) {
            tally.note("primary: " + pair.replicationSettings());
        }
        try {
            // One grant the standby has, then grants it never sees; the last one stays held.
            for (int i = 0; i <= LOST_GRANTS; i++) {
                if (i == 1 && !synchronous) {
                    pair.awaitStandbyCaughtUp(Duration.ofSeconds(30));
                    pair.killStandby();
                    history.fault("standby killed: the grants that follow are not replicated");
                }
                long invokedNanos = System.nanoTime();
                Lease lease = acquire(history, "P", old, key, heldFor(), Duration.ofSeconds(10));
                heldFrom = invokedNanos;
                highestFence = Math.max(highestFence, lease.fence());
                highestCounter = Math.max(highestCounter, nextCounter(primary, k));
                expectAccepted(tally, history, "P", guarded.dataSource(), true, lease, "r" + round + "-p" + i);
                expectAccepted(tally, history, "P", primary, false, lease, "r" + round + "-p" + i);
                if (i < LOST_GRANTS) {
                    release(history, "P", lease);
                } else {
                    stillHeld = lease;
                    // Its end, for the overlap check: the old service tells it once its renewals
                    // have failed until the lease's local deadline.
                    lease.onLost(e -> history.lost("P", lease));
                }
            }
            InFlight inFlight = new InFlight(old, round, history);
            inFlight.awaitAcknowledged(tally);
            int waiting = 0;
            if (synchronous) {
                // The standby stops confirming: the grants being made now are committed on the
                // primary and wait for it, unacknowledged, when the primary is killed.
                pair.pauseReceiver();
                waiting = pair.awaitCommitsWaitingForStandby(Duration.ofSeconds(30));
            }
            history.fault("primary killed while " + k + " is held at fence " + stillHeld.fence()
                    + " and clients are taking keys");
            inFlight.killing(System.nanoTime());
            pair.killPrimary();
            long failedAt = System.nanoTime();
            if (synchronous) {
                pair.resumeReceiver();
            }
            inFlight.join(tally);
            highestFence = Math.max(highestFence, inFlight.highestFence());
            if (!synchronous) {
                pair.restartStandby();
            }
            pair.promoteStandby();
            try (HikariDataSource promoted = PostgresPair.pool(pair.standbyUrl(), "failover-promoted-" + round);
                    Library.Store newStore = Library.jdbcStore(promoted, Database.POSTGRESQL);
                    LockService next = Library.locks(newStore.store())) {
                inFlight.checkOn(promoted, synchronous, tally);
                if (synchronous && waiting > 0 && inFlight.unacknowledged() > 0) {
                    tally.canary("the primary was killed with " + waiting
                            + " grants committed there and waiting for the standby's confirmation; "
                            + inFlight.unacknowledged() + " acquires invoked before the kill were never acknowledged ("
                            + inFlight.acknowledged().size() + " were)");
                }
                long counter = nextCounter(promoted, k);
                if (synchronous && counter <= highestCounter) {
                    tally.violation("a plain counter on the promoted synchronous standby handed out " + counter
                            + " for " + k + " again (the primary had acknowledged " + highestCounter + ")");
                } else if (counter <= highestCounter) {
                    tally.canary("a plain counter on the promoted standby handed out " + counter + " for " + k
                            + " again (the primary had reached " + highestCounter + ")");
                }
                if (synchronous) {
                    // The old holder's acknowledged grant is on the promoted standby: the key stays
                    // taken until that lease ends (it began no earlier than heldFrom).
                    Optional<Lease> early = next.tryAcquire(
                            key,
                            LeaseOptions.builder()
                                    .leaseFor(Duration.ofSeconds(30))
                                    .build());
                    long elapsed = System.nanoTime() - heldFrom;
                    if (early.isPresent()) {
                        early.get().close();
                        if (elapsed < heldFor().toNanos()) {
                            tally.violation("the promoted synchronous standby granted " + k + " "
                                    + Duration.ofNanos(elapsed).toMillis() + " ms after the old holder's acknowledged "
                                    + heldFor().toMillis() + " ms lease began");
                        }
                    } else {
                        tally.note("the promoted standby refused " + k + " to a new client "
                                + Duration.ofNanos(elapsed).toMillis() + " ms into the old holder's acknowledged "
                                + heldFor().toMillis() + " ms lease");
                    }
                }
                Lease lease = acquire(history, "S", next, key, Duration.ofSeconds(30), Duration.ofSeconds(30));
                tally.stall(Duration.ofNanos(System.nanoTime() - failedAt));
                if (lease.fence() <= highestFence) {
                    tally.violation("the promoted standby granted " + k + " at fence " + lease.fence() + ", not above "
                            + highestFence + " handed out by the old primary");
                }
                expectAccepted(tally, history, "S", guarded.dataSource(), true, lease, "r" + round + "-s");
                expectAccepted(tally, history, "S", promoted, false, lease, "r" + round + "-s");
                // The old holder, paused through the failover, writes at both with its old fence.
                if (write(history, "P", guarded.dataSource(), true, stillHeld, "r" + round + "-late")) {
                    tally.violation("the old holder's fenced write at fence " + stillHeld.fence()
                            + " landed on the guarded table after the new holder's " + lease.fence());
                }
                if (write(history, "P", promoted, false, stillHeld, "r" + round + "-late")) {
                    tally.violation("the old holder's fenced write at fence " + stillHeld.fence()
                            + " landed on the promoted primary after the new holder's " + lease.fence());
                }
                release(history, "S", lease);
                tally.operations(LOST_GRANTS + 2 + inFlight.acknowledged().size());
            }
        } finally {
            primary.close(); // the old service's calls now fail at once, not after a connection timeout
            if (stillHeld != null) {
                try {
                    stillHeld.close();
                } catch (RuntimeException e) {
                    // its primary is gone
                }
            }
            old.close();
            oldStore.close();
        }
    }

    /**
     * The old holder's lease: with a synchronous standby it survives the failover, so the new
     * client waits for its end; short enough for a short run.
     */
    private Duration heldFor() {
        return synchronous ? Duration.ofSeconds(12) : Duration.ofSeconds(30);
    }

    private static Lease acquire(
            History history, String process, LockService locks, LockKey key, Duration leaseFor, Duration waitFor)
            throws InterruptedException {
        long invoked = History.now();
        Lease lease = locks.acquire(
                key, LeaseOptions.builder().leaseFor(leaseFor).waitFor(waitFor).build());
        history.ok(process, Kind.ACQUIRE, lease, invoked);
        return lease;
    }

    private static void release(History history, String process, Lease lease) {
        long invoked = History.now();
        lease.close();
        history.ok(process, Kind.RELEASE, lease, invoked);
    }

    private static void expectAccepted(
            Tally tally,
            History history,
            String process,
            DataSource target,
            boolean external,
            Lease lease,
            String effect)
            throws SQLException {
        if (!write(history, process, target, external, lease, effect)) {
            tally.violation(process + "'s fenced write " + effect + " at fence " + lease.fence() + " was refused");
        }
    }

    /**
     * A fenced write of {@code effect}; only the writes at the guarded table on the other server
     * ({@code external}) go into the history: the promoted server lost the old primary's last
     * writes, as asynchronous replication does.
     */
    private static boolean write(
            History history, String process, DataSource target, boolean external, Lease lease, String effect)
            throws SQLException {
        long invoked = History.now();
        boolean accepted = Library.fencedWrite(target, lease, tx -> {
            try (PreparedStatement insert =
                    tx.prepareStatement("INSERT INTO " + GUARDED + " (effect, lock_key, fence) VALUES (?, ?, ?)")) {
                insert.setString(1, effect);
                insert.setString(2, lease.key().render());
                insert.setLong(3, lease.fence());
                insert.executeUpdate();
            }
        });
        if (external) {
            history.add(
                    process,
                    Kind.WRITE,
                    lease.key().render(),
                    lease.ownerToken(),
                    invoked,
                    lease.fence(),
                    accepted ? Result.OK : Result.REFUSED,
                    GUARDED,
                    effect);
        }
        return accepted;
    }

    private static long nextCounter(DataSource dataSource, String key) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                PreparedStatement next = connection.prepareStatement(
                        "UPDATE fault_counter SET n = n + 1 WHERE lock_key = ? RETURNING n")) {
            next.setString(1, key);
            try (ResultSet row = next.executeQuery()) {
                row.next();
                return row.getLong(1);
            }
        }
    }

    /**
     * Clients of the old primary, each taking new keys of its own one after another and holding
     * them, until the primary is killed: the grants acknowledged to them, and the acquires that
     * were invoked before the kill and never acknowledged.
     */
    private static final class InFlight {

        private final List<Lease> acknowledged = new ArrayList<>();
        private final CountDownLatch enough = new CountDownLatch(ACKNOWLEDGED_BEFORE_KILL);
        private final AtomicInteger unacknowledged = new AtomicInteger();
        private final List<Thread> clients = new ArrayList<>();
        private volatile long killedAt = Long.MAX_VALUE;
        private volatile RuntimeException beforeKill;

        InFlight(LockService locks, int round, History history) {
            for (int c = 0; c < IN_FLIGHT_CLIENTS; c++) {
                String process = "F" + c;
                String prefix = "f" + round + "-" + c + "-";
                Thread client = new Thread(() -> take(locks, prefix, process, history), "failover-client-" + c);
                client.setDaemon(true);
                clients.add(client);
                client.start();
            }
        }

        private void take(LockService locks, String prefix, String process, History history) {
            LeaseOptions options =
                    LeaseOptions.builder().leaseFor(Duration.ofSeconds(30)).build();
            for (int n = 0; n < 100_000; n++) {
                LockKey key = LockKey.of("failover", prefix + n);
                long invokedNanos = System.nanoTime();
                long invoked = History.now();
                try {
                    Lease lease = locks.tryAcquire(key, options)
                            .orElseThrow(() -> new IllegalStateException(key.render() + " was busy"));
                    history.ok(process, Kind.ACQUIRE, lease, invoked);
                    synchronized (acknowledged) {
                        acknowledged.add(lease);
                    }
                    enough.countDown();
                } catch (RuntimeException e) {
                    if (invokedNanos >= killedAt) {
                        return; // invoked after the kill: not in flight
                    }
                    if (killedAt == Long.MAX_VALUE) {
                        beforeKill = e;
                    } else {
                        unacknowledged.incrementAndGet();
                    }
                    enough.countDown(); // never leave the scenario waiting for grants that will not come
                    return;
                }
            }
        }

        void awaitAcknowledged(Tally tally) throws InterruptedException {
            if (!enough.await(60, TimeUnit.SECONDS)) {
                tally.violation("the clients had " + acknowledged().size() + " grants acknowledged after 60 s");
            }
        }

        /** Called just before the primary is killed. */
        void killing(long nanos) {
            killedAt = nanos;
        }

        void join(Tally tally) throws InterruptedException {
            for (Thread client : clients) {
                client.join(TimeUnit.SECONDS.toMillis(60));
                if (client.isAlive()) {
                    tally.violation(client.getName() + " was still taking keys 60 s after the primary was killed");
                }
            }
            if (beforeKill != null) {
                tally.violation("an acquire failed before the primary was killed: " + beforeKill);
            }
        }

        List<Lease> acknowledged() {
            synchronized (acknowledged) {
                return List.copyOf(acknowledged);
            }
        }

        int unacknowledged() {
            return unacknowledged.get();
        }

        long highestFence() {
            return acknowledged().stream().mapToLong(Lease::fence).max().orElse(0);
        }

        /**
         * Counts the acknowledged grants whose row (owner and fence) the promoted server lacks; with
         * a synchronous standby each one is a violation.
         */
        void checkOn(DataSource promoted, boolean synchronous, Tally tally) throws SQLException {
            List<Lease> grants = acknowledged();
            List<String> lost = new ArrayList<>();
            try (Connection connection = promoted.getConnection();
                    PreparedStatement present = connection.prepareStatement(
                            "SELECT count(*) FROM leasehold_lease WHERE owner_token = ? AND fence = ?")) {
                for (Lease grant : grants) {
                    present.setString(1, grant.ownerToken());
                    present.setLong(2, grant.fence());
                    try (ResultSet row = present.executeQuery()) {
                        row.next();
                        if (row.getLong(1) != 1) {
                            lost.add(grant.key().render() + "@" + grant.fence());
                        }
                    }
                }
            }
            tally.note("acquires in flight at the kill (never acknowledged): " + unacknowledged()
                    + "; acknowledged grants on the promoted standby: " + (grants.size() - lost.size()) + " of "
                    + grants.size() + " (lost " + lost.size() + ")");
            if (synchronous && !lost.isEmpty()) {
                tally.violation("the promoted synchronous standby lacks " + lost.size() + " of " + grants.size()
                        + " grants acknowledged before the kill, e.g. " + lost.subList(0, Math.min(3, lost.size())));
            }
        }
    }
}
