package dev.leasehold.jdbc;

import dev.leasehold.testkit.TestServices;

/** The SQL store on MariaDB. */
class MariaDbLeaseStoreTest extends AbstractJdbcLeaseStoreTest {

    @Override
    protected TestServices.JdbcEndpoint endpoint() {
        return TestServices.mariadb();
    }

    @Override
    protected Database database() {
        return Database.MARIADB;
    }

    @Override
    protected String skewSessionTimeZone() {
        return "SET time_zone = '+13:00'"; // MariaDB's furthest offset
    }
}
