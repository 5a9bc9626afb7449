package dev.leasehold.it.shop;

import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** Heartbeat starvation over HTTP on PostgreSQL. */
class PostgresHeartbeatStarvationHttpTest extends AbstractHeartbeatStarvationHttpTest {

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        ShopDatabases.POSTGRES.get().register(registry);
    }

    @Override
    String databaseName() {
        return "postgresql";
    }
}
