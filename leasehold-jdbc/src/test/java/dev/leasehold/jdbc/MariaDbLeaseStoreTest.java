package dev.leasehold.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.testkit.TestServices;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;

/** The SQL store on MariaDB. */
class MariaDbLeaseStoreTest extends AbstractJdbcLeaseStoreTest {

    private static TestServices.JdbcEndpoint endpoint;
    private static HikariDataSource pool;

    /** Resolved on first use, so a missing server skips each test with its reason instead of the class silently. */
    private static synchronized HikariDataSource pool() {
        if (pool == null) {
            endpoint = TestServices.mariadb();
            pool = pool(endpoint.url(), endpoint.user(), endpoint.password(), Database.MARIADB, null);
        }
        return pool;
    }

    @AfterAll
    static void disconnect() {
        if (pool != null) {
            pool.close();
        }
    }

    @Override
    protected DataSource dataSource() {
        return pool();
    }

    @Override
    protected Database database() {
        return Database.MARIADB;
    }

    @Override
    protected String[] connectionSettings() {
        return new String[] {endpoint.url(), endpoint.user(), endpoint.password()};
    }

    @Override
    protected void killFromServer(Connection victim) throws SQLException {
        long id;
        try (Statement statement = victim.createStatement();
                ResultSet row = statement.executeQuery("SELECT CONNECTION_ID()")) {
            row.next();
            id = row.getLong(1);
        }
        try (Connection admin = pool.getConnection();
                Statement kill = admin.createStatement()) {
            kill.execute("KILL CONNECTION " + id);
        }
    }

    @Override
    protected String skewSessionTimeZone() {
        return "SET time_zone = '+13:00'";
    }
}
