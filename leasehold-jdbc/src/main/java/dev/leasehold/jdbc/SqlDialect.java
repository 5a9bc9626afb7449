package dev.leasehold.jdbc;

/**
 * The SQL of every lease operation for one database. Each statement is ONE atomic statement, and
 * every dialect binds the same parameters in the same order and returns the same columns:
 *
 * <ul>
 *   <li>{@code acquire}: (lock_key, owner, lease_ms, holder) returns (owner_token, fence,
 *       expires_at_ms, now_ms) for the row as the statement left it; no row, or a row with another
 *       owner, means busy;
 *   <li>{@code renew}: (lock_key, owner, lease_ms) returns the same columns, no row if not held;
 *   <li>{@code release}: (lock_key, owner), {@code forceRelease}: (lock_key): update counts;
 *   <li>{@code inspect}: (lock_key) returns the same columns, no row if free;
 *   <li>{@code list}: (like_pattern, limit) returns (lock_key, owner_token, fence, expires_at_ms, now_ms)
 *       of unexpired leases, {@code !} escaping the pattern;
 *   <li>{@code deleteExpired}: (retention_ms, retention_ms, limit): update count;
 *   <li>{@code acceptFence}: (resource, fence) returns the highest fence accepted so far.
 * </ul>
 *
 * Times are epoch milliseconds by the database clock ({@code now_ms}); the JVM sends durations only.
 *
 * @param database the database this dialect speaks to
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
        String deleteExpired,
        String acceptFence,
        boolean retriesDuplicateKey) {}
