package dev.leasehold.faults;

import dev.leasehold.Lease;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What a scenario did, operation by operation, for {@link HistoryChecker}: each acquire, release,
 * loss signal, guarded write, effect and inspection with its process, key, grant (owner token and
 * fence), invoke and completion times and result, and the faults injected between them. Every time
 * is this JVM's {@link System#nanoTime()}, so the histories of one run share one clock. Thread-safe.
 */
final class History {

    /** What an operation was. */
    enum Kind {
        /** A grant asked for; {@link Result#OK} with the grant's fence. */
        ACQUIRE,
        /** A grant given back; {@link Result#OK} when the store acknowledged it. */
        RELEASE,
        /** The holder was told its grant is gone ({@code onLost}); its completion is when. */
        LOST,
        /**
         * The holder's process was killed ({@code SIGKILL}); its completion is when it was gone.
         * Its grant ends there for its holder, who can do nothing after; the store frees the key
         * at the lease's expiry.
         */
        CRASHED,
        /** A write guarded by the grant's fence at a resource: {@link Result#OK} accepted, {@link Result#REFUSED}. */
        WRITE,
        /** What the store said holds the key: the fence seen (0: nobody). */
        INSPECT
    }

    /** How an operation ended. */
    enum Result {
        OK,
        /** Busy, or a fence refused: a definite no. */
        REFUSED,
        /** A failure or no answer: it may or may not have been applied. */
        UNKNOWN
    }

    /**
     * One operation.
     *
     * @param process who did it, such as {@code A} (the client behind the proxy)
     * @param kind what it was
     * @param key the lock key rendered
     * @param owner the grant's owner token ({@code null} for an inspection)
     * @param invokeNanos when it was invoked
     * @param completeNanos when it completed
     * @param fence the grant's fence, or the fence an inspection saw (0: none)
     * @param result how it ended
     * @param resource the guarded resource of a write, else {@code null}
     * @param effect the effect a write makes (a row id), else {@code null}
     */
    record Op(
            String process,
            Kind kind,
            String key,
            String owner,
            long invokeNanos,
            long completeNanos,
            long fence,
            Result result,
            String resource,
            String effect) {
        Op {
            Objects.requireNonNull(process, "process");
            Objects.requireNonNull(kind, "kind");
            Objects.requireNonNull(key, "key");
            Objects.requireNonNull(result, "result");
            if (completeNanos < invokeNanos) {
                throw new IllegalArgumentException("an operation completes after its invocation: " + this);
            }
        }

        /** The grant this operation belongs to: key, fence and owner. */
        String grant() {
            return key + "#" + fence + "#" + owner;
        }

        @Override
        public String toString() {
            return process + " " + kind + " " + key + " fence " + fence + " " + result
                    + (effect == null ? "" : " effect " + effect);
        }
    }

    /** A fault injected: what and when. */
    record Fault(String what, long atNanos) {}

    /**
     * Told of each operation as it is invoked and as it is recorded: how a child JVM streams its
     * operations to the parent's history ({@link ChildOps}), so that those in flight when it is
     * killed are known.
     */
    interface Journal {
        /** {@code pending} was invoked; its result and completion are not known yet. */
        void invoked(Op pending);

        /** {@code op} was recorded. */
        void recorded(Op op);
    }

    private final List<Op> ops = new ArrayList<>();
    private final List<Fault> faults = new ArrayList<>();
    private final Journal journal;

    History() {
        this(null);
    }

    /** A history that also tells {@code journal} (if not {@code null}) of each operation. */
    History(Journal journal) {
        this.journal = journal;
    }

    static long now() {
        return System.nanoTime();
    }

    void add(Op op) {
        synchronized (this) {
            ops.add(op);
        }
        if (journal != null) {
            journal.recorded(op);
        }
    }

    /**
     * Records nothing: tells the journal, if any, that {@code process} invoked an operation at
     * {@code invoke}, before it runs (its completion and result are unknown until it is added).
     */
    void invoking(
            String process,
            Kind kind,
            String key,
            String owner,
            long invoke,
            long fence,
            String resource,
            String effect) {
        if (journal != null) {
            journal.invoked(new Op(process, kind, key, owner, invoke, invoke, fence, Result.UNKNOWN, resource, effect));
        }
    }

    void add(
            String process,
            Kind kind,
            String key,
            String owner,
            long invoke,
            long fence,
            Result result,
            String resource,
            String effect) {
        add(new Op(process, kind, key, owner, invoke, now(), fence, result, resource, effect));
    }

    /** Records that {@code process}'s operation on {@code lease}, invoked at {@code invoke}, succeeded now. */
    void ok(String process, Kind kind, Lease lease, long invoke) {
        add(process, kind, lease.key().render(), lease.ownerToken(), invoke, lease.fence(), Result.OK, null, null);
    }

    /** Records that {@code process} was told its {@code lease} is lost, now; returns when. */
    long lost(String process, Lease lease) {
        long at = now();
        add(new Op(
                process,
                Kind.LOST,
                lease.key().render(),
                lease.ownerToken(),
                at,
                at,
                lease.fence(),
                Result.OK,
                null,
                null));
        return at;
    }

    synchronized void fault(String what) {
        faults.add(new Fault(what, now()));
    }

    synchronized int size() {
        return ops.size();
    }

    synchronized List<Op> ops() {
        return List.copyOf(ops);
    }

    synchronized List<Fault> faults() {
        return List.copyOf(faults);
    }
}
