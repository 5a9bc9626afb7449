package dev.leasehold.idempotency;

import dev.leasehold.LeaseStoreException;
import dev.leasehold.jdbc.support.OwnTransactions;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Locale;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;

/** Runs one statement in its own transaction, and the small JDBC facts both record stores share. */
final class Jdbc {

    @FunctionalInterface
    interface SqlCall<T> {
        T run(Connection connection) throws SQLException;
    }

    private Jdbc() {}

    /**
     * Record operations run as their own transactions under the rule of {@link
     * dev.leasehold.jdbc.support}: never on a connection inside a caller's transaction.
     */
    private static final OwnTransactions OWN = OwnTransactions.builder(
                    "the idempotency records", "a record operation is never part of a caller's transaction")
            .build();

    /**
     * Runs {@code call} on a connection of {@code dataSource} as its own transaction.
     *
     * @throws IllegalStateException if the connection is inside a transaction, or its driver cannot
     *     tell whether it is
     */
    static <T> T autoCommit(DataSource dataSource, String operation, String subject, SqlCall<T> call) {
        try {
            return OWN.run(dataSource, operation, subject, call::run);
        } catch (SQLException e) {
            throw failure(operation, subject, e);
        }
    }

    /** Missing table: PostgreSQL, MariaDB and H2 (SQLState, then H2's vendor code). */
    private static final Set<String> UNDEFINED_TABLE = Set.of("42P01", "42S02", "42102", "42104");

    /** Missing column (an older schema without a later migration). */
    private static final Set<String> UNDEFINED_COLUMN = Set.of("42703", "42S22", "42122");

    /**
     * The exception for a failed statement: a missing table or column of the records is named with
     * the migration that creates it (retrying will not help); anything else is a store failure.
     */
    static RuntimeException failure(String operation, String subject, SQLException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException sql) {
                String state = sql.getSQLState();
                String code = String.valueOf(sql.getErrorCode());
                String message = String.valueOf(sql.getMessage()).toLowerCase(Locale.ROOT);
                String table = message.contains("leasehold_effect") ? "leasehold_effect" : "leasehold_request";
                if (UNDEFINED_TABLE.contains(state) || UNDEFINED_TABLE.contains(code) || "1146".equals(code)) {
                    return new IdempotencySchemaMissingException(table, null, e);
                }
                if (UNDEFINED_COLUMN.contains(state) || UNDEFINED_COLUMN.contains(code) || "1054".equals(code)) {
                    return new IdempotencySchemaMissingException(
                            table, IdempotencySchemaMissingException.LATEST_MIGRATION, e);
                }
            }
        }
        return new LeaseStoreException(operation, subject, e);
    }

    /** Runs one UPDATE with the arguments in order, in its own transaction; returns the row count. */
    static int update(DataSource dataSource, String operation, String subject, String sql, Object... args) {
        return autoCommit(dataSource, operation, subject, c -> executeUpdate(c, sql, args));
    }

    /**
     * Runs one INSERT with the arguments in order, in its own transaction.
     *
     * @return true if the row was created, false if the unique key said another caller created it first
     */
    static boolean insertUnlessDuplicate(
            DataSource dataSource, String operation, String subject, String sql, Object... args) {
        try {
            OWN.run(dataSource, operation, subject, c -> executeUpdate(c, sql, args));
            return true;
        } catch (SQLException e) {
            if (isDuplicateKey(e)) {
                return false;
            }
            throw failure(operation, subject, e);
        }
    }

    private static int executeUpdate(Connection c, String sql, Object... args) throws SQLException {
        try (PreparedStatement s = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                s.setObject(i + 1, args[i]);
            }
            return s.executeUpdate();
        }
    }

    /**
     * A unique-key violation, and only that: someone else created the row first.
     * PostgreSQL and H2 say 23505; MariaDB says 23000 for every integrity error, so there its error
     * code decides (1062 duplicate entry, 1586 duplicate entry for a named key). NOT NULL, foreign
     * key and CHECK violations are other 23xxx states: they are errors, not twins.
     */
    static boolean isDuplicateKey(SQLException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException sql) {
                if ("23505".equals(sql.getSQLState())) {
                    return true;
                }
                if ("23000".equals(sql.getSQLState()) && (sql.getErrorCode() == 1062 || sql.getErrorCode() == 1586)) {
                    return true;
                }
            }
        }
        return false;
    }

    static String newId() {
        UUID uuid = UUID.randomUUID();
        return String.format("%016x%016x", uuid.getMostSignificantBits(), uuid.getLeastSignificantBits());
    }

    static String checkText(String name, String value, int max) {
        if (value != null) {
            Utf8.encode(value, name);
        }
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException(name + " is missing or blank");
        }
        if (value.length() > max) {
            throw new IllegalArgumentException(name + " must be at most " + max + " characters, was " + value.length());
        }
        for (int i = 0; i < value.length(); i++) {
            if (Character.isISOControl(value.charAt(i))) {
                throw new IllegalArgumentException(name + " contains a control character at index " + i);
            }
        }
        return value;
    }

    static String truncate(String message, int max) {
        if (message == null) {
            return null;
        }
        return message.length() <= max ? message : message.substring(0, max);
    }
}
