package dev.leasehold.idempotency;

import dev.leasehold.jdbc.Database;
import dev.leasehold.testkit.TestServices;

/** Exactly once on MariaDB. */
class MariaDbExactlyOnceTest extends AbstractExactlyOnceTest {

    @Override
    protected TestServices.JdbcEndpoint endpoint() {
        return TestServices.mariadb();
    }

    @Override
    protected Database database() {
        return Database.MARIADB;
    }
}
