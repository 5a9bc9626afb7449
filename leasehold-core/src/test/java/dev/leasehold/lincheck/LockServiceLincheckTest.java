package dev.leasehold.lincheck;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockBusyException;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.memory.InMemoryLeaseStore;
import dev.leasehold.spi.LeaseStore;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.jetbrains.lincheck.datastructures.ThreadIdGen;
import org.junit.jupiter.api.Test;

/**
 * {@link LockService} over the in-memory store is linearizable: Lincheck runs {@code tryAcquire},
 * {@code acquire} with a wait, re-entry and {@code release} of three owners on two keys from
 * several threads, in model-checking mode (every interleaving of the chosen switch points) and in
 * stress mode, and checks each result against one sequential lock table ({@link Sequential}).
 *
 * <p>Each operation names its owner (the Lincheck thread's id) so that the sequential table knows
 * who asks; an owner acquiring a key it holds re-enters it (one more hold). The lease is long and
 * not renewed, so no timer fires during a run: what is checked is the engine and store under
 * contention, not expiry. An {@code acquire} that waits 20 ms linearizes either after a release
 * that let it in or, busy, before it.
 *
 * <p>Run: {@code mvn -pl leasehold-core verify -Plincheck -Dleasehold.mutation.skip=true} (its own
 * surefire execution; the default build excludes it). It does not pass yet, so it is not in the
 * default build: in model-checking mode Lincheck reports the first {@code acquire} as hung in the
 * engine's {@code Parking} loop while the first grant's force-release subscription runs on a
 * worker thread (the model checker's time does not advance); in stress mode an {@code acquire}
 * with a 20 to 50 ms wait on two loaded cores sometimes throws {@code LeaseStoreException} ("the
 * store gave no answer within the wait"), which the API allows but the sequential table cannot
 * express.
 */
@Param(name = "key", gen = IntGen.class, conf = "0:1")
@Param(name = "owner", gen = ThreadIdGen.class)
public class LockServiceLincheckTest {

    private static final int OWNERS = 3;
    private static final int KEYS = 2;
    private static final long STEP_NANOS = 1_000_000L;
    private static final LeaseOptions TRY =
            LeaseOptions.builder().leaseFor(Duration.ofHours(1)).renewal(false).build();
    private static final LeaseOptions WAIT = TRY.withWait(Duration.ofMillis(50));
    private static final ScheduledExecutorService SCHEDULER = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "lincheck-lock-service");
        t.setDaemon(true);
        return t;
    });

    private final LockService locks =
            LockService.builder(new InMemoryLeaseStore()).scheduler(SCHEDULER).build();
    private final LockOwner[] owners = new LockOwner[OWNERS];
    private final List<Deque<Lease>> held = new ArrayList<>();

    public LockServiceLincheckTest() {
        for (int o = 0; o < OWNERS; o++) {
            owners[o] = LockOwner.create("owner-" + o);
            for (int k = 0; k < KEYS; k++) {
                held.add(new ArrayDeque<>());
            }
        }
    }

    /**
     * The in-memory store as one without release notifications: waiters poll and are woken by
     * local releases, and the engine starts no subscription on a worker, which the model checker
     * cannot see finish.
     */
    private static LeaseStore withoutNotifications(LeaseStore store) {
        return (LeaseStore) Proxy.newProxyInstance(
                LeaseStore.class.getClassLoader(), new Class<?>[] {LeaseStore.class}, (proxy, method, args) -> {
                    if (method.getName().equals("supportsReleaseNotifications")) {
                        return false;
                    }
                    try {
                        return method.invoke(store, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    private static LockKey key(int key) {
        return LockKey.of("lincheck", "k" + key);
    }

    /** Takes the key without waiting: the owner's hold count, or 0 if another owner holds it. */
    @Operation
    public int tryAcquire(@Param(name = "owner") int owner, @Param(name = "key") int key) {
        return locks.tryAcquire(key(key), TRY, owners[owner])
                .map(lease -> hold(owner, key, lease))
                .orElse(0);
    }

    /** Takes the key waiting up to 20 ms: the owner's hold count, or 0 if it stayed busy. */
    @Operation
    public int acquire(@Param(name = "owner") int owner, @Param(name = "key") int key) throws InterruptedException {
        try {
            return hold(owner, key, locks.acquire(key(key), WAIT, owners[owner]));
        } catch (LockBusyException busy) {
            return 0;
        }
    }

    /** Gives back the owner's newest hold of the key: the holds left, or -1 if it held none. */
    @Operation
    public int release(@Param(name = "owner") int owner, @Param(name = "key") int key) {
        Lease lease = held(owner, key).pollLast();
        if (lease == null) {
            return -1;
        }
        lease.close();
        return held(owner, key).size();
    }

    /** Whether the store shows anyone holding the key. */
    @Operation
    public boolean isTaken(@Param(name = "key") int key) {
        return locks.inspect(key(key)).isPresent();
    }

    private Deque<Lease> held(int owner, int key) {
        return held.get(owner * KEYS + key);
    }

    private int hold(int owner, int key, Lease lease) {
        held(owner, key).addLast(lease);
        return lease.holdCount();
    }

    @Test
    void modelChecking() {
        new ModelCheckingOptions()
                .iterations(20)
                .invocationsPerIteration(200)
                .threads(3)
                .actorsPerThread(3)
                .sequentialSpecification(Sequential.class)
                .check(LockServiceLincheckTest.class);
    }

    @Test
    void stress() {
        new StressOptions()
                .iterations(20)
                .invocationsPerIteration(500)
                .threads(3)
                .actorsPerThread(3)
                .sequentialSpecification(Sequential.class)
                .check(LockServiceLincheckTest.class);
    }

    /** The sequential lock table the concurrent results must match: an owner and a hold count per key. */
    public static final class Sequential {
        private final int[] owner = {-1, -1};
        private final int[] holds = new int[KEYS];

        public int tryAcquire(int who, int key) {
            if (owner[key] != -1 && owner[key] != who) {
                return 0;
            }
            owner[key] = who;
            return ++holds[key];
        }

        public int acquire(int who, int key) {
            return tryAcquire(who, key);
        }

        public int release(int who, int key) {
            if (owner[key] != who) {
                return -1;
            }
            if (--holds[key] == 0) {
                owner[key] = -1;
            }
            return holds[key];
        }

        public boolean isTaken(int key) {
            return owner[key] != -1;
        }
    }
}
