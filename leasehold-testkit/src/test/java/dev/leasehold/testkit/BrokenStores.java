package dev.leasehold.testkit;

import dev.leasehold.LeaseInfo;
import dev.leasehold.LockKey;
import dev.leasehold.memory.InMemoryLeaseStore;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * Deliberately broken stores, each with one classic lock bug. They exist to prove the conformance
 * suite catches that bug; see {@link BrokenStoresFailConformanceTest}.
 */
final class BrokenStores {

    private BrokenStores() {}

    /** Forwards everything to a correct in-memory store. */
    static class Forwarding implements LeaseStore {
        final InMemoryLeaseStore delegate = new InMemoryLeaseStore();

        @Override
        public AcquireResult tryAcquire(LockKey key, String owner, Duration leaseFor) {
            return delegate.tryAcquire(key, owner, leaseFor);
        }

        @Override
        public Optional<Grant> renew(LockKey key, String owner, Duration leaseFor) {
            return delegate.renew(key, owner, leaseFor);
        }

        @Override
        public boolean release(LockKey key, String owner) {
            return delegate.release(key, owner);
        }

        @Override
        public Optional<LeaseInfo> inspect(LockKey key) {
            return delegate.inspect(key);
        }

        @Override
        public boolean forceRelease(LockKey key) {
            return delegate.forceRelease(key);
        }

        @Override
        public boolean supportsReleaseNotifications() {
            return true;
        }

        @Override
        public ReleaseSubscription subscribe(LockKey key, Consumer<ReleaseNotice> onRelease) {
            return delegate.subscribe(key, onRelease);
        }

        @Override
        public ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease) {
            return delegate.subscribeForceReleases(onForceRelease);
        }

        @Override
        public String name() {
            return "broken";
        }
    }

    /** Release is a plain delete: an expired holder deletes the next holder's lock. */
    static final class ReleaseWithoutOwnerCheck extends Forwarding {
        @Override
        public boolean release(LockKey key, String owner) {
            return delegate.forceRelease(key);
        }
    }

    /** Every grant carries the same fence. */
    static final class FenceThatDoesNotGrow extends Forwarding {
        @Override
        public AcquireResult tryAcquire(LockKey key, String owner, Duration leaseFor) {
            AcquireResult result = delegate.tryAcquire(key, owner, leaseFor);
            if (result instanceof AcquireResult.Granted granted) {
                Grant grant = granted.grant();
                return new AcquireResult.Granted(new Grant(1, grant.remaining(), grant.expiresAt()));
            }
            return result;
        }
    }

    /** Leases never expire: a crashed holder's key stays locked. */
    static final class NoExpiry extends Forwarding {
        @Override
        public AcquireResult tryAcquire(LockKey key, String owner, Duration leaseFor) {
            return delegate.tryAcquire(key, owner, Duration.ofDays(1));
        }
    }

    /** Acquire is check-then-set in two steps, so two callers can both see the key free. */
    static final class CheckThenSetAcquire extends Forwarding {
        @Override
        public AcquireResult tryAcquire(LockKey key, String owner, Duration leaseFor) {
            if (delegate.inspect(key).isPresent()) {
                return delegate.tryAcquire(key, owner, leaseFor);
            }
            try {
                Thread.sleep(5); // widens the window between the check and the set
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            delegate.forceRelease(key);
            return delegate.tryAcquire(key, owner, leaseFor);
        }
    }
}
