package dev.leasehold.spring.schema;

class MariaDbFlywayApplicationTest extends AbstractFlywayApplicationTest {

    @Override
    TestDatabases database() {
        return TestDatabases.mariadb();
    }

    @Override
    String trueLiteral() {
        return "1";
    }
}
