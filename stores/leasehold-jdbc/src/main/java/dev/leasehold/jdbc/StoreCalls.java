package dev.leasehold.jdbc;

import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.jdbc.SqlDialect.Op;
import dev.leasehold.jdbc.support.OwnTransactions;
import dev.leasehold.jdbc.support.SqlCall;
import dev.leasehold.spi.Grant;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import javax.sql.DataSource;

/**
 * How the lease store runs its statements: each call on a borrowed connection as its own
 * transaction ({@link OwnTransactions}), within the call timeout, again after a deadlock, with
 * failures turned into {@link LeaseStoreException} or {@link SchemaMissingException}.
 */
final class StoreCalls {

    /** Attempts of one call when the database reports a deadlock or a serialization failure. */
    static final int ATTEMPTS = 5;

    final DataSource dataSource;
    final SqlDialect dialect;
    private final OwnTransactions transactions;

    StoreCalls(DataSource dataSource, SqlDialect dialect, Duration callTimeout) {
        this.dataSource = dataSource;
        this.dialect = dialect;
        this.transactions = OwnTransactions.builder(
                        "the lease store", "a lease is never part of a caller's transaction")
                .database(dialect.database())
                .callTimeout(callTimeout)
                .attempts(ATTEMPTS, e -> dialect.retriesDuplicateKey() && "23505".equals(e.getSQLState()))
                .build();
    }

    /** Runs {@code call} as its own transaction; {@code key} is null for calls over all keys. */
    <T> T execute(String operation, LockKey key, SqlCall<T> call) {
        return executeOn(operation, key == null ? "(all)" : key.render(), call);
    }

    /** Runs {@code call} as its own transaction on a key given as rendered. */
    <T> T executeOn(String operation, String keyText, SqlCall<T> call) {
        try {
            return transactions.run(dataSource, operation, keyText, call);
        } catch (SQLException e) {
            SchemaMissingException noSchema = JdbcSchema.missing(e, dialect.database());
            throw noSchema != null ? noSchema : new LeaseStoreException(operation, keyText, e);
        }
    }

    /** Prepares the dialect's statement of {@code op} with {@code values} bound by name. */
    PreparedStatement prepare(Connection connection, Op op, Map<String, ?> values) throws SQLException {
        return dialect.get(op).prepare(connection, values);
    }

    /**
     * Prepares the dialect's statement of {@code op} with {@code values} in the order of the op's
     * declared parameters ({@link SqlDialect#prepare}).
     */
    PreparedStatement prepareInOrder(Connection connection, Op op, Object... values) throws SQLException {
        return dialect.prepare(connection, op, values);
    }

    /** Runs {@code op}'s update with {@code values}: the update count. */
    int update(Connection connection, Op op, Map<String, ?> values) throws SQLException {
        try (PreparedStatement statement = prepare(connection, op, values)) {
            return statement.executeUpdate();
        }
    }

    /**
     * Whether a release statement changed the lease row: a returned row where releases notify, an
     * update count elsewhere. MariaDB's release that also ends the releaser's own place counts that
     * row too (2), and changes nothing at all unless the lease row matched.
     */
    boolean changedOneRow(PreparedStatement statement) throws SQLException {
        if (!dialect.releaseReturnsRows()) {
            return statement.executeUpdate() >= 1;
        }
        try (ResultSet row = statement.executeQuery()) {
            return row.next();
        }
    }

    /** The holder's remaining time of a row (owner_token, fence, expires_at_ms, now_ms). */
    static Duration remaining(ResultSet row) throws SQLException {
        return Duration.ofMillis(Math.max(0, row.getLong(3) - row.getLong(4)));
    }

    /** The grant of a row (owner_token, fence, expires_at_ms, now_ms). */
    static Grant grant(ResultSet row) throws SQLException {
        long fence = row.getLong(2);
        long expiresAt = row.getLong(3);
        long now = row.getLong(4);
        return new Grant(fence, Duration.ofMillis(Math.max(0, expiresAt - now)), Instant.ofEpochMilli(expiresAt));
    }

    /** The values of a statement about one owner's key. */
    static Map<String, Object> keyAndOwner(LockKey key, String owner) {
        return Map.of("key", key.render(), "owner", owner);
    }
}
