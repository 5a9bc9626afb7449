package dev.leasehold.faults;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Scenario 10: see {@link KilledHolder}. */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class KilledHolderTest {

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"redis", "postgresql", "mariadb"})
    void aKilledHolderFreesItsKeyByItsLeaseEndAndItsHalfDoneTransactionLeavesNothing(String backend) throws Exception {
        FaultScenarios.runAndCheck(new KilledHolder(), backend);
    }
}
