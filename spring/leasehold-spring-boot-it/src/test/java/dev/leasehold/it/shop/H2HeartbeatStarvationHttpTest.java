package dev.leasehold.it.shop;

import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** Heartbeat starvation over HTTP on H2. */
class H2HeartbeatStarvationHttpTest extends AbstractHeartbeatStarvationHttpTest {

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        ShopDatabases.H2.register(registry);
    }

    @Override
    String databaseName() {
        return "h2";
    }
}
