package dev.leasehold.faults;

import dev.leasehold.Lease;
import dev.leasehold.faults.History.Kind;
import dev.leasehold.faults.History.Result;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.Map;

/**
 * The guarded table of the store scenarios: every holder writes its fence through {@link
 * Library#fencedWrite} into {@code fault_fence_log}, and each write is recorded in the scenario's
 * {@link History}, whose checker refuses an accepted fence that does not increase per key. Since
 * each write is made by a new grant, a new holder's write refused because an earlier grant had a
 * greater fence (the store handed out a fence that went back) is a violation as well, counted here.
 */
final class GuardedTable {

    private static final String TABLE = "fault_fence_log";

    private final PrivateDatabase db;
    private final Tally tally;
    private final History history;

    GuardedTable(PrivateDatabase db, Tally tally, History history) throws Exception {
        this.db = db;
        this.tally = tally;
        this.history = history;
        db.execute("CREATE TABLE IF NOT EXISTS fault_fence_log (lock_key VARCHAR(100) NOT NULL, fence BIGINT NOT NULL,"
                + " owner_token VARCHAR(128) NOT NULL)");
    }

    /** The new holder's write; returns whether the table accepted it. */
    synchronized boolean write(Lease lease, String when) throws Exception {
        String key = lease.key().render();
        long invoked = History.now();
        boolean accepted = Library.fencedWrite(db.dataSource(), lease, tx -> {
            try (PreparedStatement insert = tx.prepareStatement(
                    "INSERT INTO fault_fence_log (lock_key, fence, owner_token) VALUES (?, ?, ?)")) {
                insert.setString(1, key);
                insert.setLong(2, lease.fence());
                insert.setString(3, lease.ownerToken());
                insert.executeUpdate();
            }
        });
        history.add(
                "S",
                Kind.WRITE,
                key,
                lease.ownerToken(),
                invoked,
                lease.fence(),
                accepted ? Result.OK : Result.REFUSED,
                TABLE,
                effect(key, lease.fence(), lease.ownerToken()));
        if (!accepted) {
            tally.violation("a new holder of " + key + " " + when + " got fence " + lease.fence()
                    + ", below one accepted before: its write was refused (the fence went back)");
        }
        return accepted;
    }

    private static String effect(String key, long fence, String owner) {
        return key + "#" + fence + "#" + owner;
    }

    /** How many times each write's row exists in the table. */
    Map<String, Long> effectCounts() throws SQLException {
        Map<String, Long> counts = new HashMap<>();
        try (Connection connection = db.dataSource().getConnection();
                PreparedStatement select =
                        connection.prepareStatement("SELECT lock_key, fence, owner_token, COUNT(*) FROM " + TABLE
                                + " GROUP BY lock_key, fence, owner_token");
                ResultSet rows = select.executeQuery()) {
            while (rows.next()) {
                counts.put(effect(rows.getString(1), rows.getLong(2), rows.getString(3)), rows.getLong(4));
            }
        }
        return counts;
    }
}
