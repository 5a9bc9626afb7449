package dev.leasehold.redis;

import dev.leasehold.LockKey;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.testkit.LeaseStoreConformance;
import dev.leasehold.testkit.RawLease;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The Redis store reached through Sentinel: a master and a sentinel the test starts on loopback
 * ports (skipped where redis-server is not installed). The client asks the sentinel for the master.
 */
class RedisSentinelConformanceTest extends LeaseStoreConformance {

    private static LocalRedis redis;
    private static RedisClient client;
    private static StatefulRedisConnection<String, String> probe;
    private static final RedisKeys KEYS = new RedisKeys("leasehold:");

    @BeforeAll
    static void startSentinel() throws Exception {
        redis = new LocalRedis();
        int master = LocalRedis.freePortPair();
        int sentinel = LocalRedis.freePortPair();
        redis.server(master);
        redis.sentinel(sentinel, master, "leasehold");
        client = RedisClient.create(
                RedisURI.Builder.sentinel("127.0.0.1", sentinel, "leasehold").build());
        probe = RedisClient.create(RedisURI.create("127.0.0.1", master)).connect();
    }

    @AfterAll
    static void stopSentinel() {
        if (client != null) {
            probe.close();
            client.shutdown();
        }
        if (redis != null) {
            redis.close();
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
