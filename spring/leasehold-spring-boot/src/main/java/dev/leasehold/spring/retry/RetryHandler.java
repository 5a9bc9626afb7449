package dev.leasehold.spring.retry;

/** Runs a delivered {@link RetryTask}; the {@link RetryQueue} calls it. */
@FunctionalInterface
public interface RetryHandler {

    /**
     * Handles one delivery. Returning normally means the task is settled (done, rescheduled or
     * parked); throwing means it was not, and the queue delivers it again later.
     */
    void handle(RetryTask task) throws Exception;
}
