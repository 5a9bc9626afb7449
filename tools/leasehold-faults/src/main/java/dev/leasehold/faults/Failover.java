package dev.leasehold.faults;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockBusyException;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.jdbc.Database;
import io.lettuce.core.KillArgs;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.sentinel.api.StatefulRedisSentinelConnection;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;

/**
 * 3. A Sentinel failover to a replica that missed the last writes: a master, a replica and three
 * sentinels (quorum 2, master down after 1 s) of the suite's own. The replica is paused and its
 * link dropped; a holder takes a key on the master alone; the master is killed; the sentinels
 * promote the replica, which never saw that grant. A second holder then takes the key.
 *
 * <p>Protected: the grants of the store built for replicated Redis ({@link
 * Library#replicatedRedisStore}); the guarded table must never accept a repeated fence nor refuse
 * the new holder, and the first holder, whose lease vanished with the master, must be told
 * ({@code onLost}) within its lease of the last grant or renewal the store confirmed. Canary: the
 * same on a plain, unacknowledged store: the second holder is granted the key while the first
 * still holds it by the last grant or renewal the store confirmed (a double grant).
 */
final class Failover implements Scenario {

    static final String TITLE = "3 failover";
    private static final String MASTER_NAME = "faults-failover";
    private static final Duration LEASE = Duration.ofSeconds(6);
    private static final Duration CANARY_LEASE = Duration.ofSeconds(20);
    private static final Duration LOST_SLACK = Duration.ofMillis(100);

    @Override
    public String title() {
        return TITLE;
    }

    @Override
    public List<String> backends() {
        return List.of("redis sentinel");
    }

    @Override
    public Outcome run(String backend, Profile profile) throws Exception {
        if (!RedisProcess.installed()) {
            return Outcome.absent(TITLE, backend, Outcome.Status.TOOL_ABSENT, "redis-server is not installed");
        }
        Tally tally = new Tally(TITLE, backend);
        History history = new History();
        Path dir = RedisProcess.newDir("failover");
        List<AutoCloseable> resources = new ArrayList<>();
        try (PrivateDatabase db = PrivateDatabase.create(Database.POSTGRESQL)) {
            RedisProcess[] nodes = new RedisProcess[2];
            nodes[0] = RedisProcess.server(dir);
            resources.add(nodes[0]);
            nodes[1] = RedisProcess.server(dir, "--replicaof", "127.0.0.1", String.valueOf(nodes[0].port()));
            resources.add(nodes[1]);
            List<RedisProcess> sentinels = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                RedisProcess sentinel =
                        RedisProcess.sentinel(dir, nodes[0].port(), MASTER_NAME, 2, Duration.ofSeconds(1));
                resources.add(sentinel);
                sentinels.add(sentinel);
            }
            Topology topology = new Topology(nodes, sentinels);
            resources.add(topology);
            topology.awaitReplicaInSync(1);
            topology.awaitSentinelsKnowEachOther();

            RedisURI uri = RedisURI.Builder.sentinel(
                            "127.0.0.1", sentinels.get(0).port(), MASTER_NAME)
                    .withSentinel("127.0.0.1", sentinels.get(1).port())
                    .withSentinel("127.0.0.1", sentinels.get(2).port())
                    .withTimeout(Duration.ofSeconds(1))
                    .build();
            Confirmations confirmations = new Confirmations();
            GuardedTable table = new GuardedTable(db, tally, history);
            Workload.createTable(db);
            Pair canary = new Pair(uri, false, confirmations, resources);
            Pair guarded = new Pair(uri, true, confirmations, resources);
            int master = 0;
            int rounds = 0;
            Workload load = new Workload("W", guarded.second, db.dataSource(), history, "failover", LEASE, profile);
            resources.add(load);
            for (; profile.more(rounds, 1, history.size()); rounds++) {
                int round = rounds;
                LockKey canaryKey = LockKey.of("failover", "canary" + round);
                LockKey guardedKey = LockKey.of("failover", "guarded" + round);
                // Both keys known to both nodes before the fault: a counter the replica has.
                for (LockKey key : List.of(canaryKey, guardedKey)) {
                    Pair pair = key == canaryKey ? canary : guarded;
                    try (Lease warm = pair.second.acquire(key, options())) {
                        if (pair == guarded) {
                            table.write(warm, "before the failover");
                        }
                    }
                }
                // A guarded holder whose grant the replica has; it holds through the failover.
                Lease guardedEarly = guarded.first.acquire(LockKey.of("failover", "early" + round), options());
                table.write(guardedEarly, "before the failover");
                topology.awaitReplicated(master);
                int replica = 1 - master;
                nodes[replica].pause();
                topology.dropReplicaLinks(master);
                // A long lease, so the failover surely completes while the canary's first holder holds.
                Lease canaryFirst = canary.first.acquire(
                        canaryKey, options().toBuilder().leaseFor(CANARY_LEASE).build());
                Lease guardedFirst = tryAcquire(guarded.first, guardedKey, tally);
                if (guardedFirst != null) {
                    table.write(guardedFirst, "on the master alone");
                }
                nodes[master].kill();
                history.fault("kill -9 the master, round " + round);
                nodes[replica].resume();
                long killed = System.nanoTime();
                topology.awaitMasterIs(nodes[replica].port());
                long promoted = System.nanoTime();
                Lease canarySecond = awaitGrant(canary.second, canaryKey);
                Long confirmed = confirmations.lastConfirmed(canaryFirst);
                boolean withinConfirmedLease =
                        confirmed != null && System.nanoTime() - confirmed < CANARY_LEASE.toNanos();
                if (canaryFirst.isHeld() || withinConfirmedLease) {
                    tally.canary("after the failover " + canaryKey + " was granted (fence " + canarySecond.fence()
                            + ") while its first holder (fence " + canaryFirst.fence()
                            + ") still held it by its last confirmed grant or renewal");
                }
                // The old master comes back as a replica of the new one, so acknowledged grants resume.
                nodes[master].start(List.of("--replicaof", "127.0.0.1", String.valueOf(nodes[replica].port())));
                topology.awaitReplicaInSync(master);
                Lease guardedSecond = awaitGrant(guarded.second, guardedKey);
                tally.stallSince(killed);
                table.write(guardedSecond, "after the failover");
                if (guardedFirst != null) {
                    checkToldInTime(guardedFirst, confirmations, tally); // its grant vanished with the master
                }
                checkKeptOrToldInTime(guardedEarly, promoted, confirmations, tally);
                tally.operations(5);
                closeQuietly(canaryFirst, canarySecond, guardedFirst, guardedSecond, guardedEarly);
                master = replica;
            }
            load.close();
            tally.note("rounds: " + rounds + ", lease " + LEASE.toMillis() + " ms");
            // Grants on the master alone are lost by design: fences and effects are checked, not overlaps.
            Map<String, Long> effects = new HashMap<>(table.effectCounts());
            effects.putAll(Workload.effectCounts(db.dataSource()));
            tally.check(new HistoryChecker(Duration.ZERO, false), history, effects);
        } finally {
            for (int i = resources.size() - 1; i >= 0; i--) {
                try {
                    resources.get(i).close();
                } catch (Exception e) {
                    System.err.println("[faults] closing failed: " + e);
                }
            }
            StoreRestart.deleteQuietly(dir);
        }
        return tally.outcome();
    }

    private static LeaseOptions options() {
        return LeaseOptions.builder()
                .leaseFor(LEASE)
                .waitFor(Duration.ofSeconds(10))
                .build();
    }

    /** A grant on the master alone, or null if the protected store refuses it unacknowledged. */
    private static Lease tryAcquire(LockService locks, LockKey key, Tally tally) throws InterruptedException {
        try {
            return locks.acquire(key, options().withWait(Duration.ofSeconds(2)));
        } catch (LeaseStoreException | LockBusyException e) {
            tally.note("a grant the replica did not acknowledge was refused: " + e.getMessage());
            return null;
        }
    }

    /** The first grant after the failover, retrying while the client finds the new master. */
    private static Lease awaitGrant(LockService locks, LockKey key) {
        return Awaitility.await("a grant of " + key + " after the failover")
                .atMost(Duration.ofSeconds(60))
                .pollInterval(Duration.ofMillis(50))
                .ignoreException(LeaseStoreException.class)
                .until(() -> locks.acquire(key, options()), lease -> lease != null);
    }

    private static void checkToldInTime(Lease first, Confirmations confirmations, Tally tally)
            throws InterruptedException {
        CountDownLatch lost = new CountDownLatch(1);
        first.onLost(e -> lost.countDown());
        if (!lost.await(LEASE.plusSeconds(2).toMillis(), TimeUnit.MILLISECONDS)) {
            tally.violation("the first holder of " + first.key() + " was never told its lease vanished");
            return;
        }
        Duration late = confirmations.lostAfterConfirmation(first);
        if (late == null) {
            tally.violation("the loss of " + first.key() + " was not reported as an event");
        } else if (late.compareTo(LEASE.plus(LOST_SLACK)) > 0) {
            tally.violation("the first holder of " + first.key() + " was told " + late.toMillis()
                    + " ms after its last confirmed grant or renewal, beyond its lease of " + LEASE.toMillis()
                    + " ms (+" + LOST_SLACK.toMillis() + " ms)");
        } else {
            tally.note("lost signal " + late.toMillis() + " ms after the last confirmation (lease " + LEASE.toMillis()
                    + " ms)");
        }
    }

    /**
     * A holder whose grant the promoted replica had: either the new master confirms a renewal, or
     * the holder is told of the loss within its lease of the last confirmation.
     */
    private static void checkKeptOrToldInTime(Lease early, long promoted, Confirmations confirmations, Tally tally)
            throws InterruptedException {
        CountDownLatch lost = new CountDownLatch(1);
        early.onLost(e -> lost.countDown());
        long deadline = System.nanoTime() + LEASE.plusSeconds(2).toNanos();
        while (System.nanoTime() < deadline) {
            Long confirmed = confirmations.lastConfirmed(early);
            if (confirmed != null && confirmed > promoted && early.isHeld()) {
                tally.note(early.key() + " was renewed by the new master and kept");
                return;
            }
            if (lost.await(50, TimeUnit.MILLISECONDS)) {
                checkToldInTime(early, confirmations, tally);
                return;
            }
        }
        tally.violation(early.key() + " was neither renewed by the new master nor told lost within its lease");
    }

    private static void closeQuietly(Lease... leases) {
        for (Lease lease : leases) {
            if (lease == null) {
                continue;
            }
            try {
                lease.close();
            } catch (RuntimeException e) {
                // lost with the master, or already released
            }
        }
    }

    /** Two lock services of one kind, each on a client of its own, as two processes would have. */
    private static final class Pair {
        final LockService first;
        final LockService second;

        Pair(RedisURI uri, boolean guarded, Confirmations confirmations, List<AutoCloseable> resources) {
            Library.Store a =
                    guarded ? Library.replicatedRedisStore(uri, "faults:") : Library.redisStore(uri, "faults-canary:");
            Library.Store b =
                    guarded ? Library.replicatedRedisStore(uri, "faults:") : Library.redisStore(uri, "faults-canary:");
            resources.add(a);
            resources.add(b);
            first = Library.locks(a.store(), confirmations::record);
            second = Library.locks(b.store(), confirmations::record);
            resources.add(first);
            resources.add(second);
        }
    }

    /** The servers and sentinels, queried through Lettuce. */
    private static final class Topology implements AutoCloseable {
        private final RedisProcess[] nodes;
        private final List<RedisProcess> sentinels;
        private final RedisClient client = RedisClient.create();

        Topology(RedisProcess[] nodes, List<RedisProcess> sentinels) {
            this.nodes = nodes;
            this.sentinels = sentinels;
        }

        private <T> T onNode(int node, Function<StatefulRedisConnection<String, String>, T> call) {
            try (StatefulRedisConnection<String, String> c =
                    client.connect(RedisURI.create("redis://127.0.0.1:" + nodes[node].port()))) {
                return call.apply(c);
            }
        }

        private String onSentinel(
                int sentinel, Function<StatefulRedisSentinelConnection<String, String>, String> call) {
            try (StatefulRedisSentinelConnection<String, String> c = client.connectSentinel(RedisURI.create(
                    "redis://127.0.0.1:" + sentinels.get(sentinel).port()))) {
                return call.apply(c);
            }
        }

        void awaitReplicaInSync(int replica) {
            await(
                    "node " + nodes[replica].port() + " to sync as a replica",
                    () -> onNode(replica, c -> c.sync().info("replication")).contains("master_link_status:up"));
        }

        void awaitSentinelsKnowEachOther() {
            await("every sentinel to know the replica and the other sentinels", () -> {
                for (int s = 0; s < sentinels.size(); s++) {
                    if (!onSentinel(s, c -> c.sync().info("sentinel")).contains("slaves=1,sentinels=3")) {
                        return false;
                    }
                }
                return true;
            });
        }

        /** Waits until the replica acknowledged everything written to the master so far. */
        void awaitReplicated(int master) {
            await(
                    "the replica to acknowledge the master's writes",
                    () -> onNode(master, c -> c.sync().waitForReplication(1, 1000)) >= 1);
        }

        void dropReplicaLinks(int master) {
            onNode(master, c -> c.sync().clientKill(KillArgs.Builder.typeSlave()));
        }

        void awaitMasterIs(int port) {
            await("the sentinels to promote " + port, () -> {
                var address = onSentinelAddress();
                return address != null && address.getPort() == port;
            });
        }

        /** The master's address as the first sentinel reports it. */
        private InetSocketAddress onSentinelAddress() {
            try (StatefulRedisSentinelConnection<String, String> c = client.connectSentinel(
                    RedisURI.create("redis://127.0.0.1:" + sentinels.get(0).port()))) {
                return (InetSocketAddress) c.sync().getMasterAddrByName(MASTER_NAME);
            }
        }

        private void await(String what, Callable<Boolean> condition) {
            try {
                Awaitility.await(what)
                        .atMost(Duration.ofSeconds(90))
                        .pollInterval(Duration.ofMillis(100))
                        .ignoreExceptions()
                        .until(condition);
            } catch (ConditionTimeoutException e) {
                throw new IllegalStateException(what + " did not happen within 90 s\n" + nodes[0].logs(), e);
            }
        }

        @Override
        public void close() {
            client.shutdown();
        }
    }
}
