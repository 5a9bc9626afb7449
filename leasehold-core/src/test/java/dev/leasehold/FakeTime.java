package dev.leasehold;

import java.time.Duration;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongFunction;

/**
 * Time that moves only when a test says so: a {@link Ticker} and a {@link ScheduledExecutorService}
 * whose tasks run on the test's thread, in due order, inside {@link #advance}. Thread-safe: other
 * threads may read the time and schedule tasks while the test advances it.
 */
final class FakeTime implements Ticker {

    /**
     * How long a test waits for another thread before it fails (real time): 5 s, or the
     * {@code leasehold.test.patience-ms} system property (the mutation gate sets it shorter).
     */
    static final Duration PATIENCE = Duration.ofMillis(Long.getLong("leasehold.test.patience-ms", 5000));

    private final ReentrantLock lock = new ReentrantLock();
    private final java.util.concurrent.locks.Condition added = lock.newCondition();
    private final AtomicLong now;
    private final AtomicLong sequence = new AtomicLong();
    private final PriorityQueue<Task> tasks = new PriorityQueue<>(); // guarded by lock
    private final Scheduler scheduler = new Scheduler();

    FakeTime() {
        this(1_000_000_000L);
    }

    /** Time that starts at {@code startNanos}: only differences between readings mean anything. */
    FakeTime(long startNanos) {
        this.now = new AtomicLong(startNanos);
    }

    @Override
    public long nanos() {
        return now.get();
    }

    /** The scheduler to give the engine; its tasks run only in {@link #advance}. */
    ScheduledExecutorService scheduler() {
        return scheduler;
    }

    /** Moves time forward, running every task that falls due on the way, at its due time. */
    void advance(Duration by) {
        long target = now.get() + by.toNanos();
        while (true) {
            Task next;
            lock.lock();
            try {
                next = tasks.peek();
                if (next == null || next.at > target) {
                    now.set(target);
                    return;
                }
                tasks.poll();
                if (next.at > now.get()) {
                    now.set(next.at);
                }
            } finally {
                lock.unlock();
            }
            next.runIfLive();
        }
    }

    /** Runs the tasks due now (scheduled with no delay by another thread, for instance). */
    void runDue() {
        advance(Duration.ZERO);
    }

    /** Moves the ticker without running any task: what a late timer thread would look like. */
    void advanceTickerOnly(Duration by) {
        now.addAndGet(by.toNanos());
    }

    /** How many live tasks are waiting to fall due. */
    int pendingTasks() {
        lock.lock();
        try {
            return (int) tasks.stream().filter(t -> !t.isCancelled()).count();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits (5 s of real time at most, then fails) until a live task falls due no later than
     * {@code within} from now: a sleeping waiter's alarm, for instance.
     */
    void awaitTaskDueWithin(Duration within) {
        awaitTasksDueWithin(1, within);
    }

    /** Whether {@code count} live tasks fall due within {@code within} now (no waiting). */
    boolean hasTasksDueWithin(int count, Duration within) {
        lock.lock();
        try {
            return liveTasksDueWithin(now.get(), within) >= count;
        } finally {
            lock.unlock();
        }
    }

    /** Live tasks due no later than {@code within} after {@code current}; under the lock. */
    private long liveTasksDueWithin(long current, Duration within) {
        long limit = current + within.toNanos();
        return tasks.stream().filter(t -> !t.isCancelled() && t.at <= limit).count();
    }

    /** As {@link #awaitTaskDueWithin}, for {@code count} live tasks (several sleeping waiters). */
    void awaitTasksDueWithin(int count, Duration within) {
        awaitUnderLock(within, current -> liveTasksDueWithin(current, within) >= count ? Boolean.TRUE : null);
    }

    /**
     * Waits (5 s of real time at most, then fails) until a live task falls due no later than
     * {@code within} from now, and tells how far away the earliest live task is: when a waiter's
     * alarm or a renewal is set, for instance.
     */
    Duration awaitEarliestTaskWithin(Duration within) {
        // The wait and the reading under one hold of the lock: a task seen due within the limit
        // may be cancelled as soon as the lock is let go (a store call's deadline, once answered).
        return awaitUnderLock(within, current -> {
            long earliest = tasks.stream()
                    .filter(t -> !t.isCancelled())
                    .mapToLong(t -> t.at)
                    .min()
                    .orElse(Long.MAX_VALUE);
            return earliest != Long.MAX_VALUE && earliest <= current + within.toNanos()
                    ? Duration.ofNanos(earliest - current)
                    : null;
        });
    }

    /**
     * Holding the lock, asks {@code probe} (given the fake now) until it answers non-null, waking
     * whenever a task is added; fails after {@link #PATIENCE} of real time.
     */
    private <T> T awaitUnderLock(Duration within, LongFunction<T> probe) {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        lock.lock();
        try {
            while (true) {
                T answer = probe.apply(now.get());
                if (answer != null) {
                    return answer;
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new AssertionError("no task fell due within " + within + " in 5 s of waiting");
                }
                added.awaitNanos(Math.min(left, TimeUnit.MILLISECONDS.toNanos(20)));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        } finally {
            lock.unlock();
        }
    }

    private Task add(Runnable body, long delayNanos, long period) {
        Task task = new Task(body, now.get() + Math.max(0, delayNanos), period, sequence.incrementAndGet());
        lock.lock();
        try {
            tasks.add(task);
            added.signalAll();
        } finally {
            lock.unlock();
        }
        return task;
    }

    private final class Task implements ScheduledFuture<Object> {
        final Runnable body;
        volatile long at;
        final long period; // > 0: fixed delay, re-added after each run
        final long seq;
        final AtomicBoolean cancelled = new AtomicBoolean();
        final AtomicBoolean done = new AtomicBoolean();

        Task(Runnable body, long at, long period, long seq) {
            this.body = body;
            this.at = at;
            this.period = period;
            this.seq = seq;
        }

        void runIfLive() {
            if (cancelled.get()) {
                return;
            }
            try {
                body.run();
            } finally {
                if (period > 0 && !cancelled.get()) {
                    lock.lock();
                    try {
                        at = now.get() + period;
                        tasks.add(this);
                    } finally {
                        lock.unlock();
                    }
                } else {
                    done.set(true);
                }
            }
        }

        @Override
        public long getDelay(TimeUnit unit) {
            return unit.convert(at - now.get(), TimeUnit.NANOSECONDS);
        }

        @Override
        public int compareTo(Delayed o) {
            Task other = (Task) o;
            int byTime = Long.compare(at, other.at);
            return byTime != 0 ? byTime : Long.compare(seq, other.seq);
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            return cancelled.compareAndSet(false, true);
        }

        @Override
        public boolean isCancelled() {
            return cancelled.get();
        }

        @Override
        public boolean isDone() {
            return cancelled.get() || done.get();
        }

        @Override
        public Object get() {
            throw new UnsupportedOperationException("fake scheduler futures are not awaited");
        }

        @Override
        public Object get(long timeout, TimeUnit unit) {
            throw new UnsupportedOperationException("fake scheduler futures are not awaited");
        }
    }

    private final class Scheduler extends AbstractExecutorService implements ScheduledExecutorService {
        private volatile boolean shutdown;

        @Override
        public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
            check();
            return add(command, unit.toNanos(delay), 0);
        }

        @Override
        public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
            throw new UnsupportedOperationException("not used by the engine");
        }

        @Override
        public ScheduledFuture<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period, TimeUnit unit) {
            return scheduleWithFixedDelay(command, initialDelay, period, unit);
        }

        @Override
        public ScheduledFuture<?> scheduleWithFixedDelay(
                Runnable command, long initialDelay, long delay, TimeUnit unit) {
            check();
            return add(command, unit.toNanos(initialDelay), Math.max(1, unit.toNanos(delay)));
        }

        private void check() {
            if (shutdown) {
                throw new java.util.concurrent.RejectedExecutionException("fake scheduler shut down");
            }
        }

        @Override
        public void shutdown() {
            shutdown = true;
        }

        @Override
        public List<Runnable> shutdownNow() {
            shutdown = true;
            return List.of();
        }

        @Override
        public boolean isShutdown() {
            return shutdown;
        }

        @Override
        public boolean isTerminated() {
            return shutdown;
        }

        @Override
        public boolean awaitTermination(long timeout, TimeUnit unit) {
            return true;
        }

        @Override
        public void execute(Runnable command) {
            schedule(command, 0, TimeUnit.NANOSECONDS);
        }
    }
}
