package dev.leasehold.jdbc;

/**
 * The lease SQL for MariaDB (10.5 and later): {@code INSERT ... ON DUPLICATE KEY UPDATE ...
 * RETURNING}.
 *
 * <p>No two lease statements can deadlock with each other: each one locks exactly one row, the
 * key's primary-key record, and asks for the exclusive lock at once (an upsert on a duplicate
 * primary key, or an update by primary key). None reads the row under a shared lock first and then
 * needs it exclusively, which is how two sessions deadlock on one row. Housekeeping finds its rows
 * with a non-locking read and deletes them by primary key, in key order.
 *
 * <p>MariaDB applies the assignments of ON DUPLICATE KEY UPDATE left to right, each seeing the
 * columns already assigned. The acquire statement is ordered so that its grant condition (expired,
 * or same owner) reads the same before and after each assignment: fence and acquired_at_ms first,
 * owner_token next, expires_at_ms last.
 */
final class MariaDbDialect {

    /**
     * Epoch ms by the server's UTC clock: fixed for the statement, advancing from statement to
     * statement inside a transaction; no session time zone involved.
     */
    static final String NOW = "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)";

    /**
     * Epoch µs by the same clock: the floor of every fence handed out, so a fence is above any
     * fence given before even when the row came back older (a restore, a promoted replica that
     * missed the grant), as long as the database clock does not go back.
     */
    static final String NOW_MICROS = "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))";

    /*
     * acquire: grants lock_key to owner for lease_ms when the row
     *   - does not exist                           -> inserted, fence = now_us
     *   - is free or expired (expires_at_ms <= now) -> taken over, fence = max(fence + 1, now_us)
     *   - is held by the same owner, unexpired      -> extended, fence kept
     * and otherwise leaves every column as it was. RETURNING gives the row as left: another owner in
     * it means busy, with that owner's expires_at_ms. VALUES(fence) is the statement's now_us.
     */
    private static final String ACQUIRE = """
            INSERT INTO leasehold_lease (lock_key, owner_token, fence, expires_at_ms, acquired_at_ms, holder)
            VALUES (?, ?, %2$s, %1$s + ?, %1$s, ?)
            ON DUPLICATE KEY UPDATE
                fence = IF(expires_at_ms <= VALUES(acquired_at_ms), GREATEST(fence + 1, VALUES(fence)), fence),
                acquired_at_ms = IF(expires_at_ms <= VALUES(acquired_at_ms), VALUES(acquired_at_ms), acquired_at_ms),
                holder = IF(expires_at_ms <= VALUES(acquired_at_ms) OR owner_token = VALUES(owner_token),
                            VALUES(holder), holder),
                owner_token = IF(expires_at_ms <= VALUES(acquired_at_ms) OR owner_token = VALUES(owner_token),
                                 VALUES(owner_token), owner_token),
                expires_at_ms = IF(expires_at_ms <= VALUES(acquired_at_ms) OR owner_token = VALUES(owner_token),
                                   VALUES(expires_at_ms), expires_at_ms)
            RETURNING owner_token, fence, expires_at_ms, %1$s AS now_ms
            """.formatted(NOW, NOW_MICROS);

    /*
     * renew: compare-and-extend as an upsert on the primary key, which takes the row's exclusive
     * lock at once. Only the unexpired owner's row gets expires_at_ms = now + lease_ms. A row that no
     * longer exists (deleted by housekeeping) is created free, with a fence seeded from the clock
     * as for any new row, and the renewal is refused.
     */
    private static final String RENEW = """
            INSERT INTO leasehold_lease (lock_key, owner_token, fence, expires_at_ms, acquired_at_ms, holder)
            VALUES (?, NULL, %2$s, %1$s, %1$s, NULL)
            ON DUPLICATE KEY UPDATE
                expires_at_ms = IF(owner_token <=> ? AND expires_at_ms > %1$s, %1$s + ?, expires_at_ms)
            RETURNING owner_token, fence, expires_at_ms, %1$s AS now_ms
            """.formatted(NOW, NOW_MICROS);

    /* release: compare-and-free by primary key. Only the unexpired owner frees the row; the row and its fence stay. */
    private static final String RELEASE = """
            UPDATE leasehold_lease SET owner_token = NULL, expires_at_ms = %1$s
             WHERE lock_key = ? AND owner_token = ? AND expires_at_ms > %1$s
            """.formatted(NOW);

    /*
     * force-release: frees an unexpired lease whoever holds it; the fence stays, and the holder
     * column says it was forced (for operators, and for release watchers in other processes).
     */
    private static final String FORCE_RELEASE = """
            UPDATE leasehold_lease SET owner_token = NULL, expires_at_ms = %1$s, holder = '%2$s'
             WHERE lock_key = ? AND expires_at_ms > %1$s
            """.formatted(NOW, PolledReleaseWatcher.FORCED);

    /* inspect: the unexpired lease, if any. */
    private static final String INSPECT = """
            SELECT owner_token, fence, expires_at_ms, %1$s AS now_ms
              FROM leasehold_lease
             WHERE lock_key = ? AND expires_at_ms > %1$s
            """.formatted(NOW);

    /* list: the unexpired leases whose keys match a LIKE pattern, in key order. */
    private static final String LIST = """
            SELECT lock_key, owner_token, fence, expires_at_ms, %1$s AS now_ms
              FROM leasehold_lease
             WHERE lock_key LIKE ? ESCAPE '!' AND expires_at_ms > %1$s
             ORDER BY lock_key LIMIT ?
            """.formatted(NOW);

    /* expired keys: a consistent (non-locking) read through the expiry index. */
    private static final String EXPIRED_KEYS = """
            SELECT lock_key FROM leasehold_lease WHERE expires_at_ms < %1$s - ? ORDER BY expires_at_ms LIMIT ?
            """.formatted(NOW);

    /*
     * delete-expired: deletes one listed row by primary-key equality (so only that row is locked;
     * a range over the expiry index would also lock the live row past its end), and only if it is
     * still expired for longer than the retention: a row re-acquired meanwhile survives. Run as a
     * JDBC batch, one entry per key.
     */
    private static final String DELETE_EXPIRED = """
            DELETE FROM leasehold_lease WHERE lock_key = ? AND expires_at_ms < %1$s - ?
            """.formatted(NOW);

    /*
     * accept-fence: raises the resource's fence to the given one if that is higher, recording its
     * owner (owner_digest is assigned first, while fence still holds the stored value); returns the
     * row as left and keeps it locked until the transaction ends.
     */
    private static final String ACCEPT_FENCE = """
            INSERT INTO leasehold_fence (resource, fence, owner_digest) VALUES (?, ?, ?)
            ON DUPLICATE KEY UPDATE
                owner_digest = IF(fence < VALUES(fence), VALUES(owner_digest), owner_digest),
                fence = GREATEST(fence, VALUES(fence))
            RETURNING fence, owner_digest
            """;

    static final SqlDialect SQL = new SqlDialect(
            Database.MARIADB,
            ACQUIRE,
            RENEW,
            RELEASE,
            FORCE_RELEASE,
            INSPECT,
            LIST,
            EXPIRED_KEYS,
            DELETE_EXPIRED,
            ACCEPT_FENCE,
            false,
            false,
            false,
            false);

    private MariaDbDialect() {}
}
