package dev.leasehold.spring.scheduling;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs a {@code void} scheduled method on at most one instance at a time, with lock-at-most-for and
 * lock-at-least-for ({@link ScheduledTaskLock}); an instance that finds the task held skips the run.
 *
 * <pre>
 * &#64;Scheduled(cron = "0 0 2 * * *")
 * &#64;ScheduledLock(name = "overdue-batch", lockAtMostFor = "30m", lockAtLeastFor = "1m")
 * public void markOverdue() { ... }
 * </pre>
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface ScheduledLock {

    /** The task's name, unique across the application's scheduled tasks. */
    String name();

    /** How long a run may hold the task at most ({@code 30m}): a dead instance frees it after this. */
    String lockAtMostFor();

    /** How long a run holds the task at least, even if it finished sooner; empty for no minimum. */
    String lockAtLeastFor() default "";
}
