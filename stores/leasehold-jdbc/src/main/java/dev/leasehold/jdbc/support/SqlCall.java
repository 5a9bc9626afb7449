package dev.leasehold.jdbc.support;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * Work on a borrowed connection.
 *
 * @param <T> its result
 */
@FunctionalInterface
public interface SqlCall<T> {
    /** Runs the work. */
    T run(Connection connection) throws SQLException;
}
