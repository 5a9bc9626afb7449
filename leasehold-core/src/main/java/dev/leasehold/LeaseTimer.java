package dev.leasehold;

import java.util.Comparator;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The held leases' timed work (a renewal falling due, an expiry watch) on ONE alarm of the engine's
 * timer, set for the earliest of them. A timer task per lease would give the timer a new earliest
 * task, so a wake-up of its thread, at nearly every acquire, and a removal at every release; here
 * an acquire adds an entry, and the alarm is set again only when the new entry is due before it.
 * Entries due at the same instant share one bucket of a sorted map: leases renewed in one batch
 * fall due together again (see {@link HeldLease}), so with many held leases the sorted map holds a
 * bucket per batch rather than an entry per lease, and adding or cancelling an entry is a link in
 * its bucket's list. A cancelled entry leaves its bucket at once (and an emptied bucket the map);
 * the alarm stays set, and when it rings it runs what is due and is set for the earliest entry
 * left, or not at all when none is left. Entries run on the timer thread in due order, entries due
 * together in the order they were scheduled, and, like timer tasks, only decide: they never call
 * the store.
 */
final class LeaseTimer {

    private static final Logger log = LoggerFactory.getLogger(LeaseTimer.class);

    /** Due instants of the ticker, compared as the ticker's differences are (it may wrap). */
    private static final Comparator<Long> BY_DUE = (a, b) -> Long.signum(a - b);

    private final ScheduledExecutorService timer;
    private final Ticker ticker;
    private final ConcurrentSkipListMap<Long, Bucket> buckets = new ConcurrentSkipListMap<>(BY_DUE);
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

    /** One piece of timed work; {@link #cancel} takes it out before it runs. */
    final class Entry {
        private final long due;
        private final Runnable task;
        private volatile Bucket bucket; // set once, under that bucket's lock, before the entry is published
        private Entry previous; // guarded by the bucket's lock
        private Entry next; // guarded by the bucket's lock
        private boolean linked; // guarded by the bucket's lock

        private Entry(long due, Runnable task) {
            this.due = due;
            this.task = task;
        }

        void cancel() {
            Bucket in = bucket;
            if (in == null) {
                return; // scheduled after the timer closed: never linked
            }
            boolean emptied;
            in.lock();
            try {
                if (!linked) {
                    return; // ran, or cancelled before
                }
                in.unlink(this);
                emptied = in.closeIfEmpty();
            } finally {
                in.unlock();
            }
            if (emptied) {
                buckets.remove(in.due, in);
            }
        }
    }

    /**
     * The entries due at one instant, in the order they were scheduled. Once closed (emptied by a
     * cancel or by the alarm) it takes no entry: it is on its way out of the map.
     */
    @SuppressWarnings("serial") // never serialized
    private static final class Bucket extends ReentrantLock {
        final long due;
        private Entry head; // guarded by this lock
        private Entry tail; // guarded by this lock
        private int size; // guarded by this lock
        private boolean closed; // guarded by this lock

        Bucket(long due) {
            this.due = due;
        }

        /** False if the bucket is closed: the caller takes another. Called holding this lock. */
        boolean append(Entry entry) {
            if (closed) {
                return false;
            }
            entry.bucket = this;
            entry.previous = tail;
            if (tail == null) {
                head = entry;
            } else {
                tail.next = entry;
            }
            tail = entry;
            entry.linked = true;
            size++;
            return true;
        }

        /** Called holding this lock. */
        void unlink(Entry entry) {
            if (entry.previous == null) {
                head = entry.next;
            } else {
                entry.previous.next = entry.next;
            }
            if (entry.next == null) {
                tail = entry.previous;
            } else {
                entry.next.previous = entry.previous;
            }
            entry.previous = null;
            entry.next = null;
            entry.linked = false;
            size--;
        }

        /** The first entry, taken out, or null when none is left (the bucket is then closed). */
        Entry poll() {
            lock();
            try {
                Entry first = head;
                if (first == null) {
                    closed = true;
                    return null;
                }
                unlink(first);
                return first;
            } finally {
                unlock();
            }
        }

        /** Closes the bucket if it has no entry left; called holding this lock. */
        boolean closeIfEmpty() {
            if (head == null) {
                closed = true;
            }
            return closed;
        }

        int size() {
            lock();
            try {
                return size;
            } finally {
                unlock();
            }
        }
    }

    /** Runs {@code task} on the timer thread once {@code delayNanos} have passed, unless cancelled. */
    Entry schedule(Runnable task, long delayNanos) {
        Entry entry = new Entry(ticker.nanos() + Math.max(0, delayNanos), task);
        if (closed) {
            return entry; // never runs; cancel() finds it unlinked
        }
        while (true) {
            Bucket bucket = buckets.computeIfAbsent(entry.due, Bucket::new);
            bucket.lock();
            try {
                if (bucket.append(entry)) {
                    break;
                }
            } finally {
                bucket.unlock();
            }
            buckets.remove(entry.due, bucket); // closed meanwhile: out of the way, then a new one
        }
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
            Map.Entry<Long, Bucket> first = buckets.firstEntry();
            if (first == null) {
                return;
            }
            Bucket bucket = first.getValue();
            if (bucket.due - now > 0) {
                arm(bucket.due);
                return;
            }
            Entry due = bucket.poll();
            if (due == null) {
                buckets.remove(bucket.due, bucket);
                continue;
            }
            if (closed) {
                return; // closed while this ring ran: nothing more runs
            }
            try {
                due.task.run();
            } catch (RuntimeException | Error e) {
                // Whatever one lease's work throws, the others' still run and the alarm is set
                // again.
                log.warn("a lease's timed work failed; ignored", e);
            }
        }
    }

    /** Instants with entries waiting to run (for tests). */
    int buckets() {
        return buckets.size();
    }

    /** Entries waiting to run. */
    int pending() {
        int pending = 0;
        for (Bucket bucket : buckets.values()) {
            pending += bucket.size();
        }
        return pending;
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
            buckets.clear();
        } finally {
            arming.unlock();
        }
    }
}
