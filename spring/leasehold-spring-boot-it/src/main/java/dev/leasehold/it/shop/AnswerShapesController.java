package dev.leasehold.it.shop;

import dev.leasehold.spring.web.Idempotent;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.mvc.method.annotation.StreamingResponseBody;

/**
 * Answer shapes MVC writes in its own way, each booked with {@code @Idempotent} and, under {@code
 * /plain}, the same answer without it: what plain MVC sends, to compare with.
 */
@RestController
public class AnswerShapesController {

    private final Ledger ledger;

    public AnswerShapesController(Ledger ledger) {
        this.ledger = ledger;
    }

    /** A void handler that writes its own 201 answer through the servlet response. */
    @PostMapping("/shapes/void-created")
    @Idempotent
    public void voidCreated(@RequestBody PaymentRequest request, HttpServletResponse response) throws IOException {
        ledger.book(request, "shapes");
        writeCreated(request, response);
    }

    @PostMapping("/plain/void-created")
    public void plainVoidCreated(@RequestBody PaymentRequest request, HttpServletResponse response) throws IOException {
        writeCreated(request, response);
    }

    private static void writeCreated(PaymentRequest request, HttpServletResponse response) throws IOException {
        response.setStatus(HttpServletResponse.SC_CREATED);
        response.setHeader("Location", "/accounts/" + request.account());
        response.setContentType(MediaType.APPLICATION_JSON_VALUE);
        response.setCharacterEncoding(StandardCharsets.UTF_8.name());
        response.getWriter().write("{\"account\":\"" + request.account() + "\",\"booked\":true}");
    }

    /** A void handler that books, then writes its own 503 answer through the servlet response. */
    @PostMapping("/shapes/void-unavailable")
    @Idempotent
    public void voidUnavailable(@RequestBody PaymentRequest request, HttpServletResponse response) throws IOException {
        ledger.book(request, "shapes");
        writeUnavailable(request, response);
    }

    @PostMapping("/plain/void-unavailable")
    public void plainVoidUnavailable(@RequestBody PaymentRequest request, HttpServletResponse response)
            throws IOException {
        writeUnavailable(request, response);
    }

    private static void writeUnavailable(PaymentRequest request, HttpServletResponse response) throws IOException {
        response.setStatus(HttpServletResponse.SC_SERVICE_UNAVAILABLE);
        response.setHeader("Retry-After", "7");
        response.setContentType(MediaType.APPLICATION_JSON_VALUE);
        response.setCharacterEncoding(StandardCharsets.UTF_8.name());
        response.getWriter().write("{\"account\":\"" + request.account() + "\",\"retry\":true}");
    }

    /** A JSON document the handler already has as text. */
    @PostMapping("/shapes/json-string")
    @Idempotent
    public ResponseEntity<String> jsonString(@RequestBody PaymentRequest request) {
        ledger.book(request, "shapes");
        return jsonText(request);
    }

    @PostMapping("/plain/json-string")
    public ResponseEntity<String> plainJsonString(@RequestBody PaymentRequest request) {
        return jsonText(request);
    }

    private static ResponseEntity<String> jsonText(PaymentRequest request) {
        return ResponseEntity.ok()
                .contentType(MediaType.APPLICATION_JSON)
                .body("{\"account\":\"" + request.account() + "\",\"note\":\"caf\u00e9\"}");
    }

    /** A stream behind a wildcard entity: only the value shows what it is. */
    @PostMapping("/shapes/stream-wildcard")
    @Idempotent
    public ResponseEntity<?> streamWildcard(@RequestBody PaymentRequest request) {
        ledger.book(request, "shapes");
        StreamingResponseBody stream = out -> out.write("streamed".getBytes(StandardCharsets.UTF_8));
        return ResponseEntity.ok(stream);
    }
}
