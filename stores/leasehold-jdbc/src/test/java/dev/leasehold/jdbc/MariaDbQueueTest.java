package dev.leasehold.jdbc;

import dev.leasehold.testkit.TestServices;

/** Many processes on one key, on MariaDB. */
class MariaDbQueueTest extends AbstractJdbcQueueTest {

    @Override
    protected TestServices.JdbcEndpoint endpoint() {
        return TestServices.mariadb();
    }

    @Override
    protected Database database() {
        return Database.MARIADB;
    }
}
