package dev.leasehold.redis;

import dev.leasehold.LockKey;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.testkit.LeaseStoreConformance;
import dev.leasehold.testkit.RawLease;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import redis.embedded.RedisServer;

/**
 * The Redis store on the embedded server that a machine without Redis falls back to (Redis 6.2
 * from the {@code embedded-redis} artifact), run even where a local server exists. The server is
 * the test's own, so it also simulates a restore of older state: {@code SAVE}, and later a restart
 * from that snapshot.
 */
class EmbeddedRedisConformanceTest extends LeaseStoreConformance {

    private static int port;
    private static Path dir;
    private static RedisServer server;
    private static RedisClient client;
    private static StatefulRedisConnection<String, String> probe;
    private static final RedisKeys KEYS = new RedisKeys("leasehold:");

    @BeforeAll
    static void start() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        dir = Files.createTempDirectory("leasehold-embedded-redis");
        server = newServer();
        server.start();
        client = RedisClient.create("redis://127.0.0.1:" + port);
        probe = client.connect();
    }

    private static RedisServer newServer() throws IOException {
        return RedisServer.newRedisServer()
                .port(port)
                .bind("127.0.0.1")
                .setting("save \"\"")
                .setting("appendonly no")
                .setting("dir " + dir)
                .setting("dbfilename dump.rdb")
                .build();
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

    /**
     * The server's {@code total_reads_processed}: every request it read from any client, so each
     * count takes off the {@code INFO} requests of its own; nothing else talks to this private
     * server meanwhile (the suite's own store is idle during the check).
     */
    @Override
    protected Optional<CommandCounter> commandCounter() {
        RedisLeaseStore counted = RedisLeaseStore.builder(client).build();
        return Optional.of(new CommandCounter() {
            private long probes;

            @Override
            public LeaseStore store() {
                return counted;
            }

            @Override
            public long commands() {
                probes++;
                return CommandStats.readsProcessed(probe.sync()) - probes;
            }

            @Override
            public void close() {
                counted.close();
            }
        });
    }

    /** {@code SAVE} now; the restore restarts the server from that snapshot. */
    @Override
    protected Optional<OlderState> simulateRestoreFromOlderState() throws IOException {
        probe.sync().save();
        Path older = dir.resolve("older.rdb");
        Files.copy(dir.resolve("dump.rdb"), older, StandardCopyOption.REPLACE_EXISTING);
        return Optional.of(() -> {
            server.stop();
            Files.copy(older, dir.resolve("dump.rdb"), StandardCopyOption.REPLACE_EXISTING);
            server = newServer();
            server.start();
        });
    }
}
