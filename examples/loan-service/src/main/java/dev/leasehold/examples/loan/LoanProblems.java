package dev.leasehold.examples.loan;

import java.net.URI;
import java.util.stream.Collectors;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.MethodArgumentNotValidException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.servlet.resource.NoResourceFoundException;

/** The service's own problems: 404 for unknown notes, 400 naming the field, 409/422 for business rules. */
@RestControllerAdvice
class LoanProblems {

    static final String TYPES = "https://leasehold.dev/problems/loan/";

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
        return respond(HttpStatus.CONFLICT, "concurrent-change", "Changed concurrently", e.getMessage());
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

    @ExceptionHandler(org.springframework.http.converter.HttpMessageNotReadableException.class)
    ResponseEntity<ProblemDetail> unreadable(org.springframework.http.converter.HttpMessageNotReadableException e) {
        String detail = e.getMostSpecificCause().getMessage();
        return respond(
                HttpStatus.BAD_REQUEST,
                "invalid-request",
                "Invalid request",
                "the body is not valid: " + (detail == null ? "unreadable" : detail.split("\n")[0]));
    }

    @ExceptionHandler(NoResourceFoundException.class)
    ResponseEntity<ProblemDetail> noResource(NoResourceFoundException e) {
        return respond(HttpStatus.NOT_FOUND, "not-found", "Not found", e.getMessage());
    }

    private static ResponseEntity<ProblemDetail> respond(
            HttpStatusCode status, String type, String title, String detail) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(status, detail);
        problem.setType(URI.create(TYPES + type));
        problem.setTitle(title);
        return ResponseEntity.status(status).body(problem);
    }
}
