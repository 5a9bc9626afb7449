package dev.leasehold.spring.retry;

import dev.leasehold.spring.schema.TestDatabases;

/** Retries that outlast their claim, on MariaDB, in a database of its own. */
class MariaDbRetryOutlastingItsClaimTest extends AbstractRetryOutlastingItsClaimTest {

    @Override
    TestDatabases database() {
        return TestDatabases.mariadb();
    }
}
