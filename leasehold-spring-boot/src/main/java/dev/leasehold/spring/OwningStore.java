package dev.leasehold.spring;

import dev.leasehold.LeaseInfo;
import dev.leasehold.LockKey;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.BatchAcquireResult;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;

/**
 * A store that also closes the client Leasehold created for it. Every operation is passed on,
 * those a store has of its own (the batch, the asynchronous acquire, leaving a fair queue)
 * included ({@code
 * LeaseholdAutoConfigurationTest.aRedisStoreWithItsOwnClientKeepsTheOneScriptBatchAndTheAsynchronousAcquire}).
 */
record OwningStore(LeaseStore store, AutoCloseable client) implements LeaseStore {

    @Override
    public AcquireResult tryAcquire(LockKey key, String owner, Duration leaseFor) {
        return store.tryAcquire(key, owner, leaseFor);
    }

    @Override
    public CompletionStage<AcquireResult> tryAcquireAsync(LockKey key, String owner, Duration leaseFor) {
        return store.tryAcquireAsync(key, owner, leaseFor);
    }

    @Override
    public BatchAcquireResult tryAcquireAll(List<LockKey> keys, String owner, Duration leaseFor) {
        return store.tryAcquireAll(keys, owner, leaseFor);
    }

    @Override
    public Optional<Grant> renew(LockKey key, String owner, Duration leaseFor) {
        return store.renew(key, owner, leaseFor);
    }

    @Override
    public boolean release(LockKey key, String owner) {
        return store.release(key, owner);
    }

    @Override
    public Optional<LeaseInfo> inspect(LockKey key) {
        return store.inspect(key);
    }

    @Override
    public boolean forceRelease(LockKey key) {
        return store.forceRelease(key);
    }

    @Override
    public List<LeaseInfo> list(String namespace, int limit) {
        return store.list(namespace, limit);
    }

    @Override
    public boolean supportsReleaseNotifications() {
        return store.supportsReleaseNotifications();
    }

    @Override
    public ReleaseSubscription subscribe(LockKey key, Consumer<ReleaseNotice> onRelease) {
        return store.subscribe(key, onRelease);
    }

    @Override
    public ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease) {
        return store.subscribeForceReleases(onForceRelease);
    }

    @Override
    public void leaveQueue(LockKey key, String owner) {
        store.leaveQueue(key, owner);
    }

    @Override
    public String name() {
        return store.name();
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
