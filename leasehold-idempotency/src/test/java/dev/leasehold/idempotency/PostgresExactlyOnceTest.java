package dev.leasehold.idempotency;

import dev.leasehold.jdbc.Database;
import dev.leasehold.testkit.TestServices;

/** Exactly once on PostgreSQL. */
class PostgresExactlyOnceTest extends AbstractExactlyOnceTest {

    @Override
    protected TestServices.JdbcEndpoint endpoint() {
        return TestServices.postgres();
    }

    @Override
    protected Database database() {
        return Database.POSTGRESQL;
    }
}
