package dev.leasehold.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.LockKey;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.testkit.TestServices;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * On PostgreSQL every lease statement finds its key through the primary key, even on a table the
 * planner has no statistics for. The case that matters: a service locks each order id once, its
 * statements were prepared (and their generic plans cached) while the table was nearly empty, and
 * the table then grew with nobody analyzing it (autovacuum off). A statement that joined the key
 * from its CTE row scanned the whole table for every new key, so each new key cost O(rows).
 *
 * <p>Scans are read from {@code pg_stat_user_tables} of a private schema, after the store's one
 * connection was asked to flush its counters and a marker table's scan shows they arrived.
 */
class KeyedAccessTest {

    private static final int ROWS = 20_000;
    private static final int FRESH_KEYS = 300;

    @Test
    void newKeysOnAGrownTableAreFoundByThePrimaryKeyNotByScanningTheTable() throws Exception {
        TestServices.JdbcEndpoint postgres = TestServices.postgres();
        String schema = "leasehold_keyed_" + UUID.randomUUID().toString().substring(0, 8);
        String url = postgres.url() + (postgres.url().contains("?") ? "&" : "?") + "currentSchema=" + schema;
        try (Connection admin = DriverManager.getConnection(postgres.url(), postgres.user(), postgres.password())) {
            admin.createStatement().execute("CREATE SCHEMA " + schema);
            try (Connection storeConnection = DriverManager.getConnection(url, postgres.user(), postgres.password());
                    Connection observer = DriverManager.getConnection(url, postgres.user(), postgres.password())) {
                SingleConnectionDataSource dataSource = SingleConnectionDataSource.pooled(storeConnection, true);
                JdbcSchema.create(dataSource, Database.POSTGRESQL);
                try (Statement setup = observer.createStatement()) {
                    setup.execute("ALTER TABLE leasehold_lease SET (autovacuum_enabled = false)");
                    setup.execute("ALTER TABLE leasehold_waiter SET (autovacuum_enabled = false)");
                    setup.execute("CREATE TABLE keyed_marker (id INT)");
                }
                try (JdbcLeaseStore store = JdbcLeaseStore.builder(dataSource)
                        .database(Database.POSTGRESQL)
                        .releaseNotifications(false)
                        .build()) {
                    // Prepared and planned on the near-empty table: past the driver's and the
                    // server's thresholds, the statements run on cached generic plans.
                    for (int i = 0; i < 20; i++) {
                        LockKey warm = LockKey.of("order", "warm-" + (i % 2));
                        assertThat(store.tryAcquire(warm, "owner", Duration.ofSeconds(30)))
                                .isInstanceOf(AcquireResult.Granted.class);
                        assertThat(store.release(warm, "owner")).isTrue();
                    }
                    try (Statement grow = observer.createStatement()) {
                        grow.executeUpdate("INSERT INTO leasehold_lease"
                                + " (lock_key, owner_token, fence, expires_at_ms, acquired_at_ms, holder)"
                                + " SELECT 'order:old-' || g, NULL, g, 0, 0, NULL FROM generate_series(1, "
                                + ROWS + ") g");
                    }
                    Scans before = settled(storeConnection, observer, schema, 1);
                    for (int i = 0; i < FRESH_KEYS; i++) {
                        LockKey fresh = LockKey.of("order", "new-" + i);
                        assertThat(store.tryAcquire(fresh, "owner", Duration.ofSeconds(30)))
                                .isInstanceOf(AcquireResult.Granted.class);
                        assertThat(store.release(fresh, "owner")).isTrue();
                    }
                    Scans after = settled(storeConnection, observer, schema, 2);
                    assertThat(after.index() - before.index())
                            .as("index scans of leasehold_lease for %d acquire-and-release pairs", FRESH_KEYS)
                            .isGreaterThanOrEqualTo(FRESH_KEYS);
                    assertThat(after.sequential() - before.sequential())
                            .as("sequential scans of leasehold_lease (%d rows) for %d new keys", ROWS, FRESH_KEYS)
                            .isZero();
                }
            } finally {
                admin.createStatement().execute("DROP SCHEMA " + schema + " CASCADE");
            }
        }
    }

    private record Scans(long sequential, long index) {}

    /**
     * The lease table's scans once everything the store's connection did so far is counted: the
     * connection scans the marker table (its {@code marks}-th scan) and flushes its counters; they
     * arrive together, so the marker's count shows when.
     */
    private static Scans settled(Connection storeConnection, Connection observer, String schema, int marks)
            throws SQLException {
        try (Statement flush = storeConnection.createStatement()) {
            flush.execute("SELECT count(*) FROM keyed_marker");
            flush.execute("SELECT pg_stat_force_next_flush()");
        }
        Awaitility.await("the store connection's table counters to reach pg_stat_user_tables")
                .atMost(Duration.ofSeconds(30))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> markerScans(observer, schema) >= marks);
        return scans(observer, schema);
    }

    private static Scans scans(Connection observer, String schema) throws SQLException {
        try (PreparedStatement read = observer.prepareStatement("SELECT seq_scan, COALESCE(idx_scan, 0)"
                + " FROM pg_stat_user_tables WHERE schemaname = ? AND relname = 'leasehold_lease'")) {
            read.setString(1, schema);
            try (ResultSet row = read.executeQuery()) {
                assertThat(row.next())
                        .as("statistics of %s.leasehold_lease", schema)
                        .isTrue();
                return new Scans(row.getLong(1), row.getLong(2));
            }
        }
    }

    private static long markerScans(Connection observer, String schema) throws SQLException {
        try (PreparedStatement read = observer.prepareStatement(
                "SELECT seq_scan FROM pg_stat_user_tables WHERE schemaname = ? AND relname = 'keyed_marker'")) {
            read.setString(1, schema);
            try (ResultSet row = read.executeQuery()) {
                return row.next() ? row.getLong(1) : 0;
            }
        }
    }
}
