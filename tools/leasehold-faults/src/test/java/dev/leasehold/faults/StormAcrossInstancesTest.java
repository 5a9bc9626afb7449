package dev.leasehold.faults;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Scenario 8: see {@link StormAcrossInstances}. */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class StormAcrossInstancesTest {

    @Test
    void
            twoInstancesUnderARepaymentStormWithDuplicatesConserveEveryNoteAnswerDuplicatesWithTheOriginalReceiptAndNeverStall()
                    throws Exception {
        FaultScenarios.runAndCheck(new StormAcrossInstances(), "postgresql + redis");
    }
}
