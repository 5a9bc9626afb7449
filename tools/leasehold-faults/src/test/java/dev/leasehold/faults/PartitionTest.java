package dev.leasehold.faults;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Scenario 9: see {@link Partition}. */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class PartitionTest {

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"redis", "postgresql", "mariadb"})
    void aClientCutOffFromItsStoreLosesItsLeaseInTimeNeverBlocksOthersAndNeverFreesANewerGrant(String backend)
            throws Exception {
        FaultScenarios.runAndCheck(new Partition(), backend);
    }
}
