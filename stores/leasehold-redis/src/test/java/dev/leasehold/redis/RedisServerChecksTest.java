package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.spi.AcquireResult;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What the builder checks on the server before it hands out a store: the memory policy, the
 * version, and that the options fit the server. Each test runs a {@code redis-server} of its own on
 * a loopback port, whose configuration it may change.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedisServerChecksTest {

    private static final RedisKeys KEYS = new RedisKeys("leasehold:");

    private LocalRedis redis;
    private int port;
    private final List<RedisClient> clients = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        redis = new LocalRedis();
        port = LocalRedis.freePortPair();
        redis.server(port, "--maxmemory-policy", "volatile-lru");
    }

    @AfterEach
    void stop() {
        clients.forEach(RedisClient::shutdown);
        redis.close();
    }

    @Test
    void evictingPolicyIsRefused() {
        assertThatThrownBy(() -> RedisLeaseStore.builder(client()).build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("maxmemory-policy volatile-lru")
                .hasMessageContaining("127.0.0.1:" + port)
                .hasMessageContaining("second holder")
                .hasMessageContaining("allowEvictingMemoryPolicy()");

        try (StatefulRedisConnection<String, String> admin = client().connect()) {
            admin.sync().configSet("maxmemory-policy", "allkeys-lru");
            assertThatThrownBy(() -> RedisLeaseStore.builder(client()).build())
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("maxmemory-policy allkeys-lru");

            admin.sync().configSet("maxmemory-policy", "noeviction");
            try (RedisLeaseStore store = RedisLeaseStore.builder(client()).build()) {
                assertThat(store.tryAcquire(LockKey.of("borrow", "B-noeviction"), owner(), Duration.ofSeconds(5)))
                        .isInstanceOf(AcquireResult.Granted.class);
            }
        }
    }

    /**
     * The opt-in, and why it is one: under memory pressure a {@code volatile-lru} server evicts a
     * held lease and grants the key to a second holder (the fence still grows).
     */
    @Test
    void evictingPolicyIsAcceptedOnlyWhenOptedInAndThenAHeldLeaseCanBeEvicted() {
        LockKey key = LockKey.of("borrow", "B-evicted");
        try (RedisLeaseStore store = RedisLeaseStore.builder(client())
                        .allowEvictingMemoryPolicy()
                        .build();
                StatefulRedisConnection<String, String> cache = client().connect()) {
            RedisCommands<String, String> commands = cache.sync();
            long first = fence(store.tryAcquire(key, owner(), Duration.ofMinutes(5)));
            long used = Long.parseLong(commands.info("memory")
                    .lines()
                    .filter(line -> line.startsWith("used_memory:"))
                    .findFirst()
                    .orElseThrow()
                    .substring("used_memory:".length())
                    .trim());
            commands.configSet("maxmemory", String.valueOf(used + 2 * 1024 * 1024));

            // Ordinary cache writes with a TTL, as an application sharing the server makes them.
            String value = "x".repeat(1024);
            int written = 0;
            while (commands.exists(KEYS.lease(key)) == 1 && written < 50_000) {
                commands.set("cache:" + written++, value, SetArgs.Builder.px(600_000));
            }
            assertThat(commands.exists(KEYS.lease(key)))
                    .as("the held lease after %d cache writes", written)
                    .isZero();

            AcquireResult second = store.tryAcquire(key, owner(), Duration.ofMinutes(5));
            assertThat(fence(second))
                    .as("granted to a second holder, with a larger fence")
                    .isGreaterThan(first);
        }
    }

    /** A managed Redis that refuses CONFIG: the check is logged and skipped, the store works. */
    @Test
    void serverThatRefusesConfigGetIsAcceptedWithALogLine() {
        try (StatefulRedisConnection<String, String> admin = client().connect()) {
            admin.sync().configSet("maxmemory-policy", "noeviction");
            admin.sync()
                    .aclSetuser(
                            "app",
                            io.lettuce.core.AclSetuserArgs.Builder.on()
                                    .addPassword("app-secret")
                                    .allKeys()
                                    .allChannels()
                                    .allCommands()
                                    .removeCommand(io.lettuce.core.protocol.CommandType.CONFIG));
        }
        RedisClient app = client(RedisURI.builder()
                .withHost("127.0.0.1")
                .withPort(port)
                .withAuthentication("app", "app-secret")
                .build());
        try (StatefulRedisConnection<String, String> probe = app.connect()) {
            assertThatThrownBy(() -> probe.sync().configGet("maxmemory-policy")).hasMessageContaining("NOPERM");
        }
        try (RedisLeaseStore store = RedisLeaseStore.builder(app).build()) {
            assertThat(store.tryAcquire(LockKey.of("borrow", "B-managed"), owner(), Duration.ofSeconds(5)))
                    .isInstanceOf(AcquireResult.Granted.class);
        }
    }

    @Test
    void redisOlderThanFiveIsRefusedNamingTheVersionNeeded() {
        ServerChecks.Version old = ServerChecks.version("# Server\r\nredis_version:4.0.14\r\nredis_mode:standalone\r\n")
                .orElseThrow();
        assertThat(old).isEqualTo(new ServerChecks.Version(4, 0, 14));
        assertThatThrownBy(() -> ServerChecks.requireAtLeast("10.0.0.5:6379", old, ServerChecks.MINIMUM, "leases"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("10.0.0.5:6379 is version 4.0.14")
                .hasMessageContaining("Redis 5.0.0 or later")
                .hasMessageContaining("TIME");
        ServerChecks.requireAtLeast("s", new ServerChecks.Version(5, 0, 0), ServerChecks.MINIMUM, "leases");
        assertThat(ServerChecks.version("redis_version:7.2\n")).contains(new ServerChecks.Version(7, 2, 0));
        assertThat(ServerChecks.version("no version here")).isEmpty();
    }

    /**
     * Sharded pub/sub needs Redis 7.0 on every master: one older master, or one that does not say,
     * and the cluster store keeps classic pub/sub (and logs which masters are older).
     */
    @Test
    void shardedPubSubIsUsedOnlyWhenEveryMasterRunsRedis7() {
        var seven = Optional.of(new ServerChecks.Version(7, 0, 15));
        var six = Optional.of(new ServerChecks.Version(6, 2, 14));
        assertThat(ServerChecks.withoutShardedPubSub(Map.of("a:1", seven, "b:2", seven)))
                .isEmpty();
        assertThat(ServerChecks.withoutShardedPubSub(Map.of("a:1", seven, "b:2", six)))
                .containsExactly("b:2 (6.2.14)");
        assertThat(ServerChecks.withoutShardedPubSub(Map.of("c:3", Optional.empty())))
                .containsExactly("c:3 (version unknown)");
    }

    /** WAITAOF came with Redis 7.2: the option is refused on an older server, at build time. */
    @Test
    void aofAcknowledgementIsRefusedBelowRedis72() throws IOException {
        ServerChecks.Version version;
        try (StatefulRedisConnection<String, String> admin = client().connect()) {
            admin.sync().configSet("maxmemory-policy", "noeviction");
            version = ServerChecks.version(admin.sync().info("server")).orElseThrow();
        }
        RedisLeaseStore.Builder builder =
                RedisLeaseStore.builder(client()).aofAcknowledgement(1, 0, Duration.ofMillis(500));
        if (version.compareTo(ServerChecks.WAITAOF) < 0) {
            assertThatThrownBy(builder::build)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("is version " + version)
                    .hasMessageContaining("WAITAOF")
                    .hasMessageContaining("7.2.0 or later");
        } else {
            // A newer server: the local fsync of an AOF server is acknowledged.
            try (StatefulRedisConnection<String, String> admin = client().connect()) {
                admin.sync().configSet("appendonly", "yes");
            }
            try (RedisLeaseStore store = builder.build()) {
                assertThat(store.tryAcquire(LockKey.of("borrow", "B-aof"), owner(), Duration.ofSeconds(5)))
                        .isInstanceOf(AcquireResult.Granted.class);
            }
        }
    }

    @Test
    void ownerTokensLongerThan128CharactersAreRefusedLikeOnEveryStore() {
        try (StatefulRedisConnection<String, String> admin = client().connect()) {
            admin.sync().configSet("maxmemory-policy", "noeviction");
        }
        LockKey key = LockKey.of("borrow", "B-owner");
        try (RedisLeaseStore store = RedisLeaseStore.builder(client()).build()) {
            assertThatThrownBy(() -> store.tryAcquire(key, "o".repeat(129), Duration.ofSeconds(5)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("at most 128 characters, was 129");
            assertThatThrownBy(() -> store.renew(key, "o".repeat(129), Duration.ofSeconds(5)))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> store.release(key, "o".repeat(129))).isInstanceOf(IllegalArgumentException.class);
            assertThat(store.inspect(key)).isEmpty();
            assertThat(store.tryAcquire(key, "o".repeat(128), Duration.ofSeconds(5)))
                    .isInstanceOf(AcquireResult.Granted.class);
        }
    }

    private RedisClient client() {
        return client(RedisURI.create("127.0.0.1", port));
    }

    private RedisClient client(RedisURI uri) {
        RedisClient client = RedisClient.create(uri);
        clients.add(client);
        return client;
    }

    private static String owner() {
        return LockOwner.create("test").token();
    }

    private static long fence(AcquireResult result) {
        assertThat(result).isInstanceOf(AcquireResult.Granted.class);
        return ((AcquireResult.Granted) result).grant().fence();
    }
}
