package dev.leasehold.idempotency;

import dev.leasehold.jdbc.Database;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;

/**
 * A short row-lock wait for one statement, so that a heartbeat gives up instead of hanging behind
 * a long transaction: PostgreSQL {@code SET LOCAL lock_timeout} (this transaction only), MariaDB
 * {@code SET STATEMENT innodb_lock_wait_timeout = s FOR} (this statement only, whole seconds), H2
 * {@code SELECT ... FOR UPDATE WAIT s} on the row first (this statement only). Nothing outlives the
 * transaction: H2's {@code SET LOCK_TIMEOUT} is not used, as it would stay on the pooled session
 * and H2 has no way to read the value it replaces ({@code
 * H2IdempotencyTest#heartbeatLeavesTheSessionsLockWaitAsItWas}).
 */
final class LockTimeouts {

    private LockTimeouts() {}

    /**
     * Bounds the row-lock wait of the open transaction of {@code c} and, where the bound is a
     * statement of its own (H2), takes the lock of the row {@code id} of {@code table} under it.
     */
    static void apply(Connection c, Database database, Duration timeout, String table, String id) throws SQLException {
        switch (database) {
            case POSTGRESQL -> {
                try (Statement s = c.createStatement()) {
                    s.execute("SET LOCAL lock_timeout = '" + timeout.toMillis() + "ms'");
                }
            }
            case H2 -> {
                try (PreparedStatement s =
                        c.prepareStatement("SELECT id FROM " + table + " WHERE id = ? FOR UPDATE WAIT "
                                + BigDecimal.valueOf(timeout.toMillis(), 3).toPlainString())) {
                    s.setQueryTimeout(querySeconds(timeout));
                    s.setString(1, id);
                    s.executeQuery().close();
                }
            }
            default -> {
                // MariaDB: the bound is part of the statement (statement()).
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

    /** A JDBC query timeout (whole seconds) a little above the lock wait. */
    static int querySeconds(Duration timeout) {
        return (int) Math.max(1, timeout.toSeconds() + 1);
    }
}
