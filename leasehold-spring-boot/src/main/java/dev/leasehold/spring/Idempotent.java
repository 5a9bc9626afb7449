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
 * key reused with another payload gets 422; a missing key gets 400, and so does a key longer than
 * 255 characters or with a control character (problem type {@code idempotency-key-invalid}).
 *
 * <pre>
 * &#64;PostMapping("/notes/{no}/repayments")
 * &#64;Idempotent
 * public ResponseEntity&lt;Receipt&gt; repay(&#64;PathVariable String no, &#64;RequestBody RepayRequest body) { ... }
 * </pre>
 *
 * <h2>One transaction</h2>
 *
 * The method runs inside a transaction of the application's transaction manager on the
 * application's {@code DataSource} (joining the caller's transaction if there is one), and the
 * request's SUCCESS mark is written in that same transaction, just before it commits: the business
 * writes and the stored response commit together or not at all. A JVM that dies right after the
 * commit leaves one effect, and the retry gets the stored response ({@code
 * AbstractIdempotentHttpTest#aJvmHaltedRightAfterTheCommitLeavesOneEffectAndTheRetryReplaysIt}); a
 * caller's transaction that rolls back leaves no receipt, and the retry runs once ({@code
 * #aCallersRollbackLeavesNoReceiptAndTheRetryBooksOnce}). A method that throws (a checked exception
 * too) rolls the transaction back and the next submit of the key runs it again. If the commit itself
 * fails, the outcome is unknown: the answer is 503 {@code request-outcome-unknown}, and a retry with
 * the same key is safe. Writes must go through the transaction (JdbcTemplate, JPA, jOOQ on the same
 * {@code DataSource}); writes in a {@code REQUIRES_NEW} transaction or on another database are not
 * covered. With {@link Locked} on the same method, the lease is taken inside this transaction and
 * released after it ends.
 *
 * <h2>What is stored and replayed</h2>
 *
 * For a Spring MVC handler method, the response bytes, status, content type and the headers named by
 * {@code leasehold.idempotency.replay-headers} (default {@code Location}, {@code ETag}, {@code
 * Content-Location}, {@code Last-Modified}; never {@code Set-Cookie}) are stored, and the first answer
 * and every replay are those exact bytes ({@code #replayIsByteIdenticalWithStatusContentTypeAndAllowListedHeaders}).
 * The body is what plain MVC sends: a document is written with the application's own JSON mapper, a
 * {@code String} as the text itself whatever its content type ({@code
 * #aJsonStringIsSentAsPlainMvcSendsItAndReplayedTheSame}), and a {@code void} handler's own status and
 * body written through its {@code HttpServletResponse} argument are kept until they are stored, then
 * sent ({@code #aVoidHandlerWritingItsOwn201IsSentAsPlainMvcSendsItAndReplayedTheSame}). Answers that
 * cannot be stored exactly (a {@code StreamingResponseBody}, an emitter, a deferred or asynchronous
 * result, a {@code Resource} or a view, also inside a {@code ResponseEntity}) fail startup naming the
 * method ({@code IdempotentAnswerShapesStartupTest}); returned through a wider type, they are refused
 * with 500 {@code response-not-storable} and rolled back ({@code
 * #aStreamBehindAWildcardEntityIsRefusedAndItsWriteRolledBack}). Any other method's result is stored
 * as JSON and read back into its return type.
 *
 * <p>Which answers are stored: every response the method returns with a status below 500, business
 * 4xx answers included ({@code #aBusiness422IsStoredAndReplayedWithoutRunningAgain}). A returned 5xx
 * is a failure: it is passed to the client, its transaction is rolled back, nothing is stored, and a
 * retry runs again ({@code #aReturned5xxIsNotStoredAndItsWriteIsRolledBackSoTheRetryRunsAgain}). So is
 * a thrown exception, whatever status the application's handlers give it.
 *
 * <h2>Scope</h2>
 *
 * A key lives in a scope: {@link #scope()} (default: the class and method), qualified, unless {@link
 * #perCaller()} is false, with the tenant ({@link #tenant()} or the {@code
 * leasehold.idempotency.tenant-header} request header) and the authenticated principal (Spring
 * Security's authenticated, non-anonymous {@code Authentication} name, else the servlet request's
 * user principal). Two callers sending the same key value get two executions ({@code
 * #twoPrincipalsWithTheSameKeyValueEachGetTheirOwnExecution}). The scope is a structured value whose
 * parts cannot imitate one another, so a guest whose tenant header spells a user never reaches that
 * user's records ({@code #aGuestWhoseTenantHeaderImitatesAUserNeverGetsThatUsersReceipt}). A tenant
 * must match {@code leasehold.idempotency.tenant-pattern}, else the answer is 400 {@code
 * tenant-invalid} naming the header ({@code #aTabOrANonAsciiByteInTheTenantHeaderIs400NamingTheHeader}).
 *
 * <h2>Payload</h2>
 *
 * The payload whose fingerprint must match on a repeat is {@link #payload()}, by default every
 * argument except the web infrastructure ones: servlet request, response and session, {@code
 * Principal}/{@code Authentication}, {@code WebRequest}, {@code Model}, {@code Errors}, {@code
 * HttpHeaders}, streams, readers and writers, multipart parts and {@code @AuthenticationPrincipal}
 * arguments. For a Spring MVC handler the request body argument counts as the body was received
 * (canonical JSON of its bytes, or the SHA-256 of a body that is not JSON), not as the argument
 * would be written back out, so a property that is read but never written counts too ({@code
 * #aWriteOnlyAmountAndASetterOnlyMemoCountInTheFingerprint}); such a body may be at most {@code
 * leasehold.idempotency.max-body-size}.
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

    /** SpEL for the payload whose fingerprint must match; empty for the arguments (see above). */
    String payload() default "";

    /** SpEL for a session key to serialise on (S1.1), taken without waiting; empty for none. */
    String session() default "";
}
