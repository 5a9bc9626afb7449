package dev.leasehold.idempotency;

import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.jdbc.Database;
import dev.leasehold.testkit.TestServices;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;

/** Request and side-effect records on PostgreSQL. */
class PostgresIdempotencyTest extends AbstractIdempotencyTest {

    private static HikariDataSource pool;

    private static synchronized HikariDataSource pool() {
        if (pool == null) {
            TestServices.JdbcEndpoint endpoint = TestServices.postgres();
            pool = pool(endpoint.url(), endpoint.user(), endpoint.password(), Database.POSTGRESQL);
        }
        return pool;
    }

    @AfterAll
    static void closePool() {
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
    protected void killFromServer(Connection victim) throws SQLException {
        int pid;
        try (Statement s = victim.createStatement();
                ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            pid = rs.getInt(1);
        }
        try (Connection admin = pool().getConnection();
                PreparedStatement kill = admin.prepareStatement("SELECT pg_terminate_backend(?)")) {
            kill.setInt(1, pid);
            kill.execute();
        }
    }
}
