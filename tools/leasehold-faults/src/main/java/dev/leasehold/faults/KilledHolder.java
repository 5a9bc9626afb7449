package dev.leasehold.faults;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.faults.History.Kind;
import dev.leasehold.faults.History.Op;
import dev.leasehold.faults.History.Result;
import dev.leasehold.jdbc.Database;
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
import java.util.concurrent.TimeUnit;

/**
 * 10. A holder JVM is killed ({@code SIGKILL}) while it holds a lease with renewal on, and while it is
 * inside a fenced transaction ({@code FencedUpdate}) that has written but not committed. The key
 * must stay taken while the dead holder's lease runs, free by its end (plus the waiter's slack),
 * go to a larger fence, and the half-done transaction must leave nothing. Canaries: a lock with no
 * lease (a row only its holder deletes) stays taken by the dead holder; the same two-step work done
 * unfenced in autocommit keeps its first step.
 *
 * <p>A {@link Workload} in this JVM contends for the killed holder's key and for two keys of its
 * own, so that the next holder after a kill may be one of its threads; each holder JVM runs a
 * workload on those two keys as well, which dies with it: its operations in flight at the kill are
 * recorded with an unknown outcome and the grants it held as ended by the crash ({@link ChildOps}).
 * A key such a dead grant held must not be granted again before that grant's lease could have
 * ended (its acquire's invocation + the lease). In half of the rounds (two of every four, one of each
 * kind of kill) this JVM's own thread asks for the killed holder's key only once a workload thread
 * has been granted it; the bounds on
 * the next grant apply to the first grant after the kill, whoever took it. The long profile repeats
 * the rounds until the history holds its least number of operations.
 */
final class KilledHolder implements Scenario {

    static final String TITLE = "10 killed holder";
    private static final Duration LEASE = Duration.ofMillis(1500);
    /** How long after a lease's end a waiter may take to see the key free (no release notice comes). */
    static final Duration SLACK = Duration.ofMillis(1200);
    /** The id prefix of the two keys both workloads take. */
    private static final String LOAD_KEYS = "killed";
    /**
     * How much earlier than a dead grant's lease allows its key may seem to be granted again: the
     * stores count expiry in milliseconds.
     */
    private static final Duration EXPIRY_GRANULARITY = Duration.ofMillis(10);

    @Override
    public String title() {
        return TITLE;
    }

    @Override
    public List<String> backends() {
        return List.of("redis", "postgresql", "mariadb");
    }

    @Override
    public Outcome run(String backend, Profile profile) throws Exception {
        Database database = StoreSpec.database(backend);
        String storeSpec = StoreSpec.forBackend(backend);
        Tally tally = new Tally(TITLE, backend);
        History history = new History();
        try (PrivateDatabase db = PrivateDatabase.create(database);
                Library.Store store = StoreSpec.open(storeSpec, db.dataSource(), database);
                LockService locks = Library.locks(store.store())) {
            PausedHolder.createTables(db);
            Workload.createTable(db);
            db.execute(
                    "CREATE TABLE fault_plain_lock (id VARCHAR(100) NOT NULL PRIMARY KEY, owner VARCHAR(64))",
                    "CREATE TABLE fault_effect (effect VARCHAR(200) NOT NULL, id VARCHAR(100) NOT NULL)");
            Figures figures = new Figures();
            Workload load = new Workload("W", locks, db.dataSource(), history, LOAD_KEYS, LEASE, profile);
            try {
                for (int round = 0; profile.more(round, 2, history.size()); round++) {
                    boolean inside = round % 2 == 1;
                    // Every four rounds: each kind of kill with this thread waiting from the kill,
                    // and with it standing back until a workload thread has taken the key.
                    boolean standBack = (round + round / 2) % 2 == 1;
                    LockKey key = LockKey.of("killed", (inside ? "inside" : "holding") + round);
                    load.contend(key);
                    new Round(db, locks, history, tally, figures, profile, key, "H" + round, inside, standBack)
                            .run(storeSpec, backend);
                }
                figures.awaitDeadKeysTakenAgain(history, LEASE.plus(Duration.ofSeconds(10)));
            } finally {
                load.close();
            }
            figures.checkDeadGrants(history, tally);
            Map<String, Long> effects = new HashMap<>(HistoryChecker.effectCounts(db.dataSource(), "fault_effect"));
            effects.putAll(Workload.effectCounts(db.dataSource()));
            tally.check(new HistoryChecker(SLACK, true), history, effects);
        }
        return tally.outcome();
    }

    /** How many operations the holder JVM's workload records before the holder takes its key. */
    private static int childOperations(Profile profile) {
        return profile == Profile.SHORT ? 12 : 300;
    }

    /** What the rounds saw of the workloads, for the checks and notes after the last round. */
    private static final class Figures {
        private final List<Dead> dead = new ArrayList<>();
        private int rounds;
        private int takenFirstByWorkload;
        private int childRecorded;
        private int childInFlight;

        /** A grant of a holder JVM's workload that the kill at {@code killedAt} left held. */
        private record Dead(Op acquire, long killedAt) {}

        void killed(ChildOps ops, ChildOps.Killed killed, long killedAt) {
            childRecorded += ops.recorded();
            childInFlight += killed.inFlight();
            for (Op acquire : killed.held()) {
                dead.add(new Dead(acquire, killedAt));
            }
        }

        void takenAgain(String process) {
            rounds++;
            if (!process.equals("S")) {
                takenFirstByWorkload++;
            }
        }

        /**
         * Lets the workload run until every key a dead workload grant held has been granted again,
         * at most {@code atMost}, so that the last round's are checked too.
         */
        void awaitDeadKeysTakenAgain(History history, Duration atMost) throws InterruptedException {
            long deadline = System.nanoTime() + atMost.toNanos();
            while (System.nanoTime() < deadline
                    && dead.stream().anyMatch(d -> next(history, d).isEmpty())) {
                TimeUnit.MILLISECONDS.sleep(20); // polls the history; nothing to be notified of
            }
        }

        /** The next grant of the key {@code d} held, to another owner. */
        private static Optional<Op> next(History history, Dead d) {
            return firstGrantAfter(history, d.acquire().key(), d.acquire().completeNanos())
                    .filter(op -> !op.owner().equals(d.acquire().owner()));
        }

        /**
         * Each key a dead workload grant held must not have been granted again before that grant's
         * lease could have ended: the store set its expiry no earlier than the acquire's invocation
         * + the lease, and renewals only moved it later.
         */
        void checkDeadGrants(History history, Tally tally) {
            long shortest = Long.MAX_VALUE;
            long longest = 0;
            int takenAgain = 0;
            int early = 0;
            for (Dead d : dead) {
                Op next = next(history, d).orElse(null);
                if (next == null) {
                    continue;
                }
                takenAgain++;
                long earliest = d.acquire().invokeNanos()
                        + LEASE.minus(EXPIRY_GRANULARITY).toNanos();
                if (next.completeNanos() < earliest) {
                    early++;
                    tally.violation(d.acquire().key() + " was granted to " + next.process() + " "
                            + Duration.ofNanos(
                                            next.completeNanos() - d.acquire().invokeNanos())
                                    .toMillis()
                            + " ms after the killed " + d.acquire().process() + " asked for it, within the "
                            + LEASE.toMillis() + " ms lease it was granted");
                }
                long after = next.completeNanos() - d.killedAt();
                shortest = Math.min(shortest, after);
                longest = Math.max(longest, after);
            }
            tally.note("the next holder after the kill was a workload thread in " + takenFirstByWorkload + " of "
                    + rounds + " rounds");
            tally.note("the holder JVMs' workloads: " + childRecorded + " operations recorded, " + childInFlight
                    + " in flight at the kills (unknown outcome), " + dead.size() + " grants held at the kills"
                    + (takenAgain == 0
                            ? ""
                            : "; their keys taken again "
                                    + Duration.ofNanos(shortest).toMillis() + "-"
                                    + Duration.ofNanos(longest).toMillis() + " ms after the kill (" + takenAgain
                                    + " of " + dead.size() + "), " + (early == 0 ? "none" : early)
                                    + " before its lease could have ended"));
        }
    }

    /** One holder JVM started, given the key, killed, and the key taken after it. */
    private record Round(
            PrivateDatabase db,
            LockService locks,
            History history,
            Tally tally,
            Figures figures,
            Profile profile,
            LockKey key,
            String holderName,
            boolean inside,
            boolean standBack) {

        void run(String storeSpec, String backend) throws Exception {
            String id = key.render();
            db.execute(
                    "INSERT INTO fault_account (id, owner, fence) VALUES ('" + id + "', 'none', 0)",
                    "INSERT INTO fault_canary (id, owner, fence) VALUES ('" + id + "', 'none', 0)");
            long deadHolderFence;
            long killedAt;
            try (ChildJvm holder = ChildJvm.start(
                    "killed-holder-" + backend + "-" + holderName,
                    HolderMain.class,
                    List.of(),
                    Map.of(),
                    storeSpec,
                    db.spec().encode())) {
                holder.expect("READY", Duration.ofSeconds(60));
                ChildOps childOps = new ChildOps(history, ChildOps.clockOffset(holder));
                holder.send("LOAD " + holderName + "w " + LEASE.toMillis() + " " + profile.name() + " " + LOAD_KEYS);
                holder.expect("LOADING", Duration.ofSeconds(30));
                if (!childOps.awaitRecorded(holder, childOperations(profile), Duration.ofSeconds(60))) {
                    throw new IllegalStateException("the workload of " + holderName + " recorded " + childOps.recorded()
                            + " operations in 60 s\n" + holder.logTail());
                }
                long invoked = History.now();
                holder.send("ACQUIRE " + id + " " + LEASE.toMillis());
                String[] held = holder.expect("HELD", Duration.ofSeconds(30)).split(" ");
                deadHolderFence = Long.parseLong(held[0]);
                String owner = held[2];
                history.add(holderName, Kind.ACQUIRE, id, owner, invoked, deadHolderFence, Result.OK, null, null);
                holder.send("PLAIN " + id);
                if (!holder.expect("PLAIN", Duration.ofSeconds(30)).equals("got")) {
                    throw new IllegalStateException("the canary lock " + id + " was taken before its round");
                }
                if (inside) {
                    long write = History.now();
                    holder.send("HANG " + id + " killed");
                    holder.expect("INSIDE", Duration.ofSeconds(30));
                    history.add(
                            holderName,
                            Kind.WRITE,
                            id,
                            owner,
                            write,
                            deadHolderFence,
                            Result.UNKNOWN,
                            "fault_account",
                            id + "#" + deadHolderFence);
                }
                history.fault("SIGKILL " + holderName + (inside ? " inside its fenced transaction" : " holding"));
                killedAt = System.nanoTime();
                holder.kill();
                long gone = History.now();
                history.add(new Op(
                        holderName, Kind.CRASHED, id, owner, gone, gone, deadHolderFence, Result.OK, null, null));
                if (!holder.awaitOutputEnd(Duration.ofSeconds(30))) {
                    throw new IllegalStateException("the output of the killed " + holderName + " did not end");
                }
                figures.killed(childOps, childOps.killed(holder, gone), killedAt);
            }
            stillTaken(id, killedAt);
            if (standBack) {
                // Not a synchronisation of the fault: this thread leaves the key to the workload's
                // waiters, and asks for it itself only once one of them has taken it (or much later).
                long deadline =
                        killedAt + LEASE.plus(SLACK).plus(Duration.ofSeconds(5)).toNanos();
                while (firstGrantAfter(history, id, killedAt).isEmpty() && System.nanoTime() < deadline) {
                    TimeUnit.MILLISECONDS.sleep(10);
                }
            }
            takeOver(id, deadHolderFence, killedAt);
            tally.operation();
        }

        /** Right after the kill the dead holder's lease still runs: a single try is refused. */
        private void stillTaken(String id, long killedAt) {
            long invoked = History.now();
            Optional<Lease> early = locks.tryAcquire(
                    key, LeaseOptions.builder().leaseFor(Duration.ofSeconds(10)).build());
            long afterKill = Duration.ofNanos(System.nanoTime() - killedAt).toMillis();
            if (early.isPresent()) {
                Lease lease = early.get();
                history.add("S", Kind.ACQUIRE, id, lease.ownerToken(), invoked, lease.fence(), Result.OK, null, null);
                if (afterKill < LEASE.toMillis() / 2) {
                    tally.violation(id + " was free " + afterKill + " ms after its holder was killed, while the"
                            + " dead holder's lease of " + LEASE.toMillis() + " ms still ran");
                }
                long release = History.now();
                lease.close();
                history.add("S", Kind.RELEASE, id, lease.ownerToken(), release, lease.fence(), Result.OK, null, null);
            } else {
                history.add("S", Kind.ACQUIRE, id, null, invoked, 0, Result.REFUSED, null, null);
            }
        }

        /** The key is taken again by the lease's end, at a larger fence, with nothing of the dead holder's work. */
        private void takeOver(String id, long deadHolderFence, long killedAt) throws Exception {
            long invoked = History.now();
            Lease lease = locks.acquire(
                    key,
                    LeaseOptions.builder()
                            .leaseFor(Duration.ofSeconds(10))
                            .waitFor(LEASE.plus(Duration.ofSeconds(5)))
                            .build());
            try {
                history.add("S", Kind.ACQUIRE, id, lease.ownerToken(), invoked, lease.fence(), Result.OK, null, null);
                // The next holder: this thread, or a workload thread that got the key first.
                Op first = firstGrantAfter(history, id, killedAt).orElseThrow();
                figures.takenAgain(first.process());
                Duration freedAfter = Duration.ofNanos(first.completeNanos() - killedAt);
                tally.stall(freedAfter);
                if (freedAfter.compareTo(LEASE.dividedBy(2)) < 0) {
                    tally.violation(id + " was granted to " + first.process() + " " + freedAfter.toMillis()
                            + " ms after its holder was killed, while the dead holder's lease of "
                            + LEASE.toMillis() + " ms still ran");
                }
                if (freedAfter.compareTo(LEASE.plus(SLACK)) > 0) {
                    tally.violation(id + " was taken again " + freedAfter.toMillis() + " ms after its holder was"
                            + " killed, past its lease of " + LEASE.toMillis() + " ms + " + SLACK.toMillis() + " ms");
                }
                if (first.fence() <= deadHolderFence) {
                    tally.violation("the next holder of " + id + " (" + first.process() + ") got fence " + first.fence()
                            + ", not above the killed holder's " + deadHolderFence);
                }
                if (lease.fence() <= first.fence() && !first.owner().equals(lease.ownerToken())) {
                    tally.violation("a later holder of " + id + " got fence " + lease.fence() + ", not above the"
                            + " next holder's " + first.fence());
                }
                if (!PausedHolder.owner(db, "fault_account", id).equals("none")
                        || effects(db, id + "#" + deadHolderFence) != 0) {
                    tally.violation("the killed holder's uncommitted fenced write to " + id + " is in the database");
                }
                if (inside && PausedHolder.owner(db, "fault_canary", id).equals("killed")) {
                    tally.canary("the first of the killed holder's two unfenced steps on " + id + " stayed alone");
                }
                if (!HolderMain.plain(db.dataSource(), id)) {
                    tally.canary("the lock with no lease on " + id + " stayed taken by the killed holder");
                }
                long write = History.now();
                boolean accepted = Library.fencedWrite(db.dataSource(), lease, tx -> {
                    try (PreparedStatement update =
                                    tx.prepareStatement("UPDATE fault_account SET owner = ?, fence = ? WHERE id = ?");
                            PreparedStatement effect =
                                    tx.prepareStatement("INSERT INTO fault_effect (effect, id) VALUES (?, ?)")) {
                        update.setString(1, "new");
                        update.setLong(2, lease.fence());
                        update.setString(3, id);
                        update.executeUpdate();
                        effect.setString(1, id + "#" + lease.fence());
                        effect.setString(2, id);
                        effect.executeUpdate();
                    }
                });
                history.add(
                        "S",
                        Kind.WRITE,
                        id,
                        lease.ownerToken(),
                        write,
                        lease.fence(),
                        accepted ? Result.OK : Result.REFUSED,
                        "fault_account",
                        id + "#" + lease.fence());
                if (!accepted) {
                    tally.violation("the next holder's fenced write to " + id + " was refused");
                }
            } finally {
                long release = History.now();
                lease.close();
                history.add("S", Kind.RELEASE, id, lease.ownerToken(), release, lease.fence(), Result.OK, null, null);
            }
        }
    }

    /** The first grant of {@code key} acknowledged after {@code nanos}, to any process. */
    private static Optional<Op> firstGrantAfter(History history, String key, long nanos) {
        return history.ops().stream()
                .filter(op -> op.kind() == Kind.ACQUIRE
                        && op.result() == Result.OK
                        && op.key().equals(key)
                        && op.completeNanos() > nanos)
                .min(Comparator.comparingLong(Op::completeNanos));
    }

    private static long effects(PrivateDatabase db, String effect) throws SQLException {
        try (Connection connection = db.dataSource().getConnection();
                PreparedStatement select =
                        connection.prepareStatement("SELECT COUNT(*) FROM fault_effect WHERE effect = ?")) {
            select.setString(1, effect);
            try (ResultSet row = select.executeQuery()) {
                row.next();
                return row.getLong(1);
            }
        }
    }
}
