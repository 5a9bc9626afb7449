package dev.leasehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.leasehold.ScriptedStore.Op;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
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
}
