package dev.leasehold.it.shop;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A commit whose answer is lost: the client is told the outcome is unknown and that a retry with
 * the same key is safe, and the retry proves it, whether the commit took effect or not.
 */
@SpringBootTest(
        classes = {ShopApplication.class, CommitOutcomeUnknownTest.Faults.class},
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = "spring.datasource.url=jdbc:h2:mem:commit-faults;DB_CLOSE_DELAY=-1")
class CommitOutcomeUnknownTest {

    @TestConfiguration
    static class Faults {
        @Bean
        static CommitFaults commitFaults() {
            return new CommitFaults();
        }
    }

    @LocalServerPort
    int port;

    @Autowired
    Ledger ledger;

    @Autowired
    JsonMapper json;

    private String payment(String account) {
        return "{\"account\":\"" + account + "\",\"amount\":20.00,\"note\":\"n\"}";
    }

    @Test
    void aCommitThatTookEffectButLostItsAnswerIsUnknownAndTheRetryReplaysIt() throws Exception {
        Http http = new Http(port);
        String account = "acct-" + UUID.randomUUID();
        String key = "key-" + UUID.randomUUID();

        CommitFaults.arm(CommitFaults.Fault.COMMITTED_THEN_FAILED);
        Http.Answer unknown = http.post("/payments", "alice", key, payment(account));
        assertThat(CommitFaults.armed()).isFalse();
        assertUnknown(unknown);
        assertThat(ledger.payments(account)).as("the commit took effect").isEqualTo(1);

        Http.Answer retry = http.post("/payments", "alice", key, payment(account));
        assertThat(retry.status()).as(retry.toString()).isEqualTo(201);
        assertThat(retry.replayed()).isTrue();
        assertThat(ledger.payments(account)).isEqualTo(1);
    }

    @Test
    void aCommitThatDidNotTakeEffectIsUnknownAndTheRetryRunsOnce() throws Exception {
        Http http = new Http(port);
        String account = "acct-" + UUID.randomUUID();
        String key = "key-" + UUID.randomUUID();

        CommitFaults.arm(CommitFaults.Fault.ROLLED_BACK_AND_FAILED);
        Http.Answer unknown = http.post("/payments", "alice", key, payment(account));
        assertUnknown(unknown);
        assertThat(ledger.payments(account)).as("nothing committed").isZero();

        Http.Answer retry = http.post("/payments", "alice", key, payment(account));
        assertThat(retry.status()).as(retry.toString()).isEqualTo(201);
        assertThat(retry.replayed()).isFalse();
        assertThat(ledger.payments(account)).isEqualTo(1);
    }

    private void assertUnknown(Http.Answer answer) {
        assertThat(answer.status()).as(answer.toString()).isEqualTo(503);
        assertThat(answer.header("Content-Type")).startsWith("application/problem+json");
        JsonNode problem = json.readTree(answer.body());
        assertThat(problem.get("type").asString()).isEqualTo("https://leasehold.dev/problems/request-outcome-unknown");
        assertThat(problem.get("detail").asString())
                .contains("unknown whether it took effect")
                .contains("retry with the same idempotency key");
    }
}
