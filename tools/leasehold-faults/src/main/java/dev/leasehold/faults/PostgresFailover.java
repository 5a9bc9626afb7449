package dev.leasehold.faults;

import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.faults.History.Kind;
import dev.leasehold.faults.History.Result;
import dev.leasehold.jdbc.Database;
import dev.leasehold.jdbc.JdbcSchema;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.LongStream;
import javax.sql.DataSource;

/**
 * 11. The SQL lease store on a PostgreSQL primary with a standby, asynchronous or synchronous.
 *
 * <p>Asynchronous: the standby is killed, so that the grants that follow are never replicated;
 * more grants are made, the last of them held, and the primary is killed ({@code SIGKILL}) while
 * clients are taking further keys; the standby is started again and promoted, and a new client
 * takes the key there. Its fence must be above every fence handed out before, at a guarded table on
 * another server and at one on the promoted server, and the old holder's fenced writes must be
 * refused at both. Canary: a plain counter on the primary used as a fence hands out a value again
 * after the failover. The acknowledged grants the promoted standby lacks are counted.
 *
 * <p>Synchronous: the same without killing the standby (every commit waits for it). On top of the
 * fences, every grant acknowledged to a client before the kill must be on the promoted standby,
 * with its owner and fence, and the plain counter must not repeat; the old holder's lease, on the
 * promoted standby too, keeps the new client out until it ends, and the history checker checks that
 * grants never overlap (200 ms bound). Canary: acquires were in flight when the primary was killed
 * (the standby's WAL receiver is stopped with {@code SIGSTOP} until a grant's commit waits for it,
 * then the primary is killed: acquires invoked before the kill and never acknowledged).
 *
 * <p>Both: a {@link Workload} of its own pool takes the held key and two keys of its own on the
 * primary, from the standby's kill (or the same point with a synchronous standby) through the
 * primary's kill, and another takes the same keys on the promoted standby afterwards; every grant
 * there must carry a fence above every fence the old primary handed out, the workload's too. Its
 * sessions are not among those counted waiting for the synchronous standby, and its grants not
 * among the acknowledged ones counted on the promoted standby. The long profile repeats the
 * failover until the history holds its least number of operations.
 */
final class PostgresFailover implements Scenario {

    static final String TITLE = "11 postgresql failover";
    private static final int LOST_GRANTS = 4;
    private static final String GUARDED = "fault_failover";
    /** Clients taking keys of their own while the primary is killed. */
    private static final int IN_FLIGHT_CLIENTS = 3;
    /** Grants acknowledged to those clients before the primary is killed. */
    private static final int ACKNOWLEDGED_BEFORE_KILL = 12;
    /** Each grant's lease in the workloads. */
    private static final Duration LOAD_LEASE = Duration.ofSeconds(2);

    private final boolean synchronous;

    /** The asynchronous standby. */
    PostgresFailover() {
        this(false);
    }

    PostgresFailover(boolean synchronous) {
        this.synchronous = synchronous;
    }

    private String backend() {
        return synchronous ? "postgresql, synchronous standby" : "postgresql, asynchronous standby";
    }

    @Override
    public String title() {
        return TITLE;
    }

    @Override
    public List<String> backends() {
        return List.of("postgresql");
    }

    @Override
    public Outcome run(String backend, Profile profile) throws Exception {
        Optional<Path> bin = PostgresPair.binaries();
        if (bin.isEmpty()) {
            return Outcome.absent(
                    TITLE,
                    backend(),
                    Outcome.Status.TOOL_ABSENT,
                    "no PostgreSQL server binaries (initdb, postgres, pg_basebackup) under /usr/lib/postgresql");
        }
        Tally tally = new Tally(TITLE, backend());
        History history = new History();
        try (PrivateDatabase guarded = PrivateDatabase.create(Database.POSTGRESQL)) {
            guarded.execute(guardedTable());
            Workload.createTable(guarded);
            for (int round = 0; profile.more(round, 1, history.size()); round++) {
                failover(bin.get(), guarded, round, tally, history, profile);
            }
            Map<String, Long> effects = new HashMap<>(HistoryChecker.effectCounts(guarded.dataSource(), GUARDED));
            effects.putAll(Workload.effectCounts(guarded.dataSource()));
            HistoryChecker.Verdict verdict =
                    new HistoryChecker(Duration.ofMillis(200), synchronous).check(history, effects);
            tally.checked(verdict);
            tally.note("history: " + verdict.summary());
            if (!synchronous) {
                tally.note("grants are not checked for overlap: the promoted standby lacks the last grants"
                        + " (asynchronous replication), so the old holder still held while the new one was granted;"
                        + " the fence is what keeps its writes out");
            }
        }
        return tally.outcome();
    }

    private static String guardedTable() {
        return "CREATE TABLE " + GUARDED + " (effect VARCHAR(64) NOT NULL PRIMARY KEY,"
                + " lock_key VARCHAR(100) NOT NULL, fence BIGINT NOT NULL)";
    }

    /**
     * How many operations each side's workload records before the failover goes on: enough in the
     * long profile for its five rounds to reach its least number of operations.
     */
    private static int operationsPerSide(Profile profile) {
        return profile == Profile.SHORT ? 20 : profile.minOperations() / (2 * profile.times(1)) + 100;
    }

    private void failover(Path bin, PrivateDatabase guarded, int round, Tally tally, History history, Profile profile)
            throws Exception {
        LockKey key = LockKey.of("failover", "k" + round);
        try (PostgresPair pair = PostgresPair.start(bin, synchronous);
                HikariDataSource primary = PostgresPair.pool(pair.primaryUrl(), "failover-primary-" + round)) {
            failover(pair, primary, guarded, key, round, tally, history, profile);
        }
    }

    /** A workload on {@code url}, in sessions of its own, that also takes {@code key}. */
    private static final class Load implements AutoCloseable {
        private final HikariDataSource pool;
        private final Library.Store store;
        private final LockService locks;
        private final Workload workload;
        private final String process;
        private boolean closed;

        Load(
                String url,
                String process,
                PrivateDatabase guarded,
                History history,
                int round,
                LockKey key,
                Profile profile) {
            this.process = process;
            this.pool = PostgresPair.pool(url, "failover-" + process, PostgresPair.WORKLOAD);
            this.store = Library.jdbcStore(pool, Database.POSTGRESQL);
            this.locks = Library.locks(store.store());
            this.workload = new Workload(
                    process, locks, guarded.dataSource(), history, "failover" + round + "-", LOAD_LEASE, profile);
            workload.contend(key);
        }

        /** Waits for the workload's {@code count} operations, noting it if they did not come. */
        void await(int count, Tally tally, String where) throws InterruptedException {
            if (!workload.awaitOperations(count, Duration.ofSeconds(120))) {
                tally.note(
                        "the workload recorded only " + workload.operations() + " operations " + where + " in 120 s");
            }
        }

        /** Its operations: all, and those whose outcome is unknown. */
        String summary(History history) {
            List<History.Op> ops = ops(history);
            return ops.size() + " operations ("
                    + ops.stream().filter(op -> op.result() == Result.UNKNOWN).count() + " of unknown outcome)";
        }

        List<History.Op> ops(History history) {
            return history.ops().stream()
                    .filter(op -> op.process().startsWith(process))
                    .toList();
        }

        /** The fences of the grants acknowledged to it. */
        LongStream fences(History history) {
            return ops(history).stream()
                    .filter(op -> op.kind() == Kind.ACQUIRE && op.result() == Result.OK)
                    .mapToLong(History.Op::fence);
        }

        /** Tells the workload's threads to stop after their operations, without waiting. */
        void stopSoon() {
            workload.stop();
        }

        /** Stops the workload: its threads finish their operations and end. */
        void stop() {
            workload.close();
        }

        @Override
        public void close() {
            if (closed) {
                return;
            }
            closed = true;
            workload.close();
            locks.close(); // a release its server no longer answers is logged, not thrown
            store.close();
            pool.close();
        }
    }

    private void failover(
            PostgresPair pair,
            HikariDataSource primary,
            PrivateDatabase guarded,
            LockKey key,
            int round,
            Tally tally,
            History history,
            Profile profile)
            throws Exception {
        String k = key.render();
        JdbcSchema.create(primary, Database.POSTGRESQL);
        try (Connection connection = primary.getConnection();
                var statement = connection.createStatement()) {
            statement.execute(guardedTable());
            statement.execute("CREATE TABLE fault_counter (lock_key VARCHAR(100) PRIMARY KEY, n BIGINT NOT NULL)");
            statement.execute("INSERT INTO fault_counter VALUES ('" + k + "', 0)");
        }
        long highestFence = 0;
        long highestCounter = 0;
        Library.Store oldStore = Library.jdbcStore(primary, Database.POSTGRESQL);
        LockService old = Library.locks(oldStore.store());
        Lease stillHeld = null;
        long heldFrom = 0;
        if (round == 0) {
            tally.note("primary: " + pair.replicationSettings());
        }
        Load before = new Load(pair.primaryUrl(), "W" + round + "p", guarded, history, round, key, profile);
        try {
            // One grant the standby has, then grants it never sees; the last one stays held.
            for (int i = 0; i <= LOST_GRANTS; i++) {
                if (i == 1 && !synchronous) {
                    pair.awaitStandbyCaughtUp(Duration.ofSeconds(30));
                    pair.killStandby();
                    history.fault("standby killed: the grants that follow are not replicated");
                }
                if (i == 1) {
                    before.await(operationsPerSide(profile), tally, "on the primary");
                }
                long invokedNanos = System.nanoTime();
                Lease lease = acquire(history, "P", old, key, heldFor(), Duration.ofSeconds(10));
                heldFrom = invokedNanos;
                highestFence = Math.max(highestFence, lease.fence());
                highestCounter = Math.max(highestCounter, nextCounter(primary, k));
                expectAccepted(tally, history, "P", guarded.dataSource(), true, lease, "r" + round + "-p" + i);
                expectAccepted(tally, history, "P", primary, false, lease, "r" + round + "-p" + i);
                if (i < LOST_GRANTS) {
                    release(history, "P", lease);
                } else {
                    stillHeld = lease;
                    // Its end, for the overlap check: the old service tells it once its renewals
                    // have failed until the lease's local deadline.
                    lease.onLost(e -> history.lost("P", lease));
                }
            }
            InFlight inFlight = new InFlight(old, round, history);
            inFlight.awaitAcknowledged(tally);
            int waiting = 0;
            if (synchronous) {
                // The standby stops confirming: the grants being made now are committed on the
                // primary and wait for it, unacknowledged, when the primary is killed.
                pair.pauseReceiver();
                waiting = pair.awaitCommitsWaitingForStandby(Duration.ofSeconds(30));
            }
            history.fault("primary killed while " + k + " is held at fence " + stillHeld.fence()
                    + " and clients are taking keys");
            long killedAt = System.nanoTime();
            inFlight.killing(killedAt);
            pair.killPrimary();
            long failedAt = System.nanoTime();
            if (synchronous) {
                pair.resumeReceiver();
            }
            // Its calls to the dead primary end at their timeouts; it is joined after the new grant.
            before.stopSoon();
            inFlight.join(tally);
            long joinedAt = System.nanoTime();
            highestFence = Math.max(highestFence, inFlight.highestFence());
            if (!synchronous) {
                pair.restartStandby();
            }
            long restartedAt = System.nanoTime();
            pair.promoteStandby();
            long promotedAt = System.nanoTime();
            try (HikariDataSource promoted = PostgresPair.pool(pair.standbyUrl(), "failover-promoted-" + round);
                    Library.Store newStore = Library.jdbcStore(promoted, Database.POSTGRESQL);
                    LockService next = Library.locks(newStore.store());
                    Load after =
                            new Load(pair.standbyUrl(), "W" + round + "s", guarded, history, round, key, profile)) {
                inFlight.checkOn(promoted, synchronous, tally);
                if (synchronous && waiting > 0 && inFlight.unacknowledged() > 0) {
                    tally.canary("the primary was killed with " + waiting
                            + " grants committed there and waiting for the standby's confirmation; "
                            + inFlight.unacknowledged() + " acquires invoked before the kill were never acknowledged ("
                            + inFlight.acknowledged().size() + " were)");
                }
                long counter = nextCounter(promoted, k);
                if (synchronous && counter <= highestCounter) {
                    tally.violation("a plain counter on the promoted synchronous standby handed out " + counter
                            + " for " + k + " again (the primary had acknowledged " + highestCounter + ")");
                } else if (counter <= highestCounter) {
                    tally.canary("a plain counter on the promoted standby handed out " + counter + " for " + k
                            + " again (the primary had reached " + highestCounter + ")");
                }
                if (synchronous) {
                    // The old holder's acknowledged grant is on the promoted standby: the key stays
                    // taken until that lease ends (it began no earlier than heldFrom).
                    Optional<Lease> early = next.tryAcquire(
                            key,
                            LeaseOptions.builder()
                                    .leaseFor(Duration.ofSeconds(30))
                                    .build());
                    long elapsed = System.nanoTime() - heldFrom;
                    if (early.isPresent()) {
                        early.get().close();
                        if (elapsed < heldFor().toNanos()) {
                            tally.violation("the promoted synchronous standby granted " + k + " "
                                    + Duration.ofNanos(elapsed).toMillis() + " ms after the old holder's acknowledged "
                                    + heldFor().toMillis() + " ms lease began");
                        }
                    } else {
                        tally.note("the promoted standby refused " + k + " to a new client "
                                + Duration.ofNanos(elapsed).toMillis() + " ms into the old holder's acknowledged "
                                + heldFor().toMillis() + " ms lease");
                    }
                }
                Lease lease = acquire(history, "S", next, key, Duration.ofSeconds(30), Duration.ofSeconds(30));
                // The stall: until the promoted standby granted the key again, to this client or
                // first to a workload thread.
                long regranted = history.ops().stream()
                        .filter(op -> op.kind() == Kind.ACQUIRE
                                && op.result() == Result.OK
                                && op.key().equals(k)
                                && op.completeNanos() > failedAt)
                        .mapToLong(History.Op::completeNanos)
                        .min()
                        .orElseThrow();
                tally.stall(Duration.ofNanos(regranted - failedAt));
                tally.note("round " + round + ": " + k + " granted again "
                        + Duration.ofNanos(regranted - failedAt).toMillis()
                        + " ms after the kill (clients joined after "
                        + Duration.ofNanos(joinedAt - failedAt).toMillis() + " ms, "
                        + (synchronous
                                ? ""
                                : "standby restarted after "
                                        + Duration.ofNanos(restartedAt - failedAt)
                                                .toMillis() + " ms, ")
                        + "promoted after "
                        + Duration.ofNanos(promotedAt - failedAt).toMillis() + " ms)");
                before.close();
                highestFence =
                        Math.max(highestFence, before.fences(history).max().orElse(0));
                if (lease.fence() <= highestFence) {
                    tally.violation("the promoted standby granted " + k + " at fence " + lease.fence() + ", not above "
                            + highestFence + " handed out by the old primary");
                }
                expectAccepted(tally, history, "S", guarded.dataSource(), true, lease, "r" + round + "-s");
                expectAccepted(tally, history, "S", promoted, false, lease, "r" + round + "-s");
                // The old holder, paused through the failover, writes at both with its old fence.
                if (write(history, "P", guarded.dataSource(), true, stillHeld, "r" + round + "-late")) {
                    tally.violation("the old holder's fenced write at fence " + stillHeld.fence()
                            + " landed on the guarded table after the new holder's " + lease.fence());
                }
                if (write(history, "P", promoted, false, stillHeld, "r" + round + "-late")) {
                    tally.violation("the old holder's fenced write at fence " + stillHeld.fence()
                            + " landed on the promoted primary after the new holder's " + lease.fence());
                }
                release(history, "S", lease);
                tally.operations(LOST_GRANTS + 2 + inFlight.acknowledged().size());
                after.await(operationsPerSide(profile), tally, "on the promoted standby");
                after.stop();
                heldThroughTheKill(history, before, killedAt, tally);
                long lowest = after.fences(history).min().orElse(Long.MAX_VALUE);
                if (lowest <= highestFence) {
                    tally.violation("the promoted standby granted a workload key at fence " + lowest + ", not above "
                            + highestFence + " handed out by the old primary");
                }
                tally.note("round " + round + ": the workload on the primary: " + before.summary(history)
                        + "; on the promoted standby: " + after.summary(history) + ", every grant above fence "
                        + highestFence);
            }
        } finally {
            before.close();
            primary.close(); // the old service's calls now fail at once, not after a connection timeout
            if (stillHeld != null) {
                try {
                    stillHeld.close();
                } catch (RuntimeException e) {
                    // its primary is gone
                }
            }
            old.close();
            oldStore.close();
        }
    }

    /**
     * The grants the primary's workload held when the primary was killed (their release not begun
     * before the kill): the store gave each an expiry no earlier than its acquire's invocation + the
     * lease. With a synchronous standby each one is on the promoted standby, whose next grant of its
     * key must not come before that; with an asynchronous one they may be lost, and those granted
     * earlier are only counted.
     */
    private void heldThroughTheKill(History history, Load before, long killedAt, Tally tally) {
        List<History.Op> ops = history.ops();
        List<History.Op> theirs = before.ops(history);
        List<History.Op> held = theirs.stream()
                .filter(op -> op.kind() == Kind.ACQUIRE && op.result() == Result.OK)
                .filter(acquire -> theirs.stream()
                        .noneMatch(op -> op.kind() == Kind.RELEASE
                                && op.grant().equals(acquire.grant())
                                && op.invokeNanos() < killedAt))
                .toList();
        int early = 0;
        int takenAgain = 0;
        long longest = 0;
        for (History.Op acquire : held) {
            Optional<History.Op> next = ops.stream()
                    .filter(op -> op.kind() == Kind.ACQUIRE
                            && op.result() == Result.OK
                            && op.key().equals(acquire.key())
                            && op.completeNanos() > killedAt
                            && !op.process().startsWith(before.process))
                    .min(Comparator.comparingLong(History.Op::completeNanos));
            if (next.isEmpty()) {
                continue;
            }
            takenAgain++;
            longest = Math.max(longest, next.get().completeNanos() - killedAt);
            long earliest = acquire.invokeNanos() + LOAD_LEASE.minusMillis(10).toNanos();
            if (next.get().completeNanos() < earliest) {
                early++;
                if (synchronous) {
                    tally.violation("the promoted synchronous standby granted " + acquire.key() + " to "
                            + next.get().process() + " "
                            + Duration.ofNanos(next.get().completeNanos() - acquire.invokeNanos())
                                    .toMillis()
                            + " ms after " + acquire.process() + " asked for the grant it held at the kill,"
                            + " within its " + LOAD_LEASE.toMillis() + " ms lease");
                }
            }
        }
        if (held.isEmpty()) {
            tally.note("the primary's workload held no grant at the kill (each had begun its release)");
            return;
        }
        tally.note("the primary's workload held " + held.size() + " grants at the kill; the promoted standby granted "
                + takenAgain + " of their keys again, at most "
                + Duration.ofNanos(longest).toMillis()
                + " ms after the kill, " + early + " before the old grant's lease could have ended");
    }

    /**
     * The old holder's lease: with a synchronous standby it survives the failover, so the new
     * client waits for its end; short enough for a short run.
     */
    private Duration heldFor() {
        return synchronous ? Duration.ofSeconds(12) : Duration.ofSeconds(30);
    }

    private static Lease acquire(
            History history, String process, LockService locks, LockKey key, Duration leaseFor, Duration waitFor)
            throws InterruptedException {
        long invoked = History.now();
        Lease lease = locks.acquire(
                key, LeaseOptions.builder().leaseFor(leaseFor).waitFor(waitFor).build());
        history.ok(process, Kind.ACQUIRE, lease, invoked);
        return lease;
    }

    private static void release(History history, String process, Lease lease) {
        long invoked = History.now();
        lease.close();
        history.ok(process, Kind.RELEASE, lease, invoked);
    }

    private static void expectAccepted(
            Tally tally,
            History history,
            String process,
            DataSource target,
            boolean external,
            Lease lease,
            String effect)
            throws SQLException {
        if (!write(history, process, target, external, lease, effect)) {
            tally.violation(process + "'s fenced write " + effect + " at fence " + lease.fence() + " was refused");
        }
    }

    /**
     * A fenced write of {@code effect}; only the writes at the guarded table on the other server
     * ({@code external}) go into the history: the promoted server lost the old primary's last
     * writes, as asynchronous replication does.
     */
    private static boolean write(
            History history, String process, DataSource target, boolean external, Lease lease, String effect)
            throws SQLException {
        long invoked = History.now();
        boolean accepted = Library.fencedWrite(target, lease, tx -> {
            try (PreparedStatement insert =
                    tx.prepareStatement("INSERT INTO " + GUARDED + " (effect, lock_key, fence) VALUES (?, ?, ?)")) {
                insert.setString(1, effect);
                insert.setString(2, lease.key().render());
                insert.setLong(3, lease.fence());
                insert.executeUpdate();
            }
        });
        if (external) {
            history.add(
                    process,
                    Kind.WRITE,
                    lease.key().render(),
                    lease.ownerToken(),
                    invoked,
                    lease.fence(),
                    accepted ? Result.OK : Result.REFUSED,
                    GUARDED,
                    effect);
        }
        return accepted;
    }

    private static long nextCounter(DataSource dataSource, String key) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                PreparedStatement next = connection.prepareStatement(
                        "UPDATE fault_counter SET n = n + 1 WHERE lock_key = ? RETURNING n")) {
            next.setString(1, key);
            try (ResultSet row = next.executeQuery()) {
                row.next();
                return row.getLong(1);
            }
        }
    }

    /**
     * Clients of the old primary, each taking new keys of its own one after another and holding
     * them, until the primary is killed: the grants acknowledged to them, and the acquires that
     * were invoked before the kill and never acknowledged.
     */
    private static final class InFlight {

        private final List<Lease> acknowledged = new ArrayList<>();
        private final CountDownLatch enough = new CountDownLatch(ACKNOWLEDGED_BEFORE_KILL);
        private final AtomicInteger unacknowledged = new AtomicInteger();
        private final List<Thread> clients = new ArrayList<>();
        private volatile long killedAt = Long.MAX_VALUE;
        private volatile RuntimeException beforeKill;

        InFlight(LockService locks, int round, History history) {
            for (int c = 0; c < IN_FLIGHT_CLIENTS; c++) {
                String process = "F" + c;
                String prefix = "f" + round + "-" + c + "-";
                Thread client = new Thread(() -> take(locks, prefix, process, history), "failover-client-" + c);
                client.setDaemon(true);
                clients.add(client);
                client.start();
            }
        }

        private void take(LockService locks, String prefix, String process, History history) {
            LeaseOptions options =
                    LeaseOptions.builder().leaseFor(Duration.ofSeconds(30)).build();
            for (int n = 0; n < 100_000; n++) {
                LockKey key = LockKey.of("failover", prefix + n);
                long invokedNanos = System.nanoTime();
                long invoked = History.now();
                try {
                    Lease lease = locks.tryAcquire(key, options)
                            .orElseThrow(() -> new IllegalStateException(key.render() + " was busy"));
                    history.ok(process, Kind.ACQUIRE, lease, invoked);
                    synchronized (acknowledged) {
                        acknowledged.add(lease);
                    }
                    enough.countDown();
                } catch (RuntimeException e) {
                    if (invokedNanos >= killedAt) {
                        return; // invoked after the kill: not in flight
                    }
                    if (killedAt == Long.MAX_VALUE) {
                        beforeKill = e;
                    } else {
                        unacknowledged.incrementAndGet();
                    }
                    enough.countDown(); // never leave the scenario waiting for grants that will not come
                    return;
                }
            }
        }

        void awaitAcknowledged(Tally tally) throws InterruptedException {
            if (!enough.await(60, TimeUnit.SECONDS)) {
                tally.violation("the clients had " + acknowledged().size() + " grants acknowledged after 60 s");
            }
        }

        /** Called just before the primary is killed. */
        void killing(long nanos) {
            killedAt = nanos;
        }

        void join(Tally tally) throws InterruptedException {
            for (Thread client : clients) {
                client.join(TimeUnit.SECONDS.toMillis(60));
                if (client.isAlive()) {
                    tally.violation(client.getName() + " was still taking keys 60 s after the primary was killed");
                }
            }
            if (beforeKill != null) {
                tally.violation("an acquire failed before the primary was killed: " + beforeKill);
            }
        }

        List<Lease> acknowledged() {
            synchronized (acknowledged) {
                return List.copyOf(acknowledged);
            }
        }

        int unacknowledged() {
            return unacknowledged.get();
        }

        long highestFence() {
            return acknowledged().stream().mapToLong(Lease::fence).max().orElse(0);
        }

        /**
         * Counts the acknowledged grants whose row (owner and fence) the promoted server lacks; with
         * a synchronous standby each one is a violation.
         */
        void checkOn(DataSource promoted, boolean synchronous, Tally tally) throws SQLException {
            List<Lease> grants = acknowledged();
            List<String> lost = new ArrayList<>();
            try (Connection connection = promoted.getConnection();
                    PreparedStatement present = connection.prepareStatement(
                            "SELECT count(*) FROM leasehold_lease WHERE owner_token = ? AND fence = ?")) {
                for (Lease grant : grants) {
                    present.setString(1, grant.ownerToken());
                    present.setLong(2, grant.fence());
                    try (ResultSet row = present.executeQuery()) {
                        row.next();
                        if (row.getLong(1) != 1) {
                            lost.add(grant.key().render() + "@" + grant.fence());
                        }
                    }
                }
            }
            tally.note("acquires in flight at the kill (never acknowledged): " + unacknowledged()
                    + "; acknowledged grants on the promoted standby: " + (grants.size() - lost.size()) + " of "
                    + grants.size() + " (lost " + lost.size() + ")");
            if (synchronous && !lost.isEmpty()) {
                tally.violation("the promoted synchronous standby lacks " + lost.size() + " of " + grants.size()
                        + " grants acknowledged before the kill, e.g. " + lost.subList(0, Math.min(3, lost.size())));
            }
        }
    }
}
