package dev.leasehold.jdbc;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;

/**
 * Hands out one connection again and again (closing a handle does not close it): a test's victim,
 * or a pool of one. As a pool of one ({@link #pooled}), closing a handle does what a pool does on
 * return: rolls back what was left open and resets autocommit to the pool's default.
 */
final class SingleConnectionDataSource implements DataSourceDefaults {

    private final Connection connection;
    private final Boolean poolAutoCommit;

    SingleConnectionDataSource(Connection connection) {
        this(connection, null);
    }

    private SingleConnectionDataSource(Connection connection, Boolean poolAutoCommit) {
        this.connection = connection;
        this.poolAutoCommit = poolAutoCommit;
    }

    /** A pool of one connection whose handles come with {@code autoCommit}. */
    static SingleConnectionDataSource pooled(Connection connection, boolean autoCommit) throws SQLException {
        connection.setAutoCommit(autoCommit);
        return new SingleConnectionDataSource(connection, autoCommit);
    }

    @Override
    public Connection getConnection() {
        return (Connection) Proxy.newProxyInstance(
                Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                    if (method.getName().equals("close")) {
                        if (poolAutoCommit != null) {
                            if (!connection.getAutoCommit()) {
                                connection.rollback(); // drivers send nothing when no transaction is open
                            }
                            connection.setAutoCommit(poolAutoCommit);
                        }
                        return null;
                    }
                    try {
                        return method.invoke(connection, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    @Override
    public Connection getConnection(String username, String password) {
        return getConnection();
    }
}
