package dev.leasehold.faults;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.jdbc.Database;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.awaitility.Awaitility;

/**
 * 2. Redis of the suite's own is killed ({@code kill -9}) while a lease is held and comes back
 * without persistence, from an RDB snapshot older than the last grants, or from an AOF ({@code
 * appendfsync everysec}) that lost its unsynced tail (the files as they were a moment before, as
 * after a power cut). The fences the guarded table accepts must never repeat or go back. The
 * canary is a plain Redis counter ({@code INCR}) used as a fence: after each restart it repeats.
 */
final class StoreRestart implements Scenario {

    static final String TITLE = "2 store restart";
    static final String NO_PERSISTENCE = "redis, no persistence";
    static final String OLDER_RDB = "redis, older RDB snapshot";
    static final String AOF_EVERYSEC = "redis, AOF everysec";

    private static final Duration LEASE = Duration.ofSeconds(2);
    private static final LeaseOptions OPTIONS = LeaseOptions.builder()
            .leaseFor(LEASE)
            .waitFor(Duration.ofSeconds(5))
            .build();

    @Override
    public String title() {
        return TITLE;
    }

    @Override
    public List<String> backends() {
        return List.of(NO_PERSISTENCE, OLDER_RDB, AOF_EVERYSEC);
    }

    @Override
    public Outcome run(String backend, Profile profile) throws Exception {
        if (!RedisProcess.installed()) {
            return Outcome.absent(TITLE, backend, Outcome.Status.TOOL_ABSENT, "redis-server is not installed");
        }
        Tally tally = new Tally(TITLE, backend);
        History history = new History();
        Path dir = RedisProcess.newDir("restart");
        String[] options = backend.equals(AOF_EVERYSEC)
                ? new String[] {"--appendonly", "yes", "--appendfsync", "everysec"}
                : new String[0];
        try (PrivateDatabase db = PrivateDatabase.create(Database.POSTGRESQL);
                RedisProcess redis = RedisProcess.server(dir, options);
                Library.Store store =
                        Library.redisStore(Library.redisUri(redis.uri(), Duration.ofSeconds(1)), "faults:");
                LockService locks = Library.locks(store.store())) {
            RedisClient raw = Library.redisClient(Library.redisUri(redis.uri(), Duration.ofSeconds(1)));
            try (StatefulRedisConnection<String, String> canary = raw.connect()) {
                GuardedTable table = new GuardedTable(db, tally, history);
                Workload.createTable(db);
                Counter counter = new Counter(canary, tally);
                LockKey key = LockKey.of("restart", "note1");
                int restarts = 0;
                Workload load = new Workload("W", locks, db.dataSource(), history, "restart", LEASE, profile);
                try {
                    for (; profile.more(restarts, 2, history.size()); restarts++) {
                        restart(backend, redis, dir, canary, locks, key, table, counter, history, restarts);
                    }
                } finally {
                    load.close();
                }
                tally.note(
                        "restarts: " + restarts + ", fences at the guarded table checked: " + tally.operationCount());
                // The store lost grants by design: fences and effects are checked, not overlaps.
                Map<String, Long> effects = new HashMap<>(table.effectCounts());
                effects.putAll(Workload.effectCounts(db.dataSource()));
                tally.check(new HistoryChecker(Duration.ZERO, false), history, effects);
            } finally {
                raw.shutdown();
            }
        } finally {
            deleteQuietly(dir);
        }
        return tally.outcome();
    }

    private static void restart(
            String backend,
            RedisProcess redis,
            Path dir,
            StatefulRedisConnection<String, String> canary,
            LockService locks,
            LockKey key,
            GuardedTable table,
            Counter counter,
            History history,
            int restart)
            throws Exception {
        grants(locks, key, table, counter, 3, "before restart " + restart);
        Path saved = snapshot(backend, redis, canary, dir.resolve("saved-" + restart));
        grants(locks, key, table, counter, 3, "after the snapshot " + restart);
        Lease held = locks.acquire(key, OPTIONS); // killed mid-hold
        table.write(held, "before restart " + restart);
        counter.next("the holder during restart " + restart);
        redis.kill();
        history.fault("kill -9 redis, restart " + restart);
        restore(backend, redis, saved);
        redis.start();
        long start = System.nanoTime();
        awaitStore(locks, key);
        counter.tally.stallSince(start);
        close(held);
        grants(locks, key, table, counter, 3, "after restart " + restart);
    }

    private static void grants(
            LockService locks, LockKey key, GuardedTable table, Counter counter, int count, String when)
            throws Exception {
        for (int i = 0; i < count; i++) {
            try (Lease lease = locks.acquire(key, OPTIONS)) {
                table.write(lease, when);
                counter.next(when);
            }
        }
    }

    /** What the server will come back from; the files are copied now for the AOF case. */
    private static Path snapshot(
            String backend, RedisProcess redis, StatefulRedisConnection<String, String> raw, Path copy)
            throws Exception {
        if (backend.equals(OLDER_RDB)) {
            raw.sync().save();
        } else if (backend.equals(AOF_EVERYSEC)) {
            // What had reached the disk a moment ago; the writes after it are the unsynced tail.
            Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> Files.isDirectory(redis.aofDir()));
            copyDir(redis.aofDir(), copy);
        }
        return copy;
    }

    private static void restore(String backend, RedisProcess redis, Path copy) throws Exception {
        if (backend.equals(AOF_EVERYSEC)) {
            deleteQuietly(redis.aofDir());
            copyDir(copy, redis.aofDir());
        } else if (backend.equals(NO_PERSISTENCE)) {
            Files.deleteIfExists(redis.rdbFile());
        }
        // OLDER_RDB: the file on disk is the snapshot; nothing was saved after it (save "").
    }

    /** Waits until the restarted server grants again (the client reconnects on its own). */
    private static void awaitStore(LockService locks, LockKey key) {
        Awaitility.await("the restarted Redis to grant again")
                .atMost(Duration.ofSeconds(30))
                .pollInterval(Duration.ofMillis(50))
                .ignoreException(LeaseStoreException.class)
                .until(() -> {
                    locks.inspect(key);
                    return true;
                });
    }

    private static void close(Lease lease) {
        try {
            lease.close();
        } catch (RuntimeException e) {
            // the lease died with the server: nothing to release
        }
    }

    /** The canary: a plain Redis counter used as a fence, as a hand-written lock would. */
    private static final class Counter {
        private final StatefulRedisConnection<String, String> raw;
        private final Tally tally;
        private long newest;

        Counter(StatefulRedisConnection<String, String> raw, Tally tally) {
            this.raw = raw;
            this.tally = tally;
        }

        void next(String when) {
            long value = Awaitility.await()
                    .atMost(Duration.ofSeconds(30))
                    .ignoreExceptions()
                    .until(() -> raw.sync().incr("canary:fence"), v -> v != null);
            if (value <= newest) {
                tally.canary("a plain INCR fence gave " + value + " " + when + ", not above " + newest);
            }
            newest = Math.max(newest, value);
            tally.operation();
        }
    }

    static void copyDir(Path from, Path to) throws Exception {
        Files.createDirectories(to);
        try (Stream<Path> files = Files.list(from)) {
            for (Path file : files.toList()) {
                Files.copy(file, to.resolve(file.getFileName()), StandardCopyOption.REPLACE_EXISTING);
            }
        }
    }

    static void deleteQuietly(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (Exception e) {
            // a temporary directory; the OS cleans up the rest
        }
    }
}
