package dev.leasehold.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spi.ReleaseSubscription;
import dev.leasehold.testkit.TestServices;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The SQL store on PostgreSQL. */
class PostgresLeaseStoreTest extends AbstractJdbcLeaseStoreTest {

    @Override
    protected TestServices.JdbcEndpoint endpoint() {
        return TestServices.postgres();
    }

    @Override
    protected Database database() {
        return Database.POSTGRESQL;
    }

    @Override
    protected String skewSessionTimeZone() {
        return "SET TIME ZONE 'Pacific/Kiritimati'";
    }
    /**
     * A schema of 1.1 to 1.3 has the expiry index; creating the schema again (1.4) drops it, so
     * that no index covers a column an acquire or a release changes (PostgreSQL can then update the
     * row in place, a heap-only tuple), and leases work as before.
     */
    @Test
    void anEarlierSchemasExpiryIndexIsDroppedByTheSchemaOfThisVersion() throws Exception {
        try (Connection connection = dataSource().getConnection();
                java.sql.Statement statement = connection.createStatement()) {
            statement.execute("CREATE INDEX IF NOT EXISTS leasehold_lease_expiry ON leasehold_lease (expires_at_ms)");
        }
        assertThat(indexedColumns()).as("as 1.1 left it").contains("expires_at_ms");

        JdbcSchema.create(dataSource(), Database.POSTGRESQL);

        assertThat(indexedColumns()).as("after 1.4").containsOnly("lock_key");
        LockKey key = key("in-place");
        String owner = LockOwner.create("t").token();
        long fence = ((AcquireResult.Granted) store.tryAcquire(key, owner, Duration.ofSeconds(30)))
                .grant()
                .fence();
        assertThat(store.release(key, owner)).isTrue();
        assertThat(((AcquireResult.Granted) store.tryAcquire(key, owner, Duration.ofSeconds(30)))
                        .grant()
                        .fence())
                .isGreaterThan(fence);
        assertThat(store.release(key, owner)).isTrue();
    }

    /** LISTEN/NOTIFY: the waiter is woken when the release commits. */
    @Override
    protected Optional<java.time.Duration> handOffBound() {
        return Optional.of(java.time.Duration.ofMillis(100));
    }

    @Override
    protected ReleaseChannel listenToReleases() throws java.sql.SQLException {
        TestServices.JdbcEndpoint endpoint = endpoint();
        Connection connection = DriverManager.getConnection(endpoint.url(), endpoint.user(), endpoint.password());
        try (java.sql.Statement statement = connection.createStatement()) {
            statement.execute("LISTEN " + PostgresDialect.CHANNEL);
        }
        org.postgresql.PGConnection listening = connection.unwrap(org.postgresql.PGConnection.class);
        return new ReleaseChannel() {
            @Override
            public java.util.List<String> receivedUntilForceReleaseOf(dev.leasehold.LockKey sentinel)
                    throws java.sql.SQLException {
                java.util.List<String> payloads = new java.util.ArrayList<>();
                long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
                while (System.nanoTime() < deadline) {
                    org.postgresql.PGNotification[] received = listening.getNotifications(100);
                    for (org.postgresql.PGNotification notification :
                            received == null ? new org.postgresql.PGNotification[0] : received) {
                        payloads.add(notification.getParameter());
                        if (notification.getParameter().startsWith("f:")
                                && notification.getParameter().endsWith(":" + sentinel.render())) {
                            return payloads;
                        }
                    }
                }
                throw new AssertionError("the force-release of " + sentinel + " was not notified: " + payloads);
            }

            @Override
            public void close() throws java.sql.SQLException {
                connection.close();
            }
        };
    }

    /** Round trips counted by a relay at the server's door (PostgreSQL has no session statement counter). */
    @Override
    protected Optional<CommandCounter> commandCounter(boolean autoCommit) {
        TestServices.JdbcEndpoint endpoint = endpoint();
        try {
            java.net.URI uri = java.net.URI.create(endpoint.url().substring("jdbc:".length()));
            PostgresRoundTripCounter relay =
                    new PostgresRoundTripCounter(uri.getHost(), uri.getPort() > 0 ? uri.getPort() : 5432);
            String url = relay.relayUrl(endpoint.url());
            url += (url.contains("?") ? "&" : "?") + "sslmode=disable";
            Connection connection = DriverManager.getConnection(url, endpoint.user(), endpoint.password());
            JdbcLeaseStore counted = JdbcLeaseStore.builder(SingleConnectionDataSource.pooled(connection, autoCommit))
                    .database(database())
                    .releaseNotifications(false)
                    .build();
            return Optional.of(new CommandCounter() {
                @Override
                public LeaseStore store() {
                    return counted;
                }

                @Override
                public long commands() {
                    return relay.roundTrips();
                }

                @Override
                public void close() {
                    try (relay;
                            connection) {
                        counted.close();
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                }
            });
        } catch (Exception e) {
            throw new IllegalStateException("cannot count round trips to " + endpoint.url(), e);
        }
    }
    /**
     * A release decides whether to notify from its statement's snapshot. One already running when a
     * waiter's watch commits did not see the watch: the subscription waits for it, so the waiter's
     * next ask sees the key it freed (before, that ask was refused and no notification came).
     */
    @Test
    void aReleaseRunningWhileAWaiterSubscribesIsSeenByTheWaitersNextAsk() throws Exception {
        TestServices.JdbcEndpoint endpoint = endpoint();
        LockKey key = LockKey.of("pg-watch-race", "k" + System.nanoTime());
        String holder = LockOwner.create("holder").token();
        String waiter = LockOwner.create("waiter").token();
        JdbcLeaseStore releasing =
                JdbcLeaseStore.builder(dataSource()).database(database()).build();
        JdbcLeaseStore waiting =
                JdbcLeaseStore.builder(dataSource()).database(database()).build();
        try (Connection release = DriverManager.getConnection(endpoint.url(), endpoint.user(), endpoint.password());
                Connection observer =
                        DriverManager.getConnection(endpoint.url(), endpoint.user(), endpoint.password())) {
            assertThat(releasing.tryAcquire(key, holder, Duration.ofSeconds(30)))
                    .isInstanceOf(AcquireResult.Granted.class);
            release.setAutoCommit(false);
            try (PreparedStatement statement = PostgresDialect.SQL
                    .get(SqlDialect.Op.RELEASE)
                    .prepare(release, Map.of("key", key.render(), "owner", holder))) {
                statement.execute(); // the release runs: its snapshot has no watch, it holds the row
            }
            CountDownLatch notified = new CountDownLatch(1);
            CompletableFuture<ReleaseSubscription> subscribed =
                    CompletableFuture.supplyAsync(() -> waiting.subscribe(key, notice -> notified.countDown()));
            // the waiter asks again as soon as its subscription returns, as the engine does
            CompletableFuture<AcquireResult> asked =
                    subscribed.thenApply(s -> waiting.tryAcquire(key, waiter, Duration.ofSeconds(30)));
            // its watch is committed and a statement waits on the release's row lock
            await().atMost(Duration.ofSeconds(10)).until(() -> watched(observer, key) && blockedOnALock(observer));
            release.commit();
            AcquireResult answer = asked.get(10, TimeUnit.SECONDS);
            boolean woken = notified.await(1500, TimeUnit.MILLISECONDS);
            assertThat(answer instanceof AcquireResult.Granted || woken)
                    .as("the next ask got the freed key (" + answer + ") or the waiter was told")
                    .isTrue();
            subscribed.get().close();
        } finally {
            releasing.close();
            waiting.close();
        }
    }

    private static boolean watched(Connection observer, LockKey key) throws java.sql.SQLException {
        try (PreparedStatement statement = observer.prepareStatement(
                "SELECT count(*) FROM leasehold_waiter WHERE lock_key = ? AND owner_token LIKE ?")) {
            statement.setString(1, key.render());
            statement.setString(2, PostgresDialect.WATCH_OWNER_PREFIX + "%");
            try (ResultSet row = statement.executeQuery()) {
                return row.next() && row.getLong(1) > 0;
            }
        }
    }

    private static boolean blockedOnALock(Connection observer) throws java.sql.SQLException {
        try (PreparedStatement statement = observer.prepareStatement("SELECT count(*) FROM pg_stat_activity"
                + " WHERE wait_event_type = 'Lock' AND query LIKE '%leasehold_lease%'")) {
            try (ResultSet row = statement.executeQuery()) {
                return row.next() && row.getLong(1) > 0;
            }
        }
    }
}
