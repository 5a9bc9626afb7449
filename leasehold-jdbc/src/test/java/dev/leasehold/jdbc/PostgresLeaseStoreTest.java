package dev.leasehold.jdbc;

import dev.leasehold.testkit.TestServices;

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
}
