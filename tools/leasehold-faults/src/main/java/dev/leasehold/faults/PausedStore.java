package dev.leasehold.faults;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.faults.History.Kind;
import dev.leasehold.faults.History.Result;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;

/**
 * 4. Redis of the suite's own is stopped ({@code SIGSTOP}) for three times the leases held on it,
 * with the client's default command timeout. Protected: every holder is told ({@code onLost})
 * within its expiry (last confirmed grant or renewal + lease) + 100 ms; every caller of {@code
 * acquire} during the pause returns within its wait time (+ 200 ms of scheduling slack); after
 * {@code SIGCONT} every key can be taken again. Canary: a plain Redis command sent during the pause
 * on the same kind of connection, which blocks past that wait time.
 */
final class PausedStore implements Scenario {

    static final String TITLE = "4 paused store";
    private static final Duration LEASE = Duration.ofSeconds(1);
    private static final Duration PAUSE = Duration.ofSeconds(3);
    private static final Duration WAIT = Duration.ofMillis(500);
    private static final Duration LOST_SLACK = Duration.ofMillis(100);
    private static final Duration WAIT_SLACK = Duration.ofMillis(200);

    @Override
    public String title() {
        return TITLE;
    }

    @Override
    public List<String> backends() {
        return List.of("redis");
    }

    @Override
    public Outcome run(String backend, Profile profile) throws Exception {
        if (!RedisProcess.installed()) {
            return Outcome.absent(TITLE, backend, Outcome.Status.TOOL_ABSENT, "redis-server is not installed");
        }
        Tally tally = new Tally(TITLE, backend);
        History history = new History();
        Path dir = RedisProcess.newDir("paused-store");
        ExecutorService callers = Executors.newCachedThreadPool();
        try (RedisProcess redis = RedisProcess.server(dir);
                Library.Store storeA = Library.redisStore(RedisURI.create(redis.uri()), "faults:");
                Library.Store storeB = Library.redisStore(RedisURI.create(redis.uri()), "faults:")) {
            Confirmations confirmations = new Confirmations();
            try (LockService a = Library.locks(storeA.store(), confirmations::record);
                    LockService b = Library.locks(storeB.store(), confirmations::record)) {
                RedisClient rawClient = Library.redisClient(RedisURI.create(redis.uri()));
                Workload load = new Workload("W", a, null, history, "paused-store", LEASE, profile);
                try (StatefulRedisConnection<String, String> raw = rawClient.connect()) {
                    for (int round = 0; profile.more(round, 1, history.size()); round++) {
                        round(redis, List.of(a, b), raw, confirmations, callers, history, tally, round);
                    }
                } finally {
                    load.close();
                    rawClient.shutdown();
                }
                tally.check(new HistoryChecker(PausedHolder.OVERLAP, true), history, Map.of());
            }
        } finally {
            callers.shutdownNow();
            StoreRestart.deleteQuietly(dir);
        }
        return tally.outcome();
    }

    private static void round(
            RedisProcess redis,
            List<LockService> services,
            StatefulRedisConnection<String, String> raw,
            Confirmations confirmations,
            ExecutorService callers,
            History history,
            Tally tally,
            int round)
            throws Exception {
        LeaseOptions options = LeaseOptions.builder()
                .leaseFor(LEASE)
                .waitFor(WAIT)
                .renewal(true)
                .build();
        List<Lease> held = new ArrayList<>();
        Map<Lease, Long> lostAt = new ConcurrentHashMap<>();
        for (int i = 0; i < 4; i++) {
            LockKey key = LockKey.of("paused-store", "r" + round + "k" + i);
            String process = "H" + (i % 2);
            // Before the fault: a generous wait, as the workload may keep the store busy.
            Lease lease = acquire(services.get(i % 2), key, options.withWait(Duration.ofSeconds(10)), history, process);
            lease.onLost(e -> lostAt.put(lease, history.lost(process, lease)));
            held.add(lease);
        }
        redis.pause();
        history.fault("SIGSTOP redis, round " + round);
        long pausedAt = System.nanoTime();
        List<Future<Long>> waits = new ArrayList<>();
        List<Future<Long>> rawCalls = new ArrayList<>();
        try {
            for (int i = 0; i < 4; i++) {
                LockService service = services.get(i % 2);
                LockKey key = LockKey.of("paused-store", "r" + round + "k" + i);
                waits.add(callers.submit(() -> timed(() -> acquireQuietly(service, key, options))));
            }
            rawCalls.add(callers.submit(() -> timed(() -> raw.sync().get("canary"))));
            // Not a synchronisation: the pause is the fault, and it lasts this long.
            TimeUnit.MILLISECONDS.sleep(PAUSE.toMillis());
        } finally {
            redis.resume();
        }
        long resumedAt = System.nanoTime();
        for (Future<Long> wait : waits) {
            long nanos = wait.get(90, TimeUnit.SECONDS);
            Duration took = Duration.ofNanos(nanos);
            tally.stall(took);
            tally.operation();
            if (took.compareTo(WAIT.plus(WAIT_SLACK)) > 0) {
                tally.violation("a caller of acquire with a wait of " + WAIT.toMillis() + " ms was blocked "
                        + took.toMillis() + " ms by the paused store");
            }
        }
        for (Future<Long> call : rawCalls) {
            Duration took = Duration.ofNanos(call.get(90, TimeUnit.SECONDS));
            if (took.compareTo(WAIT.plus(WAIT_SLACK)) > 0) {
                tally.canary("a plain GET on the paused Redis blocked " + took.toMillis() + " ms");
            }
        }
        for (Lease lease : held) {
            tally.operation();
            Long lost = awaitLost(lease, lostAt);
            Long confirmed = confirmations.lastConfirmed(lease);
            if (lost == null) {
                tally.violation(lease.key() + " was never reported lost, though the store was paused for "
                        + PAUSE.toMillis() + " ms");
            } else if (confirmed != null) {
                Duration after = Duration.ofNanos(lost - confirmed);
                tally.note(lease.key() + " lost " + after.toMillis() + " ms after its last confirmation");
                if (after.compareTo(LEASE.plus(LOST_SLACK)) > 0) {
                    tally.violation(lease.key() + " was reported lost " + after.toMillis()
                            + " ms after its last confirmed grant or renewal: beyond expiry (" + LEASE.toMillis()
                            + " ms) + " + LOST_SLACK.toMillis() + " ms");
                }
            }
            closeQuietly(lease);
        }
        tally.note("pause " + Duration.ofNanos(resumedAt - pausedAt).toMillis() + " ms");
        // Everything resumes: every key can be taken again after SIGCONT.
        for (int i = 0; i < 4; i++) {
            LockKey key = LockKey.of("paused-store", "r" + round + "k" + i);
            LockService service = services.get((i + 1) % 2);
            String process = "H" + ((i + 1) % 2);
            try {
                Lease again = Awaitility.await()
                        .atMost(Duration.ofSeconds(10))
                        .ignoreExceptions()
                        .until(
                                () -> acquire(service, key, options.withWait(Duration.ofSeconds(2)), history, process),
                                l -> l != null);
                if (again.isHeld()) {
                    tally.operation();
                }
                long release = History.now();
                again.close();
                history.add(
                        process,
                        Kind.RELEASE,
                        key.render(),
                        again.ownerToken(),
                        release,
                        again.fence(),
                        Result.OK,
                        null,
                        null);
            } catch (RuntimeException e) {
                tally.violation(key + " could not be taken again after SIGCONT: " + e);
            }
        }
    }

    /** A grant, recorded in the history once given. */
    private static Lease acquire(
            LockService service, LockKey key, LeaseOptions options, History history, String process)
            throws InterruptedException {
        long invoked = History.now();
        Lease lease = service.acquire(key, options);
        history.add(
                process, Kind.ACQUIRE, key.render(), lease.ownerToken(), invoked, lease.fence(), Result.OK, null, null);
        return lease;
    }

    /** When the lease was reported lost, waiting up to 5 s after the pause for the report. */
    private static Long awaitLost(Lease lease, Map<Lease, Long> lostAt) {
        try {
            Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> lostAt.containsKey(lease));
        } catch (ConditionTimeoutException e) {
            return null;
        }
        return lostAt.get(lease);
    }

    private static Object acquireQuietly(LockService service, LockKey key, LeaseOptions options)
            throws InterruptedException {
        try (Lease lease = service.acquire(key, options, LockOwner.create("waiter"))) {
            return lease;
        } catch (RuntimeException e) {
            return e; // busy or a store failure: either is an answer within the wait
        }
    }

    private interface Call {
        Object run() throws Exception;
    }

    private static long timed(Call call) throws Exception {
        long start = System.nanoTime();
        try {
            call.run();
        } catch (RuntimeException e) {
            // an answer all the same
        }
        return System.nanoTime() - start;
    }

    private static void closeQuietly(Lease lease) {
        try {
            lease.close();
        } catch (RuntimeException e) {
            // lost: nothing to release
        }
    }
}
