package dev.leasehold.faults;

import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * A holder JVM: takes leases when told and writes under them, for the paused-holder and
 * clock-shift scenarios. Arguments: the lease store ({@link StoreSpec}) and the private database
 * ({@link PrivateDatabase.Spec}). Commands, one a line:
 *
 * <ul>
 *   <li>{@code ACQUIRE key leaseMs} → {@code HELD fence remainingMs} (waits up to 10 s)
 *   <li>{@code TRY key leaseMs} → {@code HELD fence remainingMs} or {@code BUSY}
 *   <li>{@code WRITE key tag} → {@code WROTE accepted|rejected}: a fenced write of {@code tag} to
 *       the guarded row {@code key} of {@code fault_account}, then the canary: the same write,
 *       unfenced, to {@code fault_canary}
 *   <li>{@code NAIVE key leaseMs} → {@code NAIVE got|busy}: the canary lock that trusts this JVM's
 *       clock ({@code fault_naive_lock.expires_at_ms} compared with {@code currentTimeMillis})
 *   <li>{@code CLOCK} → {@code CLOCK epochMs zone}
 *   <li>{@code PLAIN key} → {@code PLAIN got|busy}: the canary lock with no lease, a row of
 *       {@code fault_plain_lock} that only its holder deletes
 *   <li>{@code HANG key tag} → {@code INSIDE}: inside a fenced transaction on {@code key}, writes
 *       {@code tag} to the guarded row and an effect row to {@code fault_effect}, writes the first
 *       of two canary steps unfenced (autocommit) to {@code fault_canary}, answers and never
 *       commits, so that it can be killed mid-transaction
 *   <li>{@code RELEASE key} → {@code RELEASED held|lost}; {@code QUIT}
 *   <li>{@code NANOS} → {@code NANOS nanoTime}: this JVM's {@link System#nanoTime()}, for {@link
 *       ChildOps#clockOffset}
 *   <li>{@code LOAD process leaseMs profile keyPrefix} → {@code LOADING}: starts a {@link Workload}
 *       with its own pool and lock service on the same store and database, named {@code process},
 *       whose operations are sent to the parent as they are invoked and recorded ({@link ChildOps})
 * </ul>
 */
public final class HolderMain {

    private HolderMain() {}

    public static void main(String[] args) throws Exception {
        PrivateDatabase.Spec db = PrivateDatabase.Spec.decode(args[1]);
        ChildJvm.Io io = new ChildJvm.Io();
        try (var pool = db.pool("holder", 4);
                Library.Store store = StoreSpec.open(args[0], pool, db.database());
                LockService locks = Library.locks(store.store())) {
            Map<String, Lease> held = new HashMap<>();
            List<AutoCloseable> load = new ArrayList<>();
            io.reply("READY " + ProcessHandle.current().pid());
            String line;
            while ((line = io.command()) != null) {
                String[] c = line.split(" ");
                switch (c[0]) {
                    case "ACQUIRE" -> {
                        Lease lease = locks.acquire(LockKey.parse(c[1]), options(c[2], Duration.ofSeconds(10)));
                        held.put(c[1], lease);
                        io.reply("HELD " + lease.fence() + " " + remaining(lease) + " " + lease.ownerToken());
                    }
                    case "TRY" -> {
                        Optional<Lease> lease = locks.tryAcquire(LockKey.parse(c[1]), options(c[2], Duration.ZERO));
                        lease.ifPresent(l -> held.put(c[1], l));
                        io.reply(lease.map(l -> "HELD " + l.fence() + " " + remaining(l))
                                .orElse("BUSY"));
                    }
                    case "WRITE" -> io.reply("WROTE " + write(pool, held.get(c[1]), c[2]));
                    case "NAIVE" -> io.reply("NAIVE " + (naive(pool, c[1], Long.parseLong(c[2])) ? "got" : "busy"));
                    case "PLAIN" -> io.reply("PLAIN " + (plain(pool, c[1]) ? "got" : "busy"));
                    case "HANG" -> hang(pool, held.get(c[1]), c[2], io);
                    case "CLOCK" -> io.reply("CLOCK " + System.currentTimeMillis() + " " + ZoneId.systemDefault());
                    case "RELEASE" -> {
                        Lease lease = held.remove(c[1]);
                        boolean wasHeld = lease.isHeld();
                        try {
                            lease.close();
                        } catch (RuntimeException e) {
                            wasHeld = false; // the store could not be told: the lease ends at its expiry
                        }
                        io.reply("RELEASED " + (wasHeld ? "held" : "lost"));
                    }
                    case "NANOS" -> io.reply("NANOS " + System.nanoTime());
                    case "LOAD" -> {
                        load(args[0], db, c, io, load);
                        io.reply("LOADING");
                    }
                    case "QUIT" -> {
                        for (int i = load.size() - 1; i >= 0; i--) {
                            load.get(i).close();
                        }
                        return;
                    }
                    default -> io.reply("ERROR unknown command " + line);
                }
            }
        }
    }

    /** Starts the workload of {@code LOAD}; what to close when done goes to {@code resources}, in order. */
    private static void load(
            String storeSpec, PrivateDatabase.Spec db, String[] c, ChildJvm.Io io, List<AutoCloseable> resources) {
        HikariDataSource pool = db.pool("load", 4);
        resources.add(pool);
        Library.Store store = StoreSpec.open(storeSpec, pool, db.database());
        resources.add(store);
        LockService locks = Library.locks(store.store());
        resources.add(locks);
        resources.add(new Workload(
                c[1],
                locks,
                pool,
                new History(ChildOps.journal(io)),
                c[4],
                Duration.ofMillis(Long.parseLong(c[2])),
                Profile.parse(c[3])));
    }

    private static LeaseOptions options(String leaseMs, Duration wait) {
        return LeaseOptions.builder()
                .leaseFor(Duration.ofMillis(Long.parseLong(leaseMs)))
                .waitFor(wait)
                .renewal(true)
                .build();
    }

    private static long remaining(Lease lease) {
        return Math.max(0, lease.validUntil().toEpochMilli() - System.currentTimeMillis());
    }

    /**
     * Writes as a holder that was paused between its last check and its write: it does not look at
     * {@code isHeld()}, only the fence protects the row. The canary is the same write without it.
     */
    static String write(DataSource pool, Lease lease, String tag) throws Exception {
        boolean accepted = Library.fencedWrite(pool, lease, tx -> {
            try (PreparedStatement update =
                    tx.prepareStatement("UPDATE fault_account SET owner = ?, fence = ? WHERE id = ?")) {
                update.setString(1, tag);
                update.setLong(2, lease.fence());
                update.setString(3, lease.key().render());
                update.executeUpdate();
            }
        });
        try (Connection connection = pool.getConnection();
                PreparedStatement update =
                        connection.prepareStatement("UPDATE fault_canary SET owner = ?, fence = ? WHERE id = ?")) {
            update.setString(1, tag);
            update.setLong(2, lease.fence());
            update.setString(3, lease.key().render());
            update.executeUpdate();
            if (!connection.getAutoCommit()) {
                connection.commit();
            }
        }
        return accepted ? "accepted" : "rejected";
    }

    /** The canary lock with no lease: a row that only its holder's release would delete. */
    static boolean plain(DataSource pool, String key) throws Exception {
        try (Connection connection = pool.getConnection();
                PreparedStatement take =
                        connection.prepareStatement("INSERT INTO fault_plain_lock (id, owner) VALUES (?, ?)")) {
            take.setString(1, key);
            take.setString(2, String.valueOf(ProcessHandle.current().pid()));
            take.executeUpdate();
            if (!connection.getAutoCommit()) {
                connection.commit();
            }
            return true;
        } catch (java.sql.SQLException taken) {
            return false;
        }
    }

    /** Answers from inside an open fenced transaction and then waits there to be killed. */
    private static void hang(DataSource pool, Lease lease, String tag, ChildJvm.Io io) throws Exception {
        Library.fencedWrite(pool, lease, tx -> {
            try (PreparedStatement update =
                            tx.prepareStatement("UPDATE fault_account SET owner = ?, fence = ? WHERE id = ?");
                    PreparedStatement effect =
                            tx.prepareStatement("INSERT INTO fault_effect (effect, id) VALUES (?, ?)")) {
                update.setString(1, tag);
                update.setLong(2, lease.fence());
                update.setString(3, lease.key().render());
                update.executeUpdate();
                effect.setString(1, lease.key().render() + "#" + lease.fence());
                effect.setString(2, lease.key().render());
                effect.executeUpdate();
            }
            try (Connection canary = pool.getConnection();
                    PreparedStatement first =
                            canary.prepareStatement("UPDATE fault_canary SET owner = ? WHERE id = ?")) {
                first.setString(1, tag);
                first.setString(2, lease.key().render());
                first.executeUpdate();
                if (!canary.getAutoCommit()) {
                    canary.commit();
                }
            }
            io.reply("INSIDE");
            try {
                while (true) {
                    Thread.sleep(60_000); // the process is killed here; it never gets past this point
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new java.sql.SQLException("interrupted inside the fenced transaction", e);
            }
        });
    }

    /** The canary lock: expiry written and compared by this JVM's clock. */
    static boolean naive(DataSource pool, String key, long leaseMs) throws Exception {
        long now = System.currentTimeMillis();
        try (Connection connection = pool.getConnection();
                PreparedStatement take = connection.prepareStatement(
                        "UPDATE fault_naive_lock SET owner = ?, expires_at_ms = ? WHERE id = ? AND expires_at_ms < ?")) {
            take.setString(1, String.valueOf(ProcessHandle.current().pid()));
            take.setLong(2, now + leaseMs);
            take.setString(3, key);
            take.setLong(4, now);
            boolean got = take.executeUpdate() == 1;
            if (!connection.getAutoCommit()) {
                connection.commit();
            }
            return got;
        }
    }
}
