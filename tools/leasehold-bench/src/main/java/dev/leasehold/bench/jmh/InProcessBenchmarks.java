package dev.leasehold.bench.jmh;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.idempotency.CanonicalJson;
import dev.leasehold.memory.InMemoryLeaseStore;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The in-process costs of Leasehold: key rendering and validation, the canonical-JSON fingerprint of
 * a tool call, and the engine's overhead over the in-memory store (a lock + unlock with no network).
 *
 * <pre>
 * java -cp tools/leasehold-bench/target/classes:$(cat cp.txt) org.openjdk.jmh.Main InProcessBenchmarks
 * </pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(1)
public class InProcessBenchmarks {

    private static final String TOOL_CALL =
            "{\"type\":\"expense\",\"amount\":35.0,\"category\":\"餐饮\",\"note\":\"中午吃粉\",\"time\":\"2026-11-29T12:00:00+08:00\"}";

    private LockService locks;
    private final LockKey key = LockKey.ofTenant("borrow", "t42", "B20240315001");
    private final LeaseOptions options = LeaseOptions.builder().renewal(false).build();
    private int counter;
    private static final LeaseOptions WAITING = LeaseOptions.defaults().withWait(java.time.Duration.ofSeconds(5));

    @Setup(Level.Trial)
    public void setUp() {
        locks = LockService.builder(new InMemoryLeaseStore()).build();
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        locks.close();
    }

    @Benchmark
    public String keyRendering() {
        return LockKey.ofTenant("borrow", "t42", "B" + (counter++ & 1023)).render();
    }

    @Benchmark
    public String canonicalJsonFingerprint() {
        return CanonicalJson.fingerprint(TOOL_CALL);
    }

    @Benchmark
    public long engineLockUnlockInMemory() {
        try (Lease lease = locks.tryAcquire(key, options).orElseThrow()) {
            return lease.fence();
        }
    }

    /** The path of a waiting lock (a wait of 5 s) with renewal, the one {@code ProfileDriver pairs} takes. */
    @Benchmark
    public long engineWaitingLockUnlockInMemory() throws InterruptedException {
        try (Lease lease = locks.acquire(key, WAITING)) {
            return lease.fence();
        }
    }

    @Benchmark
    public long engineLockUnlockInMemoryWithRenewal() {
        try (Lease lease = locks.tryAcquire(key, LeaseOptions.defaults()).orElseThrow()) {
            return lease.fence();
        }
    }
}
