package dev.leasehold.jdbc;

import dev.leasehold.jdbc.SqlDialect.Op;

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

    /**
     * The arrival of a store's watch of a key (WATCH): after every place, so a watch never stands in
     * the queue's gate ({@code arrived_us < } the caller's arrival never holds for it) and is never
     * handed the key.
     */
    static final String WATCHING = "9223372036854775807";

    /**
     * Waits for a statement that holds the key's lease row (a release running while a watch was
     * committed) to end: the shared lock conflicts with its row lock and is dropped at once.
     * Positional parameter: the key.
     */
    static final String AWAIT_RELEASES = "SELECT 1 FROM leasehold_lease WHERE lock_key = ? FOR SHARE";

    /**
     * The owner token of a store's watches, after its wake id: a control character opens it, which
     * no owner token has ({@link dev.leasehold.spi.OwnerTokens}), so a watch is never a caller's place.
     */
    static final String WATCH_OWNER_PREFIX = "\u0001watch:";

    /**
     * A store's watch of keys it has release subscribers for, refreshed while they last: a row in
     * leasehold_waiter that makes a release of the key notify. Positional parameters: the keys (a
     * varchar array), the watch's owner token, its store's wake id, how long it lives (ms).
     */
    static final String WATCH = """
            INSERT INTO leasehold_waiter AS w (lock_key, owner_token, arrived_us, expires_at_ms, holder, wake)
            SELECT k, CAST(? AS VARCHAR(128)), %2$s, %1$s + CAST(? AS BIGINT), NULL, CAST(? AS VARCHAR(32))
              FROM unnest(CAST(? AS VARCHAR(255)[])) AS k
            ON CONFLICT (lock_key, owner_token) DO UPDATE SET expires_at_ms = EXCLUDED.expires_at_ms
            """.formatted(NOW, WATCHING);

    /**
     * The waiter queue's gate, over the acquire's parameters {@code p}: no live waiter of the key
     * arrived before the caller's own live place (none at all when the caller has no place).
     */
    static final String QUEUE_GATE = """
            NOT EXISTS (SELECT 1 FROM leasehold_waiter w
                         WHERE w.lock_key = (SELECT k FROM p) AND w.owner_token <> p.o AND w.expires_at_ms > p.now_ms
                           AND w.arrived_us < COALESCE((SELECT m.arrived_us FROM leasehold_waiter m
                                                         WHERE m.lock_key = (SELECT k FROM p) AND m.owner_token = p.o
                                                           AND m.expires_at_ms > p.now_ms),
                                                       9223372036854775807))""";

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
     *
     * A free or expired row is taken only through the queue's gate (QUEUE_GATE): no live waiter is
     * queued for the key ahead of the caller (the caller is the first live waiter, or none is
     * queued). One index probe of leasehold_waiter when nobody waits. A grant deletes the
     * caller's place (gone).
     */
    private static final String ACQUIRE_TEMPLATE = """
            WITH p AS (SELECT CAST(:key AS VARCHAR(255)) AS k, CAST(:owner AS VARCHAR(128)) AS o,
                              CAST(:lease_ms AS BIGINT) AS ms, CAST(:holder AS VARCHAR(255)) AS h, %1$s AS now_ms,
                              %2$s AS now_us),
            taken AS (
              UPDATE leasehold_lease l
                 SET fence = CASE WHEN l.owner_token = p.o AND l.expires_at_ms > p.now_ms THEN l.fence
                                  ELSE GREATEST(l.fence + 1, p.now_us) END,
                     acquired_at_ms = CASE WHEN l.owner_token = p.o AND l.expires_at_ms > p.now_ms
                                           THEN l.acquired_at_ms ELSE p.now_ms END,
                     owner_token = p.o, expires_at_ms = p.now_ms + p.ms, holder = p.h
                FROM p
               WHERE l.lock_key = (SELECT k FROM p) AND ((l.expires_at_ms <= p.now_ms AND %3$s) OR l.owner_token = p.o)
              RETURNING l.owner_token, l.fence, l.expires_at_ms, p.now_ms),
            created AS (
              INSERT INTO leasehold_lease (lock_key, owner_token, fence, expires_at_ms, acquired_at_ms, holder)
              SELECT p.k, p.o, p.now_us, p.now_ms + p.ms, p.now_ms, p.h FROM p
               WHERE NOT EXISTS (SELECT 1 FROM taken) AND %3$s
              ON CONFLICT (lock_key) DO NOTHING
              RETURNING owner_token, fence, expires_at_ms, (SELECT now_ms FROM p))%4$s
            SELECT t.*, TRUE FROM taken t
            UNION ALL SELECT c.*, TRUE FROM created c
            UNION ALL SELECT l.owner_token, l.fence, l.expires_at_ms, p.now_ms, FALSE FROM leasehold_lease l, p
             WHERE l.lock_key = (SELECT k FROM p) AND NOT EXISTS (SELECT 1 FROM taken) AND NOT EXISTS (SELECT 1 FROM created)
            """;

    /** The acquire's last part for a caller that may hold a place: a grant deletes it. */
    private static final String ENDS_OWN_PLACE = """
            ,
            gone AS (
              DELETE FROM leasehold_waiter w USING p
               WHERE w.lock_key = (SELECT k FROM p) AND w.owner_token = p.o
                 AND (EXISTS (SELECT 1 FROM taken) OR EXISTS (SELECT 1 FROM created)))""";

    private static final String ACQUIRE = ACQUIRE_TEMPLATE.formatted(NOW, NOW_MICROS, QUEUE_GATE, ENDS_OWN_PLACE);

    /**
     * The queue's gate for a caller that holds no place: no live waiter of the key at all (a
     * store's watch is none).
     */
    static final String GATE_WITHOUT_PLACE = """
            NOT EXISTS (SELECT 1 FROM leasehold_waiter w
                         WHERE w.lock_key = (SELECT k FROM p) AND w.owner_token <> p.o AND w.expires_at_ms > p.now_ms
                           AND w.arrived_us < %s)""".formatted(WATCHING);

    /*
     * acquire of an owner this store knows holds no place in the key's queue: ACQUIRE with the
     * simpler gate and without deleting a place (it has none). About 45 µs less server time per
     * lock + unlock than ACQUIRE (docs/design/sql.md).
     */
    private static final String ACQUIRE_UNQUEUED = ACQUIRE_TEMPLATE.formatted(NOW, NOW_MICROS, GATE_WITHOUT_PLACE, "");

    /* renew: compare-and-extend. Only the unexpired owner's row gets expires_at_ms = now + lease_ms. */
    private static final String RENEW = """
            UPDATE leasehold_lease l
               SET expires_at_ms = c.now_ms + p.ms
              FROM (SELECT CAST(:key AS VARCHAR(255)) AS k, CAST(:owner AS VARCHAR(128)) AS o, CAST(:lease_ms AS BIGINT) AS ms) p,
                   (SELECT %1$s AS now_ms) c
             WHERE l.lock_key = p.k AND l.owner_token = p.o AND l.expires_at_ms > c.now_ms
            RETURNING l.owner_token, l.fence, l.expires_at_ms, c.now_ms
            """.formatted(NOW);

    /*
     * release: compare-and-free, handing the key to the first live waiter of its queue in the same
     * statement (so the same transaction), and a notification:
     *   - h  the head live waiter (arrival order), never the releaser itself;
     *   - freed: the releaser's unexpired row gets h as owner, fence max(fence + 1, now_us) and
     *     expires_at_ms = the end of h's place (a waiter that stopped asking holds the key no longer
     *     than its queue TTL allowed); with no h, the row is freed (owner NULL, expires_at_ms = now)
     *     and keeps its fence;
     *   - gone: the releaser's own place and the key's expired places are deleted;
     *   - the notification names the ended grant: 'r:<fence>:<key>' when freed, or, handed over,
     *     'h:<ended fence>:<h's store>:<key>', which only h's store passes to its waiters;
     *   - told: it is sent only when the key has a live row of another owner in leasehold_waiter,
     *     a place or a store's watch (WATCH), so a release that nobody waits for notifies nobody:
     *     pg_notify serialises the commits of notifying transactions and wakes every listening
     *     backend. A watch never gets the key (h passes over arrived_us = WATCHING).
     * A notification is delivered when the statement commits, never for a release that rolled back.
     */
    private static final String RELEASE = """
            WITH p AS (SELECT CAST(:key AS VARCHAR(255)) AS k, CAST(:owner AS VARCHAR(128)) AS o, %1$s AS now_ms,
                              %2$s AS now_us),
            h AS (SELECT w.owner_token, w.expires_at_ms, w.holder, w.wake FROM leasehold_waiter w, p
                   WHERE w.lock_key = (SELECT k FROM p) AND w.owner_token <> p.o AND w.expires_at_ms > p.now_ms
                     AND w.arrived_us < %4$s
                   ORDER BY w.arrived_us, w.owner_token LIMIT 1),
            told AS (SELECT 1 FROM leasehold_waiter w, p
                      WHERE w.lock_key = (SELECT k FROM p) AND w.owner_token <> p.o AND w.expires_at_ms > p.now_ms
                      LIMIT 1),
            ended AS (SELECT l.fence FROM leasehold_lease l, p WHERE l.lock_key = (SELECT k FROM p)),
            freed AS (
              UPDATE leasehold_lease l
                 SET owner_token = h.owner_token,
                     fence = CASE WHEN h.owner_token IS NULL THEN l.fence ELSE GREATEST(l.fence + 1, p.now_us) END,
                     expires_at_ms = COALESCE(h.expires_at_ms, p.now_ms),
                     acquired_at_ms = CASE WHEN h.owner_token IS NULL THEN l.acquired_at_ms ELSE p.now_ms END,
                     holder = CASE WHEN h.owner_token IS NULL THEN l.holder ELSE h.holder END
                FROM p LEFT JOIN h ON TRUE
               WHERE l.lock_key = (SELECT k FROM p) AND l.owner_token = p.o AND l.expires_at_ms > p.now_ms
              RETURNING l.lock_key, l.fence, l.owner_token),
            gone AS (
              DELETE FROM leasehold_waiter w USING p, freed f
               WHERE w.lock_key = (SELECT k FROM p) AND (w.owner_token = p.o OR w.expires_at_ms <= p.now_ms))
            SELECT f.fence, CASE WHEN EXISTS (SELECT 1 FROM told)
                                 THEN pg_notify('%3$s', CASE WHEN f.owner_token IS NULL
                                                        THEN 'r:' || f.fence || ':' || f.lock_key
                                                        ELSE 'h:' || (SELECT fence FROM ended) || ':' || h.wake || ':' || f.lock_key
                                                        END)
                            END
              FROM freed f LEFT JOIN h ON TRUE
            """.formatted(NOW, NOW_MICROS, CHANNEL, WATCHING);

    /*
     * release of an owner this store knows holds no place in the key's queue: RELEASE as one
     * UPDATE of the lease row, with the head live waiter h found by a lateral probe of the queue's
     * order index and the notification sent from RETURNING. It deletes no place: the releaser has
     * none, and places that ended are deleted by the next release of a queued owner, a leave, or
     * housekeeping. The ended fence of a hand-off is read by a sub-select, which sees the row as
     * the statement's snapshot did, before this update. A WITH statement of five parts did the same
     * at about 85 µs more server time per lock + unlock (docs/design/sql.md).
     */
    private static final String RELEASE_UNQUEUED = """
            UPDATE leasehold_lease l
               SET owner_token = h.owner_token,
                   fence = CASE WHEN h.owner_token IS NULL THEN l.fence ELSE GREATEST(l.fence + 1, c.now_us) END,
                   expires_at_ms = COALESCE(h.expires_at_ms, c.now_ms),
                   acquired_at_ms = CASE WHEN h.owner_token IS NULL THEN l.acquired_at_ms ELSE c.now_ms END,
                   holder = CASE WHEN h.owner_token IS NULL THEN l.holder ELSE h.holder END
              FROM (SELECT CAST(:key AS VARCHAR(255)) AS k, CAST(:owner AS VARCHAR(128)) AS o,
                           %1$s AS now_ms, %2$s AS now_us) c
                   LEFT JOIN LATERAL (SELECT w.owner_token, w.expires_at_ms, w.holder, w.wake FROM leasehold_waiter w
                                       WHERE w.lock_key = c.k AND w.owner_token <> c.o AND w.expires_at_ms > c.now_ms
                                         AND w.arrived_us < %4$s
                                       ORDER BY w.arrived_us, w.owner_token LIMIT 1) h ON TRUE
             WHERE l.lock_key = c.k AND l.owner_token = c.o AND l.expires_at_ms > c.now_ms
            RETURNING l.fence,
                      CASE WHEN EXISTS (SELECT 1 FROM leasehold_waiter t
                                         WHERE t.lock_key = c.k AND t.owner_token <> c.o AND t.expires_at_ms > c.now_ms)
                           THEN pg_notify('%3$s', CASE WHEN h.owner_token IS NULL
                                                  THEN 'r:' || l.fence || ':' || l.lock_key
                                                  ELSE 'h:' || (SELECT e.fence FROM leasehold_lease e WHERE e.lock_key = c.k)
                                                       || ':' || h.wake || ':' || l.lock_key
                                                  END)
                      END
            """.formatted(NOW, NOW_MICROS, CHANNEL, WATCHING);

    /*
     * leave: a waiter that gave up drops its place and, if a release handed it the key meanwhile,
     * hands it on in the same statement: the release statement run as that waiter, whose own place
     * is deleted whether or not it held the key.
     */
    private static final String LEAVE = RELEASE.replace(
                    "WHERE w.lock_key = (SELECT k FROM p) AND (w.owner_token = p.o OR w.expires_at_ms <= p.now_ms))",
                    "WHERE w.lock_key = (SELECT k FROM p) AND (w.owner_token = p.o OR (w.expires_at_ms <= p.now_ms AND f.lock_key IS NOT NULL)))")
            .replace(
                    "DELETE FROM leasehold_waiter w USING p, freed f",
                    "DELETE FROM leasehold_waiter w USING p LEFT JOIN freed f ON TRUE");

    /*
     * ended places: deletes at most `limit` places that ended (their waiter stopped asking), skipping
     * rows locked by a join or a hand-off; each is checked again on the version the DELETE locks.
     */
    private static final String DELETE_ENDED_PLACES = """
            DELETE FROM leasehold_waiter
             WHERE expires_at_ms <= %1$s
               AND ctid IN (SELECT ctid FROM leasehold_waiter WHERE expires_at_ms <= %1$s
                             LIMIT :limit FOR UPDATE SKIP LOCKED)
            """.formatted(NOW);

    /*
     * join: takes or keeps the caller's place in the key's queue: a new place (or one that had
     * expired) arrives now, at the back; a live one keeps its arrival. Either way it lives queue_ms
     * from now.
     */
    private static final String JOIN = """
            INSERT INTO leasehold_waiter AS w (lock_key, owner_token, arrived_us, expires_at_ms, holder, wake)
            VALUES (:key, :owner, %2$s, %1$s + CAST(:queue_ms AS BIGINT), :holder, :wake)
            ON CONFLICT (lock_key, owner_token) DO UPDATE SET
                arrived_us = CASE WHEN w.expires_at_ms > %1$s THEN w.arrived_us ELSE EXCLUDED.arrived_us END,
                expires_at_ms = EXCLUDED.expires_at_ms, holder = EXCLUDED.holder, wake = EXCLUDED.wake
            """.formatted(NOW, NOW_MICROS);

    /* force-release: frees an unexpired lease whoever holds it, and notifies; the fence stays. */
    private static final String FORCE_RELEASE = """
            WITH c AS (SELECT %1$s AS now_ms),
            freed AS (
              UPDATE leasehold_lease l SET owner_token = NULL, expires_at_ms = c.now_ms
                FROM c
               WHERE l.lock_key = CAST(:key AS VARCHAR(255)) AND l.expires_at_ms > c.now_ms
              RETURNING l.lock_key, l.fence)
            SELECT f.fence, pg_notify('%2$s', 'f:' || f.fence || ':' || f.lock_key) FROM freed f
            """.formatted(NOW, CHANNEL);

    /* inspect: the unexpired lease, if any. */
    private static final String INSPECT = """
            SELECT owner_token, fence, expires_at_ms, c.now_ms
              FROM leasehold_lease, (SELECT %1$s AS now_ms) c
             WHERE lock_key = :key AND expires_at_ms > c.now_ms
            """.formatted(NOW);

    /* list: the unexpired leases whose keys match a LIKE pattern, in key order. */
    private static final String LIST = """
            SELECT lock_key, owner_token, fence, expires_at_ms, %1$s AS now_ms
              FROM leasehold_lease
             WHERE lock_key LIKE :pattern ESCAPE '!' AND expires_at_ms > %1$s
             ORDER BY lock_key LIMIT :limit
            """.formatted(NOW);

    /*
     * delete-expired: removes at most `limit` rows expired (or released) longer than retention_ms
     * ago, found by a scan of the table that stops once it has `limit` of them (no index covers
     * expires_at_ms since 1.4, so acquires and releases update rows in place; a scan of 1 000 000
     * rows that finds none is measured in docs/design/sql.md). SKIP LOCKED passes over rows being acquired; the outer
     * condition is checked again on the row version the DELETE locks, so a row re-acquired meanwhile
     * survives. A deleted key's next row is seeded with now_us, above any fence it had.
     */
    private static final String DELETE_EXPIRED = """
            DELETE FROM leasehold_lease
             WHERE expires_at_ms < %1$s - CAST(:retention_ms AS BIGINT)
               AND lock_key IN (SELECT lock_key FROM leasehold_lease
                                 WHERE expires_at_ms < %1$s - CAST(:retention_ms AS BIGINT)
                                 LIMIT :limit FOR UPDATE SKIP LOCKED)
            """.formatted(NOW);

    /*
     * accept-fence: raises the resource's fence to the given one if that is higher, recording its
     * owner; returns the row as left. Locks the row until the transaction ends.
     */
    private static final String ACCEPT_FENCE = """
            INSERT INTO leasehold_fence AS f (resource, fence, owner_digest) VALUES (:resource, :fence, :owner_digest)
            ON CONFLICT (resource) DO UPDATE SET
                owner_digest = CASE WHEN f.fence < EXCLUDED.fence THEN EXCLUDED.owner_digest ELSE f.owner_digest END,
                fence = GREATEST(f.fence, EXCLUDED.fence)
            RETURNING fence, owner_digest
            """;

    static final SqlDialect SQL = SqlDialect.builder(Database.POSTGRESQL)
            .statement(Op.ACQUIRE, ACQUIRE)
            .statement(Op.ACQUIRE_UNQUEUED, ACQUIRE_UNQUEUED)
            .statement(Op.RENEW, RENEW)
            .statement(Op.RELEASE, RELEASE)
            .statement(Op.RELEASE_UNQUEUED, RELEASE_UNQUEUED)
            .statement(Op.FORCE_RELEASE, FORCE_RELEASE)
            .statement(Op.INSPECT, INSPECT)
            .statement(Op.LIST, LIST)
            .statement(Op.DELETE_EXPIRED, DELETE_EXPIRED)
            .statement(Op.ACCEPT_FENCE, ACCEPT_FENCE)
            .statement(Op.JOIN, JOIN)
            .statement(Op.LEAVE, LEAVE)
            .statement(Op.DELETE_ENDED_PLACES, DELETE_ENDED_PLACES)
            .acquireReportsGranted()
            .releaseReturnsRows()
            .build();

    private PostgresDialect() {}
}
