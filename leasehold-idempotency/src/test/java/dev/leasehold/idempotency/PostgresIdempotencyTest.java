package dev.leasehold.idempotency;

import dev.leasehold.jdbc.Database;
import dev.leasehold.testkit.TestServices;

/** Request and side-effect records on PostgreSQL. */
class PostgresIdempotencyTest extends AbstractIdempotencyTest {

    @Override
    protected TestServices.JdbcEndpoint endpoint() {
        return TestServices.postgres();
    }

    @Override
    protected Database database() {
        return Database.POSTGRESQL;
    }
}
