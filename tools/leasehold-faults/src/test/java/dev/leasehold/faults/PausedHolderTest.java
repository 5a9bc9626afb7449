package dev.leasehold.faults;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Scenario 1: see {@link PausedHolder}. */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class PausedHolderTest {

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"redis", "postgresql", "mariadb"})
    void aHolderPausedPastItsLeaseCannotOverwriteTheNextHoldersFencedWrite(String backend) throws Exception {
        FaultScenarios.runAndCheck(new PausedHolder(), backend);
    }
}
