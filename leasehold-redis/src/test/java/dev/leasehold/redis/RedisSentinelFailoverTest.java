package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.Lease;
import dev.leasehold.testkit.FailoverRun;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Sentinel failovers in the middle of a contended run ({@link FailoverRun}): a master, a replica and
 * three sentinels (quorum 2, master down after 1 s) of the test's own on loopback ports; the master
 * is killed with {@code SIGKILL} while leases are held, the sentinels promote the replica, the old
 * master comes back as its replica, and the same is done the other way round.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class RedisSentinelFailoverTest {

    private static final String MASTER_NAME = "leasehold-failover";
    private static final Duration LEASE = Duration.ofSeconds(2);
    private static final Duration ACK_TIMEOUT = Duration.ofMillis(300);

    private LocalRedis redis;
    private final List<RedisClient> clients = new ArrayList<>();
    private final int[] nodes = new int[2];
    private final Process[] processes = new Process[2];
    private final int[] sentinels = new int[3];

    @BeforeEach
    void start() throws Exception {
        redis = new LocalRedis();
        LocalRedis.requireInstalled("redis-cli");
        nodes[0] = LocalRedis.freePortPair();
        nodes[1] = LocalRedis.freePortPair();
        processes[0] = redis.server(nodes[0]);
        processes[1] = replicaOf(1, nodes[0]);
        for (int i = 0; i < sentinels.length; i++) {
            sentinels[i] = LocalRedis.freePortPair();
            redis.sentinel(sentinels[i], nodes[0], MASTER_NAME, 2, Duration.ofSeconds(1));
        }
        // Each sentinel knows the replica and the two other sentinels before the run starts.
        redis.await("every sentinel to know the replica and the other sentinels", Duration.ofSeconds(60), () -> {
            for (int sentinel : sentinels) {
                String info = redis.cli("-p", String.valueOf(sentinel), "info", "sentinel");
                if (!info.contains("slaves=1,sentinels=3")) {
                    return false;
                }
            }
            return true;
        });
    }

    @AfterEach
    void stop() {
        clients.forEach(RedisClient::shutdown);
        if (redis != null) {
            redis.close();
        }
    }

    @Test
    void sentinelFailoversMidHoldNeverGrantTwiceNorRepeatAFence() throws Exception {
        int failovers = 2;
        int heldThroughAFailover = 0;
        try (FailoverRun run = run()) {
            int master = 0;
            for (int i = 0; i < failovers; i++) {
                run.awaitGrants(12);
                List<Lease> holding = run.awaitHolders();
                processes[master].destroyForcibly(); // mid-hold
                processes[master].waitFor(10, TimeUnit.SECONDS);
                int promoted = 1 - master;
                awaitMasterIs(nodes[promoted]);
                processes[master] = replicaOf(master, nodes[promoted]);
                master = promoted;
                run.awaitGrants(5);
                heldThroughAFailover += (int)
                        holding.stream().filter(lease -> !run.wasLost(lease)).count();
            }
            run.stop();
            run.report("redis sentinel failover", failovers, heldThroughAFailover);
            run.assertInvariants();
        }
    }

    /**
     * The canary that shows why acknowledgement matters: the replica is cut off (paused, and its
     * link dropped by the master), grants go on on the master alone, then the master dies and the
     * sentinels promote the replica, which never saw those grants. Without {@code WAIT} the keys
     * are granted again while their holders still believe they hold them. The fences do not repeat
     * (they come from the promoted server's clock), but the older holders go on writing until their
     * next renewal: the leases (10 s) and holds (up to 200 steps of 20 to 60 ms) are long here, so
     * that the failover completes while they are held.
     */
    @Test
    void withoutReplicaAcknowledgementAFailoverAfterReplicaLagGrantsTwice() throws Exception {
        try (FailoverRun run = run(Duration.ofSeconds(10), 200)) {
            run.awaitGrants(12);
            signal(processes[1], "STOP");
            redis.cli("-p", String.valueOf(nodes[0]), "client", "kill", "type", "replica");
            run.awaitGrants(6); // granted on the master only
            run.awaitHolders();
            processes[0].destroyForcibly();
            processes[0].waitFor(10, TimeUnit.SECONDS);
            signal(processes[1], "CONT");
            awaitMasterIs(nodes[1]);
            processes[0] = replicaOf(0, nodes[1]);
            run.awaitGrants(10);
            run.stop();
            run.report("redis sentinel failover after replica lag, no WAIT", 1, 0);
            assertThat(run.doubleGrants())
                    .as("grants forgotten by the promoted replica show up as holders writing after a newer grant")
                    .isPositive();
        }
    }

    /**
     * The same lag and failover as {@link #withoutReplicaAcknowledgementAFailoverAfterReplicaLagGrantsTwice},
     * with {@code replicaAcknowledgement(1, 300 ms)}: while the replica is cut off, no grant is
     * acknowledged, so every acquire is refused (and its grant released) and renewals fail; the
     * promoted replica therefore knows every lease a holder was told it holds, with the expiry of
     * its last acknowledged renewal, and no key is granted twice.
     */
    @Test
    void withReplicaAcknowledgementAFailoverAfterReplicaLagNeverGrantsTwice() throws Exception {
        try (FailoverRun run = run(Duration.ofSeconds(10), 200, ACK_TIMEOUT)) {
            run.awaitGrants(12);
            signal(processes[1], "STOP");
            redis.cli("-p", String.valueOf(nodes[0]), "client", "kill", "type", "replica");
            int errorsBefore = run.storeErrors();
            int grantsBefore = run.grants();
            redis.await(
                    "acquires refused for want of an acknowledgement",
                    Duration.ofSeconds(60),
                    () -> run.storeErrors() >= errorsBefore + 6);
            int grantedDuringLag = run.grants() - grantsBefore;
            processes[0].destroyForcibly();
            processes[0].waitFor(10, TimeUnit.SECONDS);
            signal(processes[1], "CONT");
            awaitMasterIs(nodes[1]);
            processes[0] = replicaOf(0, nodes[1]);
            run.awaitGrants(10);
            run.stop();
            run.report("redis sentinel failover after replica lag, WAIT 1 " + ACK_TIMEOUT.toMillis(), 1, 0);
            System.out.printf(
                    "[redis sentinel failover after replica lag, WAIT] grantedWhileTheReplicaWasCutOff=%d%n",
                    grantedDuringLag);
            run.assertInvariants();
        }
    }

    private static void signal(Process process, String signal) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, String.valueOf(process.pid()))
                .redirectErrorStream(true)
                .start();
        kill.getInputStream().readAllBytes();
        assertThat(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0).isTrue();
    }

    private FailoverRun run() {
        return run(LEASE, 40);
    }

    private FailoverRun run(Duration lease, int maxSteps) {
        return run(lease, maxSteps, null);
    }

    /** A run whose stores wait for {@code acknowledgement} from a replica, unless it is null. */
    private FailoverRun run(Duration lease, int maxSteps, Duration acknowledgement) {
        RedisURI uri = RedisURI.Builder.sentinel("127.0.0.1", sentinels[0], MASTER_NAME)
                .withSentinel("127.0.0.1", sentinels[1])
                .withSentinel("127.0.0.1", sentinels[2])
                .withTimeout(Duration.ofSeconds(1))
                .build();
        return new FailoverRun(
                () -> {
                    RedisClient client = RedisClient.create(uri);
                    clients.add(client);
                    RedisLeaseStore.Builder builder = RedisLeaseStore.builder(client);
                    if (acknowledgement != null) {
                        builder.replicaAcknowledgement(1, acknowledgement);
                    }
                    return builder.build();
                },
                lease,
                maxSteps);
    }

    private Process replicaOf(int node, int masterPort) throws Exception {
        Process process = redis.server(nodes[node], "--replicaof", "127.0.0.1", String.valueOf(masterPort));
        redis.await(
                "node " + nodes[node] + " to sync as a replica of " + masterPort,
                Duration.ofSeconds(90),
                () -> redis.cli("-p", String.valueOf(nodes[node]), "info", "replication")
                        .contains("master_link_status:up"));
        return process;
    }

    private void awaitMasterIs(int port) {
        redis.await("the sentinels to promote " + port, Duration.ofSeconds(90), () -> redis.cli(
                        "-p", String.valueOf(sentinels[0]), "sentinel", "get-master-addr-by-name", MASTER_NAME)
                .contains(String.valueOf(port)));
    }
}
