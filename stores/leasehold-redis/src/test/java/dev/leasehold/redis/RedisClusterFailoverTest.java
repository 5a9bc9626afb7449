package dev.leasehold.redis;

import dev.leasehold.Lease;
import dev.leasehold.LockKey;
import dev.leasehold.testkit.FailoverRun;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Redis Cluster changes under a contended run ({@link FailoverRun}): three masters with a replica
 * each, of the test's own on loopback ports (node timeout 1 s). In the middle of the run a master
 * holding a lock's slot is killed with {@code SIGKILL} and its replica takes over, and another
 * lock's slot is migrated to another master key by key, so clients meet {@code ASK}, {@code
 * TRYAGAIN} and then {@code MOVED} while they hold and take leases.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class RedisClusterFailoverTest {

    private static final Duration LEASE = Duration.ofSeconds(2);
    private static final RedisKeys KEYS = new RedisKeys("leasehold:");

    private LocalRedis redis;
    private final int[] ports = new int[6];
    private final Process[] processes = new Process[6];
    private final List<RedisClusterClient> clients = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        redis = new LocalRedis();
        LocalRedis.requireInstalled("redis-cli");
        List<String> create = new ArrayList<>(List.of("--cluster", "create"));
        for (int i = 0; i < ports.length; i++) {
            ports[i] = LocalRedis.freePortPair();
            processes[i] = node(i);
            create.add("127.0.0.1:" + ports[i]);
        }
        create.addAll(List.of("--cluster-replicas", "1", "--cluster-yes"));
        redis.cli(create.toArray(String[]::new));
        awaitClusterOk();
        awaitReplicasInSync();
    }

    @AfterEach
    void stop() {
        clients.forEach(RedisClusterClient::shutdown);
        if (redis != null) {
            redis.close();
        }
    }

    @Test
    void masterCrashAndSlotMigrationMidHoldNeverGrantTwiceNorRepeatAFence() throws Exception {
        try (FailoverRun run = run()) {
            // 1. A crash: the master of lock A's slot dies while leases are held; its replica takes over.
            run.awaitGrants(12);
            List<Lease> holding = run.awaitHolders();
            int victim = ownerOf(KEYS.lease(LockKey.of(run.namespace(), "A")));
            processes[victim].destroyForcibly();
            processes[victim].waitFor(10, TimeUnit.SECONDS);
            String leaseA = KEYS.lease(LockKey.of(run.namespace(), "A"));
            redis.await(
                    "a replica of node " + ports[victim] + " to take over its slots",
                    Duration.ofSeconds(90),
                    () -> ownerOf(leaseA) != victim);
            awaitClusterOk();
            processes[victim] = node(victim); // comes back as a replica of the promoted node
            run.awaitGrants(5);
            int heldThroughTheCrash =
                    (int) holding.stream().filter(lease -> !run.wasLost(lease)).count();

            // 2. A live migration of lock B's slot to another master, one key at a time.
            run.awaitGrants(5);
            migrate(KEYS.lease(LockKey.of(run.namespace(), "B")), KEYS.fence(LockKey.of(run.namespace(), "B")));
            run.awaitGrants(5);

            run.stop();
            run.report("redis cluster crash failover + slot migration", 2, heldThroughTheCrash);
            run.assertInvariants();
        }
    }

    private FailoverRun run() {
        List<RedisURI> seeds = new ArrayList<>();
        for (int port : ports) {
            seeds.add(RedisURI.builder()
                    .withHost("127.0.0.1")
                    .withPort(port)
                    .withTimeout(Duration.ofSeconds(1))
                    .build());
        }
        ClusterClientOptions options = ClusterClientOptions.builder()
                .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                        .enablePeriodicRefresh(Duration.ofSeconds(1))
                        .enableAllAdaptiveRefreshTriggers()
                        .build())
                .build();
        return new FailoverRun(
                () -> {
                    RedisClusterClient client = RedisClusterClient.create(seeds);
                    client.setOptions(options);
                    clients.add(client);
                    return RedisLeaseStore.builder(client).build();
                },
                LEASE,
                40);
    }

    private Process node(int i) throws Exception {
        return redis.server(
                ports[i],
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes-" + ports[i] + ".conf",
                "--cluster-node-timeout",
                "1000",
                // A replica takes over however long ago it last heard from its master: the test is
                // about what the lease store does when a failover happens, not whether Redis allows it.
                "--cluster-replica-validity-factor",
                "0");
    }

    /** The index of the running master that serves the key's slot. */
    private int ownerOf(String key) throws Exception {
        int slot = SlotHash.getSlot(key);
        for (int i = 0; i < ports.length; i++) {
            if (processes[i] != null && processes[i].isAlive() && isMaster(i) && servesSlot(i, slot)) {
                return i;
            }
        }
        throw new IllegalStateException("no master serves slot " + slot);
    }

    private boolean isMaster(int i) throws Exception {
        return cli(i, "info", "replication").contains("role:master");
    }

    private boolean servesSlot(int i, int slot) throws Exception {
        String myself = cli(i, "cluster", "myid").trim();
        for (String line : cli(i, "cluster", "nodes").split("\n")) {
            if (line.startsWith(myself)) {
                String[] fields = line.trim().split(" ");
                for (int f = 8; f < fields.length; f++) {
                    String range = fields[f];
                    if (range.startsWith("[")) {
                        continue;
                    }
                    String[] bounds = range.split("-");
                    int low = Integer.parseInt(bounds[0]);
                    int high = bounds.length > 1 ? Integer.parseInt(bounds[1]) : low;
                    if (slot >= low && slot <= high) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    /**
     * Moves the keys' slot (they share it) from its master to another: IMPORTING and MIGRATING,
     * then the keys one by one, each time until the source has answered clients ASK or TRYAGAIN (a
     * script that finds one key moved and the other not is answered TRYAGAIN, a missing key ASK),
     * then the slot's new owner announced to every master.
     */
    private void migrate(String firstKey, String secondKey) throws Exception {
        int slot = SlotHash.getSlot(firstKey);
        int source = ownerOf(firstKey);
        int target = -1;
        for (int i = 0; i < ports.length; i++) {
            if (i != source && processes[i].isAlive() && isMaster(i)) {
                target = i;
                break;
            }
        }
        String sourceId = cli(source, "cluster", "myid").trim();
        String targetId = cli(target, "cluster", "myid").trim();
        cli(target, "cluster", "setslot", String.valueOf(slot), "importing", sourceId);
        cli(source, "cluster", "setslot", String.valueOf(slot), "migrating", targetId);
        for (String key : List.of(secondKey, firstKey)) {
            long before = redirections(source);
            cli(source, "migrate", "127.0.0.1", String.valueOf(ports[target]), key, "0", "5000");
            // the clients meet the half-migrated slot: the source answers them ASK or TRYAGAIN
            int from = source;
            redis.await(
                    "clients to be answered ASK or TRYAGAIN by node " + ports[source] + " after moving " + key,
                    Duration.ofSeconds(30),
                    () -> redirections(from) > before);
        }
        for (int i = 0; i < ports.length; i++) {
            if (processes[i].isAlive() && isMaster(i)) {
                cli(i, "cluster", "setslot", String.valueOf(slot), "node", targetId);
            }
        }
    }

    /** The ASK and TRYAGAIN answers the node has given ({@code INFO errorstats}). */
    private long redirections(int node) throws Exception {
        long count = 0;
        for (String line : cli(node, "info", "errorstats").split("\n")) {
            if (line.startsWith("errorstat_ASK:") || line.startsWith("errorstat_TRYAGAIN:")) {
                count += Long.parseLong(
                        line.substring(line.indexOf("count=") + 6).trim());
            }
        }
        return count;
    }

    private String cli(int node, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("-p", String.valueOf(ports[node])));
        command.addAll(List.of(args));
        return redis.cli(command.toArray(String[]::new));
    }

    private void awaitClusterOk() {
        redis.await("every node to report cluster_state:ok", Duration.ofSeconds(90), () -> {
            for (int i = 0; i < ports.length; i++) {
                if (processes[i] != null
                        && processes[i].isAlive()
                        && !cli(i, "cluster", "info").contains("cluster_state:ok")) {
                    return false;
                }
            }
            return true;
        });
    }

    /** Every replica has finished its first sync, so it is eligible to take over its master. */
    private void awaitReplicasInSync() {
        redis.await("every replica to finish its first sync", Duration.ofSeconds(90), () -> {
            for (int i = 0; i < ports.length; i++) {
                String replication = cli(i, "info", "replication");
                if (replication.contains("role:slave") && !replication.contains("master_link_status:up")) {
                    return false;
                }
            }
            return true;
        });
    }
}
