package dev.leasehold.it.shop;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** The request records' table is missing: a clear 500 problem naming it, logged once. */
@SpringBootTest(
        classes = ShopApplication.class,
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "spring.datasource.url=jdbc:h2:mem:missing-table;DB_CLOSE_DELAY=-1",
            "leasehold.idempotency.purge.enabled=false"
        })
@ExtendWith(OutputCaptureExtension.class)
class MissingIdempotencyTableTest {

    @LocalServerPort
    int port;

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    JsonMapper json;

    @Test
    void aMissingRequestTableIsA500ProblemNamingItAndIsLoggedOnce(CapturedOutput output) throws Exception {
        jdbc.execute("DROP TABLE leasehold_effect");
        jdbc.execute("DROP TABLE leasehold_request");
        String account = "acct-" + UUID.randomUUID();

        Http.Answer answer = new Http(port)
                .post(
                        "/payments",
                        "alice",
                        "key-" + UUID.randomUUID(),
                        "{\"account\":\"" + account + "\",\"amount\":1,\"note\":\"n\"}");

        assertThat(answer.status()).as(answer.toString()).isEqualTo(500);
        assertThat(answer.header("Content-Type")).startsWith("application/problem+json");
        JsonNode problem = json.readTree(answer.body());
        assertThat(problem.get("type").asString())
                .isEqualTo("https://leasehold.dev/problems/idempotency-schema-missing");
        assertThat(problem.get("table").asString()).isEqualToIgnoringCase("leasehold_request");
        assertThat(problem.get("detail").asString()).containsIgnoringCase("leasehold_request");
        assertThat(output.getOut()
                        .lines()
                        .filter(line -> line.contains("LeaseholdProblemHandler")
                                && line.contains("500 https://leasehold.dev/problems/idempotency-schema-missing"))
                        .count())
                .as("logged once, by the problem handler")
                .isEqualTo(1);
        assertThat(output.getOut().split("problems/idempotency-schema-missing", -1))
                .as("and nowhere else")
                .hasSize(2);
        assertThat(output.getOut()).contains("IdempotencySchemaMissingException");
    }
}
