package dev.leasehold.spring.web;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs the method at most once per idempotency key, with the conventions of the IETF
 * Idempotency-Key header: a repeat with the same payload gets the stored answer (over HTTP with an
 * {@code Idempotent-Replayed: true} header); a repeat while the first runs gets 409; the key reused
 * with another payload gets 422; a missing key, or one longer than 255 characters or with a control
 * character, gets 400 (problem type {@code idempotency-key-invalid}).
 *
 * <p>The method runs in a transaction of the application's transaction manager, and the stored
 * answer commits in that transaction with the method's writes. A method that throws or returns a
 * 5xx is rolled back, nothing is stored, and the next submit of the key runs it again. A key lives
 * in {@link #scope()}, qualified with the tenant and the caller unless {@link #perCaller()} is
 * false. What is stored, replayed and fingerprinted is described in {@code docs/design/spring.md}.
 *
 * <pre>
 * &#64;PostMapping("/notes/{no}/repayments")
 * &#64;Idempotent
 * public ResponseEntity&lt;Receipt&gt; repay(&#64;PathVariable String no, &#64;RequestBody RepayRequest body) { ... }
 * </pre>
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface Idempotent {

    /**
     * SpEL for the key; empty to read the {@code Idempotency-Key} header of the current request. In
     * every expression here a {@code #name} needs the class compiled with {@code -parameters}
     * (startup refuses it otherwise); {@code #p0} (by position) needs no names.
     */
    String key() default "";

    /** SpEL for the scope the key lives in; empty for the method itself. */
    String scope() default "";

    /**
     * SpEL for the tenant that qualifies the scope; empty for the {@code
     * leasehold.idempotency.tenant-header} request header if one is configured, else none.
     */
    String tenant() default "";

    /**
     * Whether the scope is qualified with the tenant and the authenticated principal (default true).
     * Turn it off only where different callers must share keys on purpose.
     */
    boolean perCaller() default true;

    /**
     * SpEL for the payload whose fingerprint must match; empty for the arguments other than the web
     * infrastructure ones (for an MVC handler, the request body as received).
     */
    String payload() default "";

    /** SpEL for a session key to serialise on, taken without waiting; empty for none. */
    String session() default "";
}
