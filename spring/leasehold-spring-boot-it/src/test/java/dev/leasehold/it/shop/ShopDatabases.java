package dev.leasehold.it.shop;

import dev.leasehold.testkit.TestServices;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.UUID;
import java.util.function.Supplier;
import org.h2.tools.Server;
import org.springframework.test.context.DynamicPropertyRegistry;

/** The shop's databases: one a JVM can share with a child JVM. */
record ShopDatabases(String url, String user, String password) {

    /** An in-memory H2 database behind a TCP server in this JVM (it outlives a killed child). */
    static final ShopDatabases H2 = h2();

    /** A fresh schema on the PostgreSQL the tests find. */
    static final Supplier<ShopDatabases> POSTGRES = new Supplier<>() {
        private ShopDatabases created;

        @Override
        public synchronized ShopDatabases get() {
            if (created == null) {
                created = postgres();
            }
            return created;
        }
    };

    /** A fresh database on the MariaDB the tests find. */
    static final Supplier<ShopDatabases> MARIADB = new Supplier<>() {
        private ShopDatabases created;

        @Override
        public synchronized ShopDatabases get() {
            if (created == null) {
                created = mariadb();
            }
            return created;
        }
    };

    /** The engine, as the JDBC URL names it: {@code h2}, {@code postgresql} or {@code mariadb}. */
    String engine() {
        return url.substring("jdbc:".length(), url.indexOf(':', "jdbc:".length()));
    }

    void register(DynamicPropertyRegistry registry) {
        registry.add("spring.datasource.url", this::url);
        registry.add("spring.datasource.username", this::user);
        registry.add("spring.datasource.password", this::password);
    }

    /** The same settings as command-line arguments for a child JVM. */
    List<String> arguments() {
        return List.of(
                "--spring.datasource.url=" + url,
                "--spring.datasource.username=" + user,
                "--spring.datasource.password=" + password);
    }

    private static ShopDatabases h2() {
        int port = freePort();
        try {
            Server.createTcpServer("-tcpPort", String.valueOf(port), "-ifNotExists", "-tcpDaemon")
                    .start();
        } catch (SQLException e) {
            throw new IllegalStateException("cannot start the H2 TCP server", e);
        }
        return new ShopDatabases("jdbc:h2:tcp://127.0.0.1:" + port + "/mem:shop;DB_CLOSE_DELAY=-1", "sa", "");
    }

    private static ShopDatabases postgres() {
        TestServices.JdbcEndpoint postgres = TestServices.postgres();
        String schema =
                "lh_shop_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        try (Connection c = DriverManager.getConnection(postgres.url(), postgres.user(), postgres.password());
                Statement s = c.createStatement()) {
            s.execute("CREATE SCHEMA " + schema);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot create schema " + schema, e);
        }
        String separator = postgres.url().contains("?") ? "&" : "?";
        return new ShopDatabases(
                postgres.url() + separator + "currentSchema=" + schema, postgres.user(), postgres.password());
    }

    private static ShopDatabases mariadb() {
        TestServices.JdbcEndpoint mariadb = TestServices.mariadb();
        String database =
                "lh_shop_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        try (Connection c = DriverManager.getConnection(mariadb.url(), mariadb.user(), mariadb.password());
                Statement s = c.createStatement()) {
            s.execute("CREATE DATABASE " + database);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot create database " + database, e);
        }
        int slash = mariadb.url().lastIndexOf('/');
        int query = mariadb.url().indexOf('?', slash);
        String url = mariadb.url().substring(0, slash + 1)
                + database
                + (query < 0 ? "" : mariadb.url().substring(query));
        return new ShopDatabases(url, mariadb.user(), mariadb.password());
    }

    static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
