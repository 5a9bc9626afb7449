package dev.leasehold;

import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spi.PartialRenewalException;
import dev.leasehold.spi.Renewal;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Gathers the renewals that fall due into {@link LeaseStore#renewAll} calls of at most the store's
 * batch limit: a renewal waits at most its window (a thirtieth of its lease time, at most 50 ms)
 * for others to join it, and a full batch leaves at once. Each lease then learns its own answer.
 * Thread-safe: leases join from the timer; batches run on the renewal workers, never on the timer.
 */
final class RenewalBatches {

    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(RenewalBatches.class);

    /** The longest a renewal waits for others to join its batch. */
    static final long MAX_WINDOW_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    /**
     * A renewal that fell due at {@code dueNanos}. The lease cancels it with interruption when it is
     * lost: once no lease of its store call wants an answer any more, the call is interrupted, which
     * frees its worker from a store that does not answer.
     */
    private static final class Due implements Future<Void> {
        private final HeldLease lease;
        private final long dueNanos;
        private volatile InFlight call; // the store call it went out in, once sent

        Due(HeldLease lease, long dueNanos) {
            this.lease = lease;
            this.dueNanos = dueNanos;
        }

        HeldLease lease() {
            return lease;
        }

        long dueNanos() {
            return dueNanos;
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            InFlight sent = call;
            if (mayInterruptIfRunning && sent != null) {
                sent.interruptIfUnwanted();
            }
            return false;
        }

        @Override
        public boolean isCancelled() {
            return false;
        }

        @Override
        public boolean isDone() {
            InFlight sent = call;
            return sent != null && sent.ended();
        }

        @Override
        public Void get() {
            throw new UnsupportedOperationException("a batched renewal is not waited for");
        }

        @Override
        public Void get(long timeout, TimeUnit unit) {
            throw new UnsupportedOperationException("a batched renewal is not waited for");
        }
    }

    /** A store call in flight on a worker, interrupted once none of its leases wants its answer. */
    private static final class InFlight {
        private final Thread worker = Thread.currentThread();
        private final List<Due> dues;
        private final ReentrantLock lock = new ReentrantLock(); // an interrupt and the call's end, one at a time
        private boolean interrupted; // guarded by lock
        private volatile boolean ended; // written under lock

        InFlight(List<Due> dues) {
            this.dues = dues;
        }

        void interruptIfUnwanted() {
            lock.lock();
            try {
                if (!ended
                        && !interrupted
                        && dues.stream().noneMatch(due -> due.lease().renewalWanted())) {
                    interrupted = true;
                    worker.interrupt();
                }
            } finally {
                lock.unlock();
            }
        }

        boolean ended() {
            return ended;
        }

        /** On the worker, after the call: an interrupt meant for this call does not reach the next. */
        void end() {
            lock.lock();
            try {
                ended = true;
                if (interrupted) {
                    Thread.interrupted();
                }
            } finally {
                lock.unlock();
            }
        }
    }

    private final LeaseStore store;
    private final int limit;
    private final LeaseHost host;
    private final EngineThreads threads;
    private final ConcurrentLinkedQueue<Due> queue = new ConcurrentLinkedQueue<>();
    private final AtomicInteger queued = new AtomicInteger();
    /** Whether a worker has been asked to send full batches and has not started yet. */
    private final AtomicBoolean fullBatchDue = new AtomicBoolean();
    /** When the next gathered batch leaves; {@code Long.MAX_VALUE} when none is set. */
    private final AtomicLong leavesAt = new AtomicLong(Long.MAX_VALUE);

    RenewalBatches(LeaseStore store, int limit, LeaseHost host, EngineThreads threads) {
        this.store = store;
        this.limit = limit;
        this.host = host;
        this.threads = threads;
    }

    /** How long a renewal of a lease of {@code leaseForNanos} waits for others at most. */
    static long window(long leaseForNanos) {
        return Math.max(1, Math.min(MAX_WINDOW_NANOS, leaseForNanos / 30));
    }

    /**
     * Queues the lease's renewal, which fell due now. On the timer: never calls the store.
     *
     * @return the renewal, for the lease to cancel with interruption when it is lost
     * @throws RejectedExecutionException once the service is closing
     */
    Future<?> add(HeldLease lease, long windowNanos) {
        long now = host.nanos();
        Due added = new Due(lease, now);
        queue.add(added);
        if (queued.incrementAndGet() >= limit && fullBatchDue.compareAndSet(false, true)) {
            threads.submitRenewal(this::sendFullBatches);
        }
        // Whatever a full batch leaves behind goes at the latest when this renewal's window ends.
        long at = now + windowNanos;
        while (true) {
            long current = leavesAt.get();
            if (current != Long.MAX_VALUE && current - at <= 0) {
                return added; // a batch that leaves no later than this renewal's window is set
            }
            if (leavesAt.compareAndSet(current, at)) {
                host.schedule(this::windowEnds, windowNanos);
                return added;
            }
        }
    }

    /** On the timer: hand the gathered renewals to a worker. */
    private void windowEnds() {
        try {
            threads.submitRenewal(this::sendAll);
        } catch (RejectedExecutionException e) {
            // The service is closing.
        }
    }

    /** On a renewal worker: sends full batches while there are enough renewals queued for one. */
    private void sendFullBatches() {
        fullBatchDue.set(false); // a renewal that fills a batch from now on asks for a worker again
        while (queued.get() >= limit) {
            if (!sendNext()) {
                return;
            }
        }
    }

    /** On a renewal worker, when a window ends: sends everything queued; a second worker helps with a backlog. */
    private void sendAll() {
        leavesAt.set(Long.MAX_VALUE); // a renewal queued from now on sets a window of its own
        while (sendNext()) {
            if (queued.get() >= limit && fullBatchDue.compareAndSet(false, true)) {
                try {
                    threads.submitRenewal(this::sendFullBatches);
                } catch (RejectedExecutionException e) {
                    return; // the service is closing
                }
            }
        }
    }

    /** Sends up to a batch of the queued renewals; false when none was queued. */
    private boolean sendNext() {
        List<Due> batch = new ArrayList<>(Math.min(limit, Math.max(1, queued.get())));
        Due due;
        while (batch.size() < limit && (due = queue.poll()) != null) {
            queued.decrementAndGet();
            batch.add(due);
        }
        if (batch.isEmpty()) {
            return false;
        }
        send(batch);
        return true;
    }

    private void send(List<Due> batch) {
        List<Due> live = new ArrayList<>(batch.size());
        List<Renewal> renewals = new ArrayList<>(batch.size());
        for (Due due : batch) {
            if (due.lease().renewalWanted()) {
                live.add(due);
                renewals.add(due.lease().renewal());
            }
        }
        if (live.isEmpty()) {
            return;
        }
        long sent = host.nanos();
        List<Optional<Grant>> answers = new ArrayList<>(live.size());
        List<RuntimeException> failures = new ArrayList<>(live.size()); // null where answered
        InFlight call = new InFlight(live);
        live.forEach(due -> due.call = call);
        call.interruptIfUnwanted(); // every lease was lost meanwhile: the call fails at once
        try {
            answers.addAll(store.renewAll(renewals));
            if (answers.size() != renewals.size()) {
                throw new LeaseStoreException(
                        "renew",
                        renewals.size() + " leases",
                        new IllegalStateException(
                                "the store answered " + answers.size() + " of " + renewals.size() + " renewals"));
            }
            answers.forEach(answer -> failures.add(null));
        } catch (PartialRenewalException e) {
            if (e.size() != live.size()) {
                failAll(live, e);
                return;
            }
            // Each lease has its own outcome: the answered ones count although others failed.
            answers.clear();
            for (int i = 0; i < live.size(); i++) {
                answers.add(e.answer(i));
                failures.add(e.failure(i));
            }
        } catch (Throwable e) {
            failAll(live, e);
            if (e instanceof VirtualMachineError error) {
                throw error;
            }
            return;
        } finally {
            call.end();
        }
        for (int i = 0; i < live.size(); i++) {
            Due due = live.get(i);
            Optional<Grant> answer = answers.get(i);
            try {
                if (failures.get(i) != null) {
                    due.lease().renewalFailed(failures.get(i));
                } else if (answer == null) {
                    due.lease()
                            .renewalFailed(new LeaseStoreException(
                                    "renew",
                                    due.lease().key.render(),
                                    new IllegalStateException("the store gave no answer")));
                } else {
                    due.lease().renewed(sent, due.dueNanos(), answer);
                }
            } catch (RuntimeException e) {
                // One lease's bookkeeping never keeps the rest of the batch from their answers.
                log.warn("handling the renewal of {} failed", due.lease().key, e);
            }
        }
    }

    private static void failAll(List<Due> live, Throwable e) {
        for (Due due : live) {
            due.lease().renewalFailed(e);
        }
    }
}
