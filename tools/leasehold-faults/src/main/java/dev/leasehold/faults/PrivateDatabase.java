package dev.leasehold.faults;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.idempotency.IdempotencySchema;
import dev.leasehold.jdbc.Database;
import dev.leasehold.testkit.TestServices;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * A private PostgreSQL schema or MariaDB database on the shared local server, created for one
 * scenario run with Leasehold's tables (leases, fences, requests, side effects) and dropped at
 * close. The shared server itself is never reconfigured. Child JVMs reach the same place through
 * {@link #spec()}.
 */
final class PrivateDatabase implements AutoCloseable {

    private final Spec spec;
    private final HikariDataSource pool;

    /**
     * Where a private database is: enough for a child JVM to open its own pool.
     *
     * @param database the vendor
     * @param url the server's JDBC URL
     * @param user the user
     * @param password the password
     * @param name the private schema (PostgreSQL) or database (MariaDB)
     */
    record Spec(Database database, String url, String user, String password, String name) {

        /** One argument for a child's command line. */
        String encode() {
            return String.join("|", database.name(), url, user, password.isEmpty() ? "-" : password, name);
        }

        static Spec decode(String text) {
            String[] p = text.split("\\|", -1);
            return new Spec(Database.valueOf(p[0]), p[1], p[2], p[3].equals("-") ? "" : p[3], p[4]);
        }

        /** A pool of at most {@code size} connections in the private schema or database. */
        HikariDataSource pool(String poolName, int size) {
            HikariConfig config = new HikariConfig();
            config.setJdbcUrl(url);
            config.setUsername(user);
            config.setPassword(password);
            config.setMaximumPoolSize(size);
            config.setMinimumIdle(1);
            config.setPoolName(poolName);
            config.setConnectionTimeout(5_000);
            if (database == Database.POSTGRESQL) {
                config.setSchema(name);
            } else {
                config.setCatalog(name);
            }
            return new HikariDataSource(config);
        }

        /** A connection outside any pool, in the private schema or database. */
        Connection connect() throws SQLException {
            Connection connection = DriverManager.getConnection(url, user, password);
            if (database == Database.POSTGRESQL) {
                connection.setSchema(name);
            } else {
                connection.setCatalog(name);
            }
            return connection;
        }
    }

    private PrivateDatabase(Spec spec) {
        this.spec = spec;
        this.pool = spec.pool("faults-" + spec.name(), 16);
    }

    /**
     * A private schema on the local PostgreSQL or database on the local MariaDB, with Leasehold's
     * tables. Aborts the calling test (a {@code TestAbortedException}) when the server is missing.
     */
    static PrivateDatabase create(Database database) throws SQLException {
        PrivateDatabase created = empty(database);
        IdempotencySchema.create(created.pool, database);
        return created;
    }

    /**
     * A private schema or database without any table, for an application that migrates its own
     * (Flyway refuses a schema that has tables but no history of its own).
     */
    static PrivateDatabase empty(Database database) throws SQLException {
        TestServices.JdbcEndpoint endpoint = database == Database.POSTGRESQL
                ? TestServices.postgres()
                : database == Database.MARIADB ? TestServices.mariadb() : null;
        if (endpoint == null) {
            throw new IllegalArgumentException("the fault suite runs on PostgreSQL and MariaDB, not " + database);
        }
        String name = "faults_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        try (Connection admin = DriverManager.getConnection(endpoint.url(), endpoint.user(), endpoint.password());
                Statement statement = admin.createStatement()) {
            statement.execute((database == Database.POSTGRESQL ? "CREATE SCHEMA " : "CREATE DATABASE ") + name);
        }
        return new PrivateDatabase(new Spec(database, endpoint.url(), endpoint.user(), endpoint.password(), name));
    }

    Spec spec() {
        return spec;
    }

    Database database() {
        return spec.database();
    }

    String backend() {
        return spec.database().name().toLowerCase(Locale.ROOT);
    }

    DataSource dataSource() {
        return pool;
    }

    /** Runs DDL or other statements, each committed. */
    void execute(String... statements) throws SQLException {
        try (Connection connection = pool.getConnection();
                Statement statement = connection.createStatement()) {
            for (String sql : statements) {
                statement.execute(sql);
            }
        }
    }

    /** The single number {@code sql} selects. */
    long queryLong(String sql) throws SQLException {
        try (Connection connection = pool.getConnection();
                Statement statement = connection.createStatement();
                var rows = statement.executeQuery(sql)) {
            if (!rows.next()) {
                throw new SQLException("no row from " + sql);
            }
            return rows.getLong(1);
        }
    }

    @Override
    public void close() {
        pool.close();
        try (Connection admin = DriverManager.getConnection(spec.url(), spec.user(), spec.password());
                Statement statement = admin.createStatement()) {
            statement.execute(
                    spec.database() == Database.POSTGRESQL
                            ? "DROP SCHEMA IF EXISTS " + spec.name() + " CASCADE"
                            : "DROP DATABASE IF EXISTS " + spec.name());
        } catch (SQLException e) {
            System.err.println("[faults] could not drop " + spec.name() + ": " + e.getMessage());
        }
    }
}
