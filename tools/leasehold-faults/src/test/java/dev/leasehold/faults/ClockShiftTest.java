package dev.leasehold.faults;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Scenario 7: see {@link ClockShift}; skipped, saying so, where libfaketime is not installed. */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ClockShiftTest {

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"redis", "postgresql", "mariadb"})
    void holdersAnHourAheadOrBehindInFarTimeZonesChangeNeitherLeasesNorStaleness(String backend) throws Exception {
        FaultScenarios.runAndCheck(new ClockShift(), backend);
    }
}
