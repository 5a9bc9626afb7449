package dev.leasehold.jdbc;

import dev.leasehold.spi.LeaseStore;
import dev.leasehold.testkit.TestServices;
import java.sql.Connection;
import java.sql.DriverManager;
import java.util.Optional;

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
}
