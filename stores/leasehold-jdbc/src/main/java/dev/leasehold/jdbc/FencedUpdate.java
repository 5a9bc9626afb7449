package dev.leasehold.jdbc;

import dev.leasehold.Lease;
import dev.leasehold.LockKey;
import dev.leasehold.jdbc.SqlDialect.Op;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Guards writes with fences: a write under a lease is applied only if no newer fence was accepted
 * for the lease's key, so a holder that was paused past its lease cannot overwrite what the next
 * holder wrote. Fences are compared only with fences of the same key, and an equal fence is
 * accepted again only from the owner it was first accepted from (the row keeps a SHA-256 digest of
 * the owner token, never the token). The check runs in the transaction of the write and keeps the
 * key's fence row locked until that transaction ends. An in-doubt commit is a {@link
 * FencedCommitOutcomeUnknownException}: the write may stand, and a retry would apply it twice unless
 * it is idempotent. Thread-safe. How: {@code docs/design/sql.md}.
 */
public final class FencedUpdate {

    private final DataSource dataSource;
    private final SqlDialect dialect;

    private FencedUpdate(DataSource dataSource, Database database) {
        this.dataSource = dataSource;
        this.dialect = database.dialect();
    }

    /** Fenced updates on {@code dataSource}, whose database is detected. */
    public static FencedUpdate on(DataSource dataSource) {
        Objects.requireNonNull(dataSource, "dataSource is missing (null)");
        return new FencedUpdate(dataSource, Database.detect(dataSource));
    }

    /** Fenced updates on {@code dataSource} of a known database. */
    public static FencedUpdate on(DataSource dataSource, Database database) {
        return new FencedUpdate(
                Objects.requireNonNull(dataSource, "dataSource is missing (null)"),
                Objects.requireNonNull(database, "database is missing (null)"));
    }

    /**
     * In the caller's transaction on {@code connection}: records the lease's fence for its key if
     * no newer fence was accepted, and no equal one from another owner.
     *
     * @return whether the caller may write
     * @throws IllegalStateException if the connection is in autocommit mode: the check and the write
     *     must commit together
     */
    public boolean tryAccept(Connection connection, Lease lease) throws SQLException {
        Objects.requireNonNull(lease, "lease is missing (null)");
        return tryAccept(connection, lease.key(), lease.ownerToken(), lease.fence());
    }

    /**
     * As {@link #tryAccept(Connection, Lease)}, for a fence held outside a {@link Lease} (for
     * example a claim whose store hands out the key, the owner token and the fence).
     */
    public boolean tryAccept(Connection connection, LockKey key, String ownerToken, long fence) throws SQLException {
        Objects.requireNonNull(key, "key is missing (null)");
        return accept(connection, key.render(), digest(ownerToken), fence).allows(fence, digest(ownerToken));
    }

    /**
     * Records {@code fence} for a free-form resource, without an owner: an equal fence is then
     * accepted again only from callers that give no owner either.
     *
     * @deprecated name the lease ({@link #tryAccept(Connection, Lease)}), so that the fence is
     *     compared only with fences of its own key and an equal fence only from its own owner
     */
    @Deprecated(since = "0.1.0")
    public boolean tryAccept(Connection connection, String resource, long fence) throws SQLException {
        return accept(connection, resource, null, fence).allows(fence, null);
    }

    /**
     * Runs {@code write} in a new transaction if the lease's fence is accepted for its key, and
     * commits; rolls back on any failure before the commit.
     *
     * @throws StaleFenceException if a newer fence, or the same fence from another owner, was
     *     accepted for the key (nothing is written)
     * @throws FencedCommitOutcomeUnknownException if the COMMIT failed in a way that leaves its
     *     outcome unknown (the connection was lost after COMMIT was sent): the write may have been
     *     committed, so a retry must not blindly apply a change that is not idempotent again (an
     *     equal fence from the same owner is accepted again)
     * @throws SQLException if the database fails before the commit, or refuses the commit with a
     *     rollback (nothing is written), with the database's own cause; a failed commit says so
     */
    public <T> T run(Lease lease, SqlWork<T> write) throws SQLException {
        Objects.requireNonNull(lease, "lease is missing (null)");
        return run(lease.key(), lease.ownerToken(), lease.fence(), write);
    }

    /** As {@link #run(Lease, SqlWork)}, for a fence held outside a {@link Lease}. */
    public <T> T run(LockKey key, String ownerToken, long fence, SqlWork<T> write) throws SQLException {
        Objects.requireNonNull(key, "key is missing (null)");
        return runChecked(key.render(), digest(ownerToken), fence, write);
    }

    /**
     * As {@link #run(Lease, SqlWork)}, where {@code resource} must be the lease's key.
     *
     * @throws IllegalArgumentException if {@code resource} is not the lease's rendered key: a fence
     *     means something only for the key it was granted on
     * @deprecated use {@link #run(Lease, SqlWork)}
     */
    @Deprecated(since = "0.1.0")
    public <T> T run(String resource, Lease lease, SqlWork<T> write) throws SQLException {
        Objects.requireNonNull(lease, "lease is missing (null)");
        if (!lease.key().render().equals(resource)) {
            throw new IllegalArgumentException(
                    "the fence of a lease on " + lease.key().render() + " guards that key only, not '" + resource
                            + "': fences of different keys are not comparable");
        }
        return run(lease, write);
    }

    /**
     * Runs {@code write} under {@code fence} for a free-form resource, without an owner.
     *
     * @deprecated use {@link #run(Lease, SqlWork)} or {@link #run(LockKey, String, long, SqlWork)}
     */
    @Deprecated(since = "0.1.0")
    public <T> T run(String resource, long fence, SqlWork<T> write) throws SQLException {
        return runChecked(resource, null, fence, write);
    }

    private <T> T runChecked(String resource, String digest, long fence, SqlWork<T> write) throws SQLException {
        Objects.requireNonNull(write, "write is missing (null)");
        checkArguments(resource, fence);
        try (Connection connection = dataSource.getConnection()) {
            boolean autoCommit = connection.getAutoCommit();
            if (autoCommit) {
                connection.setAutoCommit(false);
            }
            T result;
            try {
                Accepted newest = accept(connection, resource, digest, fence);
                if (!newest.allows(fence, digest)) {
                    throw new StaleFenceException(resource, fence, newest.fence());
                }
                result = write.run(connection);
                commit(connection, resource);
            } catch (SQLException | RuntimeException | Error e) {
                rollbackQuietly(connection, e);
                if (autoCommit) {
                    restoreQuietly(connection, e);
                }
                throw e;
            }
            if (autoCommit) {
                restoreQuietly(connection, null);
            }
            return result;
        }
    }

    private static void commit(Connection connection, String resource) throws SQLException {
        try {
            connection.commit();
        } catch (SQLException e) {
            if (rolledBack(e)) {
                throw new SQLException(
                        "the fenced write to " + resource + " failed to commit and was rolled back: " + e.getMessage(),
                        e.getSQLState(),
                        e);
            }
            throw new FencedCommitOutcomeUnknownException(resource, e);
        }
    }

    /**
     * Whether a failed COMMIT is known to have rolled the transaction back: the server answered
     * with a transaction rollback (SQLState class 40, except 40003 "statement completion unknown")
     * or an integrity violation found at commit (class 23). Anything else (a lost connection, class
     * 08, no state at all) may have come after the server committed.
     */
    static boolean rolledBack(SQLException e) {
        String state = e.getSQLState();
        if (state == null || state.length() < 2) {
            return false;
        }
        return (state.startsWith("40") && !state.equals("40003")) || state.startsWith("23");
    }

    private static void rollbackQuietly(Connection connection, Throwable failure) {
        try {
            if (!connection.isClosed()) {
                connection.rollback();
            }
        } catch (SQLException e) {
            failure.addSuppressed(e); // never in place of the cause: a broken connection fails here too
        }
    }

    private static void restoreQuietly(Connection connection, Throwable failure) {
        try {
            if (!connection.isClosed()) {
                connection.setAutoCommit(true);
            }
        } catch (SQLException e) {
            if (failure != null) {
                failure.addSuppressed(e);
            }
            // after a successful commit the write stands; the pool resets or discards the connection
        }
    }

    private record Accepted(long fence, String digest) {
        boolean allows(long mine, String myDigest) {
            return fence == mine && Objects.equals(digest, myDigest);
        }
    }

    private Accepted accept(Connection connection, String resource, String digest, long fence) throws SQLException {
        Objects.requireNonNull(connection, "connection is missing (null)");
        checkArguments(resource, fence);
        if (connection.getAutoCommit()) {
            throw new IllegalStateException(
                    "a fenced write must run in a transaction (autocommit off), so the fence check and the write"
                            + " commit together");
        }
        Map<String, Object> values = new HashMap<>();
        values.put("resource", resource);
        values.put("fence", fence);
        values.put("owner_digest", digest); // null for a resource without an owner
        try (PreparedStatement statement = dialect.get(Op.ACCEPT_FENCE).prepare(connection, values)) {
            try (ResultSet row = statement.executeQuery()) {
                if (!row.next()) {
                    throw new SQLException("the fence statement returned no row for " + resource);
                }
                return new Accepted(row.getLong(1), row.getString(2));
            }
        }
    }

    /** SHA-256 of the owner token, hex: what the fence row keeps instead of the secret token. */
    static String digest(String ownerToken) {
        if (ownerToken == null || ownerToken.isBlank()) {
            throw new IllegalArgumentException("owner token is missing or blank");
        }
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256").digest(ownerToken.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(hash);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }

    private static void checkArguments(String resource, long fence) {
        if (resource == null || resource.isBlank() || resource.length() > 255) {
            throw new IllegalArgumentException("resource must be 1 to 255 characters, was " + resource);
        }
        if (fence <= 0) {
            throw new IllegalArgumentException("fence must be > 0, was " + fence);
        }
    }

    /**
     * A write run under a fence, on the connection of the transaction.
     *
     * @param <T> its result
     */
    @FunctionalInterface
    public interface SqlWork<T> {
        /** Runs the write. */
        T run(Connection connection) throws SQLException;
    }
}
