package dev.leasehold.idempotency;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Executes a request at most once per idempotency key, in the fixed order of seed feature S1.12:
 * request record, then session lease, never waiting for either.
 *
 * <ol>
 *   <li>{@link RequestRecords#begin}: a replay returns the stored response; in progress and mismatch
 *       return at once;
 *   <li>a claimed request takes its session lease with {@code tryAcquire}, owned by the request's
 *       token; if the session is busy the claim is given back (S1.6) and the caller gets
 *       SESSION_BUSY;
 *   <li>the work runs with a heartbeat on the request (every third of the stale threshold; the
 *       session lease renews itself); a heartbeat that finds the request taken over makes {@link
 *       RequestContext#assertOwned()} throw;
 *   <li>the response is stored (token-checked), or the failure recorded;
 *   <li>the session lease is released in {@code finally}, on every path.
 * </ol>
 *
 * Thread-safe. Close it to stop its heartbeat scheduler.
 */
public final class IdempotentExecutor implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(IdempotentExecutor.class);

    private final RequestRecords records;
    private final LockService locks;
    private final ScheduledExecutorService heartbeats;

    /** An executor over {@code records}, taking session leases from {@code locks}. */
    public IdempotentExecutor(RequestRecords records, LockService locks) {
        this.records = Objects.requireNonNull(records, "records is missing (null)");
        this.locks = Objects.requireNonNull(locks, "locks is missing (null)");
        this.heartbeats = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread thread = new Thread(r, "leasehold-request-heartbeat");
            thread.setDaemon(true);
            return thread;
        });
    }

    /**
     * One submission of a request.
     *
     * @param scope the key space (chat session, tenant and caller)
     * @param clientKey the client's idempotency key
     * @param fingerprint SHA-256 of the canonical payload ({@link CanonicalJson#fingerprint})
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

    /** What a submission came to. */
    public sealed interface Outcome permits Completed, Conflict, Mismatch {}

    /**
     * The request completed, now or before.
     *
     * @param response its response
     * @param replayed whether it was stored earlier and nothing ran now
     */
    public record Completed(StoredResponse response, boolean replayed) implements Outcome {}

    /**
     * The request could not run now (HTTP 409).
     *
     * @param reason why
     */
    public record Conflict(IdempotencyConflictException.Reason reason) implements Outcome {}

    /** The key was used before with another payload (HTTP 422). */
    public record Mismatch() implements Outcome {}

    /**
     * Submits a request.
     *
     * @throws IdempotencyConflictException (TAKEN_OVER) if the request was taken over while it ran
     * @throws Exception what the work threw; the request is then marked ERROR and can be retried
     */
    public Outcome execute(Submission submission, RequestWork work) throws Exception {
        Objects.requireNonNull(submission, "submission is missing (null)");
        Objects.requireNonNull(work, "work is missing (null)");
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
        ScheduledFuture<?> heartbeat = null;
        try {
            if (submission.sessionKey() != null) {
                Optional<Lease> taken = locks.tryAcquire(
                        submission.sessionKey(),
                        LeaseOptions.builder()
                                .leaseFor(submission.sessionLease())
                                .build(),
                        LockOwner.withToken(handle.token(), "request " + handle.id()));
                if (taken.isEmpty()) {
                    records.giveBack(handle, "session busy");
                    return new Conflict(IdempotencyConflictException.Reason.SESSION_BUSY);
                }
                session = taken.get();
            }
            Context context = new Context(handle, session);
            long period = Math.max(50, records.staleAfter().toMillis() / 3);
            heartbeat = heartbeats.scheduleWithFixedDelay(context::beat, period, period, TimeUnit.MILLISECONDS);
            StoredResponse response;
            try {
                context.assertOwned();
                response = work.run(context);
                context.assertOwned();
            } catch (IdempotencyConflictException e) {
                throw e;
            } catch (Exception e) {
                if (!records.fail(handle, String.valueOf(e))) {
                    log.warn("request {} failed after it was taken over", handle.id());
                }
                throw e;
            }
            heartbeat.cancel(false);
            records.complete(handle, response);
            return new Completed(response, false);
        } finally {
            if (heartbeat != null) {
                heartbeat.cancel(false);
            }
            if (session != null) {
                session.close();
            }
        }
    }

    @Override
    public void close() {
        heartbeats.shutdownNow();
    }

    private final class Context implements RequestContext {
        private final RequestHandle handle;
        private final Lease session;
        private volatile boolean takenOver;

        Context(RequestHandle handle, Lease session) {
            this.handle = handle;
            this.session = session;
        }

        void beat() {
            try {
                if (!takenOver && !records.heartbeat(handle)) {
                    takenOver = true;
                    log.warn("request {} was taken over while it ran; its work must stop", handle.id());
                }
            } catch (RuntimeException e) {
                log.warn("heartbeat of request {} failed: {}", handle.id(), e.getMessage());
            }
        }

        @Override
        public RequestHandle request() {
            return handle;
        }

        @Override
        public Optional<Lease> session() {
            return Optional.ofNullable(session);
        }

        @Override
        public void assertOwned() {
            if (takenOver) {
                throw new IdempotencyConflictException(
                        IdempotencyConflictException.Reason.TAKEN_OVER,
                        "request " + handle.clientKey() + " was taken over by another execution");
            }
            if (session != null) {
                session.assertHeld();
            }
        }
    }
}
