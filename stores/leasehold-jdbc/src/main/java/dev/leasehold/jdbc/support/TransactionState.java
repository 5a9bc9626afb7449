package dev.leasehold.jdbc.support;

import dev.leasehold.jdbc.Database;
import java.lang.reflect.Method;
import java.sql.Connection;
import java.sql.SQLException;

/** What the driver says about the transaction of a connection whose autocommit is off. */
public enum TransactionState {
    /** A transaction is open: work of the connection's caller. */
    OPEN,
    /** No transaction is open. */
    NONE,
    /** The driver cannot be asked (a wrapper that does not unwrap, another driver version). */
    UNKNOWN;

    /**
     * Asks the driver, without a round trip: PgJDBC's transaction state, H2's pending transaction,
     * MariaDB's server status. {@link #UNKNOWN} when it cannot tell, which is never to be taken
     * for {@link #NONE}.
     */
    public static TransactionState of(Connection connection, Database database) {
        try {
            Boolean open =
                    switch (database) {
                        case POSTGRESQL -> PgJdbc.inTransaction(connection);
                        case H2 ->
                            invokeOn(connection, "org.h2.jdbc.JdbcConnection", "getSession", "hasPendingTransaction")
                                            instanceof Boolean pending
                                    ? pending
                                    : null;
                        case MARIADB ->
                            invokeOn(connection, "org.mariadb.jdbc.Connection", "getContext", "getServerStatus")
                                            instanceof Integer status
                                    ? (status & 1) != 0 // SERVER_STATUS_IN_TRANS
                                    : null;
                    };
            return open == null ? UNKNOWN : open ? OPEN : NONE;
        } catch (ReflectiveOperationException | SQLException | LinkageError | RuntimeException e) {
            return UNKNOWN;
        }
    }

    private static Object invokeOn(Connection connection, String driverClass, String first, String second)
            throws ReflectiveOperationException, SQLException {
        Class<?> type;
        try {
            type = Class.forName(driverClass, false, connection.getClass().getClassLoader());
        } catch (ClassNotFoundException e) {
            type = Class.forName(driverClass, false, TransactionState.class.getClassLoader());
        }
        if (!connection.isWrapperFor(type)) {
            return null;
        }
        Object raw = connection.unwrap(type);
        // Through the declared (public) types, not the drivers' implementation classes.
        Method firstMethod = type.getMethod(first);
        Object inner = firstMethod.invoke(raw);
        return inner == null
                ? null
                : firstMethod.getReturnType().getMethod(second).invoke(inner);
    }
}
