package dev.leasehold.jdbc;

/**
 * The SQL of every lease operation for one database. Each lease operation is ONE atomic statement.
 * Statements whose parameters differ between dialects say which they bind in a bind string, one
 * letter per parameter ({@code K} lock_key, {@code O} owner, {@code M} lease_ms, {@code H} holder,
 * {@code T} queue TTL ms, {@code W} the waiting store's wake id); the others bind the same
 * parameters in the same order:
 *
 * <ul>
 *   <li>{@code acquire} ({@link #acquireBinds}, starting K O M H) returns (owner_token, fence,
 *       expires_at_ms, now_ms[, granted]) for the row: the grant, or the holder's row when busy;
 *       no row means busy with the holder unknown (it was created a moment ago). A free or
 *       expired row is granted only through the waiter queue's gate: the caller is the first live
 *       waiter of the key, or none is queued;
 *   <li>{@code renew}: (lock_key, owner, lease_ms) returns (owner_token, fence, expires_at_ms,
 *       now_ms); renewed only if owner_token is the caller's;
 *   <li>{@code release} ({@link #releaseBinds}), {@code forceRelease}: (lock_key): rows of the
 *       ended grant (fence) when {@link #releaseReturnsRows()}, otherwise update counts (0: not
 *       released). A release hands the key to the first live waiter of its queue in the same
 *       statement (owner = the waiter, fence max(fence + 1, now_us), expires_at_ms = the end of
 *       the waiter's place); with none, the released row keeps its fence, loses its owner and gets
 *       {@code expires_at_ms = now_ms}, so retention counts from the release. A force-release
 *       frees the row and hands nothing over;
 *   <li>{@code join}: (K O T H W) takes or keeps the caller's place in the key's queue;
 *       {@code position} (K O K O, null where waiters are woken by notifications) returns how many
 *       live waiters are ahead; {@code cleanup} (K, or null) deletes the key's ended places;
 *       {@code forget} (K O, or null where the acquire does it) deletes the place of a caller just
 *       granted the key;
 *   <li>{@code leave}: (K O, or null where {@code forget} and {@code release} are run in turn)
 *       drops the caller's place and releases a key handed to it, to the next waiter;
 *   <li>{@code deleteEndedPlaces}: (limit), or with {@code endedPlaces} (limit) returning
 *       (lock_key, owner_token) without locking, (K O) for one of them, run as a batch: deletes
 *       places that ended;
 *   <li>{@code inspect}: (lock_key) returns (owner_token, fence, expires_at_ms, now_ms), no row if free;
 *   <li>{@code list}: (like_pattern, limit) returns (lock_key, owner_token, fence, expires_at_ms, now_ms)
 *       of unexpired leases, {@code !} escaping the pattern;
 *   <li>{@code deleteExpired}: (retention_ms, retention_ms, limit): update count; or, when
 *       {@code expiredKeys} is set, {@code expiredKeys} (retention_ms, limit) returns lock_key
 *       without locking, and {@code deleteExpired} (lock_key, retention_ms) deletes one of them,
 *       run as a batch;
 *   <li>{@code acceptFence}: (resource, fence, owner_digest) returns (fence, owner_digest) of the
 *       resource's row after raising it to the given fence if that was higher; locks the row.
 * </ul>
 *
 * Times are epoch milliseconds by the database clock ({@code now_ms}, fixed for the statement);
 * the JVM sends durations only.
 *
 * @param database the database this dialect speaks to
 * @param acquireReportsGranted whether acquire's fifth column says if the row is a grant (otherwise
 *     a row is a grant when its owner is the caller)
 * @param releaseReturnsRows whether release and force-release are queries (they notify listeners)
 * @param autoCommitSwitchIsLocal whether the driver switches autocommit on and off without a round
 *     trip when no transaction is open (PgJDBC, embedded H2), so an autocommit-off connection is
 *     switched on for the statement rather than committed after it
 * @param retriesDuplicateKey whether {@code acquire} may fail with a duplicate key when two callers
 *     create the same row at once (H2's MERGE); the statement is then simply run again and finds the row
 */
record SqlDialect(
        Database database,
        String acquire,
        String renew,
        String release,
        String forceRelease,
        String inspect,
        String list,
        String expiredKeys,
        String deleteExpired,
        String acceptFence,
        String acquireBinds,
        String releaseBinds,
        String join,
        String position,
        String cleanup,
        String forget,
        String leave,
        String endedPlaces,
        String deleteEndedPlaces,
        boolean acquireReportsGranted,
        boolean releaseReturnsRows,
        boolean autoCommitSwitchIsLocal,
        boolean retriesDuplicateKey) {}
