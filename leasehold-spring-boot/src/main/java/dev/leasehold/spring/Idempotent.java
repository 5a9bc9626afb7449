package dev.leasehold.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Executes the method at most once per idempotency key (B6), with the conventions of the IETF
 * Idempotency-Key header: a repeat with the same payload gets the stored response (and, over HTTP,
 * an {@code Idempotent-Replayed: true} header); a repeat while the first is running gets 409; the
 * key reused with another payload gets 422; a missing key gets 400.
 *
 * <pre>
 * &#64;PostMapping("/notes/{no}/repayments")
 * &#64;Idempotent(scope = "'repay:' + #no")
 * public ResponseEntity&lt;Receipt&gt; repay(&#64;PathVariable String no, &#64;RequestBody RepayRequest body) { ... }
 * </pre>
 *
 * The result (the body of a {@code ResponseEntity}, or the returned object) is stored as JSON and
 * read back into the method's return type on replay. A method that throws is recorded as failed, and
 * a later submit of the same key runs it again.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface Idempotent {

    /** SpEL for the key; empty to read the {@code Idempotency-Key} header of the current request. */
    String key() default "";

    /** SpEL for the scope the key lives in; empty for the method itself. */
    String scope() default "";

    /** SpEL for the payload whose fingerprint must match; empty for all arguments. */
    String payload() default "";

    /** SpEL for a session key to serialise on (S1.1), taken without waiting; empty for none. */
    String session() default "";
}
