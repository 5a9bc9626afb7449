package dev.leasehold.idempotency;

import dev.leasehold.jdbc.Database;
import dev.leasehold.testkit.TestServices;

/** Request and side-effect records on embedded H2. */
class H2IdempotencyTest extends AbstractIdempotencyTest {

    @Override
    protected TestServices.JdbcEndpoint endpoint() {
        return new TestServices.JdbcEndpoint(
                "jdbc:h2:mem:leasehold-idempotency;DB_CLOSE_DELAY=-1", "sa", "", "embedded");
    }

    @Override
    protected Database database() {
        return Database.H2;
    }
}
