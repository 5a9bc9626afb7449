package dev.leasehold.examples.ledger;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.springframework.http.MediaType;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.client.RestClient;

/** The chat API as a test client sees it, and the ledger rows a request booked. */
final class ChatHttp {

    /** One HTTP answer: status, body, and whether the reply was a replay. */
    record Result(int status, String body, boolean replayed) {}

    private ChatHttp() {}

    static RestClient as(int port, String token) {
        return RestClient.builder()
                .baseUrl("http://127.0.0.1:" + port)
                .defaultHeader("Authorization", "Bearer " + token)
                .build();
    }

    static String newSession(RestClient client, String ledgerId) {
        return String.valueOf(client.post()
                .uri("/api/sessions")
                .contentType(MediaType.APPLICATION_JSON)
                .body(Map.of("ledgerId", ledgerId, "title", "test"))
                .retrieve()
                .body(Map.class)
                .get("id"));
    }

    static Result send(RestClient client, String session, String content, String requestId) {
        return client.post()
                .uri("/api/sessions/{s}/messages", session)
                .contentType(MediaType.APPLICATION_JSON)
                .body(Map.of("content", content, "clientRequestId", requestId))
                .exchange((q, r) -> new Result(
                        r.getStatusCode().value(),
                        new String(r.getBody().readAllBytes(), StandardCharsets.UTF_8),
                        "true".equals(r.getHeaders().getFirst("Idempotent-Replayed"))));
    }

    /** How many ledger rows the request with this client key booked. */
    static int booked(JdbcTemplate jdbc, String clientKey) {
        return jdbc.queryForObject(
                "SELECT COUNT(*) FROM ledger_tx t JOIN leasehold_request r ON r.id = t.request_id"
                        + " WHERE r.client_key = ?",
                Integer.class,
                clientKey);
    }

    /** How many ledger rows the request with this client key booked with this note. */
    static int booked(JdbcTemplate jdbc, String clientKey, String note) {
        return jdbc.queryForObject(
                "SELECT COUNT(*) FROM ledger_tx t JOIN leasehold_request r ON r.id = t.request_id"
                        + " WHERE r.client_key = ? AND t.note = ?",
                Integer.class,
                clientKey,
                note);
    }
}
