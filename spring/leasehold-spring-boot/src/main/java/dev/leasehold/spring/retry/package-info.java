/**
 * Delayed retries of {@code @Locked(onBusy = RETRY_LATER)} calls: the {@link
 * dev.leasehold.spring.retry.RetryQueue} SPI with its RabbitMQ and SQL queues, and {@link
 * dev.leasehold.spring.retry.DelayedRetries}, which stores a busy call and calls it again later.
 */
package dev.leasehold.spring.retry;
