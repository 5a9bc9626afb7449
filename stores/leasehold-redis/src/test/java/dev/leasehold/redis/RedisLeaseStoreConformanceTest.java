package dev.leasehold.redis;

import dev.leasehold.LockKey;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.testkit.LeaseStoreConformance;
import dev.leasehold.testkit.RawLease;
import dev.leasehold.testkit.TestServices;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The Redis store on the Redis that {@link TestServices} finds (local, environment or embedded). */
class RedisLeaseStoreConformanceTest extends LeaseStoreConformance {

    private static RedisClient client;
    private static StatefulRedisConnection<String, String> probe;
    private static final RedisKeys KEYS = new RedisKeys("leasehold:");

    @BeforeAll
    static void connect() {
        client = RedisClient.create(TestServices.redis().uri());
        probe = client.connect();
    }

    @AfterAll
    static void disconnect() {
        if (client != null) {
            probe.close();
            client.shutdown();
        }
    }

    @Override
    protected LeaseStore createStore() {
        return RedisLeaseStore.builder(client).build();
    }

    @Override
    protected Optional<RawLease> rawLease(LockKey key) {
        return RedisRaw.read(probe.sync(), KEYS.lease(key));
    }
}
