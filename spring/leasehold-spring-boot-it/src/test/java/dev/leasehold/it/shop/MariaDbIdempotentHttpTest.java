package dev.leasehold.it.shop;

import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The shop on MariaDB, in a database of its own. */
class MariaDbIdempotentHttpTest extends AbstractIdempotentHttpTest {

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        ShopDatabases.MARIADB.get().register(registry);
    }

    @Override
    ShopDatabases database() {
        return ShopDatabases.MARIADB.get();
    }
}
