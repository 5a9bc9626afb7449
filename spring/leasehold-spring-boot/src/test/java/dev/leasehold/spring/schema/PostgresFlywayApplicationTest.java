package dev.leasehold.spring.schema;

class PostgresFlywayApplicationTest extends AbstractFlywayApplicationTest {

    @Override
    TestDatabases database() {
        return TestDatabases.postgres();
    }
}
