package dev.leasehold.jdbc;

import java.io.PrintWriter;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.logging.Logger;
import javax.sql.DataSource;

/** The parts of a test data source that no test uses: no log writer, no timeout, not a wrapper. */
interface DataSourceDefaults extends DataSource {

    @Override
    default PrintWriter getLogWriter() {
        return null;
    }

    @Override
    default void setLogWriter(PrintWriter out) {}

    @Override
    default void setLoginTimeout(int seconds) {}

    @Override
    default int getLoginTimeout() {
        return 0;
    }

    @Override
    default Logger getParentLogger() throws SQLFeatureNotSupportedException {
        throw new SQLFeatureNotSupportedException();
    }

    @Override
    default <T> T unwrap(Class<T> iface) throws SQLException {
        throw new SQLException("not a wrapper for " + iface);
    }

    @Override
    default boolean isWrapperFor(Class<?> iface) {
        return false;
    }
}
