package dev.leasehold.jdbc.support;

import dev.leasehold.LeaseStoreException;
import dev.leasehold.jdbc.Database;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Locale;
import javax.sql.DataSource;

/** Which {@link Database} is behind a data source or a connection, from its JDBC metadata. */
public final class Databases {

    private Databases() {}

    /**
     * The database behind a data source; borrows one connection.
     *
     * @throws IllegalArgumentException naming the product if it is not supported
     * @throws LeaseStoreException if no connection can be had
     */
    public static Database detect(DataSource dataSource) {
        try (Connection connection = dataSource.getConnection()) {
            return of(connection);
        } catch (SQLException e) {
            throw new LeaseStoreException("detect the database", "(none)", e);
        }
    }

    /** The database of a connection, from the product name its driver reports (no round trip). */
    public static Database of(Connection connection) throws SQLException {
        return of(connection.getMetaData().getDatabaseProductName());
    }

    /**
     * The database of a JDBC product name.
     *
     * @throws IllegalArgumentException naming the product if it is not supported
     */
    public static Database of(String productName) {
        String name = productName == null ? "" : productName.toLowerCase(Locale.ROOT);
        if (name.contains("postgresql")) {
            return Database.POSTGRESQL;
        }
        if (name.contains("mariadb")) {
            return Database.MARIADB;
        }
        if (name.equals("h2")) {
            return Database.H2;
        }
        throw new IllegalArgumentException("database '" + productName
                + "' is not supported by the SQL lease store; supported: PostgreSQL, MariaDB (use the MariaDB"
                + " driver), H2");
    }

    /**
     * Whether the driver switches autocommit on and off without a round trip while no transaction
     * is open: PgJDBC and embedded H2 do; MariaDB Connector/J sends a statement.
     */
    static boolean autoCommitSwitchIsLocal(Database database) {
        return database != Database.MARIADB;
    }
}
