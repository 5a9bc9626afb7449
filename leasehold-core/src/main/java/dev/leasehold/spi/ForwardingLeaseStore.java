package dev.leasehold.spi;

import dev.leasehold.LeaseInfo;
import dev.leasehold.LockKey;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;

/**
 * A store that passes every operation on to another, for decorators (a store that also closes its
 * client, one that connects on first use). Every method of {@link LeaseStore}, the default ones
 * included, is passed on as it was called: a decorator that implemented {@code LeaseStore} itself
 * would silently fall back to the interface's defaults for the methods it forgot, and so lose the
 * store's waiter queue, batch or asynchronous acquire. Override a method only to change what it
 * does. Thread-safe if {@link #delegate()} is.
 */
public abstract class ForwardingLeaseStore implements LeaseStore {

    /** The store every operation is passed on to; may be looked up on each call. */
    protected abstract LeaseStore delegate();

    @Override
    public AcquireResult tryAcquire(LockKey key, String owner, Duration leaseFor) {
        return delegate().tryAcquire(key, owner, leaseFor);
    }

    @Override
    public AcquireResult tryAcquire(AcquireRequest request) {
        return delegate().tryAcquire(request);
    }

    @Override
    public CompletionStage<AcquireResult> tryAcquireAsync(AcquireRequest request) {
        return delegate().tryAcquireAsync(request);
    }

    @Override
    public boolean acquiresAsynchronously() {
        return delegate().acquiresAsynchronously();
    }

    @Override
    public BatchAcquireResult tryAcquireAll(List<LockKey> keys, String owner, Duration leaseFor) {
        return delegate().tryAcquireAll(keys, owner, leaseFor);
    }

    @Override
    public Optional<Grant> renew(LockKey key, String owner, Duration leaseFor) {
        return delegate().renew(key, owner, leaseFor);
    }

    @Override
    public List<Optional<Grant>> renewAll(List<Renewal> batch) {
        return delegate().renewAll(batch);
    }

    @Override
    public int renewalBatchLimit() {
        return delegate().renewalBatchLimit();
    }

    @Override
    public boolean release(LockKey key, String owner) {
        return delegate().release(key, owner);
    }

    @Override
    public Optional<LeaseInfo> inspect(LockKey key) {
        return delegate().inspect(key);
    }

    @Override
    public boolean forceRelease(LockKey key) {
        return delegate().forceRelease(key);
    }

    @Override
    public List<LeaseInfo> list(String namespace, int limit) {
        return delegate().list(namespace, limit);
    }

    @Override
    public boolean supportsReleaseNotifications() {
        return delegate().supportsReleaseNotifications();
    }

    @Override
    public ReleaseSubscription subscribe(LockKey key, Consumer<ReleaseNotice> onRelease) {
        return delegate().subscribe(key, onRelease);
    }

    @Override
    public ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease) {
        return delegate().subscribeForceReleases(onForceRelease);
    }

    @Override
    public String name() {
        return delegate().name();
    }

    @Override
    public void leaveQueue(LockKey key, String owner) {
        delegate().leaveQueue(key, owner);
    }

    @Override
    public boolean leavesQueueWithoutBlocking() {
        return delegate().leavesQueueWithoutBlocking();
    }

    @Override
    public void close() {
        delegate().close();
    }
}
