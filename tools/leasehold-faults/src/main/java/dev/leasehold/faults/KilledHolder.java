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
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * 10. A holder JVM is killed ({@code SIGKILL}) while it holds a lease with renewal on, and while it is
 * inside a fenced transaction ({@code FencedUpdate}) that has written but not committed. The key
 * must stay taken while the dead holder's lease runs, free by its end (plus the waiter's slack),
 * go to a larger fence, and the half-done transaction must leave nothing. Canaries: a lock with no
 * lease (a row only its holder deletes) stays taken by the dead holder; the same two-step work done
 * unfenced in autocommit keeps its first step.
 */
final class KilledHolder implements Scenario {

    static final String TITLE = "10 killed holder";
    private static final Duration LEASE = Duration.ofMillis(1500);
    /** How long after a lease's end a waiter may take to see the key free (no release notice comes). */
    static final Duration SLACK = Duration.ofMillis(1200);

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
            db.execute(
                    "CREATE TABLE fault_plain_lock (id VARCHAR(100) NOT NULL PRIMARY KEY, owner VARCHAR(64))",
                    "CREATE TABLE fault_effect (effect VARCHAR(200) NOT NULL, id VARCHAR(100) NOT NULL)");
            int rounds = profile.times(2);
            for (int round = 0; round < rounds; round++) {
                boolean inside = round % 2 == 1;
                LockKey key = LockKey.of("killed", (inside ? "inside" : "holding") + round);
                new Round(db, locks, history, tally, key, "H" + round, inside).run(storeSpec, backend);
            }
            HistoryChecker.Verdict verdict = new HistoryChecker(SLACK, true)
                    .check(history, HistoryChecker.effectCounts(db.dataSource(), "fault_effect"));
            tally.checked(verdict);
            tally.note("history: " + verdict.summary());
        }
        return tally.outcome();
    }

    /** One holder JVM started, given the key, killed, and the key taken after it. */
    private record Round(
            PrivateDatabase db,
            LockService locks,
            History history,
            Tally tally,
            LockKey key,
            String holderName,
            boolean inside) {

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
            }
            stillTaken(id, killedAt);
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
                Duration freedAfter = Duration.ofNanos(System.nanoTime() - killedAt);
                tally.stall(freedAfter);
                if (freedAfter.compareTo(LEASE.plus(SLACK)) > 0) {
                    tally.violation(id + " was taken again " + freedAfter.toMillis() + " ms after its holder was"
                            + " killed, past its lease of " + LEASE.toMillis() + " ms + " + SLACK.toMillis() + " ms");
                }
                if (lease.fence() <= deadHolderFence) {
                    tally.violation("the next holder of " + id + " got fence " + lease.fence() + ", not above the"
                            + " killed holder's " + deadHolderFence);
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
