package dev.leasehold.faults;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockBusyException;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.faults.History.Kind;
import dev.leasehold.faults.History.Result;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * Operations a scenario runs in the background while it injects its faults, each recorded in its
 * {@link History}: a few threads, each its own owner, take one of a few shared keys (a short wait),
 * write through the grant's fence at the guarded table {@value #RESOURCE} (when the scenario has a
 * database), and release it, over and over until {@link #close() closed}. A loss ({@code onLost})
 * is recorded when the holder is told. A call that fails is recorded with an unknown outcome.
 * The short profile paces the threads so that they add little load to a build; the long one does
 * not (unless its {@link Shape} says otherwise), so that its histories hold thousands of operations
 * under the faults. A scenario may also have the threads {@link #contend contend} for a key of its
 * own, the one its fault hits, and a workload may run in a child JVM that is killed, its history
 * streamed to the parent ({@link ChildOps}): every operation is told to the history's journal as it
 * is invoked.
 *
 * <p>A {@link Shape} can make some grants last: held (renewed) for a random time before their
 * write, so that a fault meets a workload holder, which must then be told it lost its grant in
 * time ({@link #lossesAfterConfirmation()}, {@link #report}).
 */
final class Workload implements AutoCloseable {

    static final String RESOURCE = "fault_history_log";

    /**
     * The pause after a call of unknown outcome, of a workload that holds grants or times its
     * losses (one that a fault meets): thousands of calls a second into a black-holed link would
     * load the very client whose timing the row checks.
     */
    private static final Duration FAILURE_PAUSE = Duration.ofMillis(100);

    /**
     * How the threads work.
     *
     * @param keys how many shared keys the threads take, at random
     * @param hold the longest a held grant is kept before its write ({@link Duration#ZERO}: none
     *     is); renewal is on when it is not zero
     * @param holdOneIn one grant in this many is held, the others are written and released at once
     * @param longPace the pause after each operation in the long profile (the short one pauses 25
     *     ms)
     * @param confirmations the listener of the lock service's events, to time each loss from the
     *     grant's last confirmation; or {@code null}
     */
    record Shape(int keys, Duration hold, int holdOneIn, Duration longPace, Confirmations confirmations) {

        /** Two keys, every grant released at once, no pause in the long profile. */
        static final Shape BRIEF = new Shape(2, Duration.ZERO, 1, Duration.ZERO, null);

        /**
         * {@code keys} keys, one grant in {@code holdOneIn} held up to {@code hold} (zero: none),
         * a pause of {@code longPace} in the long profile too, losses timed by
         * {@code confirmations}.
         */
        static Shape of(int keys, Duration hold, int holdOneIn, Duration longPace, Confirmations confirmations) {
            return new Shape(keys, hold, holdOneIn, longPace, confirmations);
        }
    }

    private final String process;
    private final LockService locks;
    private final DataSource guarded;
    private final History history;
    private final String keyPrefix;
    private final LeaseOptions options;
    private final long paceNanos;
    private final Shape shape;
    private final List<Thread> threads = new ArrayList<>();
    private final AtomicInteger operations = new AtomicInteger();
    private volatile List<LockKey> contended = List.of();
    private final AtomicInteger contendedGranted = new AtomicInteger();
    private final AtomicInteger contendedRefused = new AtomicInteger();
    private final AtomicInteger refused = new AtomicInteger();
    private final AtomicInteger unknown = new AtomicInteger();
    private final AtomicInteger held = new AtomicInteger();
    private final AtomicInteger lost = new AtomicInteger();
    private final AtomicInteger heldAfterLoss = new AtomicInteger();
    private final Queue<Loss> losses = new ConcurrentLinkedQueue<>();

    /**
     * A holder told it lost its grant.
     *
     * @param afterConfirmation from the grant's last confirmation to the holder's {@code onLost}
     * @param event from that confirmation to the LOST event, or {@code null} if not seen
     * @param key the grant's key
     * @param cause what the lease said
     */
    record Loss(Duration afterConfirmation, Duration event, String key, String cause) {}

    private volatile boolean stopped;

    /**
     * Starts the threads.
     *
     * @param process the history's process name; thread {@code i} is {@code process + i}
     * @param locks the protected lock service under the fault
     * @param guarded the database of the guarded table (see {@link #createTable}), or {@code null}
     *     for grants alone
     * @param keyPrefix the keys' id prefix, distinct from the scenario's own keys
     * @param lease each grant's lease
     */
    Workload(
            String process,
            LockService locks,
            DataSource guarded,
            History history,
            String keyPrefix,
            Duration lease,
            Profile profile) {
        this(process, locks, guarded, history, keyPrefix, lease, profile, Shape.BRIEF);
    }

    /** Starts the threads, working as {@code shape} says. */
    Workload(
            String process,
            LockService locks,
            DataSource guarded,
            History history,
            String keyPrefix,
            Duration lease,
            Profile profile,
            Shape shape) {
        this.process = process;
        this.shape = shape;
        this.locks = locks;
        this.guarded = guarded;
        this.history = history;
        this.keyPrefix = keyPrefix;
        this.options = LeaseOptions.builder()
                .leaseFor(lease)
                .waitFor(Duration.ofMillis(200))
                .renewal(!shape.hold().isZero())
                .build();
        this.paceNanos = profile == Profile.SHORT
                ? TimeUnit.MILLISECONDS.toNanos(25)
                : shape.longPace().toNanos();
        for (int i = 0; i < 3; i++) {
            String name = process + i;
            Thread thread = new Thread(() -> loop(name), "workload-" + name);
            thread.setDaemon(true);
            threads.add(thread);
            thread.start();
        }
    }

    /** Creates the guarded table the workload writes to. */
    static void createTable(PrivateDatabase db) throws Exception {
        db.execute("CREATE TABLE " + RESOURCE + " (effect VARCHAR(120) NOT NULL, lock_key VARCHAR(100) NOT NULL,"
                + " fence BIGINT NOT NULL)");
    }

    /** How many times each effect the workload wrote exists at its table. */
    static Map<String, Long> effectCounts(DataSource dataSource) throws SQLException {
        return HistoryChecker.effectCounts(dataSource, RESOURCE);
    }

    /**
     * From now on each thread also takes {@code key}, as often as each of the workload's own keys
     * ({@code null}: no longer).
     */
    void contend(LockKey key) {
        contend(key == null ? List.of() : List.of(key));
    }

    /**
     * From now on each thread also takes each of {@code keys}, each as often as each of the
     * workload's own keys (empty: no longer): the keys another process locks, such as a
     * service's, so that the workload's grants and that process's interleave.
     */
    void contend(List<LockKey> keys) {
        contended = List.copyOf(keys);
    }

    /** How many acquires of a {@link #contend contended} key were granted so far. */
    int contendedGranted() {
        return contendedGranted.get();
    }

    /**
     * How many acquires of a {@link #contend contended} key were refused so far: the key stayed
     * taken for the whole wait, by another process or another thread of the workload.
     */
    int contendedRefused() {
        return contendedRefused.get();
    }

    /** How many operations the workload has recorded so far. */
    int operations() {
        return operations.get();
    }

    /**
     * Waits until the workload has recorded at least {@code count} operations in all, at most
     * {@code atMost}; whether it has.
     */
    boolean awaitOperations(int count, Duration atMost) throws InterruptedException {
        long deadline = System.nanoTime() + atMost.toNanos();
        while (operations.get() < count) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            TimeUnit.MILLISECONDS.sleep(10); // polls a counter; nothing to be notified of
        }
        return true;
    }

    private void loop(String name) {
        LockOwner owner = LockOwner.create(name);
        long n = 0;
        while (!stopped) {
            List<LockKey> extra = contended;
            int pick = ThreadLocalRandom.current().nextInt(shape.keys() + extra.size());
            LockKey key = pick >= shape.keys() ? extra.get(pick - shape.keys()) : LockKey.of("load", keyPrefix + pick);
            int failedBefore = unknown.get();
            // A holding workload gives each grant an owner of its own, as A, B and C have: a release
            // of an earlier grant that a fault delayed must not meet a later grant of the same owner.
            once(
                    name,
                    shape.hold().isZero() ? owner : LockOwner.create(name),
                    key,
                    name + "-" + n++,
                    pick >= shape.keys());
            if (paceNanos > 0) {
                LockSupport.parkNanos(paceNanos);
            }
            if (unknown.get() > failedBefore && (!shape.hold().isZero() || shape.confirmations() != null)) {
                // a call that got no answer: back off before the next, as a client would
                LockSupport.parkNanos(FAILURE_PAUSE.toNanos());
            }
        }
    }

    private void once(String name, LockOwner owner, LockKey key, String effect, boolean contendedKey) {
        String id = key.render();
        long invoked = History.now();
        history.invoking(name, Kind.ACQUIRE, id, null, invoked, 0, null, null);
        Lease lease;
        try {
            lease = locks.acquire(key, options, owner);
        } catch (LockBusyException e) {
            record(name, Kind.ACQUIRE, id, null, invoked, 0, Result.REFUSED, null, null);
            if (contendedKey) {
                contendedRefused.incrementAndGet();
            }
            return;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopped = true;
            return;
        } catch (RuntimeException e) {
            record(name, Kind.ACQUIRE, id, null, invoked, 0, Result.UNKNOWN, null, null);
            return;
        }
        record(name, Kind.ACQUIRE, id, lease.ownerToken(), invoked, lease.fence(), Result.OK, null, null);
        if (contendedKey) {
            contendedGranted.incrementAndGet();
        }
        CountDownLatch told = new CountDownLatch(1);
        lease.onLost(e -> {
            long at = history.lost(name, lease);
            operations.incrementAndGet();
            lost.incrementAndGet();
            Long confirmed =
                    shape.confirmations() == null ? null : shape.confirmations().lastConfirmed(lease);
            if (confirmed != null) {
                losses.add(new Loss(
                        Duration.ofNanos(at - confirmed),
                        shape.confirmations().lostAfterConfirmation(lease),
                        id,
                        e.getMessage()));
            }
            told.countDown();
        });
        long hold = holdNanos();
        boolean toldLost = false;
        if (hold > 0) {
            held.incrementAndGet();
            try {
                // the grant is held this long (its renewals go on) unless its holder is told it is lost
                toldLost = told.await(hold, TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                stopped = true;
            }
            if (toldLost && lease.isHeld()) {
                heldAfterLoss.incrementAndGet();
            }
        }
        if (guarded != null && !toldLost) {
            write(name, lease, effect);
        }
        long release = History.now();
        history.invoking(name, Kind.RELEASE, id, lease.ownerToken(), release, lease.fence(), null, null);
        Result released;
        try {
            lease.close();
            released = Result.OK;
        } catch (RuntimeException e) {
            released = Result.UNKNOWN;
        }
        record(name, Kind.RELEASE, id, lease.ownerToken(), release, lease.fence(), released, null, null);
    }

    /** How long the next grant is held before its write: mostly 0 ns, see {@link Shape}. */
    private long holdNanos() {
        if (shape.hold().isZero() || ThreadLocalRandom.current().nextInt(shape.holdOneIn()) != 0) {
            return 0;
        }
        return ThreadLocalRandom.current().nextLong(1, shape.hold().toNanos());
    }

    private void record(
            String name,
            Kind kind,
            String id,
            String owner,
            long invoked,
            long fence,
            Result result,
            String resource,
            String effect) {
        operations.incrementAndGet();
        if (result == Result.UNKNOWN) {
            unknown.incrementAndGet();
        } else if (result == Result.REFUSED) {
            refused.incrementAndGet();
        }
        history.add(name, kind, id, owner, invoked, fence, result, resource, effect);
    }

    /**
     * How many grants to threads of workload {@code to} came next on their key after a grant of
     * workload {@code from}'s whose holder was told it lost it: grants that crossed a fault.
     */
    static long crossings(History history, String from, String to) {
        List<History.Op> ops = history.ops();
        java.util.Set<String> lostGrants = new java.util.HashSet<>();
        for (History.Op op : ops) {
            if (op.kind() == Kind.LOST && op.process().startsWith(from)) {
                lostGrants.add(op.grant());
            }
        }
        Map<String, List<History.Op>> byKey = new java.util.HashMap<>();
        for (History.Op op : ops) {
            if (op.kind() == Kind.ACQUIRE && op.result() == Result.OK) {
                byKey.computeIfAbsent(op.key(), k -> new ArrayList<>()).add(op);
            }
        }
        long crossed = 0;
        for (List<History.Op> grants : byKey.values()) {
            grants.sort(java.util.Comparator.comparingLong(History.Op::completeNanos));
            for (int i = 1; i < grants.size(); i++) {
                History.Op before = grants.get(i - 1);
                if (lostGrants.contains(before.grant())
                        && grants.get(i).process().startsWith(to)) {
                    crossed++;
                }
            }
        }
        return crossed;
    }

    /** From each grant's last confirmation to its holder's {@code onLost}, for the grants told lost. */
    List<Loss> lossesAfterConfirmation() {
        return List.copyOf(losses);
    }

    /**
     * Notes what the workload met in {@code tally} ({@code who}: which threads they are) and counts
     * a violation for each holder told lost later than {@code lostBound} after its grant's last
     * confirmation, or whose lease still said {@code isHeld()} after it.
     */
    void report(Tally tally, String who, Duration lostBound) {
        List<Loss> losses = lossesAfterConfirmation();
        Duration longest = losses.stream()
                .map(Loss::afterConfirmation)
                .max(Duration::compareTo)
                .orElse(Duration.ZERO);
        tally.note("workload " + process + " (" + who + "): " + operations.get() + " operations, "
                + unknown.get() + " of unknown outcome, " + refused.get() + " refused (busy or a fence), " + held.get()
                + " grants held, " + lost.get()
                + " holders told lost"
                + (losses.isEmpty() ? "" : " (at most " + longest.toMillis() + " ms after their last confirmation)"));
        for (Loss loss : losses) {
            if (loss.afterConfirmation().compareTo(lostBound) > 0) {
                tally.violation("a holder of workload " + process + " (" + who + ") was told it lost " + loss.key()
                        + " " + loss.afterConfirmation().toMillis() + " ms after its last confirmation: beyond "
                        + lostBound.toMillis() + " ms [LOST event "
                        + (loss.event() == null ? "not seen" : loss.event().toMillis() + " ms")
                        + " after that confirmation; cause: " + loss.cause() + "]");
            }
        }
        if (heldAfterLoss.get() > 0) {
            tally.violation(
                    heldAfterLoss.get() + " leases of workload " + process + " still said isHeld() after onLost");
        }
    }

    private void write(String name, Lease lease, String effect) {
        String id = lease.key().render();
        long invoked = History.now();
        history.invoking(name, Kind.WRITE, id, lease.ownerToken(), invoked, lease.fence(), RESOURCE, effect);
        Result result;
        try {
            boolean accepted = Library.fencedWrite(guarded, lease, tx -> {
                try (PreparedStatement insert = tx.prepareStatement(
                        "INSERT INTO " + RESOURCE + " (effect, lock_key, fence) VALUES (?, ?, ?)")) {
                    insert.setString(1, effect);
                    insert.setString(2, id);
                    insert.setLong(3, lease.fence());
                    insert.executeUpdate();
                }
            });
            result = accepted ? Result.OK : Result.REFUSED;
        } catch (SQLException | RuntimeException e) {
            result = Result.UNKNOWN;
        }
        record(name, Kind.WRITE, id, lease.ownerToken(), invoked, lease.fence(), result, RESOURCE, effect);
    }

    /** Tells the threads to stop after their operation, without waiting for them ({@link #close} waits). */
    void stop() {
        stopped = true;
    }

    /** Stops the threads and waits for each to finish its operation. */
    @Override
    public void close() {
        stopped = true;
        boolean interrupted = false;
        for (Thread thread : threads) {
            try {
                thread.join(TimeUnit.SECONDS.toMillis(60));
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
