package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.Lease;
import dev.leasehold.LeaseEventType;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockBusyException;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * How a wait ends on a private {@code redis-server}, also one paused with SIGSTOP: only a waiter
 * holds a place in a key's queue, a place is left on every path a wait ends (also when its only
 * ask got no answer in time), a key handed to a waiter that left goes on at once, and a wait never
 * outlasts its {@code waitFor} for the leave.
 */
class RedisGiveUpTest {

    private static final Duration LEASE = Duration.ofSeconds(30);
    private static LocalRedis local;
    private static Process server;
    private static RedisClient client;
    private static StatefulRedisConnection<String, String> probe;
    private static int keys;
    private final ExecutorService threads = Executors.newCachedThreadPool();

    @BeforeAll
    static void start() throws Exception {
        local = new LocalRedis();
        int port = LocalRedis.freePortPair();
        server = local.server(port);
        client = RedisClient.create("redis://127.0.0.1:" + port);
        client.setOptions(ClientOptions.builder()
                .timeoutOptions(TimeoutOptions.enabled(Duration.ofSeconds(5)))
                .build());
        probe = client.connect();
    }

    @AfterAll
    static void stop() {
        if (probe != null) {
            probe.close();
            client.shutdown();
        }
        if (local != null) {
            local.close();
        }
    }

    @AfterEach
    void resume() throws Exception {
        signal("CONT");
        threads.shutdownNow();
    }

    private static LockKey newKey() {
        return LockKey.of("giveup", "k" + (++keys) + "-" + System.nanoTime());
    }

    private static final String PREFIX = "giveup-test:";

    /** The default mode, the fair queue, with its default queue TTL. */
    private static RedisLeaseStore fairStore() {
        return defaultStore();
    }

    private static RedisLeaseStore defaultStore() {
        return RedisLeaseStore.builder(client).keyPrefix(PREFIX).build();
    }

    private static long places(LockKey key) {
        return probe.sync().zcard(new RedisKeys(PREFIX).lease(key) + ":queue");
    }

    private static LeaseOptions waitFor(Duration wait) {
        return LeaseOptions.builder().leaseFor(LEASE).waitFor(wait).build();
    }

    /** A waiter that takes the key when it comes and gives it back at once; counts down when done. */
    private Future<Boolean> waiterThatPassesTheKeyOn(LockService locks, LockKey key) {
        return threads.submit(() -> {
            try (Lease lease = locks.acquire(key, waitFor(Duration.ofSeconds(30)))) {
                return lease.isHeld();
            }
        });
    }

    @Test
    void inTheFairModeASingleTryOrABatchTakesNoPlaceWhileAWaiterOfTheSameStoreWaits() throws Exception {
        LockKey key = newKey();
        try (RedisLeaseStore elsewhere = fairStore();
                RedisLeaseStore here = fairStore();
                LockService other = LockService.builder(elsewhere).build();
                LockService locks = LockService.builder(here).fair(false).build()) {
            Lease held = other.tryAcquire(key, LeaseOptions.defaults()).orElseThrow();
            Future<Boolean> waiter = waiterThatPassesTheKeyOn(locks, key);
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> places(key) == 1);

            assertThat(locks.tryAcquire(key, LeaseOptions.defaults())).isEmpty();
            assertThat(locks.tryAcquireAll(List.of(key, newKey()), LeaseOptions.defaults()))
                    .isEmpty();
            assertThat(places(key)).as("places after a single try and a batch").isEqualTo(1);

            held.close(); // handed to the waiter, which gives it back: nobody else is queued
            assertThat(waiter.get(10, TimeUnit.SECONDS)).isTrue();
            assertThat(other.tryAcquire(key, LeaseOptions.defaults()))
                    .as("the key once the only waiter passed it on")
                    .isPresent()
                    .get()
                    .satisfies(Lease::close);
        }
    }

    @Test
    void aFairWaiterWhoseOnlyAskGotNoAnswerInTimeLeavesTheQueue() throws Exception {
        LockKey key = newKey();
        try (RedisLeaseStore elsewhere = fairStore();
                RedisLeaseStore here = fairStore();
                LockService other = LockService.builder(elsewhere).build();
                LockService locks = LockService.builder(here).fair(false).build()) {
            Lease held = other.tryAcquire(key, LeaseOptions.defaults()).orElseThrow();
            Future<Boolean> first = waiterThatPassesTheKeyOn(locks, key); // this store now waits for the key
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> places(key) == 1);

            signal("STOP");
            try {
                assertThatThrownBy(() ->
                                locks.acquire(key, waitFor(Duration.ofMillis(300)), LockOwner.create("second waiter")))
                        .as("a wait whose ask got no answer ran out")
                        .isInstanceOf(LockBusyException.class);
            } finally {
                signal("CONT");
            }
            here.inspect(key); // on the store's connection: after the late ask and its leave

            held.close(); // handed to the first waiter, which gives it back
            assertThat(first.get(10, TimeUnit.SECONDS)).isTrue();
            assertThat(other.tryAcquire(key, LeaseOptions.defaults()))
                    .as("the key, not handed to the waiter that gave up")
                    .isPresent()
                    .get()
                    .satisfies(Lease::close);
            assertThat(places(key)).isZero();
        }
    }

    @Test
    void aWaitDoesNotOutlastItsWaitForToLeaveAPausedRedis() throws Exception {
        Duration wait = Duration.ofMillis(500);
        long leastLateNanos = Long.MAX_VALUE;
        for (int trial = 0; trial < 3; trial++) {
            LockKey key = newKey();
            CountDownLatch toldBusy = new CountDownLatch(1);
            try (RedisLeaseStore elsewhere = defaultStore();
                    RedisLeaseStore here = defaultStore();
                    LockService other = LockService.builder(elsewhere).build();
                    LockService locks = LockService.builder(here)
                            .listener(event -> {
                                if (event.type() == LeaseEventType.WAITING) {
                                    toldBusy.countDown();
                                }
                            })
                            .build()) {
                Lease held = other.tryAcquire(key, LeaseOptions.defaults()).orElseThrow();
                CompletableFuture<Long> waited = CompletableFuture.supplyAsync(
                        () -> {
                            long start = System.nanoTime();
                            try {
                                locks.acquire(key, waitFor(wait)).close();
                                throw new AssertionError("granted a held key");
                            } catch (LockBusyException e) {
                                return System.nanoTime() - start;
                            } catch (InterruptedException e) {
                                throw new AssertionError(e);
                            }
                        },
                        threads);
                assertThat(toldBusy.await(10, TimeUnit.SECONDS)).isTrue();
                signal("STOP"); // Redis said busy; now it answers nothing
                try {
                    long late = waited.get(10, TimeUnit.SECONDS) - wait.toNanos();
                    leastLateNanos = Math.min(leastLateNanos, late);
                } finally {
                    signal("CONT");
                }
                held.close();
            }
        }
        assertThat(Duration.ofNanos(leastLateNanos))
                .as("the least a wait of %s outlasted it in 3 trials on a paused Redis", wait)
                .isLessThan(Duration.ofMillis(40));
    }

    @Test
    void aWaitEndedByClosingTheServiceOnAPausedRedisReturnsWithoutWaitingForTheLeave() throws Exception {
        LockKey key = newKey();
        CountDownLatch toldBusy = new CountDownLatch(1);
        try (RedisLeaseStore elsewhere = defaultStore();
                RedisLeaseStore here = defaultStore();
                LockService other = LockService.builder(elsewhere).build()) {
            LockService locks = LockService.builder(here)
                    .listener(event -> {
                        if (event.type() == LeaseEventType.WAITING) {
                            toldBusy.countDown();
                        }
                    })
                    .build();
            Lease held = other.tryAcquire(key, LeaseOptions.defaults()).orElseThrow();
            Future<Throwable> waiter = threads.submit(() -> {
                try {
                    locks.acquire(key, waitFor(Duration.ofSeconds(30))).close();
                    return null;
                } catch (RuntimeException e) {
                    return e;
                }
            });
            assertThat(toldBusy.await(10, TimeUnit.SECONDS)).isTrue();
            signal("STOP");
            try {
                long closing = System.nanoTime();
                threads.submit(locks::close);
                Throwable ended = waiter.get(10, TimeUnit.SECONDS);
                Duration after = Duration.ofNanos(System.nanoTime() - closing);
                assertThat(ended).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
                assertThat(after)
                        .as("the waiter returned after the close (command timeout 5 s)")
                        .isLessThan(Duration.ofSeconds(2));
            } finally {
                signal("CONT");
            }
            held.close();
        }
    }

    private static void signal(String signal) throws IOException, InterruptedException {
        LocalRedis.signal(server, signal);
    }
}
