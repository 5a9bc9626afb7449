package dev.leasehold.it.shop;

import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The shop on PostgreSQL, in a schema of its own. */
class PostgresIdempotentHttpTest extends AbstractIdempotentHttpTest {

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        ShopDatabases.POSTGRES.get().register(registry);
    }

    @Override
    ShopDatabases database() {
        return ShopDatabases.POSTGRES.get();
    }
}
