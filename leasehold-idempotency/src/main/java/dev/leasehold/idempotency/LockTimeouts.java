package dev.leasehold.idempotency;

import dev.leasehold.jdbc.Database;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;

/**
 * A short row-lock wait for one statement, so that a heartbeat gives up instead of hanging behind
 * a long transaction: PostgreSQL {@code SET LOCAL lock_timeout} (this transaction only), MariaDB
 * {@code SET STATEMENT innodb_lock_wait_timeout = s FOR} (this statement only, whole seconds), H2
 * {@code SET LOCK_TIMEOUT} (the session's, put back afterwards).
 */
final class LockTimeouts {

    /** H2's lock timeout of a pooled session, read once: the pool's sessions share it. */
    private static volatile String h2Default;

    private LockTimeouts() {}

    /** Sets the wait on the open transaction of {@code c}; returns what {@link #restore} needs. */
    static String apply(Connection c, Database database, Duration timeout) throws SQLException {
        try (Statement s = c.createStatement()) {
            switch (database) {
                case POSTGRESQL -> {
                    s.execute("SET LOCAL lock_timeout = '" + timeout.toMillis() + "ms'");
                    return null;
                }
                case H2 -> {
                    String previous = h2Default;
                    if (previous == null) {
                        try (ResultSet rs = s.executeQuery("SELECT SETTING_VALUE FROM INFORMATION_SCHEMA.SETTINGS"
                                + " WHERE SETTING_NAME = 'LOCK_TIMEOUT'")) {
                            previous = rs.next() ? rs.getString(1) : null;
                        }
                        h2Default = previous;
                    }
                    s.execute("SET LOCK_TIMEOUT " + timeout.toMillis());
                    return previous;
                }
                default -> {
                    return null;
                }
            }
        }
    }

    /** {@code sql} under the wait, where the wait is part of the statement (MariaDB). */
    static String statement(Database database, Duration timeout, String sql) {
        if (database == Database.MARIADB) {
            return "SET STATEMENT innodb_lock_wait_timeout = " + timeout.toSeconds() + " FOR " + sql;
        }
        return sql;
    }

    /** Puts back what {@link #apply} changed beyond the transaction. */
    static void restore(Connection c, Database database, String previous) {
        if (database != Database.H2 || previous == null || !previous.matches("[0-9]+")) {
            return;
        }
        try (Statement s = c.createStatement()) {
            s.execute("SET LOCK_TIMEOUT " + previous);
        } catch (SQLException e) {
            // The connection is broken; the pool discards it with its setting.
        }
    }

    /** A JDBC query timeout (whole seconds) a little above the lock wait. */
    static int querySeconds(Duration timeout) {
        return (int) Math.max(1, timeout.toSeconds() + 1);
    }
}
