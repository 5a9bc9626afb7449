package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.BatchAcquireResult;
import dev.leasehold.spi.Grant;
import dev.leasehold.testkit.TestServices;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanIterator;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A key's fence counter stays only as long as fences need it: distinct keys locked once leave
 * nothing of theirs in Redis shortly after their leases end, and a key whose counter expired still
 * gets a fence above every earlier one. On the shared local Redis, each test under a prefix of its
 * own.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisFenceRetentionTest {

    private static final int KEYS = 1_000;
    private static final Duration LEASE = Duration.ofMillis(500);
    private static final Duration RETENTION = Duration.ofSeconds(1);

    private static RedisClient client;
    private static StatefulRedisConnection<String, String> probe;

    @BeforeAll
    static void connect() {
        client = RedisClient.create(TestServices.redis().uri());
        probe = client.connect();
    }

    @AfterAll
    static void close() {
        if (probe != null) {
            probe.close();
        }
        if (client != null) {
            client.shutdown();
        }
    }

    @Test
    void byDefaultACounterStaysAboutAMinuteNotADay() {
        String prefix = prefix();
        try (RedisLeaseStore store =
                RedisLeaseStore.builder(client).keyPrefix(prefix).build()) {
            String owner = LockOwner.create("order").token();
            for (int i = 0; i < KEYS; i++) {
                LockKey key = LockKey.of("order", "O" + i);
                assertThat(store.tryAcquire(key, owner, LEASE)).isInstanceOf(AcquireResult.Granted.class);
                assertThat(store.release(key, owner)).isTrue();
            }
            List<String> left = scan(prefix);
            long longest = left.stream().mapToLong(k -> raw().pttl(k)).max().orElse(0);
            System.out.printf(
                    "[fence retention] default: %d keys locked and released, %d keys of the prefix left, longest PTTL %d ms%n",
                    KEYS, left.size(), longest);
            assertThat(longest)
                    .as("longest PTTL of a released key's counter, ms")
                    .isBetween(1L, 61_000L);
            assertThat(RedisLeaseStore.DEFAULT_FENCE_COUNTER_TTL).isEqualTo(Duration.ofSeconds(60));
        } finally {
            delete(prefix);
        }
    }

    @Test
    void keysUsedOnceLeaveNothingBehindSoonAfterTheirLeasesEnd() {
        String prefix = prefix();
        try (RedisLeaseStore store = RedisLeaseStore.builder(client)
                        .keyPrefix(prefix)
                        .fenceCounterTtl(RETENTION)
                        .bargingBound(RedisLeaseStore.DEFAULT_BARGING_BOUND)
                        .build();
                RedisLeaseStore fair = RedisLeaseStore.builder(client)
                        .keyPrefix(prefix)
                        .fenceCounterTtl(RETENTION)
                        .fairQueue(Duration.ofSeconds(1))
                        .build()) {
            String owner = LockOwner.create("order").token();
            // single grants: released, or left to expire
            for (int i = 0; i < KEYS; i++) {
                LockKey key = LockKey.of("order", "O" + i);
                assertThat(store.tryAcquire(key, owner, LEASE)).isInstanceOf(AcquireResult.Granted.class);
                if (i % 2 == 0) {
                    assertThat(store.release(key, owner)).isTrue();
                }
            }
            // batches of ten keys with one hash tag, force-released or released
            for (int b = 0; b < 20; b++) {
                List<LockKey> batch = new ArrayList<>();
                for (int i = 0; i < 10; i++) {
                    batch.add(LockKey.of("line", "B" + b, "L" + i).withHashTag(0));
                }
                assertThat(store.tryAcquireAll(batch, owner, LEASE)).isInstanceOf(BatchAcquireResult.Granted.class);
                for (LockKey key : batch) {
                    assertThat(b % 2 == 0 ? store.forceRelease(key) : store.release(key, owner))
                            .isTrue();
                }
            }
            // fair hand-offs: the holder's release grants the key to the queued waiter
            String waiter = LockOwner.create("order").token();
            for (int i = 0; i < 20; i++) {
                LockKey key = LockKey.of("fair", "F" + i);
                assertThat(fair.tryAcquire(key, owner, LEASE)).isInstanceOf(AcquireResult.Granted.class);
                assertThat(fair.tryAcquire(key, waiter, LEASE)).isInstanceOf(AcquireResult.Busy.class);
                assertThat(fair.tryAcquire(key, waiter, LEASE)).isInstanceOf(AcquireResult.Busy.class);
                assertThat(fair.release(key, owner)).isTrue();
                assertThat(fair.tryAcquire(key, waiter, LEASE)).isInstanceOf(AcquireResult.Granted.class);
                assertThat(fair.release(key, waiter)).isTrue();
            }
            long rightAfter = scan(prefix).size();
            long started = System.nanoTime();
            // Redis reclaims expired keys in its background cycle: allow a few seconds after the
            // last lease's end plus the retention.
            await().atMost(RETENTION.plus(LEASE).plusSeconds(5))
                    .pollInterval(Duration.ofMillis(200))
                    .until(() -> scan(prefix).isEmpty());
            System.out.printf(
                    "[fence retention] %d keys of the prefix right after, 0 after %d ms (retention %d ms, lease %d ms)%n",
                    rightAfter,
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started),
                    RETENTION.toMillis(),
                    LEASE.toMillis());
        } finally {
            delete(prefix);
        }
    }

    @Test
    void aKeyWhoseCounterExpiredGetsAFenceAboveEveryEarlierOne() {
        String prefix = prefix();
        RedisKeys keys = new RedisKeys(prefix);
        try (RedisLeaseStore store = RedisLeaseStore.builder(client)
                        .keyPrefix(prefix)
                        .fenceCounterTtl(RETENTION)
                        .bargingBound(RedisLeaseStore.DEFAULT_BARGING_BOUND)
                        .build();
                RedisLeaseStore fair = RedisLeaseStore.builder(client)
                        .keyPrefix(prefix)
                        .fenceCounterTtl(RETENTION)
                        .fairQueue(Duration.ofSeconds(1))
                        .build()) {
            String owner = LockOwner.create("order").token();
            String waiter = LockOwner.create("order").token();
            LockKey single = LockKey.of("order", "once");
            LockKey handed = LockKey.of("fair", "once");
            List<LockKey> batch = List.of(
                    LockKey.of("line", "T", "L1").withHashTag(0),
                    LockKey.of("line", "T", "L2").withHashTag(0));
            long highest = 0;
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < 5; i++) {
                    highest = after(highest, granted(store.tryAcquire(single, owner, LEASE)));
                    assertThat(store.release(single, owner)).isTrue();
                }
                assertThat(fair.tryAcquire(handed, owner, LEASE)).isInstanceOf(AcquireResult.Granted.class);
                assertThat(fair.tryAcquire(handed, waiter, LEASE)).isInstanceOf(AcquireResult.Busy.class);
                assertThat(fair.tryAcquire(handed, waiter, LEASE)).isInstanceOf(AcquireResult.Busy.class);
                long handedFence = fair.inspect(handed).orElseThrow().fence();
                assertThat(fair.release(handed, owner)).isTrue();
                long taken = granted(fair.tryAcquire(handed, waiter, LEASE));
                assertThat(taken).isGreaterThan(handedFence);
                assertThat(fair.release(handed, waiter)).isTrue();
                BatchAcquireResult all = store.tryAcquireAll(batch, owner, LEASE);
                assertThat(all).isInstanceOf(BatchAcquireResult.Granted.class);
                for (Grant g : ((BatchAcquireResult.Granted) all).grants()) {
                    highest = after(highest, g.fence());
                }
                highest = Math.max(highest, taken);
                batch.forEach(k -> assertThat(store.release(k, owner)).isTrue());
                // every counter has expired before the next round's grants
                List<String> counters = new ArrayList<>(List.of(keys.fence(single), keys.fence(handed)));
                batch.forEach(k -> counters.add(keys.fence(k)));
                await().atMost(RETENTION.plusSeconds(5))
                        .pollInterval(Duration.ofMillis(100))
                        .until(() -> raw().exists(counters.toArray(String[]::new)) == 0);
                long next = granted(store.tryAcquire(single, owner, LEASE));
                assertThat(next).as("first fence after the counter expired").isGreaterThan(highest);
                highest = next;
                assertThat(store.release(single, owner)).isTrue();
            }
        } finally {
            delete(prefix);
        }
    }

    /**
     * A counter above the server's clock (the fences of a clock that went back) is kept until the
     * clock has passed it by the retention, so the clock alone then gives larger fences.
     */
    @Test
    void aCounterAheadOfTheClockStaysUntilTheClockHasPassedIt() {
        String prefix = prefix();
        RedisKeys keys = new RedisKeys(prefix);
        try (RedisLeaseStore store = RedisLeaseStore.builder(client)
                .keyPrefix(prefix)
                .fenceCounterTtl(RETENTION)
                .build()) {
            String owner = LockOwner.create("order").token();
            LockKey key = LockKey.of("order", "ahead");
            List<String> time = raw().time();
            long ahead = Long.parseLong(time.get(0)) * 1_000_000 + Long.parseLong(time.get(1)) + 3_000_000;
            raw().set(keys.fence(key), Long.toString(ahead));
            long fence = granted(store.tryAcquire(key, owner, LEASE));
            assertThat(fence).isEqualTo(ahead + 1);
            assertThat(raw().pttl(keys.fence(key)))
                    .as("the counter's TTL covers its lead over the clock, then the retention")
                    .isGreaterThan(3_000L);
            assertThat(store.release(key, owner)).isTrue();
            await().atMost(RETENTION.plusSeconds(8))
                    .pollInterval(Duration.ofMillis(100))
                    .until(() -> raw().exists(keys.fence(key)) == 0);
            assertThat(granted(store.tryAcquire(key, owner, LEASE))).isGreaterThan(fence);
            assertThat(store.release(key, owner)).isTrue();
        } finally {
            delete(prefix);
        }
    }

    private static long after(long highest, long fence) {
        assertThat(fence).isGreaterThan(highest);
        return fence;
    }

    private static long granted(AcquireResult result) {
        assertThat(result).isInstanceOf(AcquireResult.Granted.class);
        return ((AcquireResult.Granted) result).grant().fence();
    }

    private static RedisCommands<String, String> raw() {
        return probe.sync();
    }

    private static String prefix() {
        return "fence-retention-" + Long.toHexString(ThreadLocalRandom.current().nextLong()) + ":";
    }

    private static List<String> scan(String prefix) {
        List<String> found = new ArrayList<>();
        ScanIterator<String> scan =
                ScanIterator.scan(raw(), ScanArgs.Builder.matches(prefix + "*").limit(1000));
        while (scan.hasNext()) {
            found.add(scan.next());
        }
        return found;
    }

    private static void delete(String prefix) {
        List<String> left = scan(prefix);
        if (!left.isEmpty()) {
            raw().del(left.toArray(String[]::new));
        }
    }
}
