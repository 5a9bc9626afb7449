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
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * 11. The SQL lease store on a PostgreSQL primary with an asynchronous standby. The standby is
 * killed, so that the grants that follow are never replicated; the primary is killed ({@code
 * SIGKILL}) while the last of them is held; the standby is started again and promoted, and a new
 * client takes the key there. Its fence must be above every fence handed out before, at a guarded
 * table on another server and at one on the promoted server, and the old holder's fenced writes
 * must be refused at both. Canary: a plain counter on the primary used as a fence hands out a value
 * again after the failover.
 */
final class PostgresFailover implements Scenario {

    static final String TITLE = "11 postgresql failover";
    private static final String BACKEND = "postgresql, asynchronous standby";
    private static final int LOST_GRANTS = 4;
    private static final String GUARDED = "fault_failover";

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
                    BACKEND,
                    Outcome.Status.TOOL_ABSENT,
                    "no PostgreSQL server binaries (initdb, postgres, pg_basebackup) under /usr/lib/postgresql");
        }
        Tally tally = new Tally(TITLE, BACKEND);
        History history = new History();
        try (PrivateDatabase guarded = PrivateDatabase.create(Database.POSTGRESQL)) {
            guarded.execute(guardedTable());
            int rounds = profile.times(1);
            for (int round = 0; round < rounds; round++) {
                failover(bin.get(), guarded, round, tally, history);
            }
            HistoryChecker.Verdict verdict = new HistoryChecker(Duration.ofMillis(100), false)
                    .check(history, HistoryChecker.effectCounts(guarded.dataSource(), GUARDED));
            tally.checked(verdict);
            tally.note("history: " + verdict.summary());
            tally.note("grants are not checked for overlap: the promoted standby lacks the last grants"
                    + " (asynchronous replication), so the old holder still held while the new one was granted;"
                    + " the fence is what keeps its writes out");
        }
        return tally.outcome();
    }

    private static String guardedTable() {
        return "CREATE TABLE " + GUARDED + " (effect VARCHAR(64) NOT NULL PRIMARY KEY,"
                + " lock_key VARCHAR(100) NOT NULL, fence BIGINT NOT NULL)";
    }

    private static void failover(Path bin, PrivateDatabase guarded, int round, Tally tally, History history)
            throws Exception {
        LockKey key = LockKey.of("failover", "k" + round);
        String k = key.render();
        try (PostgresPair pair = PostgresPair.start(bin);
                HikariDataSource primary = PostgresPair.pool(pair.primaryUrl(), "failover-primary-" + round)) {
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
            try {
                // One grant the standby has, then grants it never sees; the last one stays held.
                for (int i = 0; i <= LOST_GRANTS; i++) {
                    if (i == 1) {
                        pair.awaitStandbyCaughtUp(Duration.ofSeconds(30));
                        pair.killStandby();
                        history.fault("standby killed: the grants that follow are not replicated");
                    }
                    Lease lease = acquire(history, "P", old, key);
                    highestFence = Math.max(highestFence, lease.fence());
                    highestCounter = Math.max(highestCounter, nextCounter(primary, k));
                    expectAccepted(tally, history, "P", guarded.dataSource(), true, lease, "r" + round + "-p" + i);
                    expectAccepted(tally, history, "P", primary, false, lease, "r" + round + "-p" + i);
                    if (i < LOST_GRANTS) {
                        release(history, "P", lease);
                    } else {
                        stillHeld = lease;
                    }
                }
                history.fault("primary killed while " + k + " is held at fence " + stillHeld.fence());
                pair.killPrimary();
                long failedAt = System.nanoTime();
                pair.restartStandby();
                pair.promoteStandby();
                try (HikariDataSource promoted = PostgresPair.pool(pair.standbyUrl(), "failover-promoted-" + round);
                        Library.Store newStore = Library.jdbcStore(promoted, Database.POSTGRESQL);
                        LockService next = Library.locks(newStore.store())) {
                    long counter = nextCounter(promoted, k);
                    if (counter <= highestCounter) {
                        tally.canary("a plain counter on the promoted standby handed out " + counter + " for " + k
                                + " again (the primary had reached " + highestCounter + ")");
                    }
                    Lease lease = acquire(history, "S", next, key);
                    tally.stall(Duration.ofNanos(System.nanoTime() - failedAt));
                    if (lease.fence() <= highestFence) {
                        tally.violation("the promoted standby granted " + k + " at fence " + lease.fence()
                                + ", not above " + highestFence + " handed out by the old primary");
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
                    tally.operations(LOST_GRANTS + 2);
                }
            } finally {
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
    }

    private static Lease acquire(History history, String process, LockService locks, LockKey key)
            throws InterruptedException {
        long invoked = History.now();
        Lease lease = locks.acquire(
                key,
                LeaseOptions.builder()
                        .leaseFor(Duration.ofSeconds(30))
                        .waitFor(Duration.ofSeconds(10))
                        .build());
        history.add(
                process, Kind.ACQUIRE, key.render(), lease.ownerToken(), invoked, lease.fence(), Result.OK, null, null);
        return lease;
    }

    private static void release(History history, String process, Lease lease) {
        long invoked = History.now();
        lease.close();
        history.add(
                process,
                Kind.RELEASE,
                lease.key().render(),
                lease.ownerToken(),
                invoked,
                lease.fence(),
                Result.OK,
                null,
                null);
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
}
