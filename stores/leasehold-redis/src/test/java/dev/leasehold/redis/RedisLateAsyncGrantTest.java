package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockBusyException;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A waiting acquire's reply that comes after its caller gave up and after its service closed, on a
 * server of the test's own (stopped with SIGSTOP while the acquire is in flight): the late grant is
 * given back without a blocking call on the client's I/O thread, so another service on the same
 * store is not held up.
 */
class RedisLateAsyncGrantTest {

    @Test
    void aGrantArrivingAfterItsServiceClosedNeitherStaysHeldNorBlocksTheStoreForAnotherService() throws Exception {
        try (LocalRedis redis = new LocalRedis()) {
            int port = LocalRedis.freePortPair();
            Process server = redis.server(port);
            RedisClient client = RedisClient.create(RedisURI.builder()
                    .withHost("127.0.0.1")
                    .withPort(port)
                    .withTimeout(Duration.ofSeconds(30))
                    .build());
            try (RedisLeaseStore store = RedisLeaseStore.builder(client).build();
                    LockService other = LockService.builder(store).build()) {
                LockKey late = LockKey.of("late", "k");
                LeaseOptions waiting = LeaseOptions.builder()
                        .leaseFor(Duration.ofMinutes(5))
                        .waitFor(Duration.ofMillis(300))
                        .build();
                LockService closing = LockService.builder(store).build();
                // warm up: the service's first waiting acquire and release on a running server (it
                // connects and subscribes to force-releases, which a loaded machine may take longer
                // than the 300 ms wait below to do)
                closing.acquire(
                                LockKey.of("late", "warm"),
                                LeaseOptions.defaults().withWait(Duration.ofSeconds(30)))
                        .close();

                LocalRedis.signal(server, "STOP");
                try {
                    assertThatThrownBy(() -> closing.acquire(late, waiting))
                            .isInstanceOfAny(LeaseStoreException.class, LockBusyException.class);
                    closing.close();
                } finally {
                    LocalRedis.signal(server, "CONT");
                }

                // The late grant arrives now, on the client's I/O thread, for a closed service.
                org.awaitility.Awaitility.await("the late grant given back")
                        .atMost(Duration.ofSeconds(10))
                        .until(() -> store.inspect(late).isEmpty());
                CompletableFuture<Optional<Lease>> next = CompletableFuture.supplyAsync(
                        () -> other.tryAcquire(LockKey.of("late", "other"), LeaseOptions.defaults()));
                Optional<Lease> lease = next.get(10, TimeUnit.SECONDS); // the command timeout is 30 s
                assertThat(lease)
                        .as("another service's acquire on the same store")
                        .isPresent();
                lease.get().close();
            } finally {
                client.shutdown();
            }
        }
    }
}
