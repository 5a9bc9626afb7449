package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.spi.AcquireResult;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Redis comes back with OLDER data than the grants it handed out: restarted from an older RDB
 * snapshot, restarted from an AOF whose last writes never reached the disk ({@code appendfsync
 * everysec} loses up to a second), or a replica promoted after it missed the last grants. Each test
 * starts its own {@code redis-server} processes on loopback ports, first shows that the counter
 * really came back older than the last fence handed out, then that every grant after the recovery
 * still has a fence above every fence granted before it.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisFenceRecoveryTest {

    private static final RedisKeys KEYS = new RedisKeys("leasehold:");
    private static final LockKey KEY = LockKey.of("borrow", "B-recovery");

    private LocalRedis redis;
    private final List<RedisClient> clients = new ArrayList<>();
    private final List<RedisLeaseStore> stores = new ArrayList<>();

    @BeforeEach
    void start() throws IOException {
        redis = new LocalRedis();
        LocalRedis.requireInstalled("redis-cli");
    }

    @AfterEach
    void stop() {
        stores.forEach(RedisLeaseStore::close);
        clients.forEach(RedisClient::shutdown);
        redis.close();
    }

    @Test
    void fencesNeverRepeatAfterRestartFromOlderSnapshot() throws Exception {
        int port = LocalRedis.freePortPair();
        String[] config = {"--dbfilename", "dump-" + port + ".rdb"};
        Process server = redis.server(port, config);
        RedisLeaseStore store = store(port);
        List<Long> before = new ArrayList<>(holdersInTurn(store, 5));

        redis.cli("-p", String.valueOf(port), "save");
        Path dump = redis.dir.resolve("dump-" + port + ".rdb");
        Path older = redis.dir.resolve("older-" + port + ".rdb");
        Files.copy(dump, older);
        before.addAll(holdersInTurn(store, 5));
        before.add(holdWithoutRelease(store)); // still held when the server dies

        LocalRedis.crash(server);
        Files.copy(older, dump, StandardCopyOption.REPLACE_EXISTING);
        redis.server(port, config);

        assertRecoveredOlderYetFencesGrow(port, store, before);
    }

    @Test
    void fencesNeverRepeatAfterAofEverysecLoss() throws Exception {
        int port = LocalRedis.freePortPair();
        String[] config = {
            "--appendonly", "yes", "--appendfsync", "everysec", "--appenddirname", "aof-" + port,
        };
        Process server = redis.server(port, config);
        awaitNoRewrite(port);
        RedisLeaseStore store = store(port);
        List<Long> before = new ArrayList<>(holdersInTurn(store, 5));

        // What a crash of the machine leaves when the last second was written but never fsynced:
        // the incremental AOF as it was at this point.
        Path incremental = incrementalAof(port);
        long synced = Files.size(incremental);
        before.addAll(holdersInTurn(store, 5));
        before.add(holdWithoutRelease(store));
        assertThat(Files.size(incremental)).as("the later grants were appended").isGreaterThan(synced);

        LocalRedis.crash(server);
        try (RandomAccessFile file = new RandomAccessFile(incremental.toFile(), "rw")) {
            file.setLength(synced);
        }
        redis.server(port, config);

        assertRecoveredOlderYetFencesGrow(port, store, before);
    }

    @Test
    void fencesNeverRepeatAfterReplicaPromotion() throws Exception {
        int masterPort = LocalRedis.freePortPair();
        int replicaPort = LocalRedis.freePortPair();
        Process master = redis.server(masterPort);
        Process replica = redis.server(replicaPort, "--replicaof", "127.0.0.1", String.valueOf(masterPort));
        RedisLeaseStore onMaster = store(masterPort);
        List<Long> before = new ArrayList<>(holdersInTurn(onMaster, 5));
        await().atMost(Duration.ofSeconds(20))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> String.valueOf(before.get(before.size() - 1)).equals(counter(replicaPort)));

        // The replica falls behind: paused, and its link cut so that nothing more reaches it.
        LocalRedis.signal(replica, "STOP");
        try {
            redis.cli("-p", String.valueOf(masterPort), "client", "kill", "type", "replica");
            before.addAll(holdersInTurn(onMaster, 5));
            before.add(holdWithoutRelease(onMaster));
            LocalRedis.crash(master);
        } finally {
            LocalRedis.signal(replica, "CONT");
        }
        redis.cli("-p", String.valueOf(replicaPort), "replicaof", "no", "one");

        assertRecoveredOlderYetFencesGrow(replicaPort, store(replicaPort), before);
    }

    private RedisLeaseStore store(int port) {
        RedisClient client = LocalRedis.client(port);
        clients.add(client);
        RedisLeaseStore store = RedisLeaseStore.builder(client).build();
        stores.add(store);
        return store;
    }

    /** Holders one after another, each taking the key and releasing it; their fences. */
    private static List<Long> holdersInTurn(RedisLeaseStore store, int count) {
        List<Long> fences = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String owner = LockOwner.create("holder").token();
            fences.add(fence(store.tryAcquire(KEY, owner, Duration.ofSeconds(30))));
            assertThat(store.release(KEY, owner)).isTrue();
        }
        return fences;
    }

    private static long holdWithoutRelease(RedisLeaseStore store) {
        return fence(store.tryAcquire(KEY, LockOwner.create("holder").token(), Duration.ofSeconds(30)));
    }

    private void assertRecoveredOlderYetFencesGrow(int port, RedisLeaseStore store, List<Long> before)
            throws Exception {
        assertCounterCameBackOlder(port, before);
        assertEveryLaterFenceIsLarger(store, before);
    }

    /** The canary: without it a passing test could mean the fault never happened. */
    private void assertCounterCameBackOlder(int port, List<Long> before) throws Exception {
        await().atMost(Duration.ofSeconds(20))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> LocalRedis.answers(port)
                        && !redis.cli("-p", String.valueOf(port), "info", "persistence")
                                .contains("loading:1"));
        long restored = Long.parseLong(counter(port));
        assertThat(restored)
                .as("the fence counter after the recovery (fences handed out before: %s)", before)
                .isLessThan(Collections.max(before));
    }

    /** New holders after the recovery, the store reconnecting as it would in production. */
    private static void assertEveryLaterFenceIsLarger(RedisLeaseStore store, List<Long> before) {
        long highest = Collections.max(before);
        List<Long> after = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            String owner = LockOwner.create("after").token();
            AtomicLong fence = new AtomicLong();
            // The same owner on every attempt: an attempt whose reply was lost is re-entered.
            await().atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(100))
                    .ignoreExceptions()
                    .until(() -> {
                        if (store.tryAcquire(KEY, owner, Duration.ofSeconds(30))
                                instanceof AcquireResult.Granted granted) {
                            fence.set(granted.grant().fence());
                            return true;
                        }
                        // The holder still in the restored data: take over as an operator would.
                        store.forceRelease(KEY);
                        return false;
                    });
            after.add(fence.get());
            assertThat(store.release(KEY, owner)).isTrue();
        }
        System.out.printf("[fence recovery] highest fence before: %d, fences after: %s%n", highest, after);
        assertThat(after)
                .as("fences after the recovery; the highest before it was %d", highest)
                .allSatisfy(fence -> assertThat(fence).isGreaterThan(highest))
                .isSortedAccordingTo(Long::compare)
                .doesNotHaveDuplicates();
    }

    private String counter(int port) throws Exception {
        try (RedisClient client = RedisClient.create(RedisURI.create("127.0.0.1", port));
                StatefulRedisConnection<String, String> raw = client.connect()) {
            String value = raw.sync().get(KEYS.fence(KEY));
            return value == null ? "0" : value;
        }
    }

    private Path incrementalAof(int port) throws IOException {
        try (Stream<Path> files = Files.list(redis.dir.resolve("aof-" + port))) {
            return files.filter(file -> file.getFileName().toString().endsWith(".incr.aof"))
                    .findFirst()
                    .orElseThrow(() -> new IOException("no incremental AOF file for port " + port));
        }
    }

    private void awaitNoRewrite(int port) {
        await().atMost(Duration.ofSeconds(20))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> {
                    String info = redis.cli("-p", String.valueOf(port), "info", "persistence");
                    return info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0");
                });
    }

    private static long fence(AcquireResult result) {
        assertThat(result).isInstanceOf(AcquireResult.Granted.class);
        return ((AcquireResult.Granted) result).grant().fence();
    }
}
