package dev.leasehold.spring;

import dev.leasehold.spring.schema.TestDatabases;

/** A @Locked method whose lease is lost, on PostgreSQL, in a database of its own. */
class PostgresLockedLeaseLostTest extends AbstractLockedLeaseLostTest {

    @Override
    TestDatabases database() {
        return TestDatabases.postgres();
    }
}
