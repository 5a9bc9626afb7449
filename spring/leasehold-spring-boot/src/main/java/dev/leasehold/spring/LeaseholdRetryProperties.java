package dev.leasehold.spring;

import java.time.Duration;
import org.springframework.validation.Errors;

/** Delayed retries of background {@code @Locked(onBusy = RETRY_LATER)} calls. */
public class LeaseholdRetryProperties {
    /**
     * Whether retries are delivered: unset to deliver only when some bean has a RETRY_LATER
     * method (no polling otherwise), true to always deliver, false to never (RETRY_LATER then fails).
     */
    private Boolean enabled;
    /** Where retries wait: auto (RabbitMQ when Spring AMQP and a connection factory are present, else the database), jdbc or rabbit. */
    private Queue queue = Queue.AUTO;
    /** How often the database queue looks for due retries. */
    private Duration pollInterval = Duration.ofSeconds(1);
    /** The delay before the first retry; doubled for every further one. */
    private Duration initialDelay = Duration.ofSeconds(2);
    /** The longest delay between retries. */
    private Duration maxDelay = Duration.ofMinutes(5);
    /** After this many busy attempts the retry is parked for an operator. */
    private int maxAttempts = 20;
    /**
     * After how long without a renewal a retry's claim counts as abandoned (its instance died) and
     * the retry is delivered again (database queue); a running retry renews it every third of this.
     */
    private Duration claimTimeout = Duration.ofMinutes(5);
    /** The prefix of the RabbitMQ queues ({@code <prefix>.due}, {@code <prefix>.parked}, {@code <prefix>.delay.<ms>}). */
    private String rabbitQueuePrefix = "leasehold.retry";

    /** Where retries wait. */
    public enum Queue {
        /** RabbitMQ when Spring AMQP and a connection factory are present, else the database. */
        AUTO,
        /** The {@code leasehold_retry} table. */
        JDBC,
        /** RabbitMQ queues with per-queue TTL and dead-lettering. */
        RABBIT
    }

    public Boolean getEnabled() {
        return enabled;
    }

    public void setEnabled(Boolean enabled) {
        this.enabled = enabled;
    }

    public Queue getQueue() {
        return queue;
    }

    public void setQueue(Queue queue) {
        this.queue = queue;
    }

    public Duration getPollInterval() {
        return pollInterval;
    }

    public void setPollInterval(Duration pollInterval) {
        this.pollInterval = pollInterval;
    }

    public Duration getInitialDelay() {
        return initialDelay;
    }

    public void setInitialDelay(Duration initialDelay) {
        this.initialDelay = initialDelay;
    }

    public Duration getMaxDelay() {
        return maxDelay;
    }

    public void setMaxDelay(Duration maxDelay) {
        this.maxDelay = maxDelay;
    }

    public int getMaxAttempts() {
        return maxAttempts;
    }

    public void setMaxAttempts(int maxAttempts) {
        this.maxAttempts = maxAttempts;
    }

    public Duration getClaimTimeout() {
        return claimTimeout;
    }

    public void setClaimTimeout(Duration claimTimeout) {
        this.claimTimeout = claimTimeout;
    }

    public String getRabbitQueuePrefix() {
        return rabbitQueuePrefix;
    }

    public void setRabbitQueuePrefix(String rabbitQueuePrefix) {
        this.rabbitQueuePrefix = rabbitQueuePrefix;
    }

    /** Rejects each bad setting, naming the property and the value. */
    void validate(Errors errors) {
        LeaseholdProperties.positive(errors, "retry.poll-interval", pollInterval);
        LeaseholdProperties.positive(errors, "retry.initial-delay", initialDelay);
        LeaseholdProperties.positive(errors, "retry.max-delay", maxDelay);
        LeaseholdProperties.positive(errors, "retry.claim-timeout", claimTimeout);
        if (maxDelay != null && initialDelay != null && maxDelay.compareTo(initialDelay) < 0) {
            errors.reject(
                    "leasehold.retry.max-delay",
                    "leasehold.retry.max-delay (" + maxDelay + ") must not be below leasehold.retry.initial-delay ("
                            + initialDelay + ")");
        }
        if (maxAttempts < 1) {
            errors.reject(
                    "leasehold.retry.max-attempts", "leasehold.retry.max-attempts must be >= 1, was " + maxAttempts);
        }
        if (rabbitQueuePrefix == null || rabbitQueuePrefix.isBlank()) {
            errors.reject(
                    "leasehold.retry.rabbit-queue-prefix", "leasehold.retry.rabbit-queue-prefix must not be blank");
        }
    }
}
