package dev.leasehold.faults;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Scenario 6: see {@link CrashedService}. */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class CrashedServiceTest {

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {CrashedService.REQUESTS, CrashedService.EFFECTS})
    void aServiceKilledDuringARetryStormPaysEveryRequestExactlyOnceAndKeepsEveryAcknowledgedReceipt(String backend)
            throws Exception {
        FaultScenarios.runAndCheck(new CrashedService(), backend);
    }
}
