package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.spi.AcquireResult;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanIterator;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Per-key state does not pile up: 100 000 distinct keys locked and released leave almost nothing
 * behind once the fence counters' TTL has passed. The lease hash goes with its release, wake-up
 * channels are pub/sub channels (no keys), and the fence counter expires. On a {@code redis-server}
 * of the test's own, with a 2 s counter TTL.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisFenceCounterTtlTest {

    private static final int KEYS = 100_000;
    private static final String PREFIX = "ttl-test:";

    @Test
    void fenceCountersOfReleasedKeysDoNotStayResident() throws Exception {
        try (LocalRedis redis = new LocalRedis()) {
            int port = LocalRedis.freePortPair();
            redis.server(port);
            RedisClient client = RedisClient.create(RedisURI.create("127.0.0.1", port));
            try (RedisLeaseStore store = RedisLeaseStore.builder(client)
                            .keyPrefix(PREFIX)
                            .fenceCounterTtl(Duration.ofSeconds(2))
                            .build();
                    StatefulRedisConnection<String, String> probe = client.connect()) {
                int threads = 8;
                ExecutorService pool = Executors.newFixedThreadPool(threads);
                try {
                    List<Future<?>> done = new ArrayList<>();
                    for (int t = 0; t < threads; t++) {
                        int first = t;
                        done.add(pool.submit(() -> {
                            String owner = LockOwner.create("loan note").token();
                            for (int i = first; i < KEYS; i += threads) {
                                LockKey key = LockKey.of("note", "N" + i);
                                assertThat(store.tryAcquire(key, owner, Duration.ofSeconds(30)))
                                        .isInstanceOf(AcquireResult.Granted.class);
                                assertThat(store.release(key, owner)).isTrue();
                            }
                            return null;
                        }));
                    }
                    for (Future<?> f : done) {
                        f.get(100, TimeUnit.SECONDS);
                    }
                } finally {
                    pool.shutdownNow();
                }
                RedisCommands<String, String> raw = probe.sync();
                long rightAfter = countPrefixed(raw);
                System.out.printf(
                        "[fence counters] %d keys locked and released: %d keys resident right after%n",
                        KEYS, rightAfter);
                // The canary: a released key's counter is a real key the count would see, until its TTL.
                LockKey last = LockKey.of("note", "N-last");
                String owner = LockOwner.create("loan note").token();
                assertThat(store.tryAcquire(last, owner, Duration.ofSeconds(30)))
                        .isInstanceOf(AcquireResult.Granted.class);
                assertThat(store.release(last, owner)).isTrue();
                assertThat(raw.pttl(new RedisKeys(PREFIX).fence(last))).isBetween(1L, 2000L);

                // Redis reclaims expired keys in its background cycle; DBSIZE counts those not yet reclaimed.
                await().atMost(Duration.ofSeconds(60))
                        .pollInterval(Duration.ofMillis(500))
                        .until(() -> raw.dbsize() <= KEYS / 1000);
                long afterTtl = countPrefixed(raw);
                System.out.printf(
                        "[fence counters] after the 2 s TTL: SCAN finds %d, DBSIZE %d%n", afterTtl, raw.dbsize());
                assertThat(afterTtl).as("keys still resident after the TTL").isLessThanOrEqualTo(KEYS / 1000);
            } finally {
                client.shutdown();
            }
        }
    }

    private static long countPrefixed(RedisCommands<String, String> raw) {
        long count = 0;
        ScanIterator<String> scan =
                ScanIterator.scan(raw, ScanArgs.Builder.matches(PREFIX + "*").limit(1000));
        while (scan.hasNext()) {
            scan.next();
            count++;
        }
        return count;
    }
}
