package dev.leasehold.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.Renewal;
import dev.leasehold.testkit.EtcdCluster;
import dev.leasehold.testkit.TcpProxy;
import dev.leasehold.testkit.TestServices;
import io.etcd.jetcd.Client;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A batch renewal on etcd reads its keys back in one transaction, not one read per lease, and
 * judges each lease as a single renewal does. Counted at the server: etcd's own request counters
 * ({@code grpc_server_handled_total} on its {@code /metrics}), on a node of this test's own.
 */
class EtcdBatchRenewalTest {

    private static EtcdCluster etcd;
    private static Client client;
    private static Client other;

    @BeforeAll
    static void start() throws Exception {
        etcd = TestServices.etcdCluster(1);
        client = Client.builder()
                .endpoints(etcd.endpoints().toArray(String[]::new))
                .build();
        other = Client.builder()
                .endpoints(etcd.endpoints().toArray(String[]::new))
                .build();
    }

    @AfterAll
    static void stop() {
        if (client != null) {
            client.close();
            other.close();
        }
        if (etcd != null) {
            etcd.close();
        }
    }

    @Test
    void aBatchOfFiftyIsOneReadAtTheServerAndEachLeaseLearnsItsOwnAnswer() throws Exception {
        EtcdLeaseStore store = EtcdLeaseStore.builder(client).build();
        EtcdLeaseStore elsewhere = EtcdLeaseStore.builder(other).build();
        Duration lease = Duration.ofSeconds(5);
        List<Renewal> batch = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            LockKey key = LockKey.of("etcd-batch", "k" + i);
            assertThat(store.tryAcquire(key, "owner-" + i, lease)).isInstanceOf(AcquireResult.Granted.class);
            batch.add(new Renewal(key, "owner-" + i, lease));
        }
        // lease 7 was taken from its owner and granted to another
        assertThat(store.forceRelease(batch.get(7).key())).isTrue();
        assertThat(elsewhere.tryAcquire(batch.get(7).key(), "thief", lease)).isInstanceOf(AcquireResult.Granted.class);
        // a renewal by an owner that holds nothing
        batch.add(new Renewal(batch.get(3).key(), "stranger", lease));

        long readsBefore = handled("Range") + handled("Txn");
        List<Optional<Grant>> answers = store.renewAll(batch);
        long reads = handled("Range") + handled("Txn") - readsBefore;

        assertThat(answers).hasSize(51);
        for (int i = 0; i < 50; i++) {
            if (i != 7) {
                assertThat(answers.get(i)).as("lease %d", i).isPresent();
            }
        }
        assertThat(answers.get(7)).as("a lease taken over").isEmpty();
        assertThat(answers.get(50)).as("an owner that holds nothing").isEmpty();
        // one transaction for the 49 bound leases and lease 7, plus the stranger's own read
        assertThat(reads).as("reads and transactions at the server").isLessThanOrEqualTo(3);
        assertThat(elsewhere.renew(batch.get(7).key(), "thief", lease))
                .as("the new holder keeps the key")
                .isPresent();
        store.close();
        elsewhere.close();
    }

    @Test
    void aBatchSentToAServerThatStopsAnsweringFailsAfterOneTimeoutNotOnePerLease() throws Exception {
        URI node = URI.create(etcd.endpoint(0));
        Duration timeout = Duration.ofSeconds(1);
        try (TcpProxy link = TcpProxy.to(node.getHost(), node.getPort());
                Client through = Client.builder()
                        .endpoints("http://" + link.host() + ":" + link.port())
                        .build()) {
            EtcdLeaseStore store =
                    EtcdLeaseStore.builder(through).timeout(timeout).build();
            Duration lease = Duration.ofSeconds(10);
            List<Renewal> batch = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                LockKey key = LockKey.of("etcd-hung", "k" + i);
                assertThat(store.tryAcquire(key, "owner-" + i, lease)).isInstanceOf(AcquireResult.Granted.class);
                batch.add(new Renewal(key, "owner-" + i, lease));
            }
            link.blackhole(TcpProxy.Direction.BOTH);
            long start = System.nanoTime();
            assertThatThrownBy(() -> store.renewAll(batch)).isInstanceOf(LeaseStoreException.class);
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            // one wait per lease would take 20 s; the batch shares one deadline
            assertThat(took).as("time to fail").isLessThan(timeout.multipliedBy(5));
            link.heal();
            store.close();
        }
    }

    @Test
    void aKeyAskedTwiceWithTwoLengthsIsAnsweredAsTwoRenewalsInARowWould() {
        EtcdLeaseStore store = EtcdLeaseStore.builder(client).build();
        LockKey key = LockKey.of("etcd-twice", "k");
        assertThat(store.tryAcquire(key, "owner", Duration.ofSeconds(30))).isInstanceOf(AcquireResult.Granted.class);
        // the first moves the key to a 5 s lease; the second must be judged after that, not before
        List<Optional<Grant>> answers = store.renewAll(List.of(
                new Renewal(key, "owner", Duration.ofSeconds(5)), new Renewal(key, "owner", Duration.ofSeconds(30))));
        assertThat(answers).allSatisfy(answer -> assertThat(answer).isPresent());
        Duration truth = store.inspect(key).orElseThrow().remaining();
        assertThat(answers.get(1).orElseThrow().remaining())
                .as("the last answer against etcd's remaining time " + truth)
                .isLessThanOrEqualTo(truth.plusSeconds(1));
        store.close();
    }

    /** etcd's count of answered calls of one KV method, summed over its result codes. */
    private static long handled(String method) throws Exception {
        return EtcdMetrics.sum(etcd.endpoint(0), "grpc_server_handled_total", method);
    }
}
