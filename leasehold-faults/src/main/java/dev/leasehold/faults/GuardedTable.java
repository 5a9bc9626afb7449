package dev.leasehold.faults;

import dev.leasehold.Lease;
import java.sql.PreparedStatement;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The guarded table of the store scenarios: every holder writes its fence through {@link
 * Library#fencedWrite} into {@code fault_fence_log}. Since each write is made by a new grant, the
 * fences the table accepts must strictly increase per key; an accepted fence that does not (a
 * repeat, or one going back) is a violation, and so is a new holder's write refused because an
 * earlier grant had a greater fence (the store handed out a fence that went back).
 */
final class GuardedTable {

    private final PrivateDatabase db;
    private final Tally tally;
    private final Map<String, Long> newestAccepted = new ConcurrentHashMap<>();

    GuardedTable(PrivateDatabase db, Tally tally) throws Exception {
        this.db = db;
        this.tally = tally;
        db.execute("CREATE TABLE IF NOT EXISTS fault_fence_log (lock_key VARCHAR(100) NOT NULL, fence BIGINT NOT NULL,"
                + " owner_token VARCHAR(128) NOT NULL)");
    }

    /** The new holder's write; returns whether the table accepted it. */
    synchronized boolean write(Lease lease, String when) throws Exception {
        String key = lease.key().render();
        boolean accepted = Library.fencedWrite(db.dataSource(), lease, tx -> {
            try (PreparedStatement insert = tx.prepareStatement(
                    "INSERT INTO fault_fence_log (lock_key, fence, owner_token) VALUES (?, ?, ?)")) {
                insert.setString(1, key);
                insert.setLong(2, lease.fence());
                insert.setString(3, lease.ownerToken());
                insert.executeUpdate();
            }
        });
        long newest = newestAccepted.getOrDefault(key, 0L);
        if (accepted && lease.fence() <= newest) {
            tally.violation("the guarded table accepted fence " + lease.fence() + " of a new holder of " + key + " "
                    + when + ", not above " + newest + " accepted before (a repeated fence)");
        } else if (!accepted) {
            tally.violation("a new holder of " + key + " " + when + " got fence " + lease.fence()
                    + ", below one accepted before: its write was refused (the fence went back)");
        }
        if (accepted) {
            newestAccepted.merge(key, lease.fence(), Math::max);
        }
        return accepted;
    }
}
