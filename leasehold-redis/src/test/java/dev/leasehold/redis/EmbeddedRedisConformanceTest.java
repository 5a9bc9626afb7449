package dev.leasehold.redis;

import dev.leasehold.LockKey;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.testkit.LeaseStoreConformance;
import dev.leasehold.testkit.RawLease;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.IOException;
import java.net.ServerSocket;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import redis.embedded.RedisServer;

/**
 * The Redis store on the embedded server that a machine without Redis falls back to (Redis 6.2
 * from the {@code embedded-redis} artifact), run even where a local server exists.
 */
class EmbeddedRedisConformanceTest extends LeaseStoreConformance {

    private static RedisServer server;
    private static RedisClient client;
    private static StatefulRedisConnection<String, String> probe;
    private static final RedisKeys KEYS = new RedisKeys("leasehold:");

    @BeforeAll
    static void start() throws IOException {
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        server = new RedisServer(port);
        server.start();
        client = RedisClient.create("redis://127.0.0.1:" + port);
        probe = client.connect();
    }

    @AfterAll
    static void stop() throws IOException {
        if (client != null) {
            probe.close();
            client.shutdown();
        }
        if (server != null) {
            server.stop();
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
