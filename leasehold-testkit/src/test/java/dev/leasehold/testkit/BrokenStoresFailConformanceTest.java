package dev.leasehold.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectMethod;

import dev.leasehold.LockKey;
import dev.leasehold.spi.LeaseStore;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;

/**
 * Proves the conformance suite can fail: each deliberately broken store is run through the check
 * that targets its bug, and that check must fail.
 */
class BrokenStoresFailConformanceTest {

    @ParameterizedTest(name = "{0} fails {1}")
    @CsvSource({
        "ReleaseWithoutOwnerCheckSuite, strangerCannotRenewOrRelease",
        "ReleaseWithoutOwnerCheckSuite, leaseWithoutRenewalIsReportedLostAtExpiry",
        "FenceThatDoesNotGrowSuite, fencesStrictlyIncreaseAcrossHolders",
        "FenceThatDoesNotGrowSuite, mutualExclusionUnderContention",
        "NoExpirySuite, expiryIsDecidedByTheStoreAndAStaleLeaseIsTakenOver",
        "CheckThenSetAcquireSuite, concurrentFirstAcquiresOfANewKeyGrantExactlyOne",
    })
    void brokenStoreFailsTheCheckForItsBug(String suite, String check) {
        Events tests = EngineTestKit.engine("junit-jupiter")
                .selectors(selectMethod(BrokenStoresFailConformanceTest.class.getName() + "$" + suite + "#" + check))
                .execute()
                .testEvents();
        assertThat(tests.started().count()).as("%s#%s ran", suite, check).isEqualTo(1);
        assertThat(tests.failed().count()).as("%s#%s failed", suite, check).isEqualTo(1);
    }

    /** The correct store passes the same checks, so the failures above are the bugs' doing. */
    @ParameterizedTest(name = "correct store passes {0}")
    @CsvSource({
        "strangerCannotRenewOrRelease",
        "fencesStrictlyIncreaseAcrossHolders",
        "expiryIsDecidedByTheStoreAndAStaleLeaseIsTakenOver",
        "concurrentFirstAcquiresOfANewKeyGrantExactlyOne",
    })
    void correctStorePassesTheSameChecks(String check) {
        Events tests = EngineTestKit.engine("junit-jupiter")
                .selectors(selectMethod(BrokenStoresFailConformanceTest.class.getName() + "$CorrectSuite#" + check))
                .execute()
                .testEvents();
        assertThat(tests.succeeded().count()).isEqualTo(1);
    }

    abstract static class BrokenSuite extends LeaseStoreConformance {
        @Override
        protected Optional<RawLease> rawLease(LockKey key) {
            return ((BrokenStores.Forwarding) store)
                    .delegate
                    .inspect(key)
                    .map(info -> new RawLease(info.ownerToken(), info.fence()));
        }
    }

    @Tag("broken-fixture")
    static class ReleaseWithoutOwnerCheckSuite extends BrokenSuite {
        @Override
        protected LeaseStore createStore() {
            return new BrokenStores.ReleaseWithoutOwnerCheck();
        }
    }

    @Tag("broken-fixture")
    static class FenceThatDoesNotGrowSuite extends BrokenSuite {
        @Override
        protected LeaseStore createStore() {
            return new BrokenStores.FenceThatDoesNotGrow();
        }
    }

    @Tag("broken-fixture")
    static class NoExpirySuite extends BrokenSuite {
        @Override
        protected LeaseStore createStore() {
            return new BrokenStores.NoExpiry();
        }
    }

    @Tag("broken-fixture")
    static class CheckThenSetAcquireSuite extends BrokenSuite {
        @Override
        protected LeaseStore createStore() {
            return new BrokenStores.CheckThenSetAcquire();
        }
    }

    @Tag("broken-fixture")
    static class CorrectSuite extends BrokenSuite {
        @Override
        protected LeaseStore createStore() {
            return new BrokenStores.Forwarding();
        }
    }
}
