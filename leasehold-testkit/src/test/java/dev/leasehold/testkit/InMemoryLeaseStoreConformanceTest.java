package dev.leasehold.testkit;

import dev.leasehold.LockKey;
import dev.leasehold.memory.InMemoryLeaseStore;
import dev.leasehold.spi.LeaseStore;
import java.util.Optional;

/** The in-memory store, the reference behaviour, passes the conformance suite. */
class InMemoryLeaseStoreConformanceTest extends LeaseStoreConformance {

    @Override
    protected LeaseStore createStore() {
        return new InMemoryLeaseStore();
    }

    @Override
    protected Optional<RawLease> rawLease(LockKey key) {
        // The map is the backend; inspect reads it without changing it.
        return store.inspect(key).map(info -> new RawLease(info.ownerToken(), info.fence()));
    }
}
