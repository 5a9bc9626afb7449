package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.Lease;
import dev.leasehold.LeaseEvent;
import dev.leasehold.LeaseEventType;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.testkit.TcpProxy;
import dev.leasehold.testkit.TestServices;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Batched renewal through a link that stops carrying anything ({@link TcpProxy} black-holes both
 * directions) while the client keeps Lettuce's default 60 s command timeout: every lease is lost at
 * its own local deadline although the batch call has no answer, and the renewal worker blocked in
 * that call is interrupted then, long before the client would give up on it.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedisHungRenewalTest {

    @Test
    void aBlackHoledBatchLosesItsLeasesAtTheirDeadlineAndFreesItsWorker() throws Exception {
        TestServices.RedisEndpoint endpoint = TestServices.redis();
        List<LeaseEvent> events = new CopyOnWriteArrayList<>();
        try (TcpProxy proxy = TcpProxy.to(endpoint.host(), endpoint.port())) {
            RedisClient client = RedisClient.create(RedisURI.create(proxy.host(), proxy.port()));
            try (RedisLeaseStore store = RedisLeaseStore.builder(client)
                            .keyPrefix("lh-hung-" + UUID.randomUUID() + ":")
                            .build();
                    LockService service =
                            LockService.builder(store).listener(events::add).build()) {
                assertThat(store.renewalBatchLimit()).isGreaterThan(1);
                LeaseOptions options = LeaseOptions.builder()
                        .leaseFor(Duration.ofSeconds(2))
                        .renewal(true)
                        .build();
                List<Lease> leases = new ArrayList<>();
                for (int i = 0; i < 5; i++) {
                    leases.add(service.tryAcquire(LockKey.of("hung", "k" + i), options)
                            .orElseThrow());
                }
                proxy.blackhole(TcpProxy.Direction.BOTH);
                try {
                    Awaitility.await("a renewal worker blocked in a batch call with no answer")
                            .atMost(Duration.ofSeconds(20))
                            .until(() -> workersInBatchCalls() > 0);
                    Awaitility.await("every lease lost at its local deadline")
                            .atMost(Duration.ofSeconds(20))
                            .until(() -> events.stream()
                                            .filter(e -> e.type() == LeaseEventType.LOST)
                                            .count()
                                    == leases.size());
                    assertThat(leases)
                            .allSatisfy(lease -> assertThat(lease.isHeld()).isFalse());
                    assertThat(events)
                            .filteredOn(e -> e.type() == LeaseEventType.RENEWAL_FAILED)
                            .as("renewal failures reported before the losses (the client's timeout is 60 s)")
                            .isEmpty();
                    Awaitility.await("no renewal worker left blocked in the black-holed batch call")
                            .atMost(Duration.ofSeconds(20))
                            .until(() -> workersInBatchCalls() == 0);
                } finally {
                    proxy.heal(); // the service releases what it holds as it closes
                }
            } finally {
                client.shutdown(Duration.ZERO, Duration.ofSeconds(5));
            }
        }
    }

    /** The engine's renewal workers whose stack is inside a batch's store call. */
    private static long workersInBatchCalls() {
        return Thread.getAllStackTraces().entrySet().stream()
                .filter(e -> e.getKey().getName().startsWith("leasehold-renewal-"))
                .filter(e -> Arrays.stream(e.getValue())
                        .anyMatch(frame -> frame.getClassName().equals(RedisRenewals.class.getName())))
                .count();
    }
}
