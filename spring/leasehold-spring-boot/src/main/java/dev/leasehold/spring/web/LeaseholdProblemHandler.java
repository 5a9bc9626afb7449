package dev.leasehold.spring.web;

import dev.leasehold.LeaseLostException;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LeaseholdException;
import dev.leasehold.LockBusyException;
import dev.leasehold.idempotency.CommitOutcomeUnknownException;
import dev.leasehold.idempotency.IdempotencyConflictException;
import dev.leasehold.idempotency.IdempotencySchemaMissingException;
import dev.leasehold.idempotency.InvalidIdempotencyKeyException;
import dev.leasehold.spring.lock.InvalidLockKeyException;
import java.net.URI;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * Turns Leasehold's exceptions into RFC 9457 problem responses ({@code application/problem+json})
 * with real status codes and stable type URIs, listed with what a client should do in {@code
 * docs/problems.md}:
 *
 * <ul>
 *   <li>{@code lock-busy} 409 (with {@code Retry-After}), {@code request-in-progress} 409, {@code
 *       session-busy} 409, {@code request-taken-over} 409, {@code lease-lost} 409, {@code stale-fence} 409;
 *   <li>{@code idempotency-key-reused} 422, {@code idempotency-key-missing} 400, {@code
 *       idempotency-key-invalid} 400 (with the {@code rule} broken), {@code invalid-lock-key} 400,
 *       {@code tenant-invalid} 400 (with the {@code header} or tenant expression it came from);
 *   <li>{@code lock-store-unavailable} 503, {@code request-outcome-unknown} 503;
 *   <li>{@code idempotency-schema-missing} 500 (with the {@code table}), {@code response-not-storable}
 *       500, {@code leasehold-failure} 500 for any other Leasehold exception.
 * </ul>
 *
 * Each failure is logged here, once, with its cause: a 5xx as an error with its stack trace, a 4xx
 * as a warning with its message.
 */
@RestControllerAdvice
@Order(Ordered.HIGHEST_PRECEDENCE + 100)
public class LeaseholdProblemHandler {

    /** The prefix of every problem type URI. */
    public static final String TYPE_BASE = "https://leasehold.dev/problems/";

    private static final Logger log = LoggerFactory.getLogger(LeaseholdProblemHandler.class);
    private static final HttpStatusCode UNPROCESSABLE = HttpStatusCode.valueOf(422);
    private static final String STALE_FENCE = "dev.leasehold.jdbc.StaleFenceException";

    @ExceptionHandler(LockBusyException.class)
    ResponseEntity<ProblemDetail> busy(LockBusyException e) {
        ProblemDetail problem = problem(HttpStatus.CONFLICT, "lock-busy", "Resource busy", e.getMessage());
        problem.setProperty("key", e.key() == null ? null : e.key().render());
        return answer(e, problem, "1");
    }

    @ExceptionHandler(IdempotencyConflictException.class)
    ResponseEntity<ProblemDetail> conflict(IdempotencyConflictException e) {
        String type =
                switch (e.reason()) {
                    case IN_PROGRESS, EFFECT_IN_PROGRESS -> "request-in-progress";
                    case SESSION_BUSY -> "session-busy";
                    case TAKEN_OVER -> "request-taken-over";
                };
        String title =
                switch (e.reason()) {
                    case IN_PROGRESS, EFFECT_IN_PROGRESS -> "Request in progress, do not resubmit";
                    case SESSION_BUSY -> "Session still has a message in progress";
                    case TAKEN_OVER -> "Request taken over by another execution";
                };
        return answer(e, problem(HttpStatus.CONFLICT, type, title, e.getMessage()), "1");
    }

    @ExceptionHandler(LeaseLostException.class)
    ResponseEntity<ProblemDetail> lost(LeaseLostException e) {
        return answer(
                e,
                problem(HttpStatus.CONFLICT, "lease-lost", "Lease lost; the work was stopped", e.getMessage()),
                null);
    }

    @ExceptionHandler(IdempotencyKeyReusedException.class)
    ResponseEntity<ProblemDetail> reused(IdempotencyKeyReusedException e) {
        return answer(
                e, problem(UNPROCESSABLE, "idempotency-key-reused", "Idempotency key reused", e.getMessage()), null);
    }

    @ExceptionHandler(IdempotencyKeyMissingException.class)
    ResponseEntity<ProblemDetail> missing(IdempotencyKeyMissingException e) {
        return answer(
                e,
                problem(HttpStatus.BAD_REQUEST, "idempotency-key-missing", "Idempotency key missing", e.getMessage()),
                null);
    }

    @ExceptionHandler(InvalidIdempotencyKeyException.class)
    ResponseEntity<ProblemDetail> invalidIdempotencyKey(InvalidIdempotencyKeyException e) {
        ProblemDetail problem =
                problem(HttpStatus.BAD_REQUEST, "idempotency-key-invalid", "Idempotency key invalid", e.getMessage());
        problem.setProperty("rule", e.rule().name());
        return answer(e, problem, null);
    }

    @ExceptionHandler(InvalidLockKeyException.class)
    ResponseEntity<ProblemDetail> invalidKey(InvalidLockKeyException e) {
        return answer(
                e, problem(HttpStatus.BAD_REQUEST, "invalid-lock-key", "Invalid resource key", e.getMessage()), null);
    }

    @ExceptionHandler(InvalidTenantException.class)
    ResponseEntity<ProblemDetail> invalidTenant(InvalidTenantException e) {
        ProblemDetail problem = problem(HttpStatus.BAD_REQUEST, "tenant-invalid", "Tenant invalid", e.getMessage());
        if (e.header() != null) {
            problem.setProperty("header", e.header());
        }
        return answer(e, problem, null);
    }

    @ExceptionHandler(CommitOutcomeUnknownException.class)
    ResponseEntity<ProblemDetail> outcomeUnknown(CommitOutcomeUnknownException e) {
        return answer(
                e,
                problem(
                        HttpStatus.SERVICE_UNAVAILABLE,
                        "request-outcome-unknown",
                        "Outcome unknown; retrying with the same key is safe",
                        "the commit of request " + e.clientKey() + " failed, so it is unknown whether it took"
                                + " effect; retry with the same idempotency key: it returns the stored result if"
                                + " it took effect and runs the request once if it did not"),
                "1");
    }

    @ExceptionHandler(IdempotencySchemaMissingException.class)
    ResponseEntity<ProblemDetail> schemaMissing(IdempotencySchemaMissingException e) {
        ProblemDetail problem = problem(
                HttpStatus.INTERNAL_SERVER_ERROR,
                "idempotency-schema-missing",
                "Idempotency table missing",
                "table " + e.table() + " does not exist: the Leasehold migration " + e.migration()
                        + " has not run on this database; nothing was changed");
        problem.setProperty("table", e.table());
        return answer(e, problem, null);
    }

    @ExceptionHandler(ResponseNotStorableException.class)
    ResponseEntity<ProblemDetail> notStorable(ResponseNotStorableException e) {
        return answer(
                e,
                problem(
                        HttpStatus.INTERNAL_SERVER_ERROR,
                        "response-not-storable",
                        "Response cannot be stored",
                        e.getMessage() + "; nothing was committed"),
                null);
    }

    @ExceptionHandler(LeaseStoreException.class)
    ResponseEntity<ProblemDetail> storeDown(LeaseStoreException e) {
        return answer(
                e,
                problem(
                        HttpStatus.SERVICE_UNAVAILABLE,
                        "lock-store-unavailable",
                        "Lock store unavailable",
                        "the lock store cannot be reached right now; nothing was changed, retry later"),
                "5");
    }

    @ExceptionHandler(LeaseholdException.class)
    ResponseEntity<ProblemDetail> other(LeaseholdException e) {
        if (e.getClass().getName().equals(STALE_FENCE)) {
            return answer(
                    e,
                    problem(HttpStatus.CONFLICT, "stale-fence", "Write refused: a newer owner exists", e.getMessage()),
                    null);
        }
        return answer(
                e,
                problem(HttpStatus.INTERNAL_SERVER_ERROR, "leasehold-failure", "Leasehold failure", e.getMessage()),
                null);
    }

    private static ResponseEntity<ProblemDetail> answer(Exception e, ProblemDetail problem, String retryAfter) {
        if (problem.getStatus() >= 500) {
            log.error("{} {}: {}", problem.getStatus(), problem.getType(), e.getMessage(), e);
        } else {
            log.warn(
                    "{} {}: {}{}",
                    problem.getStatus(),
                    problem.getType(),
                    e.getMessage(),
                    e.getCause() == null ? "" : "; cause: " + e.getCause());
        }
        ResponseEntity.BodyBuilder builder = ResponseEntity.status(problem.getStatus());
        if (retryAfter != null) {
            builder.header(HttpHeaders.RETRY_AFTER, retryAfter);
        }
        return builder.body(problem);
    }

    static ProblemDetail problem(HttpStatusCode status, String type, String title, String detail) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(status, detail);
        problem.setType(URI.create(TYPE_BASE + type));
        problem.setTitle(title);
        return problem;
    }
}
