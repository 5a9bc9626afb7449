package dev.leasehold.etcd;

import dev.leasehold.LockKey;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.testkit.EtcdCluster;
import dev.leasehold.testkit.LeaseStoreConformance;
import dev.leasehold.testkit.RawLease;
import dev.leasehold.testkit.TestServices;
import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The etcd store on a three-member etcd cluster the test starts on loopback ports (skipped, naming
 * the binary, where etcd is not installed). The client spreads calls over all three members, so
 * grants, renewals and watches go through followers as well as the leader.
 */
class EtcdClusterConformanceTest extends LeaseStoreConformance {

    private static EtcdCluster cluster;
    private static Client client;
    private static Client probe;

    @BeforeAll
    static void startCluster() throws Exception {
        cluster = TestServices.etcdCluster(3);
        client = Client.builder()
                .endpoints(cluster.endpoints().toArray(String[]::new))
                .build();
        // The probe reads through one member only: reads are linearizable, so any member will do.
        probe = Client.builder().endpoints(cluster.endpoint(2)).build();
    }

    @AfterAll
    static void stopCluster() {
        if (client != null) {
            client.close();
            probe.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    @Override
    protected LeaseStore createStore() {
        return EtcdLeaseStore.builder(client).build();
    }

    @Override
    protected Optional<RawLease> rawLease(LockKey key) {
        return EtcdRaw.read(probe, key);
    }

    /** The cluster runs etcd's default timings, whose shortest lease is 2 s. */
    @Override
    protected Duration shortLease() {
        return Duration.ofSeconds(2);
    }
}
