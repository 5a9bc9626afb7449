package dev.leasehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.leasehold.ScriptedStore.Op;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * The one alarm that carries every held lease's timed work ({@link LeaseTimer}): one lease's
 * failure, or one failed attempt to set the alarm, must not stop the renewals and loss signals of
 * the others.
 */
class LeaseTimerTest extends EngineHarness {

    @Test
    void anEntryThatThrowsAnErrorDoesNotStopTheEntriesAfterIt() throws Exception {
        ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1);
        try {
            LeaseTimer timer = new LeaseTimer(executor, Ticker.system());
            CountDownLatch thrown = new CountDownLatch(1);
            CountDownLatch later = new CountDownLatch(1);
            // Another lease's work, due later, is set first...
            timer.schedule(later::countDown, TimeUnit.MILLISECONDS.toNanos(50));
            // ...then one lease's work, due at once, fails with an Error (a worker thread that
            // cannot be started, say): the alarm rings for it before the other is due.
            timer.schedule(
                    () -> {
                        thrown.countDown();
                        throw new OutOfMemoryError("unable to create native thread (test)");
                    },
                    0);

            assertThat(thrown.await(5, TimeUnit.SECONDS)).isTrue();
            assertThat(later.await(5, TimeUnit.SECONDS))
                    .as("the entry due after the failing one ran")
                    .isTrue();
            assertThat(timer.pending()).isZero();
        } finally {
            executor.shutdownNow();
        }
    }

    @Test
    void aTimerThatFailsOnceToSetTheAlarmLeavesEveryOtherLeaseRenewed() throws Exception {
        ScriptedStore store = store(true);
        IllegalStateException broken = new IllegalStateException("the timer failed once");
        AtomicBoolean breakNext = new AtomicBoolean();
        ScheduledExecutorService delegate = time.scheduler();
        ScheduledExecutorService timer = (ScheduledExecutorService) Proxy.newProxyInstance(
                ScheduledExecutorService.class.getClassLoader(),
                new Class<?>[] {ScheduledExecutorService.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("schedule") && breakNext.getAndSet(false)) {
                        throw broken;
                    }
                    try {
                        return method.invoke(delegate, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        LockService service = service(store, b -> b.scheduler(timer));
        LockKey held = LockKey.of("t", "held");
        LockKey failed = LockKey.of("t", "failed");
        LockKey later = LockKey.of("t", "later");
        // t = 0: a 30 s lease, renewal due at 10 s: the alarm is set for it
        Lease first =
                service.tryAcquire(held, lease(Duration.ofSeconds(30), true)).orElseThrow();

        // A 3 s lease needs the alarm earlier (1 s); setting it fails once: that acquire fails.
        breakNext.set(true);
        assertThat(catchThrowable(() -> service.tryAcquire(failed, lease(Duration.ofSeconds(3), true))))
                .isSameAs(broken);
        awaitFree(store, failed);

        // The lease held before and a later one (renewal at 20 s) are still renewed at their third.
        Lease next =
                service.tryAcquire(later, lease(Duration.ofSeconds(60), true)).orElseThrow();
        time.advance(Duration.ofSeconds(10)); // t = 10 s
        store.awaitCall(Op.RENEW, held, 1);
        time.advance(Duration.ofSeconds(10)); // t = 20 s
        store.awaitCall(Op.RENEW, later, 1);
        assertThat(first.isHeld()).isTrue();
        assertThat(next.isHeld()).isTrue();
        first.close();
        next.close();
    }

    @Test
    void anEntryDueNoEarlierThanTheAlarmSharesItAndAnEarlierOneSetsItAgain() {
        List<Long> alarms = new CopyOnWriteArrayList<>();
        LeaseTimer timer = new LeaseTimer(recordingDelays(alarms), time);
        List<String> ran = new CopyOnWriteArrayList<>();
        timer.schedule(() -> ran.add("a"), ms(300));
        timer.schedule(() -> ran.add("b"), ms(300)); // due with the alarm
        timer.schedule(() -> ran.add("c"), ms(500)); // due after it
        assertThat(alarms).as("alarms set").containsExactly(ms(300));
        timer.schedule(() -> ran.add("d"), ms(100)); // due before it
        assertThat(alarms).as("alarms set").containsExactly(ms(300), ms(100));

        time.advance(Duration.ofMillis(300));
        assertThat(ran).containsExactly("d", "a", "b");
        // after d: set for a and b, 200 ms on; after them: set for c, 200 ms on
        assertThat(alarms).as("alarms set").containsExactly(ms(300), ms(100), ms(200), ms(200));
        time.advance(Duration.ofMillis(200));
        assertThat(ran).containsExactly("d", "a", "b", "c");
        assertThat(timer.pending()).isZero();
        assertThat(alarms).as("none set with nothing left").hasSize(4);
    }

    @Test
    void anEntryScheduledByARunningEntryForTheSameInstantRunsInTheSameRing() {
        LeaseTimer timer = new LeaseTimer(time.scheduler(), time);
        List<String> ran = new CopyOnWriteArrayList<>();
        timer.schedule(
                () -> {
                    ran.add("first");
                    timer.schedule(() -> ran.add("due now"), 0);
                },
                ms(100));
        time.advance(Duration.ofMillis(100));
        assertThat(ran).containsExactly("first", "due now");
        assertThat(timer.pending()).isZero();
    }

    @Test
    void anotherThreadCancelsAnEntryThatRanOrCountsTheEntriesWithoutWaiting() throws Exception {
        LeaseTimer timer = new LeaseTimer(time.scheduler(), time);
        List<String> ran = new CopyOnWriteArrayList<>();
        LeaseTimer.Entry done = timer.schedule(() -> ran.add("done"), ms(100));
        LeaseTimer.Entry waiting = timer.schedule(() -> ran.add("waiting"), ms(300));
        timer.schedule(() -> ran.add("waiting too"), ms(300));
        time.advance(Duration.ofMillis(100)); // this thread runs the ring that took "done" out
        assertThat(timer.pending()).isEqualTo(2); // and counts the entries left
        ExecutorService other = Executors.newSingleThreadExecutor();
        try {
            other.submit(done::cancel).get(FakeTime.PATIENCE.toMillis(), TimeUnit.MILLISECONDS);
            other.submit(waiting::cancel).get(FakeTime.PATIENCE.toMillis(), TimeUnit.MILLISECONDS);
        } finally {
            other.shutdownNow();
        }
        time.advance(Duration.ofMillis(200));
        assertThat(ran).containsExactly("done", "waiting too");
    }

    @Test
    void anEntryCancelledWhileTheAlarmRingsEitherRanBeforeTheCancelReturnedOrNeverRuns() throws Exception {
        // Entries due at once, cancelled by another thread while the timer thread runs them: a
        // cancel that returns with the entry not run keeps it from ever running.
        ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1);
        ExecutorService canceller = Executors.newSingleThreadExecutor();
        try {
            LeaseTimer timer = new LeaseTimer(executor, Ticker.system());
            for (int round = 0; round < 50; round++) {
                int n = 2_000;
                java.util.concurrent.atomic.AtomicIntegerArray runs =
                        new java.util.concurrent.atomic.AtomicIntegerArray(n);
                LeaseTimer.Entry[] entries = new LeaseTimer.Entry[n];
                long at = System.nanoTime() + ms(2);
                for (int i = 0; i < n; i++) {
                    int index = i;
                    entries[i] = timer.scheduleAt(() -> runs.incrementAndGet(index), at);
                }
                boolean[] notRunAtCancel = canceller
                        .submit(() -> {
                            boolean[] notRun = new boolean[n];
                            while (System.nanoTime() - at < 0) {
                                Thread.onSpinWait(); // start with the alarm, in its order
                            }
                            for (int i = 0; i < n; i++) {
                                entries[i].cancel();
                                notRun[i] = !entries[i].ran();
                            }
                            return notRun;
                        })
                        .get(FakeTime.PATIENCE.toMillis(), TimeUnit.MILLISECONDS);
                CountDownLatch drained = new CountDownLatch(1);
                timer.scheduleAt(drained::countDown, at);
                assertThat(drained.await(FakeTime.PATIENCE.toMillis(), TimeUnit.MILLISECONDS))
                        .isTrue();
                for (int i = 0; i < n; i++) {
                    assertThat(runs.get(i)).as("runs of entry %d", i).isLessThanOrEqualTo(1);
                    if (notRunAtCancel[i]) {
                        assertThat(runs.get(i))
                                .as("entry %d, cancelled before it ran", i)
                                .isZero();
                    }
                }
                assertThat(timer.pending()).isZero();
            }
        } finally {
            canceller.shutdownNow();
            executor.shutdownNow();
        }
    }

    @Test
    void closingDropsEveryEntryAndAnEntryScheduledAfterwardsFromAnotherThreadNeverRuns() throws Exception {
        List<Long> alarms = new CopyOnWriteArrayList<>();
        LeaseTimer timer = new LeaseTimer(recordingDelays(alarms), time);
        List<String> ran = new CopyOnWriteArrayList<>();
        timer.schedule(() -> ran.add("before close"), ms(100));
        timer.close();
        assertThat(timer.pending()).as("entries left after close").isZero();

        // A renewal re-armed by a worker thread while the service closes.
        ExecutorService other = Executors.newSingleThreadExecutor();
        try {
            Future<?> late = other.submit(() -> timer.schedule(() -> ran.add("after close"), ms(50))
                    .cancel()); // an entry that can be cancelled like any other
            late.get(FakeTime.PATIENCE.toMillis(), TimeUnit.MILLISECONDS);
        } finally {
            other.shutdownNow();
        }
        time.advance(Duration.ofSeconds(1));
        assertThat(ran).isEmpty();
        assertThat(alarms).as("alarms set").containsExactly(ms(100));
    }

    private static long ms(long millis) {
        return TimeUnit.MILLISECONDS.toNanos(millis);
    }

    /** The fake timer, recording the delay of every task set on it. */
    private ScheduledExecutorService recordingDelays(List<Long> delays) {
        ScheduledExecutorService delegate = time.scheduler();
        return (ScheduledExecutorService) Proxy.newProxyInstance(
                ScheduledExecutorService.class.getClassLoader(),
                new Class<?>[] {ScheduledExecutorService.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("schedule")) {
                        delays.add(((TimeUnit) args[2]).toNanos((Long) args[1]));
                    }
                    try {
                        return method.invoke(delegate, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }
}
