package dev.leasehold.spring;

import dev.leasehold.spring.schema.TestDatabases;

/** A @Locked method whose lease is lost, on H2 in memory. */
class H2LockedLeaseLostTest extends AbstractLockedLeaseLostTest {

    @Override
    TestDatabases database() {
        return TestDatabases.h2();
    }
}
