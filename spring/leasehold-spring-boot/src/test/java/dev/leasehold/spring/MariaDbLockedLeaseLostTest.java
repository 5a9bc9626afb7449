package dev.leasehold.spring;

import dev.leasehold.spring.schema.TestDatabases;

/** A @Locked method whose lease is lost, on MariaDB, in a database of its own. */
class MariaDbLockedLeaseLostTest extends AbstractLockedLeaseLostTest {

    @Override
    TestDatabases database() {
        return TestDatabases.mariadb();
    }
}
