package dev.leasehold.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.testkit.TestServices;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.Test;

/**
 * A store on a database without Leasehold's tables says so, and how to create them, at its first
 * use: one short exception naming the missing table, {@code JdbcSchema.create} and the Flyway
 * scripts' location, never the database's page of SQL. Creating the schema then makes the same
 * store work.
 */
class MissingSchemaTest {

    private static JdbcDataSource emptyDatabase() {
        JdbcDataSource h2 = new JdbcDataSource();
        h2.setURL("jdbc:h2:mem:empty-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1");
        h2.setUser("sa");
        return h2;
    }

    @Test
    void aStoreWithoutItsTablesSaysWhichIsMissingAndHowToCreateThem() throws Exception {
        JdbcDataSource dataSource = emptyDatabase();
        try (JdbcLeaseStore store = JdbcLeaseStore.builder(dataSource).build();
                LockService locks = LockService.builder(store).build()) {
            LockKey key = LockKey.of("account", "42");
            assertThatThrownBy(() -> locks.tryAcquire(key, LeaseOptions.defaults(), LockOwner.create("me")))
                    .isInstanceOf(SchemaMissingException.class)
                    .hasMessageFindingMatch("(?i)table \"?leasehold_lease\"? not found")
                    .hasMessageContaining("JdbcSchema.create(dataSource, Database.H2)")
                    .hasMessageContaining("classpath:db/leasehold/h2")
                    .satisfies(e -> assertThat(e.getMessage())
                            .doesNotContainIgnoringCase("select")
                            .doesNotContainIgnoringCase("insert")
                            .hasSizeLessThan(400));
            JdbcSchema.create(dataSource, Database.H2);
            try (var lease = locks.tryAcquire(key, LeaseOptions.defaults(), LockOwner.create("me"))
                    .orElseThrow()) {
                assertThat(lease.isHeld()).isTrue();
            }
        }
    }

    @Test
    void theStoreSaysSoForEveryOperationNotOnlyTheFirst() throws Exception {
        try (JdbcLeaseStore store = JdbcLeaseStore.builder(emptyDatabase()).build()) {
            LockKey key = LockKey.of("account", "43");
            for (int i = 0; i < 2; i++) {
                assertThatThrownBy(() -> store.tryAcquire(key, "owner", Duration.ofSeconds(5)))
                        .isInstanceOf(SchemaMissingException.class)
                        .hasMessageContaining("JdbcSchema.create");
                assertThatThrownBy(() -> store.inspect(key))
                        .isInstanceOf(SchemaMissingException.class)
                        .hasMessageContaining("JdbcSchema.create");
                assertThat(store.release(key, "owner"))
                        .as("without the table no grant exists to release")
                        .isFalse();
            }
        }
    }

    /**
     * What an operator sees in the log of a plain-Java service on a database without the tables:
     * one WARN line naming the missing table and {@code JdbcSchema.create}, from the release watcher
     * (said once until a poll succeeds, however often it polls), and no stack trace; the callers get
     * the exception. The simple logger of these tests writes to {@code System.err}, which is read here.
     */
    @Test
    void theMissingSchemaIsLoggedInOneLineOnceWithoutAStackTrace() throws Exception {
        AtomicInteger connections = new AtomicInteger();
        WrappingDataSource counted = new WrappingDataSource(emptyDatabase(), connection -> {
            connections.incrementAndGet();
            return connection;
        });
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        PrintStream original = System.err;
        System.setErr(new PrintStream(new TeeStream(original, captured), true, StandardCharsets.UTF_8));
        try (JdbcLeaseStore store = JdbcLeaseStore.builder(counted).build();
                LockService locks = LockService.builder(store).build()) {
            LockKey key = LockKey.of("account", "45");
            for (int i = 0; i < 2; i++) {
                assertThatThrownBy(() -> locks.tryAcquire(key, LeaseOptions.defaults(), LockOwner.create("me")))
                        .isInstanceOf(SchemaMissingException.class);
            }
            assertThatThrownBy(() -> store.subscribe(key, notice -> {})).isInstanceOf(SchemaMissingException.class);
            // The lock service watches for force-releases: the store's watcher polls the lease table.
            await().atMost(Duration.ofSeconds(30)).until(() -> text(captured).contains("polling for releases failed"));
            int afterTheLine = connections.get();
            // Three more polls of the watcher (one every 500 ms while the schema is missing).
            await().atMost(Duration.ofSeconds(30)).until(() -> connections.get() >= afterTheLine + 3);
        } finally {
            System.setErr(original);
        }
        List<String> lines = text(captured).lines().toList();
        assertThat(lines)
                .filteredOn(line -> line.toLowerCase(java.util.Locale.ROOT).contains("leasehold_lease"))
                .as("the missing table is logged once, in one WARN line naming the fix")
                .singleElement()
                .satisfies(line -> assertThat(line)
                        .contains("WARN dev.leasehold.jdbc.PolledReleaseWatcher")
                        .contains("JdbcSchema.create(dataSource, Database.H2)"));
        assertThat(lines)
                .as("no stack trace")
                .noneMatch(line -> line.startsWith("\tat ") || line.startsWith("Caused by:"));
        assertThat(lines)
                .as("no other warning of Leasehold")
                .filteredOn(line -> line.contains(" WARN dev.leasehold"))
                .hasSize(1);
    }

    private static String text(ByteArrayOutputStream captured) {
        synchronized (captured) {
            return captured.toString(StandardCharsets.UTF_8);
        }
    }

    /** Writes to the console as before and into the capture. */
    private static final class TeeStream extends OutputStream {
        private final OutputStream console;
        private final ByteArrayOutputStream capture;

        TeeStream(OutputStream console, ByteArrayOutputStream capture) {
            this.console = console;
            this.capture = capture;
        }

        @Override
        public void write(int b) throws IOException {
            console.write(b);
            synchronized (capture) {
                capture.write(b);
            }
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            console.write(b, off, len);
            synchronized (capture) {
                capture.write(b, off, len);
            }
        }

        @Override
        public void flush() throws IOException {
            console.flush();
        }
    }

    /** PostgreSQL and MariaDB report a missing table in their own words: the store says the same thing. */
    @Test
    void postgresAndMariaDbWithoutTheTablesSayTheSame() throws Exception {
        String name = "leasehold_empty_" + UUID.randomUUID().toString().substring(0, 8);
        TestServices.JdbcEndpoint postgres = TestServices.postgres();
        TestServices.JdbcEndpoint mariadb = TestServices.mariadb();
        try (Connection pg = DriverManager.getConnection(postgres.url(), postgres.user(), postgres.password());
                Connection maria = DriverManager.getConnection(mariadb.url(), mariadb.user(), mariadb.password())) {
            pg.createStatement().execute("CREATE SCHEMA " + name);
            maria.createStatement().execute("CREATE DATABASE " + name);
            try {
                expectMissing(
                        postgres.url() + (postgres.url().contains("?") ? "&" : "?") + "currentSchema=" + name,
                        postgres,
                        Database.POSTGRESQL);
                expectMissing(
                        mariadb.url().replaceFirst("/[^/?]*(\\?|$)", "/" + name + "$1"), mariadb, Database.MARIADB);
            } finally {
                pg.createStatement().execute("DROP SCHEMA " + name + " CASCADE");
                maria.createStatement().execute("DROP DATABASE " + name);
            }
        }
    }

    private static void expectMissing(String url, TestServices.JdbcEndpoint endpoint, Database database)
            throws Exception {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername(endpoint.user());
        config.setPassword(endpoint.password());
        config.setMaximumPoolSize(2);
        try (HikariDataSource pool = new HikariDataSource(config);
                JdbcLeaseStore store = JdbcLeaseStore.builder(pool).build()) {
            assertThatThrownBy(() -> store.tryAcquire(LockKey.of("account", "44"), "owner", Duration.ofSeconds(5)))
                    .as(database.name())
                    .isInstanceOf(SchemaMissingException.class)
                    .hasMessageContaining("leasehold_lease")
                    .hasMessageContaining("JdbcSchema.create(dataSource, Database." + database.name() + ")")
                    .hasMessageContaining("classpath:db/leasehold/" + database.id());
        }
    }
}
