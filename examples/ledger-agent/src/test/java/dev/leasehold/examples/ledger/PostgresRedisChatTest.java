package dev.leasehold.examples.ledger;

import dev.leasehold.testkit.TestServices;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The chat with records on PostgreSQL and leases in Redis. */
class PostgresRedisChatTest extends AbstractChatTest {

    @DynamicPropertySource
    static void postgresAndRedis(DynamicPropertyRegistry registry) {
        TestServices.JdbcEndpoint postgres = TestServices.postgres();
        String schema = "ledger_it";
        String url = postgres.url() + (postgres.url().contains("?") ? "&" : "?") + "currentSchema=" + schema;
        registry.add("spring.datasource.url", () -> url);
        registry.add("spring.datasource.username", postgres::user);
        registry.add("spring.datasource.password", postgres::password);
        registry.add("spring.flyway.schemas", () -> schema);
        registry.add("leasehold.backend", () -> "redis");
        registry.add("leasehold.redis.url", () -> TestServices.redis().uri());
    }
}
