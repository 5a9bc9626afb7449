package dev.leasehold.spring.retry;

import java.time.Duration;

/**
 * A durable queue of delayed retries, the SPI behind {@code @Locked(onBusy =
 * RETRY_LATER)}. Leasehold ships one in the SQL database ({@link JdbcRetryQueue}) and one on
 * RabbitMQ ({@link RabbitRetryQueue}); an application may define its own bean.
 *
 * <p>Contract:
 *
 * <ul>
 *   <li>{@link #enqueue} returns only once the task is durable (committed, or confirmed by the
 *       broker); it throws if it is not, so a caller never believes a dropped task was kept;
 *   <li>each task is delivered to the handler no earlier than its delay, and at least once: a task
 *       whose handling did not return normally (crash, lost connection, exception) is delivered
 *       again;
 *   <li>a task may therefore reach the handler more than once; Leasehold's handler de-duplicates
 *       by {@link RetryTask#key()} through the request records of {@code leasehold-idempotency}
 *       when they are configured, so a task that completed is not run again.
 * </ul>
 *
 * Implementations are thread-safe.
 */
public interface RetryQueue {

    /**
     * Stores {@code task} for delivery after {@code delay}. A queue that de-duplicates at enqueue
     * returns false when the key is already waiting; enqueueing the key being handled right now
     * reschedules it.
     *
     * @return whether a new delivery was stored
     * @throws RuntimeException if the task could not be stored durably
     */
    boolean enqueue(RetryTask task, Duration delay);

    /**
     * Parks a task that will not be retried (too many busy attempts, or the method failed), where an
     * operator can find it; nothing is dropped.
     */
    void park(RetryTask task, String error);

    /** Starts delivering due tasks to {@code handler}; called at most once. */
    void start(RetryHandler handler);

    /** Stops delivering; tasks not yet delivered stay stored. */
    void stop();

    /** A short name for logs and metrics ({@code jdbc}, {@code rabbit}). */
    String name();
}
