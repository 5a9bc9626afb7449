package dev.leasehold.faults;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockBusyException;
import dev.leasehold.LockKey;
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
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * 12. The etcd lease store on a three-member cluster this scenario starts. First a client (A) that
 * reaches one follower through a TCP proxy of the test kit is cut off, or black-holed, while it
 * holds; then the leader is killed ({@code SIGKILL}) while a directly connected client holds. A
 * holder cut off must be told {@code onLost} by its lease's end; each next holder's fence (the
 * key's revision) must be larger; an old holder's fenced write after the new holder's must be
 * refused; the history checker sees no overlapping grants (etcd keeps what it acknowledged).
 * Canaries: a probe through the proxy answers before each cut and not during it; the cut-off
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

    private static final String TABLE = "fault_etcd";

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
        String prefix = "faults-" + UUID.randomUUID().toString().substring(0, 8) + "/";
        try (PrivateDatabase db = PrivateDatabase.create(Database.POSTGRESQL);
                EtcdCluster cluster = EtcdCluster.start(3, Duration.ofMillis(100), Duration.ofSeconds(1))) {
            db.execute(
                    "CREATE TABLE " + TABLE + " (effect VARCHAR(64) NOT NULL PRIMARY KEY,"
                            + " lock_key VARCHAR(100) NOT NULL, fence BIGINT NOT NULL)",
                    "CREATE TABLE fault_etcd_canary (lock_key VARCHAR(100) NOT NULL PRIMARY KEY,"
                            + " process VARCHAR(8) NOT NULL)");
            int leader = cluster.awaitLeader(Duration.ofSeconds(30));
            int follower = (leader + 1) % cluster.size();
            URI target = URI.create(cluster.endpoint(follower));
            try (TcpProxy proxy = TcpProxy.to(target.getHost(), target.getPort());
                    Library.Store far =
                            Library.etcdStore(List.of("http://" + proxy.host() + ":" + proxy.port()), prefix);
                    Library.Store near = Library.etcdStore(cluster.endpoints(), prefix);
                    LockService a = Library.locks(far.store());
                    LockService b = Library.locks(near.store())) {
                Run run = new Run(db, tally, history, a, b);
                int rounds = profile.times(2);
                Duration longestReconnect = Duration.ZERO;
                for (int round = 0; round < rounds; round++) {
                    Duration back = awaitAnswers(far);
                    longestReconnect = back.compareTo(longestReconnect) > 0 ? back : longestReconnect;
                    run.holderCutOff(proxy, round, round % 2 == 0);
                }
                tally.note("A's etcd client answered again at most " + longestReconnect.toMillis()
                        + " ms after a heal (gRPC reconnects with a back-off)");
            }
            try (Library.Store first = Library.etcdStore(cluster.endpoints(), prefix);
                    Library.Store second = Library.etcdStore(cluster.endpoints(), prefix);
                    LockService one = Library.locks(first.store());
                    LockService two = Library.locks(second.store())) {
                Run run = new Run(db, tally, history, one, two);
                int rounds = profile.times(1);
                for (int round = 0; round < rounds; round++) {
                    run.leaderKilled(cluster, round);
                }
            }
            HistoryChecker.Verdict verdict = new HistoryChecker(LOST_SLACK, true)
                    .check(history, HistoryChecker.effectCounts(db.dataSource(), TABLE));
            tally.checked(verdict);
            tally.note("history: " + verdict.summary());
        }
        return tally.outcome();
    }

    /** The clients of one part and the cases they run. */
    private record Run(PrivateDatabase db, Tally tally, History history, LockService a, LockService b) {

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
            history.fault("A's link to etcd " + what + " while it holds " + k);
            long faultAt = System.nanoTime();
            if (blackhole) {
                proxy.blackhole(Direction.BOTH);
            } else {
                proxy.cut();
            }
            try {
                if (!probe(proxy)) {
                    tally.canary("the probe through the proxy got no answer while the link was " + what);
                }
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
                proxy.heal();
                expect("A", held, "r" + round + "-A1", false);
                unfenced(k, "A");
                if ("A".equals(canaryOwner(k))) {
                    tally.canary("A's unfenced write after the heal landed over B's on " + k);
                }
                release("B", next);
            } finally {
                proxy.heal();
                closeQuietly(held);
            }
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
            long invoked = History.now();
            try {
                Lease lease = service.acquire(
                        key,
                        LeaseOptions.builder()
                                .leaseFor(LEASE)
                                .waitFor(Duration.ofSeconds(15))
                                .renewal(true)
                                .build());
                history.add(
                        process,
                        Kind.ACQUIRE,
                        key.render(),
                        lease.ownerToken(),
                        invoked,
                        lease.fence(),
                        Result.OK,
                        null,
                        null);
                return lease;
            } catch (LockBusyException e) {
                history.add(process, Kind.ACQUIRE, key.render(), null, invoked, 0, Result.REFUSED, null, null);
                throw new IllegalStateException(process + " could not take " + key + " within 15 s", e);
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
