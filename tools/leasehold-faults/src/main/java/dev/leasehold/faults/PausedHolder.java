package dev.leasehold.faults;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.faults.History.Kind;
import dev.leasehold.faults.History.Result;
import dev.leasehold.jdbc.Database;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.awaitility.Awaitility;

/**
 * 1. A holder JVM is stopped ({@code SIGSTOP}) past its lease; this JVM takes the key and writes
 * through the fence; the holder is resumed and writes at once, as a holder paused between its check
 * and its write would. Its fenced write must be rejected (the row keeps this JVM's write): the
 * history checker finds a write accepted after a newer fence's. Its canary, the same write without
 * the fence, lands over it. A {@link Workload} runs meanwhile.
 */
final class PausedHolder implements Scenario {

    static final String TITLE = "1 paused holder";
    private static final Duration LEASE = Duration.ofMillis(1000);
    /** The overlap the history checker allows: from a lease's local deadline to its {@code onLost}. */
    static final Duration OVERLAP = Duration.ofMillis(200);

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
            createTables(db);
            Workload.createTable(db);
            try (ChildJvm holder = ChildJvm.start(
                    "paused-holder-" + backend,
                    HolderMain.class,
                    List.of(),
                    Map.of(),
                    storeSpec,
                    db.spec().encode())) {
                holder.expect("READY", Duration.ofSeconds(60));
                Workload load = new Workload("W", locks, db.dataSource(), history, "paused", LEASE, profile);
                try {
                    for (int round = 0; profile.more(round, 2, history.size()); round++) {
                        round(db, store, locks, holder, LockKey.of("paused", "acct" + round), history, tally);
                    }
                } finally {
                    load.close();
                }
                holder.send("QUIT");
            }
            tally.check(new HistoryChecker(OVERLAP, true), history, Workload.effectCounts(db.dataSource()));
        }
        return tally.outcome();
    }

    static void createTables(PrivateDatabase db) throws Exception {
        for (String table : List.of("fault_account", "fault_canary")) {
            db.execute("CREATE TABLE " + table
                    + " (id VARCHAR(100) NOT NULL PRIMARY KEY, owner VARCHAR(64), fence BIGINT NOT NULL)");
        }
    }

    /**
     * One round. The paused holder's grant is not recorded (the fault pauses it past its lease, so
     * it overlaps the next one by design); its write is, and the history checker refuses it if the
     * guarded row accepted it after the new holder's.
     */
    private static void round(
            PrivateDatabase db,
            Library.Store store,
            LockService locks,
            ChildJvm holder,
            LockKey key,
            History history,
            Tally tally)
            throws Exception {
        String id = key.render();
        db.execute(
                "INSERT INTO fault_account (id, owner, fence) VALUES ('" + id + "', 'none', 0)",
                "INSERT INTO fault_canary (id, owner, fence) VALUES ('" + id + "', 'none', 0)");
        holder.send("ACQUIRE " + id + " " + LEASE.toMillis());
        String[] held = holder.expect("HELD", Duration.ofSeconds(30)).split(" ");
        long first = Long.parseLong(held[0]);
        String pausedOwner = held[2];
        holder.pause();
        history.fault("SIGSTOP the holder of " + id);
        try {
            // The store's own view decides: the lease is gone once the store says nobody holds it.
            Awaitility.await("the paused holder's lease to expire in the store")
                    .atMost(Duration.ofSeconds(20))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> store.store().inspect(key).isEmpty());
            long start = System.nanoTime();
            long invoked = History.now();
            Lease lease = locks.acquire(
                    key,
                    LeaseOptions.builder()
                            .leaseFor(Duration.ofSeconds(10))
                            .waitFor(Duration.ofSeconds(5))
                            .build());
            try {
                history.add("S", Kind.ACQUIRE, id, lease.ownerToken(), invoked, lease.fence(), Result.OK, null, null);
                if (lease.fence() <= first) {
                    tally.violation(
                            "new holder of " + id + " got fence " + lease.fence() + ", not above the paused " + first);
                }
                long write = History.now();
                boolean accepted =
                        HolderMain.write(db.dataSource(), lease, "new").equals("accepted");
                history.add(
                        "S",
                        Kind.WRITE,
                        id,
                        lease.ownerToken(),
                        write,
                        lease.fence(),
                        accepted ? Result.OK : Result.REFUSED,
                        "fault_account",
                        null);
                if (!accepted) {
                    tally.violation("the new holder's fenced write to " + id + " was rejected");
                }
                tally.stallSince(start);
                // The paused holder's next command is its write: it runs the moment it resumes.
                long resumedWrite = History.now();
                holder.send("WRITE " + id + " paused");
                long resumed = System.nanoTime();
                holder.resume();
                history.fault("SIGCONT the holder of " + id);
                String wrote = holder.expect("WROTE", Duration.ofSeconds(30));
                tally.stallSince(resumed);
                history.add(
                        "H",
                        Kind.WRITE,
                        id,
                        pausedOwner,
                        resumedWrite,
                        first,
                        wrote.equals("accepted") ? Result.OK : Result.REFUSED,
                        "fault_account",
                        null);
                if (owner(db, "fault_canary", id).equals("paused")) {
                    tally.canary("the resumed holder's unfenced write landed over the new holder's on " + id);
                }
            } finally {
                long release = History.now();
                lease.close();
                history.add("S", Kind.RELEASE, id, lease.ownerToken(), release, lease.fence(), Result.OK, null, null);
            }
        } finally {
            if (holder.process().isAlive()) {
                holder.resume();
            }
        }
        holder.send("RELEASE " + id);
        holder.expect("RELEASED", Duration.ofSeconds(30));
        tally.operation();
    }

    static String owner(PrivateDatabase db, String table, String id) throws Exception {
        try (Connection connection = db.dataSource().getConnection();
                PreparedStatement select =
                        connection.prepareStatement("SELECT owner FROM " + table + " WHERE id = ?")) {
            select.setString(1, id);
            try (ResultSet row = select.executeQuery()) {
                return row.next() ? row.getString(1) : "(missing)";
            }
        }
    }
}
