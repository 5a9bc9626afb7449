package dev.leasehold.it.shop;

import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The shop on H2 (a TCP server in this JVM, so a child JVM can share it). */
class H2IdempotentHttpTest extends AbstractIdempotentHttpTest {

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        ShopDatabases.H2.register(registry);
    }

    @Override
    ShopDatabases database() {
        return ShopDatabases.H2;
    }
}
