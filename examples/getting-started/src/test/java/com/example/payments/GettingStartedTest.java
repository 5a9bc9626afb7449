package com.example.payments;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import java.math.BigDecimal;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The getting-started application, started as the page builds it: a repayment is exactly once per
 * Idempotency-Key, a busy note answers 409 with the method's message, and the health indicator is
 * up on the embedded database.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class GettingStartedTest {

    @LocalServerPort
    int port;

    @Autowired
    LockService locks;

    @Autowired
    JdbcTemplate jdbc;

    private final HttpClient http = HttpClient.newHttpClient();

    private HttpResponse<String> pay(String account, String key, String amount) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/payments?account=" + account))
                .header("Content-Type", "application/json")
                .header("Idempotency-Key", key)
                .POST(HttpRequest.BodyPublishers.ofString("{\"amount\":" + amount + "}"))
                .build();
        return http.send(request, HttpResponse.BodyHandlers.ofString());
    }

    private BigDecimal outstanding(String account) {
        return jdbc.queryForObject(
                "SELECT outstanding FROM note WHERE tenant = 'demo' AND borrow_no = ?", BigDecimal.class, account);
    }

    @Test
    void aRepaymentSentTwiceWithOneKeyIsBookedOnceAndReplayed() throws Exception {
        BigDecimal before = outstanding("B1");
        HttpResponse<String> first = pay("B1", "pay-1", "100.00");
        HttpResponse<String> again = pay("B1", "pay-1", "100.00");
        assertThat(first.statusCode()).as(first.body()).isEqualTo(200);
        assertThat(again.statusCode()).isEqualTo(200);
        assertThat(again.body()).isEqualTo(first.body());
        assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(outstanding("B1")).isEqualByComparingTo(before.subtract(new BigDecimal("100.00")));
    }

    @Test
    void aBusyNoteAnswers409WithTheMethodsMessageAndBooksNothing() throws Exception {
        BigDecimal before = outstanding("B1");
        try (var held = locks.tryAcquire(
                        LockKey.ofTenant("borrow", "demo", "B1"), LeaseOptions.defaults(), LockOwner.create("other"))
                .orElseThrow()) {
            HttpResponse<String> busy = pay("B1", "pay-2", "10.00");
            assertThat(held.isHeld()).isTrue();
            assertThat(busy.statusCode()).as(busy.body()).isEqualTo(409);
            assertThat(busy.headers().firstValue("Content-Type")).hasValueSatisfying(type -> assertThat(type)
                    .startsWith("application/problem+json"));
            assertThat(busy.body())
                    .contains("lock-busy")
                    .contains("loan note B1 is being processed, retry later");
        }
        assertThat(outstanding("B1")).isEqualByComparingTo(before);
    }

    @Test
    void theLeaseStoreIsUpOnTheEmbeddedDatabase() throws Exception {
        HttpResponse<String> health = http.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/actuator/health/leasehold"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(health.statusCode()).as(health.body()).isEqualTo(200);
        assertThat(health.body()).contains("\"status\":\"UP\"").contains("\"backend\"");
    }
}
