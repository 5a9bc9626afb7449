package dev.leasehold.faults;

import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockBusyException;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.faults.History.Kind;
import dev.leasehold.faults.History.Op;
import dev.leasehold.faults.History.Result;
import dev.leasehold.jdbc.Database;
import dev.leasehold.redis.RedisLeaseStore;
import dev.leasehold.testkit.TcpProxy;
import dev.leasehold.testkit.TcpProxy.Direction;
import dev.leasehold.testkit.TestServices;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;

/**
 * 9. One client (A) reaches its store through a {@link TcpProxy}; the others (B, C) reach it
 * directly. The proxy cuts the link, black-holes it (accepts, never answers) or delays it past the
 * lease, both ways, and heals it. Each round, on fresh keys:
 *
 * <ul>
 *   <li><b>holder cut off</b>: A holds (renewed) and is cut off. Its {@code isHeld()} turns false and
 *       {@code onLost} fires within its last confirmed grant or renewal + lease + 100 ms; B then
 *       gets the key with a larger fence and writes through it; when the link heals, A's fenced
 *       write is refused at the guarded table;
 *   <li><b>waiter cut off</b>: A waits for a key B holds and is cut off while it waits; B releases;
 *       C gets the key within the longer of A's place's TTL and A's lease (a key handed to A's
 *       place lasts that long) + the lock service's longest poll (1 s) + 200 ms, and A is never
 *       granted a key it is not told about (the store shows C's grant);
 *   <li><b>release answer lost</b>: A releases while the answers from the store are black-holed
 *       or delayed past the lease; C gets the key at the latest at A's expiry (+ the longest poll
 *       + 200 ms); after the heal A's release again, with its own grant's token, frees nothing:
 *       the store still shows C's grant, and C's fenced write is accepted.
 * </ul>
 *
 * <p>Meanwhile two workloads ({@link Workload}) take shared keys of their own: {@code WF} through a
 * second proxy that suffers each fault at the same moment as A's link (so A's proxy counts A's
 * bytes alone), one grant in four held (renewed) up to 3 leases, and {@code WN} directly; a
 * {@code WF} holder cut off must be told {@code onLost} within its last confirmation + lease + 100
 * ms as A must, and {@code WN} takes the keys it loses, so grants cross the partition. The long
 * profile repeats the rounds until the history holds 10 000 operations.
 *
 * <p>Every operation goes into a {@link History} that {@link HistoryChecker} verifies as a whole.
 * Canary: a probe through the proxy (a Redis {@code PING}, a PostgreSQL SSL request, MariaDB's
 * greeting) answers before each fault and not during it, so the fault was real; and A's unfenced
 * write after the heal lands over B's, as a holder that trusts its lock without a fence would.
 */
final class Partition implements Scenario {

    static final String TITLE = "9 partition";
    private static final Duration LEASE = Duration.ofSeconds(1);
    private static final Duration LOST_SLACK = Duration.ofMillis(100);
    private static final Duration PROBE = Duration.ofMillis(300);
    /** After the fault, the lease and this: A's onLost is overdue and the JVM's threads are dumped. */
    private static final Duration OVERDUE = Duration.ofMillis(300);

    private static final Duration LONGEST_POLL = Duration.ofSeconds(1);
    private static final Duration SLACK = Duration.ofMillis(200);
    /** A's place in the key's queue: the Redis store's default mode is the fair one. */
    private static final Duration REDIS_PLACE_TTL = RedisLeaseStore.DEFAULT_FAIR_QUEUE_TTL;

    private static final Duration SQL_PLACE_TTL = Duration.ofSeconds(2);
    private static final String TABLE = "fault_partition";
    /** How long A's release may block its caller while the answers are lost. */
    private static final Duration CLOSE_BOUND = Duration.ofSeconds(15);

    /**
     * Set on the thread that runs A's release whose answer is to be lost: run when that thread is
     * lent its connection (the pool has checked it), so the fault begins with the release itself.
     */
    private static final ThreadLocal<Runnable> ARM_ON_CONNECTION = new ThreadLocal<>();

    /** The workload's shared keys, and its pause after each operation in the long profile. */
    private static final int LOAD_KEYS = 3;

    private static final Duration LOAD_PACE = Duration.ofMillis(5);

    /**
     * The longest {@code WF} holds a grant across a fault: 3 leases, renewed. On Redis a key handed
     * to a queued waiter lasts the rest of its place (2 s) while the lease is 1 s; such holders were
     * told {@code onLost} up to 2 s after their last confirmation until the lock service trusted a
     * grant for its lease time at most ({@code HeldLease.trusted}).
     */
    private static final Duration FAR_HOLD = LEASE.multipliedBy(3);

    private static final Pattern HOST_PORT = Pattern.compile("//([^/:?]+):(\\d+)");

    @Override
    public String title() {
        return TITLE;
    }

    @Override
    public List<String> backends() {
        return List.of("redis", "postgresql", "mariadb");
    }

    /** What the three rounds break: the link each way, by a black hole, a cut or a delay past the lease. */
    private enum Break {
        BLACKHOLE,
        CUT,
        DELAY;

        void apply(TcpProxy proxy) {
            switch (this) {
                case BLACKHOLE -> proxy.blackhole(Direction.BOTH);
                case CUT -> proxy.cut();
                case DELAY -> proxy.delay(Direction.BOTH, LEASE.multipliedBy(4));
            }
        }

        String describe() {
            return switch (this) {
                case BLACKHOLE -> "black-holed both ways";
                case CUT -> "cut";
                case DELAY -> "delayed " + LEASE.multipliedBy(4).toMillis() + " ms both ways";
            };
        }
    }

    @Override
    public Outcome run(String backend, Profile profile) throws Exception {
        Database database = StoreSpec.database(backend);
        Tally tally = new Tally(TITLE, backend);
        History history = new History();
        ExecutorService workers = Executors.newCachedThreadPool();
        try (PrivateDatabase db = PrivateDatabase.create(database)) {
            db.execute(
                    "CREATE TABLE " + TABLE + " (effect VARCHAR(64) NOT NULL PRIMARY KEY,"
                            + " lock_key VARCHAR(100) NOT NULL, fence BIGINT NOT NULL, process VARCHAR(8) NOT NULL)",
                    "CREATE TABLE fault_partition_canary (lock_key VARCHAR(100) NOT NULL PRIMARY KEY,"
                            + " process VARCHAR(8) NOT NULL)");
            Workload.createTable(db);
            String[] target = target(backend, db);
            try (TcpProxy proxy = TcpProxy.to(target[0], Integer.parseInt(target[1]));
                    TcpProxy loadProxy = TcpProxy.to(target[0], Integer.parseInt(target[1]));
                    Links links = Links.open(backend, db, proxy, loadProxy)) {
                Confirmations confirmations = new Confirmations();
                Confirmations loadConfirmations = new Confirmations();
                try (LockService a = Library.locks(links.far.store(), confirmations::record);
                        LockService near = Library.locks(links.near.store());
                        LockService farLoad = Library.locks(links.farLoad.store(), loadConfirmations::record);
                        LockService nearLoad = Library.locks(links.near.store())) {
                    Run run = new Run(
                            backend, db, proxy, loadProxy, links, a, near, confirmations, tally, history, workers);
                    // Workload threads on shared keys: some behind a proxy of their own that suffers
                    // each fault with A's link (their grants sometimes held across it), the others
                    // direct, so grants of a key pass from one side of the partition to the other.
                    Workload far = new Workload(
                            "WF",
                            farLoad,
                            links.farLoadData,
                            history,
                            "partition-w",
                            LEASE,
                            profile,
                            Workload.Shape.of(LOAD_KEYS, FAR_HOLD, 4, LOAD_PACE, loadConfirmations));
                    Workload direct = new Workload(
                            "WN",
                            nearLoad,
                            db.dataSource(),
                            history,
                            "partition-w",
                            LEASE,
                            profile,
                            Workload.Shape.of(LOAD_KEYS, Duration.ZERO, 1, LOAD_PACE, null));
                    try {
                        for (int round = 0; profile.more(round, 3, history.size()); round++) {
                            Break kind = Break.values()[round % Break.values().length];
                            run.holderCutOff(round, kind);
                            run.waiterCutOff(round, kind == Break.DELAY ? Break.BLACKHOLE : kind);
                            run.releaseAnswerLost(round, round % 2 == 0);
                        }
                    } finally {
                        far.close();
                        direct.close();
                    }
                    tally.note("A's store client answered again at most "
                            + run.longestReconnect().toMillis() + " ms after a heal");
                    far.report(tally, "behind the faulted proxy", LEASE.plus(LOST_SLACK));
                    direct.report(tally, "direct", LEASE.plus(LOST_SLACK));
                    tally.note(Workload.crossings(history, "WF", "WN")
                            + " grants of WN came next on a key after a WF holder was told it lost it");
                }
            }
            java.util.Map<String, Long> effects =
                    new java.util.HashMap<>(HistoryChecker.effectCounts(db.dataSource(), TABLE));
            effects.putAll(Workload.effectCounts(db.dataSource()));
            HistoryChecker.Verdict verdict = new HistoryChecker(LOST_SLACK, true).check(history, effects);
            tally.operations(history.ops().size());
            tally.checked(verdict);
            tally.note("history: " + verdict.summary());
        } finally {
            workers.shutdownNow();
        }
        return tally.outcome();
    }

    /** The store's host and port: the shared Redis, or the database server. */
    private static String[] target(String backend, PrivateDatabase db) {
        if (backend.equals("redis")) {
            TestServices.RedisEndpoint redis = TestServices.redis();
            return new String[] {redis.host(), Integer.toString(redis.port())};
        }
        Matcher m = HOST_PORT.matcher(db.spec().url());
        if (!m.find()) {
            throw new IllegalStateException("no host:port in " + db.spec().url());
        }
        return new String[] {m.group(1), m.group(2)};
    }

    /**
     * The stores: far (through the proxy, for A), near (direct) and the far workload's (through a
     * proxy of its own); where A's and the far workload's guarded writes go.
     */
    private static final class Links implements AutoCloseable {
        final Library.Store far;
        final Library.Store near;
        final Library.Store farLoad;
        final DataSource farData;
        final DataSource farLoadData;
        private final List<HikariDataSource> pools;

        private Links(
                Library.Store far,
                Library.Store near,
                Library.Store farLoad,
                DataSource farData,
                DataSource farLoadData,
                List<HikariDataSource> pools) {
            this.far = far;
            this.near = near;
            this.farLoad = farLoad;
            this.farData = farData;
            this.farLoadData = farLoadData;
            this.pools = pools;
        }

        static Links open(String backend, PrivateDatabase db, TcpProxy proxy, TcpProxy loadProxy) {
            if (backend.equals("redis")) {
                String prefix = "faults-" + UUID.randomUUID().toString().substring(0, 8) + ":";
                Library.Store near =
                        Library.redisStore(Library.redisUri(TestServices.redis().uri(), Duration.ofSeconds(2)), prefix);
                Library.Store far = Library.redisStore(
                        Library.redisUri("redis://" + proxy.host() + ":" + proxy.port(), Duration.ofSeconds(2)),
                        prefix);
                Library.Store farLoad = Library.redisStore(
                        Library.redisUri("redis://" + loadProxy.host() + ":" + loadProxy.port(), Duration.ofSeconds(2)),
                        prefix);
                // The partition is between A and Redis: the guarded database stays reachable.
                return new Links(far, near, farLoad, db.dataSource(), db.dataSource(), List.of());
            }
            HikariDataSource pool = farPool(db, proxy, "faults-far-", 4);
            HikariDataSource loadPool = farPool(db, loadProxy, "faults-load-", 6);
            Library.Store far =
                    Library.jdbcStore(armedOnConnection(pool), db.spec().database());
            Library.Store farLoad = Library.jdbcStore(loadPool, db.spec().database());
            Library.Store near = Library.jdbcStore(db.dataSource(), db.spec().database());
            // The store is the guarded database: A is cut off from both.
            return new Links(far, near, farLoad, pool, loadPool, List.of(pool, loadPool));
        }

        /** A pool of connections to the private database through {@code proxy}. */
        private static HikariDataSource farPool(PrivateDatabase db, TcpProxy proxy, String name, int size) {
            PrivateDatabase.Spec spec = db.spec();
            String url = HOST_PORT.matcher(spec.url()).replaceFirst("//" + proxy.host() + ":" + proxy.port());
            if (!Boolean.getBoolean("faults.partition.noSocketTimeout")) {
                // A deployment's driver setting: without it a call on a black-holed link waits until
                // the link dies, and so does Lease.close() (the README's partition row).
                url += (url.contains("?") ? "&" : "?")
                        + (spec.database() == Database.POSTGRESQL ? "socketTimeout=3" : "socketTimeout=3000");
            }
            return new PrivateDatabase.Spec(spec.database(), url, spec.user(), spec.password(), spec.name())
                    .pool(name + spec.name(), size);
        }

        /** {@code pool}, running the thread's {@link #ARM_ON_CONNECTION} once a connection is lent. */
        private static DataSource armedOnConnection(DataSource pool) {
            return (DataSource) Proxy.newProxyInstance(
                    DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class}, (self, method, args) -> {
                        Object result;
                        try {
                            result = method.invoke(pool, args);
                        } catch (InvocationTargetException e) {
                            throw e.getCause();
                        }
                        if (method.getName().equals("getConnection")) {
                            Runnable arm = ARM_ON_CONNECTION.get();
                            if (arm != null) {
                                ARM_ON_CONNECTION.remove();
                                arm.run();
                            }
                        }
                        return result;
                    });
        }

        @Override
        public void close() {
            far.close();
            farLoad.close();
            near.close();
            pools.forEach(HikariDataSource::close);
        }
    }

    /** One run's state and its three cases. */
    private static final class Run {
        private final String backend;
        private final PrivateDatabase db;
        private final TcpProxy proxy;
        /** The far workload's proxy: it suffers each fault with A's. */
        private final TcpProxy loadProxy;

        private final Links links;
        private final LockService a;
        private final LockService near;
        private final Confirmations confirmations;
        private final Tally tally;
        private final History history;
        private final ExecutorService workers;
        private Duration longestReconnect = Duration.ZERO;

        Run(
                String backend,
                PrivateDatabase db,
                TcpProxy proxy,
                TcpProxy loadProxy,
                Links links,
                LockService a,
                LockService near,
                Confirmations confirmations,
                Tally tally,
                History history,
                ExecutorService workers) {
            this.backend = backend;
            this.db = db;
            this.proxy = proxy;
            this.loadProxy = loadProxy;
            this.links = links;
            this.a = a;
            this.near = near;
            this.confirmations = confirmations;
            this.tally = tally;
            this.history = history;
            this.workers = workers;
        }

        private static LeaseOptions options(Duration lease, Duration wait) {
            return LeaseOptions.builder()
                    .leaseFor(lease)
                    .waitFor(wait)
                    .renewal(true)
                    .build();
        }

        // ---- holder cut off ----

        void holderCutOff(int round, Break kind) throws Exception {
            LockKey key = LockKey.of("partition", "held" + round);
            String k = key.render();
            Lease held = acquire("A", a, key, options(LEASE, Duration.ofSeconds(5)), LockOwner.create("A"));
            CountDownLatch lost = new CountDownLatch(1);
            AtomicLong lostAt = new AtomicLong();
            AtomicReference<String> cause = new AtomicReference<>();
            held.onLost(e -> {
                long at = History.now();
                lostAt.set(at);
                cause.set(e.getMessage());
                history.add(new Op("A", Kind.LOST, k, held.ownerToken(), at, at, held.fence(), Result.OK, null, null));
                lost.countDown();
            });
            if (write("A", held, links.farData, "r" + round + "-held-A0") != Result.OK) {
                tally.violation("A's fenced write to " + k + " before the fault was not accepted");
            }
            unfenced(links.farData, k, "A");
            long faultAt = inject(kind, k, "A holds");
            long gcBefore = LateSignal.gcMillis();
            // A's last confirmation came before the fault, so once the lease and a margin have
            // passed since the fault onLost is overdue: the JVM's threads are written down then.
            String dump = null;
            boolean told = lost.await(LEASE.plus(OVERDUE).toMillis(), TimeUnit.MILLISECONDS);
            if (!told) {
                dump = LateSignal.dumpThreads(
                        "partition-" + backend + "-" + k + "-overdue",
                        "A's onLost on " + k + " (" + kind.describe() + ") not run "
                                + LEASE.plus(OVERDUE).toMillis() + " ms after the fault; isHeld() " + held.isHeld());
                told = lost.await(10_000, TimeUnit.MILLISECONDS);
            }
            if (!told) {
                Long confirmed = confirmations.lastConfirmed(held);
                tally.violation("A, " + kind.describe() + " while it held " + k + ", was never told it lost it"
                        + " (isHeld() " + held.isHeld() + ", last confirmation "
                        + (confirmed == null
                                ? "none"
                                : Duration.ofNanos(History.now() - confirmed).toMillis() + " ms ago")
                        + ")" + explain(key) + " [threads: " + dump + "]");
            } else {
                Long confirmed = confirmations.lastConfirmed(held);
                if (held.isHeld()) {
                    tally.violation("A's lease on " + k + " still says isHeld() after onLost");
                }
                if (confirmed != null) {
                    Duration after = Duration.ofNanos(lostAt.get() - confirmed);
                    tally.note(k + ": A told lost " + after.toMillis() + " ms after its last confirmation ("
                            + kind.describe() + ")");
                    if (after.compareTo(LEASE.plus(LOST_SLACK)) > 0) {
                        Duration event = confirmations.lostAfterConfirmation(held);
                        tally.violation("A was told it lost " + k + " " + after.toMillis()
                                + " ms after its last confirmed grant or renewal: beyond its lease ("
                                + LEASE.toMillis() + " ms) + " + LOST_SLACK.toMillis() + " ms [cause: " + cause.get()
                                + "; LOST event " + (event == null ? "not seen" : event.toMillis() + " ms")
                                + " after that confirmation; " + (LateSignal.gcMillis() - gcBefore)
                                + " ms of GC since the fault; threads while overdue: " + dump + "]");
                    }
                }
            }
            Lease next = acquire("B", near, key, options(LEASE, Duration.ofSeconds(10)), LockOwner.create("B"));
            tally.stall(Duration.ofNanos(History.now() - faultAt));
            if (next.fence() <= held.fence()) {
                tally.violation(
                        "B got fence " + next.fence() + " on " + k + ", not above the cut-off A's " + held.fence());
            }
            if (write("B", next, db.dataSource(), "r" + round + "-held-B") != Result.OK) {
                tally.violation("the new holder B's fenced write to " + k + " was refused");
            }
            unfenced(db.dataSource(), k, "B");
            heal();
            Result late = writeRetrying("A", held, links.farData, "r" + round + "-held-A1");
            if (late == Result.OK) {
                tally.violation("A's fenced write with its old fence " + held.fence() + " on " + k
                        + " was accepted after the heal, over B's " + next.fence());
            } else if (late == Result.UNKNOWN) {
                tally.violation("A's fenced write on " + k + " after the heal got no answer");
            }
            unfencedRetrying(links.farData, k, "A");
            if ("A".equals(canaryOwner(k))) {
                tally.canary("A's unfenced write after the heal landed over B's on " + k);
            }
            closeQuietly(held);
            release("B", next);
        }

        // ---- waiter cut off ----

        void waiterCutOff(int round, Break kind) throws Exception {
            LockKey key = LockKey.of("partition", "waited" + round);
            String k = key.render();
            Lease holder = acquire(
                    "B", near, key, options(Duration.ofSeconds(2), Duration.ofSeconds(5)), LockOwner.create("B"));
            long before = proxy.forwardedBytes();
            long invoked = History.now();
            LockOwner ownerA = LockOwner.create("A");
            Future<Lease> waiting =
                    workers.submit(() -> acquireOrNull("A", a, key, options(LEASE, Duration.ofSeconds(3)), ownerA));
            // A is waiting: it asked, and asked again after the barging bound (50 ms) put it in the queue.
            AtomicLong seen = new AtomicLong(before);
            AtomicLong asks = new AtomicLong();
            Awaitility.await("A's asks for " + k + " through the proxy")
                    .atMost(Duration.ofSeconds(5))
                    .pollInterval(Duration.ofMillis(10))
                    .until(() -> {
                        long now = proxy.forwardedBytes();
                        if (now > seen.get()) {
                            seen.set(now);
                            if (History.now() - invoked > Duration.ofMillis(100).toNanos() || asks.get() == 0) {
                                asks.incrementAndGet();
                            }
                        }
                        return asks.get() >= 2 || waiting.isDone();
                    });
            inject(kind, k, "A waits");
            release("B", holder);
            long released = History.now();
            LockOwner ownerC = LockOwner.create("C");
            Lease taken = acquireOrNull("C", near, key, options(LEASE, Duration.ofSeconds(10)), ownerC);
            Lease waiter = waiting.get(30, TimeUnit.SECONDS);
            if (taken == null) {
                tally.violation("C could not take " + k + " within 10 s of B's release while A, waiting, was cut off: "
                        + lastRefusal + explain(key));
            } else {
                Duration blocked = Duration.ofNanos(History.now() - released);
                Duration placeTtl = backend.equals("redis") ? REDIS_PLACE_TTL : SQL_PLACE_TTL;
                Duration bound = (placeTtl.compareTo(LEASE) > 0 ? placeTtl : LEASE)
                        .plus(LONGEST_POLL)
                        .plus(SLACK);
                tally.stall(blocked);
                tally.note(k + ": C took the key " + blocked.toMillis() + " ms after B's release, A "
                        + (waiter == null ? "not granted" : "granted fence " + waiter.fence()) + " ("
                        + kind.describe() + ")");
                if (blocked.compareTo(bound) > 0) {
                    tally.violation("A's place, cut off, held " + k + " from C for " + blocked.toMillis()
                            + " ms after B's release: beyond " + bound.toMillis() + " ms");
                }
                inspect("C", k, key);
            }
            heal();
            if (taken != null) {
                inspect("C", k, key);
                release("C", taken);
            }
            if (waiter != null) {
                closeQuietly(waiter);
            }
        }

        // ---- release answer lost ----

        void releaseAnswerLost(int round, boolean blackhole) throws Exception {
            LockKey key = LockKey.of("partition", "released" + round);
            String k = key.render();
            Lease held = acquire("A", a, key, options(LEASE, Duration.ofSeconds(5)), LockOwner.create("A"));
            if (write("A", held, links.farData, "r" + round + "-rel-A") != Result.OK) {
                tally.violation("A's fenced write to " + k + " before the fault was not accepted");
            }
            boolean answered = probe();
            String what;
            Runnable fault;
            // The far workload's answers are lost with A's.
            if (blackhole) {
                fault = () -> {
                    proxy.blackhole(Direction.DOWNSTREAM);
                    loadProxy.blackhole(Direction.DOWNSTREAM);
                };
                what = "answers black-holed";
            } else {
                fault = () -> {
                    proxy.delay(Direction.DOWNSTREAM, LEASE.multipliedBy(4));
                    loadProxy.delay(Direction.DOWNSTREAM, LEASE.multipliedBy(4));
                };
                what = "answers delayed " + LEASE.multipliedBy(4).toMillis() + " ms";
            }
            long invoked = History.now();
            Future<?> closing;
            if (backend.equals("redis")) {
                // One connection, no check before a command: the release goes out after the fault.
                fault.run();
                closing = workers.submit(held::close);
            } else {
                // A pool checks an idle connection before lending it; with the answers already gone
                // that check fails and the release is never sent. So the fault begins with the first
                // request after the release's connection was lent: the release reaches the server.
                closing = workers.submit(() -> {
                    ARM_ON_CONNECTION.set(() -> proxy.onNextRequest(fault));
                    try {
                        held.close();
                    } finally {
                        ARM_ON_CONNECTION.remove();
                    }
                });
            }
            history.fault(what + " as A releases " + k);
            // The store itself shows whether the release arrived: the key leaves A before A's
            // expiry only if it did (a release never sent leaves it A's until then).
            String token = held.ownerToken();
            Future<Long> leftA = whenKeyLeaves(workers, near, key, token, Duration.ofSeconds(10));
            // C asks while A's release is still in flight: the key must be free by A's expiry.
            Lease next = acquireOrNull("C", near, key, options(LEASE, Duration.ofSeconds(10)), LockOwner.create("C"));
            long grantedAt = History.now();
            Long left = leftA.get(30, TimeUnit.SECONDS);
            Long lastConfirmed = confirmations.lastConfirmed(held);
            long aExpiry = (lastConfirmed != null ? lastConfirmed : invoked) + LEASE.toNanos();
            if (left != null && left < aExpiry) {
                tally.note(k + ": A's release reached the store (the key left A "
                        + Duration.ofNanos(aExpiry - left).toMillis() + " ms before A's expiry); its answer was "
                        + (blackhole ? "lost" : "delayed"));
            } else {
                tally.violation(k + ": A's release never reached the store (the key "
                        + (left == null ? "never left A" : "left A only at A's expiry")
                        + "): the case tested a release never sent, not one whose answer is lost"
                        + explain(key));
            }
            canaryProbe(answered, what, k);
            Result result;
            String failure = null;
            try {
                closing.get(CLOSE_BOUND.toMillis(), TimeUnit.MILLISECONDS);
                result = Result.OK;
            } catch (java.util.concurrent.ExecutionException e) {
                result = Result.UNKNOWN;
                failure = e.getCause().toString();
            } catch (TimeoutException e) {
                result = Result.UNKNOWN;
                failure = "no return within " + CLOSE_BOUND.toMillis() + " ms";
                tally.violation("A's release of " + k + " (" + what + ") blocked its caller past "
                        + CLOSE_BOUND.toMillis() + " ms, until the link healed");
            }
            history.add("A", Kind.RELEASE, k, held.ownerToken(), invoked, held.fence(), result, null, null);
            tally.note(k + ": A's release (" + what + ") "
                    + (failure == null
                            ? "returned"
                            : "failed after "
                                    + Duration.ofNanos(History.now() - invoked).toMillis() + " ms: " + failure));
            if (next == null) {
                tally.violation("C could not take " + k + " within 10 s of A's release whose answer was lost: "
                        + lastRefusal + explain(key));
            } else {
                Duration took = Duration.ofNanos(grantedAt - invoked);
                tally.stall(took);
                Long confirmed = confirmations.lastConfirmed(held);
                long expiry = (confirmed != null ? confirmed : invoked) + LEASE.toNanos();
                tally.note(k + ": C took the key " + took.toMillis() + " ms after A's release began");
                if (grantedAt > expiry + LONGEST_POLL.plus(SLACK).toNanos()) {
                    tally.violation(k + " was free to C only "
                            + Duration.ofNanos(grantedAt - expiry).toMillis()
                            + " ms after A's expiry (last confirmation + lease), beyond the longest poll + "
                            + SLACK.toMillis() + " ms");
                }
                if (write("C", next, db.dataSource(), "r" + round + "-rel-C0") != Result.OK) {
                    tally.violation("C's fenced write to " + k + " was refused");
                }
            }
            awaitQuietly(closing);
            heal();
            // A's release again, as a client retries a release whose answer it never got.
            long again = History.now();
            Boolean freed = null;
            long deadline = again + Duration.ofSeconds(15).toNanos();
            while (freed == null && History.now() < deadline) {
                try {
                    freed = links.far.store().release(key, held.ownerToken());
                } catch (RuntimeException e) {
                    // the link is coming back: the store client reconnects; try again shortly
                    TimeUnit.MILLISECONDS.sleep(20);
                }
            }
            history.add(
                    "A",
                    Kind.RELEASE,
                    k,
                    held.ownerToken(),
                    again,
                    held.fence(),
                    freed == null ? Result.UNKNOWN : freed ? Result.OK : Result.REFUSED,
                    null,
                    null);
            if (Boolean.TRUE.equals(freed) && next != null) {
                tally.violation("A's second release of " + k + " freed a grant while C held it");
            }
            if (next != null) {
                inspect("C", k, key);
                if (write("C", next, db.dataSource(), "r" + round + "-rel-C1") != Result.OK) {
                    tally.violation("C's fenced write to " + k + " after A's second release was refused");
                }
                release("C", next);
            }
        }

        // ---- faults ----

        private long inject(Break kind, String key, String when) {
            boolean answered = probe();
            kind.apply(proxy);
            kind.apply(loadProxy);
            long at = History.now();
            history.fault(kind.describe() + " while " + when + " " + key);
            canaryProbe(answered, kind.describe(), key);
            return at;
        }

        private void canaryProbe(boolean answeredBefore, String what, String key) {
            if (!answeredBefore) {
                tally.note("the probe got no answer before the fault on " + key + ": not counted");
                return;
            }
            if (!probe()) {
                tally.canary("a probe through the proxy got no answer within " + PROBE.toMillis() + " ms: the link was "
                        + what + " (" + key + ")");
            }
        }

        /**
         * Lets the link pass again and waits until A's store client answers through it: a client
         * reconnects with a backoff that grew while its attempts were reset.
         */
        private void heal() {
            proxy.heal();
            loadProxy.heal();
            history.fault("healed");
            long healed = History.now();
            LockKey probeKey = LockKey.of("partition", "link");
            Awaitility.await("A's store client to answer again after the heal")
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(20))
                    .ignoreExceptions()
                    .until(() -> links.far.store().inspect(probeKey).isEmpty());
            Duration back = Duration.ofNanos(History.now() - healed);
            longestReconnect = back.compareTo(longestReconnect) > 0 ? back : longestReconnect;
        }

        Duration longestReconnect() {
            return longestReconnect;
        }

        /** Whether the store's server answers through the proxy within {@link #PROBE}. */
        private boolean probe() {
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress(proxy.host(), proxy.port()), (int) PROBE.toMillis());
                socket.setSoTimeout((int) PROBE.toMillis());
                OutputStream out = socket.getOutputStream();
                switch (backend) {
                    case "redis" -> out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
                    case "postgresql" -> out.write(new byte[] {0, 0, 0, 8, 4, (byte) 0xd2, 0x16, 0x2f});
                    default -> {
                        // MariaDB greets first
                    }
                }
                out.flush();
                return socket.getInputStream().read() >= 0;
            } catch (IOException e) {
                return false;
            }
        }

        // ---- what a failure message says ----

        /**
         * What a failure needs to be explained afterwards: the proxy's counters (did A's traffic
         * pass while it should not have?) and the key's row as the store itself shows it now.
         */
        private String explain(LockKey key) {
            return " [proxy: " + proxy.acceptedConnections() + " connections accepted, " + proxy.resets()
                    + " reset, " + proxy.droppedBytes() + " B dropped, " + proxy.forwardedBytes()
                    + " B forwarded; store: " + storeRow(key) + "]";
        }

        private String storeRow(LockKey key) {
            StringBuilder row = new StringBuilder();
            try {
                row.append(near.inspect(key)
                        .map(info -> "held by " + info.ownerToken() + ", fence " + info.fence() + ", "
                                + info.remaining().toMillis() + " ms left")
                        .orElse("free"));
            } catch (RuntimeException e) {
                row.append("inspect failed: ").append(causes(e));
            }
            if (!backend.equals("redis")) {
                row.append("; leasehold_lease ").append(rows("leasehold_lease", key));
                row.append("; leasehold_waiter ").append(rows("leasehold_waiter", key));
            }
            return row.toString();
        }

        /** The key's rows of {@code table}, every column, read directly (the store's own view aside). */
        private String rows(String table, LockKey key) {
            try (Connection connection = db.dataSource().getConnection();
                    PreparedStatement select =
                            connection.prepareStatement("SELECT * FROM " + table + " WHERE lock_key = ?")) {
                select.setString(1, key.render());
                try (ResultSet rows = select.executeQuery()) {
                    ResultSetMetaData columns = rows.getMetaData();
                    StringBuilder text = new StringBuilder("[");
                    while (rows.next()) {
                        text.append(text.length() > 1 ? ", {" : "{");
                        for (int c = 1; c <= columns.getColumnCount(); c++) {
                            text.append(c > 1 ? ", " : "")
                                    .append(columns.getColumnLabel(c))
                                    .append('=')
                                    .append(rows.getObject(c));
                        }
                        text.append('}');
                    }
                    return text.append(']').toString();
                }
            } catch (SQLException | RuntimeException e) {
                return "unreadable: " + causes(e);
            }
        }

        // ---- recorded operations ----

        private Lease acquire(String process, LockService service, LockKey key, LeaseOptions options, LockOwner owner)
                throws InterruptedException {
            Lease lease = acquireOrNull(process, service, key, options, owner);
            if (lease == null) {
                throw new IllegalStateException(
                        process + " could not take " + key + " with nothing in the way: " + lastRefusal + explain(key));
            }
            return lease;
        }

        /** Why the last acquire that returned nothing did, for the message of a failed run. */
        private volatile String lastRefusal = "";

        private Lease acquireOrNull(
                String process, LockService service, LockKey key, LeaseOptions options, LockOwner owner)
                throws InterruptedException {
            long invoked = History.now();
            try {
                Lease lease = service.acquire(key, options, owner);
                history.ok(process, Kind.ACQUIRE, lease, invoked);
                return lease;
            } catch (LockBusyException e) {
                history.add(process, Kind.ACQUIRE, key.render(), null, invoked, 0, Result.REFUSED, null, null);
                lastRefusal = "busy after "
                        + Duration.ofNanos(History.now() - invoked).toMillis() + " ms";
                return null;
            } catch (RuntimeException e) {
                history.add(process, Kind.ACQUIRE, key.render(), null, invoked, 0, Result.UNKNOWN, null, null);
                lastRefusal = "failed after "
                        + Duration.ofNanos(History.now() - invoked).toMillis() + " ms: " + causes(e);
                return null;
            }
        }

        private void release(String process, Lease lease) {
            long invoked = History.now();
            Result result = Result.OK;
            try {
                lease.close();
            } catch (RuntimeException e) {
                result = Result.UNKNOWN;
            }
            history.add(
                    process,
                    Kind.RELEASE,
                    lease.key().render(),
                    lease.ownerToken(),
                    invoked,
                    lease.fence(),
                    result,
                    null,
                    null);
        }

        private void inspect(String process, String k, LockKey key) {
            long invoked = History.now();
            Optional<dev.leasehold.LeaseInfo> info = near.inspect(key);
            history.add(
                    process,
                    Kind.INSPECT,
                    k,
                    null,
                    invoked,
                    info.map(dev.leasehold.LeaseInfo::fence).orElse(0L),
                    Result.OK,
                    null,
                    null);
        }

        private Result write(String process, Lease lease, DataSource data, String effect) {
            String k = lease.key().render();
            long invoked = History.now();
            Result result;
            try {
                boolean accepted = Library.fencedWrite(data, lease, tx -> {
                    try (PreparedStatement insert = tx.prepareStatement(
                            "INSERT INTO " + TABLE + " (effect, lock_key, fence, process) VALUES (?, ?, ?, ?)")) {
                        insert.setString(1, effect);
                        insert.setString(2, k);
                        insert.setLong(3, lease.fence());
                        insert.setString(4, process);
                        insert.executeUpdate();
                    }
                });
                result = accepted ? Result.OK : Result.REFUSED;
            } catch (SQLException | RuntimeException e) {
                result = Result.UNKNOWN;
            }
            history.add(process, Kind.WRITE, k, lease.ownerToken(), invoked, lease.fence(), result, TABLE, effect);
            return result;
        }

        /** A write through a link just healed: tried again (as a new effect) while it gets no answer. */
        private Result writeRetrying(String process, Lease lease, DataSource data, String effect) {
            Result result = Result.UNKNOWN;
            long deadline = History.now() + Duration.ofSeconds(20).toNanos();
            for (int attempt = 0; result == Result.UNKNOWN && History.now() < deadline; attempt++) {
                result = write(process, lease, data, effect + "-" + attempt);
            }
            return result;
        }

        private void unfenced(DataSource data, String k, String process) throws SQLException {
            try (Connection connection = data.getConnection();
                    PreparedStatement upsert =
                            connection.prepareStatement("DELETE FROM fault_partition_canary WHERE lock_key = ?");
                    PreparedStatement insert = connection.prepareStatement(
                            "INSERT INTO fault_partition_canary (lock_key, process) VALUES (?, ?)")) {
                connection.setAutoCommit(false);
                upsert.setString(1, k);
                upsert.executeUpdate();
                insert.setString(1, k);
                insert.setString(2, process);
                insert.executeUpdate();
                connection.commit();
            }
        }

        private void unfencedRetrying(DataSource data, String k, String process) throws Exception {
            long deadline = History.now() + Duration.ofSeconds(20).toNanos();
            while (true) {
                try {
                    unfenced(data, k, process);
                    return;
                } catch (SQLException e) {
                    if (History.now() > deadline) {
                        throw e;
                    }
                    TimeUnit.MILLISECONDS.sleep(20);
                }
            }
        }

        private String canaryOwner(String k) throws SQLException {
            try (Connection connection = db.dataSource().getConnection();
                    PreparedStatement select = connection.prepareStatement(
                            "SELECT process FROM fault_partition_canary WHERE lock_key = ?")) {
                select.setString(1, k);
                try (ResultSet row = select.executeQuery()) {
                    return row.next() ? row.getString(1) : null;
                }
            }
        }

        private static void awaitQuietly(Future<?> call) throws InterruptedException {
            try {
                call.get(30, TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException | TimeoutException e) {
                // its outcome is already recorded
            }
        }

        private static void closeQuietly(Lease lease) {
            try {
                lease.close();
            } catch (RuntimeException e) {
                // a lost lease: nothing to give back
            }
        }
    }

    /** An exception and its causes down to the root, the part that says what actually failed. */
    static String causes(Throwable e) {
        StringBuilder text = new StringBuilder(e.toString());
        Throwable cause = e.getCause();
        for (int depth = 0; cause != null && cause != e && depth < 6; depth++, cause = cause.getCause()) {
            text.append(" <- ").append(cause);
        }
        return text.toString();
    }

    /**
     * When ({@link History#now()}) the store, as {@code service} inspects it, first shows {@code
     * key} no longer held by {@code token}, watched from a thread of {@code workers}; null if not
     * within {@code atMost}.
     */
    static Future<Long> whenKeyLeaves(
            ExecutorService workers, LockService service, LockKey key, String token, Duration atMost) {
        return workers.submit(() -> {
            AtomicLong at = new AtomicLong();
            try {
                Awaitility.await("the key " + key.render() + " to leave its holder")
                        .atMost(atMost)
                        .pollDelay(Duration.ZERO)
                        .pollInterval(Duration.ofMillis(5))
                        .ignoreExceptions()
                        .until(() -> {
                            Optional<dev.leasehold.LeaseInfo> info = service.inspect(key);
                            at.set(History.now());
                            return info.isEmpty() || !token.equals(info.get().ownerToken());
                        });
            } catch (ConditionTimeoutException e) {
                return null;
            }
            return at.get();
        });
    }
}
