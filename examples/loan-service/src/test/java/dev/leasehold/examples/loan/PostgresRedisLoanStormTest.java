package dev.leasehold.examples.loan;

import dev.leasehold.testkit.TestServices;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The storm on seed 2's production setup: records in PostgreSQL, leases in Redis. */
class PostgresRedisLoanStormTest extends AbstractLoanStormTest {

    @DynamicPropertySource
    static void postgresAndRedis(DynamicPropertyRegistry registry) {
        TestServices.JdbcEndpoint postgres = TestServices.postgres();
        String schema = "loan_storm";
        String url = postgres.url() + (postgres.url().contains("?") ? "&" : "?") + "currentSchema=" + schema;
        registry.add("spring.datasource.url", () -> url);
        registry.add("spring.datasource.username", postgres::user);
        registry.add("spring.datasource.password", postgres::password);
        registry.add("spring.flyway.schemas", () -> schema);
        registry.add("leasehold.backend", () -> "redis");
        registry.add("leasehold.redis.url", () -> TestServices.redis().uri());
        registry.add("leasehold.redis.key-prefix", () -> "loan-it-" + java.util.UUID.randomUUID() + ":");
        registry.add("leasehold.redis.command-timeout", () -> "2s");
    }
}
