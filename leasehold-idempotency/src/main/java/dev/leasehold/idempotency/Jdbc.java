package dev.leasehold.idempotency;

import dev.leasehold.LeaseStoreException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.UUID;
import javax.sql.DataSource;

/** Runs one statement in its own transaction, and the small JDBC facts both record stores share. */
final class Jdbc {

    @FunctionalInterface
    interface SqlCall<T> {
        T run(Connection connection) throws SQLException;
    }

    private Jdbc() {}

    static <T> T autoCommit(DataSource dataSource, String operation, String subject, SqlCall<T> call) {
        try (Connection connection = dataSource.getConnection()) {
            if (connection.getAutoCommit()) {
                return call.run(connection);
            }
            try {
                T result = call.run(connection);
                connection.commit();
                return result;
            } catch (SQLException | RuntimeException e) {
                connection.rollback();
                throw e;
            }
        } catch (SQLException e) {
            throw new LeaseStoreException(operation, subject, e);
        }
    }

    /** Runs one UPDATE with the arguments in order, in its own transaction; returns the row count. */
    static int update(DataSource dataSource, String operation, String subject, String sql, Object... args) {
        return autoCommit(dataSource, operation, subject, c -> {
            try (PreparedStatement s = c.prepareStatement(sql)) {
                for (int i = 0; i < args.length; i++) {
                    s.setObject(i + 1, args[i]);
                }
                return s.executeUpdate();
            }
        });
    }

    /**
     * Runs one INSERT with the arguments in order, in its own transaction.
     *
     * @return true if the row was created, false if the unique key said another caller created it first
     */
    static boolean insertUnlessDuplicate(
            DataSource dataSource, String operation, String subject, String sql, Object... args) {
        try (Connection c = dataSource.getConnection()) {
            try (PreparedStatement s = c.prepareStatement(sql)) {
                for (int i = 0; i < args.length; i++) {
                    s.setObject(i + 1, args[i]);
                }
                s.executeUpdate();
                if (!c.getAutoCommit()) {
                    c.commit();
                }
                return true;
            } catch (SQLException e) {
                if (!c.getAutoCommit()) {
                    c.rollback();
                }
                if (isDuplicateKey(e)) {
                    return false;
                }
                throw e;
            }
        } catch (SQLException e) {
            throw new LeaseStoreException(operation, subject, e);
        }
    }

    /** A unique-key violation: someone else created the row first (S1.4, S1.13). */
    static boolean isDuplicateKey(SQLException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException sql
                    && sql.getSQLState() != null
                    && sql.getSQLState().startsWith("23")) {
                return true;
            }
        }
        return false;
    }

    static String newId() {
        UUID uuid = UUID.randomUUID();
        return String.format("%016x%016x", uuid.getMostSignificantBits(), uuid.getLeastSignificantBits());
    }

    static String checkText(String name, String value, int max) {
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
