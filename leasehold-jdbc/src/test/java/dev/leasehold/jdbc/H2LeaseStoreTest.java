package dev.leasehold.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;

/** The SQL store on an embedded H2 database, the reference services' default. */
class H2LeaseStoreTest extends AbstractJdbcLeaseStoreTest {

    private static final String URL = "jdbc:h2:mem:leasehold-test;DB_CLOSE_DELAY=-1";
    private static HikariDataSource pool;

    @BeforeAll
    static void open() {
        pool = pool(URL, "sa", "", Database.H2, null);
    }

    @AfterAll
    static void close() {
        if (pool != null) {
            pool.close();
        }
    }

    @Override
    protected DataSource dataSource() {
        return pool;
    }

    @Override
    protected Database database() {
        return Database.H2;
    }

    @Override
    protected String[] connectionSettings() {
        return new String[] {URL, "sa", ""};
    }

    @Override
    protected void killFromServer(Connection victim) {
        Assumptions.abort("embedded H2 has no server session to kill from outside");
    }

    @Override
    protected String skewSessionTimeZone() {
        return "SET TIME ZONE '+14:00'";
    }
}
