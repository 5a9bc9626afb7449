package dev.leasehold.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.function.UnaryOperator;
import javax.sql.DataSource;

/** Hands out the connections of another data source, each passed through a wrapper first. */
final class WrappingDataSource implements DataSourceDefaults {

    private final DataSource target;
    private final UnaryOperator<Connection> wrapper;

    WrappingDataSource(DataSource target, UnaryOperator<Connection> wrapper) {
        this.target = target;
        this.wrapper = wrapper;
    }

    @Override
    public Connection getConnection() throws SQLException {
        return wrapper.apply(target.getConnection());
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
        return getConnection();
    }
}
