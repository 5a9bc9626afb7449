package dev.leasehold.examples.ledger;

import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.util.UUID;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.webmvc.error.ErrorController;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.security.web.AuthenticationEntryPoint;
import org.springframework.security.web.access.AccessDeniedHandler;
import org.springframework.web.ErrorResponse;
import org.springframework.web.HttpMediaTypeNotSupportedException;
import org.springframework.web.HttpRequestMethodNotSupportedException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.servlet.resource.NoResourceFoundException;
import tools.jackson.core.JacksonException;
import tools.jackson.core.exc.StreamReadException;
import tools.jackson.databind.DatabindException;
import tools.jackson.databind.exc.UnrecognizedPropertyException;

/**
 * Every refusal of the service as an RFC 9457 problem document ({@code application/problem+json}
 * with type, title, status and detail), never the framework's bare error body: bodies that are not
 * JSON or not the request's shape, media types, methods and paths the API does not have, the
 * actuator's 401 and 403, and anything that reaches the servlet container's error page.
 */
@RestControllerAdvice
@Order(Ordered.LOWEST_PRECEDENCE - 10)
class LedgerProblems {

    static final String TYPES = "https://leasehold.dev/problems/ledger/";
    private static final Logger log = LoggerFactory.getLogger(LedgerProblems.class);

    static ProblemDetail problem(HttpStatusCode status, String type, String detail) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(status, detail);
        problem.setType(URI.create(TYPES + type));
        HttpStatus known = HttpStatus.resolve(status.value());
        problem.setTitle(known == null ? "Error " + status.value() : known.getReasonPhrase());
        return problem;
    }

    private static ResponseEntity<ProblemDetail> answer(HttpStatusCode status, String type, String detail) {
        return ResponseEntity.status(status)
                .contentType(MediaType.APPLICATION_PROBLEM_JSON)
                .body(problem(status, type, detail));
    }

    /** Writes a problem outside Spring MVC (security filters). */
    static void write(HttpServletResponse response, HttpStatus status, String type, String detail) throws IOException {
        ProblemDetail problem = problem(status, type, detail);
        response.setStatus(status.value());
        response.setContentType(MediaType.APPLICATION_PROBLEM_JSON_VALUE);
        response.getWriter()
                .write(new com.fasterxml.jackson.databind.ObjectMapper()
                        .createObjectNode()
                        .put("type", problem.getType().toString())
                        .put("title", problem.getTitle())
                        .put("status", problem.getStatus())
                        .put("detail", problem.getDetail())
                        .toString());
    }

    /** The actuator's 401: what to send, with the Basic challenge kept. */
    static AuthenticationEntryPoint operatorLoginNeeded() {
        return (request, response, e) -> {
            response.setHeader(HttpHeaders.WWW_AUTHENTICATE, "Basic realm=\"ledger-agent operator\"");
            write(
                    response,
                    HttpStatus.UNAUTHORIZED,
                    "unauthenticated",
                    "the actuator endpoints need the operator's HTTP Basic login (health is open)");
        };
    }

    /** The actuator's 403. */
    static AccessDeniedHandler operatorRoleNeeded() {
        return (request, response, e) ->
                write(response, HttpStatus.FORBIDDEN, "forbidden", "the actuator endpoints need the OPERATOR role");
    }

    @ExceptionHandler(HttpMessageNotReadableException.class)
    ResponseEntity<ProblemDetail> unreadable(HttpMessageNotReadableException e) {
        JacksonException json = null;
        for (Throwable t = e; t != null && json == null; t = t.getCause()) {
            json = t instanceof JacksonException j ? j : null;
        }
        return answer(HttpStatus.BAD_REQUEST, "invalid-request", bodyProblem(json));
    }

    /** Broken JSON is called so; valid JSON of the wrong shape names the field. */
    private static String bodyProblem(JacksonException json) {
        if (json == null) {
            return "the request needs a JSON object as its body";
        }
        String message = String.valueOf(json.getOriginalMessage());
        if (json instanceof StreamReadException && message.startsWith("Duplicate")) {
            return "the body names a field twice: " + message.replace("Duplicate Object property", "field");
        }
        if (json instanceof StreamReadException || message.startsWith("Trailing token")) {
            return "the body is not valid JSON, or has more after its value";
        }
        String field = json instanceof DatabindException bind
                ? bind.getPath().stream()
                        .map(p -> p.getPropertyName() == null ? "[" + p.getIndex() + "]" : p.getPropertyName())
                        .collect(Collectors.joining("."))
                : "";
        if (field.isEmpty()) {
            return "the body must be a JSON object with this request's fields";
        }
        if (json instanceof UnrecognizedPropertyException unknown) {
            return "field '" + field + "' is not part of this request; its fields are "
                    + unknown.getKnownPropertyIds().stream()
                            .map(String::valueOf)
                            .sorted()
                            .collect(Collectors.joining(", "));
        }
        return "field '" + field + "' must be a JSON string";
    }

    @ExceptionHandler(HttpMediaTypeNotSupportedException.class)
    ResponseEntity<ProblemDetail> mediaType(HttpMediaTypeNotSupportedException e) {
        return answer(HttpStatus.UNSUPPORTED_MEDIA_TYPE, "unsupported-media-type", "send the body as application/json");
    }

    @ExceptionHandler(HttpRequestMethodNotSupportedException.class)
    ResponseEntity<ProblemDetail> method(HttpRequestMethodNotSupportedException e) {
        ResponseEntity<ProblemDetail> refused = answer(
                HttpStatus.METHOD_NOT_ALLOWED,
                "method-not-allowed",
                "this path does not take " + e.getMethod() + "; it takes "
                        + String.join(", ", e.getSupportedMethods() == null ? new String[0] : e.getSupportedMethods()));
        return ResponseEntity.status(refused.getStatusCode())
                .headers(e.getHeaders())
                .contentType(MediaType.APPLICATION_PROBLEM_JSON)
                .body(refused.getBody());
    }

    @ExceptionHandler(NoResourceFoundException.class)
    ResponseEntity<ProblemDetail> noPath(NoResourceFoundException e) {
        return answer(
                HttpStatus.NOT_FOUND, "not-found", "no such path: " + BookingArguments.quote(e.getResourcePath(), 80));
    }

    /** Spring's other 4xx keep their status and short detail; anything else is a 500 with a log reference. */
    @ExceptionHandler(Exception.class)
    ResponseEntity<ProblemDetail> other(Exception e) {
        if (e instanceof ErrorResponse known && known.getStatusCode().is4xxClientError()) {
            String detail = known.getBody().getDetail();
            return answer(
                    known.getStatusCode(), "invalid-request", detail == null ? "the request is not valid" : detail);
        }
        String reference = UUID.randomUUID().toString().substring(0, 12);
        log.error("unexpected failure, reference {}", reference, e);
        return answer(
                HttpStatus.INTERNAL_SERVER_ERROR,
                "internal-error",
                "the request failed unexpectedly; reference " + reference);
    }

    /** The servlet container's error page (a request refused before Spring MVC saw it) as a problem. */
    @RestController
    static class ErrorPage implements ErrorController {

        @RequestMapping("${server.error.path:/error}")
        ResponseEntity<ProblemDetail> error(HttpServletRequest request) {
            Object code = request.getAttribute(RequestDispatcher.ERROR_STATUS_CODE);
            HttpStatusCode status = HttpStatusCode.valueOf(code instanceof Integer c ? c : 500);
            return answer(
                    status,
                    status.is4xxClientError() ? "invalid-request" : "internal-error",
                    status.is4xxClientError() ? "the request was refused" : "the request failed unexpectedly");
        }
    }
}
