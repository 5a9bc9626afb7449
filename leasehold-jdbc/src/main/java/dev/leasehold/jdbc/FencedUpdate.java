package dev.leasehold.jdbc;

import dev.leasehold.Lease;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Guards writes with fences (feature B1): a write under a lease is applied only if no newer fence
 * was accepted for the same resource, so a holder that was paused past its lease cannot overwrite
 * what the next holder wrote.
 *
 * <p>How: in the transaction of the write, one upsert raises the resource's row in {@code
 * leasehold_fence} to {@code max(stored, fence)} and returns it. If it returns the caller's fence,
 * the write may go ahead; the row stays locked until the transaction ends, so a writer with a newer
 * fence waits and then goes ahead, and an older one is refused. Equal fences pass: one holder may
 * write several times. Thread-safe.
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
     * In the caller's transaction on {@code connection}: records {@code fence} for {@code resource}
     * if it is not older than the newest accepted.
     *
     * @return whether the caller may write (its fence is the newest)
     * @throws IllegalStateException if the connection is in autocommit mode: the check and the write
     *     must commit together
     */
    public boolean tryAccept(Connection connection, String resource, long fence) throws SQLException {
        return accept(connection, resource, fence) == fence;
    }

    private long accept(Connection connection, String resource, long fence) throws SQLException {
        Objects.requireNonNull(connection, "connection is missing (null)");
        checkArguments(resource, fence);
        if (connection.getAutoCommit()) {
            throw new IllegalStateException(
                    "a fenced write must run in a transaction (autocommit off), so the fence check and the write"
                            + " commit together");
        }
        try (PreparedStatement statement = connection.prepareStatement(dialect.acceptFence())) {
            statement.setString(1, resource);
            statement.setLong(2, fence);
            try (ResultSet row = statement.executeQuery()) {
                if (!row.next()) {
                    throw new SQLException("the fence statement returned no row for " + resource);
                }
                return row.getLong(1);
            }
        }
    }

    /**
     * Runs {@code write} in a new transaction if {@code fence} is accepted for {@code resource}, and
     * commits; rolls back on any failure.
     *
     * @throws StaleFenceException if a newer fence was accepted (nothing is written)
     * @throws SQLException if the database fails (nothing is written)
     */
    public <T> T run(String resource, long fence, SqlWork<T> write) throws SQLException {
        Objects.requireNonNull(write, "write is missing (null)");
        checkArguments(resource, fence);
        try (Connection connection = dataSource.getConnection()) {
            boolean autoCommit = connection.getAutoCommit();
            connection.setAutoCommit(false);
            try {
                long newest = accept(connection, resource, fence);
                if (newest != fence) {
                    connection.rollback();
                    throw new StaleFenceException(resource, fence, newest);
                }
                T result = write.run(connection);
                connection.commit();
                return result;
            } catch (SQLException | RuntimeException e) {
                try {
                    connection.rollback();
                } catch (SQLException rollback) {
                    e.addSuppressed(rollback);
                }
                throw e;
            } finally {
                connection.setAutoCommit(autoCommit);
            }
        }
    }

    /** As {@link #run(String, long, SqlWork)}, with the lease's fence. */
    public <T> T run(String resource, Lease lease, SqlWork<T> write) throws SQLException {
        Objects.requireNonNull(lease, "lease is missing (null)");
        return run(resource, lease.fence(), write);
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
