package dev.leasehold.faults;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Scenario 2: see {@link StoreRestart}. */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class StoreRestartTest {

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {StoreRestart.NO_PERSISTENCE, StoreRestart.OLDER_RDB, StoreRestart.AOF_EVERYSEC})
    void fencesAtTheGuardedTableNeverRepeatNorGoBackWhenRedisRestartsMidHold(String backend) throws Exception {
        FaultScenarios.runAndCheck(new StoreRestart(), backend);
    }
}
