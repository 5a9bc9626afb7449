package dev.leasehold.examples.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.client.RestClient;

/**
 * Every refusal is an RFC 9457 problem document (type, title, status, detail) with the problem
 * media type, never the framework's bare error body: broken JSON, valid JSON of the wrong shape,
 * an unsupported media type, a method a path does not take, an unknown path, and the actuator's
 * 401 and 403.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "spring.datasource.url=jdbc:h2:mem:ledger-problems;DB_CLOSE_DELAY=-1",
            "spring.security.user.password=operator-secret"
        })
class BadInputProblemsTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    @LocalServerPort
    int port;

    @Autowired
    JdbcTemplate jdbc;

    record Answer(int status, HttpHeaders headers, String text) {}

    private Answer call(HttpMethod method, String path, String authorization, String contentType, String body) {
        RestClient.RequestBodySpec spec = RestClient.builder()
                .baseUrl("http://127.0.0.1:" + port)
                .build()
                .method(method)
                .uri(path);
        if (authorization != null) {
            spec.header(HttpHeaders.AUTHORIZATION, authorization);
        }
        if (contentType != null) {
            spec.header(HttpHeaders.CONTENT_TYPE, contentType);
        }
        if (body != null) {
            spec.body(body);
        }
        return spec.exchange((q, r) -> new Answer(
                r.getStatusCode().value(),
                r.getHeaders(),
                new String(r.getBody().readAllBytes(), StandardCharsets.UTF_8)));
    }

    /** Asserts a problem document of this status and returns its detail. */
    private static String problem(Answer answer, int status, String what) throws Exception {
        assertThat(answer.status()).as(what + ": " + answer.text()).isEqualTo(status);
        assertThat(answer.headers().getFirst(HttpHeaders.CONTENT_TYPE)).as(what).startsWith("application/problem+json");
        JsonNode body = JSON.readTree(answer.text());
        assertThat(body.path("status").asInt()).as(what).isEqualTo(status);
        assertThat(body.path("type").asText()).as(what).startsWith("https://leasehold.dev/problems/ledger/");
        assertThat(body.path("title").asText()).as(what).isNotBlank();
        assertThat(answer.text()).as(what).doesNotContain("java.", "Exception", "com.fasterxml", "tools.jackson");
        return body.path("detail").asText();
    }

    private int sessions() {
        return jdbc.queryForObject("SELECT COUNT(*) FROM chat_session", Integer.class);
    }

    @Test
    void brokenJsonAndWrongShapesAre400ProblemsNamingTheFieldAndCreateNothing() throws Exception {
        int before = sessions();
        String alice = "Bearer alice-token";
        for (String broken :
                List.of("{\"ledgerId\":", "{ledgerId: 1}", "{\"ledgerId\":\"alice-ledger\",\"title\":\"t\"} x")) {
            String detail =
                    problem(call(HttpMethod.POST, "/api/sessions", alice, "application/json", broken), 400, broken);
            assertThat(detail).as(broken).contains("not valid JSON");
        }
        Map<String, String> wrong = new LinkedHashMap<>();
        wrong.put("{\"ledgerId\":1,\"title\":\"t\"}", "ledgerId");
        wrong.put("{\"ledgerId\":\"alice-ledger\",\"title\":true}", "title");
        wrong.put("{\"ledgerId\":\"alice-ledger\",\"title\":\"t\",\"owner\":\"bob\"}", "owner");
        wrong.put("{\"ledgerId\":[\"alice-ledger\"],\"title\":\"t\"}", "ledgerId");
        for (Map.Entry<String, String> bad : wrong.entrySet()) {
            String detail = problem(
                    call(HttpMethod.POST, "/api/sessions", alice, "application/json", bad.getKey()), 400, bad.getKey());
            assertThat(detail)
                    .as(bad.getKey())
                    .contains("'" + bad.getValue() + "'")
                    .doesNotContain("not valid JSON");
        }
        for (String shape : List.of("[]", "\"alice-ledger\"", "")) {
            String detail =
                    problem(call(HttpMethod.POST, "/api/sessions", alice, "application/json", shape), 400, shape);
            assertThat(detail).as(shape).doesNotContain("not valid JSON");
        }
        String detail = problem(
                call(
                        HttpMethod.POST,
                        "/api/sessions/any/messages",
                        alice,
                        "application/json",
                        "{\"content\":\"lunch 5\",\"clientRequestId\":12345678}"),
                400,
                "a number for the request id");
        assertThat(detail).contains("'clientRequestId'");
        assertThat(sessions()).as("nothing created").isEqualTo(before);
    }

    @Test
    void unsupportedMediaTypeWrongMethodAndUnknownPathAreProblems() throws Exception {
        String alice = "Bearer alice-token";
        assertThat(problem(
                        call(HttpMethod.POST, "/api/sessions", alice, "text/plain", "hello"), 415, "text/plain body"))
                .contains("application/json");
        assertThat(problem(call(HttpMethod.PUT, "/api/sessions", alice, "application/json", "{}"), 405, "PUT"))
                .contains("PUT");
        assertThat(problem(call(HttpMethod.GET, "/api/no-such-thing", alice, null, null), 404, "unknown API path"))
                .isNotBlank();
        assertThat(problem(call(HttpMethod.GET, "/no-such-page", null, null, null), 404, "unknown page"))
                .isNotBlank();
        problem(call(HttpMethod.GET, "/api/ledgers", null, null, null), 401, "chat API without a token");
        Answer firewall = RestClient.create()
                .get()
                .uri(java.net.URI.create("http://127.0.0.1:" + port + "/api/ledgers;x=1"))
                .header(HttpHeaders.AUTHORIZATION, "Bearer alice-token")
                .exchange((q, r) -> new Answer(
                        r.getStatusCode().value(),
                        r.getHeaders(),
                        new String(r.getBody().readAllBytes(), StandardCharsets.UTF_8)));
        problem(firewall, 400, "refused before Spring MVC, answered by the error page");
    }

    @Test
    void theActuatorsRefusalsAreProblemsAndTheBasicChallengeStays() throws Exception {
        Answer anonymous = call(HttpMethod.GET, "/actuator/leasehold", null, null, null);
        assertThat(problem(anonymous, 401, "anonymous")).contains("operator");
        assertThat(anonymous.headers().getFirst(HttpHeaders.WWW_AUTHENTICATE)).startsWith("Basic");
        String wrong = "Basic " + Base64.getEncoder().encodeToString("operator:wrong".getBytes(StandardCharsets.UTF_8));
        problem(call(HttpMethod.GET, "/actuator/leasehold", wrong, null, null), 401, "wrong password");
        problem(call(HttpMethod.GET, "/actuator/leasehold", "Bearer alice-token", null, null), 401, "chat token");
        String operator = "Basic "
                + Base64.getEncoder().encodeToString("operator:operator-secret".getBytes(StandardCharsets.UTF_8));
        assertThat(call(HttpMethod.GET, "/actuator/leasehold", operator, null, null)
                        .status())
                .isEqualTo(200);
        problem(call(HttpMethod.GET, "/actuator/no-such-endpoint", operator, null, null), 404, "unknown endpoint");
    }
}
