package dev.leasehold.faults;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Scenario 3: see {@link Failover}. */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class FailoverTest {

    @Test
    void aPromotedReplicaThatMissedGrantsNeverRepeatsAFenceAndEveryVanishedHolderIsToldWithinItsLease()
            throws Exception {
        FaultScenarios.runAndCheck(new Failover(), "redis sentinel");
    }
}
