package dev.leasehold.jdbc;

import dev.leasehold.testkit.TestServices;
import java.util.Optional;

/** The SQL store on an embedded H2 database, the reference services' default. */
class H2LeaseStoreTest extends AbstractJdbcLeaseStoreTest {

    @Override
    protected TestServices.JdbcEndpoint endpoint() {
        return new TestServices.JdbcEndpoint("jdbc:h2:mem:leasehold-test;DB_CLOSE_DELAY=-1", "sa", "", "embedded");
    }

    /** Polled every 50 ms at most: the bound leaves room for the poll, the acquire and a loaded machine. */
    @Override
    protected java.util.Optional<java.time.Duration> handOffBound() {
        return java.util.Optional.of(java.time.Duration.ofMillis(150));
    }

    @Override
    protected Database database() {
        return Database.H2;
    }

    @Override
    protected String skewSessionTimeZone() {
        return "SET TIME ZONE '+14:00'";
    }

    @Override
    protected Optional<CommandCounter> commandCounter(boolean autoCommit) {
        return Optional.empty(); // embedded: no round trips, and no per-session statement counter
    }
}
