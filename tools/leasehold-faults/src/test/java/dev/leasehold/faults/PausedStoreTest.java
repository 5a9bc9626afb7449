package dev.leasehold.faults;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Scenario 4: see {@link PausedStore}. */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class PausedStoreTest {

    @Test
    void aPausedRedisLosesEveryLeaseOnTimeBlocksNoCallerPastItsWaitAndResumesAfterSigcont() throws Exception {
        FaultScenarios.runAndCheck(new PausedStore(), "redis");
    }
}
