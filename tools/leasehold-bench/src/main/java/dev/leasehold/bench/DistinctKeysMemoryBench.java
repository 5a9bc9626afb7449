package dev.leasehold.bench;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.redis.RedisLeaseStore;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What N distinct keys leave behind in Redis: on a private {@code redis-server}, N keys are each
 * acquired and released once through Leasehold (leases of 6 s, 8 caller threads), and the server's
 * {@code used_memory} and {@code DBSIZE} are read before, right after the last release, and
 * {@code bench.settle} seconds later (61 by default: the fence counters' 60 s TTL plus a second).
 *
 * <pre>
 * cd tools/leasehold-bench && java -cp target/classes:$(cat target/cp.txt) \
 *     -Dbench.keys=200000 dev.leasehold.bench.DistinctKeysMemoryBench
 * </pre>
 */
public final class DistinctKeysMemoryBench {

    private DistinctKeysMemoryBench() {}

    public static void main(String[] args) throws Exception {
        int keys = Integer.getInteger("bench.keys", 200_000);
        int settle = Integer.getInteger("bench.settle", 61);
        int threads = 8;
        try (PrivateRedis redis = PrivateRedis.start()) {
            RedisClient adminClient = RedisClient.create(redis.uri);
            RedisClient client = RedisClient.create(redis.uri);
            try (StatefulRedisConnection<String, String> admin = adminClient.connect();
                    RedisLeaseStore store = RedisLeaseStore.builder(client).build();
                    LockService service = LockService.builder(store).build()) {
                String before = reading(admin);
                LeaseOptions options =
                        LeaseOptions.builder().leaseFor(Duration.ofSeconds(6)).build();
                AtomicInteger next = new AtomicInteger();
                ExecutorService pool = Executors.newFixedThreadPool(threads);
                long start = System.nanoTime();
                List<Future<?>> callers = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    callers.add(pool.submit(() -> {
                        for (int i = next.getAndIncrement(); i < keys; i = next.getAndIncrement()) {
                            try (Lease lease = service.acquire(LockKey.of("order", "O" + i), options)) {
                                lease.fence();
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> caller : callers) {
                    caller.get();
                }
                pool.shutdown();
                double seconds = (System.nanoTime() - start) / 1e9;
                String after = reading(admin);
                Thread.sleep(settle * 1000L); // the counters' TTL: pacing, not synchronisation
                String settled = reading(admin);
                System.out.printf(
                        "%d distinct keys acquired and released in %.1f s (8 threads)%n"
                                + "| when | used_memory | keys (DBSIZE) |%n|---|---:|---:|%n"
                                + "| before | %s |%n| right after the last release | %s |%n| %d s later | %s |%n",
                        keys, seconds, before, after, settle, settled);
            } finally {
                client.shutdown();
                adminClient.shutdown();
            }
        }
    }

    /** {@code used_memory} in bytes and the number of keys, as two table cells. */
    private static String reading(StatefulRedisConnection<String, String> admin) {
        String used = "?";
        for (String line : admin.sync().info("memory").split("\r?\n")) {
            if (line.startsWith("used_memory:")) {
                used = line.substring("used_memory:".length()).trim();
            }
        }
        return String.format("%,d B | %d", Long.parseLong(used), admin.sync().dbsize());
    }
}
