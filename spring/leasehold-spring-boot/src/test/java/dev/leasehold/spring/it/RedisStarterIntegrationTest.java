package dev.leasehold.spring.it;

import dev.leasehold.testkit.TestServices;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The starter with Redis leases and records on PostgreSQL (seed 2's setup). */
class RedisStarterIntegrationTest extends AbstractStarterIntegrationTest {

    @DynamicPropertySource
    static void redisAndPostgres(DynamicPropertyRegistry registry) {
        TestServices.JdbcEndpoint postgres = TestServices.postgres();
        registry.add("spring.datasource.url", postgres::url);
        registry.add("spring.datasource.username", postgres::user);
        registry.add("spring.datasource.password", postgres::password);
        registry.add("leasehold.backend", () -> "redis");
        registry.add("leasehold.redis.url", () -> TestServices.redis().uri());
    }
}
