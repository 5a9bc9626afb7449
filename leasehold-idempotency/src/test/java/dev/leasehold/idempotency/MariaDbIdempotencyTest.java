package dev.leasehold.idempotency;

import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.jdbc.Database;
import dev.leasehold.testkit.TestServices;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;

/** Request and side-effect records on MariaDB. */
class MariaDbIdempotencyTest extends AbstractIdempotencyTest {

    private static HikariDataSource pool;

    private static synchronized HikariDataSource pool() {
        if (pool == null) {
            TestServices.JdbcEndpoint endpoint = TestServices.mariadb();
            pool = pool(endpoint.url(), endpoint.user(), endpoint.password(), Database.MARIADB);
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
        return Database.MARIADB;
    }

    @Override
    protected void killFromServer(Connection victim) throws SQLException {
        long id;
        try (Statement s = victim.createStatement();
                ResultSet rs = s.executeQuery("SELECT CONNECTION_ID()")) {
            rs.next();
            id = rs.getLong(1);
        }
        try (Connection admin = pool().getConnection();
                Statement kill = admin.createStatement()) {
            kill.execute("KILL CONNECTION " + id);
        }
    }
}
