package dev.leasehold.jdbc;

/** The lease SQL for PostgreSQL (9.6 and later): data-modifying CTEs and {@code ON CONFLICT}, with RETURNING. */
final class PostgresDialect {

    /**
     * Epoch ms at the start of this statement: constant within it, and advancing from statement to
     * statement inside a transaction (unlike now(), which is the transaction's start).
     */
    static final String NOW = "(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT";

    /**
     * Epoch µs of the same instant: the floor of every fence handed out, so a fence is above any
     * fence given before even when the row came back older (a restore, a promoted replica that
     * missed the grant), as long as the database clock does not go back.
     */
    static final String NOW_MICROS = "(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000)::BIGINT";

    /** The channel release and force-release notify (payload {@code r:<fence>:<key>} or {@code f:<fence>:<key>}). */
    static final String CHANNEL = "leasehold_release";

    /*
     * acquire: ONE statement that grants lock_key to owner for lease_ms when the row
     *   - is free or expired (expires_at_ms <= now)  -> taken over, fence = max(fence + 1, now_us)  (step 1)
     *   - is held by the same owner, unexpired       -> extended, fence kept   (step 1, UPDATE)
     *   - does not exist                            -> inserted, fence = now_us (step 2, INSERT)
     * and otherwise returns the holder's row with granted = false (busy, with its expiry).
     *
     * 1. The UPDATE locks the row only if its WHERE holds; a busy key is read, not locked, so the
     *    busy path writes nothing (ON CONFLICT DO UPDATE would lock the row even when refusing).
     *    Two callers racing for an expired row: the second re-checks the WHERE on the new version
     *    and finds it held.
     * 2. Only if step 1 took nothing, INSERT ... ON CONFLICT DO NOTHING: of concurrent first
     *    acquires one inserts, the others find its row and get nothing.
     * 3. Neither: the row as the statement's snapshot saw it, marked not granted.
     */
    private static final String ACQUIRE = """
            WITH p AS (SELECT CAST(? AS VARCHAR(255)) AS k, CAST(? AS VARCHAR(128)) AS o,
                              CAST(? AS BIGINT) AS ms, CAST(? AS VARCHAR(255)) AS h, %1$s AS now_ms,
                              %2$s AS now_us),
            taken AS (
              UPDATE leasehold_lease l
                 SET fence = CASE WHEN l.owner_token = p.o AND l.expires_at_ms > p.now_ms THEN l.fence
                                  ELSE GREATEST(l.fence + 1, p.now_us) END,
                     acquired_at_ms = CASE WHEN l.owner_token = p.o AND l.expires_at_ms > p.now_ms
                                           THEN l.acquired_at_ms ELSE p.now_ms END,
                     owner_token = p.o, expires_at_ms = p.now_ms + p.ms, holder = p.h
                FROM p
               WHERE l.lock_key = p.k AND (l.expires_at_ms <= p.now_ms OR l.owner_token = p.o)
              RETURNING l.owner_token, l.fence, l.expires_at_ms, p.now_ms),
            created AS (
              INSERT INTO leasehold_lease (lock_key, owner_token, fence, expires_at_ms, acquired_at_ms, holder)
              SELECT p.k, p.o, p.now_us, p.now_ms + p.ms, p.now_ms, p.h FROM p
               WHERE NOT EXISTS (SELECT 1 FROM taken)
              ON CONFLICT (lock_key) DO NOTHING
              RETURNING owner_token, fence, expires_at_ms, (SELECT now_ms FROM p))
            SELECT t.*, TRUE FROM taken t
            UNION ALL SELECT c.*, TRUE FROM created c
            UNION ALL SELECT l.owner_token, l.fence, l.expires_at_ms, p.now_ms, FALSE FROM leasehold_lease l, p
             WHERE l.lock_key = p.k AND NOT EXISTS (SELECT 1 FROM taken) AND NOT EXISTS (SELECT 1 FROM created)
            """.formatted(NOW, NOW_MICROS);

    /* renew: compare-and-extend. Only the unexpired owner's row gets expires_at_ms = now + lease_ms. */
    private static final String RENEW = """
            UPDATE leasehold_lease l
               SET expires_at_ms = c.now_ms + p.ms
              FROM (SELECT CAST(? AS VARCHAR(255)) AS k, CAST(? AS VARCHAR(128)) AS o, CAST(? AS BIGINT) AS ms) p,
                   (SELECT %1$s AS now_ms) c
             WHERE l.lock_key = p.k AND l.owner_token = p.o AND l.expires_at_ms > c.now_ms
            RETURNING l.owner_token, l.fence, l.expires_at_ms, c.now_ms
            """.formatted(NOW);

    /*
     * release: compare-and-free, and in the same statement (so the same transaction) a notification
     * naming the ended grant. Only the unexpired owner frees the row; the row and its fence stay.
     * A notification is delivered when the statement commits, never for a release that rolled back.
     */
    private static final String RELEASE = """
            WITH c AS (SELECT %1$s AS now_ms),
            freed AS (
              UPDATE leasehold_lease l SET owner_token = NULL, expires_at_ms = c.now_ms
                FROM c
               WHERE l.lock_key = CAST(? AS VARCHAR(255)) AND l.owner_token = CAST(? AS VARCHAR(128))
                 AND l.expires_at_ms > c.now_ms
              RETURNING l.lock_key, l.fence)
            SELECT f.fence, pg_notify('%2$s', 'r:' || f.fence || ':' || f.lock_key) FROM freed f
            """.formatted(NOW, CHANNEL);

    /* force-release: frees an unexpired lease whoever holds it, and notifies; the fence stays. */
    private static final String FORCE_RELEASE = """
            WITH c AS (SELECT %1$s AS now_ms),
            freed AS (
              UPDATE leasehold_lease l SET owner_token = NULL, expires_at_ms = c.now_ms
                FROM c
               WHERE l.lock_key = CAST(? AS VARCHAR(255)) AND l.expires_at_ms > c.now_ms
              RETURNING l.lock_key, l.fence)
            SELECT f.fence, pg_notify('%2$s', 'f:' || f.fence || ':' || f.lock_key) FROM freed f
            """.formatted(NOW, CHANNEL);

    /* inspect: the unexpired lease, if any. */
    private static final String INSPECT = """
            SELECT owner_token, fence, expires_at_ms, c.now_ms
              FROM leasehold_lease, (SELECT %1$s AS now_ms) c
             WHERE lock_key = ? AND expires_at_ms > c.now_ms
            """.formatted(NOW);

    /* list: the unexpired leases whose keys match a LIKE pattern, in key order. */
    private static final String LIST = """
            SELECT lock_key, owner_token, fence, expires_at_ms, %1$s AS now_ms
              FROM leasehold_lease
             WHERE lock_key LIKE ? ESCAPE '!' AND expires_at_ms > %1$s
             ORDER BY lock_key LIMIT ?
            """.formatted(NOW);

    /*
     * delete-expired: removes at most `limit` rows expired (or released) longer than retention_ms
     * ago, found through the expiry index. SKIP LOCKED passes over rows being acquired; the outer
     * condition is checked again on the row version the DELETE locks, so a row re-acquired meanwhile
     * survives. A deleted key's next row is seeded with now_us, above any fence it had.
     */
    private static final String DELETE_EXPIRED = """
            DELETE FROM leasehold_lease
             WHERE expires_at_ms < %1$s - CAST(? AS BIGINT)
               AND lock_key IN (SELECT lock_key FROM leasehold_lease
                                 WHERE expires_at_ms < %1$s - CAST(? AS BIGINT)
                                 LIMIT ? FOR UPDATE SKIP LOCKED)
            """.formatted(NOW);

    /*
     * accept-fence: raises the resource's fence to the given one if that is higher, recording its
     * owner; returns the row as left. Locks the row until the transaction ends.
     */
    private static final String ACCEPT_FENCE = """
            INSERT INTO leasehold_fence AS f (resource, fence, owner_digest) VALUES (?, ?, ?)
            ON CONFLICT (resource) DO UPDATE SET
                owner_digest = CASE WHEN f.fence < EXCLUDED.fence THEN EXCLUDED.owner_digest ELSE f.owner_digest END,
                fence = GREATEST(f.fence, EXCLUDED.fence)
            RETURNING fence, owner_digest
            """;

    static final SqlDialect SQL = new SqlDialect(
            Database.POSTGRESQL,
            ACQUIRE,
            RENEW,
            RELEASE,
            FORCE_RELEASE,
            INSPECT,
            LIST,
            null,
            DELETE_EXPIRED,
            ACCEPT_FENCE,
            true,
            true,
            true,
            false);

    private PostgresDialect() {}
}
