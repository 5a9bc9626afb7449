package dev.leasehold.jdbc;

/**
 * The lease SQL for MariaDB (10.5 and later): {@code INSERT ... ON DUPLICATE KEY UPDATE ...
 * RETURNING}. MySQL has no RETURNING and is not covered by this dialect.
 *
 * <p>MariaDB applies the assignments of ON DUPLICATE KEY UPDATE left to right, each seeing the
 * columns already assigned. The acquire statement is ordered so that its grant condition (expired,
 * or same owner) reads the same before and after each assignment: fence and acquired_at_ms first,
 * owner_token next, expires_at_ms last.
 */
final class MariaDbDialect {

    /** Epoch ms by the server's UTC clock, fixed for the statement; no session time zone involved. */
    static final String NOW = "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)";

    /*
     * acquire: grants lock_key to owner for lease_ms when the row
     *   - does not exist                           -> inserted, fence = now_ms * 1000
     *   - is free or expired (expires_at_ms <= now) -> taken over, fence + 1
     *   - is held by the same owner, unexpired      -> extended, fence kept
     * and otherwise leaves every column as it was. RETURNING gives the row as left: another owner in
     * it means busy, with that owner's expires_at_ms.
     */
    private static final String ACQUIRE = """
            INSERT INTO leasehold_lease (lock_key, owner_token, fence, expires_at_ms, acquired_at_ms, holder)
            VALUES (?, ?, %1$s * 1000, %1$s + ?, %1$s, ?)
            ON DUPLICATE KEY UPDATE
                fence = IF(expires_at_ms <= VALUES(acquired_at_ms), fence + 1, fence),
                acquired_at_ms = IF(expires_at_ms <= VALUES(acquired_at_ms), VALUES(acquired_at_ms), acquired_at_ms),
                holder = IF(expires_at_ms <= VALUES(acquired_at_ms) OR owner_token = VALUES(owner_token),
                            VALUES(holder), holder),
                owner_token = IF(expires_at_ms <= VALUES(acquired_at_ms) OR owner_token = VALUES(owner_token),
                                 VALUES(owner_token), owner_token),
                expires_at_ms = IF(expires_at_ms <= VALUES(acquired_at_ms) OR owner_token = VALUES(owner_token),
                                   VALUES(expires_at_ms), expires_at_ms)
            RETURNING owner_token, fence, expires_at_ms, %1$s AS now_ms
            """.formatted(NOW);

    /*
     * renew: compare-and-extend, as an upsert that cannot insert: the SELECT yields the row only if
     * the owner holds it unexpired, and the update checks the same condition again under the row lock.
     */
    private static final String RENEW = """
            INSERT INTO leasehold_lease (lock_key, owner_token, fence, expires_at_ms, acquired_at_ms, holder)
            SELECT l.lock_key, l.owner_token, l.fence, l.expires_at_ms, p.ms, l.holder
              FROM leasehold_lease l, (SELECT ? AS k, ? AS o, CAST(? AS SIGNED) AS ms) p
             WHERE l.lock_key = p.k AND l.owner_token = p.o AND l.expires_at_ms > %1$s
            ON DUPLICATE KEY UPDATE
                leasehold_lease.expires_at_ms = IF(
                    leasehold_lease.owner_token = VALUES(owner_token) AND leasehold_lease.expires_at_ms > %1$s,
                    %1$s + VALUES(acquired_at_ms), leasehold_lease.expires_at_ms)
            RETURNING owner_token, fence, expires_at_ms, %1$s AS now_ms
            """.formatted(NOW);

    /* release: compare-and-free. Only the unexpired owner frees the row; the row and its fence stay. */
    private static final String RELEASE = """
            UPDATE leasehold_lease SET owner_token = NULL, expires_at_ms = 0
             WHERE lock_key = ? AND owner_token = ? AND expires_at_ms > %1$s
            """.formatted(NOW);

    /* force-release: frees an unexpired lease whoever holds it; the fence stays. */
    private static final String FORCE_RELEASE = """
            UPDATE leasehold_lease SET owner_token = NULL, expires_at_ms = 0
             WHERE lock_key = ? AND expires_at_ms > %1$s
            """.formatted(NOW);

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

    /* delete-expired: removes at most `limit` rows expired for longer than retention_ms. */
    private static final String DELETE_EXPIRED = """
            DELETE FROM leasehold_lease WHERE expires_at_ms < %1$s - ? AND expires_at_ms < %1$s - ? LIMIT ?
            """.formatted(NOW);

    /* accept-fence: raises the resource's fence to max(stored, given) and returns it; locks the row. */
    private static final String ACCEPT_FENCE = """
            INSERT INTO leasehold_fence (resource, fence) VALUES (?, ?)
            ON DUPLICATE KEY UPDATE fence = GREATEST(fence, VALUES(fence))
            RETURNING fence
            """;

    static final SqlDialect SQL = new SqlDialect(
            Database.MARIADB,
            ACQUIRE,
            RENEW,
            RELEASE,
            FORCE_RELEASE,
            INSPECT,
            LIST,
            DELETE_EXPIRED,
            ACCEPT_FENCE,
            false);

    private MariaDbDialect() {}
}
