package dev.leasehold.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.testkit.TestServices;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The SQL store on MariaDB. */
class MariaDbLeaseStoreTest extends AbstractJdbcLeaseStoreTest {

    @Override
    protected TestServices.JdbcEndpoint endpoint() {
        return TestServices.mariadb();
    }

    /** Polled every 50 ms at most: the bound leaves room for the poll, the acquire and a loaded machine. */
    @Override
    protected java.util.Optional<java.time.Duration> handOffBound() {
        return java.util.Optional.of(java.time.Duration.ofMillis(150));
    }

    @Override
    protected Database database() {
        return Database.MARIADB;
    }

    @Override
    protected String skewSessionTimeZone() {
        return "SET time_zone = '+13:00'"; // MariaDB's furthest offset
    }

    /** Statements counted by the server: the session's {@code Questions}, less the counting itself. */
    @Override
    protected Optional<CommandCounter> commandCounter(boolean autoCommit) {
        TestServices.JdbcEndpoint endpoint = endpoint();
        try {
            Connection connection = DriverManager.getConnection(endpoint.url(), endpoint.user(), endpoint.password());
            SingleConnectionDataSource pool = SingleConnectionDataSource.pooled(connection, autoCommit);
            JdbcLeaseStore counted =
                    JdbcLeaseStore.builder(pool).database(database()).build();
            long first = questions(connection);
            long overhead = questions(connection) - first;
            return Optional.of(new CommandCounter() {
                private long reads = 0;

                @Override
                public LeaseStore store() {
                    return counted;
                }

                @Override
                public long commands() {
                    try {
                        reads++;
                        return questions(connection) - first - reads * overhead;
                    } catch (SQLException e) {
                        throw new IllegalStateException(e);
                    }
                }

                @Override
                public void close() {
                    try {
                        connection.close();
                    } catch (SQLException e) {
                        throw new IllegalStateException(e);
                    }
                }
            });
        } catch (SQLException e) {
            throw new IllegalStateException("cannot count statements on " + endpoint.url(), e);
        }
    }

    /**
     * With nobody waiting, a release builds no temporary table on the server: the release that
     * hands the key to the head of its queue and ends the releaser's own place updates two tables,
     * which MariaDB does through a temporary table (on disk for these keys) and a materialized
     * derived table; an owner that never queued has no place to end, and its release updates the
     * lease row alone. Counted by the session's {@code Created_tmp_tables} around each release.
     */
    @Test
    void aReleaseWithNobodyWaitingBuildsNoTemporaryTable() throws Exception {
        TestServices.JdbcEndpoint endpoint = endpoint();
        try (Connection connection = DriverManager.getConnection(endpoint.url(), endpoint.user(), endpoint.password());
                JdbcLeaseStore single = JdbcLeaseStore.builder(SingleConnectionDataSource.pooled(connection, true))
                        .database(database())
                        .releaseNotifications(false)
                        .build()) {
            LockKey key = key("no-temp");
            for (int round = 0; round < 3; round++) {
                String owner = LockOwner.create("t").token();
                assertThat(single.tryAcquire(key, owner, Duration.ofSeconds(30)))
                        .isInstanceOf(AcquireResult.Granted.class);
                long before = temporaryTables(connection);
                assertThat(single.release(key, owner)).isTrue();
                assertThat(temporaryTables(connection) - before)
                        .as("temporary tables of a release with nobody waiting")
                        .isZero();
            }
        }
    }

    private static long temporaryTables(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement();
                ResultSet row = statement.executeQuery("SHOW SESSION STATUS LIKE 'Created_tmp_tables'")) {
            row.next();
            return row.getLong(2);
        }
    }

    /** The session's Questions counter; with autocommit off, whatever the read opened is rolled back. */
    private static long questions(Connection connection) throws SQLException {
        long value;
        try (Statement statement = connection.createStatement();
                ResultSet row = statement.executeQuery("SHOW SESSION STATUS LIKE 'Questions'")) {
            row.next();
            value = row.getLong(2);
        }
        if (!connection.getAutoCommit()) {
            connection.rollback();
        }
        return value;
    }

    /** MariaDB's driver switches autocommit with a round trip, so the store commits instead. */
    @Override
    protected int statementsPerOperationWithAutocommitOff() {
        return 2;
    }

    /**
     * One holder renewing as fast as it can and eight acquirers polling the same key for ten seconds
     * (override with {@code -Dleasehold.contention.seconds}): no operation fails, so a waiter behind
     * {@code @Locked} waits instead of answering 500. The server's deadlock counter is printed.
     */
    @Test
    void mariaDbWaitersNeverFailOnDeadlock() throws Exception {
        LockKey key = key("contended");
        long seconds = Long.getLong("leasehold.contention.seconds", 10);
        String holder = LockOwner.create("holder").token();
        assertThat(store.tryAcquire(key, holder, Duration.ofSeconds(30))).isInstanceOf(AcquireResult.Granted.class);
        long deadlocksBefore = innodbDeadlocks();
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        Map<String, AtomicInteger> errors = new ConcurrentHashMap<>();
        AtomicLong renewals = new AtomicLong();
        AtomicLong attempts = new AtomicLong();
        ExecutorService threads = Executors.newFixedThreadPool(9);
        try {
            List<Future<?>> done = new ArrayList<>();
            done.add(threads.submit(() -> {
                while (System.nanoTime() < end) {
                    try {
                        assertThat(store.renew(key, holder, Duration.ofSeconds(30)))
                                .isPresent();
                        renewals.incrementAndGet();
                    } catch (RuntimeException e) {
                        errors.computeIfAbsent(rootMessage(e), m -> new AtomicInteger())
                                .incrementAndGet();
                    }
                }
                return null;
            }));
            for (int i = 0; i < 8; i++) {
                String owner = LockOwner.create("waiter").token();
                done.add(threads.submit(() -> {
                    while (System.nanoTime() < end) {
                        try {
                            assertThat(store.tryAcquire(key, owner, Duration.ofSeconds(30)))
                                    .isInstanceOf(AcquireResult.Busy.class);
                            attempts.incrementAndGet();
                        } catch (RuntimeException e) {
                            errors.computeIfAbsent(rootMessage(e), m -> new AtomicInteger())
                                    .incrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(seconds + 60, TimeUnit.SECONDS);
            }
        } finally {
            threads.shutdownNow();
        }
        long deadlocks = innodbDeadlocks() - deadlocksBefore;
        System.out.printf(
                "mariaDbWaitersNeverFailOnDeadlock: %d s, %d renewals, %d busy acquires, %d server deadlocks, errors %s%n",
                seconds, renewals.get(), attempts.get(), deadlocks, errors);
        assertThat(errors).as("store errors").isEmpty();
        assertThat(renewals.get()).isPositive();
        assertThat(attempts.get()).isPositive();
        assertThat(store.release(key, holder)).isTrue();
    }

    /**
     * Housekeeping never waits for (nor locks) a live lease's row: with another session holding a
     * live row locked and this session willing to wait 2 s for a lock, the expired row is deleted
     * at once.
     */
    @Test
    void deleteExpiredLocksNoLiveRow() throws Exception {
        LockKey live = key("live");
        String owner = LockOwner.create("t").token();
        assertThat(store.tryAcquire(live, owner, Duration.ofSeconds(60))).isInstanceOf(AcquireResult.Granted.class);
        LockKey old = key("old");
        assertThat(store.tryAcquire(old, owner, Duration.ofSeconds(60))).isInstanceOf(AcquireResult.Granted.class);
        assertThat(store.release(old, owner)).isTrue();
        try (Connection connection = dataSource().getConnection();
                java.sql.PreparedStatement statement = connection.prepareStatement(
                        "UPDATE leasehold_lease SET expires_at_ms = 1 WHERE lock_key = ?")) {
            statement.setString(1, old.render());
            statement.executeUpdate();
        }
        String[] settings = connectionSettings();
        try (Connection locker = freshConnection();
                com.zaxxer.hikari.HikariDataSource impatient = pool(
                        settings[0],
                        settings[1],
                        settings[2],
                        database(),
                        "SET SESSION innodb_lock_wait_timeout = 2")) {
            locker.setAutoCommit(false);
            try (java.sql.PreparedStatement lock =
                    locker.prepareStatement("SELECT fence FROM leasehold_lease WHERE lock_key = ? FOR UPDATE")) {
                lock.setString(1, live.render());
                lock.executeQuery().close();
            }
            JdbcLeaseStore housekeeping =
                    JdbcLeaseStore.builder(impatient).database(database()).build();
            long start = System.nanoTime();
            int deleted = 0;
            int batch;
            do {
                batch = housekeeping.deleteExpired(Duration.ofMinutes(1), 1000);
                deleted += batch;
            } while (batch == 1000);
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            assertThat(deleted).isPositive();
            assertThat(took).as("deleteExpired waited for a locked live row").isLessThan(Duration.ofSeconds(2));
            locker.rollback();
        }
        assertThat(rawLease(live)).isPresent();
    }

    /**
     * Keys and owner tokens are compared byte for byte (NO PAD): with utf8mb4_bin, a PAD SPACE
     * collation, 'w1' and 'w1 ' were one owner. The shared pool's schema went through {@link
     * JdbcSchema#create}, which converts tables made by the first version.
     */
    @Test
    void keyAndOwnerColumnsCompareByteForByte() throws SQLException {
        Map<String, String> collations = new java.util.TreeMap<>();
        try (Connection connection = dataSource().getConnection();
                Statement statement = connection.createStatement();
                ResultSet row = statement.executeQuery("SELECT TABLE_NAME, COLUMN_NAME, COLLATION_NAME"
                        + " FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()"
                        + " AND TABLE_NAME IN ('leasehold_lease', 'leasehold_fence')"
                        + " AND COLUMN_NAME IN ('lock_key', 'owner_token', 'resource', 'owner_digest')")) {
            while (row.next()) {
                collations.put(row.getString(1) + "." + row.getString(2), row.getString(3));
            }
        }
        assertThat(collations)
                .containsOnlyKeys(
                        "leasehold_fence.owner_digest",
                        "leasehold_fence.resource",
                        "leasehold_lease.lock_key",
                        "leasehold_lease.owner_token")
                .allSatisfy(
                        (column, collation) -> assertThat(collation).as(column).isEqualTo("utf8mb4_nopad_bin"));
    }

    private long innodbDeadlocks() throws SQLException {
        try (Connection connection = dataSource().getConnection();
                Statement statement = connection.createStatement();
                ResultSet row = statement.executeQuery("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'")) {
            return row.next() ? row.getLong(2) : 0;
        }
    }

    private static String rootMessage(Throwable e) {
        Throwable cause = e;
        while (cause.getCause() != null) {
            cause = cause.getCause();
        }
        String message = String.valueOf(cause.getMessage());
        return message.length() > 80 ? message.substring(0, 80) : message;
    }
}
