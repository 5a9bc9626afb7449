package dev.leasehold.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.LeaseInfo;
import dev.leasehold.LockKey;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.ForwardingLeaseStore;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ForwardingCheckTest {

    @Test
    void theForwardingStorePassesEveryMethodOfTheSpiOn() {
        assertThat(ForwardingCheck.unforwarded(store -> new ForwardingLeaseStore() {
                    @Override
                    protected LeaseStore delegate() {
                        return store;
                    }
                }))
                .isEmpty();
    }

    @Test
    void aDecoratorThatPassesOnOnlyTheRequiredMethodsIsCaught() {
        assertThat(ForwardingCheck.unforwarded(RequiredOnly::new))
                .as("the default methods a hand-written decorator forgot")
                .anySatisfy(line -> assertThat(line).startsWith("tryAcquire(AcquireRequest)"))
                .anySatisfy(line -> assertThat(line).startsWith("leaveQueue"))
                .anySatisfy(line -> assertThat(line).startsWith("leavesQueueWithoutBlocking"))
                .anySatisfy(line -> assertThat(line).startsWith("tryAcquireAll(List, String, Duration) threw"))
                .noneSatisfy(line -> assertThat(line).startsWith("release("));
    }

    @Test
    void aDecoratorThatChangesAnArgumentIsCaught() {
        assertThat(ForwardingCheck.unforwarded(store -> new ForwardingLeaseStore() {
                    @Override
                    protected LeaseStore delegate() {
                        return store;
                    }

                    @Override
                    public Optional<Grant> renew(LockKey key, String owner, Duration leaseFor) {
                        return store.renew(key, owner, leaseFor.plusSeconds(1));
                    }
                }))
                .singleElement()
                .asString()
                .startsWith("renew(LockKey, String, Duration) reached the store as [renew]");
    }

    /** Passes on what an implementation must write, and nothing of what the interface defaults. */
    private record RequiredOnly(LeaseStore store) implements LeaseStore {

        @Override
        public AcquireResult tryAcquire(LockKey key, String owner, Duration leaseFor) {
            return store.tryAcquire(key, owner, leaseFor);
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
        public String name() {
            return store.name();
        }
    }
}
