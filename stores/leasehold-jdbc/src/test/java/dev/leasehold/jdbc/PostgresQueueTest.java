package dev.leasehold.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.Lease;
import dev.leasehold.LeaseInfo;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.spi.AcquireRequest;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import dev.leasehold.testkit.TestServices;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/** Many processes on one key, on Postgres. */
class PostgresQueueTest extends AbstractJdbcQueueTest {

    @Override
    protected TestServices.JdbcEndpoint endpoint() {
        return TestServices.postgres();
    }

    @Override
    protected Database database() {
        return Database.POSTGRESQL;
    }

    /**
     * The hand-off's notification wakes a queued waiter on PostgreSQL, so while the key stays held
     * the waiter asks again only to keep its place alive: about once per third of the place's TTL
     * (here 3 s), not once per release poll interval (50 ms, some 30 statements in the window). It
     * is still handed the key when the holder releases.
     */
    @Test
    void aQueuedWaiterAsksAgainOnlyToKeepItsPlaceAndIsHandedTheKeyAtTheRelease() throws Exception {
        LockKey key = key("paced");
        LockService holderSide = service(b -> b.fairQueue(Duration.ofSeconds(3)));
        AtomicLong statements = new AtomicLong();
        JdbcLeaseStore counted = JdbcLeaseStore.builder(new WrappingDataSource(pool(), c -> counting(c, statements)))
                .database(database())
                .fairQueue(Duration.ofSeconds(3))
                .build();
        LockService waiterSide = service(counted);
        LeaseOptions options = LeaseOptions.builder()
                .leaseFor(Duration.ofSeconds(30))
                .waitFor(Duration.ofSeconds(20))
                .build();
        Lease held = holderSide.acquire(key, options);
        ExecutorService waiting = Executors.newSingleThreadExecutor();
        try {
            Future<Lease> waiter = waiting.submit(() -> waiterSide.acquire(key, options));
            // its first ask, refused, and its place
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> statements.get() >= 2);
            long before = statements.get();
            // Not a synchronisation: the holder keeps the key this long, the window counted.
            TimeUnit.MILLISECONDS.sleep(1500);
            long during = statements.get() - before;
            assertThat(during)
                    .as("statements of the queued waiter while the key stayed held for 1.5 s")
                    .isLessThanOrEqualTo(10);
            long fence = held.fence();
            held.close();
            try (Lease handed = waiter.get(10, TimeUnit.SECONDS)) {
                assertThat(handed.fence()).isGreaterThan(fence);
            }
        } finally {
            waiting.shutdownNow();
        }
    }

    /**
     * A holder that never queued releases by a single UPDATE of the lease row, which still hands
     * the key to the head waiter (queued by another store), with a fence above the ended one, and
     * wakes that waiter's store with a notice naming the grant that ended, not the new one.
     */
    @Test
    void aReleaseByAnOwnerThatNeverQueuedHandsTheKeyOnAndNamesTheEndedGrant() throws Exception {
        Duration lease = Duration.ofSeconds(30);
        JdbcLeaseStore holderStore = store(b -> b.fairQueue(Duration.ofSeconds(30)));
        JdbcLeaseStore waiterStore = store(b -> b.fairQueue(Duration.ofSeconds(30)));
        LockKey key = key("unqueued-release");
        String holder = "holder-" + UUID.randomUUID();
        AcquireResult taken = holderStore.tryAcquire(key, holder, lease);
        assertThat(taken).isInstanceOf(AcquireResult.Granted.class);
        long ended = ((AcquireResult.Granted) taken).grant().fence();
        BlockingQueue<ReleaseNotice> notices = new LinkedBlockingQueue<>();
        ReleaseSubscription subscription = waiterStore.subscribe(key, notices::add);
        try {
            String waiter = "waiter-" + UUID.randomUUID();
            assertThat(waiterStore.tryAcquire(AcquireRequest.waiting(key, waiter, lease, null)))
                    .isInstanceOf(AcquireResult.Busy.class);
            assertThat(places(key)).containsExactly(waiter);

            assertThat(holderStore.release(key, holder)).isTrue();

            ReleaseNotice notice = notices.poll(10, TimeUnit.SECONDS);
            assertThat(notice).as("the waiter's store was woken").isNotNull();
            assertThat(notice.key()).isEqualTo(key.render());
            assertThat(notice.fence())
                    .as("the notice names the grant that ended")
                    .isEqualTo(ended);
            assertThat(notice.forced()).isFalse();
            LeaseInfo handed = waiterStore.inspect(key).orElseThrow();
            assertThat(handed.fence()).as("the waiter's grant").isGreaterThan(ended);
            assertThat(waiterStore.release(key, waiter))
                    .as("the key was handed to the waiter")
                    .isTrue();
        } finally {
            subscription.close();
        }
    }

    /** {@code connection}, counting the statements prepared on it. */
    private static Connection counting(Connection connection, AtomicLong statements) {
        return (Connection) Proxy.newProxyInstance(
                Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                    if (method.getName().startsWith("prepare")) {
                        statements.incrementAndGet();
                    }
                    try {
                        return method.invoke(connection, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }
}
