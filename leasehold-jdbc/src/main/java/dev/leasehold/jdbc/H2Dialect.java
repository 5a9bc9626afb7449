package dev.leasehold.jdbc;

/** The lease SQL for H2 (2.x): {@code MERGE ... USING} read back through {@code FINAL TABLE}. */
final class H2Dialect {

    /**
     * Epoch ms by the database clock at the start of the executing statement. H2's
     * CURRENT_TIMESTAMP stays at the start of the transaction, so a statement late in a long
     * transaction would read an old time; the session's statement start advances with every
     * statement. EXTRACT(EPOCH ...) counts from the instant, so SET TIME ZONE changes nothing.
     */
    static final String NOW = "CAST(EXTRACT(EPOCH FROM (SELECT s.EXECUTING_STATEMENT_START FROM"
            + " INFORMATION_SCHEMA.SESSIONS s WHERE s.SESSION_ID = SESSION_ID())) * 1000 AS BIGINT)";

    /**
     * Epoch µs of the same instant: the floor of every fence handed out, so a fence is above any
     * fence given before even when the row came back older (a restore of a backup), as long as the
     * clock does not go back.
     */
    static final String NOW_MICROS = "CAST(EXTRACT(EPOCH FROM (SELECT s.EXECUTING_STATEMENT_START FROM"
            + " INFORMATION_SCHEMA.SESSIONS s WHERE s.SESSION_ID = SESSION_ID())) * 1000000 AS BIGINT)";

    /*
     * acquire: grants lock_key to owner for lease_ms when the row
     *   - does not exist                           -> inserted, fence = now_us
     *   - is free or expired (expires_at_ms <= now) -> taken over, fence = max(fence + 1, now_us)
     *   - is held by the same owner, unexpired      -> extended, fence kept
     * and otherwise leaves every column as it was, so FINAL TABLE returns the holder's row (busy,
     * with its expiry). Two callers creating the same row at once: one fails on the primary key and
     * runs the statement again.
     */
    private static final String ACQUIRE = """
            SELECT owner_token, fence, expires_at_ms, %1$s AS now_ms FROM FINAL TABLE (
              MERGE INTO leasehold_lease l
              USING (VALUES (CAST(? AS VARCHAR(255)), CAST(? AS VARCHAR(128)), CAST(? AS BIGINT),
                             CAST(? AS VARCHAR(255)))) AS p(k, o, ms, h)
                 ON l.lock_key = p.k
              WHEN MATCHED THEN UPDATE SET
                   fence = CASE WHEN l.expires_at_ms <= %1$s THEN GREATEST(l.fence + 1, %2$s) ELSE l.fence END,
                   acquired_at_ms = CASE WHEN l.expires_at_ms <= %1$s THEN %1$s ELSE l.acquired_at_ms END,
                   holder = CASE WHEN l.expires_at_ms <= %1$s OR l.owner_token = p.o THEN p.h ELSE l.holder END,
                   owner_token = CASE WHEN l.expires_at_ms <= %1$s OR l.owner_token = p.o
                                      THEN p.o ELSE l.owner_token END,
                   expires_at_ms = CASE WHEN l.expires_at_ms <= %1$s OR l.owner_token = p.o
                                        THEN %1$s + p.ms ELSE l.expires_at_ms END
              WHEN NOT MATCHED THEN INSERT (lock_key, owner_token, fence, expires_at_ms, acquired_at_ms, holder)
                   VALUES (p.k, p.o, %2$s, %1$s + p.ms, %1$s, p.h))
            """.formatted(NOW, NOW_MICROS);

    /* renew: compare-and-extend. Only the unexpired owner's row gets expires_at_ms = now + lease_ms. */
    private static final String RENEW = """
            SELECT owner_token, fence, expires_at_ms, %1$s AS now_ms FROM FINAL TABLE (
              MERGE INTO leasehold_lease l
              USING (VALUES (CAST(? AS VARCHAR(255)), CAST(? AS VARCHAR(128)), CAST(? AS BIGINT))) AS p(k, o, ms)
                 ON l.lock_key = p.k
              WHEN MATCHED AND l.owner_token = p.o AND l.expires_at_ms > %1$s THEN UPDATE SET
                   expires_at_ms = %1$s + p.ms)
            """.formatted(NOW);

    /* release: compare-and-free. Only the unexpired owner frees the row; the row and its fence stay. */
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

    /* delete-expired: removes at most `limit` rows expired (or released) longer than retention_ms ago. */
    private static final String DELETE_EXPIRED = """
            DELETE FROM leasehold_lease WHERE expires_at_ms < %1$s - CAST(? AS BIGINT)
               AND expires_at_ms < %1$s - CAST(? AS BIGINT) FETCH FIRST ? ROWS ONLY
            """.formatted(NOW);

    /* accept-fence: raises the resource's fence if the given one is higher, recording its owner; locks the row. */
    private static final String ACCEPT_FENCE = """
            SELECT fence, owner_digest FROM FINAL TABLE (
              MERGE INTO leasehold_fence f
              USING (VALUES (CAST(? AS VARCHAR(255)), CAST(? AS BIGINT), CAST(? AS VARCHAR(64)))) AS p(resource, fence, d)
                 ON f.resource = p.resource
              WHEN MATCHED THEN UPDATE SET
                   owner_digest = CASE WHEN f.fence < p.fence THEN p.d ELSE f.owner_digest END,
                   fence = GREATEST(f.fence, p.fence)
              WHEN NOT MATCHED THEN INSERT (resource, fence, owner_digest) VALUES (p.resource, p.fence, p.d))
            """;

    static final SqlDialect SQL = new SqlDialect(
            Database.H2,
            ACQUIRE,
            RENEW,
            RELEASE,
            FORCE_RELEASE,
            INSPECT,
            LIST,
            null,
            DELETE_EXPIRED,
            ACCEPT_FENCE,
            false,
            false,
            true,
            true);

    private H2Dialect() {}
}
