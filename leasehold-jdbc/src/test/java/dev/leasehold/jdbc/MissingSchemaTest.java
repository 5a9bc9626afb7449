package dev.leasehold.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.testkit.TestServices;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.UUID;
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
