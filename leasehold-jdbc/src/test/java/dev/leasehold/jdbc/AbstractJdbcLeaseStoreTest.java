package dev.leasehold.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.LeaseInfo;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.testkit.LeaseStoreConformance;
import dev.leasehold.testkit.RawLease;
import dev.leasehold.testkit.TestServices;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.TimeZone;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The SQL store on one database: the shared conformance suite, plus what only SQL has: fenced
 * writes, connections killed by the server, skewed time zones and housekeeping. Subclasses say
 * how to reach the database and how to kill a connection from the server side.
 */
abstract class AbstractJdbcLeaseStoreTest extends LeaseStoreConformance {

    /** Where the database answers (resolved on first use, so a missing server skips each test). */
    protected abstract TestServices.JdbcEndpoint endpoint();

    protected abstract Database database();

    /** A statement that moves a session's time zone far from UTC. */
    protected abstract String skewSessionTimeZone();

    private static final Map<String, HikariDataSource> POOLS = new ConcurrentHashMap<>();

    /** The shared pool of this database, with the schema created. */
    protected DataSource dataSource() {
        TestServices.JdbcEndpoint endpoint = endpoint();
        return POOLS.computeIfAbsent(
                endpoint.url(), url -> pool(url, endpoint.user(), endpoint.password(), database(), null));
    }

    @AfterAll
    static void closePools() {
        POOLS.values().forEach(HikariDataSource::close);
        POOLS.clear();
    }

    /** JDBC URL, user and password for a fresh connection outside the pool. */
    private String[] connectionSettings() {
        TestServices.JdbcEndpoint endpoint = endpoint();
        return new String[] {endpoint.url(), endpoint.user(), endpoint.password()};
    }

    private void killFromServer(Connection victim) throws SQLException {
        try (Connection admin = dataSource().getConnection()) {
            TestServices.killFromServer(victim, admin);
        }
    }

    static HikariDataSource pool(String url, String user, String password, Database database, String initSql) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(12);
        config.setPoolName("leasehold-test-" + database.id());
        if (initSql != null) {
            config.setConnectionInitSql(initSql);
        }
        HikariDataSource dataSource = new HikariDataSource(config);
        try {
            JdbcSchema.create(dataSource, database);
            try (Connection connection = dataSource.getConnection();
                    Statement statement = connection.createStatement()) {
                statement.execute("CREATE TABLE IF NOT EXISTS leasehold_test_account ("
                        + "id VARCHAR(64) NOT NULL PRIMARY KEY, balance BIGINT NOT NULL)");
            }
        } catch (SQLException e) {
            dataSource.close();
            throw new IllegalStateException("cannot create the schema on " + url, e);
        }
        return dataSource;
    }

    @Override
    protected LeaseStore createStore() {
        return JdbcLeaseStore.builder(dataSource()).database(database()).build();
    }

    @Override
    protected Optional<RawLease> rawLease(LockKey key) {
        try (Connection connection = dataSource().getConnection();
                PreparedStatement statement = connection.prepareStatement(
                        "SELECT owner_token, fence FROM leasehold_lease WHERE lock_key = ? AND owner_token IS NOT NULL"
                                + " AND expires_at_ms > 0")) {
            statement.setString(1, key.render());
            try (ResultSet row = statement.executeQuery()) {
                return row.next() ? Optional.of(new RawLease(row.getString(1), row.getLong(2))) : Optional.empty();
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private Connection freshConnection() throws SQLException {
        String[] settings = connectionSettings();
        return DriverManager.getConnection(settings[0], settings[1], settings[2]);
    }

    private static long grantedFence(AcquireResult result) {
        assertThat(result).isInstanceOf(AcquireResult.Granted.class);
        return ((AcquireResult.Granted) result).grant().fence();
    }

    // ------------------------------------------------------------------ fenced writes

    @Test
    void pausedHolderLateWriteIsRejectedByTheFence() throws Exception {
        LockKey key = key("account");
        String account = "acct-" + UUID.randomUUID();
        insertAccount(account, 0);
        FencedUpdate fenced = FencedUpdate.on(dataSource(), database());

        // A takes the lease, then "pauses" (GC, VM stop) past its expiry without renewing.
        String paused = LockOwner.create("paused").token();
        long pausedFence = grantedFence(store.tryAcquire(key, paused, shortLease()));

        // B takes over once the database says A's lease expired, and writes.
        String next = LockOwner.create("next").token();
        long[] nextFence = new long[1];
        await().atMost(Duration.ofSeconds(10)).until(() -> {
            AcquireResult result = store.tryAcquire(key, next, Duration.ofSeconds(30));
            if (result instanceof AcquireResult.Granted granted) {
                nextFence[0] = granted.grant().fence();
                return true;
            }
            return false;
        });
        assertThat(nextFence[0]).isGreaterThan(pausedFence);
        fenced.run(account, nextFence[0], c -> setBalance(c, account, 100));

        // A wakes up and writes with its old fence: refused, nothing written.
        assertThatThrownBy(() -> fenced.run(account, pausedFence, c -> setBalance(c, account, 50)))
                .isInstanceOf(StaleFenceException.class)
                .hasMessageContaining(account)
                .hasMessageContaining(String.valueOf(pausedFence));
        assertThat(balance(account)).isEqualTo(100);

        // The holder of the newest fence may write again.
        fenced.run(account, nextFence[0], c -> setBalance(c, account, 120));
        assertThat(balance(account)).isEqualTo(120);

        // Canary: without the fence the paused holder's write would have landed.
        try (Connection connection = dataSource().getConnection()) {
            setBalance(connection, account, 50);
        }
        assertThat(balance(account)).isEqualTo(50);
    }

    @Test
    void fencedWriteOutsideATransactionIsRefused() throws SQLException {
        FencedUpdate fenced = FencedUpdate.on(dataSource(), database());
        try (Connection connection = dataSource().getConnection()) {
            connection.setAutoCommit(true);
            assertThatThrownBy(() -> fenced.tryAccept(connection, "acct-x", 5))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("transaction");
        }
        assertThatThrownBy(() -> fenced.run(" ", 5, c -> null)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> fenced.run("acct-x", 0, c -> null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("was 0");
    }

    private void insertAccount(String id, long balance) throws SQLException {
        try (Connection connection = dataSource().getConnection();
                PreparedStatement statement =
                        connection.prepareStatement("INSERT INTO leasehold_test_account (id, balance) VALUES (?, ?)")) {
            statement.setString(1, id);
            statement.setLong(2, balance);
            statement.executeUpdate();
        }
    }

    private static int setBalance(Connection connection, String id, long balance) throws SQLException {
        try (PreparedStatement statement =
                connection.prepareStatement("UPDATE leasehold_test_account SET balance = ? WHERE id = ?")) {
            statement.setLong(1, balance);
            statement.setString(2, id);
            return statement.executeUpdate();
        }
    }

    private long balance(String id) throws SQLException {
        try (Connection connection = dataSource().getConnection();
                PreparedStatement statement =
                        connection.prepareStatement("SELECT balance FROM leasehold_test_account WHERE id = ?")) {
            statement.setString(1, id);
            try (ResultSet row = statement.executeQuery()) {
                assertThat(row.next()).isTrue();
                return row.getLong(1);
            }
        }
    }

    // ------------------------------------------------------------------ lost connections

    @Test
    void connectionKilledByTheServerIsATypedExceptionAndLeavesNoState() throws SQLException {
        LockKey key = key("killed");
        try (Connection victim = freshConnection()) {
            JdbcLeaseStore onVictim = JdbcLeaseStore.builder(new SingleConnectionDataSource(victim))
                    .database(database())
                    .build();
            killFromServer(victim);
            assertThatThrownBy(
                            () -> onVictim.tryAcquire(key, LockOwner.create("t").token(), Duration.ofSeconds(30)))
                    .isInstanceOf(LeaseStoreException.class)
                    .hasMessageContaining("acquire")
                    .hasMessageContaining(key.render());
        }
        assertThat(rawLease(key)).isEmpty();
        assertThat(store.tryAcquire(key, LockOwner.create("t").token(), Duration.ofSeconds(30)))
                .isInstanceOf(AcquireResult.Granted.class);
    }

    @Test
    void connectionKilledInsideTheCallersTransactionLeavesNothingHalfWritten() throws SQLException {
        LockKey key = key("half-written");
        try (Connection victim = freshConnection()) {
            victim.setAutoCommit(false);
            JdbcLeaseStore inTransaction = JdbcLeaseStore.builder(new SingleConnectionDataSource(victim))
                    .database(database())
                    .joinCallerTransaction(true)
                    .build();
            grantedFence(inTransaction.tryAcquire(key, LockOwner.create("t").token(), Duration.ofSeconds(30)));
            assertThat(rawLease(key)).as("not visible before commit").isEmpty();

            killFromServer(victim);
        }
        assertThat(rawLease(key)).as("rolled back with the killed session").isEmpty();
        await().atMost(Duration.ofSeconds(10))
                .until(() -> store.tryAcquire(key, LockOwner.create("t").token(), Duration.ofSeconds(30))
                        instanceof AcquireResult.Granted);
    }

    // ------------------------------------------------------------------ clocks

    @Test
    void skewedJvmAndSessionTimeZonesChangeNothing() throws Exception {
        TimeZone original = TimeZone.getDefault();
        TimeZone.setDefault(TimeZone.getTimeZone("Pacific/Kiritimati")); // UTC+14
        String[] settings = connectionSettings();
        try (HikariDataSource skewed = pool(settings[0], settings[1], settings[2], database(), skewSessionTimeZone())) {
            JdbcLeaseStore skewedStore =
                    JdbcLeaseStore.builder(skewed).database(database()).build();
            LockKey key = key("skewed");
            String owner = LockOwner.create("skewed").token();
            grantedFence(skewedStore.tryAcquire(key, owner, Duration.ofSeconds(30)));

            LeaseInfo seenFromUtc = store.inspect(key).orElseThrow();
            LeaseInfo seenFromSkew = skewedStore.inspect(key).orElseThrow();
            assertThat(seenFromUtc.remaining()).isBetween(Duration.ofSeconds(20), Duration.ofSeconds(30));
            assertThat(seenFromSkew.expiresAt()).isEqualTo(seenFromUtc.expiresAt());
            assertThat(store.tryAcquire(key, LockOwner.create("other").token(), Duration.ofSeconds(30)))
                    .isInstanceOf(AcquireResult.Busy.class);

            LockKey shortKey = key("skewed-short");
            grantedFence(skewedStore.tryAcquire(shortKey, owner, shortLease()));
            String other = LockOwner.create("other").token();
            await().atMost(Duration.ofSeconds(10))
                    .until(() ->
                            store.tryAcquire(shortKey, other, Duration.ofSeconds(30)) instanceof AcquireResult.Granted);
        } finally {
            TimeZone.setDefault(original);
        }
    }

    // ------------------------------------------------------------------ housekeeping

    @Test
    void deletingExpiredRowsNeverMakesAFenceGoBackwards() throws SQLException {
        JdbcLeaseStore jdbc = (JdbcLeaseStore) store;
        LockKey old = key("old");
        String owner = LockOwner.create("t").token();
        long before = grantedFence(jdbc.tryAcquire(old, owner, Duration.ofSeconds(30)));
        jdbc.release(old, owner);
        LockKey held = key("held");
        grantedFence(jdbc.tryAcquire(held, owner, Duration.ofSeconds(30)));
        try (Connection connection = dataSource().getConnection();
                PreparedStatement statement = connection.prepareStatement(
                        "UPDATE leasehold_lease SET expires_at_ms = 1 WHERE lock_key = ?")) {
            statement.setString(1, old.render()); // ended in 1970: long past any retention
            statement.executeUpdate();
        }

        int deleted = 0;
        int batch;
        do {
            batch = jdbc.deleteExpired(Duration.ofMinutes(1), 2);
            deleted += batch;
        } while (batch == 2);
        assertThat(deleted).isGreaterThanOrEqualTo(1);
        assertThat(rowExists(old)).isFalse();
        assertThat(rawLease(held)).as("a live lease is never deleted").isPresent();

        long after = grantedFence(jdbc.tryAcquire(old, LockOwner.create("t").token(), Duration.ofSeconds(30)));
        assertThat(after).isGreaterThan(before);
        assertThatThrownBy(() -> jdbc.deleteExpired(Duration.ofSeconds(5), 10))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("PT5S");
    }

    private boolean rowExists(LockKey key) throws SQLException {
        try (Connection connection = dataSource().getConnection();
                PreparedStatement statement =
                        connection.prepareStatement("SELECT 1 FROM leasehold_lease WHERE lock_key = ?")) {
            statement.setString(1, key.render());
            try (ResultSet row = statement.executeQuery()) {
                return row.next();
            }
        }
    }

    @Test
    void eachOperationIsOneStatementAndAcquireIsVisibleToOtherConnectionsAtOnce() {
        LockKey key = key("visible");
        String owner = LockOwner.create("t").token();
        long fence = grantedFence(store.tryAcquire(key, owner, Duration.ofSeconds(30)));
        assertThat(rawLease(key)).contains(new RawLease(owner, fence));
        assertThat(store.name()).isEqualTo(database().id());
        assertThat(LeaseOptions.defaults().leaseFor()).isPositive();
    }
}
