package dev.leasehold.faults;

import dev.leasehold.Lease;
import dev.leasehold.LeaseInfo;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockBusyException;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.faults.History.Kind;
import dev.leasehold.faults.History.Result;
import dev.leasehold.jdbc.Database;
import dev.leasehold.testkit.EtcdCluster;
import dev.leasehold.testkit.TcpProxy;
import dev.leasehold.testkit.TcpProxy.Direction;
import java.net.URI;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.awaitility.Awaitility;

/**
 * 12. The etcd lease store on a three-member cluster this scenario starts. First a client (A) that
 * reaches one follower through a TCP proxy of the test kit is cut off, or black-holed, while it
 * holds, while it waits for a key another client holds, and (answers only) while it releases; then
 * the leader is killed ({@code SIGKILL}) while a directly connected client holds; last, a member
 * (a follower or the leader) is cut off from the other two through the peer proxies ({@link
 * EtcdCluster#isolate}) while a client whose only endpoint it is holds. A
 * holder cut off must be told {@code onLost} by its lease's end; each next holder's fence (the
 * key's revision) must be larger; an old holder's fenced write after the new holder's must be
 * refused; the history checker sees no overlapping grants (etcd keeps what it acknowledged).
 * Meanwhile two workloads ({@link Workload}) take shared keys of their own in each part: {@code WF}
 * through a second proxy to A's member that suffers each fault with A's link, then through a client
 * of all members while the leader is killed, then on the cut-off member alone; {@code WN} on every
 * member, then on the majority. One grant of {@code WF}'s in four is held (renewed) up to 3
 * leases; a holder the fault meets must be told {@code onLost} within its last confirmation +
 * lease + 200 ms. The long profile repeats the proxy rounds until the history holds 10 000
 * operations.
 * Canaries: a probe through the proxy answers before each cut and not during it (for the cut-off
 * member, a linearizable read there); the cut-off
 * holder's unfenced write after the heal lands over the new holder's; the killed leader's endpoint
 * stops answering and another member leads.
 */
final class EtcdFaults implements Scenario {

    static final String TITLE = "12 etcd";
    private static final String BACKEND = "etcd, 3 members";
    /** etcd's shortest lease with the cluster's 1 s election timeout. */
    private static final Duration LEASE = Duration.ofSeconds(2);
    /** From a lease's local deadline to its {@code onLost} callback, and two grants' overlap. */
    private static final Duration LOST_SLACK = Duration.ofMillis(200);

    /** The longest a waiter sleeps between two asks when no release notice reaches it. */
    private static final Duration LONGEST_POLL = Duration.ofSeconds(1);
    /** Scheduling on a loaded machine, on top of a bound for a waiter. */
    private static final Duration WAIT_SLACK = Duration.ofMillis(500);

    /** A's lease in the lost-release case: long enough that its release surely arrives first. */
    private static final Duration RELEASED_LEASE = Duration.ofSeconds(6);

    private static final String TABLE = "fault_etcd";

    /** The workload's shared keys, and its pause after each operation in the long profile. */
    private static final int LOAD_KEYS = 3;

    private static final Duration LOAD_PACE = Duration.ofMillis(10);

    @Override
    public String title() {
        return TITLE;
    }

    @Override
    public List<String> backends() {
        return List.of("etcd");
    }

    @Override
    public Outcome run(String backend, Profile profile) throws Exception {
        if (!EtcdCluster.installed()) {
            return Outcome.absent(
                    TITLE,
                    BACKEND,
                    Outcome.Status.TOOL_ABSENT,
                    "the etcd binary is not installed (Debian package etcd-server)");
        }
        Tally tally = new Tally(TITLE, BACKEND);
        History history = new History();
        ExecutorService workers = Executors.newCachedThreadPool();
        String prefix = "faults-" + UUID.randomUUID().toString().substring(0, 8) + "/";
        try (PrivateDatabase db = PrivateDatabase.create(Database.POSTGRESQL);
                EtcdCluster cluster =
                        EtcdCluster.startWithPeerProxies(3, Duration.ofMillis(100), Duration.ofSeconds(1))) {
            db.execute(
                    "CREATE TABLE " + TABLE + " (effect VARCHAR(64) NOT NULL PRIMARY KEY,"
                            + " lock_key VARCHAR(100) NOT NULL, fence BIGINT NOT NULL)",
                    "CREATE TABLE fault_etcd_canary (lock_key VARCHAR(100) NOT NULL PRIMARY KEY,"
                            + " process VARCHAR(8) NOT NULL)");
            int leader = cluster.awaitLeader(Duration.ofSeconds(30));
            int follower = (leader + 1) % cluster.size();
            URI target = URI.create(cluster.endpoint(follower));
            Workload.createTable(db);
            try (TcpProxy proxy = TcpProxy.to(target.getHost(), target.getPort());
                    TcpProxy loadProxy = TcpProxy.to(target.getHost(), target.getPort());
                    Library.Store far =
                            Library.etcdStore(List.of("http://" + proxy.host() + ":" + proxy.port()), prefix);
                    Library.Store farLoad =
                            Library.etcdStore(List.of("http://" + loadProxy.host() + ":" + loadProxy.port()), prefix);
                    Library.Store near = Library.etcdStore(cluster.endpoints(), prefix);
                    LockService a = Library.locks(far.store());
                    LockService b = Library.locks(near.store())) {
                // Workload threads on shared keys: behind a proxy of their own to the same member,
                // which suffers each fault with A's link, and on every member, directly.
                Loads loads = Loads.start(
                        db, history, profile, "", farLoad, "behind the faulted proxy", near, "on every member");
                Run run = new Run(db, tally, history, a, b, far, loadProxy, workers);
                Duration longestReconnect = Duration.ZERO;
                try {
                    for (int round = 0; profile.more(round, 2, history.size()); round++) {
                        for (int part = 0; part < 3; part++) {
                            Duration back = awaitAnswers(far);
                            longestReconnect = back.compareTo(longestReconnect) > 0 ? back : longestReconnect;
                            switch (part) {
                                case 0 -> run.holderCutOff(proxy, round, round % 2 == 0);
                                case 1 -> run.waiterCutOff(proxy, round, round % 2 == 1);
                                default -> run.releaseAnswerLost(proxy, round);
                            }
                        }
                    }
                } finally {
                    loads.close(tally);
                }
                tally.note("A's etcd client answered again at most " + longestReconnect.toMillis()
                        + " ms after a heal (gRPC reconnects with a back-off)");
            }
            try (Library.Store first = Library.etcdStore(cluster.endpoints(), prefix);
                    Library.Store second = Library.etcdStore(cluster.endpoints(), prefix);
                    Library.Store firstLoad = Library.etcdStore(cluster.endpoints(), prefix);
                    Library.Store secondLoad = Library.etcdStore(cluster.endpoints(), prefix);
                    LockService one = Library.locks(first.store());
                    LockService two = Library.locks(second.store())) {
                // Workload threads of two clients of all members: the killed leader serves both.
                Loads loads = Loads.start(
                        db,
                        history,
                        profile,
                        "-k",
                        firstLoad,
                        "a client of all members, held",
                        secondLoad,
                        "a client of all members");
                Run run = new Run(db, tally, history, one, two, first, null, workers);
                int rounds = profile.times(1);
                try {
                    for (int round = 0; round < rounds; round++) {
                        run.leaderKilled(cluster, round);
                    }
                } finally {
                    loads.close(tally);
                }
            }
            int rounds = profile.times(2);
            for (int round = 0; round < rounds; round++) {
                int leading = cluster.awaitLeader(Duration.ofSeconds(30));
                // even rounds cut a follower off, odd ones the leader
                int isolated = round % 2 == 1 ? leading : (leading + 1) % cluster.size();
                List<String> majority = new java.util.ArrayList<>(cluster.endpoints());
                majority.remove(isolated);
                Confirmations confirmations = new Confirmations();
                try (Library.Store minority = Library.etcdStore(List.of(cluster.endpoint(isolated)), prefix);
                        Library.Store minorityLoad = Library.etcdStore(List.of(cluster.endpoint(isolated)), prefix);
                        Library.Store rest = Library.etcdStore(majority, prefix);
                        LockService a = Library.locks(minority.store(), confirmations::record);
                        LockService b = Library.locks(rest.store())) {
                    // Workload threads on A's member only, and on the majority's members.
                    Loads loads = Loads.start(
                            db,
                            history,
                            profile,
                            "-m" + round,
                            minorityLoad,
                            "on the cut-off member",
                            rest,
                            "on the majority");
                    try {
                        new Run(db, tally, history, a, b, minority, null, workers)
                                .minorityCut(cluster, isolated, isolated == leading, confirmations, round);
                    } finally {
                        loads.close(tally);
                    }
                }
            }
            tally.note(Workload.crossings(history, "WF", "WN")
                    + " grants of WN came next on a key after a WF holder was told it lost it");
            java.util.Map<String, Long> effects =
                    new java.util.HashMap<>(HistoryChecker.effectCounts(db.dataSource(), TABLE));
            effects.putAll(Workload.effectCounts(db.dataSource()));
            tally.check(new HistoryChecker(LOST_SLACK, true), history, effects);
        } finally {
            workers.shutdownNow();
        }
        return tally.outcome();
    }

    /** The clients of one part and the cases they run. */
    private record Run(
            PrivateDatabase db,
            Tally tally,
            History history,
            LockService a,
            LockService b,
            Library.Store far,
            TcpProxy loadProxy,
            ExecutorService workers) {

        /**
         * B holds; A, through the proxy, waits for the key; A's link is cut or black-holed; B
         * releases; C takes the key. etcd keeps no place for a waiter: only an ask of A's in
         * flight as the link broke can have been granted, and that grant ends at its lease, so C
         * must have the key within A's lease + the longest poll + {@link #WAIT_SLACK} of B's
         * release. A must be granted nothing it is not told about (a grant of A's that it was told
         * of is in the history, whose checker refuses it overlapping C's).
         */
        void waiterCutOff(TcpProxy proxy, int round, boolean blackhole) throws Exception {
            LockKey key = LockKey.of("etcd", "waited" + round);
            String k = key.render();
            String what = blackhole ? "black-holed both ways" : "cut";
            Lease holder = acquire("B", b, key);
            if (!probe(proxy)) {
                throw new IllegalStateException("the probe through the proxy did not answer before the fault");
            }
            long before = proxy.forwardedBytes();
            long invoked = History.now();
            Future<Lease> waiting = workers.submit(() -> acquireOrNull("A", a, key, LEASE, Duration.ofSeconds(6)));
            // A is waiting: its first ask went through the proxy and was refused (the key is B's).
            Awaitility.await("A's ask for " + k + " through the proxy")
                    .atMost(Duration.ofSeconds(10))
                    .pollInterval(Duration.ofMillis(10))
                    .until(() -> waiting.isDone()
                            || (proxy.forwardedBytes() > before
                                    && History.now() - invoked
                                            > Duration.ofMillis(300).toNanos()));
            breakLink(
                    proxy,
                    blackhole,
                    "A's link to etcd " + what + " while A waits for " + k,
                    "A, waiting, was " + what);
            try {
                release("B", holder);
                long released = History.now();
                Lease taken = acquireOrNull("C", b, key, LEASE, Duration.ofSeconds(10));
                Duration bound = LEASE.plus(LONGEST_POLL).plus(WAIT_SLACK);
                if (taken == null) {
                    tally.violation(
                            "C could not take " + k + " within 10 s of B's release while A, waiting, was " + what);
                } else {
                    Duration blocked = Duration.ofNanos(History.now() - released);
                    tally.stall(blocked);
                    tally.note(k + ": C took the key " + blocked.toMillis() + " ms after B's release (A " + what + ")");
                    if (blocked.compareTo(bound) > 0) {
                        tally.violation("A, waiting and " + what + ", held " + k + " from C for " + blocked.toMillis()
                                + " ms after B's release: beyond " + bound.toMillis() + " ms");
                    }
                    inspect("C", b, key);
                    expect("C", taken, "r" + round + "-W-C", true);
                }
                heal(proxy);
                Lease waiter = waiting.get(30, TimeUnit.SECONDS);
                if (taken != null) {
                    inspect("C", b, key);
                    release("C", taken);
                }
                if (waiter != null) {
                    tally.note(k + ": A was granted fence " + waiter.fence() + " after the heal");
                    release("A", waiter);
                }
            } finally {
                heal(proxy);
            }
            tally.operation();
        }

        /**
         * A, through the proxy, holds a lease of {@link #RELEASED_LEASE} and releases it while the
         * answers from etcd are black-holed: the release reaches etcd, its answer does not. etcd
         * must show the key leave A before A's lease could have ended (the release arrived), C
         * must have it by A's lease's end (+ the longest poll + {@link #WAIT_SLACK}), and A's
         * release repeated after the heal must free nothing of C's.
         */
        void releaseAnswerLost(TcpProxy proxy, int round) throws Exception {
            LockKey key = LockKey.of("etcd", "released" + round);
            String k = key.render();
            long acquired = History.now();
            Lease held = acquireOrNull("A", a, key, RELEASED_LEASE, Duration.ofSeconds(15));
            if (held == null) {
                throw new IllegalStateException("A could not take " + k + " before the fault");
            }
            expect("A", held, "r" + round + "-R-A", true);
            if (!probe(proxy)) {
                throw new IllegalStateException("the probe through the proxy did not answer before the fault");
            }
            proxy.blackhole(Direction.DOWNSTREAM);
            if (loadProxy != null) {
                loadProxy.blackhole(Direction.DOWNSTREAM);
            }
            history.fault("answers from etcd black-holed as A releases " + k);
            long invoked = History.now();
            Future<?> closing = workers.submit(held::close);
            String token = held.ownerToken();
            Future<Long> leftA = Partition.whenKeyLeaves(workers, b, key, token, Duration.ofSeconds(15));
            try {
                if (!probe(proxy)) {
                    tally.canary("the probe through the proxy got no answer while etcd's answers were black-holed");
                }
                Lease next = acquireOrNull("C", b, key, LEASE, Duration.ofSeconds(15));
                long grantedAt = History.now();
                Long left = leftA.get(30, TimeUnit.SECONDS);
                // etcd granted A's lease after A asked, so it cannot end before acquired + its TTL.
                long earliestExpiry = acquired + RELEASED_LEASE.toNanos();
                if (left != null && left < earliestExpiry) {
                    tally.note(k + ": A's release reached etcd (the key left A "
                            + Duration.ofNanos(earliestExpiry - left).toMillis()
                            + " ms before A's lease could have ended); its answer was lost");
                } else {
                    tally.violation(k + ": A's release never reached etcd (the key "
                            + (left == null ? "never left A" : "left A only when its lease could have ended") + ")");
                }
                Result result;
                try {
                    closing.get(15, TimeUnit.SECONDS);
                    result = Result.OK;
                } catch (ExecutionException | TimeoutException e) {
                    result = Result.UNKNOWN;
                }
                history.add("A", Kind.RELEASE, k, token, invoked, held.fence(), result, null, null);
                tally.note(k + ": A's release with its answer lost " + (result == Result.OK ? "returned" : "failed"));
                if (next == null) {
                    tally.violation("C could not take " + k + " within 15 s of A's release whose answer was lost");
                } else {
                    Duration took = Duration.ofNanos(grantedAt - invoked);
                    tally.stall(took);
                    Duration bound = RELEASED_LEASE.plus(LONGEST_POLL).plus(WAIT_SLACK);
                    if (took.compareTo(bound) > 0) {
                        tally.violation(k + " was free to C only " + took.toMillis() + " ms after A's release began:"
                                + " beyond " + bound.toMillis() + " ms (A's lease + the longest poll + slack)");
                    }
                    expect("C", next, "r" + round + "-R-C0", true);
                }
                heal(proxy);
                awaitAnswers(far);
                // A's release again, as a client retries a release whose answer it never got.
                long again = History.now();
                boolean freed = far.store().release(key, token);
                history.add(
                        "A",
                        Kind.RELEASE,
                        k,
                        token,
                        again,
                        held.fence(),
                        freed ? Result.OK : Result.REFUSED,
                        null,
                        null);
                if (freed && next != null) {
                    tally.violation("A's second release of " + k + " freed a grant while C held it");
                }
                if (next != null) {
                    inspect("C", b, key);
                    expect("C", next, "r" + round + "-R-C1", true);
                    release("C", next);
                }
            } finally {
                heal(proxy);
            }
            tally.operation();
        }

        /**
         * Cuts or black-holes the link (both ways), recording {@code fault}; returns when. The
         * canary: the probe through the proxy gets no answer while {@code state}.
         */
        private long breakLink(TcpProxy proxy, boolean blackhole, String fault, String state) {
            history.fault(fault);
            long at = System.nanoTime();
            for (TcpProxy link : loadProxy == null ? List.of(proxy) : List.of(proxy, loadProxy)) {
                if (blackhole) {
                    link.blackhole(Direction.BOTH);
                } else {
                    link.cut();
                }
            }
            if (!probe(proxy)) {
                tally.canary("the probe through the proxy got no answer while " + state);
            }
            return at;
        }

        /** Lets A's link, and the far workload's with it, pass again. */
        private void heal(TcpProxy proxy) {
            proxy.heal();
            if (loadProxy != null) {
                loadProxy.heal();
            }
        }

        private Lease acquireOrNull(String process, LockService service, LockKey key, Duration lease, Duration wait)
                throws InterruptedException {
            long invoked = History.now();
            try {
                Lease granted = service.acquire(
                        key,
                        LeaseOptions.builder()
                                .leaseFor(lease)
                                .waitFor(wait)
                                .renewal(true)
                                .build(),
                        LockOwner.create(process));
                history.add(
                        process,
                        Kind.ACQUIRE,
                        key.render(),
                        granted.ownerToken(),
                        invoked,
                        granted.fence(),
                        Result.OK,
                        null,
                        null);
                return granted;
            } catch (LockBusyException e) {
                history.add(process, Kind.ACQUIRE, key.render(), null, invoked, 0, Result.REFUSED, null, null);
            } catch (RuntimeException e) {
                history.add(process, Kind.ACQUIRE, key.render(), null, invoked, 0, Result.UNKNOWN, null, null);
            }
            return null;
        }

        private void inspect(String process, LockService service, LockKey key) {
            long invoked = History.now();
            Optional<LeaseInfo> info = service.inspect(key);
            history.add(
                    process,
                    Kind.INSPECT,
                    key.render(),
                    null,
                    invoked,
                    info.map(LeaseInfo::fence).orElse(0L),
                    Result.OK,
                    null,
                    null);
        }

        /** A, through the proxy, holds; the link is cut or black-holed; B takes over. */
        void holderCutOff(TcpProxy proxy, int round, boolean blackhole) throws Exception {
            LockKey key = LockKey.of("etcd", "cut" + round);
            String k = key.render();
            String what = blackhole ? "black-holed both ways" : "cut";
            Lease held = acquire("A", a, key);
            CountDownLatch lost = lostLatch("A", held);
            expect("A", held, "r" + round + "-A0", true);
            if (!probe(proxy)) {
                throw new IllegalStateException("the probe through the proxy did not answer before the fault");
            }
            long faultAt = breakLink(
                    proxy, blackhole, "A's link to etcd " + what + " while it holds " + k, "the link was " + what);
            try {
                Duration bound = LEASE.plus(LOST_SLACK);
                if (!lost.await(bound.toMillis() + 10_000, TimeUnit.MILLISECONDS)) {
                    tally.violation("A, " + what + " while it held " + k + ", was never told it lost it");
                } else {
                    Duration after = Duration.ofNanos(System.nanoTime() - faultAt);
                    if (after.compareTo(bound) > 0) {
                        tally.violation("A was told it lost " + k + " " + after.toMillis() + " ms after the link was "
                                + what + ": beyond its lease (" + LEASE.toMillis() + " ms) + " + LOST_SLACK.toMillis()
                                + " ms");
                    }
                    if (held.isHeld()) {
                        tally.violation("A's lease on " + k + " still says isHeld() after onLost");
                    }
                }
                Lease next = acquire("B", b, key);
                tally.stall(Duration.ofNanos(System.nanoTime() - faultAt));
                if (next.fence() <= held.fence()) {
                    tally.violation("B got fence " + next.fence() + " on " + k + ", not above A's " + held.fence());
                }
                expect("B", next, "r" + round + "-B", true);
                unfenced(k, "B");
                heal(proxy);
                expect("A", held, "r" + round + "-A1", false);
                unfenced(k, "A");
                if ("A".equals(canaryOwner(k))) {
                    tally.canary("A's unfenced write after the heal landed over B's on " + k);
                }
                release("B", next);
            } finally {
                heal(proxy);
                closeQuietly(held);
            }
            tally.operation();
        }

        /**
         * A, whose client reaches one member only, holds; that member is cut off from the other
         * two (its peer links reset both ways through the peer proxies) while A's link to it
         * stays up. The member, a minority, can confirm nothing: A must be told {@code onLost}
         * (and {@code isHeld()} false) within its last confirmed grant or renewal + its lease +
         * {@link #LOST_SLACK}; B, a client of the majority, then takes the key at a larger fence
         * (revision); A's fenced write during the partition is refused; after the heal the
         * rejoined member shows B's grant. The stall is the time from the cut to B's grant.
         * Canary: a linearizable read at the member answers before the cut and not during it
         * (while a serializable one still answers there), and A's unfenced write lands over B's.
         */
        void minorityCut(EtcdCluster cluster, int isolated, boolean wasLeader, Confirmations confirmations, int round)
                throws Exception {
            LockKey key = LockKey.of("etcd", "minority" + round);
            String k = key.render();
            String member = "m" + isolated + (wasLeader ? " (the leader)" : " (a follower)");
            String endpoint = cluster.endpoint(isolated);
            Lease held = acquire("A", a, key);
            CountDownLatch lost = lostLatch("A", held);
            expect("A", held, "r" + round + "-M-A0", true);
            if (!read(endpoint, false)) {
                throw new IllegalStateException("member " + member + " gave no linearizable read before the cut");
            }
            history.fault(
                    "etcd member " + member + ", A's only endpoint, cut off from the other two while A holds " + k);
            long cutAt = System.nanoTime();
            cluster.isolate(isolated);
            Lease next = null;
            try {
                boolean refused = !read(endpoint, false);
                boolean local = read(endpoint, true);
                if (refused) {
                    tally.canary("a linearizable read at the cut-off member " + member + " got no answer"
                            + (local ? " (a serializable read there did)" : ""));
                }
                tally.note(k + ": during the cut of " + member + " a linearizable read there "
                        + (refused ? "got no answer" : "answered") + ", a serializable one "
                        + (local ? "answered" : "got no answer"));
                if (!lost.await(LEASE.plus(LOST_SLACK).toMillis() + 10_000, TimeUnit.MILLISECONDS)) {
                    tally.violation("A, its member " + member + " cut off, was never told it lost " + k);
                } else {
                    Duration lostAfter = confirmations.lostAfterConfirmation(held);
                    Long confirmed = confirmations.lastConfirmed(held);
                    tally.note(k + ": A told lost "
                            + (lostAfter == null ? "(no confirmation seen)" : lostAfter.toMillis() + " ms")
                            + " after its last confirmation"
                            + (confirmed == null ? "" : " (" + relative(confirmed - cutAt) + " the cut)")
                            + "; " + member + " cut off");
                    if (lostAfter == null || lostAfter.compareTo(LEASE.plus(LOST_SLACK)) > 0) {
                        tally.violation("A was told it lost " + k + " "
                                + (lostAfter == null ? "?" : lostAfter.toMillis())
                                + " ms after its last confirmation: beyond its lease (" + LEASE.toMillis() + " ms) + "
                                + LOST_SLACK.toMillis() + " ms");
                    }
                    if (held.isHeld()) {
                        tally.violation("A's lease on " + k + " still says isHeld() after onLost");
                    }
                }
                next = acquireOrNull("B", b, key, LEASE, Duration.ofSeconds(15));
                if (next == null) {
                    tally.violation("B, a client of the majority, could not take " + k + " within 15 s of A's loss"
                            + " while " + member + " was cut off");
                } else {
                    Duration stall = Duration.ofNanos(System.nanoTime() - cutAt);
                    tally.stall(stall);
                    tally.note(k + ": B, a client of the majority, was granted the key " + stall.toMillis()
                            + " ms after the cut of " + member + " (fence " + held.fence() + " -> " + next.fence()
                            + ")");
                    if (next.fence() <= held.fence()) {
                        tally.violation("B got fence " + next.fence() + " on " + k + ", not above A's " + held.fence());
                    }
                    expect("B", next, "r" + round + "-M-B0", true);
                    inspect("B", b, key);
                    expect("A", held, "r" + round + "-M-A1", false);
                    unfenced(k, "B");
                    unfenced(k, "A");
                    if ("A".equals(canaryOwner(k))) {
                        tally.canary("A's unfenced write, its member cut off, landed over B's on " + k);
                        tally.note(k + ": A's unfenced write, its member cut off, landed over B's");
                    }
                }
            } finally {
                cluster.healPeers();
            }
            cluster.awaitLeader(Duration.ofSeconds(30));
            awaitAnswers(far);
            if (next != null) {
                inspect("A", a, key); // the rejoined member shows B's grant
                expect("B", next, "r" + round + "-M-B1", true);
                release("B", next);
            }
            closeQuietly(held);
            tally.operation();
        }

        /** A holds through all members; the leader is killed; B takes the key after A. */
        void leaderKilled(EtcdCluster cluster, int round) throws Exception {
            LockKey key = LockKey.of("etcd", "leader" + round);
            String k = key.render();
            Lease held = acquire("A", a, key);
            CountDownLatch lost = lostLatch("A", held);
            expect("A", held, "r" + round + "-L-A0", true);
            int leader = cluster.awaitLeader(Duration.ofSeconds(30));
            history.fault("etcd leader m" + leader + " killed while A holds " + k);
            long killedAt = System.nanoTime();
            cluster.kill(leader);
            int next = cluster.awaitLeader(Duration.ofSeconds(30));
            if (next != leader && !cluster.running(leader)) {
                tally.canary("the leader m" + leader + " was gone and m" + next + " led after "
                        + Duration.ofNanos(System.nanoTime() - killedAt).toMillis() + " ms");
            }
            // A keeps its lease through a new leader, or is told it lost it within its lease.
            boolean keptIt = !lost.await(LEASE.plus(LOST_SLACK).toMillis(), TimeUnit.MILLISECONDS) && held.isHeld();
            tally.note(k + ": A " + (keptIt ? "kept its lease through the election" : "was told it lost its lease"));
            if (keptIt) {
                expect("A", held, "r" + round + "-L-A1", true);
                release("A", held);
            }
            Lease taken = acquire("B", b, key);
            tally.stall(Duration.ofNanos(System.nanoTime() - killedAt));
            if (taken.fence() <= held.fence()) {
                tally.violation("B got fence " + taken.fence() + " on " + k + ", not above A's " + held.fence());
            }
            expect("B", taken, "r" + round + "-L-B", true);
            expect("A", held, "r" + round + "-L-A2", false);
            release("B", taken);
            closeQuietly(held);
            cluster.restart(leader);
            cluster.awaitLeader(Duration.ofSeconds(30));
            tally.operation();
        }

        private CountDownLatch lostLatch(String process, Lease lease) {
            CountDownLatch lost = new CountDownLatch(1);
            AtomicLong once = new AtomicLong();
            lease.onLost(e -> {
                if (once.compareAndSet(0, 1)) {
                    history.lost(process, lease);
                    lost.countDown();
                }
            });
            return lost;
        }

        private Lease acquire(String process, LockService service, LockKey key) throws InterruptedException {
            Lease lease = acquireOrNull(process, service, key, LEASE, Duration.ofSeconds(15));
            if (lease == null) {
                throw new IllegalStateException(process + " could not take " + key + " within 15 s");
            }
            return lease;
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

        private static void closeQuietly(Lease lease) {
            try {
                lease.close();
            } catch (RuntimeException e) {
                // lost: its release may fail, the key ends at its expiry
            }
        }

        /** A fenced write at the guarded table that must be {@code accepted} or refused. */
        private void expect(String process, Lease lease, String effect, boolean accepted) throws SQLException {
            long invoked = History.now();
            boolean wrote = Library.fencedWrite(db.dataSource(), lease, tx -> {
                try (PreparedStatement insert =
                        tx.prepareStatement("INSERT INTO " + TABLE + " (effect, lock_key, fence) VALUES (?, ?, ?)")) {
                    insert.setString(1, effect);
                    insert.setString(2, lease.key().render());
                    insert.setLong(3, lease.fence());
                    insert.executeUpdate();
                }
            });
            history.add(
                    process,
                    Kind.WRITE,
                    lease.key().render(),
                    lease.ownerToken(),
                    invoked,
                    lease.fence(),
                    wrote ? Result.OK : Result.REFUSED,
                    TABLE,
                    effect);
            if (wrote != accepted) {
                tally.violation(process + "'s fenced write " + effect + " at fence " + lease.fence() + " was "
                        + (wrote ? "accepted" : "refused"));
            }
        }

        private void unfenced(String key, String process) throws SQLException {
            DataSource dataSource = db.dataSource();
            try (Connection connection = dataSource.getConnection();
                    PreparedStatement delete =
                            connection.prepareStatement("DELETE FROM fault_etcd_canary WHERE lock_key = ?");
                    PreparedStatement insert = connection.prepareStatement(
                            "INSERT INTO fault_etcd_canary (lock_key, process) VALUES (?, ?)")) {
                delete.setString(1, key);
                delete.executeUpdate();
                insert.setString(1, key);
                insert.setString(2, process);
                insert.executeUpdate();
            }
        }

        private String canaryOwner(String key) throws SQLException {
            try (Connection connection = db.dataSource().getConnection();
                    PreparedStatement select =
                            connection.prepareStatement("SELECT process FROM fault_etcd_canary WHERE lock_key = ?")) {
                select.setString(1, key);
                try (ResultSet row = select.executeQuery()) {
                    return row.next() ? row.getString(1) : null;
                }
            }
        }
    }

    /**
     * Two workloads on the same shared keys, each on a store of its own: the first's grants are
     * sometimes held (renewed) for up to 3 leases, so that a fault meets its holders, who must be
     * told {@code onLost} within their last confirmation + lease + {@link #LOST_SLACK}; the
     * second's are let go at once, and take the keys the first's lose.
     */
    private record Loads(Workload held, String heldWhere, Workload brief, String briefWhere, LockService[] services) {

        static Loads start(
                PrivateDatabase db,
                History history,
                Profile profile,
                String part,
                Library.Store heldStore,
                String heldWhere,
                Library.Store briefStore,
                String briefWhere) {
            Confirmations confirmations = new Confirmations();
            LockService heldLocks = Library.locks(heldStore.store(), confirmations::record);
            LockService briefLocks = Library.locks(briefStore.store());
            // each part's threads named apart, so that their effects are too
            Workload held = new Workload(
                    "WF" + part + "/",
                    heldLocks,
                    db.dataSource(),
                    history,
                    "etcd-w",
                    LEASE,
                    profile,
                    Workload.Shape.of(LOAD_KEYS, LEASE.multipliedBy(3), 4, LOAD_PACE, confirmations));
            Workload brief = new Workload(
                    "WN" + part + "/",
                    briefLocks,
                    db.dataSource(),
                    history,
                    "etcd-w",
                    LEASE,
                    profile,
                    Workload.Shape.of(LOAD_KEYS, Duration.ZERO, 1, LOAD_PACE, null));
            return new Loads(held, heldWhere, brief, briefWhere, new LockService[] {heldLocks, briefLocks});
        }

        /** Stops both, notes what they met and counts a holder told lost late as a violation. */
        void close(Tally tally) {
            held.close();
            brief.close();
            for (LockService service : services) {
                service.close();
            }
            held.report(tally, heldWhere, LEASE.plus(LOST_SLACK));
            brief.report(tally, briefWhere, LEASE.plus(LOST_SLACK));
        }
    }

    /** {@code nanos} as "N ms after" or "N ms before". */
    private static String relative(long nanos) {
        return Math.abs(nanos) / 1_000_000 + " ms " + (nanos >= 0 ? "after" : "before");
    }

    /** Waits until the store's client answers again (after a heal it reconnects with a back-off). */
    private static Duration awaitAnswers(Library.Store store) {
        long start = System.nanoTime();
        LockKey probe = LockKey.of("etcd", "link");
        org.awaitility.Awaitility.await("the etcd client behind the proxy to answer again")
                .atMost(Duration.ofSeconds(60))
                .pollInterval(Duration.ofMillis(50))
                .ignoreExceptions()
                .until(() -> store.store().inspect(probe).isEmpty());
        return Duration.ofNanos(System.nanoTime() - start);
    }

    /**
     * Whether the member at {@code endpoint} answers a read of one key within 1 s through etcd's
     * JSON gateway: linearizable (the member must confirm it with a quorum) or serializable (its
     * own data).
     */
    private static boolean read(String endpoint, boolean serializable) {
        java.net.http.HttpRequest request = java.net.http.HttpRequest.newBuilder(URI.create(endpoint + "/v3/kv/range"))
                .timeout(Duration.ofSeconds(1))
                .POST(java.net.http.HttpRequest.BodyPublishers.ofString(
                        "{\"key\":\"cHJvYmU=\",\"serializable\":" + serializable + "}"))
                .build();
        try {
            return READS.send(request, java.net.http.HttpResponse.BodyHandlers.ofString())
                            .statusCode()
                    == 200;
        } catch (java.io.IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static final java.net.http.HttpClient READS = java.net.http.HttpClient.newBuilder()
            .connectTimeout(Duration.ofMillis(500))
            .build();

    /** Whether etcd answers {@code GET /health} through the proxy within 500 ms. */
    private static boolean probe(TcpProxy proxy) {
        try (java.net.Socket socket = new java.net.Socket()) {
            socket.connect(new java.net.InetSocketAddress(proxy.host(), proxy.port()), 500);
            socket.setSoTimeout(500);
            socket.getOutputStream()
                    .write(("GET /health HTTP/1.1\r\nHost: " + proxy.host() + "\r\nConnection: close\r\n\r\n")
                            .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            return socket.getInputStream().read() >= 0;
        } catch (java.io.IOException e) {
            return false;
        }
    }
}
