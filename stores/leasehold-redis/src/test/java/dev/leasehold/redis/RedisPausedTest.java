package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockBusyException;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import io.lettuce.core.RedisClient;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.Test;

/**
 * A Redis server of the test's own, paused with SIGSTOP under live leases, with Lettuce's default
 * command timeout (60 s): renewals hang, yet every holder is told of its loss within its local
 * expiry plus 100 ms (measured from the grant's return, which is after the local deadline's start),
 * and a waiting acquire gives up at its wait time.
 */
class RedisPausedTest {

    @Test
    void aPausedRedisNeitherDelaysTheLossSignalNorAWaitersDeadline() throws Exception {
        try (LocalRedis redis = new LocalRedis()) {
            int port = LocalRedis.freePortPair();
            Process server = redis.server(port);
            RedisClient client = RedisClient.create("redis://127.0.0.1:" + port); // default timeout
            try (RedisLeaseStore store = RedisLeaseStore.builder(client).build();
                    LockService locks = LockService.builder(store).build()) {
                LeaseOptions oneSecond = LeaseOptions.builder()
                        .leaseFor(Duration.ofSeconds(1))
                        .renewal(true)
                        .build();
                int count = 6;
                List<Lease> leases = new ArrayList<>();
                long[] granted = new long[count];
                AtomicLongArray lostAt = new AtomicLongArray(count);
                CountDownLatch lost = new CountDownLatch(count);
                for (int i = 0; i < count; i++) {
                    int index = i;
                    Lease lease = locks.tryAcquire(LockKey.of("paused", "P" + i), oneSecond)
                            .orElseThrow();
                    lease.onLost(e -> {
                        lostAt.set(index, System.nanoTime());
                        lost.countDown();
                    });
                    // The local deadline counts from when the request was sent, which is before now.
                    granted[i] = System.nanoTime();
                    leases.add(lease);
                }
                LockKey busy = LockKey.of("paused", "P0");

                signal("STOP", server);
                try {
                    long start = System.nanoTime();
                    // Another owner: this thread would re-enter its own lease without asking Redis.
                    LockOwner other = LockOwner.create("another caller");
                    assertThatThrownBy(() -> locks.acquire(
                                    busy, LeaseOptions.defaults().withWait(Duration.ofMillis(500)), other))
                            .isInstanceOfAny(LockBusyException.class, LeaseStoreException.class);
                    Duration waited = Duration.ofNanos(System.nanoTime() - start);
                    assertThat(waited)
                            .as("acquire(waitFor=500ms) on a paused Redis")
                            .isLessThan(Duration.ofMillis(1500));

                    assertThat(lost.await(10, TimeUnit.SECONDS))
                            .as("every holder told")
                            .isTrue();
                    for (int i = 0; i < count; i++) {
                        Duration after = Duration.ofNanos(lostAt.get(i) - granted[i]);
                        assertThat(after)
                                .as("onLost of lease %d after its grant came back (lease 1 s)", i)
                                .isLessThanOrEqualTo(Duration.ofMillis(1100));
                        assertThat(leases.get(i).isHeld()).isFalse();
                    }
                } finally {
                    signal("CONT", server);
                }
                for (Lease lease : leases) {
                    lease.close();
                }
            } finally {
                client.shutdown();
            }
        }
    }

    private static void signal(String signal, Process server) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + signal, String.valueOf(server.pid()))
                .inheritIO()
                .start();
        assertThat(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0)
                .as("kill -%s", signal)
                .isTrue();
    }
}
