package dev.leasehold.spring;

import dev.leasehold.spi.ForwardingLeaseStore;
import dev.leasehold.spi.LeaseStore;
import java.util.Objects;

/**
 * A store that also closes the client Leasehold created for it. Every operation is passed on as it
 * was called.
 */
final class OwningStore extends ForwardingLeaseStore {

    private final LeaseStore store;
    private final AutoCloseable client;

    OwningStore(LeaseStore store, AutoCloseable client) {
        this.store = Objects.requireNonNull(store, "store is missing (null)");
        this.client = Objects.requireNonNull(client, "client is missing (null)");
    }

    @Override
    protected LeaseStore delegate() {
        return store;
    }

    /** The store this one passes every operation on to. */
    LeaseStore store() {
        return store;
    }

    /** The client closed after the store. */
    AutoCloseable client() {
        return client;
    }

    /** Closes the store, then the client, even when closing the store fails. */
    @Override
    public void close() {
        try {
            store.close();
        } finally {
            try {
                client.close();
            } catch (Exception e) {
                throw new IllegalStateException("closing the " + store.name() + " client failed", e);
            }
        }
    }
}
