package dev.leasehold.idempotency;

import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The renewal of one execution's claim: a heartbeat task of its own, a local deadline (last renewal
 * plus the stale threshold, less a tenth), and whether the claim was taken over or expired. Once
 * the work was told its claim expired, the claim stays expired, even if a late renewal gets
 * through. Once the SUCCESS mark is written, nothing is renewed and nothing expires. Thread-safe.
 */
final class ClaimRenewal {

    private static final Logger log = LoggerFactory.getLogger(IdempotentExecutor.class);

    private final RequestRecords records;
    private final RequestHandle handle;
    private final HeartbeatPool pool;
    private final BooleanSupplier closed;
    private final long staleNanos;
    private final long marginNanos;
    private final AtomicBoolean beating = new AtomicBoolean();
    private volatile long renewedAtNanos;
    private volatile boolean takenOver;
    private volatile boolean expired;
    private volatile boolean marked;
    private volatile ScheduledFuture<?> heartbeat;

    ClaimRenewal(
            RequestRecords records,
            RequestHandle handle,
            HeartbeatPool pool,
            long claimedAtNanos,
            BooleanSupplier closed) {
        this.records = records;
        this.handle = handle;
        this.pool = pool;
        this.closed = closed;
        this.staleNanos = records.staleAfter().toNanos();
        this.marginNanos = staleNanos / 10;
        this.renewedAtNanos = claimedAtNanos;
    }

    /**
     * Starts the heartbeat, every third of the stale threshold (at least 20 ms); renews at once if
     * the claim is already that old (taking the session lease was slow).
     */
    void start() {
        long period = Math.max(20, records.staleAfter().toMillis() / 3);
        if (System.nanoTime() - renewedAtNanos > TimeUnit.MILLISECONDS.toNanos(period)) {
            beat();
        }
        heartbeat = pool.every(period, this::beat);
    }

    /** One heartbeat; skipped while the previous one still runs. */
    void beat() {
        if (takenOver || expired || marked || closed.getAsBoolean() || !beating.compareAndSet(false, true)) {
            return;
        }
        try {
            long sentAt = System.nanoTime();
            if (records.heartbeat(handle)) {
                if (untilDeadline().isNegative()) {
                    // The renewal got through after the local deadline: the work may have been told
                    // meanwhile that its claim expired, so the claim stays expired.
                    expired = true;
                } else {
                    renewedAtNanos = sentAt;
                }
            } else if (!marked) {
                takenOver = true;
                log.warn("request {} was taken over while it ran; its work must stop", handle.id());
            }
        } catch (RuntimeException e) {
            log.warn(
                    "heartbeat of request {} failed ({} failures so far; the claim expires {} ms after its last"
                            + " renewal): {}",
                    handle.id(),
                    pool.failed(),
                    TimeUnit.NANOSECONDS.toMillis(staleNanos - marginNanos),
                    e.toString());
        } finally {
            beating.set(false);
        }
    }

    void stop() {
        ScheduledFuture<?> future = heartbeat;
        if (future != null) {
            future.cancel(false);
        }
    }

    /** The SUCCESS mark is written (or being written): stop renewing. */
    void marked() {
        marked = true;
        stop();
    }

    /** The SUCCESS mark did not commit. */
    void unmarked() {
        marked = false;
    }

    Duration untilDeadline() {
        return Duration.ofNanos(renewedAtNanos + staleNanos - marginNanos - System.nanoTime());
    }

    /**
     * Throws if the claim was taken over, or expired before its SUCCESS mark was written; an
     * expiry seen here is for good.
     */
    void check() {
        if (takenOver) {
            throw new IdempotencyConflictException(
                    IdempotencyConflictException.Reason.TAKEN_OVER,
                    "request " + handle.clientKey() + " was taken over by another execution");
        }
        if (!marked && (expired || untilDeadline().isNegative())) {
            expired = true; // for good: a late renewal does not revive a claim the work saw expire
            throw new ClaimExpiredException(
                    handle.clientKey(),
                    "last renewed " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - renewedAtNanos)
                            + " ms ago, stale after " + records.staleAfter().toMillis() + " ms");
        }
    }
}
