package dev.leasehold.etcd;

import dev.leasehold.LockKey;
import dev.leasehold.testkit.RawLease;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/** Reads a lease key straight from etcd with a client of its own, for the conformance suite's probe. */
final class EtcdRaw {

    private static final EtcdKeys KEYS = new EtcdKeys("leasehold/");

    private EtcdRaw() {}

    static Optional<RawLease> read(Client client, LockKey key) {
        try {
            List<KeyValue> found = client.getKVClient()
                    .get(KEYS.lease(key))
                    .get(10, TimeUnit.SECONDS)
                    .getKvs();
            if (found.isEmpty()) {
                return Optional.empty();
            }
            KeyValue lease = found.get(0);
            return Optional.of(
                    new RawLease(lease.getValue().toString(StandardCharsets.UTF_8), lease.getCreateRevision()));
        } catch (Exception e) {
            throw new IllegalStateException("cannot read " + key + " from etcd", e);
        }
    }
}
