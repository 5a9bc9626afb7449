package dev.leasehold.faults;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.jdbc.Database;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;

/**
 * 7. Holder JVMs whose clock is shifted by an hour ({@code LD_PRELOAD} of Debian's libfaketime with
 * {@code FAKETIME=+1h} or {@code -1h}) and whose time zone is far away ({@code TZ} and {@code
 * -Duser.timezone}: UTC+14 and UTC-12) share keys with this JVM. Protected, on each store: a lease
 * taken by a shifted JVM that then dies lasts its lease, not zero and not an hour; a shifted JVM
 * cannot take a key this JVM holds (it is not stale); a key this JVM let expire can be taken by a
 * JVM an hour behind at once. Canary: a lock whose expiry is written and compared by the JVM's own
 * clock, which the JVM an hour ahead takes from its holder and the JVM an hour behind leaves free.
 * Without libfaketime the scenario reports the tool as absent.
 */
final class ClockShift implements Scenario {

    static final String TITLE = "7 clock shift";
    static final Path LIBFAKETIME = Path.of("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1");
    private static final Duration LEASE = Duration.ofSeconds(2);
    private static final Duration SLACK = Duration.ofMillis(1000);

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
        if (!Files.isReadable(LIBFAKETIME)) {
            return Outcome.absent(
                    TITLE,
                    backend,
                    Outcome.Status.TOOL_ABSENT,
                    "libfaketime is not installed (" + LIBFAKETIME + ", Debian package faketime)");
        }
        Database database = StoreSpec.database(backend);
        String storeSpec = StoreSpec.forBackend(backend);
        Tally tally = new Tally(TITLE, backend);
        History history = new History();
        try (PrivateDatabase db = PrivateDatabase.create(database);
                Library.Store store = StoreSpec.open(storeSpec, db.dataSource(), database);
                LockService locks = Library.locks(store.store())) {
            db.execute("CREATE TABLE fault_naive_lock (id VARCHAR(100) NOT NULL PRIMARY KEY, owner VARCHAR(64),"
                    + " expires_at_ms BIGINT NOT NULL)");
            Workload.createTable(db);
            Workload load = new Workload("W", locks, db.dataSource(), history, "shift", Duration.ofSeconds(2), profile);
            try {
                for (int round = 0; profile.more(round, 1, history.size()); round++) {
                    history.fault("holder JVMs at +1h and -1h, round " + round);
                    try (ChildJvm ahead = shifted("+1h", "Pacific/Kiritimati", backend, storeSpec, db, round);
                            ChildJvm behind = shifted("-1h", "Etc/GMT+12", backend, storeSpec, db, round)) {
                        checkClock(ahead, Duration.ofHours(1), tally);
                        checkClock(behind, Duration.ofHours(-1), tally);
                        shiftedCannotTakeAHeldKey(locks, ahead, LockKey.of("shift", "held" + round), tally);
                        behindTakesAnExpiredKey(locks, behind, LockKey.of("shift", "expired" + round), tally);
                        naiveCanary(db, ahead, behind, round, tally);
                        // Last: these kill the children.
                        heldByShiftedLastsItsLease(db, locks, ahead, LockKey.of("shift", "ahead-dies" + round), tally);
                        heldByShiftedLastsItsLease(
                                db, locks, behind, LockKey.of("shift", "behind-dies" + round), tally);
                    }
                }
            } finally {
                load.close();
            }
            tally.check(
                    new HistoryChecker(PausedHolder.OVERLAP, true), history, Workload.effectCounts(db.dataSource()));
        }
        return tally.outcome();
    }

    private static ChildJvm shifted(
            String offset, String zone, String backend, String storeSpec, PrivateDatabase db, int round)
            throws Exception {
        ChildJvm child = ChildJvm.start(
                "clock" + offset.replace("+", "ahead").replace("-", "behind") + "-" + backend + "-" + round,
                HolderMain.class,
                List.of("-Duser.timezone=" + zone),
                Map.of("LD_PRELOAD", LIBFAKETIME.toString(), "FAKETIME", offset, "TZ", zone),
                storeSpec,
                db.spec().encode());
        child.expect("READY", Duration.ofSeconds(60));
        return child;
    }

    /** The shift took: the child's clock is an hour away from this one (else the scenario proves nothing). */
    private static void checkClock(ChildJvm child, Duration shift, Tally tally) {
        String[] clock =
                child.expect(request(child, "CLOCK"), Duration.ofSeconds(10)).split(" ");
        long offset = Long.parseLong(clock[0]) - System.currentTimeMillis();
        tally.note(child.name() + " runs " + Math.round(offset / 60_000.0) + " min off, zone " + clock[1]);
        if (Math.abs(offset - shift.toMillis()) > 60_000) {
            throw new IllegalStateException(
                    child.name() + " is " + offset + " ms off, not " + shift + ": libfaketime did not shift its clock");
        }
    }

    private static String request(ChildJvm child, String command) {
        child.send(command);
        return command.split(" ")[0];
    }

    /** A shifted JVM takes the key and dies: the key is busy for its lease, then free. */
    private static void heldByShiftedLastsItsLease(
            PrivateDatabase db, LockService locks, ChildJvm child, LockKey key, Tally tally) throws Exception {
        child.send("ACQUIRE " + key.render() + " " + LEASE.toMillis());
        child.expect("HELD", Duration.ofSeconds(30));
        long granted = System.nanoTime();
        child.kill(); // no release: the lease must end by the store's clock
        LeaseOptions options = LeaseOptions.builder().leaseFor(LEASE).build();
        if (locks.tryAcquire(key, options).map(ClockShift::release).orElse(false)) {
            tally.violation("the lease " + child.name() + " took on " + key + " was free at once");
        }
        try {
            Awaitility.await()
                    .atMost(LEASE.plus(SLACK))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> locks.tryAcquire(key, options)
                            .map(ClockShift::release)
                            .orElse(false));
            tally.stallSince(granted);
        } catch (ConditionTimeoutException e) {
            tally.violation("the lease " + child.name() + " took on " + key + " was still held "
                    + LEASE.plus(SLACK).toMillis() + " ms after its grant of " + LEASE.toMillis() + " ms");
        }
        tally.operation();
        db.execute("SELECT 1"); // the database is still reachable for the next step
    }

    private static boolean release(Lease lease) {
        lease.close();
        return true;
    }

    /** This JVM holds the key: a JVM an hour ahead must not see it as stale. */
    private static void shiftedCannotTakeAHeldKey(LockService locks, ChildJvm child, LockKey key, Tally tally)
            throws Exception {
        try (Lease held = locks.acquire(
                key, LeaseOptions.builder().leaseFor(LEASE).renewal(true).build())) {
            child.send("TRY " + key.render() + " " + LEASE.toMillis());
            String reply = child.next(Duration.ofSeconds(30));
            if (reply == null || !reply.equals("BUSY")) {
                tally.violation(child.name() + " was answered '" + reply + "' for " + key + " held by another JVM");
            }
            if (!held.isHeld()) {
                throw new IllegalStateException("this JVM lost " + key + " while the shifted JVM tried it");
            }
            tally.operation();
        }
    }

    /** This JVM's lease expires (no renewal): a JVM an hour behind gets the key right after. */
    private static void behindTakesAnExpiredKey(LockService locks, ChildJvm child, LockKey key, Tally tally)
            throws Exception {
        Lease abandoned = locks.acquire(
                key, LeaseOptions.builder().leaseFor(LEASE).renewal(false).build());
        long granted = System.nanoTime();
        Optional<String> got = Optional.empty();
        while (System.nanoTime() - granted < LEASE.plus(SLACK).toNanos()) {
            child.send("TRY " + key.render() + " " + LEASE.toMillis());
            String reply = child.next(Duration.ofSeconds(30));
            if (reply != null && reply.startsWith("HELD")) {
                got = Optional.of(reply);
                break;
            }
        }
        tally.stallSince(granted);
        if (got.isEmpty()) {
            tally.violation(child.name() + " could not take " + key + " within "
                    + LEASE.plus(SLACK).toMillis() + " ms of a " + LEASE.toMillis()
                    + " ms lease that was never renewed");
        } else if (System.nanoTime() - granted < LEASE.minusMillis(200).toNanos()) {
            tally.violation(child.name() + " took " + key + " before its holder's lease ended");
        }
        try {
            abandoned.close();
        } catch (RuntimeException e) {
            // expired: nothing to release
        }
        tally.operation();
    }

    /** The JVM-clock lock: the JVM ahead takes it from its holder; a lock of the JVM behind is free at once. */
    private static void naiveCanary(PrivateDatabase db, ChildJvm ahead, ChildJvm behind, int round, Tally tally)
            throws Exception {
        String heldHere = "naive-here" + round;
        String heldBehind = "naive-behind" + round;
        db.execute(
                "INSERT INTO fault_naive_lock (id, owner, expires_at_ms) VALUES ('" + heldHere + "', 'none', 0)",
                "INSERT INTO fault_naive_lock (id, owner, expires_at_ms) VALUES ('" + heldBehind + "', 'none', 0)");
        if (!HolderMain.naive(db.dataSource(), heldHere, LEASE.toMillis())) {
            throw new IllegalStateException("this JVM could not take the free naive lock " + heldHere);
        }
        ahead.send("NAIVE " + heldHere + " " + LEASE.toMillis());
        if (ahead.expect("NAIVE", Duration.ofSeconds(30)).equals("got")) {
            tally.canary(ahead.name() + " took the JVM-clock lock " + heldHere + " this JVM held for "
                    + LEASE.toMillis() + " ms");
        }
        behind.send("NAIVE " + heldBehind + " " + LEASE.toMillis());
        if (!behind.expect("NAIVE", Duration.ofSeconds(30)).equals("got")) {
            throw new IllegalStateException(behind.name() + " could not take the free naive lock " + heldBehind);
        }
        if (HolderMain.naive(db.dataSource(), heldBehind, LEASE.toMillis())) {
            tally.canary("the JVM-clock lock " + heldBehind + " that " + behind.name()
                    + " had just taken was free for this JVM at once");
        }
        tally.operation();
    }
}
