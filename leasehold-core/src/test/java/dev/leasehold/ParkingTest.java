package dev.leasehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Waiting on the system's clock: the thread parks for the time left, the engine's timer is never
 * asked; nor is it for a wait whose deadline has come.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class ParkingTest {

    /** A timer that fails the test if anything is scheduled on it. */
    private static ScheduledExecutorService untouchableTimer() {
        return (ScheduledExecutorService) java.lang.reflect.Proxy.newProxyInstance(
                ScheduledExecutorService.class.getClassLoader(),
                new Class<?>[] {ScheduledExecutorService.class},
                (proxy, method, args) -> {
                    throw new AssertionError("the timer was asked: " + method.getName());
                });
    }

    private final Parking parking = new Parking(untouchableTimer(), Ticker.system());

    @Test
    void onTheSystemClockAWaitEndsAtItsDeadlineOrWhenTheConditionHolds() throws Exception {
        // the deadline: a short wait with a condition that never holds returns once it passed
        long deadline = parking.now() + Duration.ofMillis(20).toNanos();
        parking.parkUntil(() -> false, deadline);
        assertThat(parking.now() - deadline)
                .as("returned at or after its deadline")
                .isNotNegative();

        // the condition: a wait of an hour ends when another thread makes it true and unparks it
        AtomicBoolean done = new AtomicBoolean();
        Thread[] waiter = new Thread[1];
        CompletableFuture<Boolean> waited = new CompletableFuture<>();
        waiter[0] = new Thread(() -> {
            try {
                parking.parkUntil(done::get, parking.now() + Duration.ofHours(1).toNanos());
                waited.complete(done.get());
            } catch (Throwable e) {
                waited.completeExceptionally(e);
            }
        });
        waiter[0].start();
        done.set(true);
        while (!waited.isDone()) {
            LockSupport.unpark(waiter[0]);
            Thread.onSpinWait();
        }
        assertThat(waited.get()).isTrue();
    }

    @Test
    void aWaitWhoseDeadlineHasComeReturnsWithoutSettingAnAlarm() throws Exception {
        // On a ticker of its own (fake time), where a wait would set an alarm on the timer: none
        // is set for a deadline of now, so such a wait neither costs a timer task nor fails on a
        // timer already shut down.
        FakeTime time = new FakeTime();
        Parking onFakeTime = new Parking(untouchableTimer(), time);
        onFakeTime.parkUntil(() -> false, time.nanos());
        onFakeTime.parkUntil(() -> false, time.nanos() - 1);
    }

    @Test
    void onTheSystemClockAnInterruptEndsTheWait() {
        Thread.currentThread().interrupt();
        assertThatThrownBy(() -> parking.parkUntil(
                        () -> false, parking.now() + Duration.ofHours(1).toNanos()))
                .isInstanceOf(InterruptedException.class);
        assertThat(Thread.interrupted())
                .as("the flag is consumed by the exception")
                .isFalse();
    }
}
