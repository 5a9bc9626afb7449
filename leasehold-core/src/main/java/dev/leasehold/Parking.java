package dev.leasehold;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * How engine threads wait: {@link LockSupport#park} until a condition holds or an alarm set on the
 * engine's timer rings. No monitor is held while parked, so a virtual thread that waits here
 * unmounts from its carrier; and the timer, not the wall clock, decides when a wait is over, so a
 * fake timer drives every wait in tests. On the system's clock ({@link Ticker#system()}) the thread
 * parks for the time left instead ({@link LockSupport#parkNanos}): the same wait without a timer
 * task set and cancelled, and a wake-up of the timer thread, per wait.
 */
final class Parking {

    private final ScheduledExecutorService timer;
    private final Ticker ticker;

    Parking(ScheduledExecutorService timer, Ticker ticker) {
        this.timer = timer;
        this.ticker = ticker;
    }

    long now() {
        return ticker.nanos();
    }

    /**
     * Parks the current thread until {@code done} holds or the ticker reaches {@code deadline}.
     * Whoever makes {@code done} true unparks the thread. Callers read their own condition
     * afterwards (it may turn true just after the alarm rang).
     *
     * @throws InterruptedException if the thread is interrupted meanwhile
     */
    void parkUntil(BooleanSupplier done, long deadline) throws InterruptedException {
        long delay = deadline - ticker.nanos();
        if (done.getAsBoolean() || delay <= 0) {
            return;
        }
        if (ticker == SystemTicker.INSTANCE) {
            parkNanosUntil(done, deadline);
            return;
        }
        Thread me = Thread.currentThread();
        AtomicBoolean rang = new AtomicBoolean();
        ScheduledFuture<?> alarm;
        try {
            alarm = timer.schedule(
                    () -> {
                        rang.set(true);
                        LockSupport.unpark(me);
                    },
                    delay,
                    TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            throw new IllegalStateException("the lock service is closed", e);
        }
        try {
            while (!done.getAsBoolean() && !rang.get()) {
                LockSupport.park(this);
                if (Thread.interrupted()) {
                    throw new InterruptedException("interrupted while waiting for a lease");
                }
            }
        } finally {
            alarm.cancel(false);
        }
    }

    private void parkNanosUntil(BooleanSupplier done, long deadline) throws InterruptedException {
        long left;
        while (!done.getAsBoolean() && (left = deadline - ticker.nanos()) > 0) {
            LockSupport.parkNanos(this, left);
            if (Thread.interrupted()) {
                throw new InterruptedException("interrupted while waiting for a lease");
            }
        }
    }
}
