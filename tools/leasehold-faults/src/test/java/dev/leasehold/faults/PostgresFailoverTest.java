package dev.leasehold.faults;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Scenario 11: see {@link PostgresFailover}. */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class PostgresFailoverTest {

    @Test
    void aPromotedStandbyThatLostTheLastGrantsStillHandsOutLargerFencesAndTheOldHoldersWritesAreRefused()
            throws Exception {
        FaultScenarios.runAndCheck(new PostgresFailover(), "postgresql");
    }

    @Test
    void aPromotedSynchronousStandbyHasEveryAcknowledgedGrantAndFencesStillOnlyGrow() throws Exception {
        FaultScenarios.runAndCheck(new PostgresFailover(true), "postgresql");
    }
}
