package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leasehold.Lease;
import dev.leasehold.LockKey;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.Grant;
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
 * master comes back as its replica, and the same is done the other way round. Two more tests cut
 * the replica off before the master dies, with and without replica acknowledgement.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class RedisSentinelFailoverTest {

    private static final String MASTER_NAME = "leasehold-failover";
    private static final Duration LEASE = Duration.ofSeconds(2);
    private static final Duration ACK_TIMEOUT = Duration.ofMillis(250);

    private LocalRedis redis;
    private final List<RedisClient> clients = new ArrayList<>();
    private final List<RedisLeaseStore> stores = new ArrayList<>();
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
        stores.forEach(RedisLeaseStore::close);
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
     * The canary that shows why acknowledgement matters, on one key: the replica is cut off (paused,
     * and its link dropped by the master), a grant is made on the master alone, then the master dies
     * and the sentinels promote the replica, which never saw that grant. Without {@code WAIT} the key
     * is granted again while the first holder's 60 s lease is still running. The fence does not
     * repeat: it comes from the promoted server's clock.
     */
    @Test
    void withoutReplicaAcknowledgementAGrantMadeDuringReplicaLagIsGrantedAgainAfterAFailover() throws Exception {
        LockKey key = LockKey.of("borrow", "lag-canary");
        RedisLeaseStore first = store(null);
        cutOffReplica();
        long start = System.nanoTime();
        Grant a = granted(first.tryAcquire(key, "owner-a", Duration.ofSeconds(60)));
        failOverToReplica();
        RedisLeaseStore second = store(null);
        Grant b = granted(second.tryAcquire(key, "owner-b", Duration.ofSeconds(60)));
        Duration elapsed = Duration.ofNanos(System.nanoTime() - start);
        System.out.printf(
                "[redis sentinel failover after replica lag, no WAIT] second grant %d ms into the first holder's 60 s lease%n",
                elapsed.toMillis());
        assertThat(elapsed)
                .as("the key was granted a second time while its first holder's lease was still running")
                .isLessThan(Duration.ofSeconds(60));
        assertThat(b.fence()).as("the promoted replica's fence").isGreaterThan(a.fence());
    }

    /**
     * The same lag and failover as {@link
     * #withoutReplicaAcknowledgementAGrantMadeDuringReplicaLagIsGrantedAgainAfterAFailover}, with
     * {@code replicaAcknowledgement(1, 250 ms)}: while the replica is cut off a new grant is refused
     * (and undone) and a renewal fails, so a holder is only ever told of what the replica has. The
     * promoted replica therefore still knows the lease granted before the lag and refuses the key
     * until that lease's acknowledged expiry, and the refused grant, which no holder was told of,
     * is free.
     */
    @Test
    void withReplicaAcknowledgementAFailoverAfterReplicaLagNeverGrantsTwice() throws Exception {
        Duration lease = Duration.ofSeconds(20);
        LockKey held = LockKey.of("borrow", "lag-held");
        LockKey refused = LockKey.of("borrow", "lag-refused");
        RedisLeaseStore first = store(ACK_TIMEOUT);
        long start = System.nanoTime();
        Grant a = granted(first.tryAcquire(held, "owner-a", lease));
        cutOffReplica();
        assertThatThrownBy(() -> first.tryAcquire(refused, "owner-a", Duration.ofSeconds(60)))
                .isInstanceOf(ReplicaAcknowledgementException.class);
        assertThatThrownBy(() -> first.renew(held, "owner-a", Duration.ofSeconds(60)))
                .isInstanceOf(ReplicaAcknowledgementException.class);
        failOverToReplica();
        processes[0] = replicaOf(0, nodes[1]); // the acknowledging store needs a replica again
        redis.await(
                "the new replica to acknowledge the promoted master's writes", Duration.ofSeconds(30), () -> redis.cli(
                                "-p", String.valueOf(nodes[1]), "wait", "1", "1000")
                        .trim()
                        .equals("1"));
        // The second store only has to see what the promoted master knows: its replica may take
        // longer than 250 ms to acknowledge on a loaded machine (a refusal here would be undone and
        // prove nothing), so it waits for the acknowledgement up to 800 ms (the client gives up at 1 s)
        // and asks again after an acknowledgement that still came too late.
        RedisLeaseStore second = store(Duration.ofMillis(800));
        // An acknowledgement that still came too late undid its grant; asking again is then safe.
        assertThat(await().atMost(Duration.ofSeconds(30))
                        .ignoreExceptionsInstanceOf(ReplicaAcknowledgementException.class)
                        .until(() -> second.tryAcquire(refused, "owner-b", Duration.ofSeconds(60)), r -> true))
                .as("the grant refused during the lag")
                .isInstanceOf(AcquireResult.Granted.class);
        Duration untilAsked = Duration.ofNanos(System.nanoTime() - start);
        AcquireResult rightAfter = second.tryAcquire(held, "owner-b", lease);
        if (untilAsked.plusSeconds(1).compareTo(lease) < 0) {
            // a failover slower than the lease (a loaded machine) lets the lease end first; the
            // grant that follows is then checked against the lease below
            assertThat(rightAfter)
                    .as(
                            "the lease acknowledged before the lag, right after the failover (%d ms in)",
                            untilAsked.toMillis())
                    .isInstanceOf(AcquireResult.Busy.class);
        }
        Grant b = granted(await().atMost(Duration.ofSeconds(60))
                .pollInterval(Duration.ofMillis(100))
                .until(() -> second.tryAcquire(held, "owner-b", lease), AcquireResult.Granted.class::isInstance));
        Duration elapsed = Duration.ofNanos(System.nanoTime() - start);
        System.out.printf(
                "[redis sentinel failover after replica lag, WAIT 1 %d ms] second grant %d ms after the first acquire began (lease %d ms)%n",
                ACK_TIMEOUT.toMillis(), elapsed.toMillis(), lease.toMillis());
        assertThat(elapsed)
                .as("the second grant came only once the first holder's acknowledged lease had run out")
                .isGreaterThanOrEqualTo(lease);
        assertThat(b.fence()).isGreaterThan(a.fence());
    }

    /** Pauses the replica and has the master drop its link, so what follows is on the master alone. */
    private void cutOffReplica() throws Exception {
        signal(processes[1], "STOP");
        redis.cli("-p", String.valueOf(nodes[0]), "client", "kill", "type", "replica");
    }

    /**
     * Kills the master, resumes the replica and waits for the sentinels to promote it. The replica
     * is paused for well under the sentinels' down-after time, so none of them holds it for down
     * once promoted.
     */
    private void failOverToReplica() throws Exception {
        processes[0].destroyForcibly();
        processes[0].waitFor(10, TimeUnit.SECONDS);
        signal(processes[1], "CONT");
        awaitMasterIs(nodes[1]);
        redis.await("the promoted node to act as master", Duration.ofSeconds(30), () -> redis.cli(
                        "-p", String.valueOf(nodes[1]), "info", "replication")
                .contains("role:master"));
    }

    private RedisLeaseStore store(Duration acknowledgement) {
        RedisClient client = RedisClient.create(sentinelUri());
        clients.add(client);
        RedisLeaseStore.Builder builder = RedisLeaseStore.builder(client);
        if (acknowledgement != null) {
            builder.replicaAcknowledgement(1, acknowledgement);
        }
        RedisLeaseStore store = builder.build();
        stores.add(store);
        return store;
    }

    private static Grant granted(AcquireResult result) {
        assertThat(result).isInstanceOf(AcquireResult.Granted.class);
        return ((AcquireResult.Granted) result).grant();
    }

    private static void signal(Process process, String signal) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, String.valueOf(process.pid()))
                .redirectErrorStream(true)
                .start();
        kill.getInputStream().readAllBytes();
        assertThat(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0).isTrue();
    }

    private FailoverRun run() {
        return new FailoverRun(() -> store(null), LEASE, 40);
    }

    private RedisURI sentinelUri() {
        return RedisURI.Builder.sentinel("127.0.0.1", sentinels[0], MASTER_NAME)
                .withSentinel("127.0.0.1", sentinels[1])
                .withSentinel("127.0.0.1", sentinels[2])
                .withTimeout(Duration.ofSeconds(1))
                .build();
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
