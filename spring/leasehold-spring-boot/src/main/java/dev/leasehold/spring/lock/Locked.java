package dev.leasehold.spring.lock;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs the method holding a lease on the key its arguments name, outside any
 * transaction the method starts: lock, begin, commit, release.
 *
 * <pre>
 * &#64;Locked(namespace = "borrow", tenant = "#cmd.tenantId", key = "#cmd.borrowNo",
 *         waitFor = "3s", busyMessage = "loan note {id} is being processed, retry later")
 * &#64;Transactional
 * public Receipt repay(RepayCommand cmd) { ... }
 * </pre>
 *
 * Each {@link #key()} expression is one id part; an expression that yields a collection or array
 * makes one key per element, taken as a sorted all-or-nothing batch. A null or blank part
 * fails before anything is locked. Called inside a caller's transaction, the lease is released only
 * after that transaction completes.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface Locked {

    /** The namespace of the keys, such as {@code borrow}. */
    String namespace();

    /**
     * SpEL over the arguments ({@code #name}, {@code #p0}), one per id part. A {@code #name} needs
     * the class compiled with {@code -parameters}; startup refuses it otherwise, and {@code #p0}
     * (by position) needs no names.
     */
    String[] key();

    /** SpEL for the tenant part; empty for keys without a tenant. */
    String tenant() default "";

    /** How long to wait for a busy key ({@code 3s}, {@code 500ms}); empty for {@code leasehold.lock.wait-time}. */
    String waitFor() default "";

    /** The lease time; empty for {@code leasehold.lock.lease-time}. */
    String leaseFor() default "";

    /** What to do when the key stays busy. */
    OnBusy onBusy() default OnBusy.FAIL;

    /**
     * The message of the busy failure, with {@code {key}} and {@code {id}} (the last id part)
     * replaced; empty for the default.
     */
    String busyMessage() default "";

    /**
     * SpEL for the de-duplication key of a {@link OnBusy#RETRY_LATER} retry: busy calls with the same
     * key while one is waiting are stored once, and a key that completed is not run again. Empty
     * for a key per call.
     */
    String retryKey() default "";

    /** What a busy key means for the caller. */
    enum OnBusy {
        /** Interactive callers: fail fast with {@link dev.leasehold.LockBusyException} (HTTP 409). */
        FAIL,
        /**
         * Background callers: store the call in the retry queue (the database, or RabbitMQ) and run it
         * again later, with growing delays; the method must return {@code void}. Nothing is dropped.
         */
        RETRY_LATER
    }
}
