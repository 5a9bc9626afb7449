package dev.leasehold.jdbc;

import dev.leasehold.jdbc.SqlDialect.Op;

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
    /**
     * The waiter queue's gate, over the acquire's parameters {@code p}: no live waiter of the key
     * arrived before the caller's own live place (none at all when the caller has no place).
     */
    static final String QUEUE_GATE = """
            NOT EXISTS (SELECT 1 FROM leasehold_waiter w
                         WHERE w.lock_key = p.k AND w.owner_token <> p.o AND w.expires_at_ms > %1$s
                           AND w.arrived_us < COALESCE((SELECT m.arrived_us FROM leasehold_waiter m
                                                         WHERE m.lock_key = p.k AND m.owner_token = p.o
                                                           AND m.expires_at_ms > %1$s),
                                                       9223372036854775807))""".formatted(NOW);

    /**
     * A free or expired row that the caller may take: its own expired lease, or through the queue's
     * gate, evaluated once, in the source row ({@code p.g}): each assignment must see the same answer.
     */
    private static final String TAKE = "(l.expires_at_ms <= %1$s AND (l.owner_token = p.o OR p.g))".formatted(NOW);

    private static final String ACQUIRE = """
            SELECT owner_token, fence, expires_at_ms, %1$s AS now_ms FROM FINAL TABLE (
              MERGE INTO leasehold_lease l
              USING (SELECT p.k, p.o, p.ms, p.h, %4$s AS g
                       FROM (VALUES (CAST(:key AS VARCHAR(255)), CAST(:owner AS VARCHAR(128)), CAST(:lease_ms AS BIGINT),
                                     CAST(:holder AS VARCHAR(255)))) AS p(k, o, ms, h)) AS p
                 ON l.lock_key = p.k
              WHEN MATCHED THEN UPDATE SET
                   fence = CASE WHEN %3$s THEN GREATEST(l.fence + 1, %2$s) ELSE l.fence END,
                   acquired_at_ms = CASE WHEN %3$s THEN %1$s ELSE l.acquired_at_ms END,
                   holder = CASE WHEN %3$s OR l.owner_token = p.o THEN p.h ELSE l.holder END,
                   owner_token = CASE WHEN %3$s OR l.owner_token = p.o THEN p.o ELSE l.owner_token END,
                   expires_at_ms = CASE WHEN %3$s OR l.owner_token = p.o THEN %1$s + p.ms ELSE l.expires_at_ms END
              WHEN NOT MATCHED THEN INSERT (lock_key, owner_token, fence, expires_at_ms, acquired_at_ms, holder)
                   VALUES (p.k, p.o, %2$s, %1$s + p.ms, %1$s, p.h))
            """.formatted(NOW, NOW_MICROS, TAKE, QUEUE_GATE);

    /* renew: compare-and-extend. Only the unexpired owner's row gets expires_at_ms = now + lease_ms. */
    private static final String RENEW = """
            SELECT owner_token, fence, expires_at_ms, %1$s AS now_ms FROM FINAL TABLE (
              MERGE INTO leasehold_lease l
              USING (VALUES (CAST(:key AS VARCHAR(255)), CAST(:owner AS VARCHAR(128)), CAST(:lease_ms AS BIGINT))) AS p(k, o, ms)
                 ON l.lock_key = p.k
              WHEN MATCHED AND l.owner_token = p.o AND l.expires_at_ms > %1$s THEN UPDATE SET
                   expires_at_ms = %1$s + p.ms)
            """.formatted(NOW);

    /*
     * release: compare-and-free, handing the key to the first live waiter of its queue (s.ho, never
     * the releaser) in the same statement: the releaser's unexpired row gets that waiter as owner,
     * fence max(fence + 1, now_us) and expires_at_ms = the end of its place; with no live waiter the
     * row is freed (owner NULL, expires_at_ms = now) and keeps its fence. The waiter's place is
     * deleted when it takes the key (FORGET); a releaser that may still have a place of its own is
     * forgotten first, in the same call (the store's release).
     */
    private static final String RELEASE = """
            MERGE INTO leasehold_lease l
            USING (SELECT p.k, p.o, h.owner_token AS ho, h.expires_at_ms AS he, h.holder AS hh
                     FROM (VALUES (CAST(:key AS VARCHAR(255)), CAST(:owner AS VARCHAR(128)))) AS p(k, o)
                     LEFT JOIN (SELECT w.owner_token, w.expires_at_ms, w.holder FROM leasehold_waiter w
                                 WHERE w.lock_key = CAST(:key AS VARCHAR(255)) AND w.owner_token <> CAST(:owner AS VARCHAR(128))
                                   AND w.expires_at_ms > %1$s
                                 ORDER BY w.arrived_us, w.owner_token FETCH FIRST 1 ROW ONLY) h ON TRUE) s
               ON l.lock_key = s.k AND l.owner_token = s.o AND l.expires_at_ms > %1$s
            WHEN MATCHED THEN UPDATE SET
                 fence = CASE WHEN s.ho IS NULL THEN l.fence ELSE GREATEST(l.fence + 1, %2$s) END,
                 acquired_at_ms = CASE WHEN s.ho IS NULL THEN l.acquired_at_ms ELSE %1$s END,
                 holder = CASE WHEN s.ho IS NULL THEN l.holder ELSE s.hh END,
                 owner_token = s.ho,
                 expires_at_ms = COALESCE(s.he, %1$s)
            """.formatted(NOW, NOW_MICROS);

    /*
     * join: takes or keeps the caller's place in the key's queue: a new place (or one that had
     * ended) arrives now, at the back; a live one keeps its arrival; it lives queue_ms from now.
     */
    private static final String JOIN = """
            MERGE INTO leasehold_waiter w
            USING (VALUES (CAST(:key AS VARCHAR(255)), CAST(:owner AS VARCHAR(128)), CAST(:queue_ms AS BIGINT),
                           CAST(:holder AS VARCHAR(255)), CAST(:wake AS VARCHAR(32)))) AS p(k, o, ttl, h, wake)
               ON w.lock_key = p.k AND w.owner_token = p.o
            WHEN MATCHED THEN UPDATE SET
                 arrived_us = CASE WHEN w.expires_at_ms > %1$s THEN w.arrived_us ELSE %2$s END,
                 expires_at_ms = %1$s + p.ttl, holder = p.h, wake = p.wake
            WHEN NOT MATCHED THEN INSERT (lock_key, owner_token, arrived_us, expires_at_ms, holder, wake)
                 VALUES (p.k, p.o, %2$s, %1$s + p.ttl, p.h, p.wake)
            """.formatted(NOW, NOW_MICROS);

    /* position: live waiters ahead of the caller's place, not counting the key's holder. */
    private static final String POSITION = """
            SELECT COUNT(*) FROM leasehold_waiter w
             WHERE w.lock_key = :key AND w.owner_token <> :owner AND w.expires_at_ms > %1$s
               AND w.arrived_us < (SELECT m.arrived_us FROM leasehold_waiter m WHERE m.lock_key = :key AND m.owner_token = :owner)
               AND NOT EXISTS (SELECT 1 FROM leasehold_lease l WHERE l.lock_key = w.lock_key
                                  AND l.owner_token = w.owner_token)
            """.formatted(NOW);

    /* cleanup: deletes the key's places that ended (expired, or their grant was released). */
    private static final String CLEANUP = """
            DELETE FROM leasehold_waiter WHERE lock_key = :key AND expires_at_ms <= %1$s
            """.formatted(NOW);

    /* ended places: deletes at most `limit` places that ended (their waiter stopped asking). */
    private static final String DELETE_ENDED_PLACES = """
            DELETE FROM leasehold_waiter WHERE expires_at_ms <= %1$s FETCH FIRST :limit ROWS ONLY
            """.formatted(NOW);

    /* forget: deletes the place of a caller that was just granted the key. */
    private static final String FORGET = """
            DELETE FROM leasehold_waiter WHERE lock_key = :key AND owner_token = :owner
            """;

    /*
     * force-release: frees an unexpired lease whoever holds it; the fence stays, and the holder
     * column says it was forced (for operators, and for release watchers in other processes).
     */
    private static final String FORCE_RELEASE = """
            UPDATE leasehold_lease SET owner_token = NULL, expires_at_ms = %1$s, holder = '%2$s'
             WHERE lock_key = :key AND expires_at_ms > %1$s
            """.formatted(NOW, PolledReleaseWatcher.FORCED);

    /* inspect: the unexpired lease, if any. */
    private static final String INSPECT = """
            SELECT owner_token, fence, expires_at_ms, %1$s AS now_ms
              FROM leasehold_lease
             WHERE lock_key = :key AND expires_at_ms > %1$s
            """.formatted(NOW);

    /* list: the unexpired leases whose keys match a LIKE pattern, in key order. */
    private static final String LIST = """
            SELECT lock_key, owner_token, fence, expires_at_ms, %1$s AS now_ms
              FROM leasehold_lease
             WHERE lock_key LIKE :pattern ESCAPE '!' AND expires_at_ms > %1$s
             ORDER BY lock_key LIMIT :limit
            """.formatted(NOW);

    /* delete-expired: removes at most `limit` rows expired (or released) longer than retention_ms ago. */
    private static final String DELETE_EXPIRED = """
            DELETE FROM leasehold_lease WHERE expires_at_ms < %1$s - CAST(:retention_ms AS BIGINT)
               AND expires_at_ms < %1$s - CAST(:retention_ms AS BIGINT) FETCH FIRST :limit ROWS ONLY
            """.formatted(NOW);

    /* accept-fence: raises the resource's fence if the given one is higher, recording its owner; locks the row. */
    private static final String ACCEPT_FENCE = """
            SELECT fence, owner_digest FROM FINAL TABLE (
              MERGE INTO leasehold_fence f
              USING (VALUES (CAST(:resource AS VARCHAR(255)), CAST(:fence AS BIGINT), CAST(:owner_digest AS VARCHAR(64)))) AS p(resource, fence, d)
                 ON f.resource = p.resource
              WHEN MATCHED THEN UPDATE SET
                   owner_digest = CASE WHEN f.fence < p.fence THEN p.d ELSE f.owner_digest END,
                   fence = GREATEST(f.fence, p.fence)
              WHEN NOT MATCHED THEN INSERT (resource, fence, owner_digest) VALUES (p.resource, p.fence, p.d))
            """;

    static final SqlDialect SQL = SqlDialect.builder(Database.H2)
            .statement(Op.ACQUIRE, ACQUIRE)
            .statement(Op.RENEW, RENEW)
            .statement(Op.RELEASE, RELEASE)
            .statement(Op.FORCE_RELEASE, FORCE_RELEASE)
            .statement(Op.INSPECT, INSPECT)
            .statement(Op.LIST, LIST)
            .statement(Op.DELETE_EXPIRED, DELETE_EXPIRED)
            .statement(Op.ACCEPT_FENCE, ACCEPT_FENCE)
            .statement(Op.JOIN, JOIN)
            .statement(Op.POSITION, POSITION)
            .statement(Op.CLEANUP, CLEANUP)
            .statement(Op.FORGET, FORGET)
            .releaseLeavesOwnPlace()
            .statement(Op.DELETE_ENDED_PLACES, DELETE_ENDED_PLACES)
            .retriesDuplicateKey()
            .build();

    private H2Dialect() {}
}
