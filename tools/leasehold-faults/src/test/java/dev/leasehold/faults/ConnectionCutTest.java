package dev.leasehold.faults;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Scenario 5: see {@link ConnectionCut}. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ConnectionCutTest {

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"postgresql", "mariadb"})
    void aSessionKilledBetweenAFencedWriteAndItsCommitWritesNothingAndLeavesTheKeyRecoverable(String backend)
            throws Exception {
        FaultScenarios.runAndCheck(new ConnectionCut(), backend);
    }
}
