package dev.leasehold.jdbc;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/** The daemon thread behind a release feed: started on first use, paused and stopped promptly. */
abstract class FeedThread {

    /** Guards the thread and whatever state a subclass signals on {@link #changed}. */
    protected final ReentrantLock lock = new ReentrantLock();

    /** Signalled on close and on any state change a subclass announces. */
    protected final Condition changed = lock.newCondition();

    protected volatile boolean closed;
    private Thread thread; // guarded by lock

    /** The thread's work; returns when {@link #closed}. */
    protected abstract void run();

    /** Starts the thread if it is not running. Call with {@link #lock} held. */
    protected void startIfNeeded(String name) {
        if (closed) {
            throw new IllegalStateException("the lease store is closed");
        }
        if (thread == null) {
            thread = new Thread(this::run, name);
            thread.setDaemon(true);
            thread.start();
        }
    }

    /** Waits up to {@code nanos}, returning early on close. */
    protected void pause(long nanos) {
        lock.lock();
        try {
            long left = nanos;
            while (left > 0 && !closed) {
                left = changed.awaitNanos(left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            closed = true;
        } finally {
            lock.unlock();
        }
    }

    /** Stops the thread and waits (a few seconds at most) for it to end. */
    protected void stop() {
        Thread running;
        lock.lock();
        try {
            closed = true;
            running = thread;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        if (running != null && running != Thread.currentThread()) {
            try {
                running.join(TimeUnit.SECONDS.toMillis(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
