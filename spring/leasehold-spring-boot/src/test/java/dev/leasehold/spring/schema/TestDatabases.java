package dev.leasehold.spring.schema;

import dev.leasehold.testkit.TestServices;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;

/**
 * A fresh, empty database on a shared server (H2 in memory, PostgreSQL, MariaDB), dropped when
 * closed, so a test owns its whole schema.
 */
public record TestDatabases(String url, String user, String password, Runnable drop) implements AutoCloseable {

    /** A fresh in-memory H2 database, shut down when closed. */
    public static TestDatabases h2() {
        String name = "lh-test-" + UUID.randomUUID();
        return new TestDatabases("jdbc:h2:mem:" + name + ";DB_CLOSE_DELAY=-1", "sa", "", () -> {
            try (Connection c = DriverManager.getConnection("jdbc:h2:mem:" + name, "sa", "");
                    Statement s = c.createStatement()) {
                s.execute("SHUTDOWN");
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    /** A fresh database on the PostgreSQL the tests find (else the test is skipped). */
    public static TestDatabases postgres() {
        return on(TestServices.postgres(), "\"", "\"");
    }

    /** A fresh database on the MariaDB the tests find (else the test is skipped). */
    public static TestDatabases mariadb() {
        return on(TestServices.mariadb(), "`", "`");
    }

    private static TestDatabases on(TestServices.JdbcEndpoint server, String open, String close) {
        String name = "lh_t_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        exec(server, "CREATE DATABASE " + open + name + close);
        int slash = server.url().lastIndexOf('/');
        int query = server.url().indexOf('?', slash);
        String url = server.url().substring(0, slash + 1)
                + name
                + (query < 0 ? "" : server.url().substring(query));
        return new TestDatabases(
                url, server.user(), server.password(), () -> exec(server, "DROP DATABASE " + open + name + close));
    }

    private static void exec(TestServices.JdbcEndpoint server, String sql) {
        try (Connection c = DriverManager.getConnection(server.url(), server.user(), server.password());
                Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException(sql + " failed", e);
        }
    }

    @Override
    public void close() {
        drop.run();
    }
}
