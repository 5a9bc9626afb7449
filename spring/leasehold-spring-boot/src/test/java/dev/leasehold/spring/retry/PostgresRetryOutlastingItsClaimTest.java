package dev.leasehold.spring.retry;

import dev.leasehold.spring.schema.TestDatabases;

/** Retries that outlast their claim, on PostgreSQL, in a database of its own. */
class PostgresRetryOutlastingItsClaimTest extends AbstractRetryOutlastingItsClaimTest {

    @Override
    TestDatabases database() {
        return TestDatabases.postgres();
    }
}
