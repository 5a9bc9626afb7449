package dev.leasehold.spring.schema;

class H2FlywayApplicationTest extends AbstractFlywayApplicationTest {

    @Override
    TestDatabases database() {
        return TestDatabases.h2();
    }

    @Override
    String q(String identifier) {
        return '"' + identifier + '"';
    }
}
