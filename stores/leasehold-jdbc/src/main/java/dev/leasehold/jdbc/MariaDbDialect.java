package dev.leasehold.jdbc;

import dev.leasehold.jdbc.SqlDialect.Op;

/**
 * The lease SQL for MariaDB (10.5 and later): {@code INSERT ... ON DUPLICATE KEY UPDATE ...
 * RETURNING}. Every lease statement locks the key's lease row first, by primary key, exclusively;
 * the order of the upserts' assignments matters (each sees the columns already assigned). Why: the
 * MariaDB part of {@code docs/design/sql.md}.
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

    /**
     * The waiter queue's gate, with parameters (lock_key, owner, lock_key, owner): no live waiter of
     * the key arrived before the caller's own live place (none at all when the caller has no place).
     */
    static final String QUEUE_GATE = """
            NOT EXISTS (SELECT 1 FROM leasehold_waiter w
                         WHERE w.lock_key = :key AND w.owner_token <> :owner AND w.expires_at_ms > %1$s
                           AND w.arrived_us < COALESCE((SELECT m.arrived_us FROM leasehold_waiter m
                                                         WHERE m.lock_key = :key AND m.owner_token = :owner
                                                           AND m.expires_at_ms > %1$s),
                                                       9223372036854775807))""".formatted(NOW);

    /*
     * acquire: grants lock_key to owner for lease_ms when the row
     *   - does not exist                           -> inserted, fence = now_us
     *   - is free or expired (expires_at_ms <= now) and the queue's gate lets the caller through
     *     (QUEUE_GATE: it is the first live waiter, or none is queued; or the expired lease was
     *     its own)
     *                                               -> taken over, fence = max(fence + 1, now_us)
     *   - is held by the same owner, unexpired      -> extended, fence kept (also a lease that a
     *     release handed to this waiter)
     * and otherwise leaves every column as it was. RETURNING gives the row as left: another owner in
     * it means busy, with that owner's expires_at_ms. VALUES(fence) is the statement's now_us.
     * The take-over decision is made once, in the first assignment, into the session variable
     * @leasehold_take (a subquery cannot read VALUES(), so the gate's parameters are bound).
     */
    private static final String ACQUIRE_TEMPLATE = """
            INSERT INTO leasehold_lease (lock_key, owner_token, fence, expires_at_ms, acquired_at_ms, holder)
            VALUES (:key, :owner, %2$s, %1$s + :lease_ms, %1$s, :holder)
            ON DUPLICATE KEY UPDATE
                fence = IF(@leasehold_take := (expires_at_ms <= VALUES(acquired_at_ms)
                                              AND (owner_token <=> VALUES(owner_token) OR %3$s)),
                           GREATEST(fence + 1, VALUES(fence)), fence),
                acquired_at_ms = IF(@leasehold_take, VALUES(acquired_at_ms), acquired_at_ms),
                holder = IF(@leasehold_take OR owner_token = VALUES(owner_token), VALUES(holder), holder),
                owner_token = IF(@leasehold_take OR owner_token = VALUES(owner_token), VALUES(owner_token), owner_token),
                expires_at_ms = IF(@leasehold_take OR owner_token = VALUES(owner_token),
                                   VALUES(expires_at_ms), expires_at_ms)
            RETURNING owner_token, fence, expires_at_ms, %1$s AS now_ms
            """;

    private static final String ACQUIRE = ACQUIRE_TEMPLATE.formatted(NOW, NOW_MICROS, QUEUE_GATE);

    /** The queue's gate for a caller that holds no place: no live waiter of the key at all. */
    static final String GATE_WITHOUT_PLACE = """
            NOT EXISTS (SELECT 1 FROM leasehold_waiter w
                         WHERE w.lock_key = :key AND w.owner_token <> :owner AND w.expires_at_ms > %1$s)""".formatted(NOW);

    /* acquire of an owner this store knows holds no place in the key's queue: ACQUIRE with the simpler gate. */
    private static final String ACQUIRE_UNQUEUED = ACQUIRE_TEMPLATE.formatted(NOW, NOW_MICROS, GATE_WITHOUT_PLACE);

    /*
     * renew: compare-and-extend as an upsert on the primary key, which takes the row's exclusive
     * lock at once. Only the unexpired owner's row gets expires_at_ms = now + lease_ms. A row that no
     * longer exists (deleted by housekeeping) is created free, with a fence seeded from the clock
     * as for any new row, and the renewal is refused.
     */
    private static final String RENEW = """
            INSERT INTO leasehold_lease (lock_key, owner_token, fence, expires_at_ms, acquired_at_ms, holder)
            VALUES (:key, NULL, %2$s, %1$s, %1$s, NULL)
            ON DUPLICATE KEY UPDATE
                expires_at_ms = IF(owner_token <=> :owner AND expires_at_ms > %1$s, %1$s + :lease_ms, expires_at_ms)
            RETURNING owner_token, fence, expires_at_ms, %1$s AS now_ms
            """.formatted(NOW, NOW_MICROS);

    /*
     * release: compare-and-free by primary key, handing the key to the first live waiter of its
     * queue in the same statement. One multi-table UPDATE:
     *   - h  the head live waiter (arrival order), never the releaser; a derived table, materialized
     *     (ORDER BY ... LIMIT), read before any row changes;
     *   - l  the releaser's unexpired row: h becomes its owner with fence max(fence + 1, now_us) and
     *     expires_at_ms = the end of h's place (a waiter that stopped asking holds the key no longer
     *     than its queue TTL allowed); with no h it is freed (owner NULL, expires_at_ms = now) and
     *     keeps its fence;
     *   - m  the releaser's own place, if it still has one, ends (expires_at_ms = 0); a caller's
     *     place is otherwise deleted when it takes the key (FORGET).
     * Update count 0: not released.
     */
    private static final String RELEASE = """
            UPDATE leasehold_lease l
              LEFT JOIN (SELECT w.owner_token, w.expires_at_ms, w.holder FROM leasehold_waiter w
                          WHERE w.lock_key = :key AND w.owner_token <> :owner AND w.expires_at_ms > %1$s
                          ORDER BY w.arrived_us, w.owner_token LIMIT 1) h ON 1 = 1
              LEFT JOIN leasehold_waiter m ON m.lock_key = l.lock_key AND m.owner_token = l.owner_token
               SET l.fence = IF(h.owner_token IS NULL, l.fence, GREATEST(l.fence + 1, %2$s)),
                   l.acquired_at_ms = IF(h.owner_token IS NULL, l.acquired_at_ms, %1$s),
                   l.holder = IF(h.owner_token IS NULL, l.holder, h.holder),
                   l.owner_token = h.owner_token,
                   l.expires_at_ms = COALESCE(h.expires_at_ms, %1$s),
                   m.expires_at_ms = 0
             WHERE l.lock_key = :key AND l.owner_token = :owner AND l.expires_at_ms > %1$s
            """.formatted(NOW, NOW_MICROS);

    /*
     * release of an owner that holds no place in the key's queue (the store took none for it, or
     * ended the one it took): as RELEASE, without the releaser's place m, and with the head h found
     * by an anti-join (no live waiter e ahead of it) instead of a derived table. Only the lease row
     * is updated, so MariaDB builds no temporary table (RELEASE builds two: one for m's updates,
     * on disk for these keys, and the materialized h). Update count 0: not released.
     */
    private static final String RELEASE_UNQUEUED = """
            UPDATE leasehold_lease l
              LEFT JOIN leasehold_waiter h
                     ON h.lock_key = l.lock_key AND h.owner_token <> l.owner_token AND h.expires_at_ms > %1$s
              LEFT JOIN leasehold_waiter e
                     ON e.lock_key = h.lock_key AND e.owner_token <> l.owner_token AND e.expires_at_ms > %1$s
                        AND (e.arrived_us < h.arrived_us OR (e.arrived_us = h.arrived_us AND e.owner_token < h.owner_token))
               SET l.fence = IF(h.owner_token IS NULL, l.fence, GREATEST(l.fence + 1, %2$s)),
                   l.acquired_at_ms = IF(h.owner_token IS NULL, l.acquired_at_ms, %1$s),
                   l.holder = IF(h.owner_token IS NULL, l.holder, h.holder),
                   l.owner_token = h.owner_token,
                   l.expires_at_ms = COALESCE(h.expires_at_ms, %1$s)
             WHERE l.lock_key = :key AND l.owner_token = :owner AND l.expires_at_ms > %1$s AND e.lock_key IS NULL
            """.formatted(NOW, NOW_MICROS);

    /*
     * join: takes or keeps the caller's place in the key's queue: a new place (or one that had
     * ended) arrives now, at the back; a live one keeps its arrival. Either way it lives queue_ms
     * from now. arrived_us is assigned first, reading the old expires_at_ms.
     */
    private static final String JOIN = """
            INSERT INTO leasehold_waiter (lock_key, owner_token, arrived_us, expires_at_ms, holder, wake)
            VALUES (:key, :owner, %2$s, %1$s + :queue_ms, :holder, :wake)
            ON DUPLICATE KEY UPDATE
                arrived_us = IF(expires_at_ms > VALUES(arrived_us) DIV 1000, arrived_us, VALUES(arrived_us)),
                expires_at_ms = VALUES(expires_at_ms), holder = VALUES(holder), wake = VALUES(wake)
            """.formatted(NOW, NOW_MICROS);

    /*
     * position: how many live waiters are ahead of the caller's place, not counting the key's
     * holder (a waiter handed the key keeps its place until it releases).
     */
    static final String POSITION = """
            SELECT COUNT(*) FROM leasehold_waiter w
             WHERE w.lock_key = :key AND w.owner_token <> :owner AND w.expires_at_ms > %1$s
               AND w.arrived_us < (SELECT m.arrived_us FROM leasehold_waiter m WHERE m.lock_key = :key AND m.owner_token = :owner)
               AND NOT EXISTS (SELECT 1 FROM leasehold_lease l WHERE l.lock_key = w.lock_key
                                  AND l.owner_token = w.owner_token)
            """.formatted(NOW);

    /* forget: deletes the place of a caller that was just granted the key. */
    static final String FORGET = """
            DELETE FROM leasehold_waiter WHERE lock_key = :key AND owner_token = :owner
            """;

    /* ended places: a consistent (non-locking) read of places that ended; deleted one by one by ENDED_PLACE. */
    static final String ENDED_PLACES = """
            SELECT lock_key, owner_token FROM leasehold_waiter WHERE expires_at_ms <= %1$s LIMIT :limit
            """.formatted(NOW);

    /* ended place: deletes one listed place by primary key, only if it is still ended. */
    static final String DELETE_ENDED_PLACE = """
            DELETE FROM leasehold_waiter WHERE lock_key = :key AND owner_token = :owner AND expires_at_ms <= %1$s
            """.formatted(NOW);

    /* cleanup: deletes the key's places that ended (expired, or their grant was released). */
    static final String CLEANUP = """
            DELETE FROM leasehold_waiter WHERE lock_key = :key AND expires_at_ms <= %1$s
            """.formatted(NOW);

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

    /* expired keys: a consistent (non-locking) read through the expiry index. */
    private static final String EXPIRED_KEYS = """
            SELECT lock_key FROM leasehold_lease WHERE expires_at_ms < %1$s - :retention_ms ORDER BY expires_at_ms LIMIT :limit
            """.formatted(NOW);

    /*
     * delete-expired: deletes one listed row by primary-key equality (so only that row is locked;
     * a range over the expiry index would also lock the live row past its end), and only if it is
     * still expired for longer than the retention: a row re-acquired meanwhile survives. Run as a
     * JDBC batch, one entry per key.
     */
    private static final String DELETE_EXPIRED = """
            DELETE FROM leasehold_lease WHERE lock_key = :key AND expires_at_ms < %1$s - :retention_ms
            """.formatted(NOW);

    /*
     * accept-fence: raises the resource's fence to the given one if that is higher, recording its
     * owner (owner_digest is assigned first, while fence still holds the stored value); returns the
     * row as left and keeps it locked until the transaction ends.
     */
    private static final String ACCEPT_FENCE = """
            INSERT INTO leasehold_fence (resource, fence, owner_digest) VALUES (:resource, :fence, :owner_digest)
            ON DUPLICATE KEY UPDATE
                owner_digest = IF(fence < VALUES(fence), VALUES(owner_digest), owner_digest),
                fence = GREATEST(fence, VALUES(fence))
            RETURNING fence, owner_digest
            """;

    static final SqlDialect SQL = SqlDialect.builder(Database.MARIADB)
            .statement(Op.ACQUIRE, ACQUIRE)
            .statement(Op.ACQUIRE_UNQUEUED, ACQUIRE_UNQUEUED)
            .statement(Op.RENEW, RENEW)
            .statement(Op.RELEASE, RELEASE)
            .statement(Op.RELEASE_UNQUEUED, RELEASE_UNQUEUED)
            .statement(Op.FORCE_RELEASE, FORCE_RELEASE)
            .statement(Op.INSPECT, INSPECT)
            .statement(Op.LIST, LIST)
            .statement(Op.EXPIRED_KEYS, EXPIRED_KEYS)
            .statement(Op.DELETE_EXPIRED, DELETE_EXPIRED)
            .statement(Op.ACCEPT_FENCE, ACCEPT_FENCE)
            .statement(Op.JOIN, JOIN)
            .statement(Op.POSITION, POSITION)
            .statement(Op.CLEANUP, CLEANUP)
            .statement(Op.FORGET, FORGET)
            .statement(Op.ENDED_PLACES, ENDED_PLACES)
            .statement(Op.DELETE_ENDED_PLACES, DELETE_ENDED_PLACE)
            .build();

    private MariaDbDialect() {}
}
