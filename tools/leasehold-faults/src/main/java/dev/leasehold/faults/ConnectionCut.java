package dev.leasehold.faults;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.jdbc.Database;
import dev.leasehold.testkit.TestServices;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;

/**
 * 5. The holder's database session is killed from the server ({@code pg_terminate_backend} on
 * PostgreSQL, {@code KILL CONNECTION} on MariaDB) between a fenced write and its COMMIT. Protected:
 * the fence check, the debit and its ledger row in one transaction: nothing of it is written, and
 * the key is recoverable: the holder's retry on a new connection is accepted, and after release
 * another owner takes the key at once. Canary: the same debit and ledger row as two autocommit
 * statements, cut between them: the debit lands without its ledger row.
 */
final class ConnectionCut implements Scenario {

    static final String TITLE = "5 connection cut";
    private static final long AMOUNT = 10;

    @Override
    public String title() {
        return TITLE;
    }

    @Override
    public List<String> backends() {
        return List.of("postgresql", "mariadb");
    }

    @Override
    public Outcome run(String backend, Profile profile) throws Exception {
        Database database = backend.equals("mariadb") ? Database.MARIADB : Database.POSTGRESQL;
        Tally tally = new Tally(TITLE, backend);
        History history = new History();
        try (PrivateDatabase db = PrivateDatabase.create(database);
                Library.Store store = Library.jdbcStore(db.dataSource(), database);
                LockService locks = Library.locks(store.store())) {
            db.execute(
                    "CREATE TABLE fault_cut_account (id VARCHAR(64) NOT NULL PRIMARY KEY, balance BIGINT NOT NULL)",
                    "CREATE TABLE fault_cut_ledger (op VARCHAR(64) NOT NULL PRIMARY KEY, account VARCHAR(64) NOT NULL,"
                            + " amount BIGINT NOT NULL)",
                    "INSERT INTO fault_cut_account (id, balance) VALUES ('guarded', 1000000)",
                    "INSERT INTO fault_cut_account (id, balance) VALUES ('canary', 1000000)");
            Workload.createTable(db);
            int cuts = 0;
            Workload load = new Workload("W", locks, db.dataSource(), history, "cut", Duration.ofSeconds(2), profile);
            try {
                for (; profile.more(cuts, 5, history.size()); cuts++) {
                    LockKey key = LockKey.of("cut", "acct" + (cuts % 2));
                    history.fault("session of the holder of " + key + " killed before its COMMIT");
                    guarded(db, locks, key, "g" + cuts, tally);
                    canary(db, "c" + cuts, tally);
                    tally.operation();
                }
            } finally {
                load.close();
            }
            tally.note("cuts: " + cuts + " of each path");
            tally.check(
                    new HistoryChecker(PausedHolder.OVERLAP, true), history, Workload.effectCounts(db.dataSource()));
        }
        return tally.outcome();
    }

    private static void guarded(PrivateDatabase db, LockService locks, LockKey key, String op, Tally tally)
            throws Exception {
        LeaseOptions options = LeaseOptions.builder()
                .leaseFor(Duration.ofSeconds(10))
                .waitFor(Duration.ofSeconds(5))
                .build();
        long balanceBefore = balance(db, "guarded");
        try (Lease lease = locks.acquire(key, options)) {
            try (Connection victim = db.spec().connect()) {
                victim.setAutoCommit(false);
                if (!Library.acceptFence(db.dataSource(), victim, lease)) {
                    tally.violation("the holder's fence was refused before the cut on " + key);
                }
                debit(victim, "guarded", op);
                cut(db, victim);
                try {
                    victim.commit();
                    tally.violation("COMMIT of " + op + " succeeded on a killed session");
                } catch (SQLException expected) {
                    // the session is gone: nothing may have been written
                }
            }
            long balanceAfter = balance(db, "guarded");
            long rows = ledgerRows(db, op);
            if (balanceAfter != balanceBefore || rows != 0) {
                tally.violation("the cut transaction " + op + " left balance " + balanceAfter + " (was " + balanceBefore
                        + ") and " + rows + " ledger rows");
            }
            // Recoverable: the same holder retries on a new connection, with the same fence.
            long start = System.nanoTime();
            boolean retried = Library.fencedWrite(db.dataSource(), lease, tx -> debit(tx, "guarded", op));
            tally.stallSince(start);
            if (!retried) {
                tally.violation("the holder's retry of " + op + " after the cut was refused");
            } else if (balance(db, "guarded") != balanceBefore - AMOUNT || ledgerRows(db, op) != 1) {
                tally.violation("the retry of " + op + " did not debit exactly once");
            }
        }
        long start = System.nanoTime();
        try (Lease next =
                locks.tryAcquire(key, options, LockOwner.create("next")).orElse(null)) {
            tally.stallSince(start);
            if (next == null) {
                tally.violation(key + " could not be taken by another owner after the cut holder released it");
            }
        }
    }

    private static void canary(PrivateDatabase db, String op, Tally tally) throws Exception {
        long balanceBefore = balance(db, "canary");
        try (Connection victim = db.spec().connect()) {
            victim.setAutoCommit(true);
            try (PreparedStatement debit =
                    victim.prepareStatement("UPDATE fault_cut_account SET balance = balance - ? WHERE id = 'canary'")) {
                debit.setLong(1, AMOUNT);
                debit.executeUpdate();
            }
            cut(db, victim);
            try {
                ledger(victim, "canary", op);
            } catch (SQLException expected) {
                // the session is gone
            }
        }
        if (balance(db, "canary") != balanceBefore && ledgerRows(db, op) == 0) {
            tally.canary("the autocommit debit " + op + " landed without its ledger row");
        }
    }

    private static void debit(Connection connection, String account, String op) throws SQLException {
        try (PreparedStatement debit =
                connection.prepareStatement("UPDATE fault_cut_account SET balance = balance - ? WHERE id = ?")) {
            debit.setLong(1, AMOUNT);
            debit.setString(2, account);
            debit.executeUpdate();
        }
        ledger(connection, account, op);
    }

    private static void ledger(Connection connection, String account, String op) throws SQLException {
        try (PreparedStatement insert =
                connection.prepareStatement("INSERT INTO fault_cut_ledger (op, account, amount) VALUES (?, ?, ?)")) {
            insert.setString(1, op);
            insert.setString(2, account);
            insert.setLong(3, AMOUNT);
            insert.executeUpdate();
        }
    }

    private static void cut(PrivateDatabase db, Connection victim) throws SQLException {
        try (Connection admin = db.dataSource().getConnection()) {
            TestServices.killFromServer(victim, admin);
        }
    }

    private static long balance(PrivateDatabase db, String account) throws SQLException {
        return db.queryLong("SELECT balance FROM fault_cut_account WHERE id = '" + account + "'");
    }

    private static long ledgerRows(PrivateDatabase db, String op) throws SQLException {
        return db.queryLong("SELECT COUNT(*) FROM fault_cut_ledger WHERE op = '" + op + "'");
    }
}
