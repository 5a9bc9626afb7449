package dev.leasehold.spring.retry;

import dev.leasehold.spring.schema.TestDatabases;

/** Retries that outlast their claim, on H2 in memory. */
class H2RetryOutlastingItsClaimTest extends AbstractRetryOutlastingItsClaimTest {

    @Override
    TestDatabases database() {
        return TestDatabases.h2();
    }
}
