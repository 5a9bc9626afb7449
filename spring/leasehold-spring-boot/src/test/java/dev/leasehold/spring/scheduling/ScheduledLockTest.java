package dev.leasehold.spring.scheduling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leasehold.LockKey;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.LeaseStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Scheduled-task locks across two application contexts on one real Redis. */
class ScheduledLockTest {

    /** Runs, inside and in total, counted across both instances. */
    static final AtomicInteger RUNS = new AtomicInteger();

    static final AtomicInteger INSIDE = new AtomicInteger();
    static final AtomicInteger MOST_INSIDE = new AtomicInteger();

    /** The same scheduled job in every instance. */
    public static class Nightly {
        @ScheduledLock(name = "nightly", lockAtMostFor = "1500ms", lockAtLeastFor = "1s")
        public void run() throws InterruptedException {
            int inside = INSIDE.incrementAndGet();
            MOST_INSIDE.accumulateAndGet(inside, Math::max);
            RUNS.incrementAndGet();
            TimeUnit.MILLISECONDS.sleep(50); // the job's own work
            INSIDE.decrementAndGet();
        }
    }

    private static void reset() {
        RUNS.set(0);
        INSIDE.set(0);
        MOST_INSIDE.set(0);
    }

    @Test
    void concurrentTriggersOnTwoInstancesRunTheJobOnceAndLockAtLeastForKeepsTheSlot() {
        reset();
        TwoInstances.run(Nightly.class, (a, b) -> {
            ExecutorService pool = Executors.newFixedThreadPool(8);
            try {
                CyclicBarrier start = new CyclicBarrier(8);
                List<Future<?>> triggers = new ArrayList<>();
                for (int i = 0; i < 8; i++) {
                    Nightly job = (i % 2 == 0 ? a : b).getBean(Nightly.class);
                    triggers.add(pool.submit(() -> {
                        start.await(10, TimeUnit.SECONDS);
                        job.run();
                        return null;
                    }));
                }
                for (Future<?> trigger : triggers) {
                    trigger.get(20, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
            }
            assertThat(RUNS.get())
                    .as("one run for eight triggers on two instances")
                    .isEqualTo(1);
            // The run took ~50 ms, but lock-at-least-for (1 s) keeps the slot: a late trigger skips.
            b.getBean(Nightly.class).run();
            assertThat(RUNS.get())
                    .as("a trigger right after the run is skipped")
                    .isEqualTo(1);
            await().atMost(Duration.ofSeconds(10))
                    .pollInterval(Duration.ofMillis(100))
                    .until(() -> {
                        b.getBean(Nightly.class).run();
                        return RUNS.get() == 2;
                    });
            assertThat(MOST_INSIDE.get()).isEqualTo(1);
        });
    }

    @Test
    void aDeadInstanceFreesTheJobAfterLockAtMostFor() {
        reset();
        TwoInstances.run(Nightly.class, (a, b) -> {
            // Instance A takes the job and dies without releasing it.
            LeaseStore store = a.getBean(LeaseStore.class);
            assertThat(store.tryAcquire(LockKey.of("scheduled", "nightly"), "dead-instance", Duration.ofMillis(1500)))
                    .isInstanceOf(AcquireResult.Granted.class);
            b.getBean(Nightly.class).run();
            assertThat(RUNS.get()).as("held by the dead instance").isZero();
            await().atMost(Duration.ofSeconds(10))
                    .pollInterval(Duration.ofMillis(100))
                    .until(() -> {
                        b.getBean(Nightly.class).run();
                        return RUNS.get() == 1;
                    });
        });
    }

    @Test
    void lockAtLeastForAboveLockAtMostForIsRefused() {
        TwoInstances.run(Nightly.class, (a, b) -> {
            ScheduledTaskLock lock = a.getBean(ScheduledTaskLock.class);
            org.assertj.core.api.Assertions.assertThatThrownBy(
                            () -> lock.runIfFree("bad", Duration.ofSeconds(1), Duration.ofSeconds(2), () -> {}))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("lockAtLeastFor");
        });
    }
}
