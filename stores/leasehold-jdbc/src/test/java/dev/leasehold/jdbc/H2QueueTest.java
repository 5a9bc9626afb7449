package dev.leasehold.jdbc;

import dev.leasehold.testkit.TestServices;

/** Many processes on one key, on H2 (one embedded database shared by the processes' pools). */
class H2QueueTest extends AbstractJdbcQueueTest {

    @Override
    protected TestServices.JdbcEndpoint endpoint() {
        return new TestServices.JdbcEndpoint("jdbc:h2:mem:leasehold-queue;DB_CLOSE_DELAY=-1", "sa", "", "embedded");
    }

    @Override
    protected Database database() {
        return Database.H2;
    }
}
