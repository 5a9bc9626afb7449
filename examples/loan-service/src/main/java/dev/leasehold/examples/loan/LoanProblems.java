package dev.leasehold.examples.loan;

import java.net.URI;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.web.HttpMediaTypeNotSupportedException;
import org.springframework.web.HttpRequestMethodNotSupportedException;
import org.springframework.web.bind.MethodArgumentNotValidException;
import org.springframework.web.bind.MissingRequestHeaderException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;
import org.springframework.web.method.annotation.MethodArgumentTypeMismatchException;
import org.springframework.web.servlet.resource.NoResourceFoundException;
import tools.jackson.core.JacksonException;
import tools.jackson.core.exc.StreamReadException;
import tools.jackson.databind.DatabindException;
import tools.jackson.databind.exc.MismatchedInputException;
import tools.jackson.databind.exc.UnrecognizedPropertyException;

/**
 * The service's problems (RFC 9457): 404 for unknown notes, 400 naming the field, 409/422 for
 * business rules. No detail names a Java type or carries a stack trace; an unexpected failure is a
 * plain 500 with a reference to the log line.
 */
@RestControllerAdvice
@Order(Ordered.LOWEST_PRECEDENCE - 10)
class LoanProblems {

    private static final Logger log = LoggerFactory.getLogger(LoanProblems.class);
    static final String TYPES = "https://leasehold.dev/problems/loan/";
    /** Set on an answer replayed for a repeated Idempotency-Key. */
    static final String REPLAYED = "Idempotent-Replayed";

    /** An unknown note, or one of another tenant: the same answer for both. */
    static final class NoteNotFound extends RuntimeException {
        private static final long serialVersionUID = 1L;

        NoteNotFound(String tenant, String borrowNo) {
            super("loan note " + borrowNo + " does not exist for tenant " + tenant);
        }
    }

    /** A request the rules refuse (amount above what is owed, a settled note...). */
    static final class Refused extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final String type;
        final int status;

        Refused(int status, String type, String message) {
            super(message);
            this.status = status;
            this.type = type;
        }
    }

    /** The note changed between read and write (the CAS found another version): retry. */
    static final class ConcurrentChange extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ConcurrentChange(String borrowNo) {
            super("loan note " + borrowNo
                    + " was changed by another operation at the same time; nothing was written, retry");
        }
    }

    static void markReplayed() {
        if (RequestContextHolder.getRequestAttributes() instanceof ServletRequestAttributes servlet
                && servlet.getResponse() != null) {
            servlet.getResponse().setHeader(REPLAYED, "true");
        }
    }

    @ExceptionHandler(NoteNotFound.class)
    ResponseEntity<ProblemDetail> notFound(NoteNotFound e) {
        return respond(HttpStatus.NOT_FOUND, "note-not-found", "Loan note not found", e.getMessage());
    }

    @ExceptionHandler(Refused.class)
    ResponseEntity<ProblemDetail> refused(Refused e) {
        return respond(HttpStatusCode.valueOf(e.status), e.type, "Request refused", e.getMessage());
    }

    @ExceptionHandler(ConcurrentChange.class)
    ResponseEntity<ProblemDetail> concurrent(ConcurrentChange e) {
        ResponseEntity<ProblemDetail> answer =
                respond(HttpStatus.CONFLICT, "concurrent-change", "Changed concurrently", e.getMessage());
        return ResponseEntity.status(HttpStatus.CONFLICT)
                .header("Retry-After", "1")
                .body(answer.getBody());
    }

    /** A unique key or CAS lost to a concurrent request (bypass mode) that was not turned into an answer. */
    @ExceptionHandler(DataIntegrityViolationException.class)
    ResponseEntity<ProblemDetail> integrity(DataIntegrityViolationException e) {
        return ResponseEntity.status(HttpStatus.CONFLICT)
                .header("Retry-After", "1")
                .body(problem(
                        HttpStatus.CONFLICT,
                        "concurrent-change",
                        "Changed concurrently",
                        "another request changed the same records at the same time; nothing was written, retry"));
    }

    @ExceptionHandler(MethodArgumentNotValidException.class)
    ResponseEntity<ProblemDetail> invalid(MethodArgumentNotValidException e) {
        String detail = e.getBindingResult().getFieldErrors().stream()
                .map(f -> f.getField() + ": " + f.getDefaultMessage())
                .sorted()
                .collect(Collectors.joining("; "));
        ResponseEntity<ProblemDetail> response =
                respond(HttpStatus.BAD_REQUEST, "invalid-request", "Invalid request", detail);
        response.getBody()
                .setProperty(
                        "fields",
                        e.getBindingResult().getFieldErrors().stream()
                                .map(f -> f.getField())
                                .distinct()
                                .sorted()
                                .toList());
        return response;
    }

    /**
     * An unreadable body: says what and where in JSON terms, never which Java type failed. Broken
     * JSON is called so; valid JSON of the wrong shape names the field and what it must be.
     */
    @ExceptionHandler(HttpMessageNotReadableException.class)
    ResponseEntity<ProblemDetail> unreadable(HttpMessageNotReadableException e) {
        Throwable cause = e;
        while (cause != null && !(cause instanceof JacksonException)) {
            cause = cause.getCause();
        }
        ResponseEntity<ProblemDetail> response = respond(
                HttpStatus.BAD_REQUEST, "invalid-request", "Invalid request", unreadableDetail((JacksonException)
                        cause));
        String field = cause instanceof DatabindException bind ? fieldPath(bind) : "";
        if (!field.isEmpty()) {
            response.getBody().setProperty("fields", List.of(field));
        }
        return response;
    }

    static String unreadableDetail(JacksonException cause) {
        if (cause == null) {
            return "the request needs a JSON object as its body";
        }
        String message = String.valueOf(cause.getOriginalMessage());
        if (cause instanceof StreamReadException && message.startsWith("Duplicate")) {
            return "the body names a field twice (" + message.replace("Duplicate Object property", "duplicate field")
                    + "); which value counts would be a guess";
        }
        if (cause instanceof StreamReadException) {
            return "the body is not valid JSON" + where(cause);
        }
        if (message.startsWith("Trailing token")) {
            return "the body is not valid JSON: there is more after its value" + where(cause);
        }
        String field = cause instanceof DatabindException bind ? fieldPath(bind) : "";
        if (field.isEmpty()) {
            return "the body must be a JSON object with this request's fields";
        }
        if (cause instanceof UnrecognizedPropertyException unknown) {
            return "field '" + field + "' is not part of this request; it takes "
                    + unknown.getKnownPropertyIds().stream()
                            .map(String::valueOf)
                            .sorted()
                            .collect(Collectors.joining(", "));
        }
        Class<?> target = cause instanceof MismatchedInputException mismatch ? mismatch.getTargetType() : null;
        return "field '" + field + "' " + expected(target);
    }

    private static String expected(Class<?> target) {
        if (target == null) {
            return "has a value of the wrong kind";
        }
        if (target.isEnum()) {
            return "must be one of "
                    + Arrays.stream(target.getEnumConstants())
                            .map(c -> "\"" + ((Enum<?>) c).name() + "\"")
                            .collect(Collectors.joining(", "));
        }
        if (target == int.class || target == Integer.class || target == long.class || target == Long.class) {
            return "must be a whole JSON number such as 3, not a string or a fraction";
        }
        if (Number.class.isAssignableFrom(target)) {
            return "must be a JSON number such as 150.50, not a string";
        }
        if (target == String.class) {
            return "must be a JSON string";
        }
        if (java.time.temporal.Temporal.class.isAssignableFrom(target)) {
            return "must be a JSON string holding a date such as 2026-01-31";
        }
        if (Iterable.class.isAssignableFrom(target) || target.isArray()) {
            return "must be a JSON array";
        }
        return "has a value of the wrong kind";
    }

    private static String fieldPath(DatabindException bind) {
        return bind.getPath().stream()
                .map(ref -> ref.getPropertyName() != null ? ref.getPropertyName() : "[" + ref.getIndex() + "]")
                .collect(Collectors.joining("."))
                .replace(".[", "[");
    }

    private static String where(JacksonException cause) {
        return cause.getLocation() == null || cause.getLocation().getLineNr() < 1
                ? ""
                : " (line " + cause.getLocation().getLineNr() + ", column "
                        + cause.getLocation().getColumnNr() + ")";
    }

    @ExceptionHandler(MissingRequestHeaderException.class)
    ResponseEntity<ProblemDetail> missingHeader(MissingRequestHeaderException e) {
        return respond(
                HttpStatus.BAD_REQUEST,
                "header-missing",
                "Header missing",
                "this request needs the header " + e.getHeaderName()
                        + ("Idempotency-Key".equals(e.getHeaderName())
                                ? " (a unique key per logical request, sent again unchanged on retries)"
                                : ""));
    }

    @ExceptionHandler(MethodArgumentTypeMismatchException.class)
    ResponseEntity<ProblemDetail> mismatch(MethodArgumentTypeMismatchException e) {
        return respond(
                HttpStatus.BAD_REQUEST,
                "invalid-request",
                "Invalid request",
                "parameter " + e.getName() + ": '" + Money.clip(String.valueOf(e.getValue()), 40) + "' is not valid");
    }

    @ExceptionHandler(HttpMediaTypeNotSupportedException.class)
    ResponseEntity<ProblemDetail> mediaType(HttpMediaTypeNotSupportedException e) {
        return respond(
                HttpStatus.UNSUPPORTED_MEDIA_TYPE,
                "unsupported-media-type",
                "Unsupported media type",
                "send the body as application/json");
    }

    @ExceptionHandler(HttpRequestMethodNotSupportedException.class)
    ResponseEntity<ProblemDetail> method(HttpRequestMethodNotSupportedException e) {
        return respond(
                HttpStatus.METHOD_NOT_ALLOWED,
                "method-not-allowed",
                "Method not allowed",
                "this path does not take " + e.getMethod());
    }

    @ExceptionHandler(NoResourceFoundException.class)
    ResponseEntity<ProblemDetail> noResource(NoResourceFoundException e) {
        return respond(HttpStatus.NOT_FOUND, "not-found", "Not found", "no such path");
    }

    @ExceptionHandler(org.springframework.security.access.AccessDeniedException.class)
    ResponseEntity<ProblemDetail> denied(org.springframework.security.access.AccessDeniedException e) {
        return respond(HttpStatus.FORBIDDEN, "forbidden", "Forbidden", e.getMessage());
    }

    /** Anything else: logged with a reference; the answer names no Java type. */
    @ExceptionHandler(Exception.class)
    ResponseEntity<ProblemDetail> unexpected(Exception e) {
        if (e instanceof org.springframework.web.ErrorResponse known
                && known.getStatusCode().value() < 500) {
            String detail = known.getBody().getDetail();
            return respond(
                    known.getStatusCode(),
                    "invalid-request",
                    "Invalid request",
                    detail == null ? "the request is not valid" : Money.clip(detail, 200));
        }
        String reference = LoanRepository.newId().substring(0, 12);
        log.error("unexpected failure, reference {}", reference, e);
        return respond(
                HttpStatus.INTERNAL_SERVER_ERROR,
                "internal-error",
                "Internal error",
                "the request failed unexpectedly; nothing is known to have changed. Reference " + reference);
    }

    static ProblemDetail problem(HttpStatusCode status, String type, String title, String detail) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(status, detail);
        problem.setType(URI.create(TYPES + type));
        problem.setTitle(title);
        return problem;
    }

    private static ResponseEntity<ProblemDetail> respond(
            HttpStatusCode status, String type, String title, String detail) {
        return ResponseEntity.status(status).body(problem(status, type, title, detail));
    }
}
