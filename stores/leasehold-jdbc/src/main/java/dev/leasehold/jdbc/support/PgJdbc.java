package dev.leasehold.jdbc.support;

import java.sql.Connection;
import java.sql.SQLException;
import org.postgresql.core.BaseConnection;

/** PgJDBC specifics, loaded only for PostgreSQL (the driver is then on the class path). */
final class PgJdbc {

    private PgJdbc() {}

    /**
     * Whether the connection has an open transaction, by the driver's own state (no round trip);
     * null when the connection does not unwrap to PgJDBC's.
     */
    static Boolean inTransaction(Connection connection) throws SQLException {
        if (!connection.isWrapperFor(BaseConnection.class)) {
            return null;
        }
        return connection.unwrap(BaseConnection.class).getTransactionState()
                != org.postgresql.core.TransactionState.IDLE;
    }
}
