package dev.leasehold.idempotency;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import java.sql.Connection;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Executes a request at most once per idempotency key: it claims the request record, then the
 * session lease (never waiting for either), runs the work while a heartbeat renews the claim, stores
 * the response and releases the session lease on every path. A replay, a request in progress and a
 * payload mismatch return at once without running anything. {@link #executeInTransaction} commits
 * the SUCCESS mark with the work's own write; {@link #start} gives the same steps to a caller that
 * manages the transaction itself (for example through a transaction manager's synchronization). How
 * it works and which tests prove it: {@code docs/design/idempotency.md}. Thread-safe. Close it to
 * stop its heartbeats.
 */
public final class IdempotentExecutor implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(IdempotentExecutor.class);

    private final RequestRecords records;
    private final LockService locks;
    private final HeartbeatPool heartbeats;

    /** An executor over {@code records}, taking session leases from {@code locks}, with 4 heartbeat threads. */
    public IdempotentExecutor(RequestRecords records, LockService locks) {
        this(builder(records, locks));
    }

    private IdempotentExecutor(Builder builder) {
        this.records = builder.records;
        this.locks = builder.locks;
        this.heartbeats = new HeartbeatPool(builder.heartbeatThreads);
    }

    /** A builder of an executor over {@code records}, taking session leases from {@code locks}. */
    public static Builder builder(RequestRecords records, LockService locks) {
        return new Builder(records, locks);
    }

    /** How many heartbeats failed (a database error or a lock wait that timed out) since the start. */
    public long heartbeatFailures() {
        return heartbeats.failures();
    }

    /**
     * One submission of a request.
     *
     * @param scope the key space (chat session, tenant and caller)
     * @param clientKey the client's idempotency key
     * @param fingerprint {@link CanonicalJson#fingerprint} of the payload
     * @param sessionKey the session to serialise on, or null for none
     * @param sessionLease how long the session lease lasts between renewals
     */
    public record Submission(
            String scope, String clientKey, String fingerprint, LockKey sessionKey, Duration sessionLease) {

        /** Checks the lease duration. */
        public Submission {
            Objects.requireNonNull(sessionLease, "sessionLease is missing (null)");
        }
    }

    /** The work of a request; returns the response to store and replay. */
    @FunctionalInterface
    public interface RequestWork {
        /** Runs the request. */
        StoredResponse run(RequestContext context) throws Exception;
    }

    /**
     * The work of a request as a step of one transaction: it writes on {@code transaction}, which it
     * must not commit, roll back or close; its response is marked SUCCESS in the same transaction.
     */
    @FunctionalInterface
    public interface TransactionalWork {
        /** Runs the request in the transaction. */
        StoredResponse run(Connection transaction, RequestContext context) throws Exception;
    }

    /** What {@link #start} came to: an execution to run, or an answer without running anything. */
    public sealed interface Start permits Started, Completed, Conflict, Mismatch {}

    /** What a submission came to. */
    public sealed interface Outcome permits Completed, Conflict, Mismatch {}

    /**
     * This caller owns the request now: run it through {@code execution}, then close it.
     *
     * @param execution the claimed execution
     */
    public record Started(Execution execution) implements Start {}

    /**
     * The request completed, now or before.
     *
     * @param response its response
     * @param replayed whether it was stored earlier and nothing ran now
     */
    public record Completed(StoredResponse response, boolean replayed) implements Outcome, Start {}

    /**
     * The request could not run now (HTTP 409).
     *
     * @param reason why
     */
    public record Conflict(IdempotencyConflictException.Reason reason) implements Outcome, Start {}

    /** The key was used before with another payload (HTTP 422). */
    public record Mismatch() implements Outcome, Start {}

    /**
     * Claims the request and, if a session key is given, its session lease, and starts its
     * heartbeat. Only {@link Started} runs anything; the caller must close its execution.
     *
     * @throws InvalidIdempotencyKeyException if the key breaks a rule
     */
    public Start start(Submission submission) {
        Objects.requireNonNull(submission, "submission is missing (null)");
        long claimedAt = System.nanoTime();
        Claim claim = records.begin(submission.scope(), submission.clientKey(), submission.fingerprint());
        if (claim instanceof Claim.Replay replay) {
            return new Completed(replay.response(), true);
        }
        if (claim instanceof Claim.InProgress) {
            return new Conflict(IdempotencyConflictException.Reason.IN_PROGRESS);
        }
        if (claim instanceof Claim.Mismatch) {
            return new Mismatch();
        }
        RequestHandle handle = ((Claim.Claimed) claim).handle();
        Lease session = null;
        if (submission.sessionKey() != null) {
            Optional<Lease> taken;
            try {
                taken = locks.tryAcquire(
                        submission.sessionKey(),
                        LeaseOptions.builder()
                                .leaseFor(submission.sessionLease())
                                .build(),
                        LockOwner.withToken(handle.token(), "request " + handle.id()));
            } catch (RuntimeException e) {
                giveBackQuietly(handle, "session lease failed: " + e, e);
                throw e;
            }
            if (taken.isEmpty()) {
                records.giveBack(handle, "session busy");
                return new Conflict(IdempotencyConflictException.Reason.SESSION_BUSY);
            }
            session = taken.get();
        }
        Execution execution = new Execution(handle, session, claimedAt);
        execution.renewal.start();
        return new Started(execution);
    }

    private void giveBackQuietly(RequestHandle handle, String reason, Exception cause) {
        try {
            records.giveBack(handle, reason);
        } catch (RuntimeException e) {
            cause.addSuppressed(e);
        }
    }

    /**
     * Submits a request whose work runs as one transaction on {@code dataSource}, together with its
     * SUCCESS mark: both commit or neither does.
     *
     * @throws IdempotencyConflictException (TAKEN_OVER, or {@link ClaimExpiredException}) if the
     *     claim was lost before the commit: the transaction was rolled back
     * @throws CommitOutcomeUnknownException if the commit itself failed: retrying with the same key
     *     is safe
     * @throws Exception what the work threw; the transaction was rolled back and the request marked
     *     ERROR, so it can be retried
     */
    public Outcome executeInTransaction(Submission submission, DataSource dataSource, TransactionalWork work)
            throws Exception {
        Objects.requireNonNull(dataSource, "dataSource is missing (null)");
        Objects.requireNonNull(work, "work is missing (null)");
        return run(submission, execution -> OneTransaction.run(dataSource, execution, work));
    }

    /** The work of one claimed execution, returning its response. */
    @FunctionalInterface
    private interface ExecutionWork {
        StoredResponse run(Execution execution) throws Exception;
    }

    /** Starts the submission and, if it was claimed, runs {@code work} on its execution and closes it. */
    private Outcome run(Submission submission, ExecutionWork work) throws Exception {
        Start start = start(submission);
        if (!(start instanceof Started started)) {
            return (Outcome) start;
        }
        try (Execution execution = started.execution()) {
            return new Completed(work.run(execution), false);
        }
    }

    /**
     * Submits a request whose work writes in transactions of its own; its response is stored after
     * the work returned, in another transaction. A crash between the two leaves the request
     * PROCESSING, to be run again after the stale threshold: use {@link #executeInTransaction}, or
     * {@link SideEffects} inside the work, for writes that must happen once.
     *
     * @throws IdempotencyConflictException (TAKEN_OVER) if the request was taken over while it ran
     * @throws Exception what the work threw; the request is then marked ERROR and can be retried
     */
    public Outcome execute(Submission submission, RequestWork work) throws Exception {
        Objects.requireNonNull(work, "work is missing (null)");
        return run(submission, execution -> {
            StoredResponse response;
            try {
                execution.assertOwned();
                response = work.run(execution);
                Objects.requireNonNull(response, "the work returned no response (null)");
            } catch (Exception e) {
                execution.rolledBack(e);
                throw e;
            }
            // The work is done: a lease lost now must not mark it ERROR (a retry would run it again).
            execution.renewal.marked();
            records.complete(execution.handle, response);
            execution.settled = true;
            return response;
        });
    }

    @Override
    public void close() {
        heartbeats.close();
    }

    /**
     * One claimed execution of a request: its context, its heartbeat and its session lease. Tell it
     * how the transaction that carries the SUCCESS mark ended ({@link #committed}, {@link
     * #rolledBack}, {@link #outcomeUnknown}), then close it. Thread-safe.
     */
    public final class Execution implements RequestContext, AutoCloseable {
        private final RequestHandle handle;
        private final Lease session;
        private final ClaimRenewal renewal;
        private final AtomicBoolean closed = new AtomicBoolean();
        private volatile boolean settled;

        Execution(RequestHandle handle, Lease session, long claimedAtNanos) {
            this.handle = handle;
            this.session = session;
            this.renewal = new ClaimRenewal(records, handle, heartbeats, claimedAtNanos, closed::get);
        }

        /** The context to give the work (this execution). */
        public RequestContext context() {
            return this;
        }

        @Override
        public RequestHandle request() {
            return handle;
        }

        @Override
        public Optional<Lease> session() {
            return Optional.ofNullable(session);
        }

        /** How long until the claim's local deadline (negative once passed). */
        public Duration untilDeadline() {
            return renewal.untilDeadline();
        }

        @Override
        public void assertOwned() {
            renewal.check();
            if (session != null) {
                session.assertHeld();
            }
        }

        @Override
        public void completeInTransaction(Connection transaction, StoredResponse response) {
            assertOwned();
            records.completeInTransaction(transaction, handle, response);
            renewal.marked(); // the row is locked by the transaction now: nothing to renew
        }

        /** The transaction carrying the SUCCESS mark committed: the request is done. */
        public void committed() {
            settled = true;
            renewal.stop();
        }

        /**
         * The transaction of the work rolled back (or the work failed before writing): nothing was
         * committed, so the request is marked ERROR and the next submit of the key runs it again.
         */
        public void rolledBack(Throwable cause) {
            renewal.stop();
            settled = true;
            renewal.unmarked();
            try {
                if (!records.fail(handle, String.valueOf(cause))) {
                    log.warn("request {} failed after it was taken over", handle.id());
                }
            } catch (RuntimeException e) {
                if (cause != null) {
                    cause.addSuppressed(e);
                }
                log.warn("request {} failed and could not be marked ERROR: {}", handle.id(), e.toString());
            }
        }

        /**
         * The commit of the transaction carrying the SUCCESS mark failed, so it is unknown whether it
         * took effect. If it did not, the request is marked ERROR (the UPDATE waits for the row lock
         * of the dying transaction and then finds SUCCESS if it committed). Returns the exception to
         * throw.
         */
        public CommitOutcomeUnknownException outcomeUnknown(Throwable cause) {
            renewal.stop();
            settled = true;
            CommitOutcomeUnknownException unknown = new CommitOutcomeUnknownException(handle.clientKey(), cause);
            try {
                records.fail(handle, "commit failed: " + cause);
            } catch (RuntimeException e) {
                unknown.addSuppressed(e);
            }
            log.warn(
                    "commit of request {} failed; outcome unknown, a retry with the same key is safe",
                    handle.id(),
                    cause);
            return unknown;
        }

        /**
         * Settles the execution by how the transaction carrying its SUCCESS mark ended ({@link
         * #committed}, {@link #rolledBack} or {@link #outcomeUnknown}), then closes it: for a caller
         * that learns the end from a transaction manager's completion callback.
         *
         * @param committed whether it committed
         * @param rolledBack whether it rolled back; neither means the commit failed, outcome unknown
         * @param cause why it did not commit, if known
         * @return the exception to report when the outcome is unknown, else null
         */
        public CommitOutcomeUnknownException transactionEnded(boolean committed, boolean rolledBack, Throwable cause) {
            try {
                if (committed) {
                    committed();
                    return null;
                }
                if (rolledBack) {
                    rolledBack(cause != null ? cause : new IllegalStateException("the transaction rolled back"));
                    return null;
                }
                return outcomeUnknown(cause != null ? cause : new IllegalStateException("the commit failed"));
            } finally {
                close();
            }
        }

        /** Stops the heartbeat and releases the session lease; safe to call more than once. */
        @Override
        public void close() {
            if (!closed.compareAndSet(false, true)) {
                return;
            }
            renewal.stop();
            if (!settled) {
                log.debug("execution of request {} closed without an outcome; it turns stale", handle.id());
            }
            if (session != null) {
                try {
                    session.close();
                } catch (RuntimeException e) {
                    log.warn("session lease of request {} could not be released: {}", handle.id(), e.toString());
                }
            }
        }
    }

    /** Builds an {@link IdempotentExecutor}. Not thread-safe. */
    public static final class Builder {
        private final RequestRecords records;
        private final LockService locks;
        private int heartbeatThreads = 4;

        private Builder(RequestRecords records, LockService locks) {
            this.records = Objects.requireNonNull(records, "records is missing (null)");
            this.locks = Objects.requireNonNull(locks, "locks is missing (null)");
        }

        /**
         * How many threads run heartbeats (default 4): each claim has its own task and each heartbeat
         * waits at most the records' heartbeat lock timeout, so heartbeats are late only if this many
         * are blocked at once.
         */
        public Builder heartbeatThreads(int threads) {
            if (threads < 1 || threads > 256) {
                throw new IllegalArgumentException("heartbeatThreads must be 1 to 256, was " + threads);
            }
            this.heartbeatThreads = threads;
            return this;
        }

        /** The executor. */
        public IdempotentExecutor build() {
            return new IdempotentExecutor(this);
        }
    }
}
