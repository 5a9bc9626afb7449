package dev.leasehold.jdbc;

import dev.leasehold.testkit.TestServices;

/** Many processes on one key, on Postgres. */
class PostgresQueueTest extends AbstractJdbcQueueTest {

    @Override
    protected TestServices.JdbcEndpoint endpoint() {
        return TestServices.postgres();
    }

    @Override
    protected Database database() {
        return Database.POSTGRESQL;
    }
}
