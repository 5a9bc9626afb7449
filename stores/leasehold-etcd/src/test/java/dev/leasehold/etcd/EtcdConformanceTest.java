package dev.leasehold.etcd;

import dev.leasehold.LockKey;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.testkit.LeaseStoreConformance;
import dev.leasehold.testkit.RawLease;
import dev.leasehold.testkit.TestServices;
import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The etcd store on one etcd node: found at LEASEHOLD_ETCD_URL or 127.0.0.1:2379, or started from
 * the etcd binary (skipped, naming it, where it is not installed).
 */
class EtcdConformanceTest extends LeaseStoreConformance {

    private static Client client;
    private static Client probe;

    @BeforeAll
    static void connect() {
        TestServices.EtcdEndpoint etcd = TestServices.etcd();
        client = Client.builder()
                .endpoints(etcd.endpoints().toArray(String[]::new))
                .build();
        probe = Client.builder()
                .endpoints(etcd.endpoints().toArray(String[]::new))
                .build();
    }

    @AfterAll
    static void disconnect() {
        if (client != null) {
            client.close();
            probe.close();
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

    /** etcd leases are whole seconds; the node started here has a shortest lease of 1 s. */
    @Override
    protected Duration shortLease() {
        return Duration.ofSeconds(1);
    }
}
