package dev.leasehold.idempotency;

import dev.leasehold.jdbc.Database;
import dev.leasehold.testkit.TestServices;

/** Request and side-effect records on MariaDB. */
class MariaDbIdempotencyTest extends AbstractIdempotencyTest {

    @Override
    protected TestServices.JdbcEndpoint endpoint() {
        return TestServices.mariadb();
    }

    @Override
    protected Database database() {
        return Database.MARIADB;
    }
}
