package dev.leasehold.spring;

import dev.leasehold.LeaseLostException;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockBusyException;
import dev.leasehold.idempotency.IdempotencyConflictException;
import java.net.URI;
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
 * Turns Leasehold's exceptions into RFC 9457 problem responses with real status codes (the original
 * system answered HTTP 200 with {@code code: 409} in the body) and stable type URIs:
 *
 * <ul>
 *   <li>{@code lock-busy} 409 (with {@code Retry-After}), {@code request-in-progress} 409, {@code
 *       session-busy} 409, {@code request-taken-over} 409, {@code lease-lost} 409;
 *   <li>{@code idempotency-key-reused} 422, {@code idempotency-key-missing} 400, {@code invalid-lock-key} 400;
 *   <li>{@code lock-store-unavailable} 503.
 * </ul>
 */
@RestControllerAdvice
@Order(Ordered.HIGHEST_PRECEDENCE + 100)
public class LeaseholdProblemHandler {

    /** The prefix of every problem type URI. */
    public static final String TYPE_BASE = "https://leasehold.dev/problems/";

    @ExceptionHandler(LockBusyException.class)
    ResponseEntity<ProblemDetail> busy(LockBusyException e) {
        ProblemDetail problem = problem(HttpStatus.CONFLICT, "lock-busy", "Resource busy", e.getMessage());
        problem.setProperty("key", e.key() == null ? null : e.key().render());
        return ResponseEntity.status(HttpStatus.CONFLICT)
                .header(HttpHeaders.RETRY_AFTER, "1")
                .body(problem);
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
        return ResponseEntity.status(HttpStatus.CONFLICT)
                .header(HttpHeaders.RETRY_AFTER, "1")
                .body(problem(HttpStatus.CONFLICT, type, title, e.getMessage()));
    }

    @ExceptionHandler(LeaseLostException.class)
    ResponseEntity<ProblemDetail> lost(LeaseLostException e) {
        return ResponseEntity.status(HttpStatus.CONFLICT)
                .body(problem(HttpStatus.CONFLICT, "lease-lost", "Lease lost; the work was stopped", e.getMessage()));
    }

    @ExceptionHandler(IdempotencyKeyReusedException.class)
    ResponseEntity<ProblemDetail> reused(IdempotencyKeyReusedException e) {
        return ResponseEntity.status(UNPROCESSABLE)
                .body(problem(UNPROCESSABLE, "idempotency-key-reused", "Idempotency key reused", e.getMessage()));
    }

    @ExceptionHandler(IdempotencyKeyMissingException.class)
    ResponseEntity<ProblemDetail> missing(IdempotencyKeyMissingException e) {
        return ResponseEntity.badRequest()
                .body(problem(
                        HttpStatus.BAD_REQUEST, "idempotency-key-missing", "Idempotency key missing", e.getMessage()));
    }

    @ExceptionHandler(InvalidLockKeyException.class)
    ResponseEntity<ProblemDetail> invalidKey(InvalidLockKeyException e) {
        return ResponseEntity.badRequest()
                .body(problem(HttpStatus.BAD_REQUEST, "invalid-lock-key", "Invalid resource key", e.getMessage()));
    }

    @ExceptionHandler(LeaseStoreException.class)
    ResponseEntity<ProblemDetail> storeDown(LeaseStoreException e) {
        return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE)
                .header(HttpHeaders.RETRY_AFTER, "5")
                .body(problem(
                        HttpStatus.SERVICE_UNAVAILABLE,
                        "lock-store-unavailable",
                        "Lock store unavailable",
                        "the lock store cannot be reached right now; nothing was changed, retry later"));
    }

    private static final HttpStatusCode UNPROCESSABLE = HttpStatusCode.valueOf(422);

    static ProblemDetail problem(HttpStatusCode status, String type, String title, String detail) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(status, detail);
        problem.setType(URI.create(TYPE_BASE + type));
        problem.setTitle(title);
        return problem;
    }
}
