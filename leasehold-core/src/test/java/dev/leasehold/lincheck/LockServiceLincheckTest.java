package dev.leasehold.lincheck;

import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.jetbrains.lincheck.datastructures.ThreadIdGen;
import org.junit.jupiter.api.Test;

/**
 * {@link dev.leasehold.LockService} over the in-memory store is linearizable in model-checking
 * mode: Lincheck runs {@code tryAcquire} (an owner taking a key it holds re-enters it), {@code
 * release} and a read of whether the store shows the key taken, by three owners on two keys from
 * three threads, explores their interleavings at every shared-memory access, and checks each
 * result against {@link LockTable.Sequential}. These operations run on the caller's thread; an
 * {@code acquire} with a wait hands its store call to an engine thread, which a model checker does
 * not control, so it is checked in stress mode ({@link LockServiceWaitLincheckTest}).
 *
 * <p>Run: {@code mvn -pl leasehold-core verify -Plincheck -Dleasehold.mutation.skip=true}.
 */
@Param(name = "key", gen = IntGen.class, conf = "0:1")
@Param(name = "owner", gen = ThreadIdGen.class)
public class LockServiceLincheckTest {

    private final LockTable table = new LockTable(true, false);

    @Operation
    public int tryAcquire(@Param(name = "owner") int owner, @Param(name = "key") int key) {
        return table.tryAcquire(owner, key);
    }

    @Operation
    public int release(@Param(name = "owner") int owner, @Param(name = "key") int key) {
        return table.release(owner, key);
    }

    @Operation
    public boolean isTaken(@Param(name = "key") int key) {
        return table.isTaken(key);
    }

    @Test
    void modelChecking() {
        new ModelCheckingOptions()
                .iterations(3)
                .invocationsPerIteration(20)
                .threads(3)
                .actorsPerThread(3)
                .sequentialSpecification(LockTable.Sequential.class)
                .check(LockServiceLincheckTest.class);
    }
}
