package dev.leasehold.idempotency;

import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.jdbc.Database;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;

/** Request and side-effect records on embedded H2. */
class H2IdempotencyTest extends AbstractIdempotencyTest {

    private static HikariDataSource pool;

    private static synchronized HikariDataSource pool() {
        if (pool == null) {
            pool = pool("jdbc:h2:mem:leasehold-idempotency;DB_CLOSE_DELAY=-1", "sa", "", Database.H2);
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
        return Database.H2;
    }

    /**
     * Embedded H2 has no server session to kill; the connection failure is simulated, so the
     * transaction rolls back the same way (PostgreSQL and MariaDB run the real kill).
     */
    @Override
    protected void killFromServer(Connection victim) throws SQLException {
        throw new SQLException("connection lost (simulated for embedded H2)", "08006");
    }
}
