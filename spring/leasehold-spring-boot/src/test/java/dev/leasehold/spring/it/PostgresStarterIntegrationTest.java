package dev.leasehold.spring.it;

import dev.leasehold.testkit.TestServices;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The starter with SQL leases on PostgreSQL. */
class PostgresStarterIntegrationTest extends AbstractStarterIntegrationTest {

    @DynamicPropertySource
    static void postgres(DynamicPropertyRegistry registry) {
        TestServices.JdbcEndpoint postgres = TestServices.postgres();
        registry.add("spring.datasource.url", postgres::url);
        registry.add("spring.datasource.username", postgres::user);
        registry.add("spring.datasource.password", postgres::password);
        registry.add("leasehold.backend", () -> "jdbc");
    }
}
