package dev.leasehold.examples.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.health.actuate.endpoint.HealthEndpointGroups;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.MediaType;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.client.RestClient;

/** Who may see what: operators on the actuator, owners and members on a shared ledger. */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "spring.datasource.url=jdbc:h2:mem:ledger-access;DB_CLOSE_DELAY=-1",
            "spring.security.user.password=operator-secret"
        })
class LedgerAccessTest {

    @LocalServerPort
    int port;

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    HealthEndpointGroups groups;

    private int get(RestClient client, String path) {
        return client.get().uri(path).exchange((q, r) -> r.getStatusCode().value());
    }

    private RestClient client(String authorization) {
        RestClient.Builder builder = RestClient.builder().baseUrl("http://127.0.0.1:" + port);
        if (authorization != null) {
            builder.defaultHeader("Authorization", authorization);
        }
        return builder.build();
    }

    private static String basic(String user, String password) {
        return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void actuatorEndpointsNeedTheOperatorsLoginButHealthStaysOpenForProbes() {
        assertThat(get(client(null), "/actuator/leasehold")).as("anonymous").isEqualTo(401);
        assertThat(get(client("Bearer alice-token"), "/actuator/leasehold"))
                .as("a chat user is no operator")
                .isIn(401, 403);
        assertThat(get(client(basic("operator", "wrong")), "/actuator/leasehold"))
                .isEqualTo(401);
        assertThat(get(client(basic("operator", "operator-secret")), "/actuator/leasehold"))
                .isEqualTo(200);
        assertThat(get(client(null), "/actuator/health")).isEqualTo(200);
    }

    /** What the README's "Probes" section tells an operator to point probes and alerts at. */
    @Test
    void theProbeGroupsAnswerWithoutALoginAndOnlyTheOverallHealthHoldsTheLeaseStore() {
        for (String path : List.of("/actuator/health/liveness", "/actuator/health/readiness")) {
            String body = client(null).get().uri(path).retrieve().body(String.class);
            assertThat(body).as(path).contains("\"status\":\"UP\"");
        }
        assertThat(get(client(null), "/actuator/health")).as("for an alert").isEqualTo(200);
        assertThat(groups.getPrimary().isMember("leasehold"))
                .as("/actuator/health holds the lease store")
                .isTrue();
        assertThat(groups.get("liveness").isMember("leasehold")).as("liveness").isFalse();
        assertThat(groups.get("readiness").isMember("leasehold"))
                .as("readiness")
                .isFalse();
    }

    private int addMember(RestClient client, String ledgerId, String userId) {
        return client.post()
                .uri("/api/ledgers/{id}/members", ledgerId)
                .contentType(MediaType.APPLICATION_JSON)
                .body(Map.of("userId", userId))
                .exchange((q, r) -> r.getStatusCode().value());
    }

    @Test
    void theOwnerSharesALedgerAndTheMemberBooksAndReadsWhileOthersSeeNothing() {
        String ledger = "shared-" + UUID.randomUUID().toString().substring(0, 8);
        jdbc.update("INSERT INTO ledger (id, name, owner_id) VALUES (?, ?, ?)", ledger, "Shared", "alice");
        jdbc.update("INSERT INTO ledger_member (ledger_id, user_id) VALUES (?, ?)", ledger, "alice");
        jdbc.update(
                "INSERT INTO category (id, ledger_id, name, type) VALUES (?, ?, ?, ?)",
                UUID.randomUUID().toString().replace("-", ""),
                ledger,
                "餐饮",
                "expense");
        RestClient alice = ChatHttp.as(port, "alice-token");
        RestClient bob = ChatHttp.as(port, "bob-token");

        assertThat(get(bob, "/api/ledgers/" + ledger + "/transactions"))
                .as("a non-member")
                .isEqualTo(404);
        assertThat(addMember(bob, ledger, "bob"))
                .as("a non-member cannot add himself")
                .isEqualTo(404);
        assertThat(addMember(alice, ledger, "nobody")).as("unknown user").isEqualTo(404);

        assertThat(addMember(alice, ledger, "bob")).isEqualTo(200);
        assertThat(addMember(alice, ledger, "bob"))
                .as("adding twice is one membership")
                .isEqualTo(200);
        assertThat(jdbc.queryForObject(
                        "SELECT COUNT(*) FROM ledger_member WHERE ledger_id = ? AND user_id = 'bob'",
                        Integer.class,
                        ledger))
                .isEqualTo(1);
        assertThat(addMember(bob, ledger, "bob"))
                .as("a member is not the owner")
                .isEqualTo(403);

        assertThat(bob.get().uri("/api/ledgers").retrieve().body(String.class)).contains(ledger);
        String session = ChatHttp.newSession(bob, ledger);
        ChatHttp.Result booked = ChatHttp.send(bob, session, "lunch 7", "req-" + UUID.randomUUID());
        assertThat(booked.status()).as(booked.body()).isEqualTo(200);
        assertThat(booked.body()).contains("Booked 1");
        assertThat(alice.get()
                        .uri("/api/ledgers/{id}/transactions", ledger)
                        .retrieve()
                        .body(String.class))
                .as("the owner reads the member's booking")
                .contains("7.00");
        assertThat(alice.get()
                        .uri("/api/ledgers/{id}/members", ledger)
                        .retrieve()
                        .body(String.class))
                .contains("bob")
                .contains("alice");
        assertThat(get(client("Bearer bob-token"), "/api/ledgers/alice-ledger/members"))
                .as("members of a ledger bob does not belong to")
                .isEqualTo(404);
    }
}
