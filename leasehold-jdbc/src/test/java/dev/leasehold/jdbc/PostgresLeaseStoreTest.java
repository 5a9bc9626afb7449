package dev.leasehold.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.testkit.TestServices;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;

/** The SQL store on PostgreSQL. */
class PostgresLeaseStoreTest extends AbstractJdbcLeaseStoreTest {

    private static TestServices.JdbcEndpoint endpoint;
    private static HikariDataSource pool;

    /** Resolved on first use, so a missing server skips each test with its reason instead of the class silently. */
    private static synchronized HikariDataSource pool() {
        if (pool == null) {
            endpoint = TestServices.postgres();
            pool = pool(endpoint.url(), endpoint.user(), endpoint.password(), Database.POSTGRESQL, null);
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
        return Database.POSTGRESQL;
    }

    @Override
    protected String[] connectionSettings() {
        return new String[] {endpoint.url(), endpoint.user(), endpoint.password()};
    }

    @Override
    protected void killFromServer(Connection victim) throws SQLException {
        int pid;
        try (Statement statement = victim.createStatement();
                ResultSet row = statement.executeQuery("SELECT pg_backend_pid()")) {
            row.next();
            pid = row.getInt(1);
        }
        try (Connection admin = pool.getConnection();
                PreparedStatement kill = admin.prepareStatement("SELECT pg_terminate_backend(?)")) {
            kill.setInt(1, pid);
            kill.execute();
        }
    }

    @Override
    protected String skewSessionTimeZone() {
        return "SET TIME ZONE 'Pacific/Kiritimati'";
    }
}
