package dev.leasehold.examples.loan;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.util.Base64;
import java.util.Map;
import java.util.UUID;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.web.client.RestClient;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** The loan API over HTTP as one tenant's channel and operator call it; every answer kept whole. */
final class Api {

    static final JsonMapper JSON = JsonMapper.builder().build();

    /** One HTTP answer: status, headers, and the body as JSON (null when empty or not JSON). */
    record Answer(int status, HttpHeaders headers, String text) {
        JsonNode body() {
            return text == null || text.isBlank() ? null : JSON.readTree(text);
        }

        String header(String name) {
            return headers.getFirst(name);
        }
    }

    final String tenant;
    private final RestClient http;
    private String user;
    private String password;

    Api(int port, String tenant) {
        this.tenant = tenant;
        this.http = RestClient.builder().baseUrl("http://127.0.0.1:" + port).build();
        as(tenant + "-app", tenant + "-app-pw");
    }

    /** Calls as another principal from now on. */
    Api as(String user, String password) {
        this.user = user;
        this.password = password;
        return this;
    }

    Api anonymous() {
        return as(null, null);
    }

    String user() {
        return user;
    }

    Answer repay(String note, String trade, String amount) {
        return post(
                "/notes/" + note + "/repayments",
                Map.of("channel", "APP", "outTradeNo", trade, "amount", new BigDecimal(amount)));
    }

    Answer settle(String note, String trade) {
        return post("/notes/" + note + "/settlement", Map.of("channel", "APP", "outTradeNo", trade));
    }

    Answer extend(String note, int months) {
        return operator(() -> postKeyed("/notes/" + note + "/extension", Map.of("extraMonths", months), newKey()));
    }

    Answer overdueRun(LocalDate asOf) {
        return operator(() -> post("/overdue-runs?asOf=" + asOf, Map.of()));
    }

    Answer get(String path) {
        return exchange(http.get().uri("/api/tenants/" + tenant + path));
    }

    /** A GET of a path outside the tenant's API (actuator, OpenAPI). */
    Answer getRaw(String path) {
        return exchange(http.get().uri(path));
    }

    Answer post(String path, Object body) {
        return postKeyed(path, body, null);
    }

    Answer postKeyed(String path, Object body, String idempotencyKey) {
        RestClient.RequestBodySpec spec = http.post()
                .uri(path.startsWith("/api/") || path.startsWith("/actuator") ? path : "/api/tenants/" + tenant + path);
        spec.contentType(MediaType.APPLICATION_JSON);
        if (idempotencyKey != null) {
            spec.header("Idempotency-Key", idempotencyKey);
        }
        if (body instanceof String raw) {
            spec.body(raw);
        } else {
            spec.body(body);
        }
        return exchange(spec);
    }

    static String newKey() {
        return "K-" + UUID.randomUUID();
    }

    /** Runs {@code call} as this tenant's operator, then goes back to the previous principal. */
    Answer operator(java.util.function.Supplier<Answer> call) {
        String u = user;
        String p = password;
        as(tenant + "-ops", tenant + "-ops-pw");
        try {
            return call.get();
        } finally {
            as(u, p);
        }
    }

    private Answer exchange(RestClient.RequestHeadersSpec<?> spec) {
        if (user != null) {
            spec.header(
                    HttpHeaders.AUTHORIZATION,
                    "Basic "
                            + Base64.getEncoder()
                                    .encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8)));
        }
        return spec.exchange((request, response) -> new Answer(
                response.getStatusCode().value(),
                response.getHeaders(),
                new String(response.getBody().readAllBytes(), StandardCharsets.UTF_8)));
    }
}
