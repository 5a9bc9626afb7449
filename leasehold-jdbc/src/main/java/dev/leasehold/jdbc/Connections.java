package dev.leasehold.jdbc;

import java.lang.reflect.Method;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.ThreadLocalRandom;

/**
 * How the store and fenced writes use a connection: whether it is inside someone's transaction,
 * and which failures are worth running the same statement again.
 */
final class Connections {

    /** Attempts of one operation when the database reports a deadlock or a serialization failure. */
    static final int ATTEMPTS = 5;

    private Connections() {}

    /** What the driver says about an autocommit-off connection's transaction. */
    enum TransactionState {
        /** A transaction is open: work of the connection's caller. */
        OPEN,
        /** No transaction is open. */
        NONE,
        /** The driver cannot be asked (a wrapper that does not unwrap, another driver version). */
        UNKNOWN
    }

    /**
     * Whether an autocommit-off connection already has an open transaction (work of its caller),
     * asked of the driver without a round trip: PgJDBC's transaction state, H2's pending
     * transaction, MariaDB's server status. {@link TransactionState#UNKNOWN} when the driver cannot
     * tell (never taken for "no transaction": the store would then commit a caller's work).
     */
    static TransactionState transactionState(Connection connection, Database database) {
        try {
            Boolean open =
                    switch (database) {
                        case POSTGRESQL -> PostgresConnections.inTransaction(connection);
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
            return open == null ? TransactionState.UNKNOWN : open ? TransactionState.OPEN : TransactionState.NONE;
        } catch (ReflectiveOperationException | SQLException | LinkageError | RuntimeException e) {
            return TransactionState.UNKNOWN;
        }
    }

    private static Object invokeOn(Connection connection, String driverClass, String first, String second)
            throws ReflectiveOperationException, SQLException {
        Class<?> type;
        try {
            type = Class.forName(driverClass, false, connection.getClass().getClassLoader());
        } catch (ClassNotFoundException e) {
            type = Class.forName(driverClass, false, Connections.class.getClassLoader());
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

    /**
     * Whether the failure rolled back only this statement's transaction because of a conflict with
     * another (deadlock, serialization failure), so the same statement may simply run again.
     */
    static boolean isRetryable(SQLException e) {
        for (Throwable cause = e; cause != null; cause = cause.getCause()) {
            if (cause instanceof SQLException sql) {
                String state = sql.getSQLState();
                if ("40001".equals(state) || "40P01".equals(state) || sql.getErrorCode() == 1213) {
                    return true;
                }
            }
        }
        return false;
    }

    /** A short randomised pause before attempt {@code attempt + 1}, so colliding callers spread out. */
    static void backOff(int attempt) throws SQLException {
        try {
            Thread.sleep(ThreadLocalRandom.current().nextInt(1, 1 + (2 << attempt)));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SQLException("interrupted while retrying after a deadlock", "40001", e);
        }
    }
}
