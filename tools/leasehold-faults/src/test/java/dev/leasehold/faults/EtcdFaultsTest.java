package dev.leasehold.faults;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Scenario 12: see {@link EtcdFaults}. */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class EtcdFaultsTest {

    @Test
    void anEtcdHolderCutOffOrOutlivingItsLeaderNeverOverlapsTheNextAndItsOldFenceIsRefused() throws Exception {
        FaultScenarios.runAndCheck(new EtcdFaults(), "etcd");
    }
}
