package dev.leasehold.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leasehold.Lease;
import dev.leasehold.LockKey;
import dev.leasehold.testkit.EtcdCluster;
import dev.leasehold.testkit.FailoverRun;
import dev.leasehold.testkit.TestServices;
import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Kills etcd members while leases are held, on a three-member cluster, with the contended run of
 * {@link FailoverRun}: three lock services, each with its own etcd client as three processes would
 * have, taking three keys in turn.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class EtcdLeaderFailoverTest {

    private static final Duration LEASE = Duration.ofSeconds(2);
    private static final int FAILOVERS = 3;
    private static final int GRANTS_BETWEEN_FAILOVERS = 12;

    private final List<Client> clients = new CopyOnWriteArrayList<>();

    @AfterEach
    void closeClients() {
        clients.forEach(Client::close);
    }

    @Test
    void killingTheLeaderMidHoldNeverGrantsTwiceNorRepeatsAFence() throws Exception {
        try (EtcdCluster cluster = TestServices.etcdCluster(3);
                FailoverRun run = run(cluster, 40)) {
            int heldThroughAKill = 0;
            for (int i = 0; i < FAILOVERS; i++) {
                run.awaitGrants(GRANTS_BETWEEN_FAILOVERS);
                List<Lease> holding = run.awaitHolders();
                int leader = cluster.awaitLeader(Duration.ofSeconds(20));
                cluster.kill(leader); // mid-hold: the leases in `holding` are held right now
                assertThat(cluster.awaitLeader(Duration.ofSeconds(30))).isNotEqualTo(leader);
                cluster.restart(leader);
                run.awaitGrants(5);
                heldThroughAKill += (int)
                        holding.stream().filter(lease -> !run.wasLost(lease)).count();
            }
            run.stop();
            run.report("etcd leader killed", FAILOVERS, heldThroughAKill);
            run.assertInvariants();
            assertThat(run.grants()).isGreaterThan(FAILOVERS * GRANTS_BETWEEN_FAILOVERS);
        }
    }

    @Test
    void losingQuorumMidHoldTellsEveryHolderWithinItsLeaseAndGrantsResumeAfter() throws Exception {
        try (EtcdCluster cluster = TestServices.etcdCluster(3);
                FailoverRun run = run(cluster, 80)) {
            run.awaitGrants(6);
            // A holder that keeps its lease until it is told otherwise, besides the workers.
            Lease pinned = run.services().get(0).acquire(LockKey.of(run.namespace(), "pinned"), run.options());
            List<Lease> holding = new ArrayList<>(run.awaitHolders());
            holding.add(pinned);
            int leader = cluster.awaitLeader(Duration.ofSeconds(20));
            int follower = (leader + 1) % cluster.size();
            cluster.kill(leader);
            cluster.kill(follower); // no quorum: nothing can be granted or renewed
            // Every lease held at the outage ends: its holder is told it is lost, unless it finished
            // its work and released first (that release fails, and etcd expires the key later).
            await().atMost(LEASE.plus(FailoverRun.SIGNAL_SLACK).multipliedBy(2))
                    .until(() -> holding.stream().allMatch(lease -> run.wasLost(lease) || run.wasReleased(lease)));
            int lostInOutage = (int) holding.stream().filter(run::wasLost).count();
            cluster.restart(leader);
            cluster.restart(follower);
            cluster.awaitLeader(Duration.ofSeconds(30));
            run.awaitGrants(6);
            run.stop();
            run.report("etcd quorum lost", 1, 0);
            run.assertInvariants();
            assertThat(lostInOutage).as("holders told their lease was lost").isPositive();
            assertThat(pinned.isHeld()).isFalse();
            assertThat(run.wasLost(pinned)).isTrue();
            pinned.close();
        }
    }

    private FailoverRun run(EtcdCluster cluster, int maxSteps) {
        return new FailoverRun(
                () -> {
                    Client client = Client.builder()
                            .endpoints(cluster.endpoints().toArray(String[]::new))
                            .build();
                    clients.add(client);
                    return EtcdLeaseStore.builder(client)
                            .timeout(Duration.ofSeconds(1))
                            .build();
                },
                LEASE,
                maxSteps);
    }
}
