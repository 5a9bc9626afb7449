package dev.leasehold.idempotency;

import java.sql.Connection;
import java.sql.SQLException;

/** The two ends of a transaction on a borrowed connection that must not hide the first failure. */
final class Transactions {

    private Transactions() {}

    /** Rolls back; a failure to do so is added to {@code cause}. */
    static void rollback(Connection c, Exception cause) {
        try {
            c.rollback();
        } catch (SQLException e) {
            cause.addSuppressed(e);
        }
    }

    /** Gives the connection its autocommit mode back, unless it is closed or broken. */
    static void restoreAutoCommit(Connection c, boolean autoCommit) {
        try {
            if (!c.isClosed()) {
                c.setAutoCommit(autoCommit);
            }
        } catch (SQLException e) {
            // The connection is broken; the pool discards it.
        }
    }
}
