package dev.leasehold.idempotency;

import dev.leasehold.jdbc.Database;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;

/**
 * A short row-lock wait for one statement, so that a heartbeat or a take-over gives up instead of
 * hanging behind a long transaction: PostgreSQL {@code SET LOCAL lock_timeout} (this transaction
 * only), MariaDB {@code SET STATEMENT innodb_lock_wait_timeout = s FOR} (this statement only, whole
 * seconds), H2 {@code SELECT ... FOR UPDATE WAIT s} on the row first (this statement only). Nothing
 * outlives the transaction: H2's {@code SET LOCK_TIMEOUT} is not used, as it would stay on the
 * pooled session and H2 has no way to read the value it replaces.
 */
final class LockTimeouts {

    private LockTimeouts() {}

    /**
     * Bounds the row-lock wait of the open transaction of {@code c} and, where the bound is a
     * statement of its own (H2), takes the lock of the row {@code id} of {@code table} under it.
     */
    private static void apply(Connection c, Database database, Duration timeout, String table, String id)
            throws SQLException {
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
    private static String statement(Database database, Duration timeout, String sql) {
        if (database == Database.MARIADB) {
            return "SET STATEMENT innodb_lock_wait_timeout = " + timeout.toSeconds() + " FOR " + sql;
        }
        return sql;
    }

    /** What {@link #update} answers when another transaction holds the row and that is an answer. */
    static final int LOCKED = -1;

    /**
     * Runs one UPDATE of the row {@code id} of {@code table} in its own transaction, waiting at
     * most {@code timeout} for the row's lock.
     *
     * @param lockedIsAnAnswer whether a lock wait that timed out answers {@link #LOCKED} (a take-over
     *     of a row a live transaction holds) rather than failing (a heartbeat)
     * @return the update count, or {@link #LOCKED} (nothing was changed)
     * @throws dev.leasehold.LeaseStoreException if the database failed, or the lock wait timed out
     *     and that is no answer
     */
    static int update(
            DataSource dataSource,
            Database database,
            Duration timeout,
            String table,
            String id,
            String operation,
            boolean lockedIsAnAnswer,
            String sql,
            Object... args) {
        return Jdbc.autoCommit(dataSource, operation, id, c -> {
            boolean autoCommit = c.getAutoCommit();
            try {
                c.setAutoCommit(false);
                int updated;
                try {
                    apply(c, database, timeout, table, id);
                    try (PreparedStatement s = c.prepareStatement(statement(database, timeout, sql))) {
                        s.setQueryTimeout(querySeconds(timeout));
                        for (int i = 0; i < args.length; i++) {
                            s.setObject(i + 1, args[i]);
                        }
                        updated = s.executeUpdate();
                    }
                } catch (SQLException e) {
                    if (!lockedIsAnAnswer || !isLockWait(e)) {
                        throw e;
                    }
                    c.rollback();
                    return LOCKED;
                }
                c.commit();
                return updated;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(autoCommit);
            }
        });
    }

    /**
     * Whether a statement failed because a row lock was not granted in time: PostgreSQL's {@code
     * lock_not_available} (55P03), MariaDB's lock wait timeout (1205) or an interrupted query
     * (1317, 70100), H2's lock timeout (50200, HYT00), or a JDBC query timeout.
     */
    private static boolean isLockWait(SQLException failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof java.sql.SQLTimeoutException) {
                return true;
            }
            if (t instanceof SQLException e) {
                String state = e.getSQLState();
                int code = e.getErrorCode();
                if ("55P03".equals(state)
                        || "HYT00".equals(state)
                        || "70100".equals(state)
                        || code == 1205
                        || code == 1317
                        || code == 50200) {
                    return true;
                }
            }
        }
        return false;
    }

    /** A JDBC query timeout (whole seconds) a little above the lock wait. */
    private static int querySeconds(Duration timeout) {
        return (int) Math.max(1, timeout.toSeconds() + 1);
    }
}
