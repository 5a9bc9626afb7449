package dev.leasehold;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The held leases' timed work (a renewal falling due, an expiry watch) on ONE alarm of the engine's
 * timer, set for the earliest of them. A timer task per lease would give the timer a new earliest
 * task, so a wake-up of its thread, at nearly every acquire, and a removal at every release; here
 * an acquire adds an entry to a sorted set, and the alarm is set again only when the new entry is
 * due before it. A cancelled entry leaves the set at once; the alarm stays set, and when it rings
 * it runs what is due and is set for the earliest entry left, or not at all when none is left.
 * Entries run on the timer thread in due order and, like timer tasks, only decide: they never call
 * the store.
 */
final class LeaseTimer {

    private static final Logger log = LoggerFactory.getLogger(LeaseTimer.class);

    private final ScheduledExecutorService timer;
    private final Ticker ticker;
    private final ConcurrentSkipListSet<Entry> entries = new ConcurrentSkipListSet<>();
    private final AtomicLong sequence = new AtomicLong();
    private final ReentrantLock arming = new ReentrantLock();
    private volatile boolean armed; // written under arming
    private volatile long armedAt; // written under arming; meaningful while armed
    private ScheduledFuture<?> alarm; // guarded by arming
    private long generation; // guarded by arming: which alarm is the current one
    private volatile boolean closed; // written under arming

    LeaseTimer(ScheduledExecutorService timer, Ticker ticker) {
        this.timer = timer;
        this.ticker = ticker;
    }

    private static final int PENDING = 0;
    private static final int RAN = 1;
    private static final int CANCELLED = 2;
    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(Entry.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** One piece of timed work; {@link #cancel} takes it out before it runs. */
    final class Entry implements Comparable<Entry> {
        private final long due;
        private final long order;
        private final Runnable task;
        private volatile int state = PENDING;

        private Entry(long due, long order, Runnable task) {
            this.due = due;
            this.order = order;
            this.task = task;
        }

        /** When it runs, on the ticker's clock. */
        long due() {
            return due;
        }

        /** Whether it has run (or is running): cancelling it then looks for nothing. */
        boolean ran() {
            return state == RAN;
        }

        void cancel() {
            // Once it ran it is out of the set: no search. A cancel and a run race for the state.
            if (STATE.compareAndSet(this, PENDING, CANCELLED)) {
                entries.remove(this);
            }
        }

        /** By due time, then by order of scheduling (the set compares, never calls equals). */
        @Override
        public int compareTo(Entry other) {
            int byTime = Long.signum(due - other.due);
            return byTime != 0 ? byTime : Long.compare(order, other.order);
        }
    }

    /** Runs {@code task} on the timer thread once {@code delayNanos} have passed, unless cancelled. */
    Entry schedule(Runnable task, long delayNanos) {
        return scheduleAt(task, ticker.nanos() + Math.max(0, delayNanos));
    }

    /**
     * Runs {@code task} on the timer thread at {@code atNanos} on the ticker's clock (at once if
     * that has passed), unless cancelled; the entry's {@link Entry#due} is {@code atNanos}.
     */
    Entry scheduleAt(Runnable task, long atNanos) {
        Entry entry = new Entry(atNanos, sequence.incrementAndGet(), task);
        entries.add(entry);
        // Added before the alarm is read: an alarm that rings meanwhile sees the entry when it
        // looks for the next one, or this call sees that nothing is set and sets the alarm.
        if (!armed || entry.due - armedAt < 0) {
            arm(entry.due);
        }
        return entry;
    }

    private void arm(long due) {
        arming.lock();
        try {
            if (closed || (armed && due - armedAt >= 0)) {
                return;
            }
            // The new alarm first: if the timer refuses or fails, the alarm that is set stays set
            // (cancelled first, the entries after it would wait for an alarm that never rings).
            long mine = generation + 1;
            ScheduledFuture<?> next;
            try {
                next = timer.schedule(() -> ring(mine), Math.max(0, due - ticker.nanos()), TimeUnit.NANOSECONDS);
            } catch (RejectedExecutionException e) {
                return; // the service is closing
            }
            generation = mine;
            if (alarm != null) {
                alarm.cancel(false);
            }
            alarm = next;
            armedAt = due;
            armed = true;
        } finally {
            arming.unlock();
        }
    }

    /** On the timer: runs every entry due by now, then sets the alarm for the earliest one left. */
    private void ring(long which) {
        arming.lock();
        try {
            if (which != generation) {
                return; // replaced by an earlier alarm, which runs what is due
            }
            armed = false;
            alarm = null;
        } finally {
            arming.unlock();
        }
        long now = ticker.nanos();
        while (true) {
            // Taken from the head (no search); the first one not yet due goes back.
            Entry first = entries.pollFirst();
            if (first == null) {
                return;
            }
            if (first.due - now > 0) {
                entries.add(first);
                if (first.state == CANCELLED || closed) {
                    entries.remove(first); // cancelled, or the timer closed, while it was out of the set
                }
                arm(first.due);
                return;
            }
            if (!STATE.compareAndSet(first, PENDING, RAN)) {
                continue; // cancelled
            }
            try {
                first.task.run();
            } catch (RuntimeException | Error e) {
                // Whatever one lease's work throws, the others' still run and the alarm is set
                // again.
                log.warn("a lease's timed work failed; ignored", e);
            }
        }
    }

    /** Entries scheduled since the timer was made (the tests count what a renewal costs). */
    long scheduled() {
        return sequence.get();
    }

    /** Entries waiting to run. */
    int pending() {
        return entries.size();
    }

    /** Drops every entry and the alarm (the engine closes; a timer given by the caller stays clean). */
    void close() {
        arming.lock();
        try {
            closed = true;
            armed = false;
            if (alarm != null) {
                alarm.cancel(false);
                alarm = null;
            }
            entries.clear();
        } finally {
            arming.unlock();
        }
    }
}
