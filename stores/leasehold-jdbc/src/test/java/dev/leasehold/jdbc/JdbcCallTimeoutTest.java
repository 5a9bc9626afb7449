package dev.leasehold.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.testkit.TcpProxy;
import dev.leasehold.testkit.TestServices;
import java.net.URI;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The SQL store bounds every call by its call timeout: a database whose answers are black-holed
 * (a partition, through {@link TcpProxy}) makes a release or an acquire fail with the store's typed
 * failure instead of holding its caller, and the key frees at its expiry at the latest.
 */
class JdbcCallTimeoutTest {

    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(1);
    /** The pool's own wait for a connection, which bounds a borrow once its connections are gone. */
    private static final Duration POOL_TIMEOUT = Duration.ofSeconds(1);
    /** Call timeout plus the pool's wait, and a generous margin for a loaded machine. */
    private static final Duration BOUND = CALL_TIMEOUT.plus(POOL_TIMEOUT).plusSeconds(3);

    private static final Duration LEASE = Duration.ofSeconds(3);

    @ParameterizedTest
    @EnumSource(
            value = Database.class,
            names = {"POSTGRESQL", "MARIADB"})
    void callsEndWithATypedFailureWhenTheDatabaseStopsAnswering(Database database) throws Exception {
        TestServices.JdbcEndpoint endpoint = endpoint(database);
        URI server = URI.create(endpoint.url().substring("jdbc:".length()));
        String prefix = "timeout-" + UUID.randomUUID();
        LockKey released = LockKey.of(prefix, "released");
        LockKey acquired = LockKey.of(prefix, "acquired");
        String owner = "owner-" + UUID.randomUUID();
        try (HikariDataSource direct = AbstractJdbcLeaseStoreTest.pool(
                        endpoint.url(), endpoint.user(), endpoint.password(), database, null);
                TcpProxy proxy = TcpProxy.to(server.getHost(), server.getPort());
                HikariDataSource behindProxy = proxiedPool(endpoint, server, proxy);
                JdbcLeaseStore store = JdbcLeaseStore.builder(behindProxy)
                        .database(database)
                        .releaseNotifications(false)
                        .callTimeout(CALL_TIMEOUT)
                        .build();
                JdbcLeaseStore witness = JdbcLeaseStore.builder(direct)
                        .database(database)
                        .releaseNotifications(false)
                        .build();
                LockService service = LockService.builder(store).build()) {
            Lease lease = service.tryAcquire(
                            released,
                            LeaseOptions.builder()
                                    .leaseFor(LEASE)
                                    .renewal(false)
                                    .build())
                    .orElseThrow();
            assertThat(witness.inspect(released)).isPresent();

            proxy.blackhole(TcpProxy.Direction.DOWNSTREAM);

            LeaseStoreException onRelease = assertTimeoutPreemptively(
                    BOUND, () -> catchStoreFailure(lease::close), "Lease.close() with the answers black-holed");
            assertThat(onRelease).hasMessageContaining(released.render());
            LeaseStoreException onAcquire = assertTimeoutPreemptively(
                    BOUND,
                    () -> catchStoreFailure(() -> store.tryAcquire(acquired, owner, LEASE)),
                    "tryAcquire with the answers black-holed");
            assertThat(onAcquire).hasMessageContaining(acquired.render());
            assertThat(proxy.droppedBytes())
                    .as("answers dropped by the black hole")
                    .isPositive();

            // In doubt: whatever the database did with the calls, both keys are free at their
            // expiry at the latest.
            proxy.heal();
            await().atMost(LEASE.plusSeconds(3)).untilAsserted(() -> {
                assertThat(witness.tryAcquire(released, "witness", LEASE)).isInstanceOf(AcquireResult.Granted.class);
                assertThat(witness.tryAcquire(acquired, "witness", LEASE)).isInstanceOf(AcquireResult.Granted.class);
            });

            // The link back: the same store and pool answer again.
            LockKey after = LockKey.of(prefix, "after");
            await().atMost(BOUND).ignoreException(LeaseStoreException.class).untilAsserted(() -> assertThat(
                            store.tryAcquire(after, owner, LEASE))
                    .isInstanceOf(AcquireResult.Granted.class));
            assertThat(store.release(after, owner)).isTrue();
        }
    }

    @ParameterizedTest
    @EnumSource(
            value = Database.class,
            names = {"POSTGRESQL", "MARIADB"})
    void theConnectionsOwnNetworkTimeoutIsPutBack(Database database) throws Exception {
        TestServices.JdbcEndpoint endpoint = endpoint(database);
        AbstractJdbcLeaseStoreTest.pool(endpoint.url(), endpoint.user(), endpoint.password(), database, null)
                .close(); // the schema is there
        try (Connection connection =
                DriverManager.getConnection(endpoint.url(), endpoint.user(), endpoint.password())) {
            connection.setNetworkTimeout(Runnable::run, 12_345);
            JdbcLeaseStore store = JdbcLeaseStore.builder(SingleConnectionDataSource.pooled(connection, true))
                    .database(database)
                    .releaseNotifications(false)
                    .callTimeout(CALL_TIMEOUT)
                    .build();
            LockKey key = LockKey.of("timeout-" + UUID.randomUUID(), "restored");
            assertThat(store.tryAcquire(key, "owner", LEASE)).isInstanceOf(AcquireResult.Granted.class);
            assertThat(connection.getNetworkTimeout()).isEqualTo(12_345);
            assertThat(store.release(key, "owner")).isTrue();
            assertThat(connection.getNetworkTimeout()).isEqualTo(12_345);
        }
    }

    @Test
    void aCallTimeoutOutsideItsRangeIsRefused() {
        JdbcLeaseStore.Builder builder = JdbcLeaseStore.builder(new SingleConnectionDataSource(null));
        assertThatThrownBy(() -> builder.callTimeout(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("callTimeout must be 1 ms to 24 h, was PT0S");
        assertThatThrownBy(() -> builder.callTimeout(Duration.ofMillis(-5)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("callTimeout");
        assertThatThrownBy(() -> builder.callTimeout(Duration.ofDays(2)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("callTimeout");
        assertThatThrownBy(() -> builder.callTimeout(null))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("timeout is missing");
    }

    private static LeaseStoreException catchStoreFailure(Runnable call) {
        try {
            call.run();
        } catch (LeaseStoreException e) {
            return e;
        }
        throw new AssertionError("the call succeeded although the database's answers were black-holed");
    }

    private static TestServices.JdbcEndpoint endpoint(Database database) {
        return switch (database) {
            case POSTGRESQL -> TestServices.postgres();
            case MARIADB -> TestServices.mariadb();
            case H2 -> throw new IllegalArgumentException("H2 has no network to partition");
        };
    }

    /** A fresh pool whose connections go through the proxy. */
    private static HikariDataSource proxiedPool(TestServices.JdbcEndpoint endpoint, URI server, TcpProxy proxy) {
        String url =
                endpoint.url().replace(server.getHost() + ":" + server.getPort(), proxy.host() + ":" + proxy.port());
        assertThat(url).contains(":" + proxy.port());
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername(endpoint.user());
        config.setPassword(endpoint.password());
        config.setMaximumPoolSize(2);
        config.setConnectionTimeout(POOL_TIMEOUT.toMillis());
        config.setValidationTimeout(250);
        config.setPoolName("leasehold-timeout-test");
        return new HikariDataSource(config);
    }
}
